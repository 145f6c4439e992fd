//! Small JSON files offcode keeps for itself (what servers are known to
//! do, which folders are trusted): read whole, and changed by a
//! read-modify-write under a lock, replaced whole (written aside, then
//! renamed), so a reader never sees half and two processes lose no change.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The file at `path`, or the default when it is missing or unreadable.
pub fn read<T: DeserializeOwned + Default>(path: &Path) -> T {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Applies `change` to the file at `path` under an exclusive lock (a
/// `.lock` file beside it), reading it again under the lock.
pub fn change<T: DeserializeOwned + Serialize + Default>(
    path: &Path,
    change: impl FnOnce(&mut T),
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        crate::paths::private_dir(dir)?;
    }
    let lock = crate::paths::private_file()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.with_extension("json.lock"))?;
    // A filesystem without locks (some NFS) still gets the change.
    let _ = rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive);
    let mut value = read(path);
    change(&mut value);
    let text = serde_json::to_string_pretty(&value).map_err(std::io::Error::other)?;
    let aside = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let written = crate::paths::private_file()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&aside)
        .and_then(|mut file| std::io::Write::write_all(&mut file, (text + "\n").as_bytes()))
        .and_then(|()| std::fs::rename(&aside, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    written
}
