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
use std::fmt::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::sandbox::Sandbox;

mod wire;

/// The protected paths, relative to the workspace root.
pub const PROTECTED: &[&str] = &[
    ".git/config",
    ".git/hooks",
    // Where git may find another config: the common dir of a linked
    // worktree, per-worktree config, submodules' own repositories.
    ".git/commondir",
    ".git/config.worktree",
    ".git/modules",
    "offcode.jsonc",
    "offcode.json",
    ".offcode",
];

/// Whether a name directly in the home directory is one of the person's
/// own files: hidden (shell and login files, `.ssh`, tools' settings) or
/// `bin`, which a login shell puts on `PATH`.
pub fn is_personal_name(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    name.starts_with('.') || name == "bin"
}

/// How deep beneath a hidden folder of the home directory links are looked
/// for, and how many entries are looked at in all.
const LINK_DEPTH: usize = 4;
const LINK_BUDGET: usize = 20_000;

/// Where the person's files really are when they are links into `within`
/// (a dotfiles repository, stow-style: `~/.bashrc -> dotfiles/bashrc`,
/// `~/.config/offcode -> ../dotfiles/offcode`): those targets are the
/// person's files too.
pub fn personal_targets(home: &Path, within: &[PathBuf]) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    let mut budget = LINK_BUDGET;
    let entries = std::fs::read_dir(home).into_iter().flatten().flatten();
    for entry in entries.filter(|e| is_personal_name(&e.file_name())) {
        links_in(&entry.path(), LINK_DEPTH, &mut budget, &mut |link| {
            if let Ok(target) = std::fs::canonicalize(link)
                && within.iter().any(|dir| target.starts_with(dir))
                && !targets.contains(&target)
            {
                targets.push(target);
            }
        });
    }
    targets
}

/// Calls `found` for `path` if it is a symlink, else for each symlink
/// beneath it, `depth` folders down at most, links not followed.
fn links_in(path: &Path, depth: usize, budget: &mut usize, found: &mut dyn FnMut(&Path)) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.file_type().is_symlink() {
        found(path);
        return;
    }
    if !meta.is_dir() || depth == 0 {
        return;
    }
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        links_in(&entry.path(), depth - 1, budget, found);
    }
}

/// The person's own entries directly in `home`, as they are now.
pub fn personal_names(home: &Path) -> std::collections::BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(home)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name())
        .filter(|name| is_personal_name(name))
        .collect()
}

/// Removes the person's entries a command created in `home` (a new
/// `.profile`, `.ssh`, `bin`...) that were not there `before`: existing
/// ones are read-only to commands, and a new one would be read by the
/// person's next shell. One line per entry removed.
pub fn remove_new_personal(
    home: &Path,
    before: &std::collections::BTreeSet<std::ffi::OsString>,
) -> Vec<String> {
    let mut report = Vec::new();
    for name in personal_names(home).difference(before) {
        let path = home.join(name);
        let removed = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        let shown = path.display();
        report.push(match removed {
            Ok(()) => format!("`{shown}` was created; removed it"),
            Err(error) => format!("`{shown}` was created and could not be removed: {error}"),
        });
    }
    report
}

/// What a command (or an MCP call) may have left for later, checked after
/// it: the person's files it created in the home directory, git settings
/// it left anywhere in the workspace ([`super::gitdirs`]).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Watch {
    started: std::time::SystemTime,
    home: Option<(PathBuf, std::collections::BTreeSet<std::ffi::OsString>)>,
    /// Folders of the home on `PATH` that were not there.
    #[serde(default)]
    missing_path: Vec<PathBuf>,
}

impl Watch {
    /// Starts watching, before the command runs under `confinement`.
    pub fn start(confinement: Option<&super::Confinement>) -> Self {
        let home = confinement
            .and_then(super::Confinement::writable_home)
            .map(|home| (home.to_path_buf(), personal_names(home)));
        let missing_path = home.as_ref().map_or_else(Vec::new, |(home, _)| {
            super::places::missing_path_folders_in(home, std::env::var_os("PATH"))
        });
        Self {
            missing_path,
            started: super::gitdirs::mark(),
            home,
        }
    }

