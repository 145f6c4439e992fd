//! What this kernel offers the confinement, found by trying it: told by
//! `offcode --version --verbose` and `offcode doctor`, so an ops team can
//! see on a server what a command there will run under.

use super::sys;

/// The kernel's features the confinement uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// `uname`'s release and machine.
    pub release: String,
    /// The Landlock ABI version (`None`: no Landlock).
    pub landlock: Option<i64>,
    /// Whether unprivileged user namespaces can be made; else why not.
    pub namespaces: Result<(), String>,
    /// Whether a process can be watched through a pidfd (Linux 5.3).
    pub pidfd: bool,
}

impl Kernel {
    /// Tries each feature (a forked child tries the namespaces).
    pub fn probe() -> Self {
        let name = rustix::system::uname();
        let pidfd = rustix::process::pidfd_open(
            rustix::process::getpid(),
            rustix::process::PidfdFlags::empty(),
        )
        .is_ok();
        Self {
            release: format!(
                "{} {} ({})",
                name.sysname().to_string_lossy(),
                name.release().to_string_lossy(),
                name.machine().to_string_lossy()
            ),
            landlock: sys::landlock_abi(),
            namespaces: sys::can_unshare().map_err(|e| e.to_string()),
            pidfd,
        }
    }

    /// One line per feature, saying what it gives a command.
    pub fn lines(&self) -> Vec<String> {
        let landlock = match self.landlock {
            Some(abi) if abi >= 4 => {
                format!("Landlock ABI {abi}: writes kept to the workspace; TCP rules")
            }
            Some(abi) => format!(
                "Landlock ABI {abi}: writes kept to the workspace; no TCP rules (Linux 6.7)"
            ),
            None => "Landlock: none; commands cannot be confined, and each one asks".to_owned(),
        };
        let namespaces = match &self.namespaces {
            Ok(()) => "user namespaces: yes; private mounts, processes, IPC and network".to_owned(),
            Err(why) => {
                format!("user namespaces: no ({why}); Landlock and the seccomp filter alone")
            }
        };
        let pidfd = if self.pidfd {
            "pidfd: yes; a command's processes are stopped before its leader is reaped"
        } else {
            "pidfd: no; a command's processes are stopped by group after it ends"
        };
        vec![
            format!("kernel: {}", self.release),
            landlock,
            namespaces,
            pidfd.to_owned(),
        ]
    }
}
