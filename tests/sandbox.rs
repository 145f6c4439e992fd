//! The path sandbox under attack: escape attempts through every file tool,
//! legitimate paths that must keep working, and symlink races. Each table
//! runs with the kernel resolver (openat2) and with the userspace fallback,
//! and each escape checks that nothing outside was read, listed, created or
//! changed.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use offcode::cancel::Cancel;
use offcode::sandbox::Sandbox;
use offcode::tools::{Registry, ToolContext, ToolOutput};
use serde_json::{Value, json};

const SECRET: &str = "TOP-SECRET-OUTSIDE";
/// Matches the secret without containing it (tools echo their pattern).
const SECRET_PATTERN: &str = "TOP.SECRET.OUTSIDE";

struct Tree {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    for directory in [
        "outside/dir",
        "root/sub",
        "root/with space",
        "root/中文目录",
        "root/deep/a/b",
    ] {
        std::fs::create_dir_all(base.join(directory)).unwrap();
    }
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(outside.join("dir/more.txt"), format!("{SECRET} more\n")).unwrap();
    std::fs::write(root.join("inside.txt"), "inside line\n").unwrap();
    std::fs::write(root.join("sub/file.txt"), "sub file\n").unwrap();
    std::fs::write(root.join("with space/a b.txt"), "spaced\n").unwrap();
    std::fs::write(root.join("中文目录/文件.txt"), "你好\n").unwrap();
    std::fs::write(root.join(".dotfile"), "dot\n").unwrap();
    let links: [(&str, PathBuf); 13] = [
        ("link_in", "inside.txt".into()),
        ("sub/up", "../inside.txt".into()),
        ("dirlink", "sub".into()),
        ("esc_abs", outside.join("secret.txt")),
        ("esc_rel", "../outside/secret.txt".into()),
        ("esc_dir", "../outside".into()),
        ("deep/a/b/c", "../../../../outside".into()),
        ("abs_inside", root.join("inside.txt")),
        ("loop1", "loop2".into()),
        ("loop2", "loop1".into()),
        ("chain1", "chain2".into()),
        ("chain2", "../outside/secret.txt".into()),
        ("proc", "/proc/self/root/etc/hostname".into()),
    ];
    for (name, target) in links {
        symlink(target, root.join(name)).unwrap();
    }
    Tree {
        _dir: dir,
        base,
        root,
    }
}

/// Every file under `dir` with its content (links as their targets).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        for entry in std::fs::read_dir(&path).unwrap() {
            let path = entry.unwrap().path();
            let kind = path.symlink_metadata().unwrap().file_type();
            if kind.is_dir() {
                stack.push(path.clone());
                files.insert(path, "<dir>".to_owned());
            } else if kind.is_symlink() {
                files.insert(
                    path.clone(),
                    format!("-> {}", std::fs::read_link(&path).unwrap().display()),
                );
            } else {
                files.insert(
                    path.clone(),
                    std::fs::read_to_string(&path).unwrap_or_default(),
                );
            }
        }
    }
    files
}

