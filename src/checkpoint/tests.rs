use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::rewind::{self, Step};
use super::*;

pub(super) fn open(data: &Path, root: &Path, settings: CheckpointSettings) -> Checkpoints {
    Checkpoints::open(data, root, "s1", settings, Vec::new(), &|_| false)
        .unwrap()
        .0
}

pub(super) fn step(before: &str, after: &str) -> Step {
    Step {
        entry: "1".into(),
        before: before.into(),
        after: after.into(),
        tool: "bash".into(),
        undone: false,
        uncertain: false,
        began: "2026-01-01T00:00:00.000Z".into(),
    }
}

#[test]
fn a_step_is_taken_back_byte_for_byte_and_a_hand_edit_is_kept() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(root.join("b.bin"), [0u8, 159, 146, 150]).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        root.join("sub/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(root.join("hand.txt"), "mine\n").unwrap();
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let before = checkpoints.take().unwrap();
    assert_eq!(before.stored, 4);
    // The agent's step: edits, a removal, a new file in a new folder.
    std::fs::write(root.join("a.txt"), "one\nTWO\nthree\n").unwrap();
    std::fs::remove_file(root.join("b.bin")).unwrap();
    std::fs::remove_file(root.join("sub/run.sh")).unwrap();
    std::fs::create_dir_all(root.join("new/deep")).unwrap();
    std::fs::write(root.join("new/deep/x.rs"), "fn x() {}\n").unwrap();
    std::fs::write(root.join("hand.txt"), "agent\n").unwrap();
    let after = checkpoints.take().unwrap();
    // By hand, after the agent.
    std::fs::write(root.join("hand.txt"), "mine again\n").unwrap();
    let now = checkpoints.take().unwrap();
    let store = checkpoints.store();
    let now = store.manifest(&now.id).unwrap();
    let step = step(&before.id, &after.id);
    let plan = rewind::plan(store, std::slice::from_ref(&step), &now).unwrap();
    assert_eq!(
        plan.lines(),
        [
            "revert  a.txt  +1 -2",
            "restore b.bin",
            "remove  new/deep/x.rs",
            "restore sub/run.sh",
            "remove  new/",
            "remove  new/deep/",
            "kept    hand.txt: changed by hand since the agent changed it; left as it is",
        ]
    );
    let sandbox = crate::sandbox::Sandbox::new(root).unwrap();
    let applied = rewind::apply(store, &sandbox, &plan).unwrap();
    assert!(applied.written && applied.failed.is_empty(), "{applied:?}");
    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"one\ntwo\n");
    assert_eq!(
        std::fs::read(root.join("b.bin")).unwrap(),
        [0u8, 159, 146, 150]
    );
    let script = root.join("sub/run.sh");
    assert_eq!(std::fs::read(&script).unwrap(), b"#!/bin/sh\n");
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(
        !root.join("new").exists(),
        "the folders the agent made are gone"
    );
    assert_eq!(
        std::fs::read(root.join("hand.txt")).unwrap(),
        b"mine again\n"
    );
    // The tree is back: the same manifest as before, so nothing is stored.
    let again = checkpoints.take().unwrap();
    assert_eq!(again.stored, 0);
    let store = checkpoints.store();
    let changes = manifest::diff(
        &store.manifest(&before.id).unwrap(),
        &store.manifest(&again.id).unwrap(),
    );
    let paths: Vec<_> = changes
        .iter()
        .map(|c| c.path.display().to_string())
        .collect();
    assert_eq!(paths, ["hand.txt"]);
}

#[test]
fn an_unchanged_tree_stores_nothing_and_version_control_is_never_entered() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::create_dir_all(root.join(".git/objects")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    std::fs::write(root.join("target/debug/app"), "binary").unwrap();
    std::fs::create_dir_all(root.join(".rustup/toolchains")).unwrap();
    std::fs::write(root.join(".rustup/toolchains/rustc"), "binary").unwrap();
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(root.join("run.log"), "noise").unwrap();
    std::fs::write(root.join("main.rs"), "fn main() {}").unwrap();
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let first = checkpoints.take().unwrap();
    let manifest = checkpoints.store().manifest(&first.id).unwrap();
    let kept: Vec<_> = manifest
        .entries
        .iter()
        .map(|e| e.path.display().to_string())
        .collect();
    assert_eq!(kept, [".gitignore", "main.rs"]);
    let second = checkpoints.take().unwrap();
    assert_eq!((second.id, second.stored), (first.id, 0));
}

