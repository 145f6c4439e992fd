//! What an ops team installs and checks: the version and what the kernel
//! offers, completions and man pages, the shipped config example and the
//! config file's JSON schema, and a box without `HOME`.

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{Workspace, demo_mock, run};

#[test]
fn version_verbose_names_what_the_kernel_offers_the_sandbox() {
    let workspace = Workspace::new();
    let server = demo_mock();
    let verbose = run(workspace.offcode(&server.base_url(), &["--version", "--verbose"]));
    assert_eq!(verbose.code, 0, "{}", verbose.stderr);
    let lines: Vec<&str> = verbose.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", verbose.stdout);
    assert!(lines[0].starts_with("offcode "), "{}", verbose.stdout);
    assert!(lines[1].starts_with("kernel: Linux "), "{}", verbose.stdout);
    // What it says is what the confinement finds here.
    let support = offcode::confine::Support::probe();
    if support.landlock {
        assert!(lines[2].starts_with("Landlock ABI "), "{}", verbose.stdout);
        assert_eq!(
            lines[2].contains("; TCP rules"),
            support.landlock_network,
            "{}",
            verbose.stdout
        );
    } else {
        assert!(lines[2].starts_with("Landlock: none"), "{}", verbose.stdout);
    }
    let unshares = std::process::Command::new("unshare")
        .args(["-Urmpin", "--fork", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if unshares {
        assert!(
            lines[3].starts_with("user namespaces: yes"),
            "{}",
            verbose.stdout
        );
    }
    assert!(lines[4].starts_with("pidfd: "), "{}", verbose.stdout);
    // `--verbose` alone is a usage error, not a silent no-op.
    let alone = run(workspace.offcode(&server.base_url(), &["--verbose"]));
    assert_eq!(alone.code, 2, "{}", alone.stdout);
}

#[test]
fn without_home_the_password_database_names_the_home() {
    // A service account's unit or `env -i`: no HOME. The home is then the
    // password database's entry for this user.
    let workspace = Workspace::new();
    let uid = std::fs::metadata("/proc/self").unwrap();
    let uid = std::os::unix::fs::MetadataExt::uid(&uid);
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let home = passwd
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.len() > 5 && fields[2] == uid.to_string())
        .map(|fields| fields[5].to_owned());
    let mut command = workspace.offcode("http://127.0.0.1:9/v1", &["config"]);
    command.env_remove("HOME");
    let config = run(command);
    assert_eq!(config.code, 0, "{}", config.stderr);
    let home = home.expect("this user has an entry in /etc/passwd");
    assert!(
        config
            .stdout
            .contains(&format!("{home}/.config/offcode/offcode.jsonc")),
        "{}",
        config.stdout
    );
}

#[test]
fn completions_complete_subcommands_in_bash_and_the_man_pages_are_written() {
    let workspace = Workspace::new();
    let script = run(workspace.offcode("http://127.0.0.1:9/v1", &["completions", "bash"]));
    assert_eq!(script.code, 0, "{}", script.stderr);
    let file = workspace.home.join("offcode.bash");
    std::fs::write(&file, &script.stdout).unwrap();
    // What bash offers after `offcode do<Tab>` and `offcode completions <Tab>`.
    let complete = |words: &str, current: usize| {
        let shell = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={current}; \
             COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; \
             _offcode offcode \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let output = std::process::Command::new("bash")
            .args(["--norc", "-c", &shell])
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(complete("offcode do", 1).trim(), "doctor");
    let shells = complete("offcode completions ''", 2);
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.lines().any(|l| l == shell), "{shells}");
    }
    for shell in ["zsh", "fish"] {
        let script = run(workspace.offcode("http://127.0.0.1:9/v1", &["completions", shell]));
        assert_eq!(script.code, 0, "{}", script.stderr);
        assert!(script.stdout.contains("doctor"), "{}", script.stdout);
    }
    // An unknown shell is a usage error naming the ones there are.
    let unknown = run(workspace.offcode("http://127.0.0.1:9/v1", &["completions", "tcsh"]));
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("possible values"),
        "{}",
        unknown.stderr
    );

    let page = run(workspace.offcode("http://127.0.0.1:9/v1", &["man"]));
    assert_eq!(page.code, 0, "{}", page.stderr);
    assert!(page.stdout.contains(".TH offcode 1 "), "{}", page.stdout);
    assert!(
        page.stdout.contains("offcode \\- an offline coding agent"),
        "{}",
        page.stdout
    );
    let pages = workspace.home.join("man");
    let written = run(workspace.offcode(
        "http://127.0.0.1:9/v1",
        &["man", "--dir", pages.to_str().unwrap()],
    ));
    assert_eq!(written.code, 0, "{}", written.stderr);
    let run_page = std::fs::read_to_string(pages.join("offcode-run.1")).unwrap();
    assert!(run_page.contains("Run one task headless"), "{run_page}");
    assert!(pages.join("offcode-doctor.1").is_file());
}

