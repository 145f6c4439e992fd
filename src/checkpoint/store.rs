//! The content-addressed store of one workspace's checkpoints, under the
//! data dir: `objects/AB/CDEF…` (each file's bytes once, named by their
//! SHA-256; manifests are objects too), `sessions/ID` (the manifests each
//! session recorded, for pruning), `latest` (the last manifest, whose stats
//! let an unchanged file be taken over without reading it), `pinned` (the
//! files offcode's calls wrote, kept even when `.gitignore` leaves them
//! out), `tmp/` (objects being written) and `lock`. Folders are 0700 and files 0600.
//!
//! An object is written to `tmp/` and renamed into place, so a crash leaves
//! at most a stray file in `tmp/`, removed by [`Store::open`], which also
//! checks that the objects of the latest manifest are whole.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::Error;
use super::manifest::{Kind, Manifest, is_hash};

/// One workspace's store.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
}

/// What [`Store::prune`] removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pruned {
    /// The sessions whose checkpoints are gone, oldest first.
    pub sessions: Vec<String>,
    /// Objects removed.
    pub objects: usize,
    /// Bytes freed.
    pub bytes: u64,
}

impl Pruned {
    /// What pruning did, for the user, with the cap in MiB.
    pub fn note(&self, cap_mb: u64) -> String {
        format!(
            "The checkpoints of {} were pruned to keep this workspace's store under {cap_mb} MB ({} freed); their changes can no longer be taken back",
            crate::protocol::count(self.sessions.len(), "older session"),
            crate::protocol::format_size(self.bytes),
        )
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io {
        action,
        path,
        source,
    }
}

/// Creates `dir` (and its parents) private to the user.
pub fn private_dir(dir: &Path) -> Result<(), Error> {
    crate::paths::private_dir(dir).map_err(io("create the folder", dir))
}

/// Writes `bytes` to a new (or emptied) file only the user may read.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = crate::paths::private_file()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.write_all(bytes)
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn hash_of(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest
        .as_ref()
        .iter()
        .fold(String::with_capacity(64), |mut text, byte| {
            let _ = write!(text, "{byte:02x}");
            text
        })
}

/// The file the store's lock is held on, while it is open.
#[derive(Debug)]
pub struct Locked {
    _file: File,
}

impl Store {
    /// Opens (creating) the store in `dir` and repairs what a crash left:
    /// stray files in `tmp/`, and objects of the latest manifest that are
    /// missing or cut short (returned, so their files are read again).
    pub fn open(dir: &Path) -> Result<(Self, Option<(String, Manifest)>), Error> {
        // `checkpoints/` itself, made by an older offcode, too.
        if let Some(all) = dir.parent() {
            private_dir(all)?;
        }
        for sub in ["objects", "sessions", "tmp"] {
            private_dir(&dir.join(sub))?;
        }
        let store = Self {
            dir: dir.to_path_buf(),
        };
        let _lock = store.lock()?;
        if let Ok(stray) = std::fs::read_dir(dir.join("tmp")) {
            for entry in stray.flatten() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let latest = store.read_latest();
        Ok((store, latest))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Holds the store's lock until the value is dropped.
    pub fn lock(&self) -> Result<Locked, Error> {
        let path = self.dir.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(io("open", &path))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io("lock", &path)(e.into()))?;
        Ok(Locked { _file: file })
    }

    /// Records that the checkpoint `old` became `new` (files a step kept
    /// before they changed, [`super::Checkpoints::keep_before`]): a step
    /// cut short, which recorded only `old`, finds it after a crash.
    pub fn record_amended(&self, old: &str, new: &str) -> Result<(), Error> {
        if !super::manifest::is_hash(old) {
            return Ok(());
        }
        let dir = self.dir.join("amended");
        private_dir(&dir)?;
        let temporary = self.dir.join("tmp").join(format!("amended-{old}"));
        let path = dir.join(old);
        write_private(&temporary, new.as_bytes())
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(io("write", &path))
    }

    /// What the checkpoint `old` became, if it was amended.
    pub fn amended(&self, old: &str) -> Option<String> {
        if !super::manifest::is_hash(old) {
            return None;
        }
        std::fs::read_to_string(self.dir.join("amended").join(old))
            .ok()
            .filter(|new| super::manifest::is_hash(new))
    }

    fn object_path(&self, hash: &str) -> PathBuf {
        self.dir.join("objects").join(&hash[..2]).join(&hash[2..])
    }

    /// Whether the object `hash` is kept.
    pub fn contains(&self, hash: &str) -> bool {
        is_hash(hash) && self.object_path(hash).exists()
    }

    /// Keeps `bytes`; returns their hash and whether they were new.
    pub fn put(&self, bytes: &[u8]) -> Result<(String, bool), Error> {
        let hash = hash_of(bytes);
        let path = self.object_path(&hash);
        if path.exists() {
            return Ok((hash, false));
        }
        if let Some(parent) = path.parent() {
            private_dir(parent)?;
        }
        let temporary = self.dir.join("tmp").join(format!(
            "{}-{:012x}",
            std::process::id(),
            crate::ids::random_u64() & 0xffff_ffff_ffff
        ));
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temporary)?;
            file.write_all(bytes)?;
            std::fs::rename(&temporary, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(io("write the object", &path)(e));
        }
        Ok((hash, true))
    }

