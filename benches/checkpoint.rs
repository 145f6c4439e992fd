//! `cargo bench --bench checkpoint`: a checkpoint of a 10,000-file tree,
//! unchanged (target: under 50 ms) and with 10 files changed (under
//! 60 ms), after the first checkpoint that reads everything; and the first
//! one, and a revert plan, for scale. `OFFCODE_BENCH_FILES=1000,100000`
//! measures other sizes (`checkpoints.max_files` raised to fit).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports on stdout"
)]

#[path = "support.rs"]
mod bench_support;

use std::time::{Duration, Instant};

use offcode::checkpoint::{CheckpointSettings, Checkpoints, rewind};

use bench_support::median;

fn main() {
    let sizes = std::env::var("OFFCODE_BENCH_FILES").unwrap_or_else(|_| "10000".to_owned());
    for files in sizes
        .split(',')
        .filter_map(|n| n.trim().parse::<usize>().ok())
    {
        bench(files.max(100));
    }
}

fn bench(files: usize) {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    make_tree(root, files);
    let settings = CheckpointSettings {
        max_files: files.max(CheckpointSettings::default().max_files),
        ..CheckpointSettings::default()
    };
    let (mut checkpoints, _) =
        Checkpoints::open(data.path(), root, "bench", settings, Vec::new(), &|_| false).unwrap();
    let start = Instant::now();
    let first = checkpoints.take().unwrap();
    let first_time = start.elapsed();
    assert_eq!(first.stored, files, "every file");

    let last_unchanged = first.id.clone();
    let unchanged: Vec<Duration> = (0..11)
        .map(|_| {
            let start = Instant::now();
            let taken = checkpoints.take().unwrap();
            let elapsed = start.elapsed();
            assert_eq!(taken.id, last_unchanged);
            elapsed
        })
        .collect();

    let mut round = 0;
    let mut last = first.id;
    let mut steps = Vec::new();
    let changed: Vec<Duration> = (0..11)
        .map(|_| {
            round += 1;
            for n in 0..10 {
                let path = root.join(format!(
                    "src/module{:03}/f{n:03}.rs",
                    round * 7 % (files / 100)
                ));
                std::fs::write(path, format!("// file {n} changed in round {round}\n")).unwrap();
            }
            let start = Instant::now();
            let taken = checkpoints.take().unwrap();
            let elapsed = start.elapsed();
            assert_eq!(taken.stored, 10, "the 10 changed files");
            steps.push((last.clone(), taken.id.clone()));
            last = taken.id;
            elapsed
        })
        .collect();

    let turns = vec![rewind::Turn {
        number: 1,
        parent: None,
        prompt: String::new(),
        steps: steps
            .iter()
            .enumerate()
            .map(|(i, (before, after))| rewind::Step {
                entry: i.to_string(),
                before: before.clone(),
                after: after.clone(),
                tool: "bash".to_owned(),
                undone: false,
                uncertain: false,
                began: offcode::session::now_rfc3339(),
            })
            .collect(),
    }];
    let start = Instant::now();
    let plan = rewind::revert_plan(&mut checkpoints, &turns, 1).unwrap();
    let plan_time = start.elapsed();
    assert!(!plan.is_empty());

    let store_bytes = checkpoints.store().size();
    drop(checkpoints);
    let open_time = time_open(data.path(), root);
    println!("checkpoint of {files} files (median of 11):");
    println!("  first, reading every file     {:>8.1} ms", ms(first_time));
    println!(
        "  unchanged                      {:>8.1} ms   (target < 50 ms)",
        ms(median(unchanged))
    );
    println!(
        "  10 files changed               {:>8.1} ms   (target < 60 ms)",
        ms(median(changed))
    );
    println!(
        "  revert plan over 11 steps      {:>8.1} ms   ({} files)",
        ms(plan_time),
        plan.planned.len()
    );
    println!(
        "  store after 23 checkpoints     {:>8}",
        offcode::protocol::format_size(store_bytes)
    );
    println!("  opening it at a session start  {:>8.1} ms", ms(open_time));
}

/// A source tree: 100 folders of 100 files of about 2 KB, plus what a
/// checkpoint skips (a .git folder, build output).
fn make_tree(root: &std::path::Path, files: usize) {
    for dir in 0..files / 100 {
        let folder = root.join(format!("src/module{dir:03}"));
        std::fs::create_dir_all(&folder).unwrap();
        for file in 0..100 {
            let text = format!(
                "// file {dir}/{file}\n{}",
                "fn f() { let x = 1; }\n".repeat(90)
            );
            std::fs::write(folder.join(format!("f{file:03}.rs")), text).unwrap();
        }
    }
    std::fs::create_dir_all(root.join(".git/objects")).unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    for n in 0..500 {
        std::fs::write(root.join(format!("target/debug/o{n}.o")), "x").unwrap();
    }
}

/// What a session's start pays: the repair check and the look at the
/// store's size.
fn time_open(data: &std::path::Path, root: &std::path::Path) -> Duration {
    let start = Instant::now();
    let opened = Checkpoints::open(
        data,
        root,
        "next",
        CheckpointSettings::default(),
        Vec::new(),
        &|_| false,
    );
    let elapsed = start.elapsed();
    assert!(opened.is_ok());
    elapsed
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
