//! Folders in a revert: those the steps made are removed when emptied,
//! those they removed are made again, and a mode they changed is put back,
//! all judged by the folders the checkpoints recorded. Where a checkpoint
//! did not record folders (written by an older offcode) or never entered
//! one (`.gitignore`d), a folder left empty is removed only when it was
//! born since the first step began.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{Left, Step, shown, visible};
use crate::checkpoint::manifest::{Folder, Manifest};
use crate::checkpoint::{Error, Store};
use crate::sandbox::Sandbox;

/// What happens to one folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The steps made it: removed, if nothing else is left in it.
    Remove,
    /// The steps removed it: made again with this mode.
    Make(u32),
    /// The steps changed its mode: given this one back.
    Mode(u32),
}

/// One folder of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// What happens.
    pub change: Change,
}

impl Planned {
    /// The plan's line for it.
    pub fn line(&self) -> String {
        let path = shown(&self.path);
        match self.change {
            Change::Remove => format!("remove  {path}/"),
            Change::Make(_) => format!("restore {path}/"),
            Change::Mode(mode) => format!("mode    {path}/  {mode:o}"),
        }
    }
}

/// What the folders of a plan come to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folders {
    /// The folders changed, in path order.
    pub planned: Vec<Planned>,
    /// Folders the steps changed that were changed by hand since.
    pub left: Vec<Left>,
    /// Folders whose emptiness after the revert is judged by birth time:
    /// `None` for every folder (a checkpoint without folders), else those
    /// named here (no checkpoint entered them).
    pub by_birth: Option<BTreeSet<PathBuf>>,
}

impl Folders {
    /// Whether only birth time can tell whether `dir` was made by the
    /// steps (no checkpoint recorded it).
    pub fn judged_by_birth(&self, dir: &Path) -> bool {
        self.by_birth.as_ref().is_none_or(|set| set.contains(dir))
    }

    /// The folders planned for `change`, with the mode it carries.
    fn planned(&self, change: fn(Change) -> Option<u32>) -> Vec<(&PathBuf, u32)> {
        self.planned
            .iter()
            .filter_map(|f| change(f.change).map(|mode| (&f.path, mode)))
            .collect()
    }

    /// Removes the folders the steps made, deepest first, where nothing
    /// else is left in them; what stays goes to `failed`, with why.
    pub fn remove_made(&self, sandbox: &Sandbox, failed: &mut Vec<Left>) {
        let mut made = self.planned(|c| (c == Change::Remove).then_some(0));
        made.sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
        for (path, _) in made {
            let reason = match sandbox.remove_empty_dir(&text(path)) {
                Ok(true) => continue,
                Ok(false) => "the agent made this folder, but what is in it now was not taken back; left as it is".to_owned(),
                Err(e) => visible(&e.to_string()),
            };
            failed.push(Left {
                path: path.clone(),
                reason,
            });
        }
    }

    /// Makes again the folders the steps removed, outermost first, with
    /// their modes.
    pub fn make_removed(&self, sandbox: &Sandbox, failed: &mut Vec<Left>) {
        let mut removed = self.planned(|c| match c {
            Change::Make(mode) => Some(mode),
            _ => None,
        });
        removed.sort_by_key(|(p, _)| p.components().count());
        for (path, mode) in removed {
            if let Err(e) = sandbox.restore_dir(&text(path), mode) {
                failed.push(Left {
                    path: path.clone(),
                    reason: visible(&e.to_string()),
                });
            }
        }
    }

    /// Gives back the modes the steps changed.
    pub fn put_back_modes(&self, sandbox: &Sandbox, failed: &mut Vec<Left>) {
        let modes = self.planned(|c| match c {
            Change::Mode(mode) => Some(mode),
            _ => None,
        });
        for (path, mode) in modes {
            if let Err(e) = sandbox.restore_dir_mode(&text(path), mode) {
                failed.push(Left {
                    path: path.clone(),
                    reason: visible(&e.to_string()),
                });
            }
        }
    }
}

/// A path as the sandbox takes it (a name that is not UTF-8 is refused
/// before anything is written).
pub(super) fn text(path: &Path) -> String {
    path.to_str().unwrap_or_default().to_owned()
}

/// A folder before the first of some steps and after the last: its mode,
/// or none when it was not there.
#[derive(Debug, Clone, Copy)]
struct Spanned {
    first: Option<u32>,
    last: Option<u32>,
}

/// The folders `steps` made, removed or changed the mode of; `None` when a
/// checkpoint of theirs did not record folders.
fn span(store: &Store, steps: &[Step]) -> Result<Option<BTreeMap<PathBuf, Spanned>>, Error> {
    let mut span: BTreeMap<PathBuf, Spanned> = BTreeMap::new();
    for step in steps {
        if step.before == step.after {
            continue;
        }
        let before = store.manifest(&step.before)?;
        let after = store.manifest(&step.after)?;
        let (Some(before), Some(after)) = (before.folders, after.folders) else {
            return Ok(None);
        };
        let modes = |folders: Vec<Folder>| -> BTreeMap<PathBuf, u32> {
            folders.into_iter().map(|f| (f.path, f.mode)).collect()
        };
        let (before, after) = (modes(before), modes(after));
        let paths: BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
        for path in paths {
            let (was, is) = (before.get(path).copied(), after.get(path).copied());
            if was == is {
                continue;
            }
            span.entry(path.clone())
                .and_modify(|spanned| spanned.last = is)
                .or_insert(Spanned {
                    first: was,
                    last: is,
                });
        }
    }
    Ok(Some(span))
}

/// What to do with the folders `steps` changed, given the workspace
/// `now`, and for the files `removed` by the plan, which of their folders
/// only birth time can judge.
pub fn plan(
    store: &Store,
    steps: &[Step],
    now: &Manifest,
    removed: &[&Path],
) -> Result<Folders, Error> {
    let (Some(span), Some(_)) = (span(store, steps)?, now.folders.as_ref()) else {
        return Ok(Folders::default());
    };
    let mut folders = Folders {
        by_birth: Some(
            removed
                .iter()
                .flat_map(|path| path.ancestors().skip(1))
                .filter(|dir| !dir.as_os_str().is_empty() && now.folder(dir).is_none())
                .map(Path::to_path_buf)
                .collect(),
        ),
        ..Folders::default()
    };
    for (path, Spanned { first, last }) in span {
        let current = now.folder(&path).map(|f| f.mode);
        let change = match (first, last) {
            (None, Some(_)) if current.is_some() => Change::Remove,
            // Made again only where nothing stands now.
            (Some(mode), None) if current.is_none() && now.get(&path).is_none() => {
                Change::Make(mode)
            }
            (Some(mode), Some(_)) if current == last => Change::Mode(mode),
            (Some(_), Some(_)) if current.is_some() => {
                folders.left.push(Left {
                    path,
                    reason:
                        "its mode was changed by hand since the agent changed it; left as it is"
                            .to_owned(),
                });
                continue;
            }
            _ => continue,
        };
        folders.planned.push(Planned { path, change });
    }
    Ok(folders)
}
