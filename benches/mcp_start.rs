//! `cargo bench --bench mcp_start`: offcode's time to its first event
//! (`session_configured`, when a front end shows its prompt) with 0, 4
//! and 16 MCP servers configured that never answer `initialize`. Servers
//! start in the background, so the time must not grow with their number.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark reports on stdout"
)]

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support.rs"]
mod bench_support;

const RUNS: usize = 15;

/// The time from spawning `offcode run --json` to its first line.
fn first_event(home: &std::path::Path, root: &std::path::Path) -> Duration {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_offcode"))
        .args(["run", "--json", "--model", "m", "hello"])
        .current_dir(root)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("OFFCODE_BASE_URL", "http://127.0.0.1:9/v1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let elapsed = started.elapsed();
    assert!(line.contains("session_configured"), "{line}");
    // Its servers read until their input closes, so they go with it.
    child.kill().unwrap();
    child.wait().unwrap();
    elapsed
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let root = dir.path().join("project");
    std::fs::create_dir_all(home.join(".config/offcode")).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    let mut medians = Vec::new();
    for servers in [0, 4, 16] {
        let block: serde_json::Map<String, serde_json::Value> = (0..servers)
            .map(|n| {
                (
                    format!("silent{n}"),
                    serde_json::json!({"command": ["sh", "-c", "exec cat > /dev/null"], "timeout": 3000}),
                )
            })
            .collect();
        std::fs::write(
            home.join(".config/offcode/offcode.jsonc"),
            serde_json::json!({ "mcp": block }).to_string(),
        )
        .unwrap();
        let times: Vec<Duration> = (0..RUNS).map(|_| first_event(&home, &root)).collect();
        let (least, most) = (times.iter().min().copied(), times.iter().max().copied());
        let median = bench_support::median(times);
        let ms = |d: Option<Duration>| d.unwrap_or_default().as_secs_f64() * 1000.0;
        println!(
            "{servers:>2} MCP servers: first event after {:.1} ms (median of {RUNS}; min {:.1}, max {:.1})",
            ms(Some(median)),
            ms(least),
            ms(most)
        );
        medians.push(median.as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "growth from 0 to 16 servers: {:+.1} ms",
        medians[2] - medians[0]
    );
}
