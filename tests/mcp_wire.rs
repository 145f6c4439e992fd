//! What crosses the line between offcode and an MCP server: every page of
//! a long tool list, a server that exits as it starts, and never the
//! endpoint's API key (nor through a command). Checked by what the server
//! logged and what the model was offered and told.

use serde_json::json;

use crate::mcp::{call, configure, log_lines, test_server};
use crate::support::{Workspace, chunks, mock, run, sse, tool_results};

#[test]
fn every_page_of_a_long_tool_list_is_offered() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    // 10 built-in tools and 5 more, 4 to a page: four pages.
    configure(
        &ws,
        &json!({"test": test_server(&log, &["--page", "4", "--many-tools", "5"])}),
        "",
    );
    let server = mock();
    server.push(sse(&call("c1", "test_tool_5", &json!({"x": "last page"}))));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "use the last tool");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    let offered = crate::support::offered(&bodies[0]);
    let mcp: Vec<&String> = offered.iter().filter(|n| n.starts_with("test_")).collect();
    assert_eq!(mcp.len(), 15, "{offered:?}");
    assert!(offered.contains(&"test_echo".to_owned()), "{offered:?}");
    assert_eq!(tool_results(&bodies[1]), ["tool_5: last page"]);
    let lists = log_lines(&log)
        .iter()
        .filter(|l| *l == "recv tools/list")
        .count();
    assert_eq!(lists, 4, "{:?}", log_lines(&log));
}

#[test]
fn a_server_that_exits_as_it_starts_is_named_and_the_task_goes_on() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(
        &ws,
        &json!({"gone": test_server(&log, &["--exit-at-start"])}),
        "",
    );
    let server = mock();
    server.push(sse(&chunks::text_answer("Still here.")));
    let output = ws.run_task(&server.base_url(), &["--yes"], "hello");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stdout.contains("Still here."), "{}", output.stdout);
    // Why, in its own words: its exit status and what it said last.
    assert!(
        output.stderr.contains("MCP server `gone` failed"),
        "{}",
        output.stderr
    );
    assert!(output.stderr.contains("status 1"), "{}", output.stderr);
    assert!(
        output.stderr.contains("exiting at start-up"),
        "{}",
        output.stderr
    );
    assert!(log_lines(&log).iter().any(|l| l.starts_with("start ")));
    let offered = crate::support::offered(&server.chat_bodies()[0]);
    assert!(
        !offered.iter().any(|n| n.starts_with("gone_")),
        "{offered:?}"
    );
}

#[test]
fn the_endpoint_api_key_reaches_no_mcp_server_and_no_command() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    configure(&ws, &json!({"test": test_server(&log, &[])}), "");
    let keys = [
        ("OFFCODE_API_KEY", "sk-offcode-key-1111"),
        ("OPENAI_API_KEY", "sk-openai-key-2222"),
        ("DASHSCOPE_API_KEY", "sk-dashscope-key-3333"),
    ];
    let server = mock();
    let mut calls = Vec::new();
    for (n, (name, _)) in keys.iter().enumerate() {
        calls.push((format!("m{n}"), "test_env", json!({"name": name})));
    }
    calls.push(("b1".to_owned(), "bash", json!({"command": "env"})));
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, name, arguments)| (id.as_str(), *name, arguments.clone()))
        .collect();
    server.push(sse(&chunks::tool_answer("", &calls)));
    server.push(sse(&chunks::text_answer("Done.")));
    let mut command = ws.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "mock-model", "look around"],
    );
    for (name, value) in keys {
        command.env(name, value);
    }
    let output = run(command);
    assert_eq!(output.code, 0, "{}", output.stderr);
    // The endpoint got the key it was meant to get.
    let requests = server.requests();
    let chat = requests
        .iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(
        chat.header("authorization"),
        Some("Bearer sk-offcode-key-1111")
    );
    let results = tool_results(&server.chat_bodies()[1]);
    assert_eq!(results.len(), 4, "{results:?}");
    assert_eq!(results[..3], ["<unset>", "<unset>", "<unset>"]);
    // The command ran and printed its environment: no key in it.
    assert!(results[3].contains("HOME="), "{}", results[3]);
    for (_, value) in keys {
        let everything = format!("{results:?}");
        assert!(!everything.contains(value), "{value} in {everything}");
    }
}

#[test]
fn a_key_in_offcodes_config_reaches_no_command_and_no_file_tool() {
    // The workspace is the home folder, as some people run it.
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "api_key": "sk-file-key-4444" }"#,
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[
            (
                "b1",
                "bash",
                json!({"command": "cat ~/.config/offcode/offcode.jsonc; grep -r sk- ~/.config"}),
            ),
            (
                "r1",
                "read",
                json!({"path": ".config/offcode/offcode.jsonc"}),
            ),
            ("g1", "grep", json!({"pattern": "sk-file"})),
        ],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let mut command = ws.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "mock-model", "look around"],
    );
    command.current_dir(&ws.home);
    let output = run(command);
    assert_eq!(output.code, 0, "{}", output.stderr);
    // offcode itself read it: the endpoint got the key.
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.header("authorization") == Some("Bearer sk-file-key-4444")),
        "{}",
        output.stderr
    );
    let results = tool_results(&server.chat_bodies()[1]);
    assert_eq!(results.len(), 3, "{results:?}");
    for result in &results {
        assert!(!result.contains("sk-file-key"), "{results:?}");
    }
    // The command ran, and found nothing there.
    assert!(results[0].contains("No such file"), "{results:?}");
}
