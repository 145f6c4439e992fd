//! The session's private temp dir (`TMPDIR` for commands), in the shared
//! temp dir where anyone may have made anything.

use std::path::{Path, PathBuf};

/// `$TMPDIR/offcode-PID-RANDOM`: the session's private temp dir, made by
/// the first command ([`make_private_dir`]).
pub(super) fn private_temp_name() -> PathBuf {
    std::env::temp_dir().join(format!(
        "offcode-{}-{:016x}",
        std::process::id(),
        crate::ids::random_u64()
    ))
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

/// How old a left-behind temp dir must be before it is removed: one whose
/// offcode runs in another PID namespace (which this one cannot see) may
/// still be in use, and is left alone while it is fresh.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_hours(1);

/// Removes, from `parent` (the shared temp dir), the private temp dirs of
/// sessions that are gone: offcode and its reaper killed together leave
/// theirs behind. Only `offcode-PID-HEX` directories (not links) that are
/// ours and private, whose PID is no running process here and that have
/// not changed for an hour; `own` (this session's) never. Returns how many
/// were removed.
pub(super) fn sweep_stale(parent: &Path, own: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let uid = rustix::process::geteuid().as_raw();
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = entry.file_name().to_str().and_then(session_pid) else {
            continue;
        };
        let Ok(found) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let ours = found.is_dir() && found.uid() == uid && found.mode() & 0o777 == 0o700;
        let old = found
            .modified()
            .ok()
            .and_then(|at| now.duration_since(at).ok())
            .is_some_and(|age| age > STALE_AFTER);
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        if ours && old && !alive && path != own && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// [`sweep_stale`] of `own`'s folder, once a run (a read of the shared
/// temp dir and a stat of each `offcode-` name in it: well under a
/// millisecond before the first command).
pub(super) fn sweep_once(own: &Path) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        if let Some(parent) = own.parent() {
            sweep_stale(parent, own);
        }
    });
}

/// The PID in a private temp dir's name, `offcode-PID-` and 16 hex digits.
fn session_pid(name: &str) -> Option<u32> {
    let (pid, random) = name.strip_prefix("offcode-")?.split_once('-')?;
    // Exactly as [`private_temp_name`] writes it: lower-case hex, a PID
    // with no leading zero.
    let hex = random.len() == 16
        && random
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let digits =
        !pid.is_empty() && !pid.starts_with('0') && pid.bytes().all(|b| b.is_ascii_digit());
    if hex && digits {
        pid.parse().ok()
    } else {
        None
    }
}