#[test]
fn a_file_over_the_limit_is_named_once_and_cannot_be_put_back() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(root.join("big.bin"), vec![7u8; 2 << 20]).unwrap();
    let settings = CheckpointSettings {
        max_file_mb: 1,
        ..CheckpointSettings::default()
    };
    let mut checkpoints = open(data.path(), root, settings);
    let first = checkpoints.take().unwrap();
    assert_eq!(
        first.too_large,
        [(
            root.join("big.bin")
                .strip_prefix(root)
                .unwrap()
                .to_path_buf(),
            2 << 20
        )]
    );
    assert_eq!(first.stored, 0);
    std::fs::write(root.join("big.bin"), vec![8u8; 3 << 20]).unwrap();
    let second = checkpoints.take().unwrap();
    assert!(second.too_large.is_empty(), "named once");
    let store = checkpoints.store();
    let now = store.manifest(&second.id).unwrap();
    let plan = rewind::plan(store, &[step(&first.id, &second.id)], &now).unwrap();
    assert!(plan.is_empty());
    assert_eq!(
        plan.lines(),
        [
            "kept    big.bin: its content then was not kept (over checkpoints.max_file_mb, or the session's share of the store was full)"
        ]
    );
}

#[test]
fn a_crash_mid_checkpoint_is_repaired_and_a_damaged_object_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(root.join("a.txt"), "alpha").unwrap();
    std::fs::write(root.join("b.txt"), "beta").unwrap();
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let first = checkpoints.take().unwrap();
    let dir = store_dir(data.path(), root);
    // What `kill -9` leaves: a half-written object in tmp/, and (a crash
    // of the machine) an object cut short.
    std::fs::write(dir.join("tmp/123-abc"), "half").unwrap();
    let alpha = store::hash_of(b"alpha");
    let object = dir.join("objects").join(&alpha[..2]).join(&alpha[2..]);
    std::fs::write(&object, "al").unwrap();
    drop(checkpoints);
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0);
    // The cut object was dropped, so the file is read and kept again.
    let second = checkpoints.take().unwrap();
    assert_eq!((second.id.as_str(), second.stored), (first.id.as_str(), 1));
    assert_eq!(checkpoints.store().get(&alpha).unwrap(), b"alpha");
    // A damaged object is never written back.
    std::fs::write(&object, "omega").unwrap();
    std::fs::write(root.join("a.txt"), "changed").unwrap();
    let third = checkpoints.take().unwrap();
    let store = checkpoints.store();
    let now = store.manifest(&third.id).unwrap();
    let plan = rewind::plan(store, &[step(&first.id, &third.id)], &now).unwrap();
    let sandbox = crate::sandbox::Sandbox::new(root).unwrap();
    let applied = rewind::apply(store, &sandbox, &plan).unwrap();
    assert!(!applied.written, "{applied:?}");
    assert!(
        applied.failed[0].path == Path::new("a.txt")
            && applied.failed[0].reason.contains("damaged"),
        "{applied:?}"
    );
    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"changed");
}

#[test]
fn the_oldest_sessions_are_pruned_to_the_cap() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    let roomy = CheckpointSettings::default();
    for (index, session) in ["old", "mid", "new"].iter().enumerate() {
        let mut checkpoints = Checkpoints::open(
            data.path(),
            root,
            session,
            roomy.clone(),
            Vec::new(),
            &|_| false,
        )
        .unwrap()
        .0;
        let fill: Vec<u8> = (0..(600 << 10))
            .map(|i| u8::try_from((i * (index + 3)) % 251).unwrap_or(0))
            .collect();
        std::fs::write(root.join("data.bin"), fill).unwrap();
        checkpoints.take().unwrap();
        // Sessions are ordered by their last checkpoint.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let settings = CheckpointSettings {
        max_store_mb: 1,
        ..CheckpointSettings::default()
    };
    // A session another offcode has open is never pruned, even the oldest.
    let busy = |id: &str| id == "old";
    let (_, pruned) = Checkpoints::open(
        data.path(),
        root,
        "new",
        settings.clone(),
        Vec::new(),
        &busy,
    )
    .unwrap();
    assert_eq!(pruned.sessions, ["mid"]);
    let (checkpoints, pruned) =
        Checkpoints::open(data.path(), root, "new", settings, Vec::new(), &|_| false).unwrap();
    assert_eq!(pruned.sessions, ["old"]);
    assert_eq!(pruned.objects, 2);
    assert!(checkpoints.store().size() <= 1 << 20);
}

