//! Git settings kept for later by offcode's own file tools and reverts:
//! a folder git takes for a repository, with a `core.fsmonitor` that runs
//! a program at the person's next `git status`, made by `write` calls
//! alone (no command after them), or put back by a revert after offcode
//! had undone it. Commands get the same check (`channels.rs`).

use std::path::Path;

use serde_json::json;

use crate::channels::persons_git;
use crate::support::{Workspace, chunks, mock, run, sse};

/// A git config whose monitor would create `mark`.
fn monitor(mark: &Path) -> String {
    format!(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = \"touch {}\"\n",
        mark.display()
    )
}

fn write(id: &str, path: &str, content: &str) -> (String, String, serde_json::Value) {
    (
        id.to_owned(),
        "write".to_owned(),
        json!({"path": path, "content": content}),
    )
}

fn answer(server: &crate::support::MockServer, calls: &[(String, String, serde_json::Value)]) {
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, name, arguments)| (id.as_str(), name.as_str(), arguments.clone()))
        .collect();
    server.push(sse(&chunks::tool_answer("", &calls)));
}

#[test]
fn a_repository_the_file_tools_make_runs_nothing_when_the_person_uses_git() {
    let ws = Workspace::new();
    let marks = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = |n: u8| marks.path().join(format!("m{n}"));
    let server = mock();
    let root_config = monitor(&mark(1)).replace("worktree = ..", "worktree = .");
    answer(
        &server,
        &[
            // A folder of the workspace made a repository, file by file.
            write("w1", "lib/HEAD", "ref: refs/heads/main\n"),
            write("w2", "lib/objects/info/keep", ""),
            write("w3", "lib/refs/heads/keep", ""),
            write("w4", "lib/config", &monitor(&mark(2))),
            // The workspace itself (it has no .git): git started there
            // takes it for one.
            write("w5", "objects/info/keep", ""),
            write("w6", "refs/heads/keep", ""),
            write("w7", "HEAD", "ref: refs/heads/main\n"),
            write("w8", "config", &root_config),
        ],
    );
    server.push(sse(&chunks::text_answer("Done.")));
    let output = ws.run_task(&server.base_url(), &["--yes", "--json"], "set up");
    assert_eq!(output.code, 0, "{}", output.stderr);
    for dir in ["", "lib"] {
        persons_git(&ws, &ws.root.join(dir), &["status"]);
    }
    let ran: Vec<u8> = (1..=2).filter(|n| mark(*n).exists()).collect();
    assert!(
        ran.is_empty(),
        "git ran what the file tools left, for {ran:?}:\n{}",
        output.stdout
    );
    assert!(output.stdout.contains("fsmonitor"), "{}", output.stdout);
}

#[test]
fn a_revert_puts_back_no_git_setting_offcode_undid() {
    let ws = Workspace::new();
    let marks = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = marks.path().join("m");
    // The folder's HEAD is made by a script offcode cannot read and is
    // ignored, so no checkpoint has it: a revert leaves it.
    std::fs::write(
        ws.root.join(".gitignore"),
        "lib/HEAD\nlib/objects/\nlib/refs/\n",
    )
    .unwrap();
    let server = mock();
    // Turn 1: a config in a folder that is no repository yet.
    answer(&server, &[write("w1", "lib/config", &monitor(&mark))]);
    server.push(sse(&chunks::text_answer("First.")));
    let first = ws.run_task(&server.base_url(), &["--yes"], "one");
    assert_eq!(first.code, 0, "{}", first.stderr);
    // Turn 2: the script makes it one; the check after it undoes the key.
    answer(
        &server,
        &[write(
            "w2",
            "mk.py",
            "import os\nos.makedirs('lib/objects/info')\nos.makedirs('lib/refs/heads')\nopen('lib/HEAD', 'w').write('ref: refs/heads/main\\n')\n",
        )],
    );
    answer(
        &server,
        &[(
            "b1".to_owned(),
            "bash".to_owned(),
            json!({"command": "python3 mk.py"}),
        )],
    );
    server.push(sse(&chunks::text_answer("Second.")));
    let id = {
        let files = ws.session_files();
        files[0].file_stem().unwrap().to_string_lossy().into_owned()
    };
    let second = ws.run_task(&server.base_url(), &["--yes", "-s", &id], "two");
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(ws.root.join("lib/HEAD").exists(), "{}", second.stderr);
    persons_git(&ws, &ws.root.join("lib"), &["status"]);
    assert!(!mark.exists(), "the check after the command failed");
    // Taking turn 2 back puts turn 1's config back, in what is now a
    // repository: undone again, and said.
    let done = run(ws.offcode(&server.base_url(), &["revert", "--to", "2", "--yes"]));
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert!(!ws.root.join("mk.py").exists(), "{}", done.stdout);
    persons_git(&ws, &ws.root.join("lib"), &["status"]);
    assert!(
        !mark.exists(),
        "a revert put back a git setting that runs a program:\n{}",
        done.stdout
    );
    assert!(done.stdout.contains("fsmonitor"), "{}", done.stdout);
}

#[test]
fn files_the_persons_git_includes_stay_as_they_were() {
    let ws = Workspace::new();
    let marks = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = |n: u8| marks.path().join(format!("m{n}"));
    // The workspace is the person's dotfiles folder, which their global
    // config includes; and a repository whose config includes a file that
    // includes one not made yet.
    std::fs::write(
        ws.home.join(".gitconfig"),
        format!(
            "[include]\n\tpath = {}\n",
            ws.root.join("shared.gitconfig").display()
        ),
    )
    .unwrap();
    std::fs::write(ws.root.join("shared.gitconfig"), "[user]\n\tname = p\n").unwrap();
    assert!(persons_git(&ws, &ws.root, &["init", "-q"]).status.success());
    assert!(
        persons_git(
            &ws,
            &ws.root,
            &["config", "include.path", "../proj.gitconfig"]
        )
        .status
        .success()
    );
    std::fs::write(
        ws.root.join("proj.gitconfig"),
        "[include]\n\tpath = local.gitconfig\n",
    )
    .unwrap();
    let other = marks.path().join("other");
    assert!(
        persons_git(&ws, marks.path(), &["init", "-q", "other"])
            .status
            .success()
    );
    let server = mock();
    answer(
        &server,
        &[
            (
                "b1".to_owned(),
                "bash".to_owned(),
                json!({"command": format!(
                    "printf '[core]\\n\\tfsmonitor = \"touch {}\"\\n' >> shared.gitconfig",
                    mark(1).display()
                )}),
            ),
            write(
                "w1",
                "local.gitconfig",
                &format!("[core]\n\tfsmonitor = \"touch {}\"\n", mark(2).display()),
            ),
        ],
    );
    server.push(sse(&chunks::text_answer("Done.")));
    let output = ws.run_task(&server.base_url(), &["--yes", "--json"], "tidy the config");
    persons_git(&ws, &other, &["status"]);
    persons_git(&ws, &ws.root, &["status"]);
    let ran: Vec<u8> = (1..=2).filter(|n| mark(*n).exists()).collect();
    assert!(
        ran.is_empty(),
        "the person's git ran what was left, for {ran:?}:\n{}\n{}",
        output.stdout,
        output.stderr
    );
}
