//! `cargo bench --bench policy`: how long the permission engine takes to
//! load and to judge a call, run before every tool call (targets: a
//! typical gate decision under 100 µs, the worst lines the gate accepts to
//! read under 50 ms, a full load, with the table of understood programs,
//! under 20 ms).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports on stdout"
)]

#[path = "support.rs"]
mod bench_support;

use offcode::policy::Policy;
use serde_json::json;

use bench_support::time;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exists.txt"), "x").unwrap();
    let managed = dir.path().join("no-managed.jsonc");
    let load = time(20, || {
        Policy::load(
            &[],
            std::slice::from_ref(&managed),
            dir.path(),
            Some("/home/u"),
        )
        .unwrap();
    });
    println!("load (built-in default and dangerous class): {load:?}");
    let policy = Policy::load(
        &[],
        std::slice::from_ref(&managed),
        dir.path(),
        Some("/home/u"),
    )
    .unwrap();
    let cases = [
        ("ls -la".to_owned(), 200),
        ("git status".to_owned(), 200),
        ("grep -rn 'fn main' src | head -20".to_owned(), 200),
        ("sed -n '1,20p' src/main.rs".to_owned(), 200),
        ("cargo test 2>&1 | tail -20".to_owned(), 200),
        (
            "cd src && git diff --stat > ../diff.txt; sudo -u root bash -c 'rm -rf build'"
                .to_owned(),
            200,
        ),
        (
            "find . -name '*.rs' -exec sh -c 'grep -n \"$(cat pat)\" \"$1\"' _ {} \\;".to_owned(),
            200,
        ),
        (format!("echo {}", "word ".repeat(13_000)), 10),
        ("true; ".repeat(1_000), 10),
        (format!("echo {}x{}", "$(".repeat(120), ")".repeat(120)), 10),
    ];
    for (command, runs) in cases {
        let arguments = json!({ "command": command });
        let took = time(runs, || {
            let _ = policy.decide("bash", &arguments, &[]);
        });
        let shown: String = command.chars().take(60).collect();
        println!("decide bash ({} bytes) {shown:?}: {took:?}", command.len());
    }
    let edit = json!({ "path": "src/main.rs" });
    let took = time(200, || {
        let _ = policy.decide("edit", &edit, &[]);
    });
    println!("decide edit: {took:?}");
}
