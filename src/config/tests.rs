//! Config layers, environment and flags, and the errors bad values give.

use super::*;
use pretty_assertions::assert_eq;
use std::fs;

struct Fixture {
    _dir: tempfile::TempDir,
    environment: Environment,
}

fn fixture(vars: &[(&str, &str)], files: &[(&str, &str)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let cwd = dir.path().join("project");
    fs::create_dir_all(home.join(".config/offcode")).unwrap();
    fs::create_dir_all(cwd.join(".offcode")).unwrap();
    for (name, text) in files {
        let path = match *name {
            "global" => home.join(".config/offcode/offcode.jsonc"),
            other => cwd.join(other),
        };
        fs::write(path, text).unwrap();
    }
    let mut environment = Environment {
        vars: vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        cwd,
    };
    environment
        .vars
        .insert("HOME".to_owned(), home.display().to_string());
    Fixture {
        _dir: dir,
        environment,
    }
}

#[test]
fn defaults_apply_without_any_input() {
    let f = fixture(&[], &[]);
    let loaded = load(&f.environment, &Flags::default()).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.files.iter().all(|file| !file.loaded));
}

#[test]
fn precedence_is_flags_env_project_global() {
    let f = fixture(
        &[("OFFCODE_MODEL", "from-env")],
        &[
            (
                "global",
                "{model: 'global', max_steps: 7, base_url: 'http://g:1/v1'}",
            ),
            (".offcode/offcode.jsonc", "{max_steps: 8}"),
            ("offcode.jsonc", "{model: 'project', max_steps: 9}"),
        ],
    );
    let loaded = load(&f.environment, &Flags::default()).unwrap();
    assert_eq!(loaded.config.model.as_deref(), Some("from-env"));
    assert_eq!(loaded.config.max_steps, 9);
    assert_eq!(loaded.config.base_url, "http://g:1/v1");
    assert_eq!(
        loaded.source_of("model"),
        Source::Env("OFFCODE_MODEL".into())
    );
    assert_eq!(
        loaded.source_of("max_steps"),
        Source::File(f.environment.cwd.join("offcode.jsonc"))
    );
    let flags = Flags {
        model: Some("from-flag".to_owned()),
    };
    let loaded = load(&f.environment, &flags).unwrap();
    assert_eq!(loaded.config.model.as_deref(), Some("from-flag"));
    assert_eq!(loaded.source_of("model"), Source::Flag("--model".into()));
}

#[test]
fn api_key_falls_back_through_dashscope_then_openai() {
    let f = fixture(
        &[
            ("OPENAI_API_KEY", "sk-openai-0000"),
            ("DASHSCOPE_API_KEY", "sk-dash-1234567"),
        ],
        &[("offcode.jsonc", "{api_key: 'file-key'}")],
    );
    let loaded = load(&f.environment, &Flags::default()).unwrap();
    assert_eq!(loaded.config.api_key.as_deref(), Some("sk-dash-1234567"));
    let row = loaded
        .entries()
        .into_iter()
        .find(|(path, ..)| path == "api_key")
        .unwrap();
    assert_eq!(
        row,
        (
            "api_key".to_owned(),
            json!("****4567"),
            Source::Env("DASHSCOPE_API_KEY".into())
        )
    );
}

#[test]
fn bad_file_is_named_with_position() {
    let f = fixture(
        &[],
        &[("offcode.jsonc", "{\n  model: 'x',\n  colour: 1\n}")],
    );
    let error = load(&f.environment, &Flags::default()).unwrap_err();
    let path = f.environment.cwd.join("offcode.jsonc");
    assert_eq!(
        error.to_string(),
        format!(
            "Invalid config file `{}` at line 3, column 3: unknown field `colour`, expected one of `$schema`, `base_url`, `model`, `api_key`, `max_tokens`, `temperature`, `top_p`, `compact`, `max_steps`, `instructions`, `skills`, `context_limit`, `compaction`, `tool_calls`, `tls`, `retry`, `timeouts`, `sandbox`, `permission`, `dangerous`, `commands`, `agent`, `validate`, `subagents`, `mcp`, `mcp_limits`, `checkpoints`, `log`, `cache`, `provider`, `small_model`, `default_agent`",
            path.display()
        )
    );
}

#[test]
fn missing_explicit_config_file_is_an_error() {
    let f = fixture(&[("OFFCODE_CONFIG", "nope.jsonc")], &[]);
    let error = load(&f.environment, &Flags::default()).unwrap_err();
    assert!(matches!(error, Error::Read { .. }), "{error:?}");
}

#[test]
fn bad_env_url_is_named() {
    let f = fixture(&[("OFFCODE_BASE_URL", "gpu1:8000")], &[]);
    let error = load(&f.environment, &Flags::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Invalid value for OFFCODE_BASE_URL: `gpu1:8000` is not an http:// or https:// URL"
    );
}

#[test]
fn base_url_gets_v1_only_when_it_has_no_path() {
    assert_eq!(normalise_base_url("http://h:8000"), "http://h:8000/v1");
    assert_eq!(normalise_base_url("http://h:8000/"), "http://h:8000/v1");
    assert_eq!(normalise_base_url("https://h/api/v1/"), "https://h/api/v1");
}
