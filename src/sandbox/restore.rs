//! Putting files back as a checkpoint kept them. Unlike the tools' writes,
//! nothing here follows a symlink, at any depth: a link standing where a
//! folder was (made by a command, or ignored by the checkpoints) would
//! carry the write elsewhere in the workspace, into `.git` or onto the
//! person's files. Such a path is refused, and reported.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::{Error, Sandbox, replace};

impl Sandbox {
    /// The folder that holds `path` and its last name, reached from the
    /// root one real folder at a time (missing ones are made with `create`); a symlink
    /// or a file on the way is refused.
    fn parent_strict(&self, path: &str, create: bool) -> Result<(OwnedFd, OsString), Error> {
        let relative = self.relative(path)?;
        let invalid = |reason: &str| Error::Invalid {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let parts: Vec<&OsStr> = relative
            .components()
            .map(|c| match c {
                Component::Normal(name) => Ok(name),
                _ => Err(invalid("a path to put back is plain names only")),
            })
            .collect::<Result<_, _>>()?;
        let Some((name, folders)) = parts.split_last() else {
            return Err(invalid("the path must end in a file name"));
        };
        let mut current = rustix::fs::openat(
            &self.root_fd,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Self::error(path, e))?;
        for folder in folders {
            let open = |at: &OwnedFd| {
                rustix::fs::openat(
                    at,
                    *folder,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
            };
            current = match open(&current) {
                Ok(fd) => fd,
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&current, *folder, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(errno) => return Err(Self::error(path, errno)),
                    }
                    open(&current).map_err(|e| Self::error(path, e))?
                }
                Err(Errno::NOTDIR | Errno::LOOP) => {
                    return Err(invalid(&format!(
                        "`{}` is no longer a folder (a link or a file stands there now); left as it is",
                        Path::new(folder).display()
                    )));
                }
                Err(errno) => return Err(Self::error(path, errno)),
            };
        }
        let (parent, name) = (current, (*name).to_owned());
        self.check_not_secret(path, &parent, &name)?;
        Ok((parent, name))
    }

    /// Why `path` could not be put back (or removed) as a checkpoint kept
    /// it, checked without changing anything: a link or a file where a
    /// folder was, or a folder where the file was.
    pub fn check_restorable(&self, path: &str) -> Result<(), Error> {
        let (parent, name) = match self.parent_strict(path, false) {
            Ok(found) => found,
            // A folder that is gone is made again.
            Err(Error::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&parent, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat)
                if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                    == rustix::fs::FileType::Directory =>
            {
                Err(Error::Invalid {
                    path: path.to_owned(),
                    reason: "a folder stands where the file was; left as it is".to_owned(),
                })
            }
            Ok(_) | Err(Errno::NOENT) => Ok(()),
            Err(errno) => Err(Self::error(path, errno)),
        }
    }

