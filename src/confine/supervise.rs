//! Connect supervision: no UNIX socket of a process outside the sandbox
//! can be reached, whatever its name. Hiding the places daemons listen
//! judged paths: a socket bound by a relative name, renamed after binding,
//! or given a second name by a hard link was reached. So every `connect`
//! of the command stops (a seccomp filter, [`sys::supervise_connect`]) and
//! its PID 1 judges the socket itself: the path is opened as the command
//! would reach it, and the socket file must be one a socket of the
//! sandbox is listening on (found with `sock_diag` in the sandbox's
//! network namespace, and held by a process of its PID namespace). PID 1
//! then connects a copy of the command's socket (`pidfd_getfd`) through
//! the descriptor it judged, so no rename after the look changes what is
//! reached. Other families are connected as asked, off the loop.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::sys;

/// The `unix_diag_req` show flag for the socket file's device and inode.
const UDIAG_SHOW_VFS: u32 = 0x2;
/// The attribute carrying them.
const UNIX_DIAG_VFS: u16 = 1;
/// `SOCK_DIAG_BY_FAMILY`.
const SOCK_DIAG_BY_FAMILY: u16 = 20;

/// Answers the command's connects until `command` (its PID, a child of
/// the caller) ends; its exit code. Orphans are reaped on the way.
/// `private_network`: the sandbox has a network namespace of its own.
pub(super) fn run(listener: OwnedFd, command: i32, private_network: bool) -> u8 {
    let listener = Arc::new(listener);
    let pid = rustix::process::Pid::from_raw(command);
    let pidfd = pid.and_then(|pid| {
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
    });
    let mut listening = true;
    loop {
        if let Some(status) = reap(command) {
            return status;
        }
        let mut fds = Vec::with_capacity(2);
        if listening {
            fds.push(rustix::event::PollFd::new(
                listener.as_ref(),
                rustix::event::PollFlags::IN,
            ));
        }
        if let Some(pidfd) = &pidfd {
            fds.push(rustix::event::PollFd::new(
                pidfd,
                rustix::event::PollFlags::IN,
            ));
        }
        // Without a pidfd (kernels before 5.3) the command's end is looked
        // for every 50 ms.
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 50_000_000,
        };
        let waited = rustix::event::poll(
            &mut fds,
            if pidfd.is_some() {
                None
            } else {
                Some(&timeout)
            },
        );
        if waited.is_err() {
            continue;
        }
        let ready = listening && fds[0].revents().intersects(rustix::event::PollFlags::IN);
        let gone = listening
            && fds[0]
                .revents()
                .intersects(rustix::event::PollFlags::HUP | rustix::event::PollFlags::ERR);
        if ready && let Ok(connect) = sys::next_connect(listener.as_fd()) {
            handle(&listener, connect, private_network);
        } else if gone {
            listening = false;
        }
    }
}

/// Reaps every child that has ended; the command's exit code once it has.
fn reap(command: i32) -> Option<u8> {
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::NOHANG) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get() == command => {
                return Some(super::helper::exit_code(status));
            }
            Ok(Some(_)) | Err(rustix::io::Errno::INTR) => {}
            Ok(None) => return None,
            // No child left: the command is gone.
            Err(_) => return Some(1),
        }
    }
}

/// Judges one stopped `connect` and answers it.
fn handle(listener: &Arc<OwnedFd>, connect: sys::Connect, private_network: bool) {
    let result = judge(listener, connect, private_network);
    if let Some(result) = result {
        let _ = sys::answer(listener.as_fd(), connect.id, result);
    }
}

/// The `connect`'s result, or `None` when a thread answers it later.
fn judge(
    listener: &Arc<OwnedFd>,
    connect: sys::Connect,
    private_network: bool,
) -> Option<Result<(), i32>> {
    let length = usize::try_from(connect.length)
        .unwrap_or(usize::MAX)
        .min(std::mem::size_of::<libc::sockaddr_storage>());
    let address = match sys::read_memory(connect.pid, connect.address, length) {
        Ok(address) => address,
        Err(e) => return Some(Err(e.raw_os_error().unwrap_or(libc::EFAULT))),
    };
    let socket = match socket_of(connect.pid, connect.fd) {
        Ok(socket) => socket,
        Err(errno) => return Some(Err(errno)),
    };
    // Read before the caller could have gone and its PID been reused.
    if !sys::still_waiting(listener.as_fd(), connect.id) {
        return None;
    }
    let family = rustix::net::sockopt::socket_domain(&socket);
    let target = if family == Ok(rustix::net::AddressFamily::UNIX) {
        match unix(connect.pid, &address, private_network) {
            Ok(target) => target,
            Err(errno) => return Some(Err(errno)),
        }
    } else {
        // The network is the namespace's and Landlock's to judge.
        Target::Address(address)
    };
    // A connect can take its time (a full backlog, a slow host): it is
    // made off the loop, which goes on answering the others; so many at
    // once are refused, as a kernel out of resources would.
    if IN_FLIGHT.fetch_add(1, Ordering::SeqCst) >= MAX_IN_FLIGHT {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
        return Some(Err(libc::EAGAIN));
    }
    let listener = Arc::clone(listener);
    let id = connect.id;
    let spawned = std::thread::Builder::new().spawn(move || {
        let result = match target {
            Target::Address(address) => sys::connect_raw(socket.as_fd(), &address),
            Target::Judged(file) => through(&socket, &file),
        };
        let _ = sys::answer(listener.as_fd(), id, result);
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    });
    if spawned.is_ok() {
        None
    } else {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
        Some(Err(libc::EAGAIN))
    }
}

