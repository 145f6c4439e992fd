//! Finding the git directories of a workspace, again after every call.
//!
//! The first walk reads every folder. It keeps what it read, each folder
//! with its change time; a later walk reads again only a folder whose
//! change time moved since (an entry made, removed, renamed or replaced
//! in it moves it, and no one can set it back), and takes the rest as it
//! was. So a workspace of 20,000 folders (a home directory) costs a
//! `stat` per folder after each call instead of reading each one.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use super::{Found, is_git_dir, real_entries};

/// Files of a working tree git reads on its own (a FIFO there hangs it).
const WORKTREE_FILES: &[&str] = &[".gitattributes", ".gitignore", ".gitmodules", ".mailmap"];

/// Folders kept between walks at most; past it, each walk reads all.
const MAX_KEPT: usize = 400_000;

/// A folder as the last walk read it (64 bytes and its name: a home
/// directory's 20,000 folders keep about 2 MB).
#[derive(Default)]
struct Folder {
    name: Box<OsStr>,
    /// Its change time when read (ns since the epoch); `None`: not read.
    changed: Option<i64>,
    /// It holds an entry named `HEAD`.
    head: bool,
    /// What few folders hold.
    odd: Option<Box<Odd>>,
    /// Its folders, links to folders not among them.
    folders: Box<[Folder]>,
}

/// Entries of a folder git may read, which few folders hold.
#[derive(Default)]
struct Odd {
    /// Its `.git` files and links.
    pointers: Vec<OsString>,
    /// FIFOs, sockets and devices where git reads a working tree file.
    special: Vec<OsString>,
}

/// The last walk of each workspace: its folders, and when it began.
static KEPT: LazyLock<Mutex<HashMap<PathBuf, (i64, Folder)>>> = LazyLock::new(Mutex::default);

/// The git directories, pointers and special files beneath `root`,
/// symlinks not followed.
pub(super) fn find(root: &Path) -> Found {
    let kept = KEPT.lock().ok().and_then(|mut kept| kept.remove(root));
    let began = now().saturating_sub(i64::try_from(super::TICK.as_nanos()).unwrap_or(0));
    let (before, old) = kept.map_or((i64::MIN, None), |(began, tree)| (began, Some(tree)));
    let mut found = Found::default();
    let mut count = 0;
    let tree = walk(root, root, old, before, &mut found, &mut count);
    if count <= MAX_KEPT
        && let Ok(mut kept) = KEPT.lock()
    {
        kept.insert(root.to_path_buf(), (began, tree));
    }
    found
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The change time of what `meta` describes, in ns since the epoch (the
/// end of time when it does not fit: never taken as seen).
fn changed(meta: &std::fs::Metadata) -> i64 {
    meta.ctime()
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(meta.ctime_nsec()))
        .unwrap_or(i64::MAX)
}

/// Walks `dir`, taking `old` (what the walk that began at `before` read
/// there) where it still holds; what it read, for the next walk.
fn walk(
    root: &Path,
    dir: &Path,
    old: Option<Folder>,
    before: i64,
    found: &mut Found,
    count: &mut usize,
) -> Folder {
    *count += 1;
    let name: Box<OsStr> = dir.file_name().unwrap_or_default().into();
    // The change time first: a change while the folder is read moves it
    // past what is kept, so the next walk reads it again.
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return Folder {
            name,
            ..Folder::default()
        };
    };
    if !meta.is_dir() {
        return Folder {
            name,
            ..Folder::default()
        };
    }
    let changed = changed(&meta);
    let mut folder = match old {
        Some(old) if old.changed == Some(changed) && changed < before => old,
        old => {
            found.read += 1;
            read(dir, name, changed, old)
        }
    };
    if let Some(odd) = &folder.odd {
        found
            .special
            .extend(odd.special.iter().map(|name| dir.join(name)));
        found
            .pointers
            .extend(odd.pointers.iter().map(|name| dir.join(name)));
    }
    // The root is one too when it has no `.git`: git, started there,
    // takes a folder holding `HEAD`, `objects` and `refs` for its own.
    let git = folder.head && (dir != root || std::fs::symlink_metadata(root.join(".git")).is_err());
    if git {
        git_dir(dir, found);
    }
    for child in &mut *folder.folders {
        // The workspace's own `.git` is kept apart; a git directory's
        // objects and refs are git's, anything else in it may hold more.
        let skipped = (dir == root && *child.name == *".git")
            || (git
                && ["objects", "refs", "logs", "modules", "worktrees"]
                    .iter()
                    .any(|inner| *child.name == **inner));
        if skipped {
            // Not read now: not trusted later.
            child.changed = None;
            child.folders = Box::default();
            continue;
        }
        let path = dir.join(&*child.name);
        *child = walk(
            root,
            &path,
            Some(std::mem::take(child)),
            before,
            found,
            count,
        );
    }
    folder
}

