//! Pointers git follows later (`.git` files, `commondir`), led elsewhere
//! than offcode looked: through `/proc/self/cwd` (which is the person's
//! folder when git reads it, offcode's when offcode did), or through a
//! link or a file that a later call re-points while the pointer itself
//! stays untouched. Found by an outside tester; each test checks that the
//! person's `git status` and `git commit` afterwards run nothing.

use std::path::Path;

use serde_json::json;

use crate::channels::persons_git;
use crate::support::{Workspace, chunks, mock, sse};

/// A git directory at `dir` (in the workspace) whose config runs `touch
/// mark` at the next `git status` and whose hook does at a commit.
fn armed(dir: &Path, mark: &Path) {
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::create_dir_all(dir.join("refs/heads")).unwrap();
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    std::fs::write(
        dir.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = \"touch {}\"\n",
            mark.display()
        ),
    )
    .unwrap();
    let hook = dir.join("hooks/pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}.hook\n", mark.display())).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// A harmless one.
fn harmless(dir: &Path) {
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::create_dir_all(dir.join("refs/heads")).unwrap();
    std::fs::write(
        dir.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
    )
    .unwrap();
}

/// The person's git in `dir` afterwards: a status and a commit.
fn persons_status_and_commit(ws: &Workspace, dir: &Path) {
    persons_git(ws, dir, &["status"]);
    std::fs::write(dir.join("f.txt"), "x\n").unwrap();
    persons_git(ws, dir, &["add", "f.txt"]);
    persons_git(ws, dir, &["commit", "-q", "-m", "x"]);
}

fn assert_ran_nothing(mark: &Path, output: &str) {
    let hook = mark.with_extension("hook");
    assert!(
        !mark.exists() && !hook.exists(),
        "git ran what was left ({} {}):\n{output}",
        mark.exists(),
        hook.exists()
    );
}

/// Runs the commands, one step each, in one session.
fn run_commands(ws: &Workspace, commands: &[&str]) -> String {
    let server = mock();
    for (n, command) in commands.iter().enumerate() {
        server.push(sse(&chunks::tool_answer(
            "",
            &[(&format!("b{n}"), "bash", json!({ "command": command }))],
        )));
    }
    server.push(sse(&chunks::text_answer("Done.")));
    let output = ws.run_task(&server.base_url(), &["--yes", "--json"], "set up");
    assert_eq!(output.code, 0, "{}\n{}", output.stdout, output.stderr);
    output.stdout
}

#[test]
fn a_commondir_through_proc_self_cwd_is_moved_aside() {
    let ws = Workspace::new();
    let marks = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = marks.path().join("proc");
    // Made by a project script: `G/L2` leads to the reader's current
    // folder, so `L2/C` is `C` for offcode and `w/C` for git run in `w`.
    std::fs::write(
        ws.root.join("s1.sh"),
        "mkdir -p w G\necho 'ref: refs/heads/master' > G/HEAD\nln -s /proc/self/cwd G/L2\necho 'L2/C' > G/commondir\necho 'gitdir: ../G' > w/.git\n",
    )
    .unwrap();
    harmless(&ws.root.join("C"));
    armed(&ws.root.join("w/C"), &mark);
    let output = run_commands(&ws, &["sh s1.sh"]);
    persons_status_and_commit(&ws, &ws.root.join("w"));
    assert_ran_nothing(&mark, &output);
    assert!(output.contains("/proc"), "{output}");
}

