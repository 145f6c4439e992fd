use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::apply::apply;

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap()
}

#[test]
fn files_are_moved_into_place_as_new_inodes_and_links_stay_links() {
    let (upper, root, outside) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let (upper, root) = (upper.path(), root.path());
    write(outside.path(), "shared", "outside\n");
    std::fs::hard_link(outside.path().join("shared"), root.join("shared")).unwrap();
    write(upper, "shared", "outside\nmore\n");
    write(upper, "a/b/new.txt", "new\n");
    std::fs::hard_link(upper.join("a/b/new.txt"), upper.join("a/twin.txt")).unwrap();
    std::os::unix::fs::symlink("a/b/new.txt", upper.join("link")).unwrap();
    let applied = apply(upper, root, &|_| false);
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(read(root, "shared"), "outside\nmore\n");
    assert_eq!(read(outside.path(), "shared"), "outside\n");
    assert_eq!(
        std::fs::metadata(root.join("a/b/new.txt")).unwrap().ino(),
        std::fs::metadata(root.join("a/twin.txt")).unwrap().ino(),
        "one file of two names stays one"
    );
    assert_eq!(
        std::fs::read_link(root.join("link")).unwrap(),
        Path::new("a/b/new.txt")
    );
    let mut written: Vec<String> = applied
        .written
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    written.sort();
    assert_eq!(
        written,
        ["a", "a/b", "a/b/new.txt", "a/twin.txt", "link", "shared"]
    );
}

