//! The helper's side: a freshly executed, still single-threaded `offcode`
//! that creates the namespaces, makes the protected paths read-only, hides
//! daemons' sockets, brings loopback up, forks so the command is PID 1,
//! applies Landlock and becomes the command.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::{Error, Spec, Support, sys};

/// The Landlock ABI whose rights offcode asks for (newer kernels are not
/// asked for rights this code was not tested with).
const TESTED_ABI: ABI = ABI::V6;

/// Character devices any command may read and write (the `/dev/null` of
/// `2>/dev/null`), never with `ioctl`: no terminal is among them, so a
/// command can neither type into nor read from the person's terminal.
const DEVICE_FILES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];
/// Where pseudo-terminals live: a private instance is mounted there in the
/// mount namespace (a test suite may open ptys of its own); the host's are
/// never reachable.
const PTYS: &str = "/dev/pts";

/// The helper's whole life: `args` are what followed [`super::HELPER_ARG`]. It
/// returns only on failure (or, in the PID namespace's parent, with the
/// command's exit status).
pub fn helper(args: &[OsString]) -> Result<u8, Error> {
    let (spec, program) = match args {
        [spec, program @ ..] if !program.is_empty() => (
            serde_json::from_str::<Spec>(&spec.to_string_lossy())
                .map_err(|e| Error::Spec(e.to_string()))?,
            program,
        ),
        _ => return Err(Error::Spec("expected SPEC PROGRAM [ARGS...]".to_owned())),
    };
    sys::hold_termination();
    // Read in offcode's network namespace, before the command's own.
    let sockets = if spec.namespaces {
        listening_sockets()
    } else {
        Vec::new()
    };
    let namespaces = sys::Namespaces {
        network: !spec.network,
    };
    let unshared = if spec.namespaces {
        sys::unshare(&namespaces)
    } else {
        Err(std::io::Error::other("namespaces were not asked for"))
    };
    let private_mounts = unshared.is_ok();
    let mut supervisor = None;
    let network_namespace = match unshared {
        Ok(()) => {
            match inside_namespaces(&spec, &sockets)? {
                Inside::Ended(status) => return Ok(status),
                Inside::Command(channel) => supervisor = channel,
            }
            !spec.network
        }
        Err(error) if spec.network => {
            let _ = error; // user namespaces only add to what Landlock does
            false
        }
        Err(error) => {
            if !Support::probe().landlock_network {
                return Err(Error::Network {
                    namespace: error.to_string(),
                });
            }
            false
        }
    };
    restrict(&spec, network_namespace, private_mounts)?;
    sys::install_filter(sys::Refused {
        unix_sockets: !private_mounts,
        ipc: !private_mounts,
        unix_datagrams: private_mounts,
    })
    .map_err(|e| Error::Seccomp(e.to_string()))?;
    if let Some(channel) = supervisor {
        // Every connect goes to PID 1 to be judged ([`super::supervise`]);
        // where the kernel cannot stop them so, no UNIX socket is made.
        let supervised = sys::supervise_connect()
            .and_then(|listener| super::supervise::send_fd(&channel, &listener));
        if supervised.is_err() {
            sys::install_filter(sys::Refused {
                unix_sockets: true,
                ipc: !private_mounts,
                unix_datagrams: true,
            })
            .map_err(|e| Error::Seccomp(e.to_string()))?;
        }
    }
    // The user namespace gave the helper every capability in it (and
    // offcode run as root has them anyway); the command gets none, so it
    // cannot clone the workspace's mount from under the private mounts
    // (`open_tree`), change them, or regain what Landlock leaves out.
    sys::drop_capabilities().map_err(|e| Error::Namespace {
        step: "dropping capabilities",
        source: e,
    })?;
    // Nothing offcode was started with reaches the command, nor the
    // helper's held-back SIGTERM.
    sys::close_inherited_on_exec();
    sys::release_termination();
    // The program's own environment, given to it only now.
    let environment: std::collections::BTreeMap<String, String> =
        std::env::var(super::CONFINED_ENV)
            .ok()
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default();
    let error = std::process::Command::new(&program[0])
        .args(&program[1..])
        .env_remove(super::CONFINED_ENV)
        .envs(environment)
        .exec();
    Err(Error::Exec {
        program: program[0].to_string_lossy().into_owned(),
        source: error,
    })
}

