//! The system-call filters of a confined command: the keyrings always
//! closed, and the host's IPC and UNIX sockets as [`Refused`] says.

use std::io;

/// The audit architecture of the native system calls.
#[cfg(target_arch = "x86_64")]
pub(super) const NATIVE_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
pub(super) const NATIVE_ARCH: u32 = 0xC000_00B7;
/// `io_uring_setup`, the same number on every architecture: its rings
/// create sockets without the `socket` call.
const IO_URING_SETUP: u32 = 425;

/// The kernel's keyrings (`add_key`, `keyctl`, `request_key`): not
/// namespaced, so a command could read the person's keys and leave its own.
const KEYRING_CALLS: [libc::c_long; 3] =
    [libc::SYS_add_key, libc::SYS_keyctl, libc::SYS_request_key];
/// System V shared memory, semaphores and message queues, and POSIX
/// message queues: the host's, where no IPC namespace could be made.
const IPC_CALLS: [libc::c_long; 14] = [
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_shmdt,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semctl,
    libc::SYS_semtimedop,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
];

/// Which shared channels of the host the system-call filter closes, beyond
/// the keyrings it always closes.
#[derive(Debug, Clone, Copy)]
pub struct Refused {
    /// `socket(AF_UNIX, ...)` and `io_uring`: where no mount namespace
    /// hides the places daemons listen.
    pub unix_sockets: bool,
    /// System V and POSIX message-queue IPC: where no IPC namespace was
    /// made.
    pub ipc: bool,
    /// UNIX sockets other than stream and seqpacket ones (datagrams, and
    /// `SOCK_RAW`, which is one) and `io_uring`: where connects are
    /// supervised, a datagram's address and a ring's connect would go
    /// around the supervisor.
    pub unix_datagrams: bool,
}

pub(super) const fn statement(code: u32, k: u32) -> libc::sock_filter {
    #[allow(clippy::cast_possible_truncation, reason = "BPF codes fit 16 bits")]
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

pub(super) const fn jump(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    #[allow(clippy::cast_possible_truncation, reason = "BPF codes fit 16 bits")]
    libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    }
}

/// A system call's number as the filter compares it.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "system call numbers are small and positive"
)]
pub(super) const fn number(call: libc::c_long) -> u32 {
    call as u32
}

/// Installs the system-call filter for the caller and all it runs: the
/// keyring calls fail with `ENOSYS` (as on a kernel built without them),
/// and, as `refused` says, the host's IPC and `socket(AF_UNIX, ...)` with
/// `EACCES` (a stream or seqpacket `socketpair` still works). System calls of another
/// architecture (a 32-bit program's) end the process, x32 ones fail, so
/// none goes around the filter.
pub fn install_filter(refused: Refused) -> io::Result<()> {
    const LOAD: u32 = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    const RETURN: u32 = libc::BPF_RET | libc::BPF_K;
    #[allow(clippy::cast_sign_loss, reason = "errno values are small and positive")]
    const DENY: u32 = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
    #[allow(clippy::cast_sign_loss, reason = "errno values are small and positive")]
    const NO_SYSCALL: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    #[allow(clippy::cast_sign_loss, reason = "AF_UNIX is 1")]
    const UNIX: u32 = libc::AF_UNIX as u32;
    let mut filter = vec![
        statement(LOAD, 4), // seccomp_data.arch
        jump(NATIVE_ARCH, 1, 0),
        statement(RETURN, libc::SECCOMP_RET_KILL_PROCESS),
        statement(LOAD, 0), // seccomp_data.nr
        #[allow(clippy::cast_possible_truncation, reason = "BPF codes fit 16 bits")]
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: 0x4000_0000, // the x32 bit
        },
        statement(RETURN, NO_SYSCALL),
    ];
    let mut refuse = |call: u32, answer: u32| {
        filter.push(jump(call, 0, 1));
        filter.push(statement(RETURN, answer));
    };
    for call in KEYRING_CALLS {
        refuse(number(call), NO_SYSCALL);
    }
    if refused.ipc {
        for call in IPC_CALLS {
            refuse(number(call), DENY);
        }
    }
    if refused.unix_sockets || refused.unix_datagrams {
        refuse(IO_URING_SETUP, NO_SYSCALL);
    }
    // Last: they load the arguments over the call's number, and so load
    // the number again first.
    if refused.unix_sockets {
        filter.extend([
            statement(LOAD, 0),
            jump(number(libc::SYS_socket), 0, 3),
            statement(LOAD, 16), // the low half of seccomp_data.args[0]
            jump(UNIX, 0, 1),
            statement(RETURN, DENY),
        ]);
    }
    if refused.unix_sockets || refused.unix_datagrams {
        // Only stream and seqpacket UNIX sockets, made alone or in pairs:
        // a datagram's address (`SOCK_RAW` is one too) is given to
        // `sendto`, never to `connect`, and a pair's socket takes one too.
        #[allow(clippy::cast_sign_loss, reason = "socket types are small")]
        const STREAM: u32 = libc::SOCK_STREAM as u32;
        #[allow(clippy::cast_sign_loss, reason = "socket types are small")]
        const SEQPACKET: u32 = libc::SOCK_SEQPACKET as u32;
        filter.extend([
            statement(LOAD, 0),
            jump(number(libc::SYS_socket), 1, 0),
            jump(number(libc::SYS_socketpair), 0, 7),
            statement(LOAD, 16), // args[0]: the family
            jump(UNIX, 0, 5),
            statement(LOAD, 24), // args[1]: the type, with its flags
            statement(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, 0xf),
            jump(STREAM, 2, 0),
            jump(SEQPACKET, 1, 0),
            statement(RETURN, DENY),
        ]);
    }
    filter.push(statement(RETURN, libc::SECCOMP_RET_ALLOW));
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(io::Error::other)?,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `program` points at `filter`, both alive for the call, which
    // copies them; no_new_privs is set (Landlock's `restrict_self` set it).
    let result = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &raw const program,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
