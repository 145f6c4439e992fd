//! Subagents through the `task` tool, as a user meets them: the child
//! works in a session of its own with only its prompt, its work is seen
//! as it happens (tagged in `--json`), its questions reach the user with
//! its name, and several run at once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::server::Request;
use crate::support::{MockServer, Reply, Workspace, chunks, run, sse, tool_results};

/// Whose request this is: the system prompt tells a subagent's.
fn subagent_of(body: &Value) -> Option<&'static str> {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    if system.contains("subagent that explores code") {
        Some("explore")
    } else if system.contains("subagent working on one part") {
        Some("general")
    } else {
        None
    }
}

/// The last user message of a request (the task, for a subagent).
fn task_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// The parent starts `explore` to find the port; the child reads
/// config.json and answers.
pub fn port_finder(request: &Request) -> Reply {
    if !request.path.ends_with("/chat/completions") {
        return Reply::json(404, &json!({}));
    }
    let body = request.json();
    let results = tool_results(&body);
    match (subagent_of(&body), results.len()) {
        (Some("explore"), 0) => sse(&chunks::tool_answer(
            "",
            &[("r1", "read", json!({"path": "config.json"}))],
        )),
        (Some(_), _) => sse(&chunks::text_answer(
            "The port is 7341, in config.json line 1.",
        )),
        (None, 0) => sse(&chunks::tool_answer(
            "",
            &[(
                "t1",
                "task",
                json!({"agent": "explore", "prompt": "Find the port in this project and say where it is set.", "description": "find the port"}),
            )],
        )),
        (None, _) => sse(&chunks::text_answer("It listens on 7341.")),
    }
}

#[test]
fn a_task_runs_explore_in_a_child_session_seen_live_and_returns_its_answer() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("config.json"), "{\"port\": 7341}\n").unwrap();
    let server = MockServer::start(Arc::new(port_finder));
    let output = ws.run_task(
        &server.base_url(),
        &["--json", "--yes"],
        "which port does it use?",
    );
    assert_eq!(output.code, 0, "{}\n{}", output.stderr, output.stdout);
    // Neither a headless run nor a subagent is named by the title agent.
    assert!(server.title_bodies().is_empty());
    let events: Vec<Value> = output
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The child's work arrives as it happens, tagged with its session.
    let child_read = events
        .iter()
        .find(|e| e["type"] == "subagent" && e["event"]["type"] == "tool_call_begin")
        .expect("a subagent event");
    assert_eq!(child_read["agent"], "explore");
    assert_eq!(child_read["call_id"], "t1");
    assert_eq!(child_read["event"]["name"], "read");
    let child_id = child_read["child_session_id"].as_str().unwrap().to_owned();
    let parent_id = events[0]["session_id"].as_str().unwrap().to_owned();
    assert_ne!(child_id, parent_id);
    // Its answer is the task's result.
    let bodies = server.chat_bodies();
    let parent_last = bodies.iter().rfind(|b| subagent_of(b).is_none()).unwrap();
    let result = &tool_results(parent_last)[0];
    assert!(
        result.starts_with("The port is 7341, in config.json line 1."),
        "{result}"
    );
    assert!(
        result.contains(&format!(
            "subagent `explore` (find the port), session {child_id}"
        )),
        "{result}"
    );
    // The child saw its prompt and the task, nothing of the parent's.
    let child_first = bodies.iter().find(|b| subagent_of(b).is_some()).unwrap();
    assert!(task_of(child_first).contains("Find the port in this project"));
    let everything = child_first.to_string();
    assert!(
        !everything.contains("which port does it use?"),
        "{everything}"
    );
    let offered: Vec<&str> = child_first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        !offered.contains(&"task") && !offered.contains(&"write"),
        "{offered:?}"
    );
    // Its session is on disk, hanging under the parent's call, and is
    // not what --continue resumes.
    let child_file = ws
        .session_files()
        .into_iter()
        .find(|p| p.to_string_lossy().contains(&child_id))
        .expect("the child's session file");
    let first_line = std::fs::read_to_string(&child_file).unwrap();
    assert!(
        first_line.contains(&format!(
            r#""parent":{{"session_id":"{parent_id}","call_id":"t1"}}"#
        )),
        "{first_line}"
    );
    assert!(
        first_line.contains(r#""type":"agent_change","agent":"explore""#),
        "{first_line}"
    );
    let listed = run(ws.offcode(&server.base_url(), &["sessions", "--json"]));
    assert!(!listed.stdout.contains(&child_id), "{}", listed.stdout);
    assert!(listed.stdout.contains(&parent_id), "{}", listed.stdout);
}

