//! The `offcode` binary as users run it, against the mock server.

use std::process::Stdio;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::demo::without_workspace;
use crate::support::{
    End, Reply, Workspace, chunks, demo_mock, mock, run, run_with_stdin, sse, wait_until,
};

#[test]
fn three_step_task_reads_writes_and_answers() {
    let server = demo_mock();
    let workspace = Workspace::new();
    std::fs::write(workspace.root.join("input.txt"), "alpha beta\n").unwrap();
    let output = run(workspace.offcode(
        &server.base_url(),
        &["run", "--yes", "read input.txt then write out.txt"],
    ));
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, "Done: I read input.txt and wrote out.txt.\n");
    assert!(
        output.stderr.contains("→ read input.txt"),
        "{}",
        output.stderr
    );
    assert!(
        output.stderr.contains("→ write out.txt"),
        "{}",
        output.stderr
    );
    let written = std::fs::read_to_string(workspace.root.join("out.txt")).unwrap();
    assert_eq!(written, "Notes\n\nFirst line of what I read: alpha beta\n");
    assert_eq!(workspace.session_files().len(), 1);
}

#[test]
fn without_yes_writes_are_denied_and_the_model_is_told() {
    let server = demo_mock();
    let workspace = Workspace::new();
    std::fs::write(workspace.root.join("input.txt"), "alpha\n").unwrap();
    let output = run(workspace.offcode(
        &server.base_url(),
        &["run", "read input.txt then write out.txt"],
    ));
    // Refused, and nothing else done: exit 4.
    assert_eq!(output.code, 4, "{}", output.stderr);
    assert!(!workspace.root.join("out.txt").exists());
    assert!(output.stderr.contains("denied: write"), "{}", output.stderr);
    let last = server.chat_bodies().pop().unwrap();
    let denial = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        denial["content"]
            .as_str()
            .unwrap()
            .contains("without --yes"),
        "{denial}"
    );
}

#[test]
fn commands_never_see_the_api_key() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "b1",
            "bash",
            serde_json::json!({"command": "echo \"key=[${OFFCODE_API_KEY-}${OPENAI_API_KEY-}]\""}),
        )],
    )));
    server.push(sse(&chunks::text_answer("ok")));
    let workspace = Workspace::new();
    let mut command = workspace.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "m", "show it"],
    );
    command
        .env("OFFCODE_API_KEY", "sk-very-secret")
        .env("OPENAI_API_KEY", "sk-also-secret");
    let output = run(command);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-very-secret")
    );
    let body = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(body.contains("key=[]"), "{body}");
    assert!(!body.contains("secret"), "{body}");
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let server = demo_mock();
    let workspace = Workspace::new();
    std::fs::write(workspace.root.join("a.txt"), "x\n").unwrap();
    let output = run(workspace.offcode(&server.base_url(), &["run", "--json", "read a.txt"]));
    assert_eq!(output.code, 0, "{}", output.stderr);
    let events: Vec<Value> = output
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"session_configured"));
    assert_eq!(types.last(), Some(&"turn_complete"));
    for expected in [
        "assistant_delta",
        "assistant_message",
        "tool_call_begin",
        "tool_call_end",
        "token_usage",
    ] {
        assert!(
            types.contains(&expected),
            "{expected} missing from {types:?}"
        );
    }
    let session_id = events[0]["session_id"].as_str().unwrap();
    assert!(!session_id.is_empty());
    assert!(events.iter().all(|e| e["session_id"] == session_id));
    let begin = events
        .iter()
        .find(|e| e["type"] == "tool_call_begin")
        .unwrap();
    assert_eq!(begin["name"], "read");
    assert_eq!(begin["arguments"]["path"], "a.txt");
    assert_eq!(events.last().unwrap()["status"], "done");
}

