//! `cargo bench --bench cancel`: how long an abort takes to reach the
//! model server. A stream is cancelled mid-answer; measured are the time
//! until `stream_chat` returns and until the server sees the connection
//! close (target: both under 200 ms, so a GPU stops generating for an
//! aborted turn at once).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark reports on stdout"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use offcode::cancel::Cancel;
use offcode::client::Client;
use offcode::client::wire::{ChatRequest, StreamOptions, WireMessage};

#[path = "support.rs"]
mod bench_support;
#[allow(dead_code)]
#[path = "../tests/mock_server/chunks.rs"]
mod chunks;
#[allow(dead_code)]
#[path = "../tests/mock_server/server.rs"]
mod server;

use bench_support::median;

const RUNS: usize = 20;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mock = server::MockServer::start(Arc::new(server::unscripted));
    let mut config = offcode::config::Config {
        base_url: mock.base_url(),
        ..Default::default()
    };
    config.retry.max_retries = 0;
    let client = Client::new(&config).unwrap();
    let messages = vec![WireMessage {
        role: "user".into(),
        content: Some("hi".into()),
        tool_calls: vec![],
        tool_call_id: None,
    }];
    let request = ChatRequest {
        model: "mock-model",
        messages: &messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: &[],
        max_tokens: None,
        temperature: None,
        top_p: None,
        extra: &serde_json::Map::new(),
    };
    let (mut returned, mut closed) = (Vec::new(), Vec::new());
    for run in 0..RUNS {
        // A 10 s answer, cut once it is under way.
        let events = (0..400)
            .map(|i| chunks::text_delta(&format!("{i} ")))
            .collect();
        mock.push(server::Reply::sse_events(events, Duration::from_millis(25)));
        let sent_before = mock.parts_sent();
        let cancel = Cancel::default();
        let trigger = cancel.clone();
        let watcher = mock.clone();
        let cancelled_at = Arc::new(std::sync::Mutex::new(None));
        let stamp = Arc::clone(&cancelled_at);
        runtime.block_on(async {
            tokio::spawn(async move {
                while watcher.parts_sent() < sent_before + 3 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                *stamp.lock().unwrap() = Some(Instant::now());
                trigger.cancel();
            });
            let _ = client.stream_chat(&request, &cancel, &mut |_| {}).await;
        });
        let at = cancelled_at.lock().unwrap().expect("cancelled");
        returned.push(at.elapsed());
        let deadline = Instant::now() + Duration::from_secs(5);
        while mock.disconnects().len() <= run && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let seen = *mock
            .disconnects()
            .get(run)
            .expect("the server saw the close");
        closed.push(seen.duration_since(at));
    }
    let (returned, closed) = (median(returned), median(closed));
    println!(
        "cancel: stream_chat returned after {returned:?}, the server saw the close after {closed:?} (median of {RUNS}; target under 200 ms)"
    );
}
