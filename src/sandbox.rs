//! Path resolution beneath the workspace root.
//!
//! This first version checks paths lexically, component by component: it
//! refuses empty paths, NUL bytes, `..` that climbs above the root and
//! absolute paths outside it. It does not yet resolve symlinks in the
//! kernel; `openat2(RESOLVE_BENEATH)` resolution replaces it (see issue 3).
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Component, Path, PathBuf};

/// A path that may not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The path leaves the workspace.
    #[error("outside_workspace: `{path}` is outside the workspace `{root}`")]
    OutsideWorkspace { path: String, root: String },
    /// The path is empty or contains NUL.
    #[error("invalid_path: {reason}")]
    Invalid { reason: String },
}

/// Resolves `path` (relative to `root`, or absolute inside it) to a path
/// beneath `root`.
pub fn resolve(root: &Path, path: &str) -> Result<PathBuf, Error> {
    if path.is_empty() {
        return Err(Error::Invalid {
            reason: "the path is empty".to_owned(),
        });
    }
    if path.contains('\0') {
        return Err(Error::Invalid {
            reason: "the path contains a NUL byte".to_owned(),
        });
    }
    let outside = || Error::OutsideWorkspace {
        path: path.to_owned(),
        root: root.display().to_string(),
    };
    let given = Path::new(path);
    let relative = if given.is_absolute() {
        given.strip_prefix(root).map_err(|_| outside())?
    } else {
        given
    };
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop().ok_or_else(outside)?;
            }
            Component::RootDir | Component::Prefix(_) => return Err(outside()),
        }
    }
    Ok(parts
        .iter()
        .fold(root.to_path_buf(), |acc, part| acc.join(part)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn inside_paths_resolve() {
        let root = Path::new("/w");
        assert_eq!(resolve(root, "a/./b").unwrap(), PathBuf::from("/w/a/b"));
        assert_eq!(resolve(root, "a/../b").unwrap(), PathBuf::from("/w/b"));
        assert_eq!(
            resolve(root, "/w/x y/文件.txt").unwrap(),
            PathBuf::from("/w/x y/文件.txt")
        );
        assert_eq!(resolve(root, ".").unwrap(), PathBuf::from("/w"));
    }

    #[test]
    fn escapes_are_refused() {
        let root = Path::new("/w");
        for path in [
            "..",
            "../w/x",
            "a/../../etc",
            "/etc/passwd",
            "/wx/y",
            "~/../../etc",
        ] {
            assert!(
                matches!(resolve(root, path), Err(Error::OutsideWorkspace { .. })),
                "{path}"
            );
        }
        assert!(matches!(resolve(root, ""), Err(Error::Invalid { .. })));
        assert!(matches!(resolve(root, "a\0b"), Err(Error::Invalid { .. })));
    }
}