#[test]
fn an_opaque_folder_replaces_the_old_one_and_modes_come_along() {
    let (upper, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (upper, root) = (upper.path(), root.path());
    write(root, "d/old.txt", "old\n");
    write(root, "d/sub/deep.txt", "deep\n");
    write(root, "kept/k.txt", "k\n");
    write(upper, "d/fresh.txt", "fresh\n");
    write(upper, "kept/added.txt", "added\n");
    std::fs::set_permissions(upper.join("kept"), PermissionsExt::from_mode(0o700)).unwrap();
    rustix::fs::setxattr(
        upper.join("d"),
        "user.overlay.opaque",
        b"y",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    let applied = apply(upper, root, &|_| false);
    assert!(applied.failed.is_empty(), "{applied:?}");
    let names: Vec<String> = std::fs::read_dir(root.join("d"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["fresh.txt"]);
    assert_eq!(
        read(root, "kept/k.txt"),
        "k\n",
        "not opaque: its files stay"
    );
    assert_eq!(read(root, "kept/added.txt"), "added\n");
    let mode = std::fs::metadata(root.join("kept")).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn a_file_where_a_folder_was_and_the_reverse() {
    let (upper, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (upper, root) = (upper.path(), root.path());
    write(root, "was_dir/inner/x", "x\n");
    write(root, "was_file", "file\n");
    // A read-only folder of the workspace is removed all the same.
    std::fs::set_permissions(root.join("was_dir/inner"), PermissionsExt::from_mode(0o500)).unwrap();
    write(upper, "was_dir", "now a file\n");
    write(upper, "was_file/in", "in\n");
    let applied = apply(upper, root, &|_| false);
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(read(root, "was_dir"), "now a file\n");
    assert_eq!(read(root, "was_file/in"), "in\n");
}

#[test]
fn refused_paths_are_left_as_they_were_and_named() {
    let (upper, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (upper, root) = (upper.path(), root.path());
    write(root, ".git/config", "[core]\n");
    write(upper, ".git/config", "[core]\n\thooksPath = /tmp/evil\n");
    write(upper, ".git/HEAD", "ref: refs/heads/main\n");
    let refused = |path: &Path| crate::confine::protect::is_protected(path);
    let applied = apply(upper, root, &refused);
    assert_eq!(read(root, ".git/config"), "[core]\n");
    assert_eq!(read(root, ".git/HEAD"), "ref: refs/heads/main\n");
    assert_eq!(applied.refused, [Path::new(".git/config")]);
    assert!(super::report(&applied).contains(".git/config"));
}

#[test]
fn a_link_in_the_workspace_is_never_followed() {
    let (upper, root, elsewhere) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let (upper, root) = (upper.path(), root.path());
    // Swapped in by someone else while the command ran: `d` is a link now.
    std::os::unix::fs::symlink(elsewhere.path(), root.join("d")).unwrap();
    write(upper, "d/planted.txt", "planted\n");
    let applied = apply(upper, root, &|_| false);
    assert!(!elsewhere.path().join("planted.txt").exists());
    assert!(applied.failed.is_empty(), "{applied:?}");
    // The folder the command made replaced the link.
    assert!(root.join("d").symlink_metadata().unwrap().is_dir());
}

#[test]
fn a_layer_is_removed_when_dropped_with_the_overlays_mode_0_folder() {
    let parent = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let layer = super::Layer::new(parent.path(), root.path()).unwrap();
    let work = layer.dirs().work.join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::set_permissions(&work, PermissionsExt::from_mode(0o000)).unwrap();
    let dir = layer.dirs().upper.parent().unwrap().to_path_buf();
    assert!(dir.exists());
    drop(layer);
    assert!(!dir.exists());
}

#[test]
fn an_apply_cut_short_is_finished_from_what_is_left_without_undoing_what_it_did() {
    let (upper, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (upper, root) = (upper.path(), root.path());
    write(root, "many/old.txt", "old\n");
    for n in 0..4 {
        write(upper, &format!("many/f{n}"), "new\n");
    }
    rustix::fs::setxattr(
        upper.join("many"),
        "user.overlay.opaque",
        b"y",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    // Cut short after two files (the others left, as a kill would).
    let first = apply(upper, root, &|path| {
        path.ends_with("f2") || path.ends_with("f3")
    });
    assert_eq!(first.refused.len(), 2);
    let second = apply(upper, root, &|_| false);
    assert!(second.failed.is_empty(), "{second:?}");
    let mut names: Vec<String> = std::fs::read_dir(root.join("many"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["f0", "f1", "f2", "f3"]);
}

/// A layer's folder as a session of process `pid` names it.
fn layer_of(parent: &Path, pid: u32) -> std::path::PathBuf {
    let name = crate::confine::tmp::private_name();
    let rest = name
        .strip_prefix(&format!("offcode-{}-", std::process::id()))
        .unwrap();
    let dir = parent.join(format!("offcode-{pid}-{rest}"));
    crate::confine::tmp::make_private_dir(&dir).unwrap();
    std::fs::create_dir_all(dir.join("upper")).unwrap();
    std::fs::create_dir_all(dir.join("work/work")).unwrap();
    std::fs::set_permissions(dir.join("work/work"), PermissionsExt::from_mode(0o000)).unwrap();
    dir
}

#[test]
fn layers_left_by_gone_offcodes_are_finished_where_they_were_being_applied_else_removed() {
    let layers = tempfile::tempdir().unwrap();
    let (root, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let gone = (2..4_194_304)
        .map(|k| 4_194_304 - k)
        .find(|n| !Path::new(&format!("/proc/{n}")).exists())
        .unwrap();
    let mark = |dir: &Path, onto: &Path| {
        std::fs::write(dir.join("applying"), onto.as_os_str().as_encoded_bytes()).unwrap();
    };
    let cut = layer_of(layers.path(), gone);
    write(&cut, "upper/rest.txt", "rest\n");
    mark(&cut, root.path());
    let never = layer_of(layers.path(), gone);
    write(&never, "upper/never.txt", "never\n");
    let elsewhere = layer_of(layers.path(), gone);
    mark(&elsewhere, other.path());
    let running = layer_of(layers.path(), std::process::id());
    mark(&running, root.path());
    let said = super::finish_interrupted(layers.path(), root.path());
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("1 written"), "{said:?}");
    assert_eq!(read(root.path(), "rest.txt"), "rest\n");
    assert!(!root.path().join("never.txt").exists());
    assert!(!cut.exists() && !never.exists());
    assert!(elsewhere.exists() && running.exists());
}

#[test]
fn set_user_and_group_id_bits_are_not_carried_over_and_are_named() {
    let (upper, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (upper, root) = (upper.path(), root.path());
    write(upper, "tool", "#!/bin/sh\n");
    write(upper, "plain", "x\n");
    std::fs::set_permissions(upper.join("tool"), PermissionsExt::from_mode(0o6755)).unwrap();
    std::fs::set_permissions(upper.join("plain"), PermissionsExt::from_mode(0o755)).unwrap();
    let applied = apply(upper, root, &|_| false);
    let mode = |name: &str| std::fs::metadata(root.join(name)).unwrap().mode() & 0o7777;
    assert_eq!(mode("tool"), 0o755);
    assert_eq!(mode("plain"), 0o755);
    assert_eq!(applied.unprivileged, [Path::new("tool")]);
    assert!(super::report(&applied).contains("tool"));
}