/// Connects under way off the loop, and how many may be.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
const MAX_IN_FLIGHT: usize = 256;

/// What a judged connect goes to.
enum Target {
    /// The address as the command wrote it.
    Address(Vec<u8>),
    /// The socket file judged, held open.
    Judged(OwnedFd),
}

/// Connects `socket` to the socket file `file` through its descriptor.
fn through(socket: &OwnedFd, file: &OwnedFd) -> Result<(), i32> {
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let address =
        rustix::net::SocketAddrUnix::new(path.as_str()).map_err(rustix::io::Errno::raw_os_error)?;
    rustix::net::connect(socket, &address).map_err(rustix::io::Errno::raw_os_error)
}

/// The caller's socket `fd`, as a descriptor of ours.
fn socket_of(pid: u32, fd: i32) -> Result<OwnedFd, i32> {
    if fd < 0 {
        return Err(libc::EBADF);
    }
    let tgid = thread_group(pid).ok_or(libc::ESRCH)?;
    let process = rustix::process::Pid::from_raw(tgid).ok_or(libc::ESRCH)?;
    let pidfd = rustix::process::pidfd_open(process, rustix::process::PidfdFlags::empty())
        .map_err(rustix::io::Errno::raw_os_error)?;
    rustix::process::pidfd_getfd(&pidfd, fd, rustix::process::PidfdGetfdFlags::empty())
        .map_err(rustix::io::Errno::raw_os_error)
}

/// The process a thread belongs to (`Tgid:` of its status).
fn thread_group(pid: u32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|tgid| tgid.trim().parse().ok())
}

/// A UNIX socket's connect: made only to a socket the sandbox listens on.
fn unix(pid: u32, address: &[u8], private_network: bool) -> Result<Target, i32> {
    let path = address.get(2..).unwrap_or_default();
    match path.first() {
        // Unnamed: the kernel says what is wrong. Abstract names belong to
        // the network namespace: a private one holds only the sandbox's.
        None => Ok(Target::Address(address.to_vec())),
        Some(0) if private_network => Ok(Target::Address(address.to_vec())),
        Some(0) => Err(libc::EACCES),
        Some(_) => {
            let name = path.split(|b| *b == 0).next().unwrap_or_default();
            let target = open_as(pid, name)?;
            let stat = rustix::fs::fstat(&target).map_err(rustix::io::Errno::raw_os_error)?;
            if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Socket {
                return Err(libc::ECONNREFUSED);
            }
            let device = (
                rustix::fs::major(stat.st_dev),
                rustix::fs::minor(stat.st_dev),
            );
            if !sandbox_listens(device, stat.st_ino, private_network) {
                return Err(libc::EACCES);
            }
            Ok(Target::Judged(target))
        }
    }
}