#[test]
fn the_shipped_config_example_is_a_valid_global_config() {
    // release/offcode.example.jsonc goes into every release tarball: it
    // must load as it is, as the global config.
    let workspace = Workspace::new();
    let global = workspace.home.join(".config/offcode");
    std::fs::create_dir_all(&global).unwrap();
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("release/offcode.example.jsonc");
    std::fs::copy(&example, global.join("offcode.jsonc")).unwrap();
    let mut command = workspace.offcode("http://127.0.0.1:9/v1", &["config"]);
    command.env_remove("OFFCODE_BASE_URL");
    let config = run(command);
    assert_eq!(config.code, 0, "{}", config.stderr);
    assert!(
        config.stdout.contains("offcode.jsonc  (loaded)"),
        "{}",
        config.stdout
    );
    // Its values are read from it.
    let from = global.join("offcode.jsonc");
    for key in ["base_url", "max_steps", "compact", "tool_calls"] {
        let line = config
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{key} ")))
            .unwrap_or_default();
        assert!(line.ends_with(&format!("# {}", from.display())), "{line}");
    }
}

#[test]
fn the_config_schema_names_exactly_the_keys_a_file_may_hold() {
    let workspace = Workspace::new();
    let printed = run(workspace.offcode("http://127.0.0.1:9/v1", &["config", "schema"]));
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let schema: Value = serde_json::from_str(&printed.stdout).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["additionalProperties"], false, "{schema:#}");
    let mut in_schema: Vec<String> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    in_schema.sort();
    // What the loader itself accepts: serde names every key it knows when
    // a file has one it does not.
    std::fs::write(workspace.root.join("offcode.jsonc"), "{\"no_such_key\": 1}").unwrap();
    let refused = run(workspace.offcode("http://127.0.0.1:9/v1", &["config"]));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    let expected = refused
        .stderr
        .split("expected one of ")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default();
    let mut accepted: Vec<String> = expected
        .split(", ")
        .map(|key| key.trim_matches('`').to_owned())
        .collect();
    // OpenCode's keys, accepted for pasted configs and left out of that
    // message so it names offcode's own.
    accepted.extend(
        offcode::config::opencode_keys()
            .into_iter()
            .map(str::to_owned),
    );
    accepted.sort();
    assert_eq!(in_schema, accepted);
    // Nested shapes: an MCP server by either name of its keys, the
    // sampling values, the sandbox's two forms.
    let server = &schema["$defs"]["ServerConfig"]["properties"];
    for key in [
        "type",
        "command",
        "environment",
        "env",
        "timeout",
        "timeout_ms",
        "confine",
    ] {
        assert!(server.get(key).is_some(), "{key}: {server:#}");
    }
    let sampling = schema["$defs"]["Sampling0to2"].to_string();
    assert!(sampling.contains("\"server\""), "{sampling}");
    let sandbox = schema["$defs"]["SandboxLayer"].to_string();
    assert!(
        sandbox.contains("SandboxMode") && sandbox.contains("SandboxKeys"),
        "{sandbox}"
    );
    // Every key of the shipped example is one the schema knows.
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("release/offcode.example.jsonc"),
    )
    .unwrap();
    let example: Value = json5::from_str(&example).unwrap();
    for key in example.as_object().unwrap().keys() {
        assert!(schema["properties"].get(key).is_some(), "{key}");
    }
}

#[test]
fn every_key_offcode_config_prints_is_documented() {
    let workspace = Workspace::new();
    std::fs::write(
        workspace.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "provider": { "gpu": { "options": { "baseURL": "http://gpu1:8000/v1", "headers": { "X": "y" }, "timeout": 9 },
                            "models": { "m": { "limit": { "context": 1, "output": 1 }, "options": { "top_k": 2 } } } } },
             "small_model": "gpu/m", "default_agent": "plan",
             "mcp": { "s": { "type": "local", "command": ["x"], "environment": { "A": "b" } } } }"#,
    )
    .unwrap();
    let output = run(workspace.offcode("http://127.0.0.1:9/v1", &["config", "--json"]));
    assert_eq!(output.code, 0, "{}", output.stderr);
    let printed: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
    )
    .unwrap();
    // A key is documented when it, or a key it lies under, is named in
    // backticks (`checkpoints` documents `checkpoints.max_file_mb`).
    let undocumented: Vec<&String> = printed["values"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|path| {
            let parts: Vec<&str> = path.split('.').collect();
            !(1..=parts.len()).any(|n| docs.contains(&format!("`{}`", parts[..n].join("."))))
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/configuration.md: {undocumented:?}"
    );
    assert!(
        printed["values"]
            .get("provider.gpu.options.baseURL")
            .is_some()
    );
}
