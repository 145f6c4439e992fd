//! Git directories anywhere in the workspace, checked after each command.
//!
//! A git directory's config and hooks run programs when a person next uses
//! git there, outside any sandbox: `core.fsmonitor` on the next `git
//! status` (which a shell prompt runs on `cd`), a hook on the next commit.
//! The root's are read-only to commands ([`super::protect`]); a command may
//! still create or change any other: a nested repository, a bare one, a
//! worktree, a `.git` file or `commondir` pointing at one it made in its
//! temp dir.
//!
//! So after each command every git directory in the workspace is found,
//! and those the command touched (a file or folder on the way to them
//! changed since it started: the change time, unlike the modification
//! time, cannot be set back) are judged with git's own reading of their
//! config. A key that is not known to run nothing is taken out (the file
//! as it was is kept beside it), a hook is renamed so git never runs it,
//! and a pointer out of the workspace is moved aside. Each is named in the
//! command's result.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::gitconfig::{Setting, harmless, read_config, read_plain_file, render};
use crate::paths::REFUSED;

mod pointer;
mod walk;

/// A tick of the coarse clock file systems stamp changes with, and more:
/// a change made as a moment is taken may be stamped a little before it.
const TICK: std::time::Duration = std::time::Duration::from_millis(50);

/// Checks every git directory in `root` (but the root's own `.git`, which
/// [`super::protect`] keeps) that something changed on the way to since
/// `since`; returns one line per thing undone.
pub fn check(root: &Path, since: SystemTime) -> Vec<String> {
    let since = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
    let found = walk::find(root);
    let mut report = Vec::new();
    report.extend(found.special.iter().map(|path| remove_special(root, path)));
    // What a pointer inside the workspace leads to is a git directory
    // whatever it holds: a `commondir` naming a folder with a config and
    // no `HEAD` gives git that config. The workspace's own `.git` (and its
    // modules) is kept apart.
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let own = real_root.join(".git");
    for pointer in &found.pointers {
        let real = real_root.join(pointer.strip_prefix(root).unwrap_or(pointer));
        let resolved = pointer::resolve(&real_root, &real);
        // The pointer, or anything its answer hangs on (a link re-pointed,
        // a folder swapped), changed.
        let changed = touched(root, pointer, since)
            || resolved
                .hangs_on
                .iter()
                .any(|path| changed_at(path).is_some_and(|time| time >= since));
        if changed {
            let why = match (resolved.odd, &resolved.target) {
                (Some(odd), _) => Some(format!("points git at `{}` and {odd}", resolved.written)),
                (None, None) => Some(format!(
                    "points git at `{}`, outside the workspace",
                    resolved.written
                )),
                (None, Some(_)) => None,
            };
            if let Some(why) = why {
                report.push(move_aside(root, pointer, &why));
                continue;
            }
        }
        if let Some(target) = &resolved.target
            && real_dir(target)
            && !target.starts_with(&own)
            && (changed || touched(&real_root, target, since) || inside_touched(target, since))
        {
            report.extend(check_git_dir(root, target));
        }
    }
    for dir in &found.git_dirs {
        if touched(root, dir, since) || inside_touched(dir, since) {
            report.extend(check_git_dir(root, dir));
            report.extend(special_files(root, dir, false, &mut { SPECIAL_BUDGET }));
        }
    }
    // The workspace's own: its config and hooks are kept apart, but the
    // rest of it is the command's to write.
    let own = root.join(".git");
    if real_dir(&own) {
        report.extend(special_files(root, &own, false, &mut { SPECIAL_BUDGET }));
    }
    report
}

/// The moment to check from, taken before a change: now, less a tick of
/// the coarse clock file systems stamp changes with.
pub fn mark() -> SystemTime {
    SystemTime::now() - TICK
}

/// [`check`], as the line that ends a call's result: what was undone, or
/// nothing. Run after every command, MCP call and file tool that may have
/// written the workspace, and after a revert (which puts back files as
/// they were, a git config offcode had disarmed among them).
pub fn checked(root: &Path, since: SystemTime) -> String {
    let undone = check(root, since);
    if undone.is_empty() {
        return String::new();
    }
    format!(
        "\n[offcode: git settings that would run programs when a person next uses git were undone: {}]",
        undone.join("; ")
    )
}

/// Entries looked at in a git directory's refs for [`special_files`].
const SPECIAL_BUDGET: usize = 2_000;