#[test]
fn a_workspace_with_too_many_files_gets_no_partial_checkpoints() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for n in 0..5 {
        std::fs::write(work.path().join(format!("f{n}")), "x").unwrap();
    }
    let settings = CheckpointSettings {
        max_files: 3,
        ..CheckpointSettings::default()
    };
    let mut checkpoints = open(data.path(), work.path(), settings);
    let error = checkpoints.take().unwrap_err();
    assert!(error.to_string().contains("more than 3 files"), "{error}");
}

#[test]
fn the_store_is_private() {
    use std::os::unix::fs::MetadataExt;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a"), "x").unwrap();
    let mut checkpoints = open(data.path(), work.path(), CheckpointSettings::default());
    let taken = checkpoints.take().unwrap();
    let dir = store_dir(data.path(), work.path());
    for folder in [
        dir.clone(),
        dir.join("objects"),
        dir.join(format!("objects/{}", &taken.id[..2])),
    ] {
        assert_eq!(
            std::fs::metadata(&folder).unwrap().mode() & 0o777,
            0o700,
            "{}",
            folder.display()
        );
    }
    let object = dir
        .join("objects")
        .join(&taken.id[..2])
        .join(&taken.id[2..]);
    for file in [
        object,
        dir.join("latest"),
        dir.join("workspace"),
        dir.join("sessions/s1"),
    ] {
        let mode = std::fs::metadata(&file).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
}

#[test]
fn a_step_cut_short_ends_at_the_next_beginning_or_now() {
    let turn = |steps: Vec<Step>| rewind::Turn {
        number: 1,
        parent: None,
        prompt: String::new(),
        steps,
    };
    let turns = vec![turn(vec![step("a", ""), step("b", "c"), step("d", "")])];
    let settled = rewind::settle(&turns, "now");
    let ends: Vec<(&str, &str)> = settled[0]
        .steps
        .iter()
        .map(|s| (s.before.as_str(), s.after.as_str()))
        .collect();
    assert_eq!(ends, [("a", "b"), ("b", "c"), ("d", "now")]);
}

#[test]
fn names_are_shown_without_their_control_characters() {
    let path = Path::new("evil\u{1b}]0;title\u{7}\nname.txt");
    assert_eq!(rewind::shown(path), "evil\\u{1b}]0;title\\u{7}\\nname.txt");
}

#[test]
fn a_turn_is_what_the_person_typed_not_offcodes_notes() {
    use crate::session::{Entry, EntryBody, Message};
    let entry = |id: &str, body: EntryBody| Entry {
        id: id.into(),
        parent_id: None,
        ts: String::new(),
        body,
    };
    let user = |text: &str| EntryBody::Message {
        message: Message::User {
            content: text.into(),
        },
    };
    let branch = vec![
        entry("2", user("fix it\nplease")),
        entry(
            "3",
            EntryBody::Message {
                message: Message::offcode_note("send the call on its own"),
            },
        ),
        entry(
            "4",
            EntryBody::Checkpoint {
                before: "a".into(),
                after: "b".into(),
                tool: "edit".into(),
                call_id: None,
                found_later: false,
            },
        ),
        entry("5", user("now test it")),
    ];
    let turns = rewind::turns(&branch);
    let seen: Vec<(usize, &str, usize)> = turns
        .iter()
        .map(|t| (t.number, t.prompt.as_str(), t.steps.len()))
        .collect();
    assert_eq!(seen, [(1, "fix it", 1), (2, "now test it", 0)]);
}

#[test]
fn past_its_share_a_session_sees_changes_but_keeps_no_content() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(root.join("small.txt"), "one\n").unwrap();
    let settings = CheckpointSettings {
        max_store_mb: 1,
        ..CheckpointSettings::default()
    };
    let mut checkpoints = open(data.path(), root, settings);
    let first = checkpoints.take().unwrap();
    assert!(!first.share_full);
    // A flood past half the cap: seen, not kept, said once.
    std::fs::write(root.join("flood.bin"), vec![1u8; 600 << 10]).unwrap();
    std::fs::write(root.join("small.txt"), "two\n").unwrap();
    let second = checkpoints.take().unwrap();
    assert!(second.share_full);
    std::fs::write(root.join("small.txt"), "three\n").unwrap();
    let third = checkpoints.take().unwrap();
    assert!(!third.share_full, "said once");
    assert!(checkpoints.store().size() < 1 << 20);
    let store = checkpoints.store();
    let now = store.manifest(&third.id).unwrap();
    let kinds: Vec<(String, Kind)> = now
        .entries
        .iter()
        .map(|e| (e.path.display().to_string(), e.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("flood.bin".to_owned(), Kind::NotKept),
            ("small.txt".to_owned(), Kind::File)
        ]
    );
    // The earlier content stays restorable: the step's span is known.
    let plan = rewind::plan(store, &[step(&first.id, &third.id)], &now).unwrap();
    assert_eq!(
        plan.lines(),
        ["remove  flood.bin", "revert  small.txt  +1 -1"]
    );
}

