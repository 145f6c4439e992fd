//! `cargo bench --bench subagent`: what starting a subagent adds before
//! its first request. The mock answers the parent with a `task` call; the
//! time measured is from the end of that answer to the child's first
//! request reaching the mock: the call's check, the child's session
//! file, its core and its request (target: under 5 ms).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark reports on stdout"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use offcode::agent::{self, AgentSetup};
use offcode::client::Client;
use offcode::protocol::{EventMsg, Op};
use offcode::session::Store;
use offcode::tools::Registry;
use serde_json::json;

#[path = "support.rs"]
mod bench_support;
#[allow(dead_code)]
#[path = "../tests/mock_server/chunks.rs"]
mod chunks;
#[allow(dead_code)]
#[path = "../tests/mock_server/server.rs"]
mod server;

const RUNS: usize = 30;

/// When the parent's `task` answer went out, and when each child's first
/// request came in.
static MARKS: Mutex<Vec<(bool, Instant)>> = Mutex::new(Vec::new());

/// The parent calls `task` first; everything after is a short answer.
fn respond(request: &server::Request) -> server::Reply {
    let body = request.json();
    let parent = !body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .contains("subagent");
    let answered = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["role"] == "tool");
    if !parent && !answered {
        MARKS.lock().unwrap().push((false, Instant::now()));
    }
    let events = if parent && !answered {
        MARKS.lock().unwrap().push((true, Instant::now()));
        chunks::tool_answer(
            "",
            &[("t1", "task", json!({"agent": "explore", "prompt": "look"}))],
        )
    } else {
        chunks::text_answer("Done.")
    };
    server::Reply::sse(events.concat().into_bytes())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mock = server::MockServer::start(Arc::new(respond));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let store = Store::new(dir.path().join("sessions"));
    let mut config = offcode::config::Config {
        base_url: mock.base_url(),
        model: Some("mock-model".into()),
        ..Default::default()
    };
    config.retry.max_retries = 0;
    let client = Arc::new(Client::new(&config).unwrap());
    let layer = offcode::policy::Layer {
        path: dir.path().join("offcode.jsonc"),
        permission: Some(json!({"task": "allow"})),
        dangerous_extra: Vec::new(),
        commands: None,
        untrusted: false,
    };
    let policy = Arc::new(offcode::policy::PolicySource::fixed(
        offcode::policy::Policy::load(&[layer], &[], &root, None).unwrap(),
    ));
    for _ in 0..RUNS {
        let session = store.create(&root, "mock-model", &config.base_url).unwrap();
        let mut handle = runtime.block_on(async {
            agent::spawn(AgentSetup {
                client: Arc::clone(&client),
                session,
                tools: Registry::default(),
                config: config.clone(),
                shell: Arc::new(offcode::confine::Shell::new(
                    std::env::current_exe().unwrap(),
                    &root,
                    &offcode::config::SandboxConfig::default(),
                    None,
                )),
                sandbox: Arc::new(offcode::sandbox::Sandbox::new(&root).unwrap()),
                policy: Arc::clone(&policy),
                approver: offcode::protocol::Decider::User,
                context: offcode::context::Assembly::default(),
                servers: offcode::servers::ServerCache::default(),
                agents: offcode::agents::Agents::default(),
                agent: None,
                depth: 0,
                mcp: None,
                checkpoints: None,
            })
        });
        runtime.block_on(async {
            handle.ops.submit(Op::UserTurn {
                text: "look around".into(),
            });
            while let Some(event) = handle.events.recv().await {
                if matches!(event.msg, EventMsg::TurnComplete(_)) {
                    break;
                }
            }
            handle.ops.submit(Op::Shutdown);
        });
    }
    let marks = MARKS.lock().unwrap().clone();
    let gaps: Vec<Duration> = marks
        .windows(2)
        .filter_map(|pair| match pair {
            [(true, answered), (false, asked)] => Some(asked.duration_since(*answered)),
            _ => None,
        })
        .collect();
    let median = bench_support::median(gaps.clone());
    let worst = gaps.iter().max().copied().unwrap_or_default();
    println!(
        "subagent start, end of the parent's task answer to the child's first request: median {:.2} ms, worst {:.2} ms ({} runs; target under 5 ms)",
        median.as_secs_f64() * 1000.0,
        worst.as_secs_f64() * 1000.0,
        gaps.len()
    );
}