fn call(sandbox: &Arc<Sandbox>, tool: &str, arguments: &Value) -> ToolOutput {
    let context = ToolContext {
        sandbox: Arc::clone(sandbox),
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(Registry::default().call(tool, &arguments.to_string(), &context))
}

/// The sandbox in each mode: the userspace fallback, and the kernel
/// resolver (openat2). A kernel that has openat2 must get it used; one that
/// has not is said, so the missing mode is never silent.
fn sandboxes(root: &Path) -> Vec<(&'static str, Arc<Sandbox>)> {
    let kernel = Sandbox::new(root).unwrap();
    let mut list = vec![("fallback", Arc::new(Sandbox::with_fallback(root).unwrap()))];
    assert_eq!(
        kernel.uses_openat2(),
        kernel_has_openat2(root),
        "the sandbox must use openat2 exactly when the kernel has it"
    );
    if kernel.uses_openat2() {
        list.push(("openat2", Arc::new(kernel)));
    } else {
        #[expect(clippy::print_stderr, reason = "a missing mode is said, never silent")]
        {
            eprintln!("this kernel has no openat2: only the fallback resolver is tested");
        }
    }
    list
}

/// Whether the kernel answers openat2 (Linux 5.6 and later).
fn kernel_has_openat2(root: &Path) -> bool {
    rustix::fs::openat2(
        rustix::fs::CWD,
        root,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::empty(),
    )
    .is_ok()
}

fn escapes(tree: &Tree) -> Vec<(&'static str, Value)> {
    let outside = tree.base.join("outside");
    let secret = outside.join("secret.txt").display().to_string();
    let root = tree.root.display().to_string();
    let patch =
        |path: &str, body: &str| json!({"patch": format!("--- a/{path}\n+++ b/{path}\n{body}")});
    vec![
        ("read", json!({"path": "../outside/secret.txt"})),
        ("read", json!({"path": "../../../../../../etc/passwd"})),
        ("read", json!({"path": "/etc/passwd"})),
        ("read", json!({"path": secret})),
        (
            "read",
            json!({"path": format!("{root}/../outside/secret.txt")}),
        ),
        ("read", json!({"path": format!("{root}x/inside.txt")})),
        ("read", json!({"path": "sub/../../outside/secret.txt"})),
        ("read", json!({"path": "sub/./../.././outside/secret.txt"})),
        ("read", json!({"path": "dirlink/../../outside/secret.txt"})),
        ("read", json!({"path": "esc_abs"})),
        ("read", json!({"path": "esc_rel"})),
        ("read", json!({"path": "esc_dir/secret.txt"})),
        ("read", json!({"path": "deep/a/b/c/secret.txt"})),
        ("read", json!({"path": "chain1"})),
        ("read", json!({"path": "proc"})),
        ("read", json!({"path": "/proc/self/root/etc/passwd"})),
        (
            "read",
            json!({"path": "/proc/self/cwd/../outside/secret.txt"}),
        ),
        ("read", json!({"path": "loop1"})),
        ("read", json!({"path": "abs_inside"})),
        ("read", json!({"path": ""})),
        ("read", json!({"path": "a\u{0}b"})),
        ("read", json!({"path": "x/".repeat(2100)})),
        ("read", json!({"path": "~/../../outside/secret.txt"})),
        (
            "write",
            json!({"path": "../outside/new.txt", "content": "pwned"}),
        ),
        (
            "write",
            json!({"path": "esc_dir/new.txt", "content": "pwned"}),
        ),
        ("write", json!({"path": "esc_rel", "content": "pwned"})),
        ("write", json!({"path": "esc_abs", "content": "pwned"})),
        ("write", json!({"path": "chain1", "content": "pwned"})),
        (
            "write",
            json!({"path": "newdir/../../outside/x.txt", "content": "pwned"}),
        ),
        (
            "write",
            json!({"path": "deep/a/b/c/new.txt", "content": "pwned"}),
        ),
        (
            "write",
            json!({"path": "/tmp/offcode-escape-test.txt", "content": "pwned"}),
        ),
        ("write", json!({"path": "loop1", "content": "pwned"})),
        (
            "edit",
            json!({"path": "esc_rel", "old_string": SECRET, "new_string": "pwned"}),
        ),
        (
            "edit",
            json!({"path": "esc_dir/secret.txt", "old_string": SECRET, "new_string": "pwned"}),
        ),
        (
            "patch",
            json!({"patch": "--- /dev/null\n+++ b/../outside/p.txt\n@@ -0,0 +1 @@\n+pwned\n"}),
        ),
        (
            "patch",
            patch(
                "esc_dir/secret.txt",
                &format!("@@ -1 +1 @@\n-{SECRET}\n+pwned\n"),
            ),
        ),
        (
            "patch",
            json!({"patch": format!("--- a/esc_rel\n+++ /dev/null\n@@ -1 +0,0 @@\n-{SECRET}\n")}),
        ),
        ("list", json!({"path": "../outside"})),
        ("list", json!({"path": "esc_dir"})),
        ("list", json!({"path": "/"})),
        ("list", json!({"path": "deep/a/b/c"})),
        ("grep", json!({"pattern": SECRET_PATTERN})),
        (
            "grep",
            json!({"pattern": SECRET_PATTERN, "path": "esc_dir"}),
        ),
        (
            "grep",
            json!({"pattern": SECRET_PATTERN, "path": "../outside"}),
        ),
        (
            "grep",
            json!({"pattern": SECRET_PATTERN, "path": "esc_rel"}),
        ),
        ("glob", json!({"pattern": "**/*secret*"})),
        ("glob", json!({"pattern": "*", "path": "esc_dir"})),
        ("glob", json!({"pattern": "../outside/*"})),
    ]
}

#[test]
fn no_escape_reads_lists_creates_or_changes_anything_outside() {
    let tree = tree();
    let watched = [
        tree.base.join("outside"),
        PathBuf::from("/tmp/offcode-escape-test.txt"),
    ];
    let before = snapshot(&tree.base.join("outside"));
    let cases = escapes(&tree);
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for (mode, sandbox) in sandboxes(&tree.root) {
        for (tool, arguments) in &cases {
            let output = call(&sandbox, tool, arguments);
            let name = format!("{mode} {tool} {arguments}");
            assert!(
                !output.output.contains(SECRET),
                "{name} leaked: {}",
                output.output
            );
            assert!(
                !output.output.contains("more.txt"),
                "{name} listed outside: {}",
                output.output
            );
            assert!(
                !output.output.contains("root:x:0"),
                "{name} read /etc/passwd"
            );
            if matches!(*tool, "read" | "write" | "edit" | "patch")
                || arguments.get("path").is_some_and(|p| p != ".") && *tool == "list"
            {
                assert!(!output.ok, "{name} should fail: {}", output.output);
            }
            assert_eq!(
                snapshot(&tree.base.join("outside")),
                before,
                "{name} changed the outside"
            );
            assert!(!watched[1].exists(), "{name} created a file in /tmp");
        }
    }
}

#[test]
fn escapes_say_outside_workspace() {
    let tree = tree();
    for (mode, sandbox) in sandboxes(&tree.root) {
        for path in [
            "../outside/secret.txt",
            "esc_dir/secret.txt",
            "esc_abs",
            "chain1",
            "/etc/passwd",
        ] {
            let output = call(&sandbox, "read", &json!({"path": path}));
            assert!(
                output.output.starts_with("Error: outside_workspace: "),
                "{mode} {path}: {}",
                output.output
            );
        }
    }
}

#[test]
fn a_mistyped_workspace_path_is_refused_with_the_path_it_may_mean() {
    let tree = tree();
    // A small model copied the workspace's path with a part left out.
    let mistyped = tree.base.parent().unwrap().join("root/sub/file.txt");
    let escape = tree.base.join("outside/secret.txt");
    for (mode, sandbox) in sandboxes(&tree.root) {
        let output = call(&sandbox, "read", &json!({"path": mistyped}));
        assert!(
            output.output.starts_with("Error: outside_workspace: ")
                && output
                    .output
                    .ends_with("use paths relative to the workspace: `sub/file.txt` is there"),
            "{mode}: {}",
            output.output
        );
        // Nothing read in its place.
        assert!(
            !output.output.contains("sub file"),
            "{mode}: {}",
            output.output
        );
        // Nothing inside by that name: no hint, and nothing of outside.
        let output = call(&sandbox, "read", &json!({"path": escape}));
        assert!(
            output
                .output
                .ends_with("use paths relative to the workspace")
                && !output.output.contains(SECRET),
            "{mode}: {}",
            output.output
        );
        // A tail that leads outside through a link is no hint either.
        let output = call(
            &sandbox,
            "read",
            &json!({"path": "/nowhere/esc_dir/secret.txt"}),
        );
        assert!(
            output
                .output
                .ends_with("use paths relative to the workspace"),
            "{mode}: {}",
            output.output
        );
    }
}

#[test]
fn legitimate_paths_work() {
    for mode in ["fallback", "openat2"] {
        let tree = tree();
        let Some((_, sandbox)) = sandboxes(&tree.root).into_iter().find(|(m, _)| *m == mode) else {
            continue;
        };
        let root = tree.root.display().to_string();
        let reads = [
            ("inside.txt", "inside line"),
            (&*format!("{root}/inside.txt"), "inside line"),
            ("sub/file.txt", "sub file"),
            ("sub/../inside.txt", "inside line"),
            ("./sub/./file.txt", "sub file"),
            ("with space/a b.txt", "spaced"),
            ("中文目录/文件.txt", "你好"),
            (".dotfile", "dot"),
            ("link_in", "inside line"),
            ("sub/up", "inside line"),
            ("dirlink/file.txt", "sub file"),
        ];
        for (path, expected) in reads {
            let output = call(&sandbox, "read", &json!({"path": path}));
            assert!(
                output.ok && output.output.contains(expected),
                "{mode} read {path}: {}",
                output.output
            );
        }
        let ok = |tool: &str, arguments: Value| {
            let output = call(&sandbox, tool, &arguments);
            assert!(output.ok, "{mode} {tool} {arguments}: {}", output.output);
            output.output
        };
        ok(
            "write",
            json!({"path": "new/dir/deep.txt", "content": "deep\n"}),
        );
        assert_eq!(
            std::fs::read_to_string(tree.root.join("new/dir/deep.txt")).unwrap(),
            "deep\n"
        );
        ok("write", json!({"path": "link_in", "content": "via link\n"}));
        assert_eq!(
            std::fs::read_to_string(tree.root.join("inside.txt")).unwrap(),
            "via link\n"
        );
        assert!(
            tree.root
                .join("link_in")
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_symlink()
        );
        ok(
            "write",
            json!({"path": "中文目录/新文件.txt", "content": "新\n"}),
        );
        ok(
            "edit",
            json!({"path": "with space/a b.txt", "old_string": "spaced", "new_string": "edited"}),
        );
        assert_eq!(
            std::fs::read_to_string(tree.root.join("with space/a b.txt")).unwrap(),
            "edited\n"
        );
        ok(
            "patch",
            json!({"patch": "--- a/sub/file.txt\n+++ b/sub/file.txt\n@@ -1 +1 @@\n-sub file\n+patched\n"}),
        );
        assert_eq!(
            std::fs::read_to_string(tree.root.join("sub/file.txt")).unwrap(),
            "patched\n"
        );
        assert!(ok("list", json!({"path": "sub"})).contains("file.txt"));
        assert!(ok("list", json!({})).contains(".dotfile"));
        assert!(ok("list", json!({"path": "dirlink"})).contains("file.txt"));
        assert!(ok("grep", json!({"pattern": "via link"})).contains("inside.txt:1:via link"));
        assert!(
            ok("glob", json!({"pattern": "**/*.txt", "sort": "path"}))
                .contains("中文目录/文件.txt")
        );
    }
}

#[test]
fn a_logical_pwd_through_a_symlink_is_an_alias_of_the_root() {
    let tree = tree();
    let logical = tree.base.join("logical");
    symlink(&tree.root, &logical).unwrap();
    let sandbox = Arc::new(Sandbox::new(&tree.root).unwrap().with_alias(&logical));
    let inside = logical.join("inside.txt").display().to_string();
    assert!(call(&sandbox, "read", &json!({"path": inside})).ok);
    let escape = logical.join("../outside/secret.txt").display().to_string();
    let output = call(&sandbox, "read", &json!({"path": escape}));
    assert!(
        output.output.starts_with("Error: outside_workspace") && !output.output.contains(SECRET),
        "{}",
        output.output
    );
    // A path that is not the same directory is not taken as an alias.
    let other = Arc::new(
        Sandbox::new(&tree.root)
            .unwrap()
            .with_alias(&tree.base.join("outside")),
    );
    let outside = tree.base.join("outside/secret.txt").display().to_string();
    let output = call(&other, "read", &json!({"path": outside}));
    assert!(
        output.output.starts_with("Error: outside_workspace"),
        "{}",
        output.output
    );
}

/// Flips `race` between an inside target and an outside one while tools use
/// it: no read or write may ever reach the outside.
fn flip_while(root: &Path, name: &str, inside: &str, outside: &str, body: impl FnOnce()) {
    let _ = std::fs::remove_file(root.join(name));
    symlink(inside, root.join(name)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, root, name) = (Arc::clone(&stop), root.to_path_buf(), name.to_owned());
        let (inside, outside) = (inside.to_owned(), outside.to_owned());
        std::thread::spawn(move || {
            let mut flips = 0u32;
            while !stop.load(Ordering::Relaxed) || flips < 2000 {
                let target = if flips.is_multiple_of(2) {
                    &inside
                } else {
                    &outside
                };
                let temporary = root.join(format!(".{name}.tmp"));
                let _ = std::fs::remove_file(&temporary);
                symlink(target, &temporary).unwrap();
                std::fs::rename(&temporary, root.join(&name)).unwrap();
                flips += 1;
            }
            flips
        })
    };
    body();
    stop.store(true, Ordering::Relaxed);
    assert!(flipper.join().unwrap() >= 2000);
}

