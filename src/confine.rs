//! Kernel confinement of every process a `bash` call or `!cmd` starts.
//!
//! The gate reads command lines; it cannot see what `cargo test`'s
//! `build.rs`, a Makefile or a script the model wrote will do. So each
//! command runs under rules the kernel enforces, approved or not:
//!
//! - **Landlock**: writes only beneath the workspace, the session's private
//!   temp dir and directories the config lists; reads everywhere; no
//!   signals to processes outside the sandbox (ABI 6).
//! - **Network**: a fresh network namespace (only its own loopback, so a
//!   test suite's local server still works) where unprivileged user
//!   namespaces are allowed, else Landlock's TCP rules refusing every
//!   `connect` and `bind` (ABI 4).
//! - **Protected files**: `.git/config`, `.git/hooks/`, `offcode.jsonc`
//!   and `.offcode/` inside the workspace are bind-mounted read-only in a
//!   private mount namespace; in any case offcode compares them before and
//!   after each command and restores what changed ([`protect`]).
//! - A private PID namespace: when the command ends, everything it left
//!   running ends with it.
//!
//! All of it is applied by a re-executed `offcode` (the helper, entered
//! through [`HELPER_ARG`]) just before it execs bash, so offcode itself is
//! never confined. The helper refuses to run the command when the kernel
//! cannot confine it as asked.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod after;
mod gitconfig;
pub mod gitdirs;
mod helper;
pub mod includes;
pub mod kernel;
mod lasting;
pub mod layer;
pub mod own;
mod places;
pub mod protect;
mod shell;
mod status;
mod supervise;
mod sys;
mod tmp;

pub use lasting::on_lasting_thread;
pub use sys::{
    announce_group, close_inherited_on_exec, die_with_parent, ignore_termination, new_session,
    watch_exit,
};

pub use helper::helper;
pub use shell::Shell;
pub use status::{Status, Support};

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where a confined program's own environment (an MCP server's
/// `environment`) travels to the helper, as JSON: set on the helper itself,
/// `LD_PRELOAD` and the like would run code in it before it confines
/// anything. The helper gives them to the program it execs.
pub const CONFINED_ENV: &str = "OFFCODE_CONFINED_ENV";

/// The hidden first argument that makes `offcode` the helper:
/// `offcode __confine SPEC-JSON PROGRAM ARGS...`.
pub const HELPER_ARG: &str = "__confine";

/// Whether process `pid` runs: listed in `/proc`, and neither a zombie
/// nor dead (a killed process stays listed until its parent reaps it).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
    })
}

/// What a confined command may do, handed to the helper.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// Directories the command may write beneath.
    pub writable: Vec<PathBuf>,
    /// Paths inside them that stay read-only (bind-mounted, where the
    /// kernel allows a private mount namespace).
    pub read_only: Vec<PathBuf>,
    /// The command may reach the network.
    pub network: bool,
    /// Try private namespaces (user, mount, PID, network) before falling
    /// back to Landlock alone; off only to test that fallback.
    #[serde(default = "yes")]
    pub namespaces: bool,
    /// Places where sockets live, replaced in the mount namespace by empty
    /// private directories (a socket file by `/dev/null`): a daemon behind
    /// a UNIX socket (docker, tmux, an ssh or gpg agent, the session bus)
    /// could run anything outside the sandbox, and Landlock only covers
    /// such sockets from ABI 9. What [`Spec::writable`],
    /// [`Spec::readable`] and [`Spec::visible`] name beneath them is
    /// carried over.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
    /// Directories kept visible (as they are) where a hidden place would
    /// cover them: the home directory when it lies in `/tmp`.
    #[serde(default)]
    pub visible: Vec<PathBuf>,
    /// The person's files and offcode's own inside writable directories
    /// (shell and login files, `~/.ssh`, other tools' settings, offcode's
    /// config and data): read-only bind mounts, and without a mount
    /// namespace never granted to Landlock's write rules.
    #[serde(default)]
    pub personal: Vec<PathBuf>,
    /// Where the command may read and run programs from; everywhere when
    /// `None`. Writable directories are readable too.
    #[serde(default)]
    pub readable: Option<Vec<PathBuf>>,
    /// Paths bound over themselves in the mount namespace, so that they can
    /// be neither renamed nor removed: the workspace's `.git` (renamed
    /// away, its read-only config and hooks would go with it, and a new
    /// `.git` take its place).
    #[serde(default)]
    pub pinned: Vec<PathBuf>,
    /// offcode's own records (sessions, history, checkpoints): neither read
    /// nor written. In the mount namespace an empty private folder covers
    /// each; without one, Landlock's rules go around them.
    #[serde(default)]
    pub secret: Vec<PathBuf>,
    /// The overlay the command runs over, where namespaces allow one
    /// ([`layer`]): its writes to the workspace are held there.
    #[serde(default)]
    pub layer: Option<layer::Dirs>,
}

