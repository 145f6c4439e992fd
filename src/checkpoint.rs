//! Checkpoints of the workspace, so everything the agent changes can be
//! taken back.
//!
//! Before and after every step that may change files, [`Checkpoints::take`]
//! records the workspace in a content-addressed store under the data dir
//! (one per workspace, [`store`]): each file's bytes once, and a
//! [`manifest`] of every kept path. An unchanged file is known by its stat
//! and never read again, and an unchanged tree gives the same manifest, so
//! a checkpoint of it stores nothing. [`rewind`] turns the checkpoints of
//! some steps into a plan (what to restore, what was changed by hand since)
//! and carries it out through the sandbox. No git is needed, and the
//! project's `.git` is never entered.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod before;
mod diff;
pub mod manifest;
pub mod rewind;
pub mod store;
mod walk;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use before::KeptBefore;
pub use diff::diff_since;
pub use manifest::{Change, Entry, Kind, Manifest};
pub use store::{Pruned, Store};

/// The `checkpoints` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointSettings {
    /// Whether checkpoints are taken.
    pub enabled: bool,
    /// Files larger than this many MiB are not kept (each is named once).
    pub max_file_mb: u64,
    /// The store of one workspace is kept under this many MiB; the oldest
    /// sessions' checkpoints go first.
    pub max_store_mb: u64,
    /// A workspace with more kept files than this gets no checkpoints (and
    /// is told so), rather than partial ones.
    pub max_files: usize,
    /// Paths left out, gitignore-style, besides `.gitignore`d ones.
    pub exclude: Vec<String>,
    /// Whether `.gitignore`d paths are left out.
    pub skip_ignored: bool,
}

/// Build outputs and caches left out unless the config says otherwise.
pub const DEFAULT_EXCLUDE: &[&str] = &[
    "node_modules/",
    "target/",
    "__pycache__/",
    ".venv/",
    "venv/",
    ".tox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".gradle/",
    ".cache/",
    // Tools and package caches a home directory holds (a workspace that is
    // `$HOME`): reinstalled, never written by hand.
    ".rustup/",
    ".cargo/registry/",
    ".cargo/git/",
    ".pyenv/",
    ".nvm/",
    ".npm/",
    ".m2/",
    "go/pkg/",
    "*.pyc",
    "*.o",
    "*.class",
];

impl CheckpointSettings {
    /// Whether every `exclude` pattern parses (checked at a session's
    /// start, as the store opens in the background).
    pub fn check(&self, root: &Path) -> Result<(), Error> {
        walk::Filter::new(root, &self.exclude, self.skip_ignored, Vec::new())
            .map(|_| ())
            .map_err(Error::Pattern)
    }
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_mb: 5,
            max_store_mb: 2048,
            max_files: 50_000,
            exclude: DEFAULT_EXCLUDE.iter().map(|s| (*s).to_owned()).collect(),
            skip_ignored: true,
        }
    }
}

/// Checkpoint failures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file operation failed.
    #[error("Could not {action} `{path}`")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An object's bytes are not what its name says.
    #[error("The checkpoint object {hash} is damaged: {reason}")]
    Corrupt {
        /// The object.
        hash: String,
        /// How.
        reason: String,
    },
    /// An object is gone (pruned, or lost).
    #[error("The checkpoint object {hash} is gone (pruned, or lost in a crash)")]
    Missing {
        /// The object.
        hash: String,
    },
    /// Too many files to keep.
    #[error(
        "Checkpoints are off for this workspace: it has more than {limit} files to keep (raise `checkpoints.max_files`, or add folders to `checkpoints.exclude`)"
    )]
    TooMany {
        /// The configured limit.
        limit: usize,
    },
    /// An `exclude` pattern does not parse.
    #[error("`checkpoints.exclude` has a pattern that does not parse: {0}")]
    Pattern(String),
}

/// What one [`Checkpoints::take`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The manifest's hash: the checkpoint's id.
    pub id: String,
    /// Files whose bytes were new to the store.
    pub stored: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files seen for the first time in this session that are too large
    /// to keep, with their size.
    pub too_large: Vec<(PathBuf, u64)>,
    /// This session's share of the store (half the cap) filled up in this
    /// checkpoint: from now on changed files are seen but not kept.
    pub share_full: bool,
    /// New files past `checkpoints.max_files`, named but not kept.
    pub not_kept_new: usize,
    /// More files than [`CEILING`] times the limit: only the files of the
    /// last checkpoint (and pinned ones) were looked at; new files are not
    /// in this one at all.
    pub unlisted: bool,
}

/// How many times `checkpoints.max_files` a walk goes on before it looks
/// only at the files the last checkpoint had.
pub const CEILING: usize = 4;

