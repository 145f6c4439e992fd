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

/// Character devices any command may write (the `/dev/null` of
/// `2>/dev/null`, terminals), and directories of such.
const DEVICE_FILES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];
const DEVICE_DIRS: &[&str] = &["/dev/pts", "/dev/shm"];

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
    let namespaces = sys::Namespaces {
        network: !spec.network,
    };
    let unshared = if spec.namespaces {
        sys::unshare(&namespaces)
    } else {
        Err(std::io::Error::other("namespaces were not asked for"))
    };
    let network_namespace = match unshared {
        Ok(()) => {
            if let Some(status) = inside_namespaces(&spec)? {
                return Ok(status);
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
    restrict(&spec, network_namespace)?;
    let error = std::process::Command::new(&program[0])
        .args(&program[1..])
        .exec();
    Err(Error::Exec {
        program: program[0].to_string_lossy().into_owned(),
        source: error,
    })
}

/// In fresh namespaces: map our ids, make the protected paths read-only,
/// bring up loopback, and fork so the command is PID 1 of its namespace.
/// `Some(status)` in the parent once the command ended.
fn inside_namespaces(spec: &Spec) -> Result<Option<u8>, Error> {
    let step = |step: &'static str| move |source| Error::Namespace { step, source };
    rustix::mount::mount_change(
        "/",
        rustix::mount::MountPropagationFlags::PRIVATE | rustix::mount::MountPropagationFlags::REC,
    )
    .map_err(|e| step("making mounts private")(e.into()))?;
    // Everything read-only but the writable directories: Landlock does not
    // cover metadata (chmod, chown, times, xattrs) of files outside them.
    let writable: Vec<&Path> = spec
        .writable
        .iter()
        .map(PathBuf::as_path)
        .chain(DEVICE_DIRS.iter().map(Path::new))
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
    for path in &spec.read_only {
        // A path that does not exist cannot be mounted over; the check
        // after the command covers it.
        if path.exists() {
            bind_read_only(path).map_err(step("a read-only bind mount"))?;
        }
    }
    for path in &spec.hidden {
        hide(path).map_err(step("hiding a daemon's socket"))?;
    }
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
            let _ = rustix::process::set_parent_process_death_signal(Some(
                rustix::process::Signal::KILL,
            ));
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
            Ok(None)
        }
        sys::Forked::Parent(pid) => {
            let pid = rustix::process::Pid::from_raw(pid);
            let status = rustix::process::waitpid(pid, rustix::process::WaitOptions::empty())
                .map_err(|e| step("waiting for the command")(e.into()))?;
            let code = status.map_or(1, |(_, status)| {
                status
                    .exit_status()
                    .map(|code| u8::try_from(code & 0xff).unwrap_or(1))
                    .or_else(|| {
                        status
                            .terminating_signal()
                            .map(|signal| u8::try_from(128 + (signal & 0x7f)).unwrap_or(1))
                    })
                    .unwrap_or(1)
            });
            Ok(Some(code))
        }
    }
}

/// Puts an empty read-only directory over a directory, and `/dev/null`
/// over a socket, so nothing listening there can be reached.
fn hide(path: &Path) -> std::io::Result<()> {
    use rustix::mount::MountFlags;
    if path.is_dir() {
        rustix::mount::mount(
            "tmpfs",
            path,
            "tmpfs",
            MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            Some(c"mode=0555,size=4k"),
        )?;
    } else if path.exists() {
        rustix::mount::mount_bind("/dev/null", path)?;
    }
    Ok(())
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
fn restrict(spec: &Spec, network_namespace: bool) -> Result<(), Error> {
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
    let mut created = ruleset.create().map_err(|e| failed(&e))?;
    let read = AccessFs::from_read(TESTED_ABI);
    let all = AccessFs::from_all(TESTED_ABI);
    let file = AccessFs::from_file(TESTED_ABI);
    let beneath = |path: &Path, access| {
        PathFd::new(path)
            .ok()
            .map(|fd| PathBeneath::new(fd, access))
    };
    let everything = [PathBuf::from("/")];
    let readable = spec.readable.as_deref().unwrap_or(&everything);
    let rules = readable
        .iter()
        .filter_map(|dir| beneath(dir, read))
        .chain(spec.writable.iter().filter_map(|dir| beneath(dir, all)))
        .chain(
            DEVICE_DIRS
                .iter()
                .filter_map(|dir| beneath(Path::new(dir), all)),
        )
        .chain(
            DEVICE_FILES
                .iter()
                .filter_map(|f| beneath(Path::new(f), file)),
        );
    for rule in rules {
        created = created.add_rule(rule).map_err(|e| failed(&e))?;
    }
    let status = created.restrict_self().map_err(|e| failed(&e))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(Error::Landlock(
            "this kernel does not support Landlock (or it is disabled)".to_owned(),
        ));
    }
    Ok(())
}
