//! `cargo bench --bench confine`: what kernel confinement adds to one shell
//! command (target: under 5 ms): `bash -c true` started plainly, through the
//! helper (namespaces, bind mounts, Landlock), and the check of the
//! protected files before and after a command.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports on stdout"
)]

#[path = "support.rs"]
mod bench_support;

use std::path::PathBuf;

use offcode::confine::Shell;
use offcode::confine::protect::Snapshot;

use bench_support::time;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    for hook in 0..14 {
        std::fs::write(
            root.join(format!(".git/hooks/sample-{hook}.sample")),
            "#!/bin/sh\n".repeat(200),
        )
        .unwrap();
    }
    let shell = Shell::new(
        PathBuf::from(env!("CARGO_BIN_EXE_offcode")),
        &root,
        &offcode::config::SandboxConfig::default(),
        None,
    );
    println!("confinement here: {}", shell.status().describe());
    let runs = 100;
    let plain = time(runs, || {
        assert!(
            shell
                .command("bash", &["-c", "true"], true)
                .status()
                .unwrap()
                .success()
        );
    });
    let confined = time(runs, || {
        assert!(
            shell
                .command("bash", &["-c", "true"], false)
                .status()
                .unwrap()
                .success()
        );
    });
    println!("bash -c true, plain:    {plain:?}");
    println!(
        "bash -c true, confined: {confined:?} (+{:?})",
        confined.saturating_sub(plain)
    );
    let sandbox = offcode::sandbox::Sandbox::new(&root).unwrap();
    let check = time(runs, || {
        let before = Snapshot::take(&root);
        assert!(before.restore(&Snapshot::take(&root), &sandbox).is_empty());
    });
    println!("protected files, before and after (.git/config and 14 hooks): {check:?}");
    println!(
        "added to a command in all: {:?}",
        confined.saturating_sub(plain) + check
    );
}