    /// Puts back a file: `content` with `mode`, replacing whatever is at
    /// `path` now (a symlink there is replaced, not followed).
    pub fn restore_file(&self, path: &str, content: &[u8], mode: u32) -> Result<(), Error> {
        let (parent, name) = self.parent_strict(path, true)?;
        replace(
            &parent,
            &name,
            content,
            Some(Mode::from_raw_mode(mode & 0o7777)),
        )
        .map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Puts back a symlink to `target`, replacing whatever is at `path`.
    pub fn restore_link(&self, path: &str, target: &[u8]) -> Result<(), Error> {
        let (parent, name) = self.parent_strict(path, true)?;
        let temporary = super::temporary_name();
        rustix::fs::symlinkat(OsStr::from_bytes(target), &parent, temporary.as_str())
            .and_then(|()| rustix::fs::renameat(&parent, temporary.as_str(), &parent, &name))
            .map_err(|errno| {
                let _ = rustix::fs::unlinkat(&parent, temporary.as_str(), AtFlags::empty());
                Self::error(path, errno)
            })
    }

    /// Removes a file or symlink the agent made (not a folder, and not
    /// through a link).
    pub fn restore_absent(&self, path: &str) -> Result<(), Error> {
        let (parent, name) = self.parent_strict(path, false)?;
        rustix::fs::unlinkat(&parent, &name, AtFlags::empty()).map_err(|e| Self::error(path, e))
    }

    /// Removes an empty folder made at `since` or later (its birth time,
    /// where the file system keeps one); `false` when it is not empty, not
    /// there, older, of unknown age, or reached through a link.
    pub fn remove_empty_dir_made_since(&self, path: &str, since: std::time::SystemTime) -> bool {
        let Ok((parent, name)) = self.parent_strict(path, false) else {
            return false;
        };
        let born = rustix::fs::statx(
            &parent,
            &name,
            AtFlags::SYMLINK_NOFOLLOW,
            rustix::fs::StatxFlags::BTIME,
        )
        .ok()
        .filter(|stat| stat.stx_mask & rustix::fs::StatxFlags::BTIME.bits() != 0)
        .and_then(|stat| {
            let seconds = u64::try_from(stat.stx_btime.tv_sec).ok()?;
            Some(std::time::UNIX_EPOCH + std::time::Duration::new(seconds, stat.stx_btime.tv_nsec))
        });
        // The session's times have milliseconds; the folder's nanoseconds.
        let made_since =
            born.is_some_and(|born| born + std::time::Duration::from_millis(1) >= since);
        made_since && rustix::fs::unlinkat(&parent, &name, AtFlags::REMOVEDIR).is_ok()
    }

    /// Whether a folder stands at `path` (reached through real folders
    /// only), checked without changing anything; a link or a file there,
    /// or on the way, is refused.
    pub fn check_folder(&self, path: &str) -> Result<bool, Error> {
        let (parent, name) = match self.parent_strict(path, false) {
            Ok(found) => found,
            Err(Error::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&parent, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat)
                if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                    == rustix::fs::FileType::Directory =>
            {
                Ok(true)
            }
            Ok(_) => Err(Error::Invalid {
                path: path.to_owned(),
                reason: "a link or a file stands where the folder was; left as it is".to_owned(),
            }),
            Err(Errno::NOENT) => Ok(false),
            Err(errno) => Err(Self::error(path, errno)),
        }
    }

    /// Removes the folder at `path` if it is empty (not through a link);
    /// `Ok(false)` when something is in it. A folder already gone is
    /// removed.
    pub fn remove_empty_dir(&self, path: &str) -> Result<bool, Error> {
        let (parent, name) = self.parent_strict(path, false)?;
        match rustix::fs::unlinkat(&parent, &name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(true),
            Err(Errno::NOTEMPTY | Errno::EXIST) => Ok(false),
            Err(errno) => Err(Self::error(path, errno)),
        }
    }

    /// Makes the folder `path` again with `mode` (the folders on the way
    /// as well); one there already gets the mode.
    pub fn restore_dir(&self, path: &str, mode: u32) -> Result<(), Error> {
        let (parent, name) = self.parent_strict(path, true)?;
        match rustix::fs::mkdirat(&parent, &name, Mode::from_raw_mode(mode & 0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(errno) => return Err(Self::error(path, errno)),
        }
        Self::chmod_dir(path, &parent, &name, mode)
    }

    /// Gives the folder `path` `mode` back (not through a link).
    pub fn restore_dir_mode(&self, path: &str, mode: u32) -> Result<(), Error> {
        let (parent, name) = self.parent_strict(path, false)?;
        Self::chmod_dir(path, &parent, &name, mode)
    }

    /// Sets the mode of the folder `name` in `parent`, refusing a link or a
    /// file there: the folder is opened first (without following), then
    /// changed through its descriptor.
    fn chmod_dir(path: &str, parent: &OwnedFd, name: &OsStr, mode: u32) -> Result<(), Error> {
        let folder = rustix::fs::openat(
            parent,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| match errno {
            Errno::NOTDIR | Errno::LOOP => Error::Invalid {
                path: path.to_owned(),
                reason: "a link or a file stands where the folder was; left as it is".to_owned(),
            },
            errno => Self::error(path, errno),
        })?;
        // A descriptor opened with `O_PATH` takes no `fchmod`; its name in
        // `/proc` leads to the folder itself, never to a path again.
        let by_fd = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&folder));
        rustix::fs::chmod(by_fd.as_str(), Mode::from_raw_mode(mode & 0o7777))
            .map_err(|errno| Self::error(path, errno))
    }
}
