//! A call's result is data: how a command ended (its exit code, a signal,
//! its time run out) and why a call failed travel as fields, read by the
//! front ends, never parsed back out of the text the model gets.

use serde_json::{Value, json};

use crate::support::{Workspace, chunks, mock, run, sse};

/// The `tool_call_end` events of a headless `--json --yes` run of `calls`.
fn ends(calls: &[(&str, Value)]) -> Vec<Value> {
    let ws = Workspace::new();
    let server = mock();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, arguments)| (*id, "bash", arguments.clone()))
        .collect();
    server.push(sse(&chunks::tool_answer("", &calls)));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = run(ws.offcode(
        &server.base_url(),
        &["run", "--json", "--yes", "--model", "mock-model", "go"],
    ));
    output
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "tool_call_end")
        .collect()
}

#[test]
fn how_a_command_ended_is_in_its_result_as_fields() {
    let ends = ends(&[
        ("worked", json!({"command": "echo hi"})),
        ("exit", json!({"command": "echo '[exit code: 0]'; exit 3"})),
        ("slow", json!({"command": "sleep 30", "timeout": 1})),
    ]);
    assert_eq!(ends.len(), 3, "{ends:?}");
    let end = |id: &str| ends.iter().find(|e| e["call_id"] == id).unwrap();
    let worked = end("worked");
    assert_eq!(worked["outcome"], "ok");
    assert_eq!(worked["display"]["kind"], "command");
    assert_eq!(worked["display"]["output"], "hi\n");
    assert_eq!(
        worked["display"]["end"],
        json!({"how": "exited", "code": 0})
    );
    // What the model gets is made from the same fields.
    assert_eq!(worked["output"], "hi\n\n[exit code: 0]");
    // A command printing offcode's own words does not change its end.
    let exit = end("exit");
    assert_eq!(exit["outcome"], "failed");
    assert_eq!(exit["display"]["end"], json!({"how": "exited", "code": 3}));
    assert_eq!(exit["summary"], "exit code: 3, 1 line of output");
    assert!(exit.get("reason").is_none(), "{exit}");
    let slow = end("slow");
    assert_eq!(slow["outcome"], "failed");
    assert_eq!(
        slow["display"]["end"],
        json!({"how": "timed_out", "after_secs": 1})
    );
}

#[test]
fn a_refusal_says_why_apart_from_the_words_for_the_model() {
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "permission": { "bash": { "*": "deny" } } }"#,
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("c1", "bash", json!({"command": "echo hi"}))],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = run(ws.offcode(
        &server.base_url(),
        &["run", "--json", "--model", "mock-model", "go"],
    ));
    let end: Value = output
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "tool_call_end")
        .unwrap_or_else(|| panic!("{}", output.stdout));
    assert_eq!(end["outcome"], "refused");
    let reason = end["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Permission denied: `bash` was not run"),
        "{reason}"
    );
    assert!(!reason.contains("Do not try"), "{reason}");
    assert!(
        end["output"].as_str().unwrap().contains("Do not try"),
        "{end}"
    );
    assert!(end.get("display").is_none(), "{end}");
}
