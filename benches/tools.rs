//! `cargo bench --bench tools`: the file tools on a 10 MB file, called
//! in-process through the registry as the agent calls them (target: under
//! 50 ms each).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports on stdout"
)]

#[path = "support.rs"]
mod bench_support;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use offcode::cancel::Cancel;
use offcode::sandbox::Sandbox;
use offcode::tools::{Registry, ToolContext};
use serde_json::json;

use bench_support::median;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..180_000).fold(String::new(), |mut text, i| {
        let _ = writeln!(
            text,
            "line {i}: the quick brown fox jumps over the lazy dog"
        );
        text
    });
    std::fs::write(dir.path().join("big.txt"), &text).unwrap();
    let context = ToolContext {
        sandbox: Arc::new(Sandbox::new(dir.path()).unwrap()),
        cancel: Cancel::default(),
        allow_clobber: false,
        shell: std::sync::Arc::new(offcode::confine::Shell::unconfined(
            offcode::confine::Status::Off,
        )),
        unconfined: false,
        running: std::sync::Arc::default(),
        late: std::sync::Arc::default(),
        checkpoints: None,
    };
    let registry = Registry::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let changed = text.replace("lazy", "sleepy");
    let run = |name: &str, make: &dyn Fn(usize) -> serde_json::Value| {
        let samples: Vec<Duration> = (0..9)
            .map(|i| {
                let arguments = make(i).to_string();
                let start = Instant::now();
                let output = runtime.block_on(registry.call(name, &arguments, &context));
                let elapsed = start.elapsed();
                assert!(output.ok, "{name}: {}", output.output);
                elapsed
            })
            .collect();
        median(samples)
    };
    let read = run("read", &|_| json!({"path": "big.txt"}));
    let read_tail = run("read", &|_| json!({"path": "big.txt", "offset": 179_000}));
    let edit = run("edit", &|i| {
        let (old, new) = if i % 2 == 0 {
            ("line 90000: the", "line 90000: a")
        } else {
            ("line 90000: a", "line 90000: the")
        };
        json!({"path": "big.txt", "old_string": old, "new_string": new})
    });
    let create = run(
        "write",
        &|i| json!({"path": format!("new-{i}.txt"), "content": text}),
    );
    let replace = run(
        "write",
        &|i| json!({"path": "big.txt", "content": if i % 2 == 0 { &changed } else { &text }}),
    );
    println!(
        "tools on a {} MB file (median of 9, target < 50 ms):",
        text.len() >> 20
    );
    for (name, time) in [
        ("read (first 2000 lines)", read),
        ("read (offset near the end)", read_tail),
        ("edit (one unique line)", edit),
        ("write (create)", create),
        ("write (replace, every line changed)", replace),
    ] {
        println!("  {name:38} {:6.1} ms", time.as_secs_f64() * 1000.0);
    }
}