#[test]
fn a_link_on_a_commondirs_way_re_pointed_later_is_seen() {
    let ws = Workspace::new();
    let marks = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = marks.path().join("chain");
    // The person's own layout, older than the session: `G/commondir`
    // leads through `G/L` and `x` to `y/C`. Harmless as it is.
    let root = &ws.root;
    std::fs::create_dir_all(root.join("w")).unwrap();
    std::fs::create_dir_all(root.join("G")).unwrap();
    std::fs::write(root.join("G/HEAD"), "ref: refs/heads/master\n").unwrap();
    std::fs::write(root.join("G/commondir"), "L/C\n").unwrap();
    std::os::unix::fs::symlink("../x", root.join("G/L")).unwrap();
    std::os::unix::fs::symlink("y", root.join("x")).unwrap();
    harmless(&root.join("y/C"));
    armed(&root.join("z/C"), &mark);
    std::fs::write(root.join("w/.git"), "gitdir: ../G\n").unwrap();
    // The agent's only change, by a project script: one link re-pointed,
    // nothing on the pointer itself.
    std::fs::write(root.join("s2.sh"), "ln -sfn z x\n").unwrap();
    // Older than the session's first step.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let output = run_commands(&ws, &["sh s2.sh"]);
    persons_status_and_commit(&ws, &root.join("w"));
    assert_ran_nothing(&mark, &output);
    assert!(output.contains("commondir"), "{output}");
}

#[test]
fn a_commondir_link_whose_file_the_write_tool_changes_is_seen() {
    let ws = Workspace::new();
    let marks = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = marks.path().join("write");
    let root = &ws.root;
    // The person's layout: `G/commondir` is a link to `y/cd`, which
    // names `C1`, harmless; `C2` is armed.
    std::fs::create_dir_all(root.join("w")).unwrap();
    std::fs::create_dir_all(root.join("G")).unwrap();
    std::fs::create_dir_all(root.join("y")).unwrap();
    std::fs::write(root.join("G/HEAD"), "ref: refs/heads/master\n").unwrap();
    std::fs::write(root.join("y/cd"), "../C1\n").unwrap();
    std::os::unix::fs::symlink("../y/cd", root.join("G/commondir")).unwrap();
    harmless(&root.join("C1"));
    armed(&root.join("C2"), &mark);
    std::fs::write(root.join("w/.git"), "gitdir: ../G\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    // The agent writes an ordinary-looking file.
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("r1", "read", json!({"path": "y/cd"}))],
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w1", "write", json!({"path": "y/cd", "content": "../C2\n"}))],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = ws.run_task(&server.base_url(), &["--yes", "--json"], "edit");
    assert_eq!(output.code, 0, "{}\n{}", output.stdout, output.stderr);
    persons_status_and_commit(&ws, &root.join("w"));
    assert_ran_nothing(&mark, &output.stdout);
    assert!(output.stdout.contains("commondir"), "{}", output.stdout);
}

#[test]
fn a_commondir_ending_in_a_space_or_tab_is_read_as_git_reads_it() {
    let ws = Workspace::new();
    let marks = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = |name: &str| marks.path().join(name);
    // git takes only line ends off a `commondir`: `../../u1\t` is the
    // folder `u1<TAB>`, armed, beside a harmless decoy `u1`; `../../ ` is
    // a folder named ` ` in the workspace root.
    let script = "wt() { mkdir -p \"$1/.git\"; printf 'ref: refs/heads/main\\n' > \"$1/.git/HEAD\"; printf \"$2\" > \"$1/.git/commondir\"; }\n\
         wt w1 '../../u1\\t\\n'\nwt w2 '../../ \\n'\nwt w3 '../../u3 '\n\
         mkdir -p u1 u3\n";
    std::fs::write(ws.root.join("s.sh"), script).unwrap();
    harmless(&ws.root.join("u1"));
    harmless(&ws.root.join("u3"));
    armed(&ws.root.join("u1\t"), &mark("tab"));
    armed(&ws.root.join(" "), &mark("root-space"));
    armed(&ws.root.join("u3 "), &mark("space"));
    // A warm session: a first step, then the script.
    let output = run_commands(&ws, &["echo warm > a", "sh s.sh"]);
    for (worktree, name) in [("w1", "tab"), ("w2", "root-space"), ("w3", "space")] {
        persons_status_and_commit(&ws, &ws.root.join(worktree));
        assert_ran_nothing(&mark(name), &output);
    }
}