    /// Undoes what the command left in `root` for later; the lines that
    /// say so, to append to its result (empty when nothing was).
    pub fn finish(&self, root: &Path) -> String {
        let mut text = String::new();
        if let Some((home, names)) = &self.home {
            let mut created = remove_new_personal(home, names);
            for dir in &self.missing_path {
                if std::fs::symlink_metadata(dir).is_ok() {
                    let shown = dir.display();
                    created.push(match std::fs::remove_dir_all(dir) {
                        Ok(()) => format!("`{shown}` (on PATH) was created; removed it"),
                        Err(error) => format!(
                            "`{shown}` (on PATH) was created and could not be removed: {error}"
                        ),
                    });
                }
            }
            if !created.is_empty() {
                let _ = write!(
                    text,
                    "\n[offcode: commands may not create the person's shell, login or settings files: {}]",
                    created.join("; ")
                );
            }
        }
        text.push_str(&super::gitdirs::checked(root, self.started));
        text
    }
}

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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Entry {
    Directory,
    File {
        mode: u32,
        size: u64,
        /// `None` when over [`MAX_RECORDED`].
        content: Option<Vec<u8>>,
        stamp: (i64, i64),
    },
    Symlink(#[serde(with = "wire::path_bytes")] PathBuf),
    Other,
}

/// The protected paths as they were at one moment. Kept on disk while a
/// command runs ([`super::after`]), paths as bytes: any name a file may
/// have is recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    #[serde(with = "wire::entries")]
    entries: BTreeMap<PathBuf, Entry>,
}

impl Snapshot {
    /// Records the protected paths under `root`, and `also` (paths in
    /// it that its repository's config names: included files, the hooks
    /// folder).
    pub fn take(root: &Path, also: &[PathBuf]) -> Self {
        let mut snapshot = Self::default();
        let mut budget = MAX_RECORDED;
        // `.git` itself, not its contents: replaced by a file (`gitdir:
        // elsewhere`) it would point git at another config.
        snapshot.record(root, Path::new(".git"), &mut budget, false);
        for path in PROTECTED {
            snapshot.record(root, Path::new(path), &mut budget, true);
        }
        for path in also {
            if let Ok(relative) = path.strip_prefix(root)
                && !relative.as_os_str().is_empty()
                && !is_protected(relative)
            {
                snapshot.record(root, relative, &mut budget, true);
            }
        }
        snapshot
    }

