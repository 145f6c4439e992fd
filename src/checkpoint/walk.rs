//! The files a checkpoint keeps: the workspace walked without following
//! links, skipping version-control metadata, `.gitignore`d paths, the
//! configured exclusions (build outputs by default) and offcode's own
//! folders; and the files offcode's calls wrote, even where the walk
//! skips them ([`lone`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::manifest::{Entry, Folder, Kind, by_bytes};

/// Folders a checkpoint never enters: version control keeps its own
/// history, and offcode never touches it.
const NEVER: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// What to skip.
#[derive(Debug)]
pub struct Filter {
    excluded: Gitignore,
    gitignored: bool,
    kept_out: Vec<PathBuf>,
}

impl Filter {
    /// `exclude` holds gitignore-style patterns relative to `root`;
    /// `kept_out` absolute paths never entered (offcode's own folders).
    pub fn new(
        root: &Path,
        exclude: &[String],
        gitignored: bool,
        kept_out: Vec<PathBuf>,
    ) -> Result<Self, String> {
        let mut builder = GitignoreBuilder::new(root);
        for pattern in exclude {
            builder
                .add_line(None, pattern)
                .map_err(|e| format!("`{pattern}`: {e}"))?;
        }
        let excluded = builder.build().map_err(|e| e.to_string())?;
        Ok(Self {
            excluded,
            gitignored,
            kept_out,
        })
    }

    /// Whether `path` (absolute, under the root) is left out.
    pub(super) fn skips(&self, path: &Path, is_dir: bool) -> bool {
        self.never_enters(path, is_dir) || self.excluded.matched(path, is_dir).is_ignore()
    }

    /// Whether `path` is never kept, whatever the settings say: a
    /// version-control folder, or offcode's own.
    fn never_enters(&self, path: &Path, is_dir: bool) -> bool {
        let version_control = is_dir
            && path
                .file_name()
                .is_some_and(|name| NEVER.iter().any(|n| name == *n));
        version_control || self.kept_out.iter().any(|own| path.starts_with(own))
    }
}

/// `relative` as a walk would find it if `.gitignore` and
/// `checkpoints.exclude` did not leave it out (a file offcode's own calls
/// wrote, [`super::Checkpoints::pin`]); none when it is gone, is no file or
/// link, leaves the root, lies beneath a link (nothing is read or put back
/// through one), or lies in a folder no checkpoint enters.
pub fn lone(root: &Path, filter: &Filter, relative: &Path) -> Option<Found> {
    let mut parts: Vec<_> = relative.components().collect();
    if parts
        .iter()
        .any(|part| !matches!(part, std::path::Component::Normal(_)))
    {
        return None;
    }
    let name = parts.pop()?;
    let mut path = root.to_path_buf();
    for part in parts {
        path.push(part);
        let meta = path.symlink_metadata().ok()?;
        if !meta.is_dir() || filter.never_enters(&path, true) {
            return None;
        }
    }
    path.push(name);
    let meta = path.symlink_metadata().ok()?;
    let kind = if meta.is_file() {
        Kind::File
    } else if meta.is_symlink() {
        Kind::Link
    } else {
        return None;
    };
    if filter.never_enters(&path, false) {
        return None;
    }
    Some(Found {
        path: relative.to_path_buf(),
        entry: entry_of(relative.to_path_buf(), kind, &meta),
    })
}

/// A file found, with what `lstat` said.
/// The files and folders of `last` as they are now, each looked at by its
/// path: for a workspace past the walk's ceiling, where new files are not
/// listed but the ones a checkpoint had are still followed.
pub fn known(root: &Path, filter: &Filter, last: &super::Manifest) -> (Vec<Found>, Vec<Folder>) {
    let mut found: Vec<Found> = last
        .entries
        .iter()
        .filter_map(|entry| lone(root, filter, &entry.path))
        .collect();
    sort(&mut found);
    let folders = last
        .folders
        .iter()
        .flatten()
        .filter_map(|folder| {
            let meta = root.join(&folder.path).symlink_metadata().ok()?;
            meta.is_dir().then(|| Folder {
                path: folder.path.clone(),
                mode: meta.mode() & 0o7777,
            })
        })
        .collect();
    (found, folders)
}

#[derive(Debug)]
pub struct Found {
    /// Relative to the root.
    pub path: PathBuf,
    /// The entry without its hash.
    pub entry: Entry,
}

/// The stat fields of `meta` as an entry of `kind` (hash left empty).
pub fn entry_of(path: PathBuf, kind: Kind, meta: &std::fs::Metadata) -> Entry {
    let nanos = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
    Entry {
        path,
        kind,
        mode: meta.mode() & 0o7777,
        size: meta.size(),
        mtime: nanos(meta.mtime(), meta.mtime_nsec()),
        ctime: nanos(meta.ctime(), meta.ctime_nsec()),
        inode: meta.ino(),
        hash: String::new(),
    }
}

/// Every kept regular file and symlink under `root`, and every folder
/// entered (the root not among them), each sorted by path; `Err` with the
/// count reached when there are more than `limit` files.
pub fn walk(
    root: &Path,
    filter: &std::sync::Arc<Filter>,
    limit: usize,
) -> Result<(Vec<Found>, Vec<Folder>), usize> {
    if filter.gitignored {
        crate::paths::refuse_blocking_ignore_files(root);
    }
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_global(false)
        .git_ignore(filter.gitignored)
        .git_exclude(filter.gitignored)
        .require_git(false)
        .follow_links(false);
    let skip = std::sync::Arc::clone(filter);
    builder.filter_entry(move |entry| {
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let kept = !skip.skips(entry.path(), is_dir);
        if kept && is_dir && skip.gitignored {
            crate::paths::refuse_blocking_ignore_files(entry.path());
        }
        kept
    });
    let mut found = Vec::new();
    let mut folders = Vec::new();
    for entry in builder.build().flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if let Ok(relative) = entry.path().strip_prefix(root)
                && !relative.as_os_str().is_empty()
                && let Ok(meta) = entry.path().symlink_metadata()
            {
                folders.push(Folder {
                    path: relative.to_path_buf(),
                    mode: meta.mode() & 0o7777,
                });
            }
            continue;
        }
        let kind = if kind.is_file() {
            Kind::File
        } else if kind.is_symlink() {
            Kind::Link
        } else {
            continue;
        };
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        found.push(Found {
            path: relative.to_path_buf(),
            entry: entry_of(relative.to_path_buf(), kind, &meta),
        });
        if found.len() > limit {
            return Err(found.len());
        }
    }
    sort(&mut found);
    folders.sort_by(|a, b| by_bytes(&a.path, &b.path));
    Ok((found, folders))
}

/// Puts `found` in the manifest's order: by path, byte for byte.
pub fn sort(found: &mut [Found]) {
    found.sort_by(|a, b| {
        a.path
            .as_os_str()
            .as_encoded_bytes()
            .cmp(b.path.as_os_str().as_encoded_bytes())
    });
}
