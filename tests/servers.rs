//! Real servers' shapes: no tool-call parser, thinking models with no
//! reasoning parser. The binary runs headless tasks against the mock set
//! up like such a server.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::demo::{self, Flavour, Think};
use crate::support::{MockServer, Workspace, run};

/// A task that needs three tool calls: read, write, run.
const TASK: &str = "read input.txt, write out.txt and run `echo ran`";
const DONE: &str = "Done: I read input.txt and wrote out.txt and ran `echo ran`.\n";

fn server(flavour: Flavour) -> MockServer {
    MockServer::start(Arc::new(demo::responder(flavour)))
}

fn task(workspace: &Workspace, server: &MockServer) -> crate::support::Output {
    std::fs::write(workspace.root.join("input.txt"), "alpha beta\n").unwrap();
    run(workspace.offcode(&server.base_url(), &["run", "--yes", TASK]))
}

fn system_prompt(body: &Value) -> &str {
    body["messages"][0]["content"].as_str().unwrap()
}

/// Every message text of every request, for searching.
fn sent_text(server: &MockServer) -> String {
    server
        .chat_bodies()
        .iter()
        .flat_map(|b| b["messages"].as_array().unwrap().clone())
        .map(|m| m.to_string())
        .collect()
}

#[test]
fn without_a_tool_parser_the_task_runs_on_text_calls_and_the_next_start_knows() {
    let server = server(Flavour {
        tool_parser: false,
        think: Think::None,
    });
    let workspace = Workspace::new();
    let output = task(&workspace, &server);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, DONE);
    assert_eq!(
        std::fs::read_to_string(workspace.root.join("out.txt")).unwrap(),
        "Notes\n\nFirst line of what I read: alpha beta\n"
    );
    // The user learns what happened and how to fix the server.
    assert!(
        output
            .stderr
            .contains("--enable-auto-tool-choice --tool-call-parser"),
        "{}",
        output.stderr
    );
    for tool in ["read", "write", "bash"] {
        assert!(
            output.stderr.contains(&format!("→ {tool} (from text)")),
            "{tool}: {}",
            output.stderr
        );
    }
    // One refused request with tools; after it, tools in the prompt only.
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 5, "refused + 3 calls + answer");
    assert!(bodies[0]["tools"].is_array());
    for body in &bodies[1..] {
        assert!(body.get("tools").is_none(), "{body}");
        assert!(system_prompt(body).contains("<tool_call>"));
    }
    // Results go back as text the template can take.
    let last = bodies.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(last.iter().all(|m| m["role"] != "tool"));
    assert!(last.iter().any(|m| {
        m["content"]
            .as_str()
            .unwrap()
            .starts_with("<tool_response>")
    }));

    // The next start does not pay for the refused request again.
    let output = run(workspace.offcode(&server.base_url(), &["run", "--yes", "hello"]));
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 6);
    assert!(bodies[5].get("tools").is_none());
    assert!(
        output.stderr.contains("did not parse tool calls last time"),
        "{}",
        output.stderr
    );
}

#[test]
fn a_thinking_model_with_inline_tags_finishes_and_its_reasoning_stays_home() {
    let server = server(Flavour {
        tool_parser: true,
        think: Think::Tags,
    });
    let workspace = Workspace::new();
    let output = task(&workspace, &server);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, DONE);
    assert!(!output.stderr.contains("<think>"), "{}", output.stderr);
    // Reasoning is kept in the session, never sent back.
    let sent = sent_text(&server);
    assert!(!sent.contains("step by step"), "{sent}");
    assert!(!sent.contains("think>"), "{sent}");
    let session = std::fs::read_to_string(&workspace.session_files()[0]).unwrap();
    assert!(session.contains("I will go step by step."));
}

#[test]
fn a_thinking_model_on_a_bare_server_needs_both_fallbacks() {
    for think in [Think::Tags, Think::Open] {
        let server = server(Flavour {
            tool_parser: false,
            think,
        });
        let workspace = Workspace::new();
        let output = task(&workspace, &server);
        assert_eq!(output.code, 0, "{think:?}: {}", output.stderr);
        assert_eq!(output.stdout, DONE, "{think:?}");
        let sent = sent_text(&server);
        assert!(!sent.contains("step by step"), "{think:?}: {sent}");
        assert!(!sent.contains("think>"), "{think:?}: {sent}");
        assert!(workspace.root.join("out.txt").exists());
    }
}

#[test]
fn a_model_whose_template_opens_the_think_block_is_remembered() {
    let server = server(Flavour {
        tool_parser: true,
        think: Think::Open,
    });
    let workspace = Workspace::new();
    let output = task(&workspace, &server);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, DONE);
    let cache = workspace.home.join(".cache/offcode/servers.json");
    let cache: Value = serde_json::from_str(&std::fs::read_to_string(cache).unwrap()).unwrap();
    let entry = &cache["servers"][format!("{} mock-model", server.base_url())];
    assert_eq!(entry["think_open"], true, "{cache}");
}
