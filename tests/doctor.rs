//! `offcode doctor` against healthy and broken mock servers.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::demo::{self, Flavour, Think};
use crate::support::{MockServer, Reply, Workspace, run};

fn doctor(server_url: &str, args: &[&str]) -> (crate::support::Output, Workspace) {
    let workspace = Workspace::new();
    let mut all = vec!["doctor"];
    all.extend_from_slice(args);
    let output = run(workspace.offcode(server_url, &all));
    (output, workspace)
}

fn flavoured(tool_parser: bool, think: Think) -> MockServer {
    MockServer::start(Arc::new(demo::responder(Flavour { tool_parser, think })))
}

#[test]
fn a_healthy_server_passes_every_check() {
    let server = flavoured(true, Think::None);
    let (output, workspace) = doctor(&server.base_url(), &[]);
    assert_eq!(output.code, 0, "{}\n{}", output.stdout, output.stderr);
    for expected in [
        "✓ connected to 127.0.0.1:",
        "✓ GET /models answered",
        "    mock-model        context 32768",
        "    mock-model-large  context 131072",
        "✓ model `mock-model` is served",
        "✓ tool calling works natively",
        "✓ /tokenize counts tokens exactly",
        "· prompt and tools: full (not a small model or a short context)",
        "No problems found.",
    ] {
        assert!(
            output.stdout.contains(expected),
            "{expected}:\n{}",
            output.stdout
        );
    }
    // The probe offered one tool and asked for it.
    let probe = server.chat_bodies().pop().unwrap();
    assert_eq!(probe["tools"][0]["function"]["name"], "report_status");
    let cache: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace.home.join(".cache/offcode/servers.json")).unwrap(),
    )
    .unwrap();
    let mut entry = cache["servers"][format!("{} mock-model", server.base_url())].clone();
    // When it was learned, so that it expires (`cache.ttl_hours`).
    assert!(
        entry["learned"].as_u64().is_some_and(|t| t > 1_700_000_000),
        "{entry}"
    );
    entry.as_object_mut().unwrap().remove("learned");
    assert_eq!(
        entry,
        json!({"tool_calls": "native", "max_model_len": 32768})
    );
}

