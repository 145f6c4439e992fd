//! Paths as users write them in config files, and as the kernel reaches
//! them.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};

/// Creates `dir` (and missing parents) readable by the user alone, and
/// makes an existing one so (unless it is shared, like `/tmp`, or not the
/// user's): offcode's sessions, history, checkpoints and logs hold what the
/// person typed and what their files held. Only for offcode's own folders.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    // Never a shared folder (sticky, like /tmp) or someone else's.
    let meta = std::fs::metadata(dir)?;
    let mode = meta.permissions().mode();
    let own = std::os::unix::fs::MetadataExt::uid(&meta) == rustix::process::geteuid().as_raw();
    if mode & 0o077 != 0 && mode & 0o1000 == 0 && own {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Options that create a file readable by the user alone (0600).
pub fn private_file() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.mode(0o600);
    options
}

/// `path` with a leading `~/` made `home`; as written otherwise.
pub fn expand_home(path: &str, home: Option<&str>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => Path::new(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// `path` as the kernel would reach it: `.` and `..` applied in order and
/// every symlink along the existing part followed (a final dangling
/// symlink is kept as it is, so it still counts as existing).
pub fn real_path(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
        }
    }
    out
}