/// Who goes on after [`inside_namespaces`].
enum Inside {
    /// The helper or the namespace's PID 1, with the command's exit code.
    Ended(u8),
    /// The command, with its end of the channel to PID 1, which
    /// supervises its connects once sent the listener.
    Command(Option<std::os::fd::OwnedFd>),
}

/// In fresh namespaces: map our ids, make the protected paths read-only,
/// bring up loopback, and fork so the command is PID 1 of its namespace.
fn inside_namespaces(spec: &Spec, sockets: &[PathBuf]) -> Result<Inside, Error> {
    let step = |step: &'static str| move |source| Error::Namespace { step, source };
    rustix::mount::mount_change(
        "/",
        rustix::mount::MountPropagationFlags::PRIVATE | rustix::mount::MountPropagationFlags::REC,
    )
    .map_err(|e| step("making mounts private")(e.into()))?;
    // First, before any mount beneath the workspace is made: an overlay
    // does not look into mounts beneath its lower layer.
    if let Some(dirs) = &spec.layer {
        super::layer::mount::mount_or_note(dirs, spec.writable.get(1..).unwrap_or_default());
    }
    // Everything read-only but the writable directories: Landlock does not
    // cover metadata (chmod, chown, times, xattrs) of files outside them.
    let writable: Vec<&Path> = spec
        .writable
        .iter()
        .map(PathBuf::as_path)
        .filter(|dir| dir.is_dir())
        .collect();
    for dir in &writable {
        rustix::mount::mount_bind_recursive(*dir, *dir)
            .map_err(|e| step("binding a writable directory")(e.into()))?;
    }
    sys::read_only_tree(Path::new("/"), true).map_err(step("making the file system read-only"))?;
    for dir in &writable {
        // A directory whose own mount was read-only to begin with stays so.
        let _ = sys::read_only_tree(dir, false);
    }
    for path in &spec.pinned {
        // A mount point can be neither renamed nor removed (EBUSY); its
        // own mounts beneath come along.
        rustix::mount::mount_bind_recursive(path, path)
            .map_err(|e| step("pinning a folder in place")(e.into()))?;
    }
    for path in spec.read_only.iter().chain(&spec.personal) {
        // A path that does not exist cannot be mounted over; the check
        // after the command covers it.
        if path.exists() {
            bind_read_only(path).map_err(step("a read-only bind mount"))?;
        }
    }
    let kept: Vec<&Path> = spec
        .writable
        .iter()
        .chain(spec.readable.iter().flatten())
        .chain(&spec.visible)
        .map(PathBuf::as_path)
        .collect();
    for path in &spec.hidden {
        hide(path, &kept).map_err(step("hiding a place where sockets live"))?;
    }
    for path in &spec.secret {
        if path.exists() {
            hide(path, &kept).map_err(step("hiding offcode's own records"))?;
        }
    }
    // Every socket a process of the machine listens on at a path, where
    // a hidden place does not already cover it: a daemon in a plain folder
    // of the home, the workspace, `/var/snap/lxd`, the Nix daemon's.
    // Landlock (before ABI 9) and the network namespace do not stop a
    // `connect` to one.
    for socket in sockets {
        let is_socket = std::fs::symlink_metadata(socket)
            .is_ok_and(|meta| std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()));
        if is_socket {
            hide(socket, &kept).map_err(step("covering a daemon's socket"))?;
        }
    }
    private_ptys().map_err(step("a private /dev/pts"))?;
    if !spec.network {
        sys::loopback_up().map_err(step("bringing loopback up"))?;
    }
    // The working directory still points at the mount beneath the new
    // ones; entered again, it is the writable one.
    if let Ok(cwd) = std::env::current_dir() {
        std::env::set_current_dir(&cwd).map_err(step("entering the working directory"))?;
    }
    match sys::fork().map_err(step("fork"))? {
        sys::Forked::Child => {
            // PID 1 of the namespace: dies with the helper outside (and so
            // with offcode), and the kernel then ends every process in the
            // namespace. It stays offcode's own code, never the command's:
            // a command that was PID 1 could clear this signal and leave
            // its process group, and outlive offcode (an outside tester's
            // `prctl(PR_SET_PDEATHSIG, 0); setpgrp()`).
            let _ = rustix::process::set_parent_process_death_signal(Some(
                rustix::process::Signal::KILL,
            ));
            sys::release_termination();
            // The PID namespace's own /proc, so `ps` works and host
            // processes are not visible; where the kernel refuses (a
            // container masking parts of /proc), the host's stays.
            let _ = rustix::mount::mount(
                "proc",
                "/proc",
                "proc",
                rustix::mount::MountFlags::NOSUID
                    | rustix::mount::MountFlags::NODEV
                    | rustix::mount::MountFlags::NOEXEC,
                None,
            );
            // The key descriptions the person's keyrings hold: the
            // keyring calls themselves are refused by the filter.
            for keys in ["/proc/keys", "/proc/key-users"] {
                let _ = rustix::mount::mount_bind("/dev/null", keys);
            }
            pid_one(spec)
        }
        sys::Forked::Parent(raw) => {
            // Asked to end (SIGTERM from offcode, or offcode's death), the
            // helper kills the namespace's PID 1 and waits: when it exits,
            // nothing of the command is left to change a file after
            // offcode's check.
            sys::end_child_on_termination(raw).map_err(step("handling SIGTERM"))?;
            let pid = rustix::process::Pid::from_raw(raw);
            loop {
                match rustix::process::waitpid(pid, rustix::process::WaitOptions::empty()) {
                    Ok(status) => {
                        return Ok(Inside::Ended(
                            status.map_or(1, |(_, status)| exit_code(status)),
                        ));
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(step("waiting for the command")(e.into())),
                }
            }
        }
    }
}