    /// An object's bytes, checked against their hash.
    pub fn get(&self, hash: &str) -> Result<Vec<u8>, Error> {
        if !is_hash(hash) {
            return Err(Error::Corrupt {
                hash: hash.to_owned(),
                reason: "not a SHA-256".to_owned(),
            });
        }
        let path = self.object_path(hash);
        let bytes = std::fs::read(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Missing {
                    hash: hash.to_owned(),
                }
            } else {
                io("read the object", &path)(e)
            }
        })?;
        if hash_of(&bytes) != hash {
            return Err(Error::Corrupt {
                hash: hash.to_owned(),
                reason: "its bytes do not match their hash".to_owned(),
            });
        }
        Ok(bytes)
    }

    /// A stored manifest, checked.
    pub fn manifest(&self, hash: &str) -> Result<Manifest, Error> {
        let bytes = self.get(hash)?;
        Manifest::parse(&bytes).ok_or_else(|| Error::Corrupt {
            hash: hash.to_owned(),
            reason: "not a manifest".to_owned(),
        })
    }

    /// The paths kept in every checkpoint while they exist, whatever
    /// `.gitignore` says ([`super::Checkpoints::pin`]); one per line.
    pub fn pinned(&self) -> std::collections::BTreeSet<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        std::fs::read(self.dir.join("pinned"))
            .unwrap_or_default()
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| PathBuf::from(std::ffi::OsStr::from_bytes(line)))
            .collect()
    }

    /// Replaces the pinned paths (the caller holds the lock); one path per
    /// line, so a name holding a line break is never pinned.
    pub fn set_pinned(&self, paths: &std::collections::BTreeSet<PathBuf>) -> Result<(), Error> {
        use std::os::unix::ffi::OsStrExt;
        let mut text = Vec::new();
        for path in paths {
            text.extend_from_slice(path.as_os_str().as_bytes());
            text.push(b'\n');
        }
        let pinned = self.dir.join("pinned");
        let temporary = self.dir.join("tmp").join("pinned");
        write_private(&temporary, &text)
            .and_then(|()| std::fs::rename(&temporary, &pinned))
            .map_err(io("write", &pinned))
    }

    /// Records `manifest` as the latest and as one of `session`'s.
    pub fn record(&self, session: &str, manifest: &str) -> Result<(), Error> {
        let latest = self.dir.join("latest");
        let temporary = self.dir.join("tmp").join("latest");
        write_private(&temporary, manifest.as_bytes())
            .and_then(|()| std::fs::rename(&temporary, &latest))
            .map_err(io("write", &latest))?;
        if session.is_empty() || session.contains('/') {
            return Ok(());
        }
        let index = self.dir.join("sessions").join(session);
        let known = std::fs::read_to_string(&index).unwrap_or_default();
        if known.lines().last() == Some(manifest) {
            return Ok(());
        }
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&index)
            .and_then(|mut file| file.write_all(format!("{manifest}\n").as_bytes()))
            .map_err(io("write", &index))
    }

    /// The latest manifest, with every entry whose object is missing or of
    /// the wrong size given an empty hash (so it is read again).
    fn read_latest(&self) -> Option<(String, Manifest)> {
        let hash = std::fs::read_to_string(self.dir.join("latest")).ok()?;
        let hash = hash.trim().to_owned();
        let Ok(mut manifest) = self.manifest(&hash) else {
            let _ = std::fs::remove_file(self.dir.join("latest"));
            return None;
        };
        for entry in &mut manifest.entries {
            if entry.kind == Kind::NotKept {
                continue;
            }
            let path = self.object_path(&entry.hash);
            let whole = std::fs::metadata(&path).is_ok_and(|m| m.len() == entry.size);
            if !whole {
                let _ = std::fs::remove_file(&path);
                entry.hash.clear();
            }
        }
        Some((hash, manifest))
    }

    /// Every object and its size.
    fn objects(&self) -> HashMap<String, u64> {
        let mut found = HashMap::new();
        let Ok(fans) = std::fs::read_dir(self.dir.join("objects")) else {
            return found;
        };
        for fan in fans.flatten() {
            let prefix = fan.file_name().to_string_lossy().into_owned();
            let Ok(objects) = std::fs::read_dir(fan.path()) else {
                continue;
            };
            for object in objects.flatten() {
                let name = format!("{prefix}{}", object.file_name().to_string_lossy());
                if let Ok(meta) = object.metadata() {
                    found.insert(name, meta.len());
                }
            }
        }
        found
    }

    /// The bytes the objects take.
    pub fn size(&self) -> u64 {
        self.objects().values().sum()
    }

    /// The manifests each session recorded, oldest session first.
    fn sessions(&self) -> Vec<(String, Vec<String>)> {
        let Ok(entries) = std::fs::read_dir(self.dir.join("sessions")) else {
            return Vec::new();
        };
        let mut sessions: Vec<(std::time::SystemTime, String, Vec<String>)> = entries
            .flatten()
            .filter_map(|entry| {
                let modified = entry.metadata().ok()?.modified().ok()?;
                let text = std::fs::read_to_string(entry.path()).ok()?;
                let manifests = text.lines().filter(|l| is_hash(l)).map(str::to_owned);
                Some((
                    modified,
                    entry.file_name().to_string_lossy().into_owned(),
                    manifests.collect(),
                ))
            })
            .collect();
        sessions.sort();
        sessions.into_iter().map(|(_, id, m)| (id, m)).collect()
    }

    /// Adds the manifest `hash` and every object it keeps to `wanted`.
    fn needs(&self, hash: String, wanted: &mut HashSet<String>) {
        if let Ok(manifest) = self.manifest(&hash) {
            wanted.extend(
                manifest
                    .entries
                    .into_iter()
                    .filter(|e| e.kind != Kind::NotKept)
                    .map(|e| e.hash),
            );
        }
        wanted.insert(hash);
    }

    /// Removes every object no session's checkpoints need any more (after
    /// sessions were deleted), keeping the latest checkpoint and its files,
    /// which the next one starts from. What it freed.
    pub fn sweep(&self) -> Result<Pruned, Error> {
        let _lock = self.lock()?;
        let mut wanted = HashSet::new();
        let latest = std::fs::read_to_string(self.dir.join("latest")).unwrap_or_default();
        let manifests = self
            .sessions()
            .into_iter()
            .flat_map(|(_, manifests)| manifests)
            .chain(Some(latest.trim().to_owned()).filter(|h| is_hash(h)));
        for hash in manifests {
            self.needs(hash, &mut wanted);
        }
        let mut swept = Pruned::default();
        for (hash, size) in self.objects() {
            if !wanted.contains(&hash) && std::fs::remove_file(self.object_path(&hash)).is_ok() {
                swept.objects += 1;
                swept.bytes += size;
            }
        }
        Ok(swept)
    }

    /// When the objects take more than `cap` bytes, forgets the oldest
    /// sessions' checkpoints (never those `keep` names: the session
    /// starting, and any another offcode has open) until what is left
    /// fits, and removes every object no remaining checkpoint needs.
    pub fn prune(&self, cap: u64, keep: &dyn Fn(&str) -> bool) -> Result<Pruned, Error> {
        let _lock = self.lock()?;
        let sizes = self.objects();
        if sizes.values().sum::<u64>() <= cap {
            return Ok(Pruned::default());
        }
        let sessions = self.sessions();
        // What each session needs: its manifests and their files.
        let mut needs: Vec<(String, HashSet<String>)> = Vec::new();
        for (id, manifests) in sessions {
            let mut wanted = HashSet::new();
            for hash in manifests {
                self.needs(hash, &mut wanted);
            }
            needs.push((id, wanted));
        }
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for (_, wanted) in &needs {
            for hash in wanted {
                *counts.entry(hash.as_str()).or_default() += 1;
            }
        }
        let mut live: u64 = counts.keys().filter_map(|h| sizes.get(*h)).sum();
        let mut pruned = Pruned::default();
        for (id, wanted) in &needs {
            if live <= cap {
                break;
            }
            if keep(id) {
                continue;
            }
            for hash in wanted {
                if let Some(count) = counts.get_mut(hash.as_str()) {
                    *count -= 1;
                    if *count == 0 {
                        live -= sizes.get(hash).copied().unwrap_or(0);
                    }
                }
            }
            pruned.sessions.push(id.clone());
        }
        for id in &pruned.sessions {
            let _ = std::fs::remove_file(self.dir.join("sessions").join(id));
        }
        let latest = std::fs::read_to_string(self.dir.join("latest")).unwrap_or_default();
        for (hash, size) in &sizes {
            let needed = counts.get(hash.as_str()).is_some_and(|c| *c > 0);
            if !needed
                && hash != latest.trim()
                && std::fs::remove_file(self.object_path(hash)).is_ok()
            {
                pruned.objects += 1;
                pruned.bytes += size;
            }
        }
        // The latest manifest's files may be gone now: read them again.
        if !pruned.sessions.is_empty() {
            let _ = std::fs::remove_file(self.dir.join("latest"));
        }
        Ok(pruned)
    }
}
