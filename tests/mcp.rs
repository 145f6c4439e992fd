//! Local MCP servers end to end: the mock model calls the test server's
//! tools (`cargo run --example mcp-server`) through `offcode run`; crashes,
//! hangs, garbage, budgets, permissions and confinement are checked by
//! their effects (files, connections, processes), not only by messages.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Workspace, chunks, mock, run, sse, tool_results};

/// The test server, built by `cargo test` with the other examples.
pub fn server_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.parent().unwrap().parent().unwrap();
    let bin = target.join("examples/mcp-server");
    assert!(bin.exists(), "{} is built by `cargo test`", bin.display());
    bin
}

/// A global config with `servers` as its `mcp` block and `extra` keys.
pub fn configure(ws: &Workspace, servers: &Value, extra: &str) {
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        format!(
            "{{\n  retry: {{ initial_delay_ms: 10, max_delay_ms: 40, max_retries: 2 }},\n  \"mcp\": {servers},\n  {extra}\n}}\n"
        ),
    )
    .unwrap();
}

/// A `test` server with `args` that logs to `log`.
pub fn test_server(log: &Path, args: &[&str]) -> Value {
    let mut command = vec![
        server_bin().display().to_string(),
        "--log".to_owned(),
        log.display().to_string(),
    ];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    json!({"type": "local", "command": command, "timeout": 5000})
}

pub fn call(id: &str, name: &str, arguments: &Value) -> Vec<String> {
    chunks::tool_answer("", &[(id, name, arguments.clone())])
}

