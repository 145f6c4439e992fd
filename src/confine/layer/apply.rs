//! offcode's part once the command has ended: what its upper layer holds
//! is put onto the workspace, one entry at a time, without following a
//! link on either side. A file is moved (renamed) into place, so it is a
//! new inode there: a name the workspace shared with a file elsewhere (a
//! hard link) now names the new file, and the other stays as it was.
//! What is done leaves the layer (files are moved out, whiteouts and
//! opaque marks removed once applied), so an apply cut short can be
//! finished later from what is left ([`super::finish_interrupted`]).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// How a folder is opened, on either side: never through a link.
const FOLDER: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The overlay's mark of a folder removed and made again (in a user
/// namespace, a user attribute).
const OPAQUE: &str = "user.overlay.opaque";

/// What applying a layer did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applied {
    /// Files, links and folders written (made or replaced), relative to the
    /// workspace.
    pub written: Vec<PathBuf>,
    /// Paths removed.
    pub removed: Vec<PathBuf>,
    /// What could not be applied, and why.
    pub failed: Vec<(PathBuf, String)>,
    /// Paths no command may change, left as they were.
    pub refused: Vec<PathBuf>,
    /// Files whose set-user-ID or set-group-ID bit was not carried over.
    pub unprivileged: Vec<PathBuf>,
}

/// Puts the layer `upper` onto the workspace `root`; paths `refused` says
/// no command may change are left as they are.
pub fn apply(upper: &Path, root: &Path, refused: &dyn Fn(&Path) -> bool) -> Applied {
    let mut applying = Applying {
        applied: Applied::default(),
        links: HashMap::new(),
        refused,
    };
    let opened =
        rustix::fs::openat(rustix::fs::CWD, upper, FOLDER, Mode::empty()).and_then(|upper| {
            // The root is the person's choice, link or not.
            let root = rustix::fs::openat(
                rustix::fs::CWD,
                root,
                FOLDER - OFlags::NOFOLLOW,
                Mode::empty(),
            )?;
            Ok((upper, root))
        });
    match opened {
        Ok((upper, root)) => applying.folder(&upper, &root, Path::new("")),
        Err(errno) => applying.applied.failed.push((
            PathBuf::new(),
            format!("the layer could not be opened: {errno}"),
        )),
    }
    applying.applied
}

/// The workspace paths applying `upper` would replace or remove (for a
/// folder, everything in it), relative to the workspace: what to keep
/// before it lands. Read without changing anything.
pub fn touched(upper: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(top) = rustix::fs::openat(rustix::fs::CWD, upper, FOLDER, Mode::empty()) else {
        return found;
    };
    let mut stack = vec![(top, PathBuf::new())];
    while let Some((dir, at)) = stack.pop() {
        for name in entries(&dir).unwrap_or_default() {
            let path = at.join(&name);
            let Ok(stat) = rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
                match rustix::fs::openat(&dir, &name, FOLDER, Mode::empty()) {
                    Ok(inner) if !is_opaque(&inner) => stack.push((inner, path)),
                    _ => found.push(path),
                }
            } else {
                found.push(path);
            }
        }
    }
    found
}

struct Applying<'a> {
    applied: Applied,
    /// Files of several names in the layer (hard links made by the
    /// command): the folder and name the first was put at.
    links: HashMap<(u64, u64), (OwnedFd, OsString)>,
    refused: &'a dyn Fn(&Path) -> bool,
}

