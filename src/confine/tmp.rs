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
