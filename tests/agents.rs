//! Agent profiles, as a user meets them: `--agent plan` changes nothing,
//! an agent of one's own from a Markdown file brings its model, sampling,
//! prompt and rules, a repository's agent cannot loosen anything, and the
//! session remembers the agent. Each test checks the effect on disk and
//! what the server was sent.

use serde_json::{Value, json};

use crate::support::{MockServer, Workspace, chunks, mock, run, sse, system_prompt, tool_results};

/// A mock whose model makes `calls` and then answers `Done.`.
fn calling(calls: &[(&str, &str, Value)]) -> MockServer {
    let server = mock();
    server.push(sse(&chunks::tool_answer("", calls)));
    server.push(sse(&chunks::text_answer("Done.")));
    server
}

fn write_agent(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
}

#[test]
fn the_plan_agent_changes_no_file_and_runs_no_command_that_writes() {
    let server = calling(&[
        (
            "c1",
            "write",
            json!({"path": "notes.txt", "content": "planned"}),
        ),
        ("c2", "bash", json!({"command": "touch made-by-plan"})),
        ("c3", "bash", json!({"command": "ls > listing.txt"})),
        ("c4", "read", json!({"path": "hello.txt"})),
    ]);
    let ws = Workspace::new();
    std::fs::write(ws.root.join("hello.txt"), "hello\n").unwrap();
    let output = ws.run_task(&server.base_url(), &["--agent", "plan", "--yes"], "plan it");
    assert_eq!(output.code, 0, "{}", output.stderr);
    for made in ["notes.txt", "made-by-plan", "listing.txt"] {
        assert!(!ws.root.join(made).exists(), "{made} was made");
    }
    let bodies = server.chat_bodies();
    let tools = crate::support::offered(&bodies[0]);
    assert!(tools.contains(&"read".to_owned()), "{tools:?}");
    for hidden in ["write", "edit", "patch"] {
        assert!(!tools.contains(&hidden.to_owned()), "{hidden}: {tools:?}");
    }
    assert!(system_prompt(&bodies[0]).contains("You are in plan mode"));
    let results = tool_results(&bodies[1]);
    assert!(
        results[0].contains("not one of the `plan` agent's tools"),
        "{results:?}"
    );
    assert!(
        results[1].contains("denied by the rule agent `plan` (built in)"),
        "{results:?}"
    );
    assert!(results[2].contains("denied"), "{results:?}");
    assert!(
        results[3].contains("hello"),
        "reads still work: {results:?}"
    );
    assert!(
        output.stderr.contains("offcode · plan · mock-model"),
        "{}",
        output.stderr
    );
}

#[test]
fn the_plan_agent_runs_only_what_the_gate_judges_to_read() {
    let ws = Workspace::new();
    // A repository that came with the files, whose settings run a program
    // on `git status`; and a script of the project's.
    ws.git(&["init", "-q", "vendor/x"]);
    ws.git(&[
        "-C",
        "vendor/x",
        "config",
        "core.fsmonitor",
        "touch ran-fsmonitor",
    ]);
    std::fs::write(ws.root.join("mark.py"), "open('ran-script', 'w')\n").unwrap();
    std::fs::write(ws.root.join("hello.txt"), "hello\n").unwrap();
    let server = calling(&[
        ("c1", "bash", json!({"command": "git -C vendor/x status"})),
        ("c2", "bash", json!({"command": "python3 mark.py"})),
        ("c3", "bash", json!({"command": "cat hello.txt | wc -l"})),
        (
            "c4",
            "bash",
            json!({"command": "git -C vendor/x log --oneline -1 || true"}),
        ),
    ]);
    let output = ws.run_task(&server.base_url(), &["--agent", "plan", "--yes"], "look");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let results = tool_results(&server.chat_bodies()[1]);
    assert!(
        !ws.root.join("vendor/x/ran-fsmonitor").exists(),
        "{results:?}"
    );
    assert!(!ws.root.join("ran-script").exists(), "{results:?}");
    assert!(results[0].contains("Permission denied"), "{results:?}");
    assert!(results[1].contains("denied"), "{results:?}");
    assert!(
        results[2].starts_with("1\n"),
        "a plain read runs: {results:?}"
    );
    assert!(results[3].contains("Permission denied"), "{results:?}");
}