#[test]
fn continue_and_session_resume_the_history() {
    let server = demo_mock();
    let workspace = Workspace::new();
    let first = run(workspace.offcode(&server.base_url(), &["run", "first question"]));
    assert_eq!(first.stdout, "Mock model here. You said: first question\n");
    let second = run(workspace.offcode(
        &server.base_url(),
        &["run", "--continue", "second question"],
    ));
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.stderr.contains("(resumed)"), "{}", second.stderr);
    let contents = |body: &Value| -> Vec<String> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| without_workspace(m["content"].as_str().unwrap_or("")).to_owned())
            .collect()
    };
    let last = server.chat_bodies().pop().unwrap();
    assert_eq!(
        contents(&last)[1..],
        [
            "first question",
            "Mock model here. You said: first question",
            "second question"
        ]
    );
    let id = workspace.session_files()[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let third = run(workspace.offcode(&server.base_url(), &["run", "--session", &id, "third"]));
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert_eq!(contents(&server.chat_bodies().pop().unwrap()).len(), 6);
    assert_eq!(workspace.session_files().len(), 1);
}

#[test]
fn prompt_can_come_from_stdin() {
    let server = demo_mock();
    let workspace = Workspace::new();
    let output = run_with_stdin(
        workspace.offcode(&server.base_url(), &["run", "-"]),
        "你好，世界",
    );
    assert_eq!(output.stdout, "Mock model here. You said: 你好，世界\n");
}

#[test]
fn usage_errors_exit_2_without_contacting_the_server() {
    let server = mock();
    let workspace = Workspace::new();
    let empty = run(workspace.offcode(&server.base_url(), &["run", "  "]));
    assert_eq!(empty.code, 2);
    assert!(
        empty.stderr.starts_with("error: The prompt is empty\n"),
        "{}",
        empty.stderr
    );
    std::fs::write(
        workspace.root.join("offcode.jsonc"),
        "{\n  model: 'x',\n  max_step: 3,\n}\n",
    )
    .unwrap();
    let bad = run(workspace.offcode(&server.base_url(), &["run", "hello"]));
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .contains("offcode.jsonc` at line 3, column 3: unknown field `max_step`"),
        "{}",
        bad.stderr
    );
    assert!(bad.stderr.contains("hint: "), "{}", bad.stderr);
    assert!(server.requests().is_empty(), "nothing ran on a bad config");
    std::fs::remove_file(workspace.root.join("offcode.jsonc")).unwrap();
    let unknown = run(workspace.offcode(&server.base_url(), &["run", "--session", "nope", "hi"]));
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("No session `nope`"),
        "{}",
        unknown.stderr
    );
    let nothing = run(workspace.offcode(&server.base_url(), &["run", "--continue", "hi"]));
    assert_eq!(nothing.code, 2);
    assert!(
        nothing.stderr.contains("No earlier session for"),
        "{}",
        nothing.stderr
    );
}

#[test]
fn unreachable_server_is_a_clear_error_with_a_hint() {
    let (_held, port) = crate::support::refusing_port();
    let workspace = Workspace::new();
    let url = format!("http://127.0.0.1:{port}/v1");
    let output = run(workspace.offcode(&url, &["run", "--model", "m", "hi"]));
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("Retrying in"), "{}", output.stderr);
    assert!(
        output.stderr.contains(&format!(
            "error: Could not connect to `{url}/chat/completions`"
        )),
        "{}",
        output.stderr
    );
    assert!(!output.stderr.contains("panicked"), "{}", output.stderr);
    let models = run(workspace.offcode(&url, &["models"]));
    assert_eq!(models.code, 1);
    assert!(
        models.stderr.contains("hint: Is the model server running"),
        "{}",
        models.stderr
    );
}