impl Applying<'_> {
    fn fail(&mut self, path: PathBuf, why: impl std::fmt::Display) {
        self.applied.failed.push((path, why.to_string()));
    }

    /// Applies the entries of the layer's folder `upper` to the
    /// workspace's folder `workspace`, at `at`.
    fn folder(&mut self, upper: &OwnedFd, workspace: &OwnedFd, at: &Path) {
        let names = match entries(upper) {
            Ok(names) => names,
            Err(errno) => return self.fail(at.to_path_buf(), errno),
        };
        for name in names {
            let path = at.join(&name);
            if (self.refused)(&path) {
                self.applied.refused.push(path);
                continue;
            }
            let stat = match rustix::fs::statat(upper, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(errno) => {
                    self.fail(path, errno);
                    continue;
                }
            };
            match FileType::from_raw_mode(stat.st_mode) {
                // A whiteout: the command removed what was there.
                FileType::CharacterDevice if stat.st_rdev == 0 => match remove(workspace, &name) {
                    Ok(()) => {
                        // Done: an apply cut short and finished later
                        // does not do it again.
                        let _ = rustix::fs::unlinkat(upper, &name, AtFlags::empty());
                        self.applied.removed.push(path);
                    }
                    Err(errno) => self.fail(path, errno),
                },
                FileType::Directory => self.subfolder(upper, workspace, &name, &path, &stat),
                FileType::RegularFile | FileType::Symlink => {
                    self.file(upper, workspace, &name, path, &stat);
                }
                _ => self.fail(path, "a socket, pipe or device is not carried over"),
            }
        }
    }

    fn subfolder(
        &mut self,
        upper: &OwnedFd,
        workspace: &OwnedFd,
        name: &OsStr,
        path: &Path,
        stat: &rustix::fs::Stat,
    ) {
        let inner = match rustix::fs::openat(upper, name, FOLDER, Mode::empty()) {
            Ok(fd) => fd,
            Err(errno) => return self.fail(path.to_path_buf(), errno),
        };
        // Removed and made again by the command: nothing of the old one
        // shows through.
        let opaque = is_opaque(&inner);
        let made = match rustix::fs::statat(workspace, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(there) if FileType::from_raw_mode(there.st_mode) == FileType::Directory => {
                if opaque {
                    rustix::fs::openat(workspace, name, FOLDER, Mode::empty())
                        .and_then(|there| empty(&there))
                        // Emptied once: an apply cut short and finished
                        // later keeps what it has moved in since.
                        .and_then(|()| rustix::fs::fremovexattr(&inner, OPAQUE))
                        .map(|()| false)
                } else {
                    Ok(false)
                }
            }
            Ok(_) => remove(workspace, name).and_then(|()| make_folder(workspace, name)),
            Err(Errno::NOENT) => make_folder(workspace, name),
            Err(errno) => Err(errno),
        };
        let made = match made {
            Ok(made) => made,
            Err(errno) => return self.fail(path.to_path_buf(), errno),
        };
        let there = match rustix::fs::openat(workspace, name, FOLDER, Mode::empty()) {
            Ok(fd) => fd,
            Err(errno) => return self.fail(path.to_path_buf(), errno),
        };
        if made || opaque {
            self.applied.written.push(path.to_path_buf());
        }
        self.folder(&inner, &there, path);
        let wanted = stat.st_mode & 0o7777;
        let now = rustix::fs::fstat(&there).map(|s| s.st_mode & 0o7777);
        if now != Ok(wanted) {
            if let Err(errno) = rustix::fs::fchmod(&there, Mode::from_raw_mode(wanted)) {
                self.fail(path.to_path_buf(), errno);
            } else if !made {
                self.applied.written.push(path.to_path_buf());
            }
        }
    }

    fn file(
        &mut self,
        upper: &OwnedFd,
        workspace: &OwnedFd,
        name: &OsStr,
        path: PathBuf,
        stat: &rustix::fs::Stat,
    ) {
        let several =
            FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && stat.st_nlink > 1;
        let key = (stat.st_dev, stat.st_ino);
        if several && let Some((folder, first)) = self.links.get(&key) {
            let linked = clear(workspace, name).and_then(|()| {
                rustix::fs::linkat(folder, first.as_os_str(), workspace, name, AtFlags::empty())
            });
            return match linked {
                Ok(()) => self.applied.written.push(path),
                Err(errno) => self.fail(path, errno),
            };
        }
        let moved = clear(workspace, name).and_then(|()| {
            match rustix::fs::renameat(upper, name, workspace, name) {
                Err(Errno::XDEV) => copy(upper, name, workspace, name, stat),
                done => done,
            }
        });
        if let Err(errno) = moved {
            return self.fail(path, errno);
        }
        if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && settle(workspace, name)
        {
            self.applied.unprivileged.push(path.clone());
        }
        if several && let Ok(folder) = rustix::io::dup(workspace) {
            self.links.insert(key, (folder, name.to_owned()));
        }
        self.applied.written.push(path);
    }
}

/// The names in a folder, sorted (`.` and `..` left out).
fn entries(folder: &OwnedFd) -> Result<Vec<OsString>, Errno> {
    let mut names = Vec::new();
    let mut dir = rustix::fs::Dir::read_from(folder)?;
    while let Some(entry) = dir.read() {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(OsString::from(OsStr::from_bytes(&name)));
        }
    }
    names.sort();
    Ok(names)
}

/// Whether the overlay marked a folder of its upper layer opaque.
fn is_opaque(folder: &OwnedFd) -> bool {
    let mut value = [0u8; 4];
    matches!(
        rustix::fs::fgetxattr(folder, OPAQUE, &mut value),
        Ok(1) if value[0] == b'y'
    )
}