#[test]
fn an_agent_from_a_markdown_file_brings_its_model_sampling_prompt_and_rules() {
    let server = calling(&[
        ("c1", "bash", json!({"command": "touch denied-by-agent"})),
        ("c2", "bash", json!({"command": "git status"})),
    ]);
    let ws = Workspace::new();
    write_agent(
        &ws.home.join(".config/offcode/agents"),
        "reviewer",
        "---\ndescription: Reviews the working tree\nmode: primary\nmodel: reviewer-model\ntemperature: 0.1\ntools:\n  write: false\npermission:\n  bash:\n    \"*\": deny\n    \"git status\": allow\n---\nYou review changes and never make them.\n",
    );
    let output = ws.run_task(&server.base_url(), &["--agent", "reviewer"], "review");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(!ws.root.join("denied-by-agent").exists());
    let bodies = server.chat_bodies();
    assert_eq!(bodies[0]["model"], "reviewer-model");
    assert_eq!(bodies[0]["temperature"], 0.1);
    assert!(system_prompt(&bodies[0]).ends_with("You review changes and never make them."));
    assert!(!crate::support::offered(&bodies[0]).contains(&"write".to_owned()));
    let results = tool_results(&bodies[1]);
    assert!(results[0].contains("denied"), "{results:?}");
    // Allowed by the agent's rule without --yes (the config would ask).
    assert!(!results[1].contains("denied"), "{results:?}");
    assert!(!results[1].contains("needs approval"), "{results:?}");
}

#[test]
fn an_agent_in_the_repository_cannot_loosen_the_rules() {
    let ws = Workspace::new();
    // A repository's own agent, and its change to `plan`, both allowing
    // every command.
    let dir = ws.root.join(".offcode/agents");
    write_agent(
        &dir,
        "yolo",
        "---\nmode: primary\npermission:\n  bash: allow\n  edit: allow\n---\nRun anything.\n",
    );
    write_agent(
        &dir,
        "plan",
        "---\npermission:\n  bash: allow\n  edit: allow\n---\n",
    );
    for agent in ["yolo", "plan"] {
        let server = calling(&[("c1", "bash", json!({"command": "touch by-repo"}))]);
        // No --yes: an ask is refused, only an allow would run it.
        let output = run(ws.offcode(
            &server.base_url(),
            &["run", "--agent", agent, "--model", "mock-model", "go"],
        ));
        // Refused, so `yolo`'s run did not do its work (exit 4); `plan`
        // changes nothing by design, so its no is not a refused task.
        let refused = if agent == "plan" { 0 } else { 4 };
        assert_eq!(output.code, refused, "{agent}: {}", output.stderr);
        assert!(!ws.root.join("by-repo").exists(), "{agent} ran it");
        let results = tool_results(&server.chat_bodies()[1]);
        assert!(
            results[0].contains("needs approval") || results[0].contains("denied"),
            "{agent}: {results:?}"
        );
    }
}

#[test]
fn the_managed_policy_still_denies_what_an_agent_allows() {
    let ws = Workspace::new();
    write_agent(
        &ws.home.join(".config/offcode/agents"),
        "free",
        "---\nmode: primary\npermission:\n  bash: allow\n  edit: allow\n---\n",
    );
    std::fs::write(
        ws.managed_policy(),
        r#"{ "permission": { "bash": { "touch *": "deny" } } }"#,
    )
    .unwrap();
    let server = calling(&[
        ("c1", "bash", json!({"command": "touch managed-said-no"})),
        ("c2", "bash", json!({"command": "mkdir agent-said-yes"})),
    ]);
    let output = ws.run_task(&server.base_url(), &["--agent", "free"], "go");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(!ws.root.join("managed-said-no").exists());
    // What the managed file does not cover, the agent's rule allows.
    assert!(ws.root.join("agent-said-yes").is_dir(), "{}", output.stderr);
}