/// Removes what git would wait on for ever or misread in the git directory
/// `dir`: a FIFO, socket or device among its own entries or beneath
/// `refs`, `info` or `objects/info` (`within_refs`: `dir` is one of them)
/// (git never makes one; a FIFO as `HEAD` hangs every git command there).
/// One line per entry removed.
fn special_files(root: &Path, dir: &Path, within_refs: bool, budget: &mut usize) -> Vec<String> {
    let mut report = Vec::new();
    if !within_refs {
        // `objects/info/alternates`, read on every object look-up.
        report.extend(special_files(root, &dir.join("objects/info"), true, budget));
    }
    for entry in real_entries(dir) {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if within_refs || entry.file_name() == "refs" || entry.file_name() == "info" {
                report.extend(special_files(root, &path, true, budget));
            }
        } else if !kind.is_file() && !kind.is_symlink() {
            report.push(remove_special(root, &path));
        }
    }
    report
}

/// Removes the FIFO, socket or device at `path` where git reads a file;
/// the line that says so.
fn remove_special(root: &Path, path: &Path) -> String {
    let shown = shown(root, path);
    match std::fs::remove_file(path) {
        Ok(()) => format!("`{shown}` is not a plain file (git would wait on it); removed it"),
        Err(error) => format!(
            "`{shown}` is not a plain file (git would wait on it) and could not be removed: {error}"
        ),
    }
}

#[derive(Default)]
struct Found {
    /// FIFOs, sockets and devices where git reads a file of the tree.
    special: Vec<PathBuf>,
    git_dirs: Vec<PathBuf>,
    /// `.git` files (`gitdir: PATH`) and `commondir` files.
    pointers: Vec<PathBuf>,
    /// Folders read (not taken as the last walk found them).
    read: usize,
}

/// Whether `dir` may be a git directory: it holds an entry named `HEAD`,
/// whatever it is (git resolves `objects` and `HEAD` from where it runs,
/// so a link that leads nowhere from here may lead somewhere for git).
fn is_git_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("HEAD")).is_ok()
}

/// A real directory (not a symlink to one) at `path`.
fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// The entries of the real directory `path`; none when it is a symlink:
/// nothing here is ever done to what a link leads to.
fn real_entries(path: &Path) -> Vec<std::fs::DirEntry> {
    if !real_dir(path) {
        return Vec::new();
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().collect())
        .unwrap_or_default()
}

/// The change time of `path` (not followed), in nanoseconds.
fn changed_at(path: &Path) -> Option<i128> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|meta| i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()))
}

/// Whether `path` or a folder on the way to it from `root` changed since
/// `since`: a repository moved in from elsewhere keeps its files' times,
/// but not the folder it was moved into.
fn touched(root: &Path, path: &Path, since: i128) -> bool {
    let Ok(relative) = path.strip_prefix(root) else {
        return true;
    };
    let mut current = root.to_path_buf();
    relative.components().any(|part| {
        current.push(part);
        changed_at(&current).is_none_or(|time| time >= since)
    })
}

/// Whether a file inside the git directory that decides what runs changed.
fn inside_touched(dir: &Path, since: i128) -> bool {
    let hooks = real_entries(&dir.join("hooks"))
        .into_iter()
        .map(|entry| entry.path());
    ["config", "config.worktree", "hooks", "commondir"]
        .iter()
        .map(|name| dir.join(name))
        .chain(hooks)
        .any(|path| changed_at(&path).is_some_and(|time| time >= since))
}

/// Takes the settings that may run programs out of the git directory's
/// config files, and renames its hooks so git never runs them.
fn check_git_dir(root: &Path, dir: &Path) -> Vec<String> {
    let mut report = Vec::new();
    for name in ["config", "config.worktree"] {
        let path = dir.join(name);
        match std::fs::symlink_metadata(&path) {
            // git reads what a link leads to, which may change unseen.
            Ok(meta) if meta.file_type().is_symlink() => {
                report.push(move_aside(
                    root,
                    &path,
                    "is a link git would read its settings through",
                ));
            }
            // Another name could change it unseen: it becomes a file of
            // its own (what it was stays beside it).
            Ok(meta) if meta.is_file() && meta.nlink() > 1 => {
                let content = read_plain_file(&path).unwrap_or_default();
                report.push(move_aside(
                    root,
                    &path,
                    "has another name git's settings could be changed through",
                ));
                if std::fs::write(&path, content).is_ok() {
                    report.extend(check_config(root, &path));
                }
            }
            Ok(meta) if meta.is_file() => report.extend(check_config(root, &path)),
            // A FIFO would hang git (a folder or socket makes it fail).
            Ok(meta) if !meta.is_dir() => {
                report.push(move_aside(
                    root,
                    &path,
                    "is not a plain file (git would wait on it)",
                ));
            }
            _ => {}
        }
    }
    let hooks = dir.join("hooks");
    if std::fs::symlink_metadata(&hooks).is_ok_and(|meta| meta.file_type().is_symlink()) {
        // Moved aside as a link: what it leads to is never touched.
        report.push(move_aside(
            root,
            &hooks,
            "is a link git would run hooks through",
        ));
    }
    for entry in real_entries(&hooks) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".sample") && !name.ends_with(REFUSED) {
            report.push(move_aside(root, &entry.path(), "is a hook git would run"));
        }
    }
    report
}

