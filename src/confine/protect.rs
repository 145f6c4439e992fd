//! Files in the workspace that commands must not change: git's config and
//! hooks (they run programs the next time a person uses git, outside any
//! sandbox) and offcode's own config (it decides what later calls may do).
//!
//! Where the kernel allows a private mount namespace they are bind-mounted
//! read-only for the command. Either way, offcode records them before each
//! command and compares after it: whatever changed (written, created,
//! removed, renamed away) is put back, and the change is reported.
//! Restoring goes through the [`Sandbox`], so a symlink the command left
//! cannot lead a restore outside the workspace.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::sandbox::Sandbox;

/// The protected paths, relative to the workspace root.
pub const PROTECTED: &[&str] = &[
    ".git/config",
    ".git/hooks",
    "offcode.jsonc",
    "offcode.json",
    ".offcode",
];

/// Content recorded at most; past it, changes are still detected (by size
/// and time) and reported but cannot be put back.
const MAX_RECORDED: u64 = 8 * 1024 * 1024;
/// Entries walked at most under a protected directory.
const MAX_ENTRIES: usize = 2_000;

/// Whether `relative` (a path inside the workspace) is protected.
pub fn is_protected(relative: &Path) -> bool {
    PROTECTED.iter().any(|p| relative.starts_with(p))
}

/// One entry as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Directory,
    File {
        mode: u32,
        size: u64,
        /// `None` when over [`MAX_RECORDED`].
        content: Option<Vec<u8>>,
        stamp: (i64, i64),
    },
    Symlink(PathBuf),
    Other,
}

/// The protected paths as they were at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    entries: BTreeMap<PathBuf, Entry>,
}

impl Snapshot {
    /// Records the protected paths under `root`.
    pub fn take(root: &Path) -> Self {
        let mut snapshot = Self::default();
        let mut budget = MAX_RECORDED;
        for path in PROTECTED {
            snapshot.record(root, Path::new(path), &mut budget);
        }
        snapshot
    }

    fn record(&mut self, root: &Path, relative: &Path, budget: &mut u64) {
        if self.entries.len() >= MAX_ENTRIES || !real_parents(root, relative) {
            return;
        }
        let full = root.join(relative);
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            return;
        };
        let kind = meta.file_type();
        let entry = if kind.is_dir() {
            self.entries
                .insert(relative.to_path_buf(), Entry::Directory);
            let mut names: Vec<_> = std::fs::read_dir(&full)
                .map(|dir| dir.flatten().map(|e| e.file_name()).collect())
                .unwrap_or_default();
            names.sort();
            for name in names {
                self.record(root, &relative.join(name), budget);
            }
            return;
        } else if kind.is_symlink() {
            Entry::Symlink(std::fs::read_link(&full).unwrap_or_default())
        } else if kind.is_file() {
            let content = (meta.len() <= *budget)
                .then(|| std::fs::read(&full).ok())
                .flatten();
            if let Some(content) = &content {
                *budget -= content.len() as u64;
            }
            Entry::File {
                mode: meta.permissions().mode() & 0o7777,
                size: meta.len(),
                content,
                stamp: (meta.mtime(), meta.mtime_nsec()),
            }
        } else {
            Entry::Other
        };
        self.entries.insert(relative.to_path_buf(), entry);
    }

    /// Compares with `after` and puts back what changed; returns one line
    /// per change, saying whether it was restored.
    pub fn restore(&self, after: &Self, sandbox: &Sandbox) -> Vec<String> {
        let mut report = Vec::new();
        // New entries, deepest first, so directories are empty when removed.
        for (path, entry) in after.entries.iter().rev() {
            if self.entries.contains_key(path) && !replaced(&self.entries[path], entry) {
                continue;
            }
            if self.entries.contains_key(path) {
                continue; // replaced: rewritten below
            }
            let shown = path.display();
            let removed = match entry {
                Entry::Directory => std::fs::remove_dir(sandbox.root().join(path)).is_ok(),
                _ => sandbox.remove(&path.to_string_lossy()).is_ok(),
            };
            report.push(if removed {
                format!("`{shown}` was created; removed it")
            } else {
                format!("`{shown}` was created and could not be removed")
            });
        }
        for (path, entry) in &self.entries {
            let now = after.entries.get(path);
            if now == Some(entry) || now.is_some_and(|now| same_file(entry, now)) {
                continue;
            }
            let shown = path.display();
            let restored = put_back(path, entry, now, sandbox);
            report.push(match (now, restored) {
                (None, true) => format!("`{shown}` was removed; restored it"),
                (Some(_), true) => format!("`{shown}` was changed; restored it"),
                (_, false) => format!("`{shown}` was changed and could not be restored"),
            });
        }
        report
    }
}

