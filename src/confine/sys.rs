//! The system calls confinement needs that have no safe wrapper:
//! `setsid` between `fork` and `exec`, `unshare` of new namespaces, `fork` into a new PID namespace, the
//! `ioctl` that brings the private loopback interface up,
//! `mount_setattr`, which makes a whole tree of mounts read-only, and the
//! probes `offcode --version --verbose` and `doctor` report.
//!
//! This is the only module of offcode with `unsafe` code. Each call is made
//! by the confinement helper alone, a freshly executed process that is
//! still single-threaded (a requirement of `unshare(CLONE_NEWUSER)` and of
//! a `fork` that goes on to run Rust code), before it execs the shell.
#![allow(unsafe_code)]

use std::io;

mod filter;
mod notify;
mod probe;
pub use filter::{Refused, install_filter};
pub use notify::{
    Connect, answer, connect_raw, next_connect, read_memory, still_waiting, supervise_connect,
};
pub use probe::{can_unshare, landlock_abi};

/// The namespaces every confined command gets: user, mount, PID and IPC
/// (the host's System V shared memory, semaphores and message queues, and
/// its POSIX message queues, are out of reach). The network's is added
/// when the network is closed.
const NAMESPACES: libc::c_int =
    libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;

/// Which namespaces to create.
pub struct Namespaces {
    /// A private network namespace (only its own loopback).
    pub network: bool,
}

/// Moves the calling process into a new user, mount, PID and IPC namespace
/// (and network namespace when asked), with its own user and group ids
/// mapped to themselves.
///
/// The maps are written by a child forked before the `unshare`: it stays
/// in the original namespace, where it has the right to map uid 0 (a
/// process inside the new namespace cannot map root, only itself as
/// non-root).
pub fn unshare(namespaces: &Namespaces) -> io::Result<()> {
    use std::io::{Read, Write};
    let mut flags = NAMESPACES;
    if namespaces.network {
        flags |= libc::CLONE_NEWNET;
    }
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    let parent = std::process::id();
    let (mut ours, mut theirs) = std::os::unix::net::UnixStream::pair()?;
    let child = match fork()? {
        Forked::Child => {
            drop(ours);
            let mut go = [0_u8];
            let written = theirs.read_exact(&mut go).is_ok()
                && go[0] == 1
                && write_maps(parent, uid, gid).is_ok();
            // SAFETY: `_exit` ends the forked child at once, without running
            // the parent's exit handlers or flushing its buffers twice.
            unsafe { libc::_exit(i32::from(!written)) }
        }
        Forked::Parent(pid) => pid,
    };
    drop(theirs);
    // SAFETY: `unshare` takes plain flags and touches no memory of ours; the
    // helper is single-threaded here, as CLONE_NEWUSER requires.
    let unshared = if unsafe { libc::unshare(flags) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    };
    let _ = ours.write_all(&[u8::from(unshared.is_ok())]);
    let status = rustix::process::waitpid(
        rustix::process::Pid::from_raw(child),
        rustix::process::WaitOptions::empty(),
    )?;
    unshared?;
    match status.and_then(|(_, status)| status.exit_status()) {
        Some(0) => Ok(()),
        _ => Err(io::Error::other(
            "the user and group ids could not be mapped",
        )),
    }
}

fn write_maps(pid: u32, uid: u32, gid: u32) -> io::Result<()> {
    std::fs::write(format!("/proc/{pid}/setgroups"), "deny")?;
    std::fs::write(format!("/proc/{pid}/uid_map"), format!("{uid} {uid} 1"))?;
    std::fs::write(format!("/proc/{pid}/gid_map"), format!("{gid} {gid} 1"))
}

/// Makes `command` start in a new session of its own: it has no
/// controlling terminal, so it cannot open `/dev/tty` or push input into
/// the person's terminal (`TIOCSTI` needs the caller's own controlling
/// terminal, or `CAP_SYS_ADMIN` in the first user namespace). The session
/// is also its process group, which offcode kills when the call ends.
pub fn new_session(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before `exec` and makes
    // one async-signal-safe call, `setsid`, touching no memory of ours.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        });
    }
}

