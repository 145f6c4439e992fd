//! `offcode` with no subcommand and piped input: the line-mode loop, as
//! the fallback for terminals the editor cannot drive.

use serde_json::Value;

use crate::support::{Workspace, demo_mock, run_with_stdin};

/// Runs `offcode` in `workspace` with `input` on stdin; (exit, stdout).
fn interactive(workspace: &Workspace, url: &str, input: &str) -> (i32, String) {
    let mut command = workspace.offcode(url, &[]);
    command.env("OFFCODE_MODEL", "mock-model");
    let output = run_with_stdin(command, input);
    (output.code, output.stdout)
}

#[test]
fn a_task_with_approvals_answered_on_the_next_line() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::write(ws.root.join("README.md"), "# 你好\n").unwrap();
    std::fs::create_dir(ws.root.join("build")).unwrap();
    let (code, out) = interactive(
        &ws,
        &server.base_url(),
        "read README.md then write notes.txt\ny\nrun `rm -rf build`\nn\n写入 备注.txt\nn\n/quit\n",
    );
    assert_eq!(code, 0, "{out}");
    // The write was shown as a diff, never as JSON, and written after `y`.
    for expected in [
        "> read README.md then write notes.txt\n",
        "TOOL read  README.md\n",
        "Allow write?\n    notes.txt  created  +3 -0\n",
        "    +First line of what I read: # 你好\n",
        "  a adds: every edit call\nanswer [y/n/a] > y\n  ✓ notes.txt: created, +3 -0\n",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in\n{out}");
    }
    assert!(!out.contains("\"content\""), "raw JSON shown:\n{out}");
    assert!(ws.root.join("notes.txt").exists());
    // A dangerous command: only once / deny, and `n` refused it.
    let bash = out.find("Allow bash?").expect("a bash prompt");
    let prompt = &out[bash..bash + out[bash..].find("answer").unwrap()];
    assert!(
        prompt.contains("⚠ rm -rf build: `rm` deletes files"),
        "{prompt}"
    );
    assert!(!prompt.contains("session"), "{prompt}");
    assert!(ws.root.join("build").is_dir());
    // Chinese prompt, refused write.
    assert!(
        out.contains("⊘ Permission denied: `write` was not run"),
        "{out}"
    );
    assert!(!ws.root.join("备注.txt").exists());
    // Decisions are in the session, by the user.
    let session = std::fs::read_to_string(&ws.session_files()[0]).unwrap();
    let by_user: Vec<Value> = session
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "permission" && e["by"] == "user")
        .collect();
    assert_eq!(by_user.len(), 3, "{session}");
    assert_eq!(by_user[1]["summary"], "rm -rf build");
    assert_eq!(by_user[1]["decision"], "deny");
}

#[test]
fn end_of_input_mid_question_denies_and_exits_cleanly() {
    let server = demo_mock();
    let ws = Workspace::new();
    let (code, out) = interactive(&ws, &server.base_url(), "write a.txt\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Allow write?"), "{out}");
    assert!(!ws.root.join("a.txt").exists());
    let (code, out) = interactive(&ws, &server.base_url(), "/help\n/nope\n");
    assert_eq!(code, 0);
    assert!(
        out.contains("Approvals: y allow once · n (or Esc) deny"),
        "{out}"
    );
    assert!(out.contains("Unknown command `/nope`"), "{out}");
    for line in out.lines() {
        assert!(
            unicode_width::UnicodeWidthStr::width(line) <= 80,
            "wider than 80 columns: {line}"
        );
    }
}

#[test]
fn startup_names_the_sources_and_warns_when_the_server_does_not_answer() {
    let server = demo_mock();
    let ws = Workspace::new();
    let (code, out) = interactive(&ws, &server.base_url(), "/context\n");
    assert_eq!(code, 0, "{out}");
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("offcode · mock-model at {}", server.base_url())),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "config: {}",
            ws.home.join(".config/offcode/offcode.jsonc").display()
        )),
        "{out}"
    );
    assert!(out.contains("CONTEXT "), "{out}");
    assert!(out.contains("of 32.8k tokens ("), "{out}");
    assert!(out.contains("  tool schemas "), "{out}");
    // Nothing listens here: offcode still starts, and says what is wrong.
    // (The start-up probe's own warning may come after `/models` has
    // answered and the input has ended; on a loaded machine it does, so
    // only the answer to `/models` is certain to be seen.)
    let (code, out) = interactive(&ws, "http://127.0.0.1:9/v1", "/models\n");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Could not list the models: Could not connect"),
        "{out}"
    );
}

#[test]
fn the_todo_list_is_shown_kept_in_the_session_and_back_on_resume() {
    let server = demo_mock();
    let ws = Workspace::new();
    let (code, out) = interactive(&ws, &server.base_url(), "/todo\nmake a plan\n/todo\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("No todo list yet"), "{out}");
    // Once when the agent writes it, once for /todo.
    assert_eq!(out.matches("TODO 0/2 done").count(), 2, "{out}");
    assert!(out.contains("  [~] look around\n  [ ] answer"), "{out}");
    let session = std::fs::read_to_string(&ws.session_files()[0]).unwrap();
    assert!(session.contains("\"type\":\"todo\""), "{session}");
    let mut command = ws.offcode(&server.base_url(), &["--continue"]);
    command.env("OFFCODE_MODEL", "mock-model");
    let resumed = crate::support::run_with_stdin(command, "/todo\n");
    assert!(
        resumed.stdout.contains("  [~] look around"),
        "{}",
        resumed.stdout
    );
}

#[test]
fn the_context_limit_is_the_configs_else_the_servers_else_llama_cpps() {
    // The config's limit wins over the server's 32768.
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::write(ws.root.join("offcode.jsonc"), "{ context_limit: 16000 }\n").unwrap();
    let (code, out) = interactive(&ws, &server.base_url(), "/context\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("of 16.0k tokens ("), "{out}");
    // llama.cpp: no max_model_len in the list, n_ctx in /props.
    let llama = crate::support::MockServer::start(std::sync::Arc::new(
        |request: &crate::support::server::Request| match request.path.as_str() {
            "/v1/models" => crate::support::Reply::json(
                200,
                &serde_json::json!({"object": "list", "data": [{"id": "mock-model", "object": "model"}]}),
            ),
            "/props" => crate::support::Reply::json(
                200,
                &serde_json::json!({"default_generation_settings": {"n_ctx": 8192}}),
            ),
            _ => crate::support::demo::respond(request),
        },
    ));
    let ws = Workspace::new();
    let (code, out) = interactive(&ws, &llama.base_url(), "/context\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("of 8.2k tokens ("), "{out}");
}