/// PID 1 of the command's namespaces forks the command, then supervises
/// its connects ([`super::supervise`]) and reaps what is orphaned to it
/// until the command ends, then ends, and everything left ends with it.
fn pid_one(spec: &Spec) -> Result<Inside, Error> {
    let channel = rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::SEQPACKET,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )
    .ok();
    let forked = sys::fork().map_err(|source| Error::Namespace {
        step: "fork",
        source,
    })?;
    match forked {
        // The command, PID 2: goes on to Landlock and exec.
        sys::Forked::Child => Ok(Inside::Command(channel.map(|(_, command)| command))),
        sys::Forked::Parent(pid) => {
            let listener = channel.and_then(|(own, command)| {
                drop(command);
                super::supervise::receive_fd(&own)
            });
            Ok(Inside::Ended(match listener {
                Some(listener) => super::supervise::run(listener, pid, !spec.network),
                None => reap_until(pid),
            }))
        }
    }
}

/// As init of the command's PID namespace: waits for any child, so that
/// orphans are reaped, until `command` has ended; its exit code.
fn reap_until(command: i32) -> u8 {
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get() == command => {
                return exit_code(status);
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return 1,
        }
    }
}

/// The paths of the UNIX sockets bound in the caller's network namespace
/// (`/proc/net/unix`: the path is what follows the seventh field);
/// abstract ones (`@...`) and relative ones are left out.
fn listening_sockets() -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(table) = std::fs::read("/proc/net/unix") else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = table
        .split(|byte| *byte == b'\n')
        .skip(1)
        .filter_map(|line| {
            let mut rest = line;
            for _ in 0..7 {
                let start = rest.iter().position(|byte| *byte != b' ')?;
                let end = rest[start..].iter().position(|byte| *byte == b' ')?;
                rest = &rest[start + end..];
            }
            let path = rest.strip_prefix(b" ")?;
            path.starts_with(b"/")
                .then(|| PathBuf::from(std::ffi::OsStr::from_bytes(path)))
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// A wait status as a shell's exit code (128 + the signal for a kill).
pub(super) fn exit_code(status: rustix::process::WaitStatus) -> u8 {
    status
        .exit_status()
        .map(|code| u8::try_from(code & 0xff).unwrap_or(1))
        .or_else(|| {
            status
                .terminating_signal()
                .map(|signal| u8::try_from(128 + (signal & 0x7f)).unwrap_or(1))
        })
        .unwrap_or(1)
}

/// Puts an empty private directory (a fresh, writable tmpfs) over a
/// directory, and `/dev/null` over a socket, so nothing listening there can
/// be reached. The directories of `kept` beneath it (the workspace, the
/// private temp dir) are carried over to the new mount, as they were.
fn hide(path: &Path, kept: &[&Path]) -> std::io::Result<()> {
    use rustix::mount::{MountFlags, MoveMountFlags, OpenTreeFlags};
    if !path.is_dir() {
        return match rustix::mount::mount_bind("/dev/null", path) {
            // Gone since it was listed (a daemon that stopped, a test's
            // socket removed): nothing listens there to hide. The command
            // failed with 126 when this raced on a busy machine.
            Err(rustix::io::Errno::NOENT) => Ok(()),
            done => done.map_err(Into::into),
        };
    }
    let mut beneath: Vec<&Path> = kept
        .iter()
        .copied()
        .filter(|dir| dir.starts_with(path) && *dir != path && dir.is_dir())
        .collect();
    beneath.sort();
    // One beneath another comes along with it.
    beneath.dedup_by(|inner, outer| inner.starts_with(*outer));
    let mut trees = Vec::new();
    for dir in beneath {
        let tree = rustix::mount::open_tree(
            rustix::fs::CWD,
            dir,
            OpenTreeFlags::OPEN_TREE_CLONE
                | OpenTreeFlags::OPEN_TREE_CLOEXEC
                | OpenTreeFlags::AT_RECURSIVE,
        )?;
        trees.push((dir, tree));
    }
    rustix::mount::mount(
        "tmpfs",
        path,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(c"mode=0755"),
    )?;
    for (dir, tree) in trees {
        std::fs::create_dir_all(dir)?;
        rustix::mount::move_mount(
            &tree,
            "",
            rustix::fs::CWD,
            dir,
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
    }
    Ok(())
}

/// A private instance of `/dev/pts` (and its `ptmx`), so the host's
/// terminals are not there to open; where the kernel refuses one, an empty
/// directory.
fn private_ptys() -> std::io::Result<()> {
    use rustix::mount::MountFlags;
    let fresh = rustix::mount::mount(
        "devpts",
        PTYS,
        "devpts",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"newinstance,ptmxmode=0666,mode=0620"),
    );
    match fresh {
        Ok(()) => {
            let _ = rustix::mount::mount_bind("/dev/pts/ptmx", "/dev/ptmx");
            Ok(())
        }
        Err(_) => hide(Path::new(PTYS), &[]),
    }
}

/// Bind-mounts `path` over itself read-only, keeping the flags the kernel
/// locks for mounts inherited from another user namespace.
fn bind_read_only(path: &Path) -> std::io::Result<()> {
    use rustix::fs::StatVfsMountFlags as Has;
    use rustix::mount::MountFlags as Set;
    rustix::mount::mount_bind(path, path)?;
    let has = rustix::fs::statvfs(path)?.f_flag;
    let mut flags = Set::BIND | Set::RDONLY;
    for (present, keep) in [
        (Has::NOSUID, Set::NOSUID),
        (Has::NODEV, Set::NODEV),
        (Has::NOEXEC, Set::NOEXEC),
        (Has::NOATIME, Set::NOATIME),
        (Has::NODIRATIME, Set::NODIRATIME),
        (Has::RELATIME, Set::RELATIME),
    ] {
        if has.contains(present) {
            flags |= keep;
        }
    }
    rustix::mount::mount_remount(path, flags, "")?;
    Ok(())
}

/// Applies the Landlock rules to the helper (inherited by the command).
/// `private` says the mount namespace was made: the hidden places are
/// private tmpfs mounts and `/dev/pts` a private instance, both writable.
fn restrict(spec: &Spec, network_namespace: bool, private: bool) -> Result<(), Error> {
    let failed = |e: &dyn std::fmt::Display| Error::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TESTED_ABI))
        .map_err(|e| failed(&e))?
        .scope(Scope::from_all(TESTED_ABI))
        .map_err(|e| failed(&e))?;
    if !spec.network && !network_namespace {
        ruleset = ruleset
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(|e| failed(&e))?;
    }
    let mut created = ruleset
        .set_compatibility(CompatLevel::BestEffort)
        .create()
        .map_err(|e| failed(&e))?;
    for (path, access) in rules(spec, private) {
        let Ok(fd) = PathFd::new(&path) else {
            continue;
        };
        // Rights that only directories have are not asked for a file.
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(TESTED_ABI)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| failed(&e))?;
    }
    let status = created.restrict_self().map_err(|e| failed(&e))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(Error::Landlock(
            "this kernel does not support Landlock (or it is disabled)".to_owned(),
        ));
    }
    Ok(())
}

