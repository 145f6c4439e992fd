//! Where confined commands must not reach: the places daemons listen
//! (replaced by empty private folders in the mount namespace) and the
//! person's own files (read-only), worked out from the machine as it is.

use std::path::{Path, PathBuf};

use super::protect;

/// Where daemons' sockets live, system-wide and per user (`/run/user/UID`
/// is `$XDG_RUNTIME_DIR`): each is replaced by an empty private directory.
const SOCKET_PLACES: &[&str] = &[
    "/tmp",
    "/var/tmp",
    "/run",
    "/var/run",
    "/var/lock",
    "/dev/shm",
    // POSIX message queues: the IPC namespace has its own, but a mount of
    // the host's queue file system would still show them.
    "/dev/mqueue",
];

/// How deep beneath a hidden folder of the home directory sockets are
/// looked for (podman's machine socket lies 6 down), and how many entries
/// are looked at in all.
const SOCKET_DEPTH: usize = 7;
const SOCKET_BUDGET: usize = 100_000;

/// The system's places to hide from commands that may write `writable`:
/// [`SOCKET_PLACES`] and `$XDG_RUNTIME_DIR`. A place that a writable
/// directory contains (a workspace of `/`) cannot be hidden whole; the
/// sockets in it are, one by one.
pub(super) fn socket_places(writable: &[PathBuf]) -> Vec<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let places = SOCKET_PLACES
        .iter()
        .map(PathBuf::from)
        .chain(runtime)
        .filter_map(|place| std::fs::canonicalize(place).ok())
        .filter(|place| place.is_dir());
    hideable(places.collect(), writable)
}

/// What to hide of the home directory: each socket among its hidden
/// entries, and each folder beneath them that holds one (`~/.ssh` with a
/// control master, `~/.gnupg`, `~/.docker/run`, podman's machine folder).
/// Slow on a large home (every cache is walked), so worked out in the
/// background while the session starts ([`super::Confinement::new`]).
pub(super) fn home_sockets(home: &Path, writable: &[PathBuf]) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut budget = SOCKET_BUDGET;
    let mut places = Vec::new();
    let hidden = std::fs::read_dir(home).into_iter().flatten().flatten();
    for entry in hidden.filter(|e| e.file_name().to_string_lossy().starts_with('.')) {
        match entry.file_type() {
            Ok(kind) if kind.is_socket() => places.push(entry.path()),
            Ok(kind) if kind.is_dir() => {
                for socket in sockets_in(&entry.path(), SOCKET_DEPTH, &mut budget) {
                    places.extend(socket.parent().map(Path::to_path_buf));
                }
            }
            _ => {}
        }
    }
    hideable(places, writable)
}

/// `places` sorted, parents first (a folder of the home directory in
/// `/tmp` is hidden in the private `/tmp` that kept the home directory
/// visible); one a writable directory contains is replaced by its
/// sockets.
fn hideable(mut places: Vec<PathBuf>, writable: &[PathBuf]) -> Vec<PathBuf> {
    places.sort();
    places.dedup();
    let mut budget = SOCKET_BUDGET;
    let mut hidden = Vec::new();
    for place in places {
        if place.is_dir() && writable.iter().any(|dir| place.starts_with(dir)) {
            hidden.extend(sockets_in(&place, SOCKET_DEPTH, &mut budget));
        } else {
            hidden.push(place);
        }
    }
    hidden
}

/// The sockets beneath `dir`, at most `depth` folders down, symlinks not
/// followed, looking at no more than `budget` entries.
fn sockets_in(dir: &Path, depth: usize, budget: &mut usize) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        match entry.file_type() {
            Ok(kind) if kind.is_socket() => found.push(entry.path()),
            Ok(kind) if kind.is_dir() && depth > 0 => {
                found.extend(sockets_in(&entry.path(), depth - 1, budget));
            }
            _ => {}
        }
    }
    found
}

/// The person's own files in `home` that commands able to write `writable`
/// could reach: every hidden entry (shell and login files, `.ssh`,
/// `.gnupg`, `.config` of every tool, offcode's own) and `bin`, which a
/// login shell puts on `PATH`, where a writable directory holds `home`;
/// and wherever they are links into a writable directory, what they lead
/// to (a dotfiles repository).
pub(super) fn personal_files(writable: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let Some(home) = home else {
        return Vec::new();
    };
    let canonical: Vec<PathBuf> = writable
        .iter()
        .map(|dir| std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()))
        .collect();
    let mut personal = protect::personal_targets(home, &canonical);
    if writable.iter().any(|dir| home.starts_with(dir)) {
        personal.extend(
            protect::personal_names(home)
                .iter()
                .map(|name| home.join(name)),
        );
        // The folders of the home on `PATH` (`~/go/bin`): a program put
        // there runs in place of the one the person means.
        personal.extend(path_folders_in(home, std::env::var_os("PATH")));
    }
    personal
}

/// The folders of `path` (a `PATH` value) that lie in `home`, as they are.
fn path_folders_in(home: &Path, path: Option<std::ffi::OsString>) -> Vec<PathBuf> {
    path_entries_in(home, path)
        .into_iter()
        .filter(|dir| dir.is_dir())
        .collect()
}

/// The folders of `path` (a `PATH` value) in `home` that are not there:
/// a command that makes one fills the person's `PATH` (`~/go/bin` before
/// the first `go install`).
pub(super) fn missing_path_folders_in(
    home: &Path,
    path: Option<std::ffi::OsString>,
) -> Vec<PathBuf> {
    path_entries_in(home, path)
        .into_iter()
        .filter(|dir| std::fs::symlink_metadata(dir).is_err())
        .collect()
}

fn path_entries_in(home: &Path, path: Option<std::ffi::OsString>) -> Vec<PathBuf> {
    std::env::split_paths(&path.unwrap_or_default())
        .filter(|dir| dir.is_absolute() && dir.starts_with(home) && dir != home)
        .collect()
}

/// What is bound over itself so that it can be neither renamed nor
/// removed: the workspace's `.git` (as it is now: a repository made since
/// the session started is pinned too), and every folder between a
/// writable directory and a path kept from commands inside it (the home
/// directory inside a workspace above it, `~/.config`...). Protection goes
/// by path: renamed away, such a folder would take the read-only mounts
/// with it and leave its name for the command to fill. Parents first.
pub(super) fn pinned(spec: &super::Spec) -> Vec<PathBuf> {
    let real_dir = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    let mut pinned: Vec<PathBuf> = spec
        .writable
        .first()
        .map(|root| root.join(".git"))
        .filter(|git| std::fs::symlink_metadata(git).is_ok_and(|m| !m.file_type().is_symlink()))
        .into_iter()
        .collect();
    let kept = spec
        .personal
        .iter()
        .chain(&spec.secret)
        .chain(&spec.read_only)
        .chain(&spec.hidden);
    for path in kept {
        for dir in &spec.writable {
            if path == dir || !path.starts_with(dir) {
                continue;
            }
            let between = path
                .ancestors()
                .skip(1)
                .take_while(|ancestor| *ancestor != dir.as_path());
            for ancestor in between {
                if !pinned.iter().any(|p| p == ancestor) && real_dir(ancestor) {
                    pinned.push(ancestor.to_path_buf());
                }
            }
        }
    }
    pinned.sort_by_key(|path| path.components().count());
    pinned
}
