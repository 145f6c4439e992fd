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
                .and_then(|mut command| command.status())
                .unwrap()
                .success()
        );
    });
    let confined = time(runs, || {
        assert!(
            shell
                .command("bash", &["-c", "true"], false)
                .and_then(|mut command| command.status())
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
        let before = Snapshot::take(&root, &[]);
        assert!(
            before
                .restore(&Snapshot::take(&root, &[]), &sandbox)
                .is_empty()
        );
    });
    println!("protected files, before and after (.git/config and 14 hooks): {check:?}");
    // The check of every git directory and of the person's files after a
    // command, in a project of 2,000 folders with 3 nested repositories
    // (a `node_modules` or `target` of that size is common).
    for folder in 0..2_000 {
        std::fs::create_dir_all(root.join(format!("src/m{}/d{folder}", folder % 40))).unwrap();
    }
    for repo in 0..3 {
        let nested = root.join(format!("vendor/r{repo}/.git"));
        std::fs::create_dir_all(nested.join("objects")).unwrap();
        std::fs::create_dir_all(nested.join("hooks")).unwrap();
        std::fs::write(nested.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(nested.join("config"), "[core]\n\tbare = false\n").unwrap();
    }
    let confinement = shell.confinement(false);
    let watch = time(runs, || {
        let watch = offcode::confine::protect::Watch::start(confinement);
        assert!(watch.finish(&root).is_empty());
    });
    println!("git directories and the person's files after a command (2,000 folders): {watch:?}");
    println!(
        "added to a command in all: {:?}",
        confined.saturating_sub(plain) + check + watch
    );
    // A workspace that is a home directory: 20,000 folders more. The first
    // check after offcode starts reads them all; the ones after it (every
    // command and file tool) read again only what changed.
    for folder in 0..20_000 {
        std::fs::create_dir_all(root.join(format!(".cache/c{}/d{folder}", folder % 200))).unwrap();
    }
    let first = std::time::Instant::now();
    assert!(offcode::confine::gitdirs::check(&root, offcode::confine::gitdirs::mark()).is_empty());
    let first = first.elapsed();
    let next = time(20, || {
        let since = offcode::confine::gitdirs::mark();
        std::fs::write(root.join("src/m1/d1/new.txt"), "x").unwrap();
        assert!(offcode::confine::gitdirs::check(&root, since).is_empty());
    });
    println!("git directories after a call, 22,000 folders: first {first:?}, then {next:?}");
}