/// Whether the kind of entry differs (a file became a directory...).
fn replaced(before: &Entry, after: &Entry) -> bool {
    std::mem::discriminant(before) != std::mem::discriminant(after)
}

/// Two recordings of a file with the same content and mode (the time
/// alone may differ: a `touch` is harmless).
fn same_file(before: &Entry, after: &Entry) -> bool {
    match (before, after) {
        (
            Entry::File {
                mode: m1,
                size: s1,
                content: Some(c1),
                ..
            },
            Entry::File {
                mode: m2,
                size: s2,
                content: Some(c2),
                ..
            },
        ) => m1 == m2 && s1 == s2 && c1 == c2,
        (
            Entry::File {
                mode: m1,
                size: s1,
                content: None,
                stamp: t1,
            },
            Entry::File {
                mode: m2,
                size: s2,
                content: None,
                stamp: t2,
            },
        ) => m1 == m2 && s1 == s2 && t1 == t2,
        _ => false,
    }
}

/// Every parent of `relative` under `root` is a real directory, not a
/// symlink (a protected path reached through a symlink is not walked).
fn real_parents(root: &Path, relative: &Path) -> bool {
    let mut path = root.to_path_buf();
    let mut parts: Vec<_> = relative.components().collect();
    parts.pop();
    parts.into_iter().all(|part| {
        path.push(part);
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_dir())
    })
}

/// Writes `entry` back at `path` (in place of `now`); whether it worked.
fn put_back(path: &Path, entry: &Entry, now: Option<&Entry>, sandbox: &Sandbox) -> bool {
    let text = path.to_string_lossy();
    let full = sandbox.root().join(path);
    // Whatever is there now goes first, unless it is a directory that
    // stays one or a file that is rewritten in place.
    let cleared = match now {
        Some(Entry::Directory) if matches!(entry, Entry::Directory) => return true,
        Some(Entry::Directory) => std::fs::remove_dir(&full).is_ok(),
        Some(Entry::File { .. }) if matches!(entry, Entry::File { .. }) => true,
        Some(_) => sandbox.remove(&text).is_ok(),
        None => true,
    };
    if !cleared {
        return false;
    }
    match entry {
        Entry::Directory => {
            real_parents(sandbox.root(), path) && std::fs::create_dir(&full).is_ok()
        }
        Entry::File {
            mode,
            content: Some(content),
            ..
        } => {
            if !real_parents(sandbox.root(), path) {
                let _ = path
                    .parent()
                    .map(|parent| std::fs::create_dir_all(sandbox.root().join(parent)));
            }
            sandbox.write(&text, content).is_ok()
                && sandbox
                    .open(
                        &text,
                        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW,
                    )
                    .is_ok_and(|fd| {
                        rustix::fs::fchmod(&fd, rustix::fs::Mode::from_raw_mode(*mode)).is_ok()
                    })
        }
        Entry::Symlink(target) => {
            real_parents(sandbox.root(), path) && std::os::unix::fs::symlink(target, &full).is_ok()
        }
        Entry::File { content: None, .. } | Entry::Other => false,
    }
}
