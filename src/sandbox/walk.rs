//! The fallback resolver for kernels or sandboxes without `openat2`: walks
//! the path one component at a time with `O_NOFOLLOW`, holding a stack of
//! directory descriptors, expanding relative symlinks itself and refusing
//! anything that would leave the root. It matches `RESOLVE_BENEATH`: `..`
//! past the root, absolute paths and absolute symlinks give `EXDEV`.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, openat, readlinkat, statat};
use rustix::io::Errno;

/// Symlinks expanded at most in one resolution (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Opens `path` beneath `root` with `flags`, never leaving `root`.
pub fn open_beneath(
    root: &OwnedFd,
    path: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    // `file/` and `file/.` name a directory, as the kernel reads them.
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    let flags = if bytes.ends_with(b"/") || bytes.ends_with(b"/.") {
        flags | OFlags::DIRECTORY
    } else {
        flags
    };
    let mut pending: VecDeque<OsString> = VecDeque::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => pending.push_back(name.to_owned()),
            Component::ParentDir => pending.push_back("..".into()),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(Errno::XDEV),
        }
    }
    let mut stack: Vec<OwnedFd> = Vec::new();
    let mut links = 0;
    let follow_last = !flags.contains(OFlags::NOFOLLOW);
    while let Some(name) = pending.pop_front() {
        let current = stack.last().map_or(root.as_fd(), AsFd::as_fd);
        if name == ".." {
            if stack.pop().is_none() {
                return Err(Errno::XDEV);
            }
            continue;
        }
        let last = pending.is_empty();
        let stat = match statat(current, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Some(stat),
            Err(Errno::NOENT) if last && flags.contains(OFlags::CREATE) => None,
            Err(error) => return Err(error),
        };
        let kind = stat.map(|s| FileType::from_raw_mode(s.st_mode));
        if kind == Some(FileType::Symlink) && (!last || follow_last) {
            links += 1;
            if links > MAX_LINKS {
                return Err(Errno::LOOP);
            }
            let target = readlinkat(current, name.as_os_str(), Vec::new())?;
            let target = OsString::from_vec(target.into_bytes());
            let target = Path::new(&target);
            if target.is_absolute() {
                return Err(Errno::XDEV);
            }
            for component in target.components().rev() {
                match component {
                    Component::Normal(part) => pending.push_front(part.to_owned()),
                    Component::ParentDir => pending.push_front("..".into()),
                    Component::CurDir => {}
                    Component::RootDir | Component::Prefix(_) => return Err(Errno::XDEV),
                }
            }
            continue;
        }
        if last {
            return openat(
                current,
                name.as_os_str(),
                flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                mode,
            );
        }
        if kind != Some(FileType::Directory) {
            return Err(Errno::NOTDIR);
        }
        let next = openat(
            current,
            name.as_os_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        stack.push(next);
    }
    // The path named the root itself (or climbed back to it).
    let current = stack.last().map_or(root.as_fd(), AsFd::as_fd);
    openat(current, ".", flags | OFlags::CLOEXEC, mode)
}
