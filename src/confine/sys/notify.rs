//! The system calls of connect supervision: a seccomp filter that stops
//! every `connect` of the command and hands it to the supervisor (the
//! command's PID 1, [`crate::confine::supervise`]), which reads the
//! address from the command's memory, judges what it names, and makes the
//! connection itself on a copy of the command's socket, so nothing the
//! command changes after the look can change what is reached.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::filter::{NATIVE_ARCH, jump, number, statement};

/// A `connect` the command is stopped in.
#[derive(Debug, Clone, Copy)]
pub struct Connect {
    /// The notification's id, for the answer.
    pub id: u64,
    /// The calling thread, in the supervisor's PID namespace.
    pub pid: u32,
    /// The socket's descriptor number in the caller.
    pub fd: i32,
    /// Where the address is in the caller's memory.
    pub address: u64,
    /// Its length.
    pub length: u32,
}

/// Installs, for the caller and everything it runs, a filter that stops
/// each `connect` until the supervisor answers; the descriptor the
/// supervisor listens on. Needs `no_new_privs` (Landlock set it).
pub fn supervise_connect() -> io::Result<OwnedFd> {
    const LOAD: u32 = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    const RETURN: u32 = libc::BPF_RET | libc::BPF_K;
    let mut filter = [
        statement(LOAD, 4), // seccomp_data.arch
        jump(NATIVE_ARCH, 1, 0),
        statement(RETURN, libc::SECCOMP_RET_KILL_PROCESS),
        statement(LOAD, 0), // seccomp_data.nr
        jump(number(libc::SYS_connect), 0, 1),
        statement(RETURN, libc::SECCOMP_RET_USER_NOTIF),
        statement(RETURN, libc::SECCOMP_RET_ALLOW),
    ];
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(io::Error::other)?,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `program` points at `filter`, both alive for the call, which
    // copies them.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &raw const program,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(io::Error::other)?;
    // SAFETY: the kernel just returned this descriptor, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Waits for the next stopped `connect`.
pub fn next_connect(listener: BorrowedFd<'_>) -> io::Result<Connect> {
    // SAFETY: a zeroed `seccomp_notif` is valid (the kernel wants it so).
    let mut request: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one `seccomp_notif` into `request`.
    let result = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &raw mut request,
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(
        clippy::cast_possible_truncation,
        reason = "connect's first argument is an int, its third a socklen_t"
    )]
    Ok(Connect {
        id: request.id,
        pid: request.pid,
        fd: request.data.args[0] as i32,
        address: request.data.args[1],
        length: request.data.args[2] as u32,
    })
}

/// Whether the caller of `id` still waits (it was not killed, and its PID
/// was not reused): checked after reading its memory.
pub fn still_waiting(listener: BorrowedFd<'_>, id: u64) -> bool {
    // SAFETY: the ioctl reads one u64.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &raw const id,
        ) == 0
    }
}

/// Answers `id`: the `connect` returns 0, or fails with `errno`.
pub fn answer(listener: BorrowedFd<'_>, id: u64, result: Result<(), i32>) -> io::Result<()> {
    let response = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: result.err().map_or(0, |errno| -errno),
        flags: 0,
    };
    // SAFETY: the ioctl reads one `seccomp_notif_resp`.
    let done = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &raw const response,
        )
    };
    if done < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `length` bytes at `address` in process `pid`.
pub fn read_memory(pid: u32, address: u64, length: usize) -> io::Result<Vec<u8>> {
    let mut buffer = vec![0u8; length];
    let local = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: length,
    };
    let remote = libc::iovec {
        iov_base: usize::try_from(address).map_err(io::Error::other)? as *mut libc::c_void,
        iov_len: length,
    };
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    // SAFETY: `local` points at `buffer`, `length` bytes, alive for the
    // call; the kernel reads the other process's memory, not ours.
    let read = unsafe { libc::process_vm_readv(pid, &raw const local, 1, &raw const remote, 1, 0) };
    match usize::try_from(read) {
        Ok(read) if read == length => Ok(buffer),
        Ok(_) => Err(io::Error::from_raw_os_error(libc::EFAULT)),
        Err(_) => Err(io::Error::last_os_error()),
    }
}

/// `connect(socket, address)` with an address as the caller wrote it.
pub fn connect_raw(socket: BorrowedFd<'_>, address: &[u8]) -> Result<(), i32> {
    let length = libc::socklen_t::try_from(address.len()).map_err(|_| libc::EINVAL)?;
    // SAFETY: `address` is `length` readable bytes; the kernel copies them.
    let result = unsafe { libc::connect(socket.as_raw_fd(), address.as_ptr().cast(), length) };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    }
}