#[test]
fn symlink_races_never_reach_outside() {
    let tree = tree();
    let before = snapshot(&tree.base.join("outside"));
    for (mode, sandbox) in sandboxes(&tree.root) {
        flip_while(
            &tree.root,
            "race",
            "inside.txt",
            "../outside/secret.txt",
            || {
                for _ in 0..400 {
                    let read = call(&sandbox, "read", &json!({"path": "race"}));
                    assert!(
                        !read.output.contains(SECRET),
                        "{mode} read through a flipped link"
                    );
                    call(
                        &sandbox,
                        "write",
                        &json!({"path": "race", "content": "overwritten\n"}),
                    );
                }
            },
        );
        flip_while(&tree.root, "racedir", "sub", "../outside", || {
            for _ in 0..200 {
                for (tool, arguments) in [
                    ("read", json!({"path": "racedir/secret.txt"})),
                    ("list", json!({"path": "racedir"})),
                    (
                        "grep",
                        json!({"pattern": SECRET_PATTERN, "path": "racedir"}),
                    ),
                    ("glob", json!({"pattern": "*", "path": "racedir"})),
                    (
                        "write",
                        json!({"path": "racedir/secret.txt", "content": "pwned"}),
                    ),
                ] {
                    let output = call(&sandbox, tool, &arguments);
                    assert!(
                        !output.output.contains(SECRET),
                        "{mode} {tool}: {}",
                        output.output
                    );
                    assert!(
                        !output.output.contains("more.txt"),
                        "{mode} {tool}: {}",
                        output.output
                    );
                }
            }
        });
        assert_eq!(
            snapshot(&tree.base.join("outside")),
            before,
            "{mode}: the outside changed"
        );
    }
}

