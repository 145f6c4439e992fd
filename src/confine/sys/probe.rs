//! The probes `offcode --version --verbose` and `doctor` report: whether
//! user namespaces can be made, and the kernel's Landlock ABI. Part of the
//! one module with `unsafe` code ([`super`]).
#![allow(unsafe_code)]

use std::io;

/// Whether this process may make the namespaces [`super::unshare`] makes
/// (with a network namespace): a forked child tries and says; else why not.
/// Safe in a threaded process: the child makes two system calls only.
pub fn can_unshare() -> io::Result<()> {
    let flags = super::NAMESPACES | libc::CLONE_NEWNET;
    // SAFETY: the child calls only `unshare` and `_exit`, both
    // async-signal-safe, so a fork of a threaded process is sound.
    let child = match unsafe { libc::fork() } {
        -1 => return Err(io::Error::last_os_error()),
        0 => unsafe {
            let code = if libc::unshare(flags) == 0 {
                0
            } else {
                io::Error::last_os_error().raw_os_error().unwrap_or(255)
            };
            libc::_exit(code.clamp(0, 255))
        },
        pid => pid,
    };
    let status = rustix::process::waitpid(
        rustix::process::Pid::from_raw(child),
        rustix::process::WaitOptions::empty(),
    )?;
    match status.and_then(|(_, status)| status.exit_status()) {
        Some(0) => Ok(()),
        Some(errno) => Err(io::Error::from_raw_os_error(errno)),
        None => Err(io::Error::other("the probe did not end")),
    }
}

/// The Landlock ABI version the kernel offers (`None`: no Landlock).
pub fn landlock_abi() -> Option<i64> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer and size 0 and this flag, the
    // call only returns the version; it touches no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0_usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (abi > 0).then_some(abi)
}