/// What may be done beneath which path.
///
/// - Read: the listed directories, or everything but `/dev`, whose few
///   harmless devices are listed (so no terminal of the person's can be
///   opened, even through `/proc/PID/fd`).
/// - Write: the writable directories, and with a mount namespace the
///   private places and ptys; without one, the writable directories
///   around the person's files inside them, which no rule then reaches
///   (nor can a missing one be created next to them).
fn rules(spec: &Spec, private: bool) -> Vec<(PathBuf, landlock::BitFlags<AccessFs>)> {
    let read = AccessFs::from_read(TESTED_ABI);
    let all = AccessFs::from_all(TESTED_ABI);
    // No named pipe anywhere that outlives the command: offcode and git
    // open files a command leaves in the workspace (`.ignore`, a
    // `.gitignore`, a git config), and opening a FIFO waits for a writer
    // for ever; one in the temp dir could be linked to from there.
    let writable = all & !AccessFs::MakeFifo;
    let mut rules = Vec::new();
    // offcode's records get no rule (in the mount namespace an empty
    // folder covers them anyway).
    let secret: Vec<&Path> = spec.secret.iter().map(PathBuf::as_path).collect();
    if let Some(dirs) = &spec.readable {
        for dir in dirs {
            around(dir, &secret, read, &mut rules);
        }
    } else {
        rules.push((PathBuf::from("/"), AccessFs::ReadDir.into()));
        let top = std::fs::read_dir("/").map(|dir| dir.flatten().map(|e| e.path()));
        for path in top.into_iter().flatten() {
            if path != Path::new("/dev") {
                around(&path, &secret, read, &mut rules);
            }
        }
    }
    let device = AccessFs::ReadFile | AccessFs::WriteFile;
    rules.extend(DEVICE_FILES.iter().map(|f| (PathBuf::from(f), device)));
    if private {
        // The person's files are read-only mounts; a new one the command
        // creates is removed after it ([`super::protect::new_personal`]).
        rules.extend(spec.writable.iter().map(|dir| (dir.clone(), writable)));
        // A private folder, gone with the command, may hold named pipes,
        // unless a writable directory lies beneath it (a workspace in /tmp).
        rules.extend(spec.hidden.iter().map(|dir| {
            let holds = spec.writable.iter().any(|inner| inner.starts_with(dir));
            (dir.clone(), if holds { writable } else { all })
        }));
        rules.push((PathBuf::from(PTYS), all));
        rules.push((PathBuf::from("/dev/ptmx"), all));
    } else {
        let personal: Vec<&Path> = spec
            .personal
            .iter()
            .chain(&spec.secret)
            .map(PathBuf::as_path)
            .collect();
        for dir in &spec.writable {
            around(dir, &personal, writable, &mut rules);
        }
        rules.push((PathBuf::from("/dev/shm"), all));
    }
    rules
}

/// `dir` with `access`, or, when a path of `left_out` lies in it, each of
/// its entries but those (recursively): Landlock's rights only add up, so
/// a file inside a writable directory is kept from writes by never
/// granting that directory.
fn around(
    dir: &Path,
    left_out: &[&Path],
    access: landlock::BitFlags<AccessFs>,
    rules: &mut Vec<(PathBuf, landlock::BitFlags<AccessFs>)>,
) {
    if left_out.contains(&dir) {
        return;
    }
    if !left_out.iter().any(|path| path.starts_with(dir)) {
        rules.push((dir.to_path_buf(), access));
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            // A symlink's rule would be its target's, wherever that is.
            Ok(kind) if kind.is_symlink() => {}
            Ok(kind) if kind.is_dir() => around(&path, left_out, access, rules),
            Ok(_) if !left_out.contains(&path.as_path()) => rules.push((path, access)),
            _ => {}
        }
    }
}