/// Reads the folder `dir` (changed at `changed`); its folders take what
/// `old` knew of them by name.
fn read(dir: &Path, name: Box<OsStr>, changed: i64, old: Option<Folder>) -> Folder {
    let mut known: HashMap<Box<OsStr>, Folder> = old
        .map(|old| {
            old.folders
                .into_vec()
                .into_iter()
                .map(|folder| (folder.name.clone(), folder))
                .collect()
        })
        .unwrap_or_default();
    let mut folder = Folder {
        name,
        changed: Some(changed),
        ..Folder::default()
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        // Unreadable now: read it again next time.
        folder.changed = None;
        return folder;
    };
    let mut folders = Vec::new();
    let mut odd = Odd::default();
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        folder.head |= name == "HEAD";
        let special = !kind.is_file() && !kind.is_symlink() && !kind.is_dir();
        if special && WORKTREE_FILES.iter().any(|file| name == *file) {
            odd.special.push(name);
        } else if (kind.is_file() || kind.is_symlink()) && name == ".git" {
            odd.pointers.push(name);
        } else if kind.is_dir() {
            let name: Box<OsStr> = name.into();
            let child = known.remove(&name).unwrap_or_default();
            folders.push(Folder { name, ..child });
        }
    }
    folder.folders = folders.into_boxed_slice();
    if !odd.special.is_empty() || !odd.pointers.is_empty() {
        folder.odd = Some(Box::new(odd));
    }
    folder
}

/// Records a git directory and those it holds (submodules' and linked
/// worktrees' own), without walking its objects.
fn git_dir(dir: &Path, found: &mut Found) {
    found.git_dirs.push(dir.to_path_buf());
    // A `commondir` that is a link is one too (git reads through it).
    if std::fs::symlink_metadata(dir.join("commondir")).is_ok() {
        found.pointers.push(dir.join("commondir"));
    }
    for holder in ["modules", "worktrees"] {
        for entry in real_entries(&dir.join(holder)) {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) && is_git_dir(&entry.path()) {
                git_dir(&entry.path(), found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relative(root: &Path, paths: &[PathBuf]) -> Vec<String> {
        let mut shown: Vec<String> = paths
            .iter()
            .map(|path| path.strip_prefix(root).unwrap().display().to_string())
            .collect();
        shown.sort();
        shown
    }

    fn git_dir_at(path: &Path) {
        std::fs::create_dir_all(path.join("objects")).unwrap();
        std::fs::write(path.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    /// Waits out the tick, so a change is stamped after the kept walk
    /// began as a later command's would be.
    fn later() {
        std::thread::sleep(super::super::TICK * 2);
    }

    #[test]
    fn what_changes_after_a_walk_is_found_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for folder in ["a/b/c", "d/e", "f", "g/h"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        git_dir_at(&root.join("f/.git"));
        assert_eq!(relative(root, &find(root).git_dirs), ["f/.git"]);
        later();
        // A HEAD made deep down, a repository moved in from outside (its
        // own times kept), a `.git` file, a folder swapped for a link to
        // a repository, a FIFO as `.gitignore`.
        std::fs::write(root.join("a/b/c/HEAD"), "ref: refs/heads/main\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        git_dir_at(&outside.path().join("moved/.git"));
        std::fs::create_dir_all(outside.path().join("moved/inner")).unwrap();
        git_dir_at(&outside.path().join("moved/inner/.git"));
        std::fs::rename(outside.path().join("moved"), root.join("d/e/moved")).unwrap();
        std::fs::remove_dir(root.join("g/h")).unwrap();
        std::os::unix::fs::symlink(root.join("f"), root.join("g/h")).unwrap();
        std::fs::write(root.join("d/.git"), "gitdir: ../f/.git\n").unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("d/e/.gitignore"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let found = find(root);
        assert_eq!(
            relative(root, &found.git_dirs),
            ["a/b/c", "d/e/moved/.git", "d/e/moved/inner/.git", "f/.git"]
        );
        assert_eq!(relative(root, &found.pointers), ["d/.git"]);
        assert_eq!(relative(root, &found.special), ["d/e/.gitignore"]);
        // Nothing changed: the same, from what was kept.
        let again = find(root);
        assert_eq!(
            relative(root, &again.git_dirs),
            relative(root, &found.git_dirs)
        );
        assert_eq!(relative(root, &again.pointers), ["d/.git"]);
        // Gone again: not found.
        later();
        std::fs::remove_dir_all(root.join("d/e/moved")).unwrap();
        std::fs::remove_file(root.join("a/b/c/HEAD")).unwrap();
        assert_eq!(relative(root, &find(root).git_dirs), ["f/.git"]);
    }

    #[test]
    fn a_walk_reads_again_only_the_folders_that_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for n in 0..50 {
            std::fs::create_dir_all(root.join(format!("m{}/d{n}", n % 5))).unwrap();
        }
        later();
        assert_eq!(find(root).read, 56);
        assert_eq!(find(root).read, 0);
        later();
        std::fs::write(root.join("m1/d1/file"), "x").unwrap();
        std::fs::create_dir(root.join("m2/d2/new")).unwrap();
        // `m1/d1` and `m2/d2`, and `new`, which no walk knew.
        assert_eq!(find(root).read, 3);
        // A folder changed at or after the moment the kept walk began
        // (less the tick) is read again, however soon after that walk.
        later();
        std::fs::write(root.join("m3/d3/file"), "x").unwrap();
        let (_, kept) = KEPT.lock().unwrap().remove(root).unwrap();
        let meta = std::fs::symlink_metadata(root.join("m3/d3")).unwrap();
        let changed = changed(&meta);
        let reads = |kept, before| {
            let mut found = Found::default();
            let kept = walk(root, root, Some(kept), before, &mut found, &mut 0);
            (found.read, kept)
        };
        // Changed since it was read: read.
        let (read, kept) = reads(kept, changed + 1);
        assert_eq!(read, 1);
        // Read as it was, but changed as the kept walk began: read again.
        let (read, kept) = reads(kept, changed);
        assert_eq!(read, 1);
        // Changed before it began: taken as kept.
        let (read, _) = reads(kept, changed + 1);
        assert_eq!(read, 0);
    }
}