#[test]
fn a_store_opened_in_the_background_is_waited_for_and_says_what_it_pruned() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    std::fs::write(root.join("a.txt"), vec![3u8; 1200 << 10]).unwrap();
    let mut old = open(data.path(), &root, CheckpointSettings::default());
    old.take().unwrap();
    drop(old);
    std::fs::write(root.join("a.txt"), "small now\n").unwrap();
    let dir = data.path().to_path_buf();
    let shared = Shared::opening(move || {
        let settings = CheckpointSettings {
            max_store_mb: 1,
            ..CheckpointSettings::default()
        };
        Checkpoints::open(&dir, &root, "new", settings, Vec::new(), &|_| false)
    });
    let (taken, pruned) = shared.with(Checkpoints::take).unwrap();
    assert_eq!(pruned.sessions, ["s1"]);
    assert_eq!(taken.unwrap().stored, 1);
    let (_, pruned) = shared.with(|c| c.root().to_path_buf()).unwrap();
    assert!(pruned.sessions.is_empty(), "said once");
    let failed = Shared::opening(|| Err(Error::Pattern("`[`: unclosed".to_owned())));
    let why = failed.with(|_| ()).unwrap_err();
    assert!(why.contains("unclosed"), "{why}");
}

#[test]
fn a_pinned_file_is_kept_where_gitignore_leaves_it_out_but_never_through_a_link() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(root.join(".gitignore"), "*\n").unwrap();
    std::fs::write(root.join(".env"), "KEY=1\n").unwrap();
    std::fs::create_dir_all(root.join("logs/old")).unwrap();
    std::fs::write(root.join("logs/old/a.log"), "a\n").unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(outside.path().join("secret"), "outside\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let paths = |checkpoints: &mut Checkpoints| -> Vec<String> {
        let taken = checkpoints.take().unwrap();
        let manifest = checkpoints.store().manifest(&taken.id).unwrap();
        manifest
            .entries
            .iter()
            .map(|e| e.path.display().to_string())
            .collect()
    };
    assert!(paths(&mut checkpoints).is_empty());
    let pin: Vec<PathBuf> = [
        ".env",
        "logs/old/a.log",
        "not/yet.txt",
        "out/secret",
        "../escape",
        "/etc/passwd",
        ".git/config",
        "logs/../.env",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    checkpoints.pin(&pin).unwrap();
    assert_eq!(paths(&mut checkpoints), [".env", "logs/old/a.log"]);
    // A file that appears later is kept then; the store remembers the
    // pins for a later session.
    std::fs::create_dir(root.join("not")).unwrap();
    std::fs::write(root.join("not/yet.txt"), "now\n").unwrap();
    let mut later = Checkpoints::open(
        data.path(),
        root,
        "s2",
        CheckpointSettings::default(),
        Vec::new(),
        &|_| false,
    )
    .unwrap()
    .0;
    assert_eq!(paths(&mut later), [".env", "logs/old/a.log", "not/yet.txt"]);
    // A folder on the way turned into a link: nothing is read through it.
    std::fs::rename(root.join("logs"), root.join("logs.moved")).unwrap();
    std::os::unix::fs::symlink(root.join("logs.moved"), root.join("logs")).unwrap();
    assert_eq!(paths(&mut later), [".env", "not/yet.txt"]);
    let pinned = later.store().pinned();
    assert!(
        pinned
            .iter()
            .all(|p| !p.starts_with("..") && !p.is_absolute()),
        "{pinned:?}"
    );
}

