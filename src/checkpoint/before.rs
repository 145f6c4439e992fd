//! The files a command is about to replace or remove, kept in the step's
//! checkpoint before its changes land: a command runs over an overlay of
//! the workspace ([`crate::confine::layer`]), so when it ends the
//! workspace is still as it was, and what the layer will change is known
//! exactly. Kept whatever `.gitignore` and `checkpoints.max_file_mb` say
//! (a `.env`, a large data file), within the session's share of the
//! store; never what `checkpoints.exclude` leaves out (build outputs and
//! package folders, made again by their tools).

use std::path::{Path, PathBuf};

use super::manifest::{Kind, Manifest, by_bytes};
use super::{Checkpoints, Error, walk};

/// What [`Checkpoints::keep_before`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KeptBefore {
    /// Files added to the checkpoint before the step.
    pub kept: usize,
    /// Files that could not be kept: the session's share of the store is
    /// full, or more files than `checkpoints.max_files` were removed at
    /// once.
    pub not_kept: Vec<PathBuf>,
}

impl Checkpoints {
    /// Adds to the last checkpoint (the one before the running step) the
    /// files beneath the paths `touched` (relative; a folder means all it
    /// holds) that it does not keep yet, as they are now. The checkpoint
    /// gets a new id ([`Checkpoints::amended`]).
    pub fn keep_before(&mut self, touched: &[PathBuf]) -> Result<KeptBefore, Error> {
        let mut done = KeptBefore::default();
        let Some((id, manifest)) = self.last.clone() else {
            return Ok(done);
        };
        let mut files = Vec::new();
        for path in touched {
            self.files_beneath(path, &mut files);
        }
        files.retain(|(path, _)| manifest.get(path).is_none_or(|entry| entry.hash.is_empty()));
        if files.is_empty() {
            return Ok(done);
        }
        let limit = self.settings.max_files;
        if files.len() > limit {
            done.not_kept = files
                .split_off(limit)
                .into_iter()
                .map(|(path, _)| path)
                .collect();
        }
        let lock = self.store.lock()?;
        let mut entries = manifest.entries.clone();
        let mut pinned = Vec::new();
        for (path, kind) in files {
            // Read one folder at a time, never through a link.
            let Some((bytes, stat)) = super::read(&self.root, &path, kind) else {
                continue;
            };
            let size = bytes.len() as u64;
            if self.over_share(0, &bytes) {
                done.not_kept.push(path);
                continue;
            }
            let (hash, new) = self.store.put(&bytes)?;
            if new {
                self.added += size;
            }
            let mut entry = walk::entry_of(path.clone(), kind, &stat);
            entry.size = size;
            entry.hash = hash;
            // Named now: a later checkpoint that finds it too large to
            // keep does not say its change cannot be taken back.
            self.named.insert(path.clone());
            if entry.kind == Kind::Link || size <= self.settings.max_file_mb.saturating_mul(1 << 20)
            {
                pinned.push(path.clone());
            }
            match entries.binary_search_by(|e| by_bytes(&e.path, &path)) {
                Ok(at) => entries[at] = entry,
                Err(at) => entries.insert(at, entry),
            }
            done.kept += 1;
        }
        if done.kept > 0 {
            let manifest = Manifest {
                entries,
                folders: manifest.folders.clone(),
            };
            let (new_id, _) = self.store.put(&manifest.render())?;
            self.store.record(&self.session, &new_id)?;
            self.store.record_amended(&id, &new_id)?;
            self.amended.insert(id, new_id.clone());
            self.last = Some((new_id, manifest));
        }
        drop(lock);
        // Kept in the checkpoints after too, while they exist.
        self.pin(&pinned)?;
        Ok(done)
    }

    /// The id the checkpoint `id` has now, amended by
    /// [`Checkpoints::keep_before`] in this run or one that was killed
    /// (itself when it was not).
    pub fn amended(&self, id: &str) -> String {
        let mut id = id.to_owned();
        // A bound: the store's records are files a crash may have left.
        for _ in 0..16 {
            match self
                .amended
                .get(&id)
                .cloned()
                .or_else(|| self.store.amended(&id))
            {
                Some(next) if next != id => id = next,
                _ => break,
            }
        }
        id
    }

    /// The files and links at or beneath `relative` in the workspace, with
    /// their kind, never through a link, leaving out what
    /// `checkpoints.exclude` and offcode itself do; at most
    /// `checkpoints.max_files` past what `out` holds.
    fn files_beneath(&self, relative: &Path, out: &mut Vec<(PathBuf, Kind)>) {
        // Nothing beneath a folder no checkpoint enters (`.git`, an
        // excluded one).
        let mut folder = self.root.clone();
        for part in relative.parent().into_iter().flat_map(Path::components) {
            folder.push(part);
            if self.filter.skips(&folder, true) {
                return;
            }
        }
        let most = out.len() + self.settings.max_files + 1;
        let mut stack = vec![relative.to_path_buf()];
        while let Some(path) = stack.pop() {
            let absolute = self.root.join(&path);
            let Ok(meta) = absolute.symlink_metadata() else {
                continue;
            };
            if self.filter.skips(&absolute, meta.is_dir()) {
                continue;
            }
            if meta.is_dir() {
                if let Ok(entries) = std::fs::read_dir(&absolute) {
                    stack.extend(entries.flatten().map(|entry| path.join(entry.file_name())));
                }
                continue;
            }
            if meta.is_file() {
                out.push((path, Kind::File));
            } else if meta.is_symlink() {
                out.push((path, Kind::Link));
            }
            if out.len() >= most {
                return;
            }
        }
    }
}

impl crate::tools::KeepBefore for super::Shared {
    fn keep_before(&self, touched: &[PathBuf]) -> String {
        match self.with(|checkpoints| checkpoints.keep_before(touched)) {
            Ok((Ok(kept), _)) if kept.not_kept.is_empty() => String::new(),
            Ok((Ok(kept), _)) => {
                let names: Vec<String> = kept
                    .not_kept
                    .iter()
                    .take(5)
                    .map(|path| format!("`{}`", path.display()))
                    .collect();
                format!(
                    "\n[offcode: {} this command replaced or removed could not be kept (the session's share of checkpoints.max_store_mb is full, or more than checkpoints.max_files at once), so a revert cannot bring them back: {}]",
                    crate::protocol::count(kept.not_kept.len(), "file"),
                    names.join(", ")
                )
            }
            Ok((Err(error), _)) => {
                format!("\n[offcode: the files this command replaced could not be kept: {error}]")
            }
            // Checkpoints are off: said when they were turned off.
            Err(_) => String::new(),
        }
    }
}