#[test]
fn the_session_remembers_its_agent() {
    let ws = Workspace::new();
    let server = mock();
    server.push(sse(&chunks::text_answer("First.")));
    server.push(sse(&chunks::text_answer("Second.")));
    let first = ws.run_task(&server.base_url(), &["--agent", "plan"], "one");
    assert_eq!(first.code, 0, "{}", first.stderr);
    let session = std::fs::read_to_string(ws.session_files().pop().unwrap()).unwrap();
    assert!(
        session.contains(r#""type":"agent_change","agent":"plan""#),
        "{session}"
    );
    let second = run(ws.offcode(&server.base_url(), &["run", "--continue", "--json", "two"]));
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stdout.contains(r#""agent":"plan""#),
        "{}",
        second.stdout
    );
    let bodies = server.chat_bodies();
    assert!(!crate::support::offered(&bodies[1]).contains(&"write".to_owned()));
    assert!(system_prompt(&bodies[1]).contains("You are in plan mode"));
}

#[test]
fn a_bad_agent_is_named_with_where_and_why_and_nothing_runs() {
    let ws = Workspace::new();
    write_agent(
        &ws.root.join(".offcode/agents"),
        "broken",
        "---\nmode: primary\ntemperatur: 0.3\n---\nHi\n",
    );
    let server = mock();
    let output = ws.run_task(&server.base_url(), &[], "hello");
    assert_eq!(output.code, 2, "{}", output.stderr);
    assert!(
        output.stderr.contains(
            "Invalid agent `broken` in `.offcode/agents/broken.md` at line 3, column 1: unknown field `temperatur`"
        ),
        "{}",
        output.stderr
    );
    std::fs::remove_file(ws.root.join(".offcode/agents/broken.md")).unwrap();
    for (agent, why) in [
        (
            "nobody",
            "there is no agent `nobody`; the agents to switch to are: build, plan",
        ),
        ("explore", "`explore` is a subagent"),
    ] {
        let output = run(ws.offcode(
            &server.base_url(),
            &["run", "--agent", agent, "--model", "mock-model", "hello"],
        ));
        assert_eq!(output.code, 2, "{}", output.stderr);
        assert!(output.stderr.contains(why), "{}", output.stderr);
    }
    assert!(server.chat_bodies().is_empty(), "a request went out");
    assert!(ws.session_files().is_empty(), "a session was started");
}

#[test]
fn an_agent_in_the_config_file_works_and_a_bad_one_is_named() {
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "agent": { "terse": { "mode": "primary", "prompt": "Answer in one line.", "top_p": 0.5 } } }"#,
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::text_answer("One line.")));
    let output = ws.run_task(&server.base_url(), &["--agent", "terse"], "hi");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let body = &server.chat_bodies()[0];
    assert!(system_prompt(body).ends_with("Answer in one line."));
    assert_eq!(body["top_p"], 0.5);
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "agent": { "terse": { "top_p": 3 } } }"#,
    )
    .unwrap();
    let output = ws.run_task(&server.base_url(), &[], "hi");
    assert_eq!(output.code, 2, "{}", output.stderr);
    assert!(
        output.stderr.contains("Invalid agent `terse` in `")
            && output.stderr.contains(
                "offcode.jsonc` at line 1, column 14: `top_p` must be above 0 and at most 1, not 3"
            ),
        "{}",
        output.stderr
    );
    assert_eq!(server.chat_bodies().len(), 1, "a request went out");
}

#[test]
fn the_hidden_compaction_agent_writes_summaries_with_its_own_model() {
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "context_limit": 4096, "agent": { "compaction": { "model": "summary-model", "temperature": 0.2 } } }"#,
    )
    .unwrap();
    let server = mock();
    for answer in ["One.", "Two.", "Three."] {
        server.push(sse(&chunks::text_answer(answer)));
    }
    server.push(sse(&chunks::text_answer("Objective: count.")));
    let output = crate::support::run_with_stdin(
        ws.offcode(&server.base_url(), &["--model", "mock-model"]),
        "one\ntwo\nthree\n/agent\n/compact\n",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 4, "{}\n{}", output.stderr, output.stdout);
    assert_eq!(bodies[0]["model"], "mock-model");
    let summary = &bodies[3];
    assert_eq!(summary["model"], "summary-model");
    assert_eq!(summary["temperature"], 0.2);
    assert!(system_prompt(summary).starts_with("You summarise a coding session"));
    // Hidden: not in the list of agents.
    let listed = format!("{}{}", output.stdout, output.stderr);
    assert!(listed.contains("plan (primary, built in)"), "{listed}");
    assert!(!listed.contains("compaction ("), "{listed}");
}