    fn record(&mut self, root: &Path, relative: &Path, budget: &mut u64, recurse: bool) {
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
            if !recurse {
                return;
            }
            let mut names: Vec<_> = std::fs::read_dir(&full)
                .map(|dir| dir.flatten().map(|e| e.file_name()).collect())
                .unwrap_or_default();
            names.sort();
            for name in names {
                self.record(root, &relative.join(name), budget, true);
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
            if self.new_repository(sandbox.root(), path, entry) {
                continue;
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

impl Snapshot {
    /// What `git init` makes where there was no repository: the `.git`
    /// and hooks directories, `*.sample` hooks (git never runs them) and a
    /// config whose every setting runs nothing. Anything else is removed.
    fn new_repository(&self, root: &Path, path: &Path, entry: &Entry) -> bool {
        if self.entries.contains_key(Path::new(".git")) || !path.starts_with(".git") {
            return false;
        }
        match entry {
            Entry::Directory => path == Path::new(".git") || path == Path::new(".git/hooks"),
            Entry::File {
                content: Some(_),
                mode,
                ..
            } => {
                if path.starts_with(".git/hooks") {
                    path.extension().is_some_and(|x| x == "sample")
                        && path.parent() == Some(Path::new(".git/hooks"))
                } else {
                    path == Path::new(".git/config")
                        && mode & 0o111 == 0
                        && super::gitdirs::harmless_config(&root.join(path))
                }
            }
            _ => false,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn repository() -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        std::fs::write(root.join("offcode.jsonc"), "{}").unwrap();
        let sandbox = Sandbox::new(root).unwrap();
        (dir, sandbox)
    }

    #[test]
    fn every_kind_of_change_is_put_back_and_reported() {
        let (dir, sandbox) = repository();
        let root = dir.path();
        let before = Snapshot::take(root, &[]);
        // Without a mount namespace nothing stops these; the check must.
        std::fs::remove_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("evil")).unwrap();
        std::fs::write(root.join(".git"), "gitdir: evil").unwrap();
        std::fs::write(root.join("offcode.jsonc"), "{permission: 'allow'}").unwrap();
        std::fs::create_dir_all(root.join(".offcode")).unwrap();
        std::fs::write(root.join(".offcode/offcode.jsonc"), "{}").unwrap();
        let report = before.restore(&Snapshot::take(root, &[]), &sandbox);
        assert!(root.join(".git").is_dir(), "{report:?}");
        let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
        assert_eq!(read(".git/config"), "[core]\n\tbare = false\n");
        assert_eq!(read(".git/hooks/pre-commit.sample"), "#!/bin/sh\n");
        assert_eq!(read("offcode.jsonc"), "{}");
        assert!(!root.join(".offcode").exists());
        assert_eq!(report.len(), 7, "{report:?}");
        assert!(
            report.iter().all(|line| !line.contains("could not")),
            "{report:?}"
        );
    }

    #[test]
    fn a_hooks_folder_the_config_names_is_put_back_too() {
        let (dir, sandbox) = repository();
        let hooks = dir.path().join(".githooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\n").unwrap();
        let also = [hooks.clone()];
        let before = Snapshot::take(dir.path(), &also);
        std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\nid\n").unwrap();
        std::fs::write(hooks.join("post-checkout"), "#!/bin/sh\nid\n").unwrap();
        let report = before.restore(&Snapshot::take(dir.path(), &also), &sandbox);
        assert_eq!(report.len(), 2, "{report:?}");
        assert_eq!(
            std::fs::read_to_string(hooks.join("pre-commit")).unwrap(),
            "#!/bin/sh\n"
        );
        assert!(!hooks.join("post-checkout").exists());
    }

    #[test]
    fn a_touch_is_not_a_change_and_nothing_is_reported() {
        let (dir, sandbox) = repository();
        let before = Snapshot::take(dir.path(), &[]);
        let config = dir.path().join(".git/config");
        std::fs::write(&config, "[core]\n\tbare = false\n").unwrap();
        assert_eq!(
            before.restore(&Snapshot::take(dir.path(), &[]), &sandbox),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_new_repository_is_kept_only_when_nothing_in_it_runs() {
        for (config, hook, kept) in [
            (
                "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
                "x.sample",
                true,
            ),
            ("[core]\n\tfsmonitor = id\n", "x.sample", false),
            ("[alias]\n\tst = !id\n", "x.sample", false),
            ("[core]\n\tbare = false\n", "pre-commit", false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let sandbox = Sandbox::new(dir.path()).unwrap();
            let before = Snapshot::take(dir.path(), &[]);
            std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
            std::fs::write(dir.path().join(".git/config"), config).unwrap();
            std::fs::write(dir.path().join(".git/hooks").join(hook), "#!/bin/sh\n").unwrap();
            before.restore(&Snapshot::take(dir.path(), &[]), &sandbox);
            let config_kept = dir.path().join(".git/config").exists();
            let hook_kept = dir.path().join(".git/hooks").join(hook).exists();
            assert_eq!((config_kept && hook_kept), kept, "{config} {hook}");
        }
    }
}