#[test]
fn a_subagents_question_reaches_the_user_with_its_name_and_the_answer_goes_back() {
    for yes in [true, false] {
        let ws = Workspace::new();
        // Starting the subagent is allowed; its command asks.
        std::fs::write(
            ws.home.join(".config/offcode/offcode.jsonc"),
            r#"{ "permission": { "task": "allow" } }"#,
        )
        .unwrap();
        let server = MockServer::start(Arc::new(|request: &Request| {
            if !request.path.ends_with("/chat/completions") {
                return Reply::json(404, &json!({}));
            }
            let body = request.json();
            let results = tool_results(&body);
            match (subagent_of(&body), results.len()) {
                (Some(_), 0) => sse(&chunks::tool_answer(
                    "",
                    &[("b1", "bash", json!({"command": "touch made-by-child"}))],
                )),
                (Some(_), _) => sse(&chunks::text_answer("Tried it.")),
                (None, 0) => sse(&chunks::tool_answer(
                    "",
                    &[(
                        "t1",
                        "task",
                        json!({"agent": "general", "prompt": "create the marker"}),
                    )],
                )),
                (None, _) => sse(&chunks::text_answer("Done.")),
            }
        }));
        let mut args = vec!["run", "--json", "--model", "mock-model", "make a marker"];
        if yes {
            args.insert(1, "--yes");
        }
        let output = run(ws.offcode(&server.base_url(), &args));
        assert_eq!(output.code, 0, "{}\n{}", output.stderr, output.stdout);
        let question = output
            .stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["type"] == "approval_request" && e["tool"] == "bash")
            .expect("the child's question");
        assert_eq!(question["agent"], "general");
        assert!(
            question["call_id"].as_str().unwrap().ends_with("/b1"),
            "{question}"
        );
        assert_eq!(ws.root.join("made-by-child").exists(), yes, "--yes {yes}");
    }
}

/// A mock whose parent starts two `explore` tasks in one message, and
/// whose children each answer `together` once the other has asked too
/// (within `patience`), else `alone`.
fn two_tasks(patience: Duration) -> MockServer {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    MockServer::start(Arc::new(move |request: &Request| {
        if !request.path.ends_with("/chat/completions") {
            return Reply::json(404, &json!({}));
        }
        let body = request.json();
        if subagent_of(&body).is_some() {
            let task = task_of(&body);
            seen.lock().unwrap().push(task.clone());
            let other = if task.contains("alpha") {
                "beta"
            } else {
                "alpha"
            };
            let together = crate::support::wait_until(patience, || {
                seen.lock().unwrap().iter().any(|t| t.contains(other))
            });
            let word = if together { "together" } else { "alone" };
            return sse(&chunks::text_answer(&format!("{task}: {word}")));
        }
        if tool_results(&body).is_empty() {
            let task = |id: &str, what: &str| {
                (
                    id.to_owned(),
                    json!({"agent": "explore", "prompt": format!("look at {what}")}),
                )
            };
            let calls = [task("ta", "alpha"), task("tb", "beta")];
            let calls: Vec<(&str, &str, Value)> = calls
                .iter()
                .map(|(id, arguments)| (id.as_str(), "task", arguments.clone()))
                .collect();
            return sse(&chunks::tool_answer("", &calls));
        }
        sse(&chunks::text_answer("Both done."))
    }))
}

#[test]
fn two_tasks_in_one_step_run_at_the_same_time_within_the_configured_bound() {
    // At once (the default bound is 3); then one at a time (bound 1), when
    // the first gives up waiting for the second.
    for (bound, patience, word) in [(None, 10, "together"), (Some(1), 2, "alone")] {
        let ws = Workspace::new();
        if let Some(bound) = bound {
            std::fs::write(
                ws.home.join(".config/offcode/offcode.jsonc"),
                format!("{{ \"subagents\": {{ \"concurrency\": {bound} }} }}"),
            )
            .unwrap();
        }
        let server = two_tasks(Duration::from_secs(patience));
        let output = ws.run_task(&server.base_url(), &["--yes"], "look at both");
        assert_eq!(output.code, 0, "{}", output.stderr);
        let bodies = server.chat_bodies();
        let last = bodies.iter().rfind(|b| subagent_of(b).is_none()).unwrap();
        let results = tool_results(last);
        assert_eq!(results.len(), 2);
        // In the order of the calls, each from its own child.
        assert!(
            results[0].contains(&format!("look at alpha: {word}")),
            "{results:?}"
        );
        assert!(results[1].contains("look at beta: "), "{results:?}");
    }
}

#[test]
fn plan_cannot_start_a_subagent_and_a_subagent_that_does_not_exist_is_named() {
    let ws = Workspace::new();
    let server = crate::support::mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[
            ("t1", "task", json!({"agent": "nobody", "prompt": "x"})),
            (
                "t2",
                "task",
                json!({"agent": "general", "prompt": "change things"}),
            ),
        ],
    )));
    server.push(sse(&chunks::text_answer("Planned.")));
    let output = ws.run_task(&server.base_url(), &["--agent", "plan", "--yes"], "plan");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 2, "no subagent asked the model");
    let results = tool_results(&bodies[1]);
    assert!(
        results[0].contains("There is no subagent `nobody`; the subagents are: general, explore"),
        "{results:?}"
    );
    assert!(
        results[1].contains("denied by the rule agent `plan` (built in) permission.task"),
        "{results:?}"
    );
    assert_eq!(ws.session_files().len(), 1, "a child session was made");
}
