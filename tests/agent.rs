//! The agent loop through its ops/events interface, against the mock.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use offcode::agent::{self, AgentHandle, AgentSetup};
use offcode::client::Client;
use offcode::protocol::{ApprovalDecision, Event, EventMsg, Op, TurnStatus};
use offcode::session::{Message, Store};
use offcode::tools::Registry;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{MockServer, Reply, answer_to, chunks, fast_config, mock, sse};

struct Harness {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    store: Store,
    handle: AgentHandle,
}

fn start(server: &MockServer, max_steps: u32) -> Harness {
    start_with(server, |config| config.max_steps = max_steps)
}

fn start_with(server: &MockServer, adjust: impl FnOnce(&mut offcode::config::Config)) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let store = Store::new(dir.path().join("sessions"));
    let mut config = fast_config(&server.base_url());
    adjust(&mut config);
    let session = store.create(&root, "mock-model", &config.base_url).unwrap();
    let handle = agent::spawn(AgentSetup {
        client: Arc::new(Client::new(&config).unwrap()),
        session,
        tools: Registry::default(),
        config,
        shell: crate::support::confined_shell(&root),
        sandbox: Arc::new(offcode::sandbox::Sandbox::new(&root).unwrap()),
        policy: built_in_policy(&root),
        approver: offcode::protocol::Decider::User,
        context: offcode::context::Assembly::default(),
        servers: offcode::servers::ServerCache::default(),
        agents: offcode::agents::Agents::default(),
        agent: None,
        depth: 0,
        mcp: None,
        checkpoints: None,
    });
    Harness {
        _dir: dir,
        root,
        store,
        handle,
    }
}

impl Harness {
    /// Events until the turn completes, answering approvals with `answer`.
    async fn turn(&mut self, text: &str, answer: Option<ApprovalDecision>) -> Vec<Event> {
        self.handle.ops.submit(Op::UserTurn {
            text: text.to_owned(),
        });
        self.collect(answer).await
    }

    /// The next event, within 10 s.
    async fn next(&mut self) -> Option<Event> {
        tokio::time::timeout(Duration::from_secs(10), self.handle.events.recv())
            .await
            .expect("an event within 10 s")
    }

    /// Events up to and with the first that `done` says ends the wait.
    async fn until(&mut self, done: impl Fn(&EventMsg) -> bool) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            let last = done(&event.msg);
            events.push(event);
            if last {
                return events;
            }
        }
        panic!("the core stopped first: {events:?}");
    }

    async fn collect(&mut self, answer: Option<ApprovalDecision>) -> Vec<Event> {
        let mut events = Vec::new();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), self.handle.events.recv())
                .await
                .expect("an event within 10 s")
                .expect("the core is running");
            if let (EventMsg::ApprovalRequest(request), Some(decision)) = (&event.msg, answer) {
                self.handle.ops.submit(Op::Approve {
                    call_id: request.call_id.clone(),
                    decision,
                    reason: None,
                });
            }
            let done = matches!(event.msg, EventMsg::TurnComplete(_));
            events.push(event);
            if done {
                return events;
            }
        }
    }

    fn session_messages(&self) -> Vec<Message> {
        let id = std::fs::read_dir(self.store.dir())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let id = id.file_stem().unwrap().to_string_lossy().into_owned();
        self.store.load(&id).unwrap().1
    }
}

fn status(events: &[Event]) -> TurnStatus {
    match &events.last().unwrap().msg {
        EventMsg::TurnComplete(complete) => complete.status,
        other => panic!("last event is {other:?}"),
    }
}

fn approval_requests(events: &[Event]) -> Vec<offcode::protocol::ApprovalRequestEvent> {
    events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ApprovalRequest(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// The built-in policy for `root`, with no managed file.
fn built_in_policy(root: &Path) -> Arc<offcode::policy::PolicySource> {
    Arc::new(offcode::policy::PolicySource::fixed(
        offcode::policy::Policy::load(&[], &[], root, None)
            .unwrap()
            .with_shell(offcode::confine::Status::of(
                root,
                &offcode::config::SandboxConfig::default(),
                None,
            )),
    ))
}

fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn tool_result_goes_back_with_its_call_id() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "Reading.",
        &[("call_abc", "read", json!({"path": "notes.txt"}))],
    )));
    server.push(sse(&chunks::text_answer("The file says hello.")));
    let mut harness = start(&server, 10);
    std::fs::write(harness.root.join("notes.txt"), "hello\n").unwrap();
    let events = harness.turn("what is in notes.txt?", None).await;
    assert_eq!(status(&events), TurnStatus::Done);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        tool_results(&bodies[1]),
        vec![("call_abc".to_owned(), "     1\thello\n".to_owned())]
    );
    // Each request's messages start with the previous request's messages.
    let first = bodies[0]["messages"].as_array().unwrap();
    assert_eq!(
        &bodies[1]["messages"].as_array().unwrap()[..first.len()],
        &first[..]
    );
    assert_eq!(bodies[0]["tools"].as_array().unwrap().len(), 11);
    let names: Vec<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(&e.msg).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for expected in [
        "turn_started",
        "assistant_delta",
        "tool_call_begin",
        "tool_call_end",
        "token_usage",
        "turn_complete",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "missing {expected} in {names:?}"
        );
    }
}

#[tokio::test]
async fn unknown_tool_and_bad_arguments_go_back_as_tool_errors() {
    let server = mock();
    let mut events = vec![chunks::role()];
    events.extend(chunks::tool_call(0, "c1", "delete_everything", &json!({})));
    events.push(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c2\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\": \"}}]}}]}\n\n".to_owned(),
    );
    events.extend([chunks::finish("tool_calls"), chunks::done()]);
    server.push(sse(&events));
    server.push(sse(&chunks::text_answer("Sorry.")));
    let mut harness = start(&server, 10);
    let events = harness.turn("go", None).await;
    assert_eq!(status(&events), TurnStatus::Done);
    let results = tool_results(&server.chat_bodies()[1]);
    assert_eq!(results[0].0, "c1");
    assert!(
        results[0]
            .1
            .starts_with("Error: There is no `delete_everything` tool, so nothing was run."),
        "{}",
        results[0].1
    );
    assert_eq!(results[1].0, "c2");
    assert!(
        results[1]
            .1
            .starts_with("Error: The arguments for `read` are not valid JSON"),
        "{}",
        results[1].1
    );
}

