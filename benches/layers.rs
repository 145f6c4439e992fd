//! `cargo bench --bench layers`: what running a command over an overlay of
//! the workspace adds (issue 46's target: under 5 ms at every size when
//! nothing changed): `bash -c CMD` confined writing to the workspace
//! directly, against the same over a layer that offcode then applies,
//! in workspaces of 1,000, 10,000 and 100,000 files
//! (`OFFCODE_BENCH_FILES=1000,10000`), unchanged and with 10 files
//! changed.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports on stdout"
)]

#[path = "support.rs"]
mod bench_support;

use std::path::{Path, PathBuf};

use offcode::confine::Shell;

use bench_support::time;

/// Ten files appended to: the changed case.
const TEN: &str = "for n in 0 1 2 3 4 5 6 7 8 9; do echo more >> d0/f$n; done";

fn main() {
    let sizes: Vec<usize> = std::env::var("OFFCODE_BENCH_FILES").ok().map_or_else(
        || vec![1_000, 10_000, 100_000],
        |list| {
            list.split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect()
        },
    );
    for files in sizes {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        fill(&root, files);
        let shell = Shell::new(
            PathBuf::from(env!("CARGO_BIN_EXE_offcode")),
            &root,
            &offcode::config::SandboxConfig::default(),
            None,
        )
        .with_layers(Some(dir.path().join("layers")));
        if files == 1_000 || !shell.layered() {
            println!(
                "confinement here: {}; layered: {}",
                shell.status().describe(),
                shell.layered()
            );
        }
        let runs = if files > 10_000 { 20 } else { 50 };
        for (what, command) in [("unchanged", "true"), ("10 files changed", TEN)] {
            let direct = time(runs, || {
                let mut run = shell.command("bash", &["-c", command], false).unwrap();
                assert!(run.current_dir(&root).status().unwrap().success());
            });
            let layered = time(runs, || {
                let (mut run, layer) = shell
                    .layered_command("bash", &["-c", command], false)
                    .unwrap();
                assert!(run.current_dir(&root).status().unwrap().success());
                let applied = layer.unwrap().apply(&root, &|_| false);
                assert!(applied.failed.is_empty(), "{applied:?}");
            });
            println!(
                "{files:>7} files, {what:<16}: direct {direct:?}, over a layer and applied {layered:?} (+{:?})",
                layered.saturating_sub(direct)
            );
        }
    }
}

/// `files` files of 100 bytes, 100 to a folder.
fn fill(root: &Path, files: usize) {
    for n in 0..files {
        let folder = root.join(format!("d{}", n / 100));
        if n % 100 == 0 {
            std::fs::create_dir_all(&folder).unwrap();
        }
        std::fs::write(folder.join(format!("f{}", n % 100)), [b'x'; 100]).unwrap();
    }
}