/// Keeps the descriptor `fd` open across the `exec` of `command` (it is
/// close-on-exec in offcode, so that nothing else inherits it).
pub fn keep_open_in_child(command: &mut std::process::Command, fd: i32) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before `exec` and makes
    // one async-signal-safe call, `fcntl` on a copied integer.
    unsafe {
        command.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        });
    }
}

/// Makes `command` die (SIGKILL) when offcode does, however it ends: a
/// command that outlived it would go on changing the workspace unseen,
/// after its step could be recorded. Only for commands spawned from a
/// thread that lives as long as offcode (the signal follows the thread
/// that forked, not the process).
pub fn die_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before `exec` and makes
    // only async-signal-safe calls (`prctl`, `getppid`), touching no
    // memory of ours but a copied integer.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            // offcode may have died before the call above.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(io::Error::other("offcode is gone"));
            }
            Ok(())
        });
    }
}

/// Has `command`'s process tell the reaper (`reaper`: the write end of its
/// input) `+PID` before it runs anything, as the leader of its own group
/// (so after [`new_session`]'s `setsid`), and write its PID to `back`
/// first, for the parent to take the line back if the start fails. A
/// reaper that is gone is done without (SIGPIPE is ignored for the write).
pub fn announce_group(
    command: &mut std::process::Command,
    reaper: std::os::fd::OwnedFd,
    back: std::os::fd::OwnedFd,
) {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before `exec` and makes
    // only async-signal-safe calls (`getpid`, `signal`, `write`), on a
    // line built in a stack buffer; the descriptors it writes to are owned
    // by the closure, so open until the command is dropped.
    unsafe {
        command.pre_exec(move || {
            let mut line = [0u8; 24];
            let length = pid_line(libc::getpid(), &mut line);
            // `+PID\n`: the PID alone goes back, the whole line to the reaper.
            let previous = libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            let _ = libc::write(
                back.as_raw_fd(),
                line[1..length - 1].as_ptr().cast(),
                length - 2,
            );
            let _ = libc::write(reaper.as_raw_fd(), line.as_ptr().cast(), length);
            libc::signal(libc::SIGPIPE, previous);
            Ok(())
        });
    }
}

/// Writes `+PID\n` into `line` without allocating (the forked child may
/// not); its length.
fn pid_line(pid: libc::pid_t, line: &mut [u8; 24]) -> usize {
    let mut digits = [0u8; 12];
    let mut count = 0;
    let mut rest = pid.unsigned_abs();
    loop {
        digits[count] = b'0' + u8::try_from(rest % 10).unwrap_or(0);
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    line[0] = b'+';
    for (at, digit) in digits[..count].iter().rev().enumerate() {
        line[1 + at] = *digit;
    }
    line[1 + count] = b'\n';
    count + 2
}

/// A pidfd of process `pid` (offcode's child), registered with the tokio
/// runtime: readable once the process has exited, which does not reap it.
/// `None` where pidfds are missing (Linux before 5.3) or outside a runtime.
pub fn watch_exit(pid: u32) -> Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
    let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).ok()?;
    tokio::runtime::Handle::try_current().ok()?;
    // SAFETY: an `OwnedFd` is a valid, open descriptor, and its
    // `as_raw_fd` is the same number for as long as the `AsyncFd` owns it.
    unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE).ok()
    }
}

/// Leaves the calling thread no capability, now or after `exec`: every one
/// is dropped from the bounding set, then from the effective, permitted
/// and inheritable sets (which clears the ambient set too).
pub fn drop_capabilities() -> io::Result<()> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    for bit in 0..64 {
        // Numbers past the kernel's last capability are refused: skipped.
        let _ = rustix::thread::remove_capability_from_bounding_set(
            CapabilitySet::from_bits_retain(1 << bit),
        );
    }
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )?;
    Ok(())
}