fn yes() -> bool {
    true
}

/// Why a command could not be confined.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec handed to the helper is not valid.
    #[error("the confinement spec is invalid: {0}")]
    Spec(String),
    /// Landlock is missing or refused the rules.
    #[error("Landlock cannot confine the command: {0}")]
    Landlock(String),
    /// The system-call filter that refuses UNIX sockets (used where there
    /// is no mount namespace) could not be applied.
    #[error("the system-call filter cannot be applied: {0}")]
    Seccomp(String),
    /// Neither a network namespace nor Landlock's TCP rules are available.
    #[error(
        "the network cannot be closed: no user namespaces ({namespace}) and no Landlock TCP rules (kernel 6.7 or later)"
    )]
    Network {
        /// Why no user namespace could be made.
        namespace: String,
    },
    /// A namespace step failed after the namespaces were created.
    #[error("setting up the namespaces failed at {step}: {source}")]
    Namespace {
        /// The step that failed.
        step: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The command could not be executed.
    #[error("cannot run `{program}`: {source}")]
    Exec {
        /// The program.
        program: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// The rules and the helper that applies them.
#[derive(Debug)]
pub struct Confinement {
    /// The `offcode` binary that acts as the helper.
    helper: PathBuf,
    /// The rules.
    spec: Spec,
    /// The session's private temp dir (`TMPDIR`), removed on drop.
    tmp: PathBuf,
    /// The home directory, when commands may write beneath it: the
    /// person's files there are watched ([`protect::remove_new_personal`]).
    home: Option<PathBuf>,
    /// What of the home directory to hide and to keep read-only, being
    /// worked out in the background, then known.
    home_scan: std::sync::Mutex<HomeScan>,
}

/// What the home directory holds that commands must not reach: found by
/// walking it ([`places::home_sockets`], [`places::personal_files`]), slow
/// on a large home, so off the start-up path.
#[derive(Debug, Clone, Default)]
struct HomeFound {
    /// Sockets and the folders holding them.
    hidden: Vec<PathBuf>,
    /// The person's files, and what they link to in a writable folder.
    personal: Vec<PathBuf>,
}

/// The scan of the home directory, running or done.
#[derive(Debug)]
enum HomeScan {
    Running(std::thread::JoinHandle<HomeFound>),
    Done(HomeFound),
}

impl Confinement {
    /// Confinement for commands run in `root`: writable beneath `root`, a
    /// new private temp dir and `writable`; `network` opens the network.
    /// Git's config and hooks and offcode's config stay read-only.
    pub fn new(
        helper: PathBuf,
        root: &Path,
        writable: &[PathBuf],
        network: bool,
        readable: Option<Vec<PathBuf>>,
        home: Option<&Path>,
    ) -> std::io::Result<Self> {
        let tmp = tmp::private_temp_name();
        let mut dirs = vec![root.to_path_buf(), tmp.clone()];
        dirs.extend(writable.iter().cloned());
        let mut read_only: Vec<PathBuf> = protect::PROTECTED.iter().map(|p| root.join(p)).collect();
        read_only.extend(includes::include_targets(root));
        let scan = {
            let (home, dirs) = (home.map(Path::to_path_buf), dirs.clone());
            std::thread::spawn(move || {
                home.map_or_else(HomeFound::default, |home| HomeFound {
                    hidden: places::home_sockets(&home, &dirs),
                    personal: places::personal_files(&dirs, Some(&home)),
                })
            })
        };
        Ok(Self {
            helper,
            home_scan: std::sync::Mutex::new(HomeScan::Running(scan)),
            spec: Spec {
                hidden: places::socket_places(&dirs),
                visible: home.map(Path::to_path_buf).into_iter().collect(),
                personal: Vec::new(),
                writable: dirs.clone(),
                read_only,
                network,
                namespaces: true,
                readable,
                pinned: Vec::new(),
                secret: Vec::new(),
                layer: None,
            },
            tmp,
            home: home
                .filter(|home| dirs.iter().any(|dir| home.starts_with(dir)))
                .map(Path::to_path_buf),
        })
    }

    /// Adds offcode's own files and directories (config, data, state) to
    /// the person's files, where a writable directory holds them.
    #[must_use]
    pub fn with_own_files(mut self, own: &[PathBuf]) -> Self {
        // Where they really are, too: `~/.config/offcode` may be a link.
        let real: Vec<PathBuf> = own
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
        for path in own.iter().chain(&real) {
            let inside = self.spec.writable.iter().any(|dir| path.starts_with(dir));
            if inside && !self.spec.personal.iter().any(|p| path.starts_with(p)) {
                self.spec.personal.push(path.clone());
            }
        }
        self
    }

    /// Keeps `paths` (offcode's data folder) from commands: neither read
    /// nor written, wherever they are.
    #[must_use]
    pub fn with_secret(mut self, paths: &[PathBuf]) -> Self {
        for path in paths {
            let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            for path in [path.clone(), real] {
                if !self.spec.secret.contains(&path) {
                    self.spec.secret.push(path);
                }
            }
        }
        self
    }

    /// The rules in force.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The home directory, when commands may write beneath it.
    pub fn writable_home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The session's private temp dir.
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// The helper command that runs `program` with `args` confined, over
    /// the overlay `layer` writes to when given ([`layer`]). The
    /// private temp dir is made now if it is not there: a session that
    /// runs no command leaves nothing in the shared temp dir.
    ///
    /// # Errors
    /// When that dir cannot be made, or is there and not offcode's.
    pub fn command(
        &self,
        program: &str,
        args: &[&str],
        layer: Option<&layer::Dirs>,
    ) -> std::io::Result<std::process::Command> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        tmp::make_private_dir(&self.tmp).map_err(|error| {
            std::io::Error::new(
                error.kind(),
                format!(
                    "the private temp dir {} cannot be used: {error}",
                    self.tmp.display()
                ),
            )
        })?;
        tmp::sweep_once(&self.tmp, &SWEPT);
        let mut spec = self.spec.clone();
        let home = self.home_found();
        spec.hidden.extend(home.hidden);
        spec.hidden.sort();
        spec.hidden.dedup();
        spec.personal.extend(home.personal);
        spec.pinned = places::pinned(&spec);
        spec.layer = layer.cloned();
        let mut command = own::command(&self.helper);
        command
            .arg(HELPER_ARG)
            .arg(serde_json::to_string(&spec).unwrap_or_default())
            .arg(program)
            .args(args)
            .env("TMPDIR", &self.tmp);
        if let Some(cache) = self.go_cache(|name| std::env::var_os(name)) {
            command.env("GOCACHE", cache);
        }
        Ok(command)
    }

    /// What the home directory holds that commands must not reach,
    /// waiting for the scan started with the session the first time.
    fn home_found(&self) -> HomeFound {
        let mut state = self
            .home_scan
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let done = match std::mem::replace(&mut *state, HomeScan::Done(HomeFound::default())) {
            HomeScan::Running(scan) => scan.join().unwrap_or_default(),
            HomeScan::Done(found) => found,
        };
        *state = HomeScan::Done(done.clone());
        done
    }

    /// Where Go's build cache goes when the one Go would use cannot be
    /// written here (`~/.cache/go-build` is outside the workspace): the
    /// private temp dir, so `go build` works confined. `None` when
    /// `GOCACHE` is set or its default is writable (`sandbox.writable`).
    fn go_cache(&self, var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
        if var("GOCACHE").is_some() {
            return None;
        }
        let cache_home = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")));
        let default = cache_home.map(|dir| dir.join("go-build"));
        let writable = default
            .as_ref()
            .is_some_and(|dir| self.spec.writable.iter().any(|w| dir.starts_with(w)));
        (!writable).then(|| self.tmp.join("go-build"))
    }
}

impl Drop for Confinement {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// Whether shell commands run confined by the kernel.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Confined (the default).
    #[default]
    On,
    /// Not confined; warned about in every session.
    Off,
}

/// Kernel confinement of shell commands (`"sandbox": "off"` is short for
/// `{"mode": "off"}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// On or off. Only the global config may turn it off.
    pub mode: SandboxMode,
    /// Commands may reach the network.
    pub network: bool,
    /// More directories commands may write beneath (a leading `~/` is the
    /// home directory). Only the global config may add them.
    pub writable: Vec<String>,
    /// Where commands may read and run programs from; everywhere when
    /// unset.
    pub readable: Option<Vec<String>>,
}

#[cfg(test)]
mod tests;