#[test]
fn server_error_ends_the_task_with_exit_1() {
    let server = mock(); // answers 500 to everything
    let workspace = Workspace::new();
    let output = run(workspace.offcode(&server.base_url(), &["run", "--model", "m", "hi"]));
    assert_eq!(output.code, 1);
    assert!(
        output
            .stderr
            .contains("error: The server answered HTTP 500"),
        "{}",
        output.stderr
    );
    assert_eq!(server.chat_bodies().len(), 3, "two retries");
}

#[test]
fn every_stream_fault_ends_in_a_clear_error() {
    let partial = || {
        [chunks::role(), chunks::text_delta("partial answer ")]
            .concat()
            .into_bytes()
    };
    let in_band = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openai-sse/vllm-error-mid-stream.sse"
    ))
    .unwrap();
    let mut malformed = partial();
    malformed.extend_from_slice(b"data: {not json}\n\n");
    let cases = [
        (
            "reset mid-stream",
            Reply::sse(partial()).ending(End::Reset),
            "The connection broke while reading the response",
        ),
        (
            "truncated",
            Reply::sse(partial()),
            "The response ended early",
        ),
        (
            "malformed",
            Reply::sse(malformed),
            "The server sent a malformed chunk",
        ),
        (
            "in-band error",
            Reply::sse(in_band),
            "The server reported an error during the response: Engine core",
        ),
        (
            "silent",
            Reply::sse(partial()).ending(End::Hang(Duration::from_secs(20))),
            "No data from the server for 1 s",
        ),
        (
            "bad request",
            Reply::json(
                400,
                &serde_json::json!({"error": {"message": "The model `m` does not exist.", "code": 400}}),
            ),
            "The server answered HTTP 400: The model `m` does not exist.",
        ),
    ];
    for (name, reply, expected) in cases {
        let server = mock();
        server.push(reply);
        let workspace = Workspace::new();
        std::fs::write(
            workspace.root.join("offcode.jsonc"),
            "{ timeouts: { idle_ms: 1000 } }",
        )
        .unwrap();
        let start = Instant::now();
        let output = run(workspace.offcode(&server.base_url(), &["run", "--model", "m", "hi"]));
        assert_eq!(output.code, 1, "{name}: {}", output.stderr);
        assert!(
            output.stderr.contains(&format!("error: {expected}")),
            "{name}: {}",
            output.stderr
        );
        assert!(
            !output.stderr.contains("panicked"),
            "{name}: {}",
            output.stderr
        );
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{name} took {:?}",
            start.elapsed()
        );
        assert_eq!(
            server.chat_bodies().len(),
            1,
            "{name}: not retried after output or a 400"
        );
    }
}

fn slow_answer(server: &crate::support::MockServer) {
    let mut events = vec![chunks::role(), chunks::text_delta("Working on it. ")];
    events.extend((0..400).map(|i| chunks::text_delta(&format!("{i} "))));
    server.push(Reply::sse_events(events, Duration::from_millis(25)));
}

#[test]
fn kill_9_mid_stream_then_continue_resumes() {
    let server = mock();
    slow_answer(&server);
    let workspace = Workspace::new();
    let mut child = workspace
        .offcode(&server.base_url(), &["run", "--model", "m", "first task"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || !server
        .chat_bodies()
        .is_empty()));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let file = workspace.session_files().pop().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()),
        "{text}"
    );
    server.push(sse(&chunks::text_answer("Resumed fine.")));
    let output = run(workspace.offcode(&server.base_url(), &["run", "--continue", "second task"]));
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, "Resumed fine.\n");
    let users: Vec<Value> = server.chat_bodies().pop().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| Value::from(without_workspace(m["content"].as_str().unwrap())))
        .collect();
    assert_eq!(users, ["first task", "second task"]);
}