#[tokio::test]
async fn step_limit_ends_the_turn_with_an_error() {
    // A different file each step, so the calls are no doom loop.
    let step = std::sync::atomic::AtomicUsize::new(0);
    let server = MockServer::start(Arc::new(move |_: &crate::support::server::Request| {
        let n = step.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        sse(&chunks::tool_answer(
            "",
            &[("c", "read", json!({"path": format!("missing{n}.txt")}))],
        ))
    }));
    let mut harness = start(&server, 3);
    let events = harness.turn("loop forever", None).await;
    assert_eq!(status(&events), TurnStatus::Failed);
    assert_eq!(server.chat_bodies().len(), 3);
    assert!(events.iter().any(
        |e| matches!(&e.msg, EventMsg::Error { message, .. } if message.contains("max_steps"))
    ));
}

#[tokio::test]
async fn the_same_call_three_times_in_a_row_asks_as_a_doom_loop() {
    let server = MockServer::start(Arc::new(|_: &crate::support::server::Request| {
        sse(&chunks::tool_answer(
            "",
            &[("c", "read", json!({"path": "missing.txt"}))],
        ))
    }));
    let mut harness = start(&server, 4);
    let events = harness.turn("loop", Some(ApprovalDecision::Deny)).await;
    let asks = approval_requests(&events);
    // Reads are allowed; the third and fourth identical reads ask.
    assert_eq!(asks.len(), 2, "{asks:?}");
    assert!(
        asks[0].rule.contains("permission.doom_loop") && asks[0].rule.contains("3 times"),
        "{}",
        asks[0].rule
    );
    assert!(!asks[0].dangerous);
    let results = tool_results(&server.chat_bodies()[3]);
    assert!(
        results.last().unwrap().1.contains("Permission denied"),
        "{results:?}"
    );
}

#[tokio::test]
async fn denied_write_is_reported_to_model_and_nothing_is_written() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w1", "write", json!({"path": "out.txt", "content": "x"}))],
    )));
    server.push(sse(&chunks::text_answer("Understood.")));
    let mut harness = start(&server, 10);
    let events = harness.turn("write it", Some(ApprovalDecision::Deny)).await;
    // The person said no and nothing else was done: refused, not done.
    assert_eq!(status(&events), TurnStatus::Refused);
    assert!(!harness.root.join("out.txt").exists());
    let results = tool_results(&server.chat_bodies()[1]);
    assert!(
        results[0]
            .1
            .starts_with("Error: Permission denied: `write` was not run"),
        "{}",
        results[0].1
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.msg, EventMsg::ApprovalRequest(r) if r.tool == "write"))
    );
}

#[tokio::test]
async fn approved_write_runs_and_session_approval_is_remembered() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w1", "write", json!({"path": "a.txt", "content": "1"}))],
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w2", "write", json!({"path": "b.txt", "content": "2"}))],
    )));
    server.push(sse(&chunks::text_answer("Both written.")));
    let mut harness = start(&server, 10);
    let events = harness
        .turn("write two files", Some(ApprovalDecision::AllowSession))
        .await;
    assert_eq!(status(&events), TurnStatus::Done);
    assert_eq!(
        std::fs::read_to_string(harness.root.join("a.txt")).unwrap(),
        "1"
    );
    assert_eq!(
        std::fs::read_to_string(harness.root.join("b.txt")).unwrap(),
        "2"
    );
    let asked = events
        .iter()
        .filter(|e| matches!(e.msg, EventMsg::ApprovalRequest(_)))
        .count();
    assert_eq!(asked, 1, "the second write was allowed for the session");
}

#[tokio::test]
async fn allow_for_session_is_kept_in_the_session_and_restored_on_resume() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b1", "bash", json!({"command": "touch first"}))],
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b2", "bash", json!({"command": "touch second"}))],
    )));
    server.push(sse(&chunks::text_answer("Both.")));
    let mut harness = start(&server, 10);
    let events = harness
        .turn("touch two", Some(ApprovalDecision::AllowSession))
        .await;
    assert_eq!(status(&events), TurnStatus::Done);
    let asks = approval_requests(&events);
    assert_eq!(asks.len(), 1, "`touch *` was allowed for the session");
    assert!(asks[0].session_allowed && !asks[0].dangerous);
    assert!(harness.root.join("second").exists());
    // The session file holds the answer, the rule it added and a summary.
    let path = std::fs::read_dir(harness.store.dir())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&path).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "permission")
        .collect();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(entries[0]["decision"], "allow_session");
    assert_eq!(entries[0]["by"], "user");
    assert_eq!(entries[0]["summary"], "touch first");
    assert_eq!(
        entries[0]["allowed"],
        json!([
            {"permission": "bash", "pattern": "touch *"},
            {"permission": "edit", "pattern": "*"}
        ])
    );
    assert_eq!(entries[1]["by"], "session");
    // A resumed session remembers the allowance.
    let id = path.file_stem().unwrap().to_str().unwrap().to_owned();
    harness.handle.ops.submit(Op::Shutdown);
    while harness.handle.events.recv().await.is_some() {}
    let session = crate::support::open_when_free(&harness.store, &id).await;
    assert_eq!(session.allowed.len(), 2);
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b3", "bash", json!({"command": "touch third"}))],
    )));
    server.push(sse(&chunks::text_answer("Third.")));
    let config = crate::support::fast_config(&server.base_url());
    let mut resumed = agent::spawn(AgentSetup {
        client: Arc::new(Client::new(&config).unwrap()),
        session,
        tools: Registry::default(),
        config,
        shell: crate::support::confined_shell(&harness.root),
        sandbox: Arc::new(offcode::sandbox::Sandbox::new(&harness.root).unwrap()),
        policy: built_in_policy(&harness.root),
        approver: offcode::protocol::Decider::User,
        context: offcode::context::Assembly::default(),
        servers: offcode::servers::ServerCache::default(),
        agents: offcode::agents::Agents::default(),
        agent: None,
        depth: 0,
        mcp: None,
        checkpoints: None,
    });
    resumed.ops.submit(Op::UserTurn {
        text: "one more".into(),
    });
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), resumed.events.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            !matches!(event.msg, EventMsg::ApprovalRequest(_)),
            "asked again after resume"
        );
        if matches!(event.msg, EventMsg::TurnComplete(_)) {
            break;
        }
    }
    assert!(harness.root.join("third").exists());
}