/// `name` opened (as a path only) where the thread `pid` would reach it:
/// relative to its working directory, links followed as `connect` does.
fn open_as(pid: u32, name: &[u8]) -> Result<OwnedFd, i32> {
    use std::os::unix::ffi::OsStrExt;
    let cwd = rustix::fs::open(
        format!("/proc/{pid}/cwd"),
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(rustix::io::Errno::raw_os_error)?;
    rustix::fs::openat(
        &cwd,
        std::ffi::OsStr::from_bytes(name),
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(rustix::io::Errno::raw_os_error)
}

/// Whether a socket of the sandbox listens on the socket file `meta`: one
/// of the network namespace's listening sockets is bound to it, and (where
/// the namespace is the host's) a process of the sandbox's PID namespace
/// holds it.
fn sandbox_listens(device: (u32, u32), inode: u64, private_network: bool) -> bool {
    let Ok(listening) = listeners() else {
        return false;
    };
    let sockets: Vec<u32> = listening
        .iter()
        .filter(|l| l.device == device && u64::from(l.inode) == inode)
        .map(|l| l.socket)
        .collect();
    if sockets.is_empty() {
        return false;
    }
    private_network || held_here(&sockets)
}

/// A listening UNIX socket: the socket's inode, and its file's.
struct Listening {
    socket: u32,
    device: (u32, u32),
    inode: u32,
}

/// The listening UNIX sockets of the caller's network namespace, bound to
/// files (`sock_diag` with their device and inode).
fn listeners() -> std::io::Result<Vec<Listening>> {
    let netlink = rustix::net::socket(
        rustix::net::AddressFamily::NETLINK,
        rustix::net::SocketType::DGRAM,
        Some(rustix::net::netlink::SOCK_DIAG),
    )?;
    // nlmsghdr, then unix_diag_req.
    let mut request = Vec::with_capacity(40);
    request.extend_from_slice(&40u32.to_ne_bytes());
    request.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    #[allow(clippy::cast_possible_truncation, reason = "netlink flags fit 16 bits")]
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    request.extend_from_slice(&flags.to_ne_bytes());
    request.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    request.extend_from_slice(&0u32.to_ne_bytes()); // port
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "AF_UNIX is 1"
    )]
    request.push(libc::AF_UNIX as u8);
    request.push(0); // protocol
    request.extend_from_slice(&0u16.to_ne_bytes());
    request.extend_from_slice(&(1u32 << 10).to_ne_bytes()); // TCP_LISTEN
    request.extend_from_slice(&0u32.to_ne_bytes()); // any inode
    request.extend_from_slice(&UDIAG_SHOW_VFS.to_ne_bytes());
    request.extend_from_slice(&[0xff; 8]); // no cookie
    rustix::net::send(&netlink, &request, rustix::net::SendFlags::empty())?;
    let mut found = Vec::new();
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        let (read, _) = rustix::net::recv(&netlink, &mut buffer, rustix::net::RecvFlags::empty())?;
        let mut at = 0;
        while at + 16 <= read {
            let length = u32_at(&buffer, at) as usize;
            let kind = u16::from_ne_bytes([buffer[at + 4], buffer[at + 5]]);
            if length < 16 || at + length > read {
                return Ok(found);
            }
            #[allow(
                clippy::cast_possible_truncation,
                reason = "the message types fit 16 bits"
            )]
            if kind == libc::NLMSG_DONE as u16 {
                return Ok(found);
            }
            #[allow(
                clippy::cast_possible_truncation,
                reason = "the message types fit 16 bits"
            )]
            if kind == libc::NLMSG_ERROR as u16 {
                return Err(std::io::Error::other("sock_diag refused the request"));
            }
            if let Some(listening) = parse(&buffer[at + 16..at + length]) {
                found.push(listening);
            }
            at += length.next_multiple_of(4);
        }
    }
}

/// One `unix_diag_msg` and its attributes.
fn parse(message: &[u8]) -> Option<Listening> {
    let socket = u32_at(message, 4);
    let mut at = 16; // past unix_diag_msg
    while at + 4 <= message.len() {
        let length = usize::from(u16::from_ne_bytes([message[at], message[at + 1]]));
        let kind = u16::from_ne_bytes([message[at + 2], message[at + 3]]);
        if length < 4 || at + length > message.len() {
            return None;
        }
        if kind == UNIX_DIAG_VFS && length >= 12 {
            let inode = u32_at(message, at + 4);
            // The kernel's own device number: major in the high 12 bits.
            let device = u32_at(message, at + 8);
            return Some(Listening {
                socket,
                device: (device >> 20, device & 0xf_ffff),
                inode,
            });
        }
        at += length.next_multiple_of(4);
    }
    None
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

/// Whether a process of this PID namespace holds one of `sockets` (this
/// `/proc` must be the namespace's own: `/proc/self` is this process).
fn held_here(sockets: &[u32]) -> bool {
    let own = std::fs::read_link("/proc/self")
        .ok()
        .and_then(|link| link.to_str()?.parse::<u32>().ok());
    if own != Some(std::process::id()) {
        return false;
    }
    let wanted: Vec<String> = sockets.iter().map(|s| format!("socket:[{s}]")).collect();
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return false;
    };
    processes.flatten().any(|process| {
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|link| wanted.iter().any(|w| link.as_os_str() == w.as_str()))
        })
    })
}

/// Sends `fd` over the socket pair `channel`.
pub(super) fn send_fd(channel: &OwnedFd, fd: &OwnedFd) -> std::io::Result<()> {
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    let fds = [fd.as_fd()];
    control.push(rustix::net::SendAncillaryMessage::ScmRights(&fds));
    rustix::net::sendmsg(
        channel,
        &[std::io::IoSlice::new(b"l")],
        &mut control,
        rustix::net::SendFlags::empty(),
    )?;
    Ok(())
}

/// The descriptor sent over `channel`; `None` when it closed first.
pub(super) fn receive_fd(channel: &OwnedFd) -> Option<OwnedFd> {
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    loop {
        match rustix::net::recvmsg(
            channel,
            &mut [std::io::IoSliceMut::new(&mut byte)],
            &mut control,
            rustix::net::RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(_) => break,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    control.drain().find_map(|message| match message {
        rustix::net::RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    })
}
