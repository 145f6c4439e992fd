//! `cargo bench --bench context`: what offcode spends of the model's
//! context on itself, and how long a request takes to assemble (targets:
//! base context, the system prompt and every built-in tool schema with no
//! rules, under 2,500 tokens; a request for a 500-message session
//! assembled and serialised in under 5 ms). Tokens are offcode's estimate
//! (an ASCII character a quarter of a token, any other one a whole).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports on stdout"
)]

#[path = "support.rs"]
mod bench_support;

use std::time::{Duration, Instant};

use offcode::client::wire::ChatRequest;
use offcode::context::{assemble, build_messages, estimate_tokens};
use offcode::sandbox::Sandbox;
use offcode::session::{Message, ToolCall};
use offcode::tools::Registry;

use bench_support::median;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    let assembly = assemble(&sandbox, None, &[]);
    let system = assembly.system_prompt();
    let specs = Registry::default().specs();
    let schema_tokens = estimate_tokens(&serde_json::to_string(&specs).unwrap());
    let system_tokens = estimate_tokens(&system);
    println!(
        "base context: system prompt {system_tokens} + {} tool schemas {schema_tokens} = {} tokens (target < 2500)",
        specs.len(),
        system_tokens + schema_tokens
    );

    // 500 messages: user, assistant with a tool call, tool result (2 KB).
    let output = "fn main() { println!(\"line\"); }\n".repeat(64);
    let mut history = Vec::new();
    for n in 0..167 {
        history.push(Message::User {
            content: format!("step {n}: read src/file{n}.rs and fix the bug"),
        });
        history.push(Message::Assistant {
            content: "Reading it.".into(),
            reasoning: None,
            tool_calls: vec![ToolCall {
                id: format!("call_{n}"),
                name: "read".into(),
                arguments: format!("{{\"path\":\"src/file{n}.rs\"}}"),
            }],
            interrupted: false,
        });
        history.push(Message::Tool {
            tool_call_id: format!("call_{n}"),
            name: "read".into(),
            content: output.clone(),
            is_error: false,
            shown: None,
        });
    }
    history.truncate(500);
    let config = offcode::config::Config::default();
    let samples: Vec<Duration> = (0..50)
        .map(|_| {
            let start = Instant::now();
            let messages = build_messages(&system, &history);
            let request = ChatRequest::streaming("qwen3-coder", &messages, &specs, &config);
            let body = serde_json::to_vec(&request).unwrap();
            std::hint::black_box(body);
            start.elapsed()
        })
        .collect();
    println!(
        "a request for a 500-message session (~1 MB), assembled and serialised: median {:?} (target < 5 ms)",
        median(samples)
    );
}
