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
}