/// Marks every file descriptor from 3 up close-on-exec, so none that
/// offcode was started with (a shell's `7>>file`, a parent's pipe) reaches
/// what it runs. Kernels before 5.11 (and qemu-user) lack
/// `close_range`'s flag: the open descriptors are then listed and marked
/// one by one.
pub fn close_inherited_on_exec() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: `close_range` takes plain integers and touches no memory.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3_u32,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    } == 0;
    if marked {
        return;
    }
    let open: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in open {
        // SAFETY: `fcntl` on a descriptor number changes only its flags; one
        // that was the directory listing's own and is closed now fails.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// The process the helper's SIGTERM handler kills: PID 1 of the command's
/// namespace, once forked.
static ENDED_ON_TERMINATION: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn end_child(_: libc::c_int) {
    let pid = ENDED_ON_TERMINATION.load(std::sync::atomic::Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: `kill` is async-signal-safe and takes plain integers.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Sets SIGTERM's mask for the calling thread: blocked or not.
fn mask_termination(how: libc::c_int) {
    // SAFETY: the sets are zeroed then filled by `sigemptyset` and
    // `sigaddset`, and outlive the call; no old set is asked for.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGTERM);
        libc::pthread_sigmask(how, &raw const set, std::ptr::null_mut());
    }
}

/// At the helper's start: SIGTERM is how offcode (and offcode's death,
/// through the parent-death signal set here) asks the helper to end the
/// command. It is held back until [`end_child_on_termination`] says what
/// it ends, so that it never kills the helper before the command's
/// namespace is empty.
pub fn hold_termination() {
    mask_termination(libc::SIG_BLOCK);
    // SAFETY: `prctl` with plain integers.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
}

/// Ignores what `pkill offcode`, `killall offcode` or a logout sends to
/// every process named offcode (TERM, HUP, INT): the reaper must live to
/// make the checks after the offcode it outlives. The end of its input
/// ends it, and SIGKILL still does.
pub fn ignore_termination() {
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        // SAFETY: setting a disposition to SIG_IGN installs no handler.
        unsafe {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
}

/// Lets SIGTERM through again with its default action: in the processes
/// that go on to be the command, which must not inherit the block.
pub fn release_termination() {
    mask_termination(libc::SIG_UNBLOCK);
}

/// From now on SIGTERM kills `child` (PID 1 of the command's namespace:
/// the kernel then ends everything in it before `child` can be reaped),
/// and the helper lives on to reap it: the helper's end tells offcode the
/// command and all it started are gone.
pub fn end_child_on_termination(child: i32) -> io::Result<()> {
    ENDED_ON_TERMINATION.store(child, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: `action` is zeroed, then given a handler that makes one
    // async-signal-safe call; it outlives the call that copies it.
    let installed = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = end_child as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&raw mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &raw const action, std::ptr::null_mut())
    };
    if installed != 0 {
        return Err(io::Error::last_os_error());
    }
    release_termination();
    Ok(())
}

/// Who returned from [`fork`].
pub enum Forked {
    /// The new process (PID 1 of the new PID namespace).
    Child,
    /// The original process, with the child's PID.
    Parent(i32),
}

/// Forks the (single-threaded) helper.
pub fn fork() -> io::Result<Forked> {
    // SAFETY: the helper has started no threads, so the child inherits a
    // consistent heap and no locks held by other threads.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Brings the loopback interface `lo` of the current network namespace up.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::unnecessary_cast,
    reason = "ioctl's request is `c_ulong` on glibc and `c_int` on musl; the values fit both"
)]
pub fn loopback_up() -> io::Result<()> {
    let socket = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )?;
    // SAFETY: `ifreq` is plain old data; zeroed is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = libc::c_char::from_ne_bytes([*byte]);
    }
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
    // SAFETY: `request` is a valid `ifreq` that outlives both calls, as
    // SIOCGIFFLAGS and SIOCSIFFLAGS expect.
    unsafe {
        if libc::ioctl(fd, libc::SIOCGIFFLAGS as libc::Ioctl, &raw mut request) != 0 {
            return Err(io::Error::last_os_error());
        }
        let up = libc::c_short::try_from(libc::IFF_UP).unwrap_or(1);
        request.ifr_ifru.ifru_flags |= up;
        if libc::ioctl(fd, libc::SIOCSIFFLAGS as libc::Ioctl, &raw const request) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Makes every mount at and beneath `path` read-only (or writable again).
pub fn read_only_tree(path: &std::path::Path, read_only: bool) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is a NUL-terminated string and `attr` a valid
    // `mount_attr` whose size is passed; both outlive the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_line_is_written_without_allocating() {
        let mut line = [0u8; 24];
        let length = pid_line(4_194_304, &mut line);
        assert_eq!(&line[..length], b"+4194304\n");
        let length = pid_line(7, &mut line);
        assert_eq!(&line[..length], b"+7\n");
    }
}