/// The folder of `root`'s store under `data_dir`.
pub fn store_dir(data_dir: &Path, root: &Path) -> PathBuf {
    let key = store::hash_of(root.as_os_str().as_encoded_bytes());
    data_dir.join("checkpoints").join(&key[..16])
}

/// The checkpoints of one workspace, for one session.
#[derive(Debug)]
pub struct Checkpoints {
    store: Store,
    root: PathBuf,
    session: String,
    settings: CheckpointSettings,
    filter: Arc<walk::Filter>,
    /// The last manifest seen, whose stats spare reading unchanged files.
    last: Option<(String, Manifest)>,
    /// Paths already named as too large in this session.
    named: HashSet<PathBuf>,
    /// Bytes this session stored (it may store half the cap at most).
    added: u64,
    /// The session was told its share is full.
    said_full: bool,
    /// Checkpoints given a new id by [`Checkpoints::keep_before`].
    amended: std::collections::HashMap<String, String>,
}

impl Checkpoints {
    /// Opens `root`'s store under `data_dir` for `session`, repairing what
    /// a crash left and pruning to the size cap (what was pruned is
    /// returned); sessions `in_use` says another offcode has open are
    /// never pruned. `kept_out` are offcode's own folders, never kept.
    pub fn open(
        data_dir: &Path,
        root: &Path,
        session: &str,
        settings: CheckpointSettings,
        kept_out: Vec<PathBuf>,
        in_use: &dyn Fn(&str) -> bool,
    ) -> Result<(Self, Pruned), Error> {
        let dir = store_dir(data_dir, root);
        let (store, mut last) = Store::open(&dir)?;
        let workspace = dir.join("workspace");
        if !workspace.exists() {
            let _ = store::write_private(&workspace, root.as_os_str().as_encoded_bytes());
        }
        let keep = |id: &str| id == session || in_use(id);
        let pruned = store.prune(settings.max_store_mb.saturating_mul(1 << 20), &keep)?;
        if !pruned.sessions.is_empty() {
            last = None;
        }
        let filter = walk::Filter::new(root, &settings.exclude, settings.skip_ignored, kept_out)
            .map_err(Error::Pattern)?;
        Ok((
            Self {
                store,
                root: root.to_path_buf(),
                session: session.to_owned(),
                settings,
                filter: Arc::new(filter),
                last,
                named: HashSet::new(),
                added: 0,
                said_full: false,
                amended: std::collections::HashMap::new(),
            },
            pruned,
        ))
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The settings in force.
    pub fn settings(&self) -> &CheckpointSettings {
        &self.settings
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checkpoints from here on are the session `id`'s (after `/new`).
    pub fn set_session(&mut self, id: &str) {
        id.clone_into(&mut self.session);
    }

    /// Keeps `paths` (relative to the root) in every checkpoint from now on,
    /// while they exist, even where `.gitignore` or `checkpoints.exclude`
    /// leaves them out: the files a call is about to write, so that what
    /// offcode did can always be taken back (a `.env`, a file of a folder
    /// ignored whole). Kept in the store, so other sessions and later runs
    /// keep them too. A path that leaves the root, or lies in a folder no
    /// checkpoint enters, is never kept (`walk::lone`).
    pub fn pin(&mut self, paths: &[PathBuf]) -> Result<(), Error> {
        let mut wanted = paths.iter().filter(|path| {
            let plain = path
                .components()
                .all(|part| matches!(part, std::path::Component::Normal(_)));
            plain && !path.as_os_str().as_encoded_bytes().contains(&b'\n')
        });
        let Some(first) = wanted.next() else {
            return Ok(());
        };
        let _lock = self.store.lock()?;
        let mut pinned = self.store.pinned();
        let before = pinned.len();
        pinned.insert(first.clone());
        pinned.extend(wanted.cloned());
        if pinned.len() == before {
            return Ok(());
        }
        // Paths gone and not asked for now are let go.
        pinned
            .retain(|path| paths.contains(path) || self.root.join(path).symlink_metadata().is_ok());
        self.store.set_pinned(&pinned)
    }

    /// Records the workspace as it is now.
    ///
    /// A workspace with more than `checkpoints.max_files` files at its
    /// first checkpoint gets none. Once it has them, files a step adds past
    /// that limit cannot turn them off (a flood of new files would otherwise
    /// take the undo of every other change of the step with it): the files
    /// there before are kept as ever, the new ones past the limit are named
    /// with their size and time but not kept ([`Kind::NotKept`], so a revert
    /// removes them when unchanged), and past [`CEILING`] times the limit
    /// the walk stops and the files of the last checkpoint are looked at
    /// one by one ([`Taken::unlisted`]).
    pub fn take(&mut self) -> Result<Taken, Error> {
        let _lock = self.store.lock()?;
        let (found, folders, unlisted) = self.walk_now()?;
        let max_file = self.settings.max_file_mb.saturating_mul(1 << 20);
        let previous = self.last.as_ref().map(|(_, m)| m);
        // How many files new since the last checkpoint are kept.
        let room = self
            .settings
            .max_files
            .saturating_sub(previous.map_or(0, |m| m.entries.len()));
        let mut new_kept = 0usize;
        let mut taken = Taken {
            id: String::new(),
            stored: 0,
            bytes: 0,
            too_large: Vec::new(),
            share_full: false,
            not_kept_new: 0,
            unlisted,
        };
        let mut entries = Vec::with_capacity(found.len());
        for found in found {
            let mut entry = found.entry;
            let before = previous.and_then(|m| m.get(&entry.path));
            // Past the limit, a file new since the last checkpoint is
            // named, not kept.
            if before.is_none() && previous.is_some() {
                new_kept += 1;
                if new_kept > room {
                    entry.kind = Kind::NotKept;
                    entry.hash = String::new();
                    taken.not_kept_new += 1;
                    entries.push(entry);
                    continue;
                }
            }
            if let Some(before) = before {
                // A file named but not kept stays so while it is unchanged.
                let mut seen = entry.clone();
                if before.kind == Kind::NotKept {
                    seen.kind = Kind::NotKept;
                }
                if (!before.hash.is_empty() || before.kind == Kind::NotKept)
                    && before.same_stat(&seen)
                {
                    seen.hash.clone_from(&before.hash);
                    entries.push(seen);
                    continue;
                }
            }
            if entry.kind == Kind::File && entry.size > max_file {
                entry.kind = Kind::NotKept;
                if self.named.insert(entry.path.clone()) {
                    taken.too_large.push((entry.path.clone(), entry.size));
                }
                entries.push(entry);
                continue;
            }
            let Some((bytes, stat)) = read(&self.root, &entry.path, entry.kind) else {
                continue; // gone since the walk, or a link now on its way
            };
            entry = walk::entry_of(entry.path, entry.kind, &stat);
            entry.size = bytes.len() as u64;
            if entry.kind == Kind::File && entry.size > max_file {
                entry.kind = Kind::NotKept;
                entries.push(entry);
                continue;
            }
            // Past the session's share, what changes is still seen (so a
            // revert knows what the agent touched) but its bytes are not
            // kept.
            if self.over_share(taken.bytes, &bytes) {
                taken.share_full |= !self.said_full;
                self.said_full = true;
                entry.kind = Kind::NotKept;
                entries.push(entry);
                continue;
            }
            let (hash, new) = self.store.put(&bytes)?;
            if new {
                taken.stored += 1;
                taken.bytes += bytes.len() as u64;
            }
            entry.hash = hash;
            entries.push(entry);
        }
        let manifest = Manifest {
            entries,
            folders: Some(folders),
        };
        let (id, _) = self.store.put(&manifest.render())?;
        self.store.record(&self.session, &id)?;
        taken.id.clone_from(&id);
        self.last = Some((id, manifest));
        self.added += taken.bytes;
        Ok(taken)
    }
}

impl Checkpoints {
    /// Whether storing `bytes` too, after `pending` bytes not yet counted,
    /// would take this session past its share of the store (half the cap);
    /// bytes the store holds already cost nothing.
    fn over_share(&self, pending: u64, bytes: &[u8]) -> bool {
        let share = self.settings.max_store_mb.saturating_mul(1 << 20) / 2;
        self.added + pending + bytes.len() as u64 > share
            && !self.store.contains(&store::hash_of(bytes))
    }

    /// The workspace's files and folders now, with the pinned files, and
    /// whether new files went unlisted (past the ceiling).
    fn walk_now(&self) -> Result<(Vec<walk::Found>, Vec<manifest::Folder>, bool), Error> {
        let limit = self.settings.max_files;
        let too_many = || Error::TooMany { limit };
        let (mut found, folders, unlisted) =
            match walk::walk(&self.root, &self.filter, limit.saturating_mul(CEILING)) {
                Ok((found, _)) if found.len() > limit && self.last.is_none() => {
                    return Err(too_many());
                }
                Ok((found, folders)) => (found, folders, false),
                Err(_) => {
                    let (_, last) = self.last.as_ref().ok_or_else(too_many)?;
                    let (found, folders) = walk::known(&self.root, &self.filter, last);
                    (found, folders, true)
                }
            };
        self.add_pinned(&mut found);
        Ok((found, folders, unlisted))
    }

    /// Adds to `found` (sorted by path) the pinned files the walk left out.
    fn add_pinned(&self, found: &mut Vec<walk::Found>) {
        let pinned = self.store.pinned();
        if pinned.is_empty() {
            return;
        }
        let seen: HashSet<&Path> = found.iter().map(|f| f.path.as_path()).collect();
        let extra: Vec<walk::Found> = pinned
            .iter()
            .filter(|path| !seen.contains(path.as_path()))
            .filter_map(|path| walk::lone(&self.root, &self.filter, path))
            .collect();
        if extra.is_empty() {
            return;
        }
        found.extend(extra);
        walk::sort(found);
    }
}

/// A session's checkpoints, shared by its core, opened in the background
/// so that a session's start never waits for the store (its repair check
/// and its size walk take tens of milliseconds for a large one): the first
/// use waits for the opening instead.
#[derive(Debug)]
pub struct Shared {
    slot: std::sync::Mutex<Slot>,
}

type Opened = Result<(Checkpoints, Pruned), Error>;

#[derive(Debug)]
enum Slot {
    Opening(std::thread::JoinHandle<Opened>),
    Open(Box<Checkpoints>),
    Failed(String),
}

impl Shared {
    /// Checkpoints already open.
    pub fn ready(checkpoints: Checkpoints) -> Self {
        Self {
            slot: std::sync::Mutex::new(Slot::Open(Box::new(checkpoints))),
        }
    }

    /// Checkpoints opened by `open` on a thread of their own.
    pub fn opening(open: impl FnOnce() -> Opened + Send + 'static) -> Self {
        let slot = match std::thread::Builder::new()
            .name("checkpoints".to_owned())
            .spawn(open)
        {
            Ok(handle) => Slot::Opening(handle),
            Err(e) => Slot::Failed(format!("could not start opening the store: {e}")),
        };
        Self {
            slot: std::sync::Mutex::new(slot),
        }
    }

    /// Runs `f` on the checkpoints, once they are open; the first call
    /// also returns what opening them pruned. `Err` says why there are
    /// none (the store could not be opened).
    pub fn with<R>(&self, f: impl FnOnce(&mut Checkpoints) -> R) -> Result<(R, Pruned), String> {
        let mut slot = self
            .slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pruned = Pruned::default();
        if matches!(*slot, Slot::Opening(_)) {
            let opening = std::mem::replace(&mut *slot, Slot::Failed(String::new()));
            if let Slot::Opening(handle) = opening {
                *slot = match handle.join() {
                    Ok(Ok((checkpoints, done))) => {
                        pruned = done;
                        Slot::Open(Box::new(checkpoints))
                    }
                    Ok(Err(e)) => Slot::Failed(e.to_string()),
                    Err(_) => Slot::Failed("opening the store failed".to_owned()),
                };
            }
        }
        match &mut *slot {
            Slot::Open(checkpoints) => Ok((f(checkpoints), pruned)),
            Slot::Failed(why) => Err(why.clone()),
            Slot::Opening(_) => Err("the store is still being opened".to_owned()),
        }
    }
}

/// The bytes and stat of `relative` beneath `root` (a link's target for a
/// link), opened one folder at a time without following any link: a
/// folder swapped for a link between the walk and the read (by a process
/// racing the checkpoint) is not read through, so nothing outside the
/// workspace reaches the store. A FIFO is not waited on.
fn read(root: &Path, relative: &Path, kind: Kind) -> Option<(Vec<u8>, std::fs::Metadata)> {
    use rustix::fs::{Mode, OFlags, openat};
    use std::io::Read;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for part in relative.components() {
        match part {
            std::path::Component::Normal(name) => parts.push(name),
            _ => return None,
        }
    }
    let name = parts.pop()?;
    let folder = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    // The root is the person's choice, link or not; beneath it, no link.
    let mut dir = openat(
        rustix::fs::CWD,
        root,
        folder - OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .ok()?;
    for part in parts {
        dir = openat(&dir, part, folder, Mode::empty()).ok()?;
    }
    if kind == Kind::Link {
        let target = rustix::fs::readlinkat(&dir, name, Vec::new()).ok()?;
        let meta = root.join(relative).symlink_metadata().ok()?;
        if !meta.is_symlink() {
            return None;
        }
        return Some((target.into_bytes(), meta));
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mut file = std::fs::File::from(openat(&dir, name, flags, Mode::empty()).ok()?);
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).ok()?;
    Some((bytes, meta))
}

#[cfg(test)]
mod folder_tests;
#[cfg(test)]
mod tests;