#[test]
fn sigint_aborts_closes_the_connection_and_keeps_partial_text() {
    let server = mock();
    slow_answer(&server);
    let workspace = Workspace::new();
    let child = workspace
        .offcode(&server.base_url(), &["run", "--model", "m", "long task"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once the answer is arriving, with most of it to come.
    assert!(wait_until(Duration::from_secs(10), || server.parts_sent() >= 3));
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    // The whole answer takes 10 s; the disconnect comes long before.
    assert!(
        wait_until(Duration::from_secs(5), || !server.disconnects().is_empty()),
        "the server never saw the disconnect"
    );
    assert!(server.parts_sent() < 300, "{}", server.parts_sent());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Interrupted; the partial answer is saved"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(workspace.session_files().pop().unwrap()).unwrap();
    assert!(
        text.contains("\"interrupted\":true") && text.contains("Working on it."),
        "{text}"
    );
}

#[test]
fn models_config_sessions_and_version() {
    let server = demo_mock();
    let workspace = Workspace::new();
    let models = run(workspace.offcode(&server.base_url(), &["models"]));
    assert_eq!(
        models.stdout,
        "MODEL              CONTEXT  OWNED BY\n\
         mock-model           32768  vllm\n\
         mock-model-large    131072  vllm\n"
    );
    let mut command = workspace.offcode(&server.base_url(), &["config"]);
    command.env("OFFCODE_API_KEY", "sk-secret-value-1234");
    let config = run(&mut command);
    assert!(
        config.stdout.contains(&format!(
            "base_url                   = \"{}\"  # env OFFCODE_BASE_URL",
            server.base_url()
        )),
        "{}",
        config.stdout
    );
    assert!(
        config
            .stdout
            .contains("api_key                    = \"****1234\"  # env OFFCODE_API_KEY"),
        "{}",
        config.stdout
    );
    assert!(
        config
            .stdout
            .contains("retry.initial_delay_ms     = 10  # "),
        "{}",
        config.stdout
    );
    assert!(!config.stdout.contains("sk-secret"), "secrets are masked");
    let empty = run(workspace.offcode(&server.base_url(), &["sessions"]));
    assert!(
        empty.stdout.starts_with("No sessions for"),
        "{}",
        empty.stdout
    );
    run(workspace.offcode(&server.base_url(), &["run", "hello there"]));
    let sessions = run(workspace.offcode(&server.base_url(), &["sessions"]));
    assert!(
        sessions
            .stdout
            .lines()
            .nth(1)
            .unwrap()
            .ends_with("2  hello there"),
        "{}",
        sessions.stdout
    );
    // The version names the commit it was built from, the commit's day
    // and the target.
    let version = run(workspace.offcode(&server.base_url(), &["--version"]));
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("TZ", "UTC")
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let day = git(&[
        "show",
        "-s",
        "--date=format-local:%Y-%m-%d",
        "--format=%cd",
        "HEAD",
    ]);
    let target = format!("{}-unknown-linux-", std::env::consts::ARCH);
    assert!(
        version.stdout.starts_with(&format!(
            "offcode {} ({commit} {day}, {target}",
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        version.stdout
    );
    assert_eq!(version.stdout.lines().count(), 1, "{}", version.stdout);
    // No subcommand: the interactive loop; with no input it just ends,
    // leaving no empty session behind.
    let sessions_before = workspace.session_files();
    let bare = run(workspace.offcode(&server.base_url(), &[]));
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    assert!(bare.stdout.contains("Type a task"), "{}", bare.stdout);
    assert_eq!(workspace.session_files(), sessions_before);
}

#[test]
fn every_tool_works_inside_an_agent_run() {
    let server = mock();
    let workspace = Workspace::new();
    std::fs::create_dir_all(workspace.root.join("src")).unwrap();
    std::fs::write(
        workspace.root.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    41\n}\n",
    )
    .unwrap();
    std::fs::write(workspace.root.join("old.txt"), "remove me\n").unwrap();
    let patch = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn answer() -> u32 {\n-    41\n+    42\n }\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-remove me\n";
    let calls = [
        ("list", serde_json::json!({})),
        ("glob", serde_json::json!({"pattern": "**/*.rs"})),
        (
            "grep",
            serde_json::json!({"pattern": "fn answer", "include": "*.rs"}),
        ),
        ("read", serde_json::json!({"path": "src/lib.rs"})),
        ("patch", serde_json::json!({"patch": patch})),
        (
            "edit",
            serde_json::json!({"path": "src/lib.rs", "old_string": "u32", "new_string": "u64"}),
        ),
        (
            "write",
            serde_json::json!({"path": "docs/NOTES.md", "content": "# Notes\n"}),
        ),
        ("bash", serde_json::json!({"command": "cat src/lib.rs"})),
    ];
    for (index, (name, arguments)) in calls.iter().enumerate() {
        server.push(sse(&chunks::tool_answer(
            "",
            &[(&format!("c{index}"), name, arguments.clone())],
        )));
    }
    server.push(sse(&chunks::text_answer("All done.")));
    let output = run(workspace.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "m", "do everything"],
    ));
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, "All done.\n");
    assert_eq!(
        std::fs::read_to_string(workspace.root.join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u64 {\n    42\n}\n"
    );
    assert!(!workspace.root.join("old.txt").exists());
    assert_eq!(
        std::fs::read_to_string(workspace.root.join("docs/NOTES.md")).unwrap(),
        "# Notes\n"
    );
    let last = server.chat_bodies().pop().unwrap();
    let results: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), calls.len());
    assert!(
        results.iter().all(|r| !r.starts_with("Error")),
        "{results:#?}"
    );
    assert_eq!(results[1], "src/lib.rs");
    assert_eq!(
        results[2],
        "1 matching line in 1 file:\nsrc/lib.rs:1:pub fn answer() -> u32 {"
    );
    assert!(
        results[4].contains("updated src/lib.rs (+1 -1)") && results[4].contains("deleted old.txt"),
        "{}",
        results[4]
    );
    assert!(
        results[7].contains("-> u64") && results[7].ends_with("[exit code: 0]"),
        "{}",
        results[7]
    );
}