#[tokio::test]
async fn a_write_approval_shows_the_diff_before_anything_is_written() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "e1",
            "edit",
            json!({"path": "main.rs", "old_string": "41", "new_string": "42"}),
        )],
    )));
    server.push(sse(&chunks::text_answer("Not changed.")));
    let mut harness = start(&server, 10);
    std::fs::write(
        harness.root.join("main.rs"),
        "fn main() {\n    let x = 41;\n}\n",
    )
    .unwrap();
    let events = harness
        .turn("change it", Some(ApprovalDecision::Deny))
        .await;
    let asks = approval_requests(&events);
    assert_eq!(asks.len(), 1);
    let Some(offcode::protocol::ToolDisplay::Diff { files }) = &asks[0].preview else {
        panic!("no preview: {:?}", asks[0]);
    };
    assert_eq!(files.len(), 1);
    assert_eq!(
        (
            files[0].operation.as_str(),
            files[0].additions,
            files[0].deletions
        ),
        ("updated", 1, 1)
    );
    assert!(
        files[0].diff.contains("-    let x = 41;") && files[0].diff.contains("+    let x = 42;"),
        "{}",
        files[0].diff
    );
    // Denied: the file is as it was.
    assert_eq!(
        std::fs::read_to_string(harness.root.join("main.rs")).unwrap(),
        "fn main() {\n    let x = 41;\n}\n"
    );
}

#[tokio::test]
async fn a_dangerous_call_is_never_allowed_for_the_session() {
    let server = mock();
    for id in ["r1", "r2"] {
        server.push(sse(&chunks::tool_answer(
            "",
            &[(id, "bash", json!({"command": "rm -f gone.txt"}))],
        )));
    }
    server.push(sse(&chunks::text_answer("Removed.")));
    let mut harness = start(&server, 10);
    std::fs::write(harness.root.join("gone.txt"), "x").unwrap();
    // The front end answers "allow for the session"; the core treats it as
    // "allow once", so the second call asks again.
    let events = harness
        .turn("remove it", Some(ApprovalDecision::AllowSession))
        .await;
    let asks = approval_requests(&events);
    assert_eq!(asks.len(), 2);
    for ask in &asks {
        assert!(ask.dangerous && !ask.session_allowed, "{ask:?}");
        assert_eq!(
            ask.dangers,
            vec!["rm -f gone.txt: `rm` deletes files".to_owned()]
        );
        assert!(ask.rule.starts_with("dangerous: "), "{}", ask.rule);
    }
    let decisions: Vec<ApprovalDecision> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::PermissionDecision(d) => Some(d.decision),
            _ => None,
        })
        .collect();
    assert_eq!(decisions, vec![ApprovalDecision::AllowOnce; 2]);
    assert!(!harness.root.join("gone.txt").exists());
}

#[tokio::test]
async fn interrupt_mid_stream_keeps_the_partial_text() {
    let server = mock();
    let mut events = vec![chunks::role(), chunks::text_delta("I have started ")];
    events.extend((0..100).map(|i| chunks::text_delta(&format!("{i} "))));
    server.push(Reply::sse_events(events, Duration::from_millis(30)));
    let mut harness = start(&server, 10);
    harness.handle.ops.submit(Op::UserTurn {
        text: "long answer".into(),
    });
    // Interrupted once text is arriving, with most of it still to come.
    harness
        .until(|msg| matches!(msg, EventMsg::AssistantDelta { .. }))
        .await;
    harness.handle.ops.submit(Op::Interrupt);
    let events = harness.collect(None).await;
    assert_eq!(status(&events), TurnStatus::Aborted);
    let messages = harness.session_messages();
    let Some(Message::Assistant {
        content,
        interrupted: true,
        ..
    }) = messages.last()
    else {
        panic!("last message is the interrupted answer: {messages:?}")
    };
    assert!(content.starts_with("I have started "), "{content}");
    // The next turn works and sends the partial answer as history.
    server.push(sse(&chunks::text_answer("Resumed.")));
    let events = harness.turn("continue", None).await;
    assert_eq!(status(&events), TurnStatus::Done);
    let last = server.chat_bodies().pop().unwrap();
    let roles: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
}

#[tokio::test]
async fn interrupt_kills_a_running_command() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "b1",
            "bash",
            json!({"command": "touch started; sleep 1; touch survived"}),
        )],
    )));
    let mut harness = start(&server, 10);
    harness.handle.ops.submit(Op::UserTurn {
        text: "run it".into(),
    });
    while let Some(event) = harness.next().await {
        if let EventMsg::ApprovalRequest(request) = &event.msg {
            harness.handle.ops.submit(Op::Approve {
                call_id: request.call_id.clone(),
                decision: ApprovalDecision::AllowOnce,
                reason: None,
            });
        }
        if matches!(
            event.msg,
            EventMsg::StateChanged {
                state: offcode::protocol::TurnState::ToolRunning
            }
        ) {
            break;
        }
    }
    let started = harness.root.join("started");
    assert!(
        crate::support::wait_until(Duration::from_secs(10), || started.exists()),
        "the command never started"
    );
    harness.handle.ops.submit(Op::Interrupt);
    let events = harness.collect(None).await;
    assert_eq!(status(&events), TurnStatus::Aborted);
    // Had it lived, it would have written its marker a second after it
    // started.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !harness.root.join("survived").exists(),
        "the command outlived the interrupt"
    );
    let messages = harness.session_messages();
    assert!(
        matches!(messages.last(), Some(Message::Tool { is_error: true, content, .. }) if content.contains("Aborted")),
        "{messages:?}"
    );
}

#[tokio::test]
async fn interrupt_ends_a_turn_whose_tool_is_stuck() {
    // A FIFO named `.gitignore` above the workspace (the walker reads the
    // parents' ignore files; one in the workspace is moved aside) blocks
    // the walker's open inside the ignore crate; the turn must still end
    // on interrupt.
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("g1", "glob", json!({"pattern": "*.rs"}))],
    )));
    let mut harness = start(&server, 10);
    let above = harness.root.parent().unwrap().to_path_buf();
    let root = rustix::fs::open(
        &above,
        rustix::fs::OFlags::DIRECTORY,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    rustix::fs::mknodat(
        &root,
        ".gitignore",
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    harness.handle.ops.submit(Op::UserTurn {
        text: "find rust files".into(),
    });
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), harness.handle.events.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(
            event.msg,
            EventMsg::StateChanged {
                state: offcode::protocol::TurnState::ToolRunning
            }
        ) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    harness.handle.ops.submit(Op::Interrupt);
    let events = harness.collect(None).await;
    assert_eq!(status(&events), TurnStatus::Aborted);
    // Unblock the walker thread so the test process can exit cleanly.
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(above.join(".gitignore"));
}

