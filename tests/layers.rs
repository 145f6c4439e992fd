//! Commands run over an overlay of the workspace, and offcode applies
//! what they changed: the result is what the command would have made
//! directly, and a name the workspace shares with a file outside (a hard
//! link) is replaced, never written through.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::support::{Workspace, run};

/// `offcode tool --yes bash COMMAND` in `ws`, with or without namespaces.
fn bash(ws: &Workspace, command: &str, namespaces: bool) -> crate::support::Output {
    let arguments = serde_json::json!({ "command": command, "timeout": 60 }).to_string();
    let mut offcode = ws.offcode(
        "http://127.0.0.1:9/v1",
        &["tool", "--yes", "bash", &arguments],
    );
    if !namespaces {
        offcode.env("OFFCODE_TEST_NO_NAMESPACES", "1");
    }
    run(offcode)
}

/// The layers' folder is empty once the command is applied.
fn layers_left(ws: &Workspace) -> Vec<PathBuf> {
    std::fs::read_dir(ws.home.join(".local/share/offcode/layers"))
        .map(|dir| dir.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_command_appending_to_a_hard_linked_file_leaves_the_outside_file_as_it_was() {
    let ws = Workspace::new();
    let outside = ws.home.join("store-file");
    std::fs::write(&outside, "outside\n").unwrap();
    let inode = std::fs::metadata(&outside).unwrap().ino();
    let inside = ws.root.join("linked.txt");
    std::fs::hard_link(&outside, &inside).unwrap();
    // A project script: the gate has nothing to see.
    std::fs::write(ws.root.join("append.sh"), "echo appended >> linked.txt\n").unwrap();
    let done = bash(&ws, "bash append.sh", true);
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    assert_eq!(
        std::fs::read_to_string(&inside).unwrap(),
        "outside\nappended\n"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
    assert_eq!(std::fs::metadata(&outside).unwrap().ino(), inode);
    assert_ne!(std::fs::metadata(&inside).unwrap().ino(), inode);
    assert!(layers_left(&ws).is_empty(), "{:?}", layers_left(&ws));
}

/// Every kind of change a command makes: files, folders, modes, times,
/// links of both kinds, renamed folders, a folder removed and made again,
/// a name that is not UTF-8.
const SCRIPT: &str = r"set -e
echo more >> keep.txt
rm gone.txt
rm -rf olddir
mkdir -p new/deep && echo n > new/deep/n.txt
mv movedir moved
mv movefile.txt moved.txt
chmod +x run.sh
chmod 700 modedir
ln -s keep.txt link
ln new/deep/n.txt new/hard
rm -rf again && mkdir again && echo fresh > again/fresh.txt
rm filetodir && mkdir filetodir && echo in > filetodir/in
rm -rf dirtofile && echo now a file > dirtofile
printf x > $'odd\xff name'
: > empty
head -c 3000000 /dev/zero > big.bin
touch -d @1000000000 dated.txt
";

fn starting_tree(root: &Path) {
    for (path, content) in [
        ("keep.txt", "keep\n"),
        ("gone.txt", "gone\n"),
        ("olddir/a/b.txt", "b\n"),
        ("movedir/x.txt", "x\n"),
        ("movefile.txt", "m\n"),
        ("run.sh", "true\n"),
        ("modedir/f", "f\n"),
        ("again/old.txt", "old\n"),
        ("filetodir", "file\n"),
        ("dirtofile/inner.txt", "inner\n"),
        ("dated.txt", "dated\n"),
        ("script.sh", SCRIPT),
    ] {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

/// Everything under `root` as a comparable description: each path's kind,
/// mode and content (a link's target), `dated.txt`'s time, and which
/// paths are one file.
/// Each path's description, and the groups of paths that are one file.
type Tree = (BTreeMap<Vec<u8>, String>, BTreeSet<Vec<Vec<u8>>>);

fn describe(root: &Path) -> Tree {
    let mut seen = BTreeMap::new();
    let mut inodes: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = path
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let what = if meta.is_symlink() {
                format!("link -> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                format!("dir {mode:o}")
            } else {
                let bytes = std::fs::read(&path).unwrap();
                inodes.entry(meta.ino()).or_default().push(name.clone());
                let time = if name == b"dated.txt" {
                    format!(" at {}", meta.mtime())
                } else {
                    String::new()
                };
                format!(
                    "file {mode:o} {} bytes {:x}{time}",
                    bytes.len(),
                    fnv(&bytes)
                )
            };
            seen.insert(name, what);
        }
    }
    let groups = inodes
        .into_values()
        .filter(|names| names.len() > 1)
        .map(|mut names| {
            names.sort();
            names
        })
        .collect();
    (seen, groups)
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn what_a_command_changes_lands_as_the_command_would_have_made_it() {
    let ws = Workspace::new();
    starting_tree(&ws.root);
    std::fs::set_permissions(ws.root.join("run.sh"), PermissionsExt::from_mode(0o644)).unwrap();
    let direct = tempfile::tempdir().unwrap();
    starting_tree(direct.path());
    let by_bash = std::process::Command::new("bash")
        .arg("script.sh")
        .current_dir(direct.path())
        .status()
        .unwrap();
    assert!(by_bash.success());
    let done = bash(&ws, "bash script.sh", true);
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    assert!(!done.stdout.contains("[offcode:"), "{}", done.stdout);
    let (expected, expected_links) = describe(direct.path());
    let (found, found_links) = describe(&ws.root);
    let show = |map: &BTreeMap<Vec<u8>, String>| {
        map.iter()
            .map(|(k, v)| format!("{}: {v}", String::from_utf8_lossy(k)))
            .collect::<Vec<_>>()
    };
    assert_eq!(show(&found), show(&expected));
    assert_eq!(found_links, expected_links);
    assert!(layers_left(&ws).is_empty(), "{:?}", layers_left(&ws));
}

#[test]
fn a_commands_background_process_writes_nothing_after_the_command_is_applied() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("later.sh"),
        "echo now > now.txt\n(sleep 1; echo late > late.txt) &\n",
    )
    .unwrap();
    let done = bash(&ws, "bash later.sh", true);
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("now.txt")).unwrap(),
        "now\n"
    );
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(!ws.root.join("late.txt").exists());
    assert!(layers_left(&ws).is_empty(), "{:?}", layers_left(&ws));
}

#[test]
fn git_with_many_small_files_works_over_the_overlay() {
    let ws = Workspace::new();
    for n in 0..2000 {
        let dir = ws.root.join(format!("src/m{}", n % 40));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{n}.txt")), format!("{n}\n")).unwrap();
    }
    std::fs::write(
        ws.root.join("commit.sh"),
        "set -e\ngit add -A\ngit -c user.name=t -c user.email=t@e commit -qm one\n\
         echo changed > src/m0/f0.txt\ngit -c user.name=t -c user.email=t@e commit -qam two\n\
         git gc -q\n",
    )
    .unwrap();
    ws.git(&["init", "-q"]);
    let done = bash(&ws, "bash commit.sh", true);
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    let fsck = std::process::Command::new("git")
        .args(["fsck", "--strict"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    assert!(fsck.status.success(), "{fsck:?}");
    let log = std::process::Command::new("git")
        .args(["log", "--oneline"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 2);
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
}

/// The issue's case: a project script deletes an ignored `.env` and
/// empties a 6 MB file (over `checkpoints.max_file_mb`); both were outside
/// every checkpoint, and both come back with `offcode revert`.
#[test]
fn an_ignored_file_and_a_big_one_a_script_removes_come_back_with_revert() {
    use crate::support::{chunks, mock, sse};
    let ws = Workspace::new();
    ws.git(&["init", "-q"]);
    std::fs::write(ws.root.join(".gitignore"), ".env\n").unwrap();
    std::fs::write(ws.root.join(".env"), "TOKEN=kept\n").unwrap();
    let big: Vec<u8> = (0..6 * 1024 * 1024).map(|n: u32| (n % 251) as u8).collect();
    std::fs::write(ws.root.join("data.bin"), &big).unwrap();
    std::fs::write(ws.root.join("wipe.sh"), "rm .env\n: > data.bin\n").unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b1", "bash", serde_json::json!({"command": "bash wipe.sh"}))],
    )));
    server.push(sse(&chunks::text_answer("Cleaned.")));
    let done = ws.run_task(&server.base_url(), &["--yes"], "clean up");
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(!ws.root.join(".env").exists());
    assert_eq!(
        std::fs::metadata(ws.root.join("data.bin")).unwrap().len(),
        0
    );
    assert!(
        !done.stderr.contains("cannot be taken back"),
        "{}",
        done.stderr
    );
    let reverted = run(ws.offcode(&server.base_url(), &["revert", "--to", "1", "--yes"]));
    assert_eq!(reverted.code, 0, "{}\n{}", reverted.stdout, reverted.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join(".env")).unwrap(),
        "TOKEN=kept\n"
    );
    assert!(std::fs::read(ws.root.join("data.bin")).unwrap() == big);
}

/// offcode killed during a command: nothing the command changed lands,
/// and nothing of it is left running.
#[test]
fn nothing_of_a_command_cut_short_by_offcodes_death_lands() {
    use crate::support::{chunks, mock, processes_with, sse, wait_until};
    let ws = Workspace::new();
    std::fs::write(ws.root.join("keep.txt"), "keep\n").unwrap();
    let marker = format!("32.{}", std::process::id());
    std::fs::write(
        ws.root.join("slow.sh"),
        format!("rm keep.txt\necho half > half.txt\nsleep {marker}\n"),
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b1", "bash", serde_json::json!({"command": "bash slow.sh"}))],
    )));
    let mut child = ws
        .offcode(
            &server.base_url(),
            &["run", "--yes", "--model", "mock-model", "go"],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let asleep = || {
        processes_with(&marker)
            .iter()
            .any(|p| p.contains(": sleep "))
    };
    assert!(wait_until(std::time::Duration::from_secs(20), asleep));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(wait_until(std::time::Duration::from_secs(10), || {
        processes_with(&marker).is_empty()
    }));
    assert_eq!(
        std::fs::read_to_string(ws.root.join("keep.txt")).unwrap(),
        "keep\n"
    );
    assert!(!ws.root.join("half.txt").exists());
}