#[test]
fn tool_command_runs_one_tool_with_exit_codes() {
    let workspace = Workspace::new();
    std::fs::write(workspace.root.join("a.txt"), "alpha\nbeta\n").unwrap();
    let url = "http://127.0.0.1:9/v1";
    let read = run(workspace.offcode(url, &["tool", "read", r#"{"path": "a.txt", "offset": 2}"#]));
    assert_eq!((read.code, read.stdout.as_str()), (0, "     2\tbeta\n"));
    let escape = run(workspace.offcode(url, &["tool", "read", r#"{"path": "../x"}"#]));
    assert_eq!(escape.code, 1);
    assert!(
        escape.stdout.starts_with("Error: outside_workspace: "),
        "{}",
        escape.stdout
    );
    let refused = run(workspace.offcode(
        url,
        &["tool", "write", r#"{"path": "b.txt", "content": "x"}"#],
    ));
    assert_eq!(refused.code, 1);
    assert!(
        refused.stderr.contains("hint: Pass --yes"),
        "{}",
        refused.stderr
    );
    assert!(!workspace.root.join("b.txt").exists());
    let written = run(workspace.offcode(
        url,
        &[
            "tool",
            "--yes",
            "write",
            r#"{"path": "b.txt", "content": "x"}"#,
        ],
    ));
    assert_eq!(written.code, 0, "{}", written.stderr);
    assert_eq!(
        std::fs::read_to_string(workspace.root.join("b.txt")).unwrap(),
        "x"
    );
    let unknown = run(workspace.offcode(url, &["tool", "rm", "{}"]));
    assert_eq!(unknown.code, 2);
    let bad_json = run(workspace.offcode(url, &["tool", "read", "{path"]));
    assert_eq!(bad_json.code, 2);
    assert!(
        bad_json.stderr.contains("not a JSON object"),
        "{}",
        bad_json.stderr
    );
}

#[test]
fn edit_and_patch_need_approval_like_write() {
    let server = mock();
    let workspace = Workspace::new();
    std::fs::write(workspace.root.join("f.txt"), "one\n").unwrap();
    let patch = "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-one\n+three\n";
    server.push(sse(&chunks::tool_answer(
        "",
        &[
            (
                "e1",
                "edit",
                serde_json::json!({"path": "f.txt", "old_string": "one", "new_string": "two"}),
            ),
            ("p1", "patch", serde_json::json!({"patch": patch})),
        ],
    )));
    server.push(sse(&chunks::text_answer("ok")));
    let output = run(workspace.offcode(&server.base_url(), &["run", "--model", "m", "change it"]));
    assert_eq!(output.code, 4, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(workspace.root.join("f.txt")).unwrap(),
        "one\n"
    );
    assert!(
        output.stderr.contains("denied: edit") && output.stderr.contains("denied: patch"),
        "{}",
        output.stderr
    );
}

#[test]
fn rules_and_instructions_reach_the_model_and_context_shows_them() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/AGENTS.md"),
        "Global: be brief.\n",
    )
    .unwrap();
    std::fs::write(ws.root.join("AGENTS.md"), "Project: 用中文回答。\n").unwrap();
    std::fs::create_dir(ws.root.join("notes")).unwrap();
    std::fs::write(ws.root.join("notes/style.md"), "Style: tabs.\n").unwrap();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        "{ instructions: ['notes/*.md', 'missing.md'], context_limit: 16000 }",
    )
    .unwrap();
    let out = run(ws.offcode(&server.base_url(), &["run", "hello"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("instructions `missing.md` were not read"),
        "{}",
        out.stderr
    );
    // The rules open the first user message; the system message is the
    // same in every workspace, so a server's prefix cache shares it.
    let messages = server.chat_bodies()[0]["messages"].clone();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(!system.contains("Global: be brief."), "{system}");
    let first = messages[1]["content"].as_str().unwrap().to_owned();
    assert!(first.starts_with("<workspace>\n"), "{first}");
    let global = first.find("Global: be brief.").expect("global rules");
    let project = first.find("Project: 用中文回答。").expect("project rules");
    let style = first.find("Style: tabs.").expect("instructions");
    assert!(global < project && project < style, "{first}");
    assert!(first.contains("these take precedence"), "{first}");
    assert!(first.ends_with("</workspace>\n\nhello"), "{first}");

    let report = run(ws.offcode(&server.base_url(), &["context", "--json", "--continue"]));
    assert_eq!(report.code, 0, "{}", report.stderr);
    let report: Value = serde_json::from_str(&report.stdout).unwrap();
    let names: Vec<(&str, &str)> = report["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["source"].as_str().unwrap()))
        .collect();
    assert_eq!(names[1].0, "workspace");
    assert_eq!(names[2].0, "global rules");
    assert!(
        names[2].1.ends_with(".config/offcode/AGENTS.md"),
        "{names:?}"
    );
    assert_eq!(names[3], ("project rules", "AGENTS.md"));
    assert_eq!(names[4], ("instructions", "notes/style.md"));
    assert_eq!(names[5], ("tool schemas", "10 tools"));
    assert!(names[6].1.ends_with(", 2 messages"), "{names:?}");
    assert_eq!(report["limit"], 16000);
    let sum: u64 = report["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(report["total"].as_u64().unwrap(), sum);
    let table = run(ws.offcode(&server.base_url(), &["context"]));
    assert!(table.stdout.starts_with("CONTEXT "), "{}", table.stdout);
    assert!(table.stdout.contains("of 16.0k tokens"), "{}", table.stdout);
    assert!(
        table.stdout.contains("warning: instructions `missing.md`"),
        "{}",
        table.stdout
    );
}

#[test]
fn skills_are_indexed_loaded_on_request_and_hidden_when_denied() {
    let server = mock();
    let ws = Workspace::new();
    for (base, folder, text) in [
        (
            ".offcode/skills",
            "release",
            "---\nname: release\ndescription: Cut a release\n---\n1. Bump the version.\n2. Tag it.\n",
        ),
        (
            ".agents/skills",
            "secret",
            "---\nname: secret\ndescription: Hidden\n---\nNever shown.\n",
        ),
        (
            ".agents/skills",
            "again",
            "---\nname: release\n---\nA second one.\n",
        ),
    ] {
        let dir = ws.root.join(base).join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        "{ permission: { skill: { '*': 'allow', 'secret': 'deny' } } }",
    )
    .unwrap();
    assert_eq!(run(ws.offcode(&server.base_url(), &["trust"])).code, 0);
    server.push(sse(&chunks::tool_answer(
        "",
        &[("c1", "skill", serde_json::json!({"name": "release"}))],
    )));
    server.push(sse(&chunks::text_answer("Released.")));
    let mut command = ws.offcode(&server.base_url(), &["run", "release it"]);
    command.env("OFFCODE_MODEL", "mock-model");
    let out = run(command);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("two skills are named `release`"),
        "{}",
        out.stderr
    );
    let bodies = server.chat_bodies();
    let workspace = bodies[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        workspace.contains("\n- release: Cut a release"),
        "{workspace}"
    );
    assert!(!workspace.contains("secret"), "{workspace}");
    let tools: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"skill"), "{tools:?}");
    let loaded = crate::support::first_tool_result(&bodies[1]);
    assert_eq!(
        loaded,
        "Skill `release` (from .offcode/skills/release/SKILL.md):\n\n1. Bump the version.\n2. Tag it."
    );
    let report = run(ws.offcode(&server.base_url(), &["context"]));
    assert!(
        report.stdout.contains("  skills index "),
        "{}",
        report.stdout
    );
    assert!(report.stdout.contains("1 skill "), "{}", report.stdout);
}

/// Two sessions in two directories (with different rules) send the same
/// system message and tools, so a server's prefix cache serves the base
/// prompt and the schemas to both; the workspaces differ only after them.
#[test]
fn sessions_in_different_directories_share_the_request_prefix() {
    for mode in ["native", "text"] {
        let server = demo_mock();
        let mut bodies = Vec::new();
        for rules in ["Project: be brief.", "项目：用中文回答。"] {
            let ws = Workspace::new();
            std::fs::write(ws.root.join("AGENTS.md"), rules).unwrap();
            std::fs::write(
                ws.home.join(".config/offcode/offcode.jsonc"),
                format!("{{ tool_calls: '{mode}' }}"),
            )
            .unwrap();
            let out = run(ws.offcode(&server.base_url(), &["run", "--model", "mock-model", "hi"]));
            assert_eq!(out.code, 0, "{}", out.stderr);
            let body = server.chat_bodies().pop().unwrap();
            let first = body["messages"][1]["content"].as_str().unwrap().to_owned();
            assert!(
                first.contains(&ws.root.display().to_string()) && first.contains(rules),
                "{mode}: {first}"
            );
            bodies.push(body);
        }
        assert_eq!(bodies[0]["messages"][0], bodies[1]["messages"][0], "{mode}");
        assert_eq!(bodies[0]["tools"], bodies[1]["tools"], "{mode}");
        let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
        match mode {
            "native" => assert_eq!(bodies[0]["tools"].as_array().map(Vec::len), Some(11)),
            _ => assert!(system.contains("<tool_call>"), "{system}"),
        }
        assert_ne!(bodies[0]["messages"][1], bodies[1]["messages"][1], "{mode}");
    }
}

/// A task whose model never sends the call it wrote ends with exit 3,
/// saying so, and nothing is done for it.
#[test]
fn a_task_whose_call_was_never_sent_exits_3() {
    let server = mock();
    let example = "```json\n{\"name\": \"write\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"HI\"}}\n```\nDone: out.txt says HI.";
    server.push(sse(&chunks::text_answer(example)));
    server.push(sse(&chunks::text_answer(&example.replace("HI", "HELLO"))));
    let ws = Workspace::new();
    let out = run(ws.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "m", "write HI to out.txt"],
    ));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("Not done: the model ended without doing what the task needed"),
        "{}",
        out.stderr
    );
    assert!(!ws.root.join("out.txt").exists());
}

#[test]
fn a_change_that_failed_then_reported_as_made_exits_3() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("r1", "read", json!({"path": "hello.py"}))],
    )));
    // The edit fails (its old text is not in the file)...
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "e1",
            "edit",
            json!({"path": "hello.py", "old_string": "print('hello')", "new_string": "print('hi')"}),
        )],
    )));
    // ...and the model says it made the change, twice.
    server.push(sse(&chunks::text_answer(
        "I replaced print('hello') with print('hi').",
    )));
    server.push(sse(&chunks::text_answer("Done: hello.py now prints hi.")));
    let ws = Workspace::new();
    std::fs::write(ws.root.join("hello.py"), "print(\"hello\")\n").unwrap();
    let out = run(ws.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "m", "make hello.py print hi"],
    ));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("a change that failed and was not made since"),
        "{}",
        out.stderr
    );
    // The model was told what went wrong, in its own call's words.
    let note = server.chat_bodies()[3]["messages"].to_string();
    assert!(note.contains("your `edit` call failed"), "{note}");
    assert_eq!(
        std::fs::read_to_string(ws.root.join("hello.py")).unwrap(),
        "print(\"hello\")\n"
    );
}