#[tokio::test]
async fn a_users_shell_command_is_recorded_for_the_model_and_never_a_doom_loop() {
    let server = mock();
    let mut harness = start(&server, 5);
    // The same allowed command three times: no question (it is the
    // user's, not a model repeating itself).
    for _ in 0..3 {
        harness.handle.ops.submit(Op::Shell {
            command: "echo hi".into(),
        });
        let events = harness.collect(None).await;
        assert!(approval_requests(&events).is_empty(), "{events:#?}");
        assert_eq!(status(&events), TurnStatus::Done);
    }
    // A dangerous one asks; denied, it is recorded as not run.
    std::fs::create_dir(harness.root.join("build")).unwrap();
    harness.handle.ops.submit(Op::Shell {
        command: "rm -rf build".into(),
    });
    let events = harness.collect(Some(ApprovalDecision::Deny)).await;
    assert_eq!(approval_requests(&events).len(), 1);
    assert!(harness.root.join("build").is_dir());
    let messages = harness.session_messages();
    let texts: Vec<String> = messages
        .iter()
        .map(|m| match m {
            Message::User { content } => format!("user: {content}"),
            Message::Assistant { content, .. } => format!("assistant: {content}"),
            other @ Message::Tool { .. } => format!("{other:?}"),
        })
        .collect();
    assert_eq!(texts.len(), 8, "{texts:#?}");
    assert_eq!(texts[0], "user: !echo hi");
    assert_eq!(
        texts[1],
        "assistant: The user ran `echo hi` in the workspace:\n```\nhi\n\n[exit code: 0]\n```"
    );
    assert_eq!(texts[6], "user: !rm -rf build");
    assert!(
        texts[7].starts_with(
            "assistant: The user tried to run `rm -rf build`; it did not run: Permission denied"
        ),
        "{}",
        texts[7]
    );
    assert!(server.chat_bodies().is_empty(), "`!` never asks the model");
}

#[tokio::test]
async fn the_first_file_change_without_a_todo_list_starts_one_without_distracting_the_model() {
    let server = mock();
    for path in ["a.txt", "b.txt"] {
        server.push(sse(&chunks::tool_answer(
            "",
            &[("c1", "write", json!({"path": path, "content": "x\n"}))],
        )));
        server.push(sse(&chunks::text_answer("done")));
    }
    let mut harness = start(&server, 5);
    let events = harness
        .turn("add a.txt\nwith x in it", Some(ApprovalDecision::AllowOnce))
        .await;
    let updates: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::TodoUpdated { items } => Some(items.clone()),
            _ => None,
        })
        .collect();
    // Started at the first change, completed when the turn ended well:
    // no list is left showing the task as still going.
    assert_eq!(updates.len(), 2, "{events:#?}");
    assert_eq!(updates[0].len(), 1);
    assert_eq!(updates[0][0].content, "add a.txt");
    assert_eq!(
        updates[0][0].status,
        offcode::protocol::TodoStatus::InProgress
    );
    assert_eq!(
        updates[1][0].status,
        offcode::protocol::TodoStatus::Completed
    );
    let second_request = &server.chat_bodies()[1];
    let tool_result = crate::support::first_tool_result(second_request);
    // The model is not invited to tend it: every small model told so
    // went off its task (issue 28).
    assert!(!tool_result.contains("todo"), "{tool_result}");
    // With a list, a later change starts nothing.
    let events = harness
        .turn("add b.txt", Some(ApprovalDecision::AllowOnce))
        .await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::TodoUpdated { .. })),
        "{events:#?}"
    );
    assert!(harness.root.join("b.txt").exists());
}

/// A model that writes a todo list, reads `files` files one per step
/// (answering a summary request whenever one comes), then says it is
/// done. Its tokenizer counts 3 bytes a token, a little less generous
/// than offcode's estimate; with `tokenize` false it only reports usage.
fn reading_model(
    files: usize,
    summaries: Arc<std::sync::atomic::AtomicUsize>,
    tokenize: bool,
) -> MockServer {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let steps = Arc::new(AtomicUsize::new(0));
    MockServer::start(Arc::new(
        move |request: &crate::support::server::Request| {
            let with_usage = |mut events: Vec<String>| {
                let usage = events.len() - 2;
                events[usage] = chunks::usage(request.body.len() as u64 / 3, 20);
                sse(&events)
            };
            if request.path.ends_with("/tokenize") && !tokenize {
                return Reply::json(404, &json!({"error": {"message": "no route"}}));
            }
            if request.path.ends_with("/tokenize") {
                // A tokenizer a little less generous than offcode's estimate.
                let count = request.body.len() / 3;
                return Reply::json(200, &json!({"count": count, "max_model_len": 6000}));
            }
            let body = request.json();
            let system = body["messages"][0]["content"].as_str().unwrap_or("");
            if system.starts_with("You summarise") {
                summaries.fetch_add(1, Ordering::SeqCst);
                return sse(&chunks::text_answer(
                    "Objective: read every file. Files touched: none. Next steps: read the next file.",
                ));
            }
            let step = steps.fetch_add(1, Ordering::SeqCst);
            if step == 0 {
                return sse(&chunks::tool_answer(
                    "",
                    &[(
                        "call_plan",
                        "todowrite",
                        json!({"todos": [{"content": "read every file", "status": "in_progress"}]}),
                    )],
                ));
            }
            let step = step - 1;
            if step < files {
                with_usage(chunks::tool_answer(
                    "",
                    &[(
                        &format!("call_{step}"),
                        "read",
                        json!({"path": format!("f{step}.txt")}),
                    )],
                ))
            } else {
                with_usage(chunks::text_answer(&format!("All {files} files read.")))
            }
        },
    ))
}