#[test]
fn fifos_are_refused_without_blocking() {
    let tree = tree();
    let root_fd = rustix::fs::open(
        &tree.root,
        rustix::fs::OFlags::DIRECTORY,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    rustix::fs::mknodat(
        &root_fd,
        "pipe",
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    for (mode, sandbox) in sandboxes(&tree.root) {
        let (sender, receiver) = std::sync::mpsc::channel();
        let worker = Arc::clone(&sandbox);
        std::thread::spawn(move || {
            let outputs: Vec<ToolOutput> = [
                ("read", json!({"path": "pipe"})),
                (
                    "edit",
                    json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
                ),
                ("write", json!({"path": "pipe", "content": "x"})),
                ("list", json!({})),
                ("grep", json!({"pattern": "x"})),
            ]
            .iter()
            .map(|(tool, arguments)| call(&worker, tool, arguments))
            .collect();
            let _ = sender.send(outputs);
        });
        let outputs = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{mode}: a tool blocked on a FIFO"));
        assert!(
            outputs[0].output.contains("not a regular file"),
            "{mode}: {}",
            outputs[0].output
        );
        assert!(!outputs[1].ok && !outputs[2].ok, "{mode}");
        assert!(
            std::os::unix::fs::FileTypeExt::is_fifo(
                &std::fs::symlink_metadata(tree.root.join("pipe"))
                    .unwrap()
                    .file_type()
            ),
            "{mode}: the FIFO was replaced"
        );
        assert!(
            outputs[3].ok && outputs[3].output.contains("inside.txt"),
            "{mode}: {}",
            outputs[3].output
        );
        // The search skips the FIFO and still searches the files.
        assert!(
            outputs[4].ok && !outputs[4].output.contains("pipe"),
            "{mode}: {}",
            outputs[4].output
        );
    }
}

#[test]
fn refused_creates_leave_no_directories_and_long_names_work() {
    let tree = tree();
    for (mode, sandbox) in sandboxes(&tree.root) {
        let output = call(
            &sandbox,
            "write",
            &json!({"path": "fresh/../../x.txt", "content": "x"}),
        );
        assert!(
            output.output.starts_with("Error: invalid_path")
                || output.output.starts_with("Error: outside_workspace"),
            "{mode}: {}",
            output.output
        );
        assert!(
            !tree.base.join("x.txt").exists(),
            "{mode}: the write escaped"
        );
        assert!(
            !tree.root.join("fresh").exists(),
            "{mode}: a directory was left behind"
        );
        let name = format!("{}.txt", "n".repeat(240));
        let output = call(
            &sandbox,
            "write",
            &json!({"path": name, "content": "long\n"}),
        );
        assert!(output.ok, "{mode}: {}", output.output);
        assert_eq!(
            std::fs::read_to_string(tree.root.join(&name)).unwrap(),
            "long\n"
        );
        let output = call(&sandbox, "read", &json!({"path": "inside.txt/"}));
        assert!(
            output.output.starts_with("Error: not_a_directory"),
            "{mode}: {}",
            output.output
        );
    }
}
