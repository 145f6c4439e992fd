//! Every file the built-in tools touch is resolved beneath the workspace
//! root, by the kernel.
//!
//! The root is opened once. Each lookup is `openat2(root, path,
//! RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, and reads and writes go through
//! the descriptor it returns, so `..`, absolute paths, and symlinks that lead
//! outside (at any depth, or swapped in between a check and a use) are
//! refused with `outside_workspace`. Where `openat2` is missing (old kernels,
//! seccomp filters, qemu-user), a component-by-component `O_NOFOLLOW` walk
//! (the `walk` module) gives the same answers. Paths are never compared as
//! strings.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod restore;
mod walk;

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Longest path accepted, in bytes (Linux `PATH_MAX`).
const PATH_MAX: usize = 4096;
/// Symlinks followed at most when a write goes through one.
const MAX_WRITE_LINKS: usize = 40;

/// Why a path was refused or could not be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The path leads outside the workspace.
    #[error("outside_workspace: `{path}` is outside the workspace: {reason}")]
    OutsideWorkspace {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// The path is malformed.
    #[error("invalid_path: `{path}`: {reason}")]
    Invalid {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// Nothing exists at the path.
    #[error("not_found: `{path}` does not exist")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// A directory where a file was needed.
    #[error("is_a_directory: `{path}` is a directory")]
    IsADirectory {
        /// The path as given.
        path: String,
    },
    /// A file where a directory was needed.
    #[error("not_a_directory: `{path}` (or a part of it) is not a directory")]
    NotADirectory {
        /// The path as given.
        path: String,
    },
    /// Any other failure.
    #[error("io_error: `{path}`: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The file did not exist.
    Created,
    /// An existing file was replaced.
    Replaced,
}

/// The workspace root, held open.
#[derive(Debug)]
pub struct Sandbox {
    root: PathBuf,
    /// Other absolute spellings of the root (a logical `$PWD` through a
    /// symlink), accepted in absolute paths.
    aliases: Vec<PathBuf>,
    root_fd: OwnedFd,
    kernel: bool,
    /// Folders inside the root no tool may reach (offcode's records).
    secret: Vec<PathBuf>,
}

impl Sandbox {
    /// Opens `root` and probes for `openat2`.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        let mut sandbox = Self::open_root(root)?;
        sandbox.kernel = rustix::fs::openat2(
            &sandbox.root_fd,
            ".",
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )
        .is_ok();
        Ok(sandbox)
    }

    /// Like [`Sandbox::new`] but always uses the userspace walk (for tests
    /// and for comparing both resolvers).
    pub fn with_fallback(root: &Path) -> std::io::Result<Self> {
        Self::open_root(root)
    }

    fn open_root(root: &Path) -> std::io::Result<Self> {
        let root_fd = rustix::fs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            root: root.to_path_buf(),
            aliases: Vec::new(),
            root_fd,
            kernel: false,
            secret: Vec::new(),
        })
    }

    /// Also accepts absolute paths under `alias` when it names the same
    /// directory as the root (same device and inode); otherwise ignores it.
    #[must_use]
    pub fn with_alias(mut self, alias: &Path) -> Self {
        let same = |a: &rustix::fs::Stat, b: &rustix::fs::Stat| {
            a.st_dev == b.st_dev && a.st_ino == b.st_ino
        };
        if alias != self.root
            && let (Ok(root), Ok(other)) =
                (rustix::fs::fstat(&self.root_fd), rustix::fs::stat(alias))
            && same(&root, &other)
        {
            self.aliases.push(alias.to_path_buf());
        }
        self
    }

    /// Refuses every path that resolves into `paths` (offcode's data
    /// folder, when the workspace holds it).
    #[must_use]
    pub fn with_secret(mut self, paths: &[PathBuf]) -> Self {
        let real_root = std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        for path in paths {
            let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            // As the root spells it too, for walks that start there.
            if let Ok(inside) = real.strip_prefix(&real_root) {
                self.secret.push(self.root.join(inside));
                self.secret.push(real);
            } else if path.starts_with(&self.root) {
                self.secret.push(path.clone());
                self.secret.push(real);
            }
        }
        self
    }

    /// The folders no tool may reach, for a walk's filter.
    pub fn clone_secret(&self) -> Vec<PathBuf> {
        self.secret.clone()
    }

    /// `fd` (resolved from `path`) when it is not in a secret folder.
    fn not_secret(&self, path: &str, fd: OwnedFd) -> Result<OwnedFd, Error> {
        if self.secret.is_empty() {
            return Ok(fd);
        }
        let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        let real = std::fs::read_link(&link)
            .unwrap_or_else(|_| self.root.join(self.relative(path).unwrap_or_default()));
        if self.secret.iter().any(|secret| real.starts_with(secret)) {
            return Err(Error::Invalid {
                path: path.to_owned(),
                reason: "it is offcode's own records (sessions, history, checkpoints), which no tool reads or changes".to_owned(),
            });
        }
        Ok(fd)
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether lookups use the kernel's `openat2`.
    pub fn uses_openat2(&self) -> bool {
        self.kernel
    }

    /// The argument as a path relative to the root, checked lexically:
    /// non-empty, no NUL, not too long, and if absolute then under the root
    /// (by components). `..` is left for the kernel to resolve.
    pub fn relative(&self, path: &str) -> Result<PathBuf, Error> {
        let invalid = |reason: &str| Error::Invalid {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        if path.is_empty() {
            return Err(invalid("the path is empty"));
        }
        if path.contains('\0') {
            return Err(invalid("the path contains a NUL byte"));
        }
        if path.len() >= PATH_MAX {
            return Err(invalid("the path is too long"));
        }
        let given = Path::new(path);
        if !given.is_absolute() {
            return Ok(given.to_path_buf());
        }
        std::iter::once(&self.root)
            .chain(&self.aliases)
            .find_map(|root| given.strip_prefix(root).ok())
            .map(|rest| {
                if rest.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    rest.to_path_buf()
                }
            })
            .ok_or_else(|| Error::OutsideWorkspace {
                path: path.to_owned(),
                reason: self.outside_reason(given),
            })
    }

    /// Why an absolute path outside is refused, with the workspace path
    /// it may have meant (small models copy the workspace's path with a
    /// part left out): the longest tail of it that exists here. Only a
    /// hint; nothing is taken in its place.
    fn outside_reason(&self, given: &Path) -> String {
        let reason = format!("absolute paths must lie under `{}`", self.root.display());
        let parts: Vec<&std::ffi::OsStr> = given
            .components()
            .filter_map(|part| match part {
                std::path::Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        let meant = (0..parts.len()).find_map(|skip| {
            let tail: PathBuf = parts[skip..].iter().collect();
            self.resolve(&tail, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
                .is_ok()
                .then_some(tail)
        });
        match meant {
            Some(tail) => format!(
                "{reason}; use paths relative to the workspace: `{}` is there",
                tail.display()
            ),
            None => format!("{reason}; use paths relative to the workspace"),
        }
    }

    fn resolve(&self, relative: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        if !self.kernel {
            return walk::open_beneath(&self.root_fd, relative, flags, mode);
        }
        let mut attempts = 0;
        loop {
            match rustix::fs::openat2(
                &self.root_fd,
                relative,
                flags | OFlags::CLOEXEC,
                mode,
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            ) {
                // The kernel asks for a retry when a rename raced the lookup.
                Err(Errno::AGAIN) if attempts < 16 => attempts += 1,
                result => return result,
            }
        }
    }

    fn error(path: &str, errno: Errno) -> Error {
        let path = path.to_owned();
        match errno {
            Errno::XDEV => Error::OutsideWorkspace {
                path,
                reason: "it leads out of the workspace through `..`, an absolute path or a symlink"
                    .to_owned(),
            },
            Errno::LOOP => Error::OutsideWorkspace {
                path,
                reason: "it goes through a symlink that cannot be followed here (a loop, or a link where none is allowed)"
                    .to_owned(),
            },
            Errno::NOENT => Error::NotFound { path },
            Errno::ISDIR => Error::IsADirectory { path },
            Errno::NOTDIR => Error::NotADirectory { path },
            other => Error::Io {
                path,
                source: other.into(),
            },
        }
    }

    /// Opens an existing path with `flags` (e.g. `O_RDONLY`, `O_DIRECTORY`).
    pub fn open(&self, path: &str, flags: OFlags) -> Result<OwnedFd, Error> {
        let relative = self.relative(path)?;
        let fd = self
            .resolve(&relative, flags, Mode::empty())
            .map_err(|e| Self::error(path, e))?;
        self.not_secret(path, fd)
    }

    /// Whether `path` resolves beneath the root without following a final
    /// symlink (used to re-check every entry a directory walk returns).
    pub fn contains(&self, path: &str) -> bool {
        self.open(path, OFlags::PATH | OFlags::NOFOLLOW).is_ok()
    }

    /// Opens a regular file for reading. `O_NONBLOCK` keeps a FIFO or a
    /// device from blocking the open; anything but a regular file is refused.
    pub fn open_file(
        &self,
        path: &str,
        flags: OFlags,
    ) -> Result<(OwnedFd, rustix::fs::Stat), Error> {
        let fd = self.open(path, flags | OFlags::RDONLY | OFlags::NONBLOCK)?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| Self::error(path, e))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Ok((fd, stat)),
            FileType::Directory => Err(Error::IsADirectory {
                path: path.to_owned(),
            }),
            _ => Err(Error::Invalid {
                path: path.to_owned(),
                reason: "not a regular file (a pipe, socket or device)".to_owned(),
            }),
        }
    }

    /// A regular file's content.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, Error> {
        let (fd, stat) = self.open_file(path, OFlags::empty())?;
        let mut content = Vec::with_capacity(usize::try_from(stat.st_size).unwrap_or(0));
        File::from(fd)
            .read_to_end(&mut content)
            .map_err(|source| Error::Io {
                path: path.to_owned(),
                source,
            })?;
        Ok(content)
    }

    /// The directory holding `relative`'s last component, created (one
    /// component at a time, never through a symlink) when missing.
    fn parent_dir(
        &self,
        path: &str,
        relative: &Path,
    ) -> Result<(OwnedFd, std::ffi::OsString), Error> {
        let (parent, name) = self.parent_dir_unchecked(path, relative)?;
        self.check_not_secret(path, &parent, &name)?;
        Ok((parent, name))
    }

    /// Refuses `name` in the folder `parent` when it lies in a secret
    /// folder.
    fn check_not_secret(&self, path: &str, parent: &OwnedFd, name: &OsStr) -> Result<(), Error> {
        if self.secret.is_empty() {
            return Ok(());
        }
        let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(parent));
        let real = std::fs::read_link(&link).map_or_else(
            |_| self.root.join(self.relative(path).unwrap_or_default()),
            |dir| dir.join(name),
        );
        if self.secret.iter().any(|secret| real.starts_with(secret)) {
            return Err(Error::Invalid {
                path: path.to_owned(),
                reason: "it is offcode's own records (sessions, history, checkpoints), which no tool reads or changes".to_owned(),
            });
        }
        Ok(())
    }

    fn parent_dir_unchecked(
        &self,
        path: &str,
        relative: &Path,
    ) -> Result<(OwnedFd, std::ffi::OsString), Error> {
        let name = match relative.components().next_back() {
            Some(Component::Normal(name)) => name.to_owned(),
            _ => {
                return Err(Error::Invalid {
                    path: path.to_owned(),
                    reason: "the path must end in a file name".to_owned(),
                });
            }
        };
        let parent = relative.parent().unwrap_or(Path::new("."));
        let directory = OFlags::PATH | OFlags::DIRECTORY;
        match self.resolve(parent, directory, Mode::empty()) {
            Ok(fd) => return Ok((fd, name)),
            Err(Errno::NOENT) => {}
            Err(errno) => return Err(Self::error(path, errno)),
        }
        let components: Vec<Component> = parent.components().collect();
        let (mut current, missing) = (0..components.len())
            .rev()
            .find_map(|split| {
                let prefix: PathBuf = components[..split].iter().collect();
                match self.resolve(&prefix, directory, Mode::empty()) {
                    Err(Errno::NOENT) => None,
                    result => Some(result.map(|fd| (fd, &components[split..]))),
                }
            })
            .unwrap_or_else(|| Err(Errno::NOENT))
            .map_err(|errno| Self::error(path, errno))?;
        if missing.iter().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(Error::Invalid {
                path: path.to_owned(),
                reason: "`..` or `.` after a directory that does not exist yet".to_owned(),
            });
        }
        for component in missing {
            let Component::Normal(part) = component else {
                continue;
            };
            match rustix::fs::mkdirat(&current, *part, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(Self::error(path, errno)),
            }
            current = rustix::fs::openat(
                &current,
                *part,
                directory | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|errno| Self::error(path, errno))?;
        }
        Ok((current, name))
    }

    /// Replaces (or creates) a file atomically: the content goes to a
    /// temporary file in the same directory, which is synced and renamed over
    /// the target; an existing file keeps its permissions. Writing through a
    /// symlink writes its target, if that lies in the workspace.
    pub fn write(&self, path: &str, content: &[u8]) -> Result<Written, Error> {
        let mut relative = self.relative(path)?;
        for _ in 0..MAX_WRITE_LINKS {
            let (parent, name) = self.parent_dir(path, &relative)?;
            let existing = match rustix::fs::statat(&parent, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => Some(stat),
                Err(Errno::NOENT) => None,
                Err(errno) => return Err(Self::error(path, errno)),
            };
            let kind = existing.map(|s| FileType::from_raw_mode(s.st_mode));
            match kind {
                Some(FileType::Symlink) => {
                    let target = rustix::fs::readlinkat(&parent, &name, Vec::new())
                        .map_err(|errno| Self::error(path, errno))?;
                    let target = Path::new(OsStr::from_bytes(target.as_bytes())).to_path_buf();
                    if target.is_absolute() {
                        return Err(Self::error(path, Errno::XDEV));
                    }
                    relative = relative.parent().unwrap_or(Path::new("")).join(target);
                    continue;
                }
                Some(FileType::Directory) => {
                    return Err(Error::IsADirectory {
                        path: path.to_owned(),
                    });
                }
                _ => {}
            }
            let written = if existing.is_none() {
                Written::Created
            } else {
                Written::Replaced
            };
            let mode = existing.map(|s| Mode::from_raw_mode(s.st_mode & 0o7777));
            replace(&parent, &name, content, mode).map_err(|source| Error::Io {
                path: path.to_owned(),
                source,
            })?;
            return Ok(written);
        }
        Err(Self::error(path, Errno::LOOP))
    }

    /// Removes a file (not a directory).
    pub fn remove(&self, path: &str) -> Result<(), Error> {
        let relative = self.relative(path)?;
        let (parent, name) = self.parent_dir(path, &relative)?;
        rustix::fs::unlinkat(&parent, &name, AtFlags::empty())
            .map_err(|errno| Self::error(path, errno))
    }

    /// `path` relative to the root, for display, or as given when it is not
    /// under it.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// The name of a file written beside its place before it is renamed over
/// it. Not derived from the place's name: a long name plus a suffix could
/// exceed the 255-byte limit.
pub(crate) fn temporary_name() -> String {
    format!(
        ".offcode-{}-{:012x}.tmp",
        std::process::id(),
        crate::ids::random_u64() & 0xffff_ffff_ffff
    )
}

/// Writes `content` to a temporary file in `parent` and renames it to `name`.
pub(crate) fn replace(
    parent: &OwnedFd,
    name: &OsStr,
    content: &[u8],
    mode: Option<Mode>,
) -> std::io::Result<()> {
    let temporary = temporary_name();
    let fd = rustix::fs::openat(
        parent,
        temporary.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )?;
    let result = (|| {
        let mut file = File::from(fd);
        file.write_all(content)?;
        if let Some(mode) = mode {
            rustix::fs::fchmod(&file, mode)?;
        }
        file.sync_data()?;
        rustix::fs::renameat(parent, temporary.as_str(), parent, name)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(parent, temporary.as_str(), AtFlags::empty());
    }
    result
}