fn session_text(ws: &Workspace) -> String {
    let dir = ws.home.join(".local/share/offcode/sessions");
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

pub fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_model_calls_an_mcp_tool_and_gets_its_result() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    // Garbage on stdout and notifications before the initialize result
    // do not stop it.
    configure(
        &ws,
        &json!({"test": test_server(&log, &["--garbage", "--notify-before-init", "--ping-client"])}),
        "",
    );
    let server = mock();
    server.push(sse(&call("c1", "test_echo", &json!({"text": "你好"}))));
    server.push(sse(&chunks::text_answer("It said hello.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "ask the test server");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    let tools = &bodies[0]["tools"];
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "test_echo")
        .unwrap_or_else(|| panic!("{tools:#}"));
    assert_eq!(echo["function"]["parameters"]["required"], json!(["text"]));
    assert_eq!(tool_results(&bodies[1]), ["echo: 你好"]);
    assert!(
        output.stderr.contains("MCP server `test` ready: 10 tools"),
        "{}",
        output.stderr
    );
    let session = session_text(&ws);
    assert!(
        session.contains(r#""type":"mcp","server":"test","state":"ready""#),
        "{session}"
    );
    let log = log_lines(&log);
    assert!(
        log.contains(&"recv notifications/initialized".to_owned()),
        "{log:?}"
    );
    assert!(log.contains(&"response srv-1".to_owned()), "{log:?}");
    assert!(log.contains(&"recv tools/call".to_owned()), "{log:?}");
}

#[test]
fn a_crash_mid_call_restarts_the_server_and_the_next_call_works() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(&ws, &json!({"test": test_server(&log, &[])}), "");
    let server = mock();
    server.push(sse(&call("c1", "test_crash", &json!({}))));
    server.push(sse(&call("c2", "test_echo", &json!({"text": "again"}))));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "crash it");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    let crashed = tool_results(&bodies[1]);
    assert!(
        crashed[0]
            .contains("The MCP server `test` stopped during the call (it exited with status 3"),
        "{crashed:?}"
    );
    assert_eq!(tool_results(&bodies[2])[1], "echo: again");
    let starts = log_lines(&log)
        .iter()
        .filter(|l| l.starts_with("start "))
        .count();
    assert_eq!(starts, 2);
    let session = session_text(&ws);
    for state in ["ready", "restarting"] {
        assert!(
            session.contains(&format!(r#""server":"test","state":"{state}""#)),
            "{state}: {session}"
        );
    }
}

#[test]
fn a_server_that_always_crashes_is_given_up_after_three_restarts() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(
        &ws,
        &json!({"test": test_server(&log, &["--crash-after", "0"])}),
        "",
    );
    let server = mock();
    // More calls than starts: under load a call can still reach a crashed
    // server whose end is not seen yet ("stopped during the call"), so the
    // call that finds it given up may come later than the fifth.
    for n in 0..7 {
        server.push(sse(&call(
            &format!("c{n}"),
            "test_echo",
            &json!({"text": "x"}),
        )));
    }
    server.push(sse(&chunks::text_answer("Gave up.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "keep calling");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let results: Vec<String> = tool_results(server.chat_bodies().last().unwrap());
    assert!(
        results[4..].iter().any(|result| result.starts_with("Error: The MCP server `test` is not available: it stopped or failed to start 4 times in 10 minutes")),
        "{results:#?}"
    );
    let starts = log_lines(&log)
        .iter()
        .filter(|l| l.starts_with("start "))
        .count();
    assert_eq!(starts, 4, "one start and three restarts");
    assert!(
        output.stderr.contains("offcode gave up on it"),
        "{}",
        output.stderr
    );
}

#[test]
fn a_denied_mcp_tool_never_reaches_the_server() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(
        &ws,
        &json!({"test": test_server(&log, &[])}),
        r#""permission": { "test_*": "deny" },"#,
    );
    let server = mock();
    server.push(sse(&call(
        "c1",
        "test_write_file",
        &json!({"path": "victim.txt", "content": "x"}),
    )));
    server.push(sse(&chunks::text_answer("It was denied.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "write through mcp");
    assert_eq!(output.code, 4, "{}", output.stderr);
    assert!(!ws.root.join("victim.txt").exists());
    let results = tool_results(&server.chat_bodies()[1]);
    assert!(results[0].contains("denied"), "{results:?}");
    assert!(!log_lines(&log).contains(&"recv tools/call".to_owned()));
}

#[test]
fn an_mcp_tool_asks_by_default_and_a_refusal_leaves_no_effect() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(&ws, &json!({"test": test_server(&log, &[])}), "");
    let server = mock();
    server.push(sse(&call(
        "c1",
        "test_write_file",
        &json!({"path": "victim.txt", "content": "x"}),
    )));
    server.push(sse(&chunks::text_answer("Not allowed.")));
    // No --yes: a headless run refuses what asks.
    let output = ws.run_task(&server.base_url(), &[], "write through mcp");
    assert!(!ws.root.join("victim.txt").exists(), "{}", output.stderr);
    assert!(!log_lines(&log).contains(&"recv tools/call".to_owned()));
}

#[test]
fn git_settings_an_mcp_call_leaves_run_nothing_later() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    // The person's nested repository, made before the session.
    let made = std::process::Command::new("git")
        .args(["init", "-q", "sub"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    assert!(made.status.success());
    std::thread::sleep(std::time::Duration::from_millis(300));
    let marker = ws.home.join("fsmonitor-ran");
    configure(&ws, &json!({"test": test_server(&log, &[])}), "");
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "c1",
            "test_write_file",
            json!({
                "path": "sub/.git/config",
                "content": format!("[core]\n\tfsmonitor = touch {}\n", marker.display()),
            }),
        )],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "plant");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let results = tool_results(&server.chat_bodies()[1]);
    assert!(results[0].contains("core.fsmonitor"), "{results:?}");
    let status = std::process::Command::new("git")
        .arg("status")
        .current_dir(ws.root.join("sub"))
        .env("HOME", &ws.home)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    assert!(
        !marker.exists(),
        "git ran what the MCP call left: {results:?}"
    );
}

#[test]
fn confined_servers_cannot_write_outside_the_workspace_or_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let outside = ws.home.join("escaped.txt");
    configure(&ws, &json!({"test": test_server(&log, &[])}), "");
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[
            (
                "c1",
                "test_write_file",
                json!({"path": outside.display().to_string(), "content": "x"}),
            ),
            ("c2", "test_connect", json!({ "port": port })),
            (
                "c3",
                "test_write_file",
                json!({"path": "inside.txt", "content": "fine"}),
            ),
        ],
    )));
    server.push(sse(&chunks::text_answer("Tried.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "escape");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(!outside.exists(), "the confined server wrote outside");
    assert!(
        listener.accept().is_err(),
        "the confined server connected out"
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("inside.txt")).unwrap(),
        "fine"
    );
    let results = tool_results(&server.chat_bodies()[1]);
    assert!(results[0].contains("cannot write"), "{results:?}");
    assert!(results[1].contains("cannot connect"), "{results:?}");
}

#[test]
fn a_server_that_opts_out_of_confinement_is_warned_about_and_runs_free() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let outside = ws.home.join("allowed-outside.txt");
    let mut free = test_server(&log, &[]);
    free["confine"] = json!(false);
    configure(&ws, &json!({ "free": free }), "");
    let server = mock();
    server.push(sse(&call(
        "c1",
        "free_write_file",
        &json!({"path": outside.display().to_string(), "content": "x"}),
    )));
    server.push(sse(&chunks::text_answer("Wrote it.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "write outside");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output
            .stderr
            .contains("MCP server `free` runs outside the sandbox"),
        "{}",
        output.stderr
    );
    assert!(outside.exists());
}

#[test]
fn the_budget_caps_tools_and_schemas_and_cuts_long_results() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(
        &ws,
        &json!({"test": test_server(&log, &["--big-schemas", "1", "--many-tools", "20"])}),
        r#""mcp_limits": { "tools": 12, "result_bytes": 10000 },"#,
    );
    let server = mock();
    server.push(sse(&call("c1", "test_big", &json!({"bytes": 5_000_000}))));
    server.push(sse(&chunks::text_answer("Long.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "a big result");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    let mcp_tools: Vec<String> = crate::support::offered(&bodies[0])
        .into_iter()
        .filter(|n| n.starts_with("test_"))
        .collect();
    assert_eq!(mcp_tools.len(), 12, "{mcp_tools:?}");
    assert!(!mcp_tools.contains(&"test_big_schema_1".to_owned()));
    let result = &tool_results(&bodies[1])[0];
    assert!(result.len() < 11_000, "{}", result.len());
    assert!(
        result.ends_with("[… cut by offcode: the result was 4.8 MB, only the first 9.8 KB are shown (mcp_limits.result_bytes)]"),
        "{}",
        &result[result.len() - 200..]
    );
    // What is left out, and why, is listed.
    let listed = run(ws.offcode(&server.base_url(), &["mcp", "list", "--json"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let reports: Value = serde_json::from_str(&listed.stdout).unwrap();
    let tools = reports[0]["tools"].as_array().unwrap();
    let left_out: Vec<(&str, &str)> = tools
        .iter()
        .filter_map(|t| Some((t["name"].as_str()?, t["left_out"].as_str()?)))
        .collect();
    assert_eq!(left_out.len(), 31 - 12, "{left_out:#?}");
    assert!(
        left_out.contains(&(
            "test_big_schema_1",
            "its definition is 25537 bytes, over `mcp_limits.schema_bytes` (8192)"
        )),
        "{left_out:#?}"
    );
    assert!(
        left_out.contains(&(
            "test_tool_20",
            "over `mcp_limits.tools` (12 MCP tools at most)"
        )),
        "{left_out:#?}"
    );
    // `offcode context` counts them apart and names what was left out.
    let context = run(ws.offcode(&server.base_url(), &["context", "--json"]));
    assert_eq!(context.code, 0, "{}", context.stderr);
    let report: Value = serde_json::from_str(&context.stdout).unwrap();
    let parts = report["parts"].as_array().unwrap();
    let part = |name: &str| parts.iter().find(|p| p["name"] == name).cloned();
    assert_eq!(
        part("MCP test").unwrap()["source"],
        "12 tools",
        "{parts:#?}"
    );
    assert!(part("MCP test").unwrap()["tokens"].as_u64().unwrap() > 100);
    assert!(
        part("MCP left out").unwrap()["source"]
            .as_str()
            .unwrap()
            .starts_with("test_big_schema_1, test_tool_3, "),
        "{parts:#?}"
    );
}

#[test]
fn a_changed_tool_list_reaches_the_next_request() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(
        &ws,
        &json!({"test": test_server(&log, &["--add-tool-after-call"])}),
        "",
    );
    let server = mock();
    server.push(sse(&call("c1", "test_echo", &json!({"text": "one"}))));
    server.push(sse(&call("c2", "test_echo", &json!({"text": "two"}))));
    server.push(sse(&call("c3", "test_added_later", &json!({}))));
    server.push(sse(&chunks::text_answer("All.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "thrice");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert!(!crate::support::offered(&bodies[0]).contains(&"test_added_later".to_owned()));
    // The notification follows the first answer; the list is fetched again
    // by the step after next at the latest.
    assert!(crate::support::offered(&bodies[2]).contains(&"test_added_later".to_owned()));
    assert_eq!(tool_results(&bodies[3])[2], "added later");
    assert!(
        output
            .stderr
            .contains("MCP server `test` ready: 11 tools (the list changed)"),
        "{}",
        output.stderr
    );
}

#[test]
fn a_slow_call_times_out_and_is_cancelled_at_the_server() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(
        &ws,
        &json!({"test": test_server(&log, &[])}),
        r#""mcp_limits": { "call_timeout_ms": 300 },"#,
    );
    let server = mock();
    server.push(sse(&call("c1", "test_slow", &json!({"ms": 5000}))));
    server.push(sse(&chunks::text_answer("Too slow.")));
    let started = std::time::Instant::now();
    let output = ws.run_task(&server.base_url(), &["--yes"], "slow");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    let results = tool_results(&server.chat_bodies()[1]);
    assert!(results[0].contains("no answer in 0.3 s"), "{results:?}");
    assert!(
        crate::support::wait_until(std::time::Duration::from_secs(2), || log_lines(&log)
            .iter()
            .any(|l| l.starts_with("recv notifications/cancelled"))),
        "{:?}",
        log_lines(&log)
    );
}

#[test]
fn servers_that_cannot_start_or_hang_leave_the_session_working() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let mut hang = test_server(&log, &["--hang-init"]);
    hang["timeout"] = json!(300);
    configure(
        &ws,
        &json!({
            "dead": {"type": "local", "command": ["/nonexistent/mcp-server"]},
            "hang": hang,
            "bad": test_server(&log, &["--bad-version"]),
            "remote": {"type": "remote", "url": "https://example.com/mcp"},
        }),
        "",
    );
    let server = mock();
    server.push(sse(&chunks::text_answer("Still here.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "hello");
    assert_eq!(output.code, 0, "{}", output.stderr);
    for expected in [
        "MCP server `dead` failed",
        "No such file or directory",
        "MCP server `hang` failed: `initialize` failed: no answer in 0.3 s",
        "MCP server `bad` failed: it speaks MCP version `1999-01-01`",
        "MCP server `remote` is remote",
    ] {
        assert!(
            output.stderr.contains(expected),
            "{expected}:\n{}",
            output.stderr
        );
    }
    let names = crate::support::offered(&server.chat_bodies()[0]);
    assert!(
        names.iter().all(|n| !n.contains('_') || n == "task"),
        "{names:?}"
    );
}

#[test]
fn exit_leaves_no_server_process() {
    let ws = Workspace::new();
    let log = ws.root.join("server-unique-marker.log");
    configure(
        &ws,
        &json!({"one": test_server(&log, &[]), "two": test_server(&log, &["--hang-init"])}),
        "",
    );
    let server = mock();
    server.push(sse(&call("c1", "one_slow", &json!({"ms": 200}))));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "then leave");
    assert_eq!(output.code, 0, "{}", output.stderr);
    // Both ran (one answered a call, one hung in `initialize`).
    let log_text = log_lines(&log);
    assert_eq!(
        log_text.iter().filter(|l| l.starts_with("start ")).count(),
        2,
        "{log_text:?}"
    );
    assert!(
        log_text.contains(&"recv tools/call".to_owned()),
        "{log_text:?}"
    );
    let marker = log.display().to_string();
    assert!(
        crate::support::wait_until(std::time::Duration::from_secs(2), || {
            crate::support::processes_with(&marker).is_empty()
        }),
        "{:?}",
        crate::support::processes_with(&marker)
    );
}

#[test]
fn servers_die_with_offcode_killed_even_when_they_ignore_their_closed_stdin() {
    // Servers that stay after their stdin closes, confined and not: only
    // the parent-death signal of the thread that started them ends them.
    let ws = Workspace::new();
    let marker = format!("linger-marker-{}", std::process::id());
    let log = ws.root.join(format!("{marker}.log"));
    let mut free = test_server(&log, &["--linger"]);
    free["confine"] = json!(false);
    configure(
        &ws,
        &json!({"kept": test_server(&log, &["--linger"]), "free": free}),
        "",
    );
    // A model endpoint that takes the connection and never answers: offcode
    // waits for it with both servers up.
    let endpoint = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", endpoint.local_addr().unwrap());
    let mut offcode = ws
        .offcode(&url, &["run", "--yes", "--model", "mock-model", "wait"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(ws.home.join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let started = crate::support::wait_until(std::time::Duration::from_secs(20), || {
        crate::support::processes_with(&marker).len() >= 2
            && endpoint.set_nonblocking(true).is_ok()
            && endpoint.accept().is_ok()
    });
    assert!(
        started,
        "{:?}\n{}",
        crate::support::processes_with(&marker),
        std::fs::read_to_string(ws.home.join("stderr")).unwrap_or_default()
    );
    // Both servers went through the handshake before the first request.
    let log_text = log_lines(&log);
    assert_eq!(
        log_text.iter().filter(|l| *l == "recv tools/list").count(),
        2,
        "{log_text:?}"
    );
    offcode.kill().unwrap();
    offcode.wait().unwrap();
    // Whatever the result, nothing of this test is left running after it.
    let _cleanup = KillOnDrop(marker.clone());
    // The stdin of both is closed now: they linger, unless killed.
    assert!(
        crate::support::wait_until(std::time::Duration::from_secs(5), || {
            crate::support::processes_with(&marker).is_empty()
        }),
        "outlived offcode: {:?}",
        crate::support::processes_with(&marker)
    );
}

#[test]
fn a_repository_s_mcp_servers_do_not_start_until_the_folder_is_trusted() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    // Yours, which the repository would run outside the sandbox.
    configure(
        &ws,
        &json!({"mine": test_server(&ws.root.join("mine.log"), &[])}),
        "",
    );
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        json!({"mcp": {"repo": test_server(&log, &[]), "mine": {"confine": false}}}).to_string(),
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::text_answer("Hi.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "hello");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(log_lines(&log).is_empty(), "the repository's server ran");
    for expected in ["mcp server `repo` runs", "mcp server `mine` is changed"] {
        assert!(
            output.stderr.contains(expected),
            "{expected}: {}",
            output.stderr
        );
    }
    let listed = run(ws.offcode(&server.base_url(), &["mcp", "list", "--json"]));
    let reports: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(reports.as_array().unwrap().len(), 1, "{reports:#}");
    assert_eq!(reports[0]["name"], "mine");
    assert_eq!(reports[0]["confined"], true);
}

#[test]
fn a_trusted_server_asks_again_when_what_it_runs_changes() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let start = |extra: &str| {
        std::fs::write(
            ws.root.join("start.sh"),
            format!(
                "{extra}exec {} --log {}\n",
                server_bin().display(),
                log.display()
            ),
        )
        .unwrap();
    };
    let project = |environment: &Value| {
        std::fs::write(
            ws.root.join("offcode.jsonc"),
            json!({"mcp": {"repo": {"type": "local", "command": ["sh", "start.sh"],
                "environment": environment, "timeout": 5000}}})
            .to_string(),
        )
        .unwrap();
    };
    start("");
    project(&json!({"MODE": "a"}));
    let said = run(ws.offcode("http://127.0.0.1:9/v1", &["trust"]));
    assert!(
        said.stdout.contains("`start.sh` has sha256"),
        "{}{}",
        said.stdout,
        said.stderr
    );
    let hello = |ws: &Workspace| {
        let _ = std::fs::remove_file(&log);
        let server = mock();
        server.push(sse(&chunks::text_answer("Hi.")));
        ws.run_task(&server.base_url(), &["--yes"], "hello")
    };
    let output = hello(&ws);
    assert!(
        !log_lines(&log).is_empty(),
        "the trusted server did not start: {}",
        output.stderr
    );
    // The script it starts changes: not run until trusted again.
    start("touch changed; ");
    let output = hello(&ws);
    assert!(log_lines(&log).is_empty(), "a changed script ran");
    assert!(output.stderr.contains("would loosen"), "{}", output.stderr);
    assert!(!ws.root.join("changed").exists());
    // Trusted anew, then its environment changes: the same.
    run(ws.offcode("http://127.0.0.1:9/v1", &["trust"]));
    project(&json!({"MODE": "b"}));
    let output = hello(&ws);
    assert!(log_lines(&log).is_empty(), "a changed environment ran");
    assert!(output.stderr.contains("MODE=b"), "{}", output.stderr);
}

#[test]
fn a_bad_mcp_block_names_the_file_line_and_column() {
    let ws = Workspace::new();
    let path = ws.home.join(".config/offcode/offcode.jsonc");
    std::fs::write(
        &path,
        "{\n  \"mcp\": {\n    \"fs\": {\n      \"type\": \"local\"\n    }\n  }\n}\n",
    )
    .unwrap();
    let output = run(ws.offcode("http://127.0.0.1:9/v1", &["mcp", "list"]));
    assert_eq!(output.code, 2);
    assert!(
        output.stderr.contains(&format!(
            "Invalid config file `{}` at line 3, column 5: `mcp`: server `fs`: a local server needs `command`",
            path.display()
        )),
        "{}",
        output.stderr
    );
    std::fs::write(
        &path,
        "{\n  \"mcp\": {\n    \"fs\": {\"command\": [\"x\"], \"enabeld\": true}\n  }\n}\n",
    )
    .unwrap();
    let output = run(ws.offcode("http://127.0.0.1:9/v1", &["mcp", "list"]));
    assert_eq!(output.code, 2);
    assert!(
        output.stderr.contains("at line 3, column")
            && output.stderr.contains("unknown field `enabeld`"),
        "{}",
        output.stderr
    );
}

#[test]
fn mcp_test_starts_one_server_and_calls_a_tool() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(&ws, &json!({"test": test_server(&log, &[])}), "");
    let url = "http://127.0.0.1:9/v1";
    let listed = run(ws.offcode(url, &["mcp", "test", "test"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains("test_echo"), "{}", listed.stdout);
    let called = run(ws.offcode(
        url,
        &["mcp", "test", "test", "add", r#"{"a": 2, "b": 3}"#, "--yes"],
    ));
    assert_eq!(called.code, 0, "{}", called.stderr);
    assert_eq!(called.stdout, "5\n");
    let failed = run(ws.offcode(url, &["mcp", "test", "test", "fail", "--yes"]));
    assert_eq!(failed.code, 1);
    assert_eq!(failed.stdout, "Error: the tool failed on purpose\n");
    let unknown = run(ws.offcode(url, &["mcp", "test", "nope"]));
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("no MCP server is called `nope`"));
}

#[test]
fn a_server_s_variables_are_masked_in_offcode_config() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let mut server = test_server(&log, &[]);
    server["environment"] = json!({"API_TOKEN": "tok-very-secret-9876"});
    configure(&ws, &json!({ "test": server }), "");
    let shown = run(ws.offcode("http://127.0.0.1:9/v1", &["config"]));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(!shown.stdout.contains("very-secret"), "{}", shown.stdout);
    assert!(
        shown
            .stdout
            .contains("mcp.test.environment.API_TOKEN = \"****9876\""),
        "{}",
        shown.stdout
    );
    // The server itself gets it.
    let got = run(ws.offcode(
        "http://127.0.0.1:9/v1",
        &[
            "mcp",
            "test",
            "test",
            "env",
            r#"{"name": "API_TOKEN"}"#,
            "--yes",
        ],
    ));
    assert_eq!(got.stdout, "tok-very-secret-9876\n", "{}", got.stderr);
}

#[test]
fn the_plan_agent_gets_only_the_mcp_tools_marked_read_only() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    // Even with every tool of the server allowed.
    configure(
        &ws,
        &json!({"test": test_server(&log, &[])}),
        r#""permission": { "test_*": "allow" },"#,
    );
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[
            ("c1", "test_echo", json!({"text": "plan"})),
            (
                "c2",
                "test_write_file",
                json!({"path": "victim.txt", "content": "x"}),
            ),
        ],
    )));
    server.push(sse(&chunks::text_answer("Planned.")));
    let output = ws.run_task(&server.base_url(), &["--yes", "--agent", "plan"], "plan it");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    let offered: Vec<String> = crate::support::offered(&bodies[0])
        .into_iter()
        .filter(|n| n.starts_with("test_"))
        .collect();
    assert_eq!(offered, ["test_echo", "test_add", "test_env"]);
    let results = tool_results(&bodies[1]);
    assert_eq!(results[0], "echo: plan");
    assert!(
        results[1].contains("`test_write_file` is not one of the `plan` agent's tools"),
        "{results:?}"
    );
    assert!(!ws.root.join("victim.txt").exists());
    let calls = log_lines(&log)
        .iter()
        .filter(|l| *l == "recv tools/call")
        .count();
    assert_eq!(calls, 1, "only the read-only call reached the server");
}

/// Without Landlock (qemu-user, old kernels) an MCP server runs
/// unconfined, so each call asks a person, and nothing else answers it:
/// the headless answer (as `--yes` would give) is a refusal.
#[tokio::test]
async fn without_confinement_every_mcp_call_asks_a_person_and_yes_does_not_answer() {
    use std::sync::Arc;

    use offcode::protocol::{EventMsg, Op};
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let server = mock();
    server.push(sse(&call(
        "c1",
        "test_write_file",
        &json!({"path": "victim.txt", "content": "x"}),
    )));
    server.push(sse(&chunks::text_answer("Refused.")));
    let mut config = crate::support::fast_config(&server.base_url());
    config.mcp = serde_json::from_value(json!({"test": test_server(&log, &[])})).unwrap();
    let unavailable = offcode::confine::Status::Unavailable {
        reason: "this kernel has no Landlock".to_owned(),
    };
    let shell = Arc::new(offcode::confine::Shell::unconfined(unavailable.clone()));
    let policy = offcode::policy::Policy::load(
        &[offcode::policy::Layer {
            path: ws.home.join("offcode.jsonc"),
            permission: Some(json!({"test_*": "allow"})),
            dangerous_extra: Vec::new(),
            commands: None,
            untrusted: false,
        }],
        &[],
        &ws.root,
        None,
    )
    .unwrap()
    .with_shell(unavailable);
    let mcp = offcode::mcp::Mcp::new(
        &config.mcp,
        config.mcp_limits,
        offcode::mcp::Launcher {
            shell: Arc::clone(&shell),
            root: ws.root.clone(),
        },
    );
    let store = offcode::session::Store::new(ws.home.join("sessions"));
    let session = store
        .create(&ws.root, "mock-model", &config.base_url)
        .unwrap();
    let mut handle = offcode::agent::spawn(offcode::agent::AgentSetup {
        client: Arc::new(offcode::client::Client::new(&config).unwrap()),
        session,
        tools: offcode::tools::Registry::default(),
        config,
        shell,
        sandbox: Arc::new(offcode::sandbox::Sandbox::new(&ws.root).unwrap()),
        policy: Arc::new(offcode::policy::PolicySource::fixed(policy)),
        approver: offcode::protocol::Decider::Headless,
        context: offcode::context::Assembly::default(),
        servers: offcode::servers::ServerCache::default(),
        agents: offcode::agents::Agents::default(),
        agent: None,
        depth: 0,
        mcp: Some(mcp),
        checkpoints: None,
    });
    handle.ops.submit(Op::UserTurn {
        text: "write it".to_owned(),
    });
    let mut asked = Vec::new();
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), handle.events.recv())
            .await
            .unwrap()
            .unwrap();
        match &event.msg {
            EventMsg::ApprovalRequest(request) => {
                asked.push(request.clone());
                // What a headless run answers, `--yes` or not.
                handle.ops.submit(Op::Approve {
                    call_id: request.call_id.clone(),
                    decision: offcode::protocol::ApprovalDecision::Deny,
                    reason: None,
                });
            }
            EventMsg::TurnComplete(_) => break,
            _ => {}
        }
    }
    handle.stop_servers().await;
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert!(!asked[0].session_allowed, "{:#?}", asked[0]);
    assert_eq!(
        asked[0].mandate,
        Some(offcode::protocol::Mandate::NoConfinement)
    );
    assert!(
        asked[0]
            .rule
            .contains("MCP servers cannot be confined here")
    );
    assert!(!ws.root.join("victim.txt").exists());
    assert!(!log_lines(&log).contains(&"recv tools/call".to_owned()));
}

#[test]
fn doctor_starts_each_server_and_names_the_fix_for_one_that_does_not() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(
        &ws,
        &json!({
            "test": test_server(&log, &[]),
            "dead": {"type": "local", "command": ["/nonexistent/mcp-server"]},
        }),
        "",
    );
    let server = crate::support::demo_mock();
    let output = run(ws.offcode(&server.base_url(), &["doctor"]));
    assert_eq!(output.code, 1, "{}", output.stdout);
    for expected in [
        "✓ MCP server `test` starts confined: 10 tools (",
        "✗ MCP server `dead` does not start: `initialize` failed: it exited with status 126",
        "  fix: check its `command` (`/nonexistent/mcp-server`) runs here; `offcode mcp test dead` shows it start",
    ] {
        assert!(
            output.stdout.contains(expected),
            "{expected}:\n{}",
            output.stdout
        );
    }
    assert!(crate::support::wait_until(
        std::time::Duration::from_secs(2),
        || crate::support::processes_with(&log.display().to_string()).is_empty()
    ));
}

#[test]
fn what_a_server_writes_reaches_the_terminal_without_escape_sequences() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(&ws, &json!({"test": test_server(&log, &[])}), "");
    let server = mock();
    // A title change and a screen clear, in a result's first line.
    server.push(sse(&call(
        "c1",
        "test_echo",
        &json!({"text": "\u{1b}]0;pwned\u{7}\u{1b}[2J hi"}),
    )));
    server.push(sse(&chunks::text_answer("Echoed.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "echo it");
    assert_eq!(output.code, 0, "{}", output.stderr);
    // Not a terminal: offcode itself adds no colour, so any escape would
    // be the server's.
    assert!(!output.stderr.contains('\u{1b}'), "{:?}", output.stderr);
    assert!(
        output.stderr.contains("echo: ·]0;pwned··[2J hi"),
        "{}",
        output.stderr
    );
}

/// Kills the processes whose command line holds its marker when dropped:
/// a test that fails leaves nothing running.
struct KillOnDrop(String);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for process in crate::support::processes_with(&self.0) {
            let pid = process
                .split(':')
                .next()
                .and_then(|pid| pid.parse::<i32>().ok());
            if let Some(pid) = pid.and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

#[test]
fn a_repository_s_server_runs_confined_even_trusted_and_whatever_it_loads() {
    for namespaces in [true, false] {
        repository_server_confined(namespaces);
    }
}

/// `OFFCODE_TEST_NO_NAMESPACES` for a run without user namespaces.
fn run_hello(ws: &Workspace, url: &str, namespaces: bool, prompt: &str) -> crate::support::Output {
    let mut command = ws.offcode(url, &["run", "--yes", "--model", "mock-model", prompt]);
    if !namespaces {
        command.env("OFFCODE_TEST_NO_NAMESPACES", "1");
    }
    run(command)
}

/// A trusted project server that asks to run outside, with or without
/// user namespaces.
fn repository_server_confined(namespaces: bool) {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let outside = ws.home.join("escaped.txt");
    // The repository's server, run outside the sandbox as its file asks,
    // through a script that sources another the trust does not pin.
    std::fs::write(
        ws.root.join("start.sh"),
        format!(
            ". ./lib.sh\nexec {} --log {}\n",
            server_bin().display(),
            log.display()
        ),
    )
    .unwrap();
    std::fs::write(ws.root.join("lib.sh"), "# helpers\n").unwrap();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        json!({"mcp": {"repo": {"type": "local", "command": ["sh", "start.sh"],
            "confine": false, "timeout": 5000}}})
        .to_string(),
    )
    .unwrap();
    let trusted = run(ws.offcode("http://127.0.0.1:9/v1", &["trust"]));
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    // What a command of an earlier session left: the sourced file now
    // writes outside the workspace.
    std::fs::write(
        ws.root.join("lib.sh"),
        format!("echo pwned > {}\n", outside.display()),
    )
    .unwrap();
    let server = mock();
    server.push(sse(&call(
        "c1",
        "repo_write_file",
        &json!({"path": ws.home.join("through-call.txt").display().to_string(), "content": "x"}),
    )));
    server.push(sse(&chunks::text_answer("Tried.")));
    let output = run_hello(&ws, &server.base_url(), namespaces, "escape");
    assert!(
        !log_lines(&log).is_empty(),
        "the trusted server did not start: {}",
        output.stderr
    );
    assert!(
        !outside.exists(),
        "namespaces {namespaces}: what the server loads ran unconfined"
    );
    assert!(
        !ws.home.join("through-call.txt").exists(),
        "the server wrote outside: {}",
        output.stderr
    );
    assert!(
        !output.stderr.contains("runs outside the sandbox"),
        "{}",
        output.stderr
    );
}

#[test]
fn a_repository_s_server_environment_reaches_only_the_confined_program() {
    for namespaces in [true, false] {
        server_environment(namespaces);
    }
}

/// A trusted project server with `LD_PRELOAD`, with or without user
/// namespaces.
fn server_environment(namespaces: bool) {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let outside = ws.home.join("preloaded.txt");
    // A library whose constructor writes where it runs: outside the
    // workspace if it can, else inside.
    std::fs::write(
        ws.root.join("pre.c"),
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void run(void) {{\n  FILE *f = fopen(\"{}\", \"a\");\n  if (f) {{ fputs(\"unconfined\\n\", f); fclose(f); }}\n  f = fopen(\"{}\", \"a\");\n  if (f) {{ fputs(\"loaded\\n\", f); fclose(f); }}\n}}\n",
            outside.display(),
            ws.root.join("inside.txt").display()
        ),
    )
    .unwrap();
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o", "pre.so", "pre.c"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    std::fs::write(
        ws.root.join("start.sh"),
        format!("exec {} --log {}\n", server_bin().display(), log.display()),
    )
    .unwrap();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        json!({"mcp": {"repo": {"type": "local", "command": ["sh", "start.sh"],
            "environment": {"LD_PRELOAD": ws.root.join("pre.so").display().to_string()},
            "timeout": 5000}}})
        .to_string(),
    )
    .unwrap();
    let trusted = run(ws.offcode("http://127.0.0.1:9/v1", &["trust"]));
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let server = mock();
    server.push(sse(&chunks::text_answer("Hi.")));
    let output = run_hello(&ws, &server.base_url(), namespaces, "hello");
    assert!(
        !log_lines(&log).is_empty(),
        "the server did not start: {}",
        output.stderr
    );
    assert!(
        !outside.exists(),
        "namespaces {namespaces}: the library ran outside the sandbox: {}",
        std::fs::read_to_string(&outside).unwrap_or_default()
    );
    // The server's own environment still reached it, confined.
    assert!(
        std::fs::read_to_string(ws.root.join("inside.txt"))
            .unwrap_or_default()
            .contains("loaded"),
        "{}",
        output.stderr
    );
}
