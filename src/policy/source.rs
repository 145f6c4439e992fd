//! The policy in force, re-read when a file it came from changes.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::Policy;

/// A load of the policy: the policy and every file it was read from (or
/// looked for), so a change to any of them is noticed.
pub type Loader = dyn Fn() -> Result<(Policy, Vec<PathBuf>), String> + Send + Sync;

/// The effective policy, resolved again before every tool call: when a
/// config file or the managed file changed (or appeared or went away)
/// since the last load, it is re-read, so an edit applies from the next
/// call. A file that no longer loads refuses calls until it is fixed.
pub struct PolicySource {
    load: Option<Box<Loader>>,
    cache: Mutex<(Vec<Stamp>, Vec<PathBuf>, Arc<Policy>)>,
}

impl fmt::Debug for PolicySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicySource").finish_non_exhaustive()
    }
}

/// What identifies a version of a file: absent, or its inode, size and
/// change times.
type Stamp = Option<(u64, u64, i64, i64, i64, i64)>;

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| {
        (
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    })
}

impl PolicySource {
    /// `policy`, loaded from `files`, re-read through `load` when one of
    /// them changes.
    pub fn new(policy: Policy, files: Vec<PathBuf>, load: Box<Loader>) -> Self {
        let stamps = files.iter().map(|f| stamp(f)).collect();
        Self {
            load: Some(load),
            cache: Mutex::new((stamps, files, Arc::new(policy))),
        }
    }

    /// A policy that never changes (tests, embedding).
    pub fn fixed(policy: Policy) -> Self {
        Self {
            load: None,
            cache: Mutex::new((Vec::new(), Vec::new(), Arc::new(policy))),
        }
    }

    /// The policy in force now.
    pub fn current(&self) -> Result<Arc<Policy>, String> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(load) = &self.load else {
            return Ok(Arc::clone(&cache.2));
        };
        let now: Vec<Stamp> = cache.1.iter().map(|f| stamp(f)).collect();
        if now != cache.0 {
            let (policy, files) = load()?;
            let stamps = files.iter().map(|f| stamp(f)).collect();
            *cache = (stamps, files, Arc::new(policy));
        }
        Ok(Arc::clone(&cache.2))
    }
}