#[tokio::test]
async fn a_task_that_overflows_the_context_twice_finishes_through_compaction() {
    use std::sync::atomic::Ordering;
    let summaries = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = reading_model(12, Arc::clone(&summaries), true);
    let mut harness = start_with(&server, |config| {
        config.context_limit = Some(6_000);
        config.compaction.reserve = 1_000;
        // Every tool, the todo list's included: this is about compaction.
        config.compact = offcode::config::Compact::Off;
    });
    for n in 0..12 {
        let line = format!("file {n}: {}\n", "lorem ipsum dolor sit amet ".repeat(3));
        std::fs::write(harness.root.join(format!("f{n}.txt")), line.repeat(45)).unwrap();
    }
    let events = harness.turn("read f0.txt to f11.txt", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    assert!(
        summaries.load(Ordering::SeqCst) >= 2,
        "summaries: {}",
        summaries.load(Ordering::SeqCst)
    );
    let compacted = events
        .iter()
        .filter(
            |e| matches!(&e.msg, EventMsg::Compacted(c) if c.after < c.before && c.limit == 6_000),
        )
        .count();
    assert!(compacted >= 2, "{events:#?}");
    // Near the limit the server counted, at the root path; no request
    // went over the limit by its count (3 bytes a token).
    let counted = server
        .requests()
        .iter()
        .filter(|r| r.path == "/tokenize")
        .count();
    assert!(counted >= 2, "{counted} counts");
    for body in server.chat_bodies() {
        let size = serde_json::to_string(&body).unwrap().len();
        assert!(size / 3 < 6_000, "a request of {size} bytes");
    }
    let last = server.chat_bodies().pop().unwrap();
    let text = serde_json::to_string(&last["messages"]).unwrap();
    assert!(
        text.contains("Summary of the conversation so far"),
        "{text}"
    );
    // The todo list written at the start was summarised away with its
    // call; it rides along in the summary.
    assert!(
        text.contains("Your todo list:\\n[~] 1 read every file"),
        "{text}"
    );
    // The session keeps everything.
    let kept = harness
        .session_messages()
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .count();
    assert_eq!(kept, 13, "12 reads and the todo list");
    // Reopened, the session knows how its requests are shortened.
    harness.handle.ops.submit(Op::Shutdown);
    while harness.handle.events.recv().await.is_some() {}
    let file = std::fs::read_dir(harness.store.dir())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let id = file.file_stem().unwrap().to_string_lossy().into_owned();
    let reopened = crate::support::open_when_free(&harness.store, &id).await;
    let compaction = reopened.compaction.expect("a compaction entry");
    assert!(compaction.keep_from > 0 && compaction.summary.is_some());
}

#[tokio::test]
async fn a_context_length_error_compacts_and_retries_once_never_more() {
    let server = mock();
    let too_long = json!({"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "code": 400});
    server.push(Reply::json(400, &too_long));
    server.push(sse(&chunks::text_answer("fits now")));
    let mut harness = start(&server, 5);
    let events = harness.turn("hello", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    assert_eq!(server.chat_bodies().len(), 2);
    // Twice in a row: the error stands.
    server.push(Reply::json(400, &too_long));
    server.push(Reply::json(400, &too_long));
    let events = harness.turn("again", None).await;
    assert_eq!(status(&events), TurnStatus::Failed, "{events:#?}");
    assert_eq!(server.chat_bodies().len(), 4);
}

#[tokio::test]
async fn without_tokenize_the_servers_usage_corrects_the_estimate() {
    let summaries = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = reading_model(12, Arc::clone(&summaries), false);
    let mut harness = start_with(&server, |config| {
        config.context_limit = Some(6_000);
        config.compaction.reserve = 1_000;
    });
    // Punctuation-heavy text: 3 bytes a token by this server's count,
    // where offcode estimates 4.
    for n in 0..12 {
        let line = format!("f{n}: {}\n", "a.b(c); ".repeat(8));
        std::fs::write(harness.root.join(format!("f{n}.txt")), line.repeat(45)).unwrap();
    }
    let events = harness.turn("read f0.txt to f11.txt", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    let asked = server
        .requests()
        .iter()
        .filter(|r| r.path == "/tokenize")
        .count();
    assert!(
        asked <= 1,
        "a server without /tokenize is asked once, not {asked} times"
    );
    // By the server's own count, no request went over the limit.
    for body in server.chat_bodies() {
        let size = serde_json::to_string(&body).unwrap().len();
        assert!(size / 3 < 6_000, "a request of {size} bytes");
    }
}

/// A script that writes beside the workspace: confined it fails; only a
/// person's answer to the separate question lifts the sandbox, for that
/// one command.
#[tokio::test]
async fn lifting_the_sandbox_takes_its_own_answer_and_holds_for_one_command() {
    let server = mock();
    let script = json!({"command": "python3 out.py"});
    let lifted = json!({"command": "python3 out.py", "unconfined": true});
    server.push(sse(&chunks::tool_answer(
        "",
        &[("c1", "bash", script.clone())],
    )));
    server.push(sse(&chunks::tool_answer("", &[("c2", "bash", lifted)])));
    server.push(sse(&chunks::tool_answer("", &[("c3", "bash", script)])));
    server.push(sse(&chunks::text_answer("Done.")));
    let mut harness = start(&server, 10);
    // Out of `/tmp`, which confined commands see as a private folder.
    let beside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outside = beside.path().join("beside.txt");
    std::fs::write(
        harness.root.join("out.py"),
        format!(
            "try:\n    open({:?}, 'a').write('x')\n    print('wrote')\nexcept OSError as e:\n    print('refused', e)\n",
            outside.display().to_string()
        ),
    )
    .unwrap();
    let events = harness
        .turn("write beside", Some(ApprovalDecision::AllowSession))
        .await;
    // The first answer allowed `python3 *` for the session, so the third
    // call does not ask; it runs confined all the same.
    let asks = approval_requests(&events);
    assert_eq!(asks.len(), 2, "{asks:?}");
    // The ordinary question says how the command will run.
    assert!(!asks[0].unconfined && asks[0].session_allowed);
    assert!(
        asks[0]
            .confinement
            .as_deref()
            .is_some_and(|c| c.starts_with("confined:")),
        "{:?}",
        asks[0].confinement
    );
    // Lifting is its own, mandatory question, never for the session.
    assert!(
        asks[1].unconfined
            && asks[1].mandate == Some(offcode::protocol::Mandate::Unconfined)
            && !asks[1].session_allowed
    );
    assert!(
        asks[1]
            .confinement
            .as_deref()
            .unwrap()
            .starts_with("UNCONFINED")
    );
    let outputs: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ToolCallEnd(end) => Some(end.output.clone()),
            _ => None,
        })
        .collect();
    assert!(outputs[0].contains("refused"), "{outputs:?}");
    assert!(outputs[1].contains("wrote"), "{outputs:?}");
    // The next command is confined again.
    assert!(outputs[2].contains("refused"), "{outputs:?}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "x");
}

/// The next event answering `id`, within 10 s.

#[tokio::test]
async fn model_lists_and_context_lengths_are_core_queries_resolved_in_one_place() {
    let server = crate::support::demo_mock();
    let mut harness = start(&server, 5);
    let asked = harness.handle.ops.submit(Op::ListModels);
    let EventMsg::ModelList(list) = answer_to(&mut harness.handle, asked).await else {
        panic!("a model list answers ListModels");
    };
    let ids: Vec<_> = list
        .models
        .iter()
        .map(|m| (m.id.as_str(), m.context))
        .collect();
    assert_eq!(
        ids,
        [
            ("mock-model", Some(32768)),
            ("mock-model-large", Some(131_072))
        ]
    );
    assert_eq!((list.limit, list.error), (Some(32768), None));
    // A switch carries the new model's length, from the same list.
    let switched = harness.handle.ops.submit(Op::SetModel {
        model: "mock-model-large".to_owned(),
    });
    assert_eq!(
        answer_to(&mut harness.handle, switched).await,
        EventMsg::ModelChanged {
            model: "mock-model-large".to_owned(),
            limit: Some(131_072)
        }
    );
    let counted = harness.handle.ops.submit(Op::Context);
    let EventMsg::ContextReport(report) = answer_to(&mut harness.handle, counted).await else {
        panic!("a report answers Context");
    };
    assert_eq!(report.limit, Some(131_072));

    // The config's length wins over the server's, everywhere.
    let mut configured = start_with(&server, |config| config.context_limit = Some(1000));
    let asked = configured.handle.ops.submit(Op::ListModels);
    let EventMsg::ModelList(list) = answer_to(&mut configured.handle, asked).await else {
        panic!("a model list answers ListModels");
    };
    assert_eq!(list.limit, Some(1000));
    let counted = configured.handle.ops.submit(Op::Context);
    let EventMsg::ContextReport(report) = answer_to(&mut configured.handle, counted).await else {
        panic!("a report answers Context");
    };
    assert_eq!(report.limit, Some(1000));

    // A server that does not answer is an error in the list, not a hang.
    let mut closed = start_with(&server, |config| {
        config.base_url = "http://127.0.0.1:9/v1".to_owned();
    });
    let asked = closed.handle.ops.submit(Op::ListModels);
    let EventMsg::ModelList(list) = answer_to(&mut closed.handle, asked).await else {
        panic!("a model list answers ListModels");
    };
    assert!(list.models.is_empty());
    assert!(
        list.error.as_deref().is_some_and(|e| e.contains("connect")),
        "{list:?}"
    );
}

#[tokio::test]
async fn every_request_caps_the_answer_and_a_rejected_cap_is_lowered_not_compacted() {
    let server = mock();
    // vLLM refuses a request whose answer room does not fit what the
    // context leaves; it says the length and the prompt's size.
    let too_much = json!({"object": "error", "message": "This model's maximum context length is 6000 tokens. However, you requested 7000 tokens (2904 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "code": 400});
    server.push(Reply::json(400, &too_much));
    server.push(sse(&chunks::text_answer("fits now")));
    let mut harness = start(&server, 5);
    let events = harness.turn("hello", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 2, "no summary request: nothing was compacted");
    // The default room is the compaction reserve.
    assert_eq!(bodies[0]["max_tokens"], 4096);
    let lowered = bodies[1]["max_tokens"].as_u64().unwrap();
    assert!(lowered + 2904 <= 6000, "{lowered}");
    assert!(lowered >= 1000, "{lowered}");

    // A configured cap is sent as it is.
    let server = mock();
    server.push(sse(&chunks::text_answer("short")));
    let mut harness = start_with(&server, |config| config.max_tokens = Some(512));
    let events = harness.turn("hello", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    assert_eq!(server.chat_bodies()[0]["max_tokens"], 512);

    // A known small context leaves a quarter for the answer at most.
    let server = mock();
    server.push(sse(&chunks::text_answer("small")));
    let mut harness = start_with(&server, |config| config.context_limit = Some(8_000));
    let events = harness.turn("hello", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    assert_eq!(server.chat_bodies()[0]["max_tokens"], 2000);
}

#[tokio::test]
async fn a_write_written_with_the_read_it_needs_waits_for_the_result() {
    let server = mock();
    // A model without a working tool parser writes both calls at once,
    // guessing what the read returns.
    server.push(sse(&chunks::text_answer(
        "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"}}\n{\"name\": \"write\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"GUESSED\"}}\n```",
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "w1",
            "write",
            json!({"path": "out.txt", "content": "HELLO WORLD\n"}),
        )],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let (harness, events) = hello_turn(
        &server,
        5,
        "read hello.txt and write it in upper case to out.txt",
    )
    .await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    let bodies = server.chat_bodies();
    let results = tool_results(&bodies[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].1.contains("hello world"), "{results:?}");
    assert!(
        results[1].1.starts_with("Held back, not run yet") && results[1].1.contains("`read`"),
        "{results:?}"
    );
    // The guess was never written; the call made with the result was.
    assert_eq!(
        std::fs::read_to_string(harness.root.join("out.txt")).unwrap(),
        "HELLO WORLD\n"
    );
}

/// A turn for `prompt` in a workspace with `hello.txt` ("hello world"),
/// every approval answered yes.
async fn hello_turn(server: &MockServer, max_steps: u32, prompt: &str) -> (Harness, Vec<Event>) {
    let mut harness = start(server, max_steps);
    std::fs::write(harness.root.join("hello.txt"), "hello world\n").unwrap();
    let events = harness
        .turn(prompt, Some(ApprovalDecision::AllowOnce))
        .await;
    (harness, events)
}

/// A turn for "write HI to out.txt" whose model first answers `first`,
/// then, told what is wrong, writes the file and says so. Checks the task
/// was done; returns what offcode told the model, and the events.
async fn told_then_writes_hi(first: &str) -> (String, Vec<Event>) {
    let server = mock();
    server.push(sse(&chunks::text_answer(first)));
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w1", "write", json!({"path": "out.txt", "content": "HI"}))],
    )));
    server.push(sse(&chunks::text_answer("Wrote HI to out.txt.")));
    let mut harness = start(&server, 6);
    let events = harness
        .turn("write HI to out.txt", Some(ApprovalDecision::AllowOnce))
        .await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    assert_eq!(
        std::fs::read_to_string(harness.root.join("out.txt")).unwrap(),
        "HI"
    );
    let told = server.chat_bodies()[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    (told, events)
}

#[tokio::test]
async fn a_call_written_as_an_example_is_pointed_out_once_then_the_turn_is_incomplete() {
    let example = "I'll write it now:\n```json\n{\"name\": \"write\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"HI\"}}\n```\nThe file out.txt now says HI.";
    // Told once, the model sends the call properly and the task is done.
    let (told, events) = told_then_writes_hi(example).await;
    assert!(
        told.starts_with("(offcode) Your last message has a `write` call"),
        "{told}"
    );
    // The todo list offcode starts names the user's task, not its note.
    let todo = events.iter().find_map(|e| match &e.msg {
        EventMsg::TodoUpdated { items } => Some(items[0].content.clone()),
        _ => None,
    });
    assert_eq!(todo.as_deref(), Some("write HI to out.txt"));

    // Twice, and another call the second time: the turn ends incomplete,
    // and nothing was written.
    let server = mock();
    server.push(sse(&chunks::text_answer(example)));
    server.push(sse(&chunks::text_answer(&example.replace("HI", "HELLO"))));
    let mut harness = start(&server, 6);
    let events = harness
        .turn("write HI to out.txt", Some(ApprovalDecision::AllowOnce))
        .await;
    assert_eq!(status(&events), TurnStatus::Incomplete, "{events:#?}");
    assert_eq!(server.chat_bodies().len(), 2);
    assert!(!harness.root.join("out.txt").exists());
    // The same call again, told to send it alone: it is meant, and runs.
    let server = mock();
    server.push(sse(&chunks::text_answer(example)));
    server.push(sse(&chunks::text_answer(example)));
    server.push(sse(&chunks::text_answer("Wrote HI to out.txt.")));
    let mut harness = start(&server, 6);
    let events = harness
        .turn("write HI to out.txt", Some(ApprovalDecision::AllowOnce))
        .await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    assert_eq!(
        std::fs::read_to_string(harness.root.join("out.txt")).unwrap(),
        "HI"
    );
    // An answer that only talks about tools is done, not incomplete.
    let server = mock();
    server.push(sse(&chunks::text_answer(
        "Use the `write` tool with a path and the content.",
    )));
    let mut harness = start(&server, 6);
    let events = harness.turn("how do I write a file?", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
}

#[tokio::test]
async fn a_held_back_call_never_made_again_leaves_the_task_incomplete() {
    let server = mock();
    server.push(sse(&chunks::text_answer(
        "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"}}\n{\"name\": \"write\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"GUESSED\"}}\n```",
    )));
    server.push(sse(&chunks::text_answer("Please call write again.")));
    server.push(sse(&chunks::text_answer("I have read the file.")));
    let (harness, events) = hello_turn(&server, 6, "copy hello.txt to out.txt").await;
    assert_eq!(status(&events), TurnStatus::Incomplete, "{events:#?}");
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    let told = bodies[2]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        told.starts_with("(offcode) The task is not done: your `write` call was not run")
            && told.ends_with(
                "alone in your message:\n{\"name\":\"write\",\"arguments\":{\"path\":\"out.txt\",\"content\":\"GUESSED\"}}"
            ),
        "{told}"
    );
    assert!(!harness.root.join("out.txt").exists());

    // Calls of another kind since (the todo list, a read) do not make up
    // for the write: still owed, still incomplete. A small model did this.
    let server = mock();
    server.push(sse(&chunks::text_answer(
        "{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"}}\n{\"name\": \"write\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"GUESSED\"}}",
    )));
    for step in 0..2 {
        server.push(sse(&chunks::tool_answer(
            "",
            &[
                (
                    "t1",
                    "todowrite",
                    json!({"todos": [{"id": "1", "content": format!("step {step}"), "status": "pending"}]}),
                ),
                ("r1", "read", json!({"path": "hello.txt"})),
            ],
        )));
        server.push(sse(&chunks::text_answer("")));
    }
    let (harness, events) = hello_turn(&server, 8, "copy hello.txt to out.txt").await;
    assert_eq!(status(&events), TurnStatus::Incomplete, "{events:#?}");
    assert!(!harness.root.join("out.txt").exists());
    // An edit made since does: the change was made with the results seen.
    let server = mock();
    server.push(sse(&chunks::text_answer(
        "{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"}}\n{\"name\": \"write\", \"arguments\": {\"path\": \"hello.txt\", \"content\": \"GUESSED\"}}",
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "e1",
            "edit",
            json!({"path": "hello.txt", "old_string": "hello", "new_string": "HELLO"}),
        )],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let (harness, events) = hello_turn(&server, 8, "upper-case hello.txt").await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    assert_eq!(
        std::fs::read_to_string(harness.root.join("hello.txt")).unwrap(),
        "HELLO world\n"
    );
}

#[tokio::test]
async fn a_model_caught_in_a_loop_is_stopped_and_its_first_round_is_taken() {
    let server = mock();
    // A small model's loop: the same calls written as text, round after
    // round, with no end before `max_tokens`.
    let round = "{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"}}\n{\"name\": \"todowrite\", \"arguments\": {\"todos\": [{\"id\": \"1\", \"content\": \"upper-case it\", \"status\": \"pending\"}]}}\n";
    let events = chunks::text_answer(&round.repeat(200));
    let total = events.len();
    server.push(Reply::sse_events(events, Duration::from_millis(2)));
    server.push(sse(&chunks::text_answer("It says hello world.")));
    let mut harness = start(&server, 5);
    std::fs::write(harness.root.join("hello.txt"), "hello world\n").unwrap();
    let events = harness.turn("what does hello.txt say?", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    // Stopped early: the connection was closed long before the end.
    assert!(
        server.parts_sent() < total / 4,
        "{} of {total}",
        server.parts_sent()
    );
    let warning = events.iter().find_map(|e| match &e.msg {
        EventMsg::Warning { message } if message.contains("over and over") => Some(message),
        _ => None,
    });
    assert!(
        warning.is_some_and(|w| w.contains("the same 2 lines")),
        "{events:#?}"
    );
    // The first round's calls ran, once each, and the model saw them.
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 2);
    let results = tool_results(&bodies[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].1.contains("hello world"), "{results:?}");
    // The session keeps one round, not the loop.
    let messages = harness.session_messages();
    let calls = messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls.len()),
            _ => None,
        })
        .sum::<usize>();
    assert_eq!(calls, 2);
}

