//! The session's private temp dir (`TMPDIR` for commands), in the shared
//! temp dir where anyone may have made anything.

use std::path::{Path, PathBuf};

/// `$TMPDIR/offcode-PID-NS-RANDOM`: the session's private temp dir, made
/// by the first command ([`make_private_dir`]). `NS` names the PID
/// namespace `PID` is counted in (0 when unknown), so a sweep judges only
/// dirs whose PID it can look up.
pub(super) fn private_temp_name() -> PathBuf {
    std::env::temp_dir().join(private_name())
}

/// `offcode-PID-NS-RANDOM`: the name of a folder of this session's that
/// [`sweep_stale`] removes once the session is gone (a private temp dir,
/// a command's layer).
pub(super) fn private_name() -> String {
    format!(
        "offcode-{}-{}-{:016x}",
        std::process::id(),
        pid_namespace().unwrap_or(0),
        crate::ids::random_u64()
    )
}

/// The inode of this process's PID namespace.
fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid")
        .ok()
        .map(|meta| meta.ino())
}

/// Makes `dir` (mode 0700), or finds it made already by this session: a
/// directory, not a link, owned by us and private. In a shared temp dir
/// anything else there is someone else's, and is not used.
pub(super) fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            let found = std::fs::symlink_metadata(dir)?;
            let ours = found.is_dir()
                && found.uid() == rustix::process::geteuid().as_raw()
                && found.mode() & 0o777 == 0o700;
            if ours {
                Ok(())
            } else {
                Err(std::io::Error::other("it exists and is not offcode's"))
            }
        }
        Err(error) => Err(error),
    }
}

/// How old a left-behind temp dir must be before it is removed (a session
/// idle for long keeps its dir: it is made again by its next command).
const STALE_AFTER: std::time::Duration = std::time::Duration::from_hours(1);

/// Removes, from `parent` (the shared temp dir), the private temp dirs of
/// sessions that are gone ([`left_by_gone_sessions`]) that have not
/// changed for an hour; `own` (this session's) never. Returns how many
/// were removed.
pub(super) fn sweep_stale(parent: &Path, own: &Path) -> usize {
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for (path, found) in left_by_gone_sessions(parent) {
        let old = found
            .modified()
            .ok()
            .and_then(|at| now.duration_since(at).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old && path != own && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The folders in `parent` that sessions now gone left: offcode and its
/// reaper killed together leave theirs behind. Only `offcode-PID-NS-HEX`
/// directories (not links) that are ours and private, made in this PID
/// namespace (a container sharing the folder counts PIDs of its own: a
/// live session there is no process here), whose PID is no running
/// process ([`super::running`]: a killed offcode not yet reaped is gone).
pub(super) fn left_by_gone_sessions(parent: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    use std::os::unix::fs::MetadataExt;
    let Some(here) = pid_namespace() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let uid = rustix::process::geteuid().as_raw();
    let mut left = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(session_pid)
            .and_then(|(pid, namespace)| (namespace == here).then_some(pid))
        else {
            continue;
        };
        let Ok(found) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let ours = found.is_dir() && found.uid() == uid && found.mode() & 0o777 == 0o700;
        if ours && !super::running(pid) {
            left.push((path, found));
        }
    }
    left
}

/// [`sweep_stale`] of `own`'s folder (the shared temp dir, offcode's
/// folder of layers), once a run for each `swept`.
pub(super) fn sweep_once(own: &Path, swept: &'static std::sync::Once) {
    swept.call_once(|| {
        if let Some(parent) = own.parent() {
            sweep_stale(parent, own);
        }
    });
}

/// The PID and its namespace in a private temp dir's name: `offcode-PID-NS-`
/// and 16 hex digits.
fn session_pid(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix("offcode-")?.splitn(3, '-');
    let (pid, namespace, random) = (parts.next()?, parts.next()?, parts.next()?);
    // Exactly as [`private_temp_name`] writes it: lower-case hex, numbers
    // with no leading zero.
    let hex = random.len() == 16
        && random
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let number = |text: &str| {
        !text.is_empty() && !text.starts_with('0') && text.bytes().all(|b| b.is_ascii_digit())
    };
    if hex && number(pid) && number(namespace) {
        Some((pid.parse().ok()?, namespace.parse().ok()?))
    } else {
        None
    }
}
