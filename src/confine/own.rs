//! offcode's own binary, held open from the start. The confinement helper
//! and the reaper are offcode run again; started by the binary's path, a
//! command that renames a script over that path (offcode built or unpacked
//! in the workspace, or in a folder `sandbox.writable` lists) would have
//! the next command, the validation run or an MCP server's restart run the
//! script unconfined. A descriptor of the file that was started cannot be
//! redirected by any rename, so offcode runs itself through it
//! (`/proc/self/fd/N`).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static HELD: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// Opens the running binary, once: called first thing in `main`, before
/// any command could run. `None` without `/proc`.
fn held() -> Option<&'static OwnedFd> {
    HELD.get_or_init(|| {
        rustix::fs::open(
            "/proc/self/exe",
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok()
    })
    .as_ref()
}

/// Holds the running binary open, so that later calls of [`program`] run
/// the file that was started whatever is renamed over its path since.
pub fn hold() {
    held();
}

/// The held binary as a path a child can `exec`.
fn held_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The path that runs offcode's own binary in a process this one starts:
/// its held descriptor, else (no `/proc`) the binary's path.
pub fn program() -> PathBuf {
    held().map_or_else(
        || std::env::current_exe().unwrap_or_else(|_| "offcode".into()),
        held_path,
    )
}

/// A command that runs `program`: when it is offcode's held binary, the
/// descriptor stays open in the child until its `exec` (an emulator
/// started through binfmt opens the path after the `exec`); the helper
/// marks it close-on-exec again before it runs anything.
pub fn command(program: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    if let Some(fd) = held()
        && program == held_path(fd)
    {
        super::sys::keep_open_in_child(&mut command, fd.as_raw_fd());
    }
    command
}