#[tokio::test]
async fn ending_without_a_word_after_a_failed_call_is_not_done() {
    let read = |path: &str| {
        sse(&chunks::tool_answer(
            "",
            &[("r1", "read", json!({"path": path}))],
        ))
    };
    // A small model reads a path that is not there, then says nothing.
    let server = mock();
    server.push(read("/elsewhere/hello.txt"));
    server.push(sse(&chunks::text_answer("")));
    server.push(sse(&chunks::text_answer("")));
    let mut harness = start(&server, 6);
    std::fs::write(harness.root.join("hello.txt"), "hello world\n").unwrap();
    let events = harness.turn("read hello.txt", None).await;
    assert_eq!(status(&events), TurnStatus::Incomplete, "{events:#?}");
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    let told = bodies[2]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        told.starts_with(
            "(offcode) The task is not done: your `read` call failed (Error: outside_workspace:"
        ) && told.contains("`hello.txt` is there"),
        "{told}"
    );
    // Told, it reads the right path: done.
    let server = mock();
    server.push(read("/elsewhere/hello.txt"));
    server.push(sse(&chunks::text_answer("")));
    server.push(read("hello.txt"));
    // (A word: an empty answer to what is not a change is no answer.)
    server.push(sse(&chunks::text_answer("It says hello world.")));
    let mut harness = start(&server, 6);
    std::fs::write(harness.root.join("hello.txt"), "hello world\n").unwrap();
    let events = harness.turn("read hello.txt", None).await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    assert_eq!(server.chat_bodies().len(), 4);
    // A call the user refused is theirs to know: no nudge.
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w1", "write", json!({"path": "out.txt", "content": "x"}))],
    )));
    server.push(sse(&chunks::text_answer("")));
    let mut harness = start(&server, 6);
    let events = harness
        .turn("write x to out.txt", Some(ApprovalDecision::Deny))
        .await;
    assert_eq!(status(&events), TurnStatus::Refused, "{events:#?}");
    assert_eq!(server.chat_bodies().len(), 2);
}