/// Keeps the harmless settings of a config file and moves the file as it
/// was aside, when it has any other.
fn check_config(root: &Path, path: &Path) -> Option<String> {
    let (settings, unreadable) = match read_config(path) {
        Ok(settings) => (settings, None),
        Err(why) => (Vec::new(), Some(why)),
    };
    let (kept, refused): (Vec<&Setting>, Vec<&Setting>) =
        settings.iter().partition(|setting| harmless(&setting.key));
    if refused.is_empty() && unreadable.is_none() {
        return None;
    }
    let why = unreadable.unwrap_or_else(|| {
        let keys: Vec<String> = refused.iter().map(|s| format!("`{}`", s.key)).collect();
        format!("sets {}, which may run a program", keys.join(", "))
    });
    let aside = aside_path(path);
    let shown = shown(root, path);
    if std::fs::rename(path, &aside).is_err() {
        return Some(format!(
            "`{shown}` {why} and could not be moved aside: do not use git there"
        ));
    }
    let written = std::fs::write(path, render(&kept)).is_ok();
    Some(format!(
        "`{shown}` {why}; kept it as `{}` and {}",
        self::shown(root, &aside),
        if written {
            "left only the harmless settings"
        } else {
            "could not write the harmless settings back"
        }
    ))
}

/// Moves `path` to `PATH.offcode-refused`; the line saying so.
fn move_aside(root: &Path, path: &Path, why: &str) -> String {
    let aside = aside_path(path);
    let shown = shown(root, path);
    match std::fs::rename(path, &aside) {
        Ok(()) => format!(
            "`{shown}` {why}; moved it to `{}`",
            self::shown(root, &aside)
        ),
        Err(error) => format!("`{shown}` {why} and could not be moved aside: {error}"),
    }
}

fn aside_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(REFUSED);
    path.with_file_name(name)
}

fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// What in the git directory `dir` would make git run a program: a
/// setting not known to run nothing (in `config` or `config.worktree`), or
/// a hook. `None` when there is nothing.
pub fn runs_programs(dir: &Path) -> Option<String> {
    for name in ["config", "config.worktree"] {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        match read_config(&path) {
            Ok(settings) => {
                let keys: Vec<String> = settings
                    .iter()
                    .filter(|s| !harmless(&s.key))
                    .map(|s| format!("`{}`", s.key))
                    .collect();
                if !keys.is_empty() {
                    return Some(format!("its {name} sets {}", keys.join(", ")));
                }
            }
            Err(why) => return Some(format!("its {name} {why}")),
        }
    }
    let hooks = dir.join("hooks");
    if std::fs::symlink_metadata(&hooks).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Some("its hooks are a link".to_owned());
    }
    for entry in real_entries(&hooks) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".sample") && !name.ends_with(REFUSED) {
            return Some(format!("it has the hook `{name}`"));
        }
    }
    None
}

/// Whether a config file's text (a new repository's) sets only harmless
/// settings, as git reads it.
pub fn harmless_config(path: &Path) -> bool {
    read_config(path).is_ok_and(|settings| settings.iter().all(|s| harmless(&s.key)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_git_directory_is_found_even_beneath_a_decoy_head() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for git_dir in ["x/.git", "x/sub/.git", "bare.git", "deep/a/b/c/.git"] {
            std::fs::create_dir_all(root.join(git_dir).join("objects")).unwrap();
            std::fs::write(root.join(git_dir).join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        // `x` holds a file named HEAD: it is judged, and so is `x/sub`.
        std::fs::write(root.join("x/HEAD"), "decoy").unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let found = walk::find(root);
        let mut dirs: Vec<String> = found
            .git_dirs
            .iter()
            .map(|d| d.strip_prefix(root).unwrap().display().to_string())
            .collect();
        dirs.sort();
        assert_eq!(
            dirs,
            ["bare.git", "deep/a/b/c/.git", "x", "x/.git", "x/sub/.git"]
        );
    }
}