/// A file moved into the workspace, made ordinary: its `user.overlay.*`
/// attributes (the overlay's own notes, which would mislead an overlay
/// mounted later) are removed, and so are set-user-ID and set-group-ID
/// bits (the overlay is `nosuid`; in the workspace, such a program of
/// offcode's user, root perhaps, would run as that user for anyone who
/// can reach it). Whether it had those bits.
fn settle(folder: &OwnedFd, name: &OsStr) -> bool {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let Ok(file) = rustix::fs::openat(folder, name, flags, Mode::empty()) else {
        return false;
    };
    let mut list = vec![0u8; 4096];
    if let Ok(length) = rustix::fs::flistxattr(&file, &mut list) {
        for attribute in list[..length].split(|byte| *byte == 0) {
            if attribute.starts_with(b"user.overlay.") {
                let _ = rustix::fs::fremovexattr(&file, OsStr::from_bytes(attribute));
            }
        }
    }
    let mode = rustix::fs::fstat(&file).map_or(0, |stat| stat.st_mode & 0o7777);
    mode & 0o6000 != 0 && rustix::fs::fchmod(&file, Mode::from_raw_mode(mode & !0o6000)).is_ok()
}

/// Makes the folder `name` (its mode is set once its entries are in).
fn make_folder(folder: &OwnedFd, name: &OsStr) -> Result<bool, Errno> {
    rustix::fs::mkdirat(folder, name, Mode::from_raw_mode(0o700)).map(|()| true)
}

/// Removes a folder standing at `name` (a file or link there is replaced
/// by the rename itself).
fn clear(folder: &OwnedFd, name: &OsStr) -> Result<(), Errno> {
    match rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
            remove(folder, name)
        }
        Ok(_) | Err(Errno::NOENT) => Ok(()),
        Err(errno) => Err(errno),
    }
}

/// Removes `name` from `folder`, a folder with everything in it; never
/// through a link. Gone already is done.
fn remove(folder: &OwnedFd, name: &OsStr) -> Result<(), Errno> {
    match rustix::fs::unlinkat(folder, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        Err(Errno::ISDIR | Errno::PERM) => {}
        Err(errno) => return Err(errno),
    }
    let inner = rustix::fs::openat(folder, name, FOLDER, Mode::empty())?;
    empty(&inner)?;
    match rustix::fs::unlinkat(folder, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(errno) => Err(errno),
    }
}

/// Removes everything in `folder`, making it writable first if need be.
fn empty(folder: &OwnedFd) -> Result<(), Errno> {
    let mode = rustix::fs::fstat(folder)?.st_mode;
    if mode & 0o700 != 0o700 {
        rustix::fs::fchmod(folder, Mode::from_raw_mode((mode | 0o700) & 0o7777))?;
    }
    for name in entries(folder)? {
        remove(folder, &name)?;
    }
    Ok(())
}

/// Copies a file or link of the layer into the workspace, where the two
/// are on different file systems: written beside its place, then renamed
/// over it.
fn copy(
    from: &OwnedFd,
    name: &OsStr,
    to: &OwnedFd,
    target: &OsStr,
    stat: &rustix::fs::Stat,
) -> Result<(), Errno> {
    let temporary = crate::sandbox::temporary_name();
    let written = if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
        let link = rustix::fs::readlinkat(from, name, Vec::new())?;
        rustix::fs::symlinkat(link.as_c_str(), to, temporary.as_str())
    } else {
        copy_file(from, name, to, &temporary, stat)
    };
    written
        .and_then(|()| rustix::fs::renameat(to, temporary.as_str(), to, target))
        .inspect_err(|_| {
            let _ = rustix::fs::unlinkat(to, temporary.as_str(), AtFlags::empty());
        })
}

fn copy_file(
    from: &OwnedFd,
    name: &OsStr,
    to: &OwnedFd,
    temporary: &str,
    stat: &rustix::fs::Stat,
) -> Result<(), Errno> {
    let source = rustix::fs::openat(
        from,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let target = rustix::fs::openat(
        to,
        temporary,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    let (mut source, mut target) = (std::fs::File::from(source), std::fs::File::from(target));
    std::io::copy(&mut source, &mut target)
        .map_err(|e| e.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error))?;
    rustix::fs::fchmod(&target, Mode::from_raw_mode(stat.st_mode & 0o7777))?;
    let times = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: stat.st_atime,
            tv_nsec: stat.st_atime_nsec.try_into().unwrap_or(0),
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: stat.st_mtime,
            tv_nsec: stat.st_mtime_nsec.try_into().unwrap_or(0),
        },
    };
    rustix::fs::futimens(&target, &times)
}