#[test]
fn codex_habits_exec_cd_output_last_message_and_a_first_prompt_work() {
    let server = mock();
    let workspace = Workspace::new();
    let elsewhere = workspace.home.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let answer_file = workspace.home.join("last.txt");
    // `exec` with `-C DIR` and `-o FILE`, started from another folder.
    server.push(sse(&chunks::text_answer("The answer.")));
    let mut command = workspace.offcode(
        &server.base_url(),
        &[
            "exec",
            "-C",
            workspace.root.to_str().unwrap(),
            "-m",
            "mock-model",
            "-o",
            answer_file.to_str().unwrap(),
            "what is it?",
        ],
    );
    command.current_dir(&elsewhere);
    let output = run(command);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(&answer_file).unwrap(),
        "The answer.\n"
    );
    // The session belongs to the folder -C named.
    let body = &server.chat_bodies()[0];
    assert!(
        body.to_string()
            .contains(&workspace.root.display().to_string()),
        "the workspace block names -C's folder: {body}"
    );
    assert!(!body.to_string().contains("elsewhere"), "{body}");

    // A file in a folder that does not exist: refused before any work.
    let before = server.chat_bodies().len();
    let output = run(workspace.offcode(
        &server.base_url(),
        &[
            "run",
            "-m",
            "mock-model",
            "-o",
            "/nonexistent/dir/last.txt",
            "hi",
        ],
    ));
    assert_eq!(output.code, 2, "{}", output.stderr);
    assert!(
        output.stderr.contains("--output-last-message"),
        "{}",
        output.stderr
    );
    assert_eq!(server.chat_bodies().len(), before);

    // `offcode "PROMPT"`: the UI starts with it sent (plain lines when
    // not on a terminal; the end of input ends the session).
    server.push(sse(&chunks::text_answer("Hello from the UI.")));
    let output = run_with_stdin(
        workspace.offcode(&server.base_url(), &["-m", "mock-model", "say hello"]),
        "",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output.stdout.contains("Hello from the UI."),
        "{}",
        output.stdout
    );
    let last = server.chat_bodies().last().unwrap().clone();
    assert!(last.to_string().contains("say hello"), "{last}");
}
