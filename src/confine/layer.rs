//! Commands over an overlay of the workspace.
//!
//! Where user namespaces allow it, the helper mounts an overlay over the
//! workspace in the command's mount namespace ([`mount`]): the workspace
//! is the lower layer, and everything the command creates, changes or
//! removes goes to an upper layer of offcode's, outside the workspace
//! (a write through a name the workspace shares with a file elsewhere, a
//! hard link, copies the file up first: the other name is never
//! written). When the command and everything it started have ended,
//! offcode puts the layer onto the workspace itself ([`Layer::apply`]).

mod apply;
pub mod mount;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use apply::Applied;

/// The folder of commands' layers in offcode's data folder.
pub const LAYERS: &str = "layers";

/// Where a command's layer is written, handed to the helper.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dirs {
    /// The workspace: the lower layer, and where the overlay is mounted.
    pub lower: PathBuf,
    /// The upper layer: what the command changed.
    pub upper: PathBuf,
    /// The overlay's work folder, beside it.
    pub work: PathBuf,
}

/// The file the helper leaves in a layer's folder when the overlay could
/// not be mounted (the command then wrote to the workspace directly): why.
const UNMOUNTED: &str = "unmounted";

/// One command's layer, removed when dropped.
#[derive(Debug)]
pub struct Layer {
    dir: PathBuf,
    dirs: Dirs,
}

impl Layer {
    /// A new layer over `root` in `parent` (offcode's folder for them), named like the
    /// private temp dirs so that those of a session killed during a
    /// command are swept the same way.
    ///
    /// # Errors
    /// When its folders cannot be made.
    pub fn new(parent: &Path, root: &Path) -> std::io::Result<Self> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        crate::paths::private_dir(parent)?;
        let dir = parent.join(super::tmp::private_name());
        super::tmp::make_private_dir(&dir)?;
        super::tmp::sweep_once(&dir, &SWEPT);
        let dirs = Dirs {
            lower: root.to_path_buf(),
            upper: dir.join("upper"),
            work: dir.join("work"),
        };
        std::fs::create_dir(&dirs.upper)?;
        std::fs::create_dir(&dirs.work)?;
        Ok(Self { dir, dirs })
    }

    /// Its folders.
    pub fn dirs(&self) -> &Dirs {
        &self.dirs
    }

    /// Why the overlay was not mounted, if it was not.
    pub fn unmounted(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join(UNMOUNTED)).ok()
    }

    /// What applying would replace or remove in the workspace
    /// (for a folder, everything in it), read without changing anything.
    pub fn touched(&self) -> Vec<PathBuf> {
        apply::touched(&self.dirs.upper)
    }

    /// Puts what the command changed onto the workspace `root`, but the
    /// paths `refused` names. Marked first: what an offcode stopped
    /// meanwhile leaves is finished by the next one started there
    /// ([`finish_interrupted`]).
    pub fn apply(self, root: &Path, refused: &dyn Fn(&Path) -> bool) -> Applied {
        use std::os::unix::ffi::OsStrExt as _;
        let _ = std::fs::write(self.dir.join(APPLYING), root.as_os_str().as_bytes());
        apply::apply(&self.dirs.upper, root, refused)
    }
}

impl Drop for Layer {
    fn drop(&mut self) {
        remove(&self.dir);
    }
}

/// Removes a layer's folder.
fn remove(dir: &Path) {
    // The overlay leaves a folder of mode 0 in its work folder.
    let _ = std::fs::set_permissions(
        dir.join("work/work"),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The file a layer's folder holds while offcode applies it: the
/// workspace's path.
const APPLYING: &str = "applying";

/// At start in `root`: the layers in `dir` (offcode's folder of them) that
/// offcodes now gone left. One whose apply onto `root` was cut short (that
/// offcode was killed meanwhile) is finished now, so the workspace is not
/// left half changed; one of a command cut short is removed (nothing of it
/// lands); one being applied onto another workspace is left for an offcode
/// started there. What was finished, to say.
pub fn finish_interrupted(dir: &Path, root: &Path) -> Vec<String> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut said = Vec::new();
    for (layer, _) in super::tmp::left_by_gone_sessions(dir) {
        match std::fs::read(layer.join(APPLYING)) {
            Ok(onto) if Path::new(std::ffi::OsStr::from_bytes(&onto)) == root => {
                let applied =
                    apply::apply(&layer.join("upper"), root, &super::protect::is_protected);
                said.push(format!(
                    "An earlier offcode was stopped while it applied a command's changes; the rest were applied now ({} written, {} removed){}",
                    applied.written.len(),
                    applied.removed.len(),
                    report(&applied)
                ));
                remove(&layer);
            }
            Ok(_) => {}
            Err(_) => remove(&layer),
        }
    }
    said
}

/// Whether this kernel mounts overlays in a user namespace (5.11).
pub fn kernel_has_overlays() -> bool {
    let name = rustix::system::uname();
    let release = name.release().to_string_lossy();
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let (major, minor) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    (major, minor) >= (5, 11)
}

/// The helper's note that the overlay of `dirs` could not be mounted.
fn note_unmounted(dirs: &Dirs, why: &std::io::Error) {
    if let Some(dir) = dirs.upper.parent() {
        let _ = std::fs::write(dir.join(UNMOUNTED), why.to_string());
    }
}

/// What applying said to the model and the person: nothing when all went
/// onto the workspace.
pub fn report(applied: &Applied) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for (paths, what) in [
        (
            &applied.refused,
            "commands may not change git's config and hooks or offcode's config; left as they were",
        ),
        (
            &applied.unprivileged,
            "a command's set-user-ID and set-group-ID bits are not carried over; removed from",
        ),
    ] {
        if !paths.is_empty() {
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            let _ = write!(text, "\n[offcode: {what}: {}]", names.join(", "));
        }
    }
    for (path, why) in &applied.failed {
        let _ = write!(
            text,
            "\n[offcode: the command's change to `{}` could not be applied: {why}]",
            path.display()
        );
    }
    text
}

#[cfg(test)]
mod tests;