#[tokio::test]
async fn a_promise_to_act_with_no_call_is_nudged_once() {
    // Nudged, the model makes the call it promised.
    let (told, _) = told_then_writes_hi("I have read it. Now I'll write HI to out.txt.").await;
    assert!(
        told.starts_with("(offcode) You said what you will do next but made no call"),
        "{told}"
    );
    // Promising again instead: not done, and nothing written.
    let server = mock();
    server.push(sse(&chunks::text_answer("接下来我将把 HI 写入 out.txt。")));
    server.push(sse(&chunks::text_answer("好的，我现在写入文件。")));
    let mut harness = start(&server, 6);
    let events = harness
        .turn("把 HI 写入 out.txt", Some(ApprovalDecision::AllowOnce))
        .await;
    assert_eq!(status(&events), TurnStatus::Incomplete, "{events:#?}");
    assert!(!harness.root.join("out.txt").exists());
}

#[tokio::test]
async fn a_read_written_again_before_a_write_does_not_hold_the_write_back() {
    let server = mock();
    let read = "{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"}}";
    // A small model starts its next message with the call it made last.
    server.push(sse(&chunks::text_answer(read)));
    server.push(sse(&chunks::text_answer(&format!(
        "{read}\n{{\"name\": \"write\", \"arguments\": {{\"path\": \"out.txt\", \"content\": \"HELLO WORLD\\n\"}}}}"
    ))));
    server.push(sse(&chunks::text_answer("Done.")));
    let (harness, events) = hello_turn(
        &server,
        6,
        "read hello.txt and write it in upper case to out.txt",
    )
    .await;
    assert_eq!(status(&events), TurnStatus::Done, "{events:#?}");
    // The write was made with the read's result already seen.
    assert_eq!(server.chat_bodies().len(), 3);
    assert_eq!(
        std::fs::read_to_string(harness.root.join("out.txt")).unwrap(),
        "HELLO WORLD\n"
    );
}

