//! Paths as users write them in config files, and as the kernel reaches
//! them.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};

/// Creates `dir` (and missing parents) readable by the user alone, and
/// makes an existing one so (unless it is shared, like `/tmp`, or not the
/// user's): offcode's sessions, history, checkpoints and logs hold what the
/// person typed and what their files held. Only for offcode's own folders.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    // Never a shared folder (sticky, like /tmp) or someone else's.
    let meta = std::fs::metadata(dir)?;
    let mode = meta.permissions().mode();
    let own = std::os::unix::fs::MetadataExt::uid(&meta) == rustix::process::geteuid().as_raw();
    if mode & 0o077 != 0 && mode & 0o1000 == 0 && own {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Options that create a file readable by the user alone (0600).
pub fn private_file() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.mode(0o600);
    options
}

/// `path` with a leading `~/` made `home`; as written otherwise.
pub fn expand_home(path: &str, home: Option<&str>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => Path::new(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// Whether `path` is a file with an execute bit: a program a `PATH`
/// lookup would run.
pub fn runnable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `path` as the kernel would reach it: `.` and `..` applied in order and
/// every symlink along the existing part followed (a final dangling
/// symlink is kept as it is, so it still counts as existing).
pub fn real_path(path: &Path) -> PathBuf {
    // One `readlink` per component, not a `realpath` per prefix: the
    // workspace's checks call this for every path they look at, and
    // musl's `realpath` reads every prefix's link again (O(depth²)).
    let mut links = 0;
    resolve(Path::new("/"), path, &mut links)
}

/// Symlinks followed in one resolution before the rest is taken as it is
/// written (the kernel's own limit, `ELOOP`).
const MAX_LINKS: usize = 40;

/// `path` resolved from `base` (already real): see [`real_path`].
fn resolve(base: &Path, path: &Path, links: &mut usize) -> PathBuf {
    use std::path::Component;
    let mut out = base.to_path_buf();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if *links >= MAX_LINKS {
                    continue;
                }
                let Ok(target) = std::fs::read_link(&out) else {
                    // Not a link, or not there: taken as it is.
                    continue;
                };
                *links += 1;
                let parent = out.parent().unwrap_or(Path::new("/")).to_path_buf();
                let resolved = resolve(&parent, &target, links);
                // A link whose target is not there is kept as the link.
                if std::fs::metadata(&resolved).is_ok() {
                    out = resolved;
                }
            }
        }
    }
    out
}

/// What offcode adds to the name of a file it moved aside rather than let
/// a program read it (`NAME.offcode-refused`).
pub const REFUSED: &str = "offcode-refused";

/// The ignore files the workspace's walks read in each directory.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// Moves aside the ignore files in `dir` that opening would block on or
/// whose reading would never end: a named pipe, a device or a socket, or
/// a link to one or into `/proc`, `/sys` or `/dev`. The walks (the
/// `ignore` crate, as git does) open ignore files with a plain blocking
/// open, and a command may leave `.gitignore -> /dev/ptmx` behind. One is
/// renamed `NAME.offcode-refused` (removed when that name is taken);
/// the names moved.
pub fn refuse_blocking_ignore_files(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut moved = Vec::new();
    for name in IGNORE_FILES {
        let path = dir.join(name);
        // Followed, without opening: a missing or dangling one is no risk.
        let Ok(found) = std::fs::metadata(&path) else {
            continue;
        };
        let kind = found.file_type();
        let special =
            kind.is_fifo() || kind.is_char_device() || kind.is_block_device() || kind.is_socket();
        let system = std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_symlink())
            && ["/proc", "/sys", "/dev"]
                .iter()
                .any(|top| real_path(&path).starts_with(top));
        if special || system {
            let aside = dir.join(format!("{name}.{REFUSED}"));
            if std::fs::rename(&path, &aside).is_err() {
                let _ = std::fs::remove_file(&path);
            }
            moved.push(path);
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The old resolution, a `realpath` per prefix: what `real_path` must
    /// still give.
    fn by_prefix(path: &Path) -> PathBuf {
        use std::path::Component;
        let mut out = PathBuf::from("/");
        for component in path.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => out = PathBuf::from("/"),
                Component::CurDir => {}
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(name) => {
                    out.push(name);
                    if let Ok(real) = std::fs::canonicalize(&out) {
                        out = real;
                    }
                }
            }
        }
        out
    }

    #[test]
    fn a_path_resolves_as_the_kernel_would_reach_it() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/c/file"), "x").unwrap();
        symlink("a/b", root.join("rel")).unwrap();
        symlink(root.join("a/b/c"), root.join("abs")).unwrap();
        symlink("rel", root.join("chain")).unwrap();
        symlink("nowhere/at/all", root.join("dangling")).unwrap();
        symlink("dangling", root.join("to_dangling")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        symlink("../..", root.join("a/b/c/up")).unwrap();
        for case in [
            "rel/c/file",
            "abs/file",
            "chain/c/../c/file",
            "abs/../../b/./c",
            "dangling",
            "dangling/below",
            "to_dangling",
            "loop1/x",
            "a/b/c/up/b/c/file",
            "a/b/c/up/../..",
            "missing/rel/c",
            "rel/missing/../c",
        ] {
            let path = root.join(case);
            assert_eq!(real_path(&path), by_prefix(&path), "{case}");
        }
        assert_eq!(
            real_path(&root.join("chain/c/file")),
            root.join("a/b/c/file")
        );
    }

    #[test]
    fn ignore_files_that_would_block_are_moved_aside() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("shared-ignore"), "target\n").unwrap();
        symlink("/dev/ptmx", root.join(".gitignore")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        symlink("/proc/kmsg", root.join("sub/.ignore")).unwrap();
        symlink(root.join("shared-ignore"), root.join("sub/.gitignore")).unwrap();
        assert_eq!(
            refuse_blocking_ignore_files(root),
            [root.join(".gitignore")]
        );
        assert!(root.join(".gitignore.offcode-refused").is_symlink());
        assert_eq!(
            refuse_blocking_ignore_files(&root.join("sub")),
            [root.join("sub/.ignore")]
        );
        // A link to a plain file of the person's stays.
        assert!(root.join("sub/.gitignore").is_symlink());
        assert!(refuse_blocking_ignore_files(root).is_empty());
    }
}
