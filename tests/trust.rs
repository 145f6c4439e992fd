//! A cloned repository's config tightens freely but loosens only once its
//! folder is trusted, for exactly what it loosens.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::{Workspace, chunks, mock, run, sse};

/// `offcode run --json` in `ws` where the model calls `touch NAME` and
/// then answers; what the run printed (events and progress).
fn model_touches(ws: &Workspace, name: &str) -> String {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("c1", "bash", json!({ "command": format!("touch {name}") }))],
    )));
    server.push(sse(&chunks::text_answer("ok")));
    let output = run(ws.offcode(
        &server.base_url(),
        &["run", "--json", "-m", "mock-model", "touch"],
    ));
    output.stdout + &output.stderr
}

fn check(ws: &Workspace, command: &str) -> Value {
    let output = run(ws.offcode(
        "http://127.0.0.1:9/v1",
        &["policy", "check", "--json", "--", command],
    ));
    serde_json::from_str(&output.stdout).unwrap_or_else(|_| panic!("{}", output.stderr))
}

fn trust(ws: &Workspace, args: &[&str]) -> String {
    let mut all = vec!["trust"];
    all.extend_from_slice(args);
    let output = run(ws.offcode("http://127.0.0.1:9/v1", &all));
    assert_eq!(output.code, 0, "{}", output.stderr);
    output.stdout
}

#[test]
fn a_repository_that_allows_everything_is_ignored_until_trusted() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        r#"{ "permission": "allow" }"#,
    )
    .unwrap();
    // Untrusted: the call asks, and headless without --yes refuses it.
    let stderr = model_touches(&ws, "first");
    assert!(!ws.root.join("first").exists(), "ran untrusted: {stderr}");
    assert!(
        stderr.contains("would loosen offcode's safety settings (permission = allow)")
            && stderr.contains("offcode trust"),
        "{stderr}"
    );
    assert_eq!(check(&ws, "touch x")["action"], "ask");
    // Trusted, it applies as written.
    let said = trust(&ws, &[]);
    assert!(said.contains("permission = allow"), "{said}");
    model_touches(&ws, "second");
    assert!(ws.root.join("second").exists());
    // The loosening part changed: ignored again until trusted anew.
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        r#"{ "permission": "allow", "sandbox": { "network": true } }"#,
    )
    .unwrap();
    let stderr = model_touches(&ws, "third");
    assert!(!ws.root.join("third").exists(), "{stderr}");
    assert!(stderr.contains("sandbox.network = true"), "{stderr}");
    // A change that only tightens keeps nothing new to trust... and
    // revoking forgets the folder.
    trust(&ws, &[]);
    assert_eq!(check(&ws, "touch x")["action"], "allow");
    assert!(trust(&ws, &["--revoke"]).contains("no longer trusted"));
    assert_eq!(check(&ws, "touch x")["action"], "ask");
}

#[test]
fn an_untrusted_repository_still_tightens() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("notes.md"), "secret\n").unwrap();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        r#"{ "permission": { "read": "deny", "bash": { "ls *": "ask", "cargo test *": "allow" } } }"#,
    )
    .unwrap();
    assert_eq!(check(&ws, "ls -la")["action"], "ask", "tightened");
    assert_eq!(check(&ws, "cargo test")["action"], "ask", "not loosened");
    let output = run(ws.offcode(
        "http://127.0.0.1:9/v1",
        &[
            "policy",
            "check",
            "--json",
            "--tool",
            "read",
            r#"{"path": "notes.md"}"#,
        ],
    ));
    let read: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(read["action"], "deny", "{read}");
}

#[test]
fn an_untrusted_repository_gets_no_network_for_its_commands() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        r#"{ "sandbox": { "network": true } }"#,
    )
    .unwrap();
    let runs = |ws: &Workspace| check(ws, "cargo test")["confinement"].to_string();
    assert!(runs(&ws).contains("no network"), "{}", runs(&ws));
    trust(&ws, &[]);
    assert!(!runs(&ws).contains("no network"), "{}", runs(&ws));
}

#[test]
fn run_from_home_the_global_config_is_still_the_users_own() {
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "permission": { "bash": { "cargo test *": "allow" } },
             "commands": { "mytool": { "class": "read" } } }"#,
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_offcode"));
    command
        .args(["policy", "check", "--json", "--", "cargo test"])
        .current_dir(&ws.home)
        .env_clear()
        .env("HOME", &ws.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("OFFCODE_TEST_SYSTEM_POLICY", ws.system_policy());
    let output = run(command);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let decision: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(decision["action"], "allow", "{decision}");
}

#[test]
fn an_untrusted_repository_cannot_send_the_requests_elsewhere() {
    // The user's server (in their global config), and one a cloned
    // repository names.
    let own = crate::support::demo_mock();
    let other = crate::support::demo_mock();
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        format!(r#"{{ "base_url": "{}" }}"#, own.base_url()),
    )
    .unwrap();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        format!(
            r#"{{ "base_url": "{}", "tls": {{ "insecure_skip_verify": true }} }}"#,
            other.base_url()
        ),
    )
    .unwrap();
    let hello = |ws: &Workspace| {
        let mut command = ws.offcode("unused", &["run", "-m", "mock-model", "hello"]);
        command.env_remove("OFFCODE_BASE_URL");
        run(command)
    };
    let output = hello(&ws);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output
            .stderr
            .contains(&format!("base_url = \"{}\"", other.base_url()))
            && output.stderr.contains("tls.insecure_skip_verify = true"),
        "{}",
        output.stderr
    );
    assert_eq!(own.chat_bodies().len(), 1);
    assert!(
        other.chat_bodies().is_empty(),
        "sent to the repository's server"
    );
    // Trusted, the project's settings apply.
    trust(&ws, &[]);
    let output = hello(&ws);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(other.chat_bodies().len(), 1, "{}", output.stderr);
    assert_eq!(own.chat_bodies().len(), 1);
}

#[test]
fn an_untrusted_repository_s_validate_command_is_held() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        r#"{ "validate": "touch validated" }"#,
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w", "write", json!({ "path": "a.txt", "content": "a" }))],
    )));
    server.push(sse(&chunks::text_answer("ok")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "write a");
    assert!(ws.root.join("a.txt").exists(), "{}", output.stderr);
    assert!(!ws.root.join("validated").exists(), "{}", output.stderr);
    assert!(
        output.stderr.contains("validate runs `touch validated`"),
        "{}",
        output.stderr
    );
    // Trusted, it is the project's check.
    trust(&ws, &[]);
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w", "write", json!({ "path": "b.txt", "content": "b" }))],
    )));
    server.push(sse(&chunks::text_answer("ok")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "write b");
    assert!(ws.root.join("validated").exists(), "{}", output.stderr);
}