#[tokio::test]
async fn a_write_over_a_file_the_model_never_read_is_refused_and_the_file_kept() {
    let server = mock();
    let write = |id: &str, path: &str, content: &str| {
        sse(&chunks::tool_answer(
            "",
            &[(id, "write", json!({"path": path, "content": content}))],
        ))
    };
    // A guess over a file it never read; a new file; then read, and write.
    server.push(write("w1", "./src/lib.rs", "<your content>"));
    server.push(write("w2", "src/new.rs", "pub fn new() {}\n"));
    server.push(sse(&chunks::tool_answer(
        "",
        &[("r1", "read", json!({"path": "src/lib.rs"}))],
    )));
    server.push(write("w3", "src/lib.rs", "pub fn fixed() {}\n"));
    server.push(sse(&chunks::text_answer("Done.")));
    let mut harness = start(&server, 10);
    std::fs::create_dir_all(harness.root.join("src")).unwrap();
    std::fs::write(harness.root.join("src/lib.rs"), "pub fn precious() {}\n").unwrap();
    let events = harness
        .turn("fix it", Some(ApprovalDecision::AllowOnce))
        .await;
    let ends: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ToolCallEnd(end) => Some((end.call_id.clone(), end.outcome.ok())),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("w1".to_owned(), false),
            ("w2".to_owned(), true),
            ("r1".to_owned(), true),
            ("w3".to_owned(), true),
        ]
    );
    // The refusal asked nobody and told the model what to do.
    let asked: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::ApprovalRequest(request) => Some(request.call_id.as_str()),
            _ => None,
        })
        .collect();
    assert!(!asked.contains(&"w1"), "{asked:?}");
    let told = crate::support::tool_results(&server.chat_bodies()[1]);
    assert!(
        told[0].starts_with(
            "Error: Not written: `./src/lib.rs` already exists and you have not read it in this session"
        ),
        "{told:?}"
    );
    assert_eq!(
        std::fs::read_to_string(harness.root.join("src/lib.rs")).unwrap(),
        "pub fn fixed() {}\n"
    );
    assert!(harness.root.join("src/new.rs").exists());
}

#[tokio::test]
async fn a_file_named_in_the_request_may_be_written_without_a_read() {
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "w1",
            "write",
            json!({"path": "notes.txt", "content": "new\n"}),
        )],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let mut harness = start(&server, 10);
    std::fs::write(harness.root.join("notes.txt"), "old\n").unwrap();
    harness
        .turn(
            "replace notes.txt with the word new",
            Some(ApprovalDecision::AllowOnce),
        )
        .await;
    assert_eq!(
        std::fs::read_to_string(harness.root.join("notes.txt")).unwrap(),
        "new\n"
    );
}