#[test]
fn missing_server_flags_are_named_and_fail_the_check() {
    let server = flavoured(false, Think::Open);
    let (output, workspace) = doctor(&server.base_url(), &[]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert!(
        output.stdout.contains("no tool-call parser"),
        "{}",
        output.stdout
    );
    assert!(
        output
            .stdout
            .contains("fix: start vLLM with `--enable-auto-tool-choice --tool-call-parser hermes`"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("works with this model"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("`--reasoning-parser qwen3`"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("2 problems found."),
        "{}",
        output.stdout
    );
    // A session started now begins with text calls at once.
    std::fs::write(workspace.root.join("a.txt"), "x\n").unwrap();
    let before = server.chat_bodies().len();
    let task = run(workspace.offcode(&server.base_url(), &["run", "read a.txt"]));
    assert_eq!(task.code, 0, "{}", task.stderr);
    let bodies = server.chat_bodies();
    assert!(bodies[before..].iter().all(|b| b.get("tools").is_none()));
}

#[test]
fn inline_think_tags_alone_are_one_problem() {
    let server = flavoured(true, Think::Tags);
    let (output, _) = doctor(&server.base_url(), &[]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert!(
        output.stdout.contains("✓ tool calling works natively"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("--reasoning-parser"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("1 problem found."),
        "{}",
        output.stdout
    );
}

#[test]
fn an_unknown_model_names_the_served_ones() {
    let server = flavoured(true, Think::None);
    let (output, _) = doctor(&server.base_url(), &["--model", "qwen-big"]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert!(
        output.stdout.contains(
            "the model `qwen-big` is not served here (served: mock-model, mock-model-large)"
        ),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("--served-model-name qwen-big"),
        "{}",
        output.stdout
    );
}

#[test]
fn unreachable_unauthorised_and_wrong_path_each_get_their_fix() {
    let (_held, closed) = crate::support::refusing_port();
    let (output, _) = doctor(&format!("http://127.0.0.1:{closed}/v1"), &[]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert!(
        output.stdout.contains("cannot connect to 127.0.0.1:"),
        "{}",
        output.stdout
    );
    assert!(
        output.stdout.contains("vllm serve MODEL"),
        "{}",
        output.stdout
    );

    let (output, _) = doctor("http://no-such-host.invalid:8000/v1", &[]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert!(
        output
            .stdout
            .contains("cannot resolve the host `no-such-host.invalid`"),
        "{}",
        output.stdout
    );

    for (status, fix) in [(401, "OFFCODE_API_KEY"), (404, "usually ending in `/v1`")] {
        let server = MockServer::start(Arc::new(move |_: &crate::support::server::Request| {
            Reply::json(status, &json!({"error": {"message": "no", "code": status}}))
        }));
        let (output, _) = doctor(&server.base_url(), &[]);
        assert_eq!(output.code, 1, "{status}: {}", output.stdout);
        assert!(
            output.stdout.contains(&format!("HTTP {status}")),
            "{}",
            output.stdout
        );
        assert!(output.stdout.contains(fix), "{status}: {}", output.stdout);
    }
}

#[test]
fn a_server_that_never_answers_does_not_hang_the_doctor() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    // The thread outlives the test's wait; it only keeps the socket open.
    std::thread::spawn(move || {
        // Accept, then say nothing.
        let connection = listener.accept();
        std::thread::sleep(std::time::Duration::from_secs(5));
        drop(connection);
    });
    let workspace = Workspace::new();
    std::fs::write(
        workspace.root.join("offcode.jsonc"),
        "{ timeouts: { idle_ms: 500 } }\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let output = run(workspace.offcode(&url, &["doctor"]));
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    assert!(output.stdout.contains("✗"), "{}", output.stdout);
}

#[test]
fn llama_cpp_reports_its_context_through_props() {
    // llama-server: /v1/models without max_model_len, n_ctx in /props.
    let server = MockServer::start(Arc::new(|request: &crate::support::server::Request| {
        match request.path.as_str() {
            "/v1/models" => Reply::json(
                200,
                &json!({"object": "list", "data": [{"id": "qwen.gguf", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx_train": 131_072}}]}),
            ),
            "/props" => Reply::json(
                200,
                &json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}),
            ),
            _ => demo::respond(request),
        }
    }));
    let (output, workspace) = doctor(&server.base_url(), &["--model", "qwen.gguf"]);
    assert!(
        output
            .stdout
            .contains("✓ context 8192 tokens (from /props)"),
        "{}",
        output.stdout
    );
    // A short context gets the compact prompt and tools, and says why.
    assert!(
        output
            .stdout
            .contains("· prompt and tools: compact (a short context: 8192 tokens)"),
        "{}",
        output.stdout
    );
    let context = run(workspace.offcode(&server.base_url(), &["context", "--json"]));
    let report: Value = serde_json::from_str(&context.stdout).unwrap();
    assert_eq!(report["limit"], 8192, "{}", context.stdout);
}

/// llama-server as it answers (shapes recorded from llama.cpp serving
/// Qwen2.5-Coder 1.5B): `meta.n_ctx` in the model list, `/tokenize` of
/// `content`, and calls left in the text. The fixes name llama.cpp's
/// flags, never vLLM's.
#[test]
fn llama_cpp_gets_its_own_context_tokenizer_and_fixes() {
    let text_calls = demo::responder(demo::Flavour {
        tool_parser: false,
        ..demo::Flavour::default()
    });
    let server = MockServer::start(Arc::new(
        move |request: &crate::support::server::Request| match request.path.as_str() {
            "/v1/models" => Reply::json(
                200,
                &json!({"object": "list", "data": [{"id": "qwen2.5-coder-1.5b-instruct", "object": "model", "owned_by": "llamacpp", "meta": {"vocab_type": 2, "n_ctx": 16384, "n_ctx_train": 32768}}]}),
            ),
            "/tokenize" if request.json().get("content").is_some() => {
                Reply::json(200, &json!({"tokens": [14990, 1879]}))
            }
            "/tokenize" => Reply::json(200, &json!({"tokens": []})),
            _ => text_calls(request),
        },
    ));
    let (output, workspace) = doctor(&server.base_url(), &[]);
    let out = &output.stdout;
    assert!(
        out.contains("qwen2.5-coder-1.5b-instruct  context 16384"),
        "{out}"
    );
    assert!(!out.contains("from /props"), "{out}");
    assert!(out.contains("start llama-server with `--jinja`"), "{out}");
    assert!(!out.contains("vLLM"), "{out}");
    assert!(
        out.contains("/tokenize counts text (llama.cpp's form)"),
        "{out}"
    );
    let models = run(workspace.offcode(&server.base_url(), &["models"]));
    assert!(
        models.stdout.contains("16384  llamacpp"),
        "{}",
        models.stdout
    );
}

/// A bare root for the offcode under test: the binary and the libraries it
/// loads (`ldd`), `/ws` and `/bin`; `with` lists host programs (and their
/// libraries) to add.
fn bare_root(with: &[&str]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let add = |from: &std::path::Path, to: &std::path::Path| {
        let to = root.path().join(to.strip_prefix("/").unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, &to).unwrap();
    };
    let mut programs = vec![(
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_offcode")),
        std::path::PathBuf::from("/bin/offcode"),
    )];
    for name in with {
        let host = std::path::PathBuf::from(format!("/bin/{name}"));
        programs.push((
            host.clone(),
            std::path::PathBuf::from(format!("/bin/{name}")),
        ));
    }
    for (from, to) in &programs {
        add(from, to);
        let ldd = std::process::Command::new("ldd")
            .arg(from)
            .output()
            .unwrap();
        for library in String::from_utf8_lossy(&ldd.stdout)
            .split_whitespace()
            .filter(|word| word.starts_with('/'))
        {
            let library = std::path::Path::new(library);
            add(library, library);
        }
    }
    for dir in ["ws", "proc", "dev", "tmp"] {
        std::fs::create_dir_all(root.path().join(dir)).unwrap();
    }
    root
}

/// `offcode doctor` in `root`'s `/ws`, with `root` as its root (a user
/// namespace and `unshare --root`), after `setup` (shell commands run on the host as the
/// namespace's root, with `$R` the root).
fn doctor_in(root: &std::path::Path, setup: &str, server: &str) -> crate::support::Output {
    let script = format!(
        "{setup}\nexec unshare --root=\"$R\" --wd=/ws /bin/offcode doctor",
        setup = setup.replace("$R", "\"$R\"")
    );
    let mut command = std::process::Command::new("unshare");
    command
        .args(["-rmpf", "sh", "-c", &script])
        .env_clear()
        .env("R", root)
        // The host's programs for the setup; in the root, only its /bin.
        .env("PATH", "/bin:/usr/bin:/usr/sbin:/sbin")
        .env("OFFCODE_BASE_URL", server);
    run(command)
}

#[test]
fn on_a_bare_root_the_doctor_names_what_is_missing_and_its_fix() {
    let server = flavoured(true, Think::None);
    // Nothing but the binary: no /proc, no /dev/null, no bash.
    let root = bare_root(&[]);
    let bare = doctor_in(root.path(), "", &server.base_url());
    for expected in [
        "✗ `/proc` is not mounted",
        "fix: mount it (`mount -t proc proc /proc`)",
        "✗ `/dev/null` is missing or not a device",
        "fix: create it as root (`mknod -m 666 /dev/null c 1 3`)",
        "✗ no `bash` on PATH",
        "· kernel: Linux ",
        "✓ model `mock-model` is served",
    ] {
        assert!(
            bare.stdout.contains(expected),
            "{expected}:\n{}\n{}",
            bare.stdout,
            bare.stderr
        );
    }
    // Not the wrong fixes it named before: reinstalling, or the sysctl.
    for wrong in ["reinstall", "sysctl"] {
        assert!(!bare.stdout.contains(wrong), "{}", bare.stdout);
    }
    // With /proc and /dev/null and bash, commands run confined, and
    // nothing is missing.
    let root = bare_root(&["bash"]);
    let mounted = doctor_in(
        root.path(),
        "mount -t proc proc $R/proc && touch $R/dev/null && mount --bind /dev/null $R/dev/null",
        &server.base_url(),
    );
    assert!(
        mounted.stdout.contains("✓ shell commands run confined"),
        "{}\n{}",
        mounted.stdout,
        mounted.stderr
    );
    assert!(!mounted.stdout.contains('✗'), "{}", mounted.stdout);
    assert_eq!(mounted.code, 0, "{}", mounted.stdout);
}