#[test]
fn a_folder_swapped_for_a_link_is_not_read_through() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE\n").unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/secret.txt"), "inside\n").unwrap();
    std::fs::write(root.join("d/link"), "x").unwrap();
    let (bytes, _) = read(root, Path::new("d/secret.txt"), Kind::File).unwrap();
    assert_eq!(bytes, b"inside\n");
    // What a racing process does between the walk and the read.
    std::fs::rename(root.join("d"), root.join("d.old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("d")).unwrap();
    std::os::unix::fs::symlink("target", outside.path().join("link")).unwrap();
    assert!(read(root, Path::new("d/secret.txt"), Kind::File).is_none());
    assert!(read(root, Path::new("d/link"), Kind::Link).is_none());
    assert!(read(root, Path::new("../x"), Kind::File).is_none());
    // A link as the last part is read as a link, never followed.
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("l")).unwrap();
    assert!(read(root, Path::new("l"), Kind::File).is_none());
    let (target, _) = read(root, Path::new("l"), Kind::Link).unwrap();
    assert_eq!(
        target,
        outside
            .path()
            .join("secret.txt")
            .as_os_str()
            .as_encoded_bytes()
    );
}

#[test]
fn what_a_step_replaces_is_kept_before_whatever_its_size_but_never_in_git_or_excluded_folders() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    let settings = CheckpointSettings {
        max_file_mb: 1,
        ..CheckpointSettings::default()
    };
    std::fs::write(root.join("big.bin"), vec![7u8; 2 << 20]).unwrap();
    for path in [".git/index", "node_modules/x/y.js", "gone/deep.txt"] {
        std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        std::fs::write(root.join(path), "x\n").unwrap();
    }
    let mut checkpoints = open(data.path(), root, settings);
    let before = checkpoints.take().unwrap();
    let touched: Vec<std::path::PathBuf> = ["big.bin", ".git/index", "node_modules/x/y.js", "gone"]
        .iter()
        .map(std::path::PathBuf::from)
        .collect();
    let kept = checkpoints.keep_before(&touched).unwrap();
    assert_eq!(kept.kept, 1, "{kept:?}");
    let amended = checkpoints.amended(&before.id);
    assert_ne!(amended, before.id);
    let manifest = Manifest::parse(&checkpoints.store().get(&amended).unwrap()).unwrap();
    let big = manifest.get(Path::new("big.bin")).unwrap();
    assert!(!big.hash.is_empty(), "{big:?}");
    assert!(manifest.get(Path::new(".git/index")).is_none());
    assert!(manifest.get(Path::new("node_modules/x/y.js")).is_none());
    assert!(manifest.get(Path::new("gone/deep.txt")).is_some());
}

#[test]
fn an_amended_checkpoint_is_found_by_the_next_run_after_a_crash() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    // Over `max_file_mb`: not kept by the walk.
    std::fs::write(root.join("big.bin"), vec![1u8; 6 << 20]).unwrap();
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let before = checkpoints.take().unwrap();
    checkpoints
        .keep_before(&[std::path::PathBuf::from("big.bin")])
        .unwrap();
    let amended = checkpoints.amended(&before.id);
    assert_ne!(amended, before.id);
    drop(checkpoints);
    // The run that amended it was killed; the next one knows.
    let next = open(data.path(), root, CheckpointSettings::default());
    assert_eq!(next.amended(&before.id), amended);
}
