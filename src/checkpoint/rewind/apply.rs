//! Carrying out a revert's plan: what can be put back as things are now,
//! and then removals, folders and restores through the sandbox.

use std::path::{Path, PathBuf};

use super::folders::{self, text};
use super::{Action, Left, Plan, Planned, visible};
use crate::checkpoint::manifest::Kind;
use crate::checkpoint::{Error, Store};

/// What [`apply`] did.
#[derive(Debug, Default)]
pub struct Applied {
    /// Whether anything was written: false when a path could not be put
    /// back, found before the first write.
    pub written: bool,
    /// The paths that could not be put back, with why.
    pub failed: Vec<Left>,
    /// What offcode undid again in what was put back: git settings that
    /// would run programs when a person next uses git (a config offcode
    /// had disarmed after a command, put back as the agent wrote it).
    pub disarmed: Vec<String>,
}

/// Carries out `plan` through the sandbox: every object is read and
/// checked, and every path checked (a link or a file where a folder was, a
/// folder where the file was, a name that is not UTF-8), before the first
/// write. A path that cannot be put back is named with why and left; every
/// other is put back (a revert is never refused whole because of one
/// file). Then removals (deepest first, with the folders they leave empty
/// that were made since the first step began), then restores; then the
/// check every command gets for git settings that would run programs.
pub fn apply(
    store: &Store,
    sandbox: &crate::sandbox::Sandbox,
    plan: &Plan,
) -> Result<Applied, Error> {
    let (kept, contents, blocked) = checked(store, sandbox, plan);
    if kept.is_empty() {
        return Ok(Applied {
            written: false,
            failed: blocked,
            disarmed: Vec::new(),
        });
    }
    let plan = &kept;
    let since = crate::confine::gitdirs::mark();
    let mut failed = blocked;
    let mut removed: Vec<&PathBuf> = plan
        .planned
        .iter()
        .filter(|p| p.to.is_none())
        .map(|p| &p.path)
        .collect();
    removed.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for path in &removed {
        if let Err(e) = sandbox.restore_absent(&text(path)) {
            failed.push(Left {
                path: (*path).clone(),
                reason: visible(&e.to_string()),
            });
        }
    }
    plan.folders.remove_made(sandbox, &mut failed);
    // Folders no checkpoint recorded: by birth time.
    for path in &removed {
        let mut parent = path.parent();
        while let Some(dir) = parent.filter(|d| !d.as_os_str().is_empty()) {
            let Some(since) = plan.since else { break };
            let judged = plan
                .folders
                .by_birth
                .as_ref()
                .is_none_or(|set| set.contains(dir));
            if !judged || !sandbox.remove_empty_dir_made_since(&text(dir), since) {
                break;
            }
            parent = dir.parent();
        }
    }
    // Folders the steps removed, before the files that go back in them.
    plan.folders.make_removed(sandbox, &mut failed);
    for (planned, bytes) in contents {
        let Some(to) = &planned.to else { continue };
        let path = text(&planned.path);
        let result = match to.kind {
            Kind::Link => sandbox.restore_link(&path, &bytes),
            _ => sandbox.restore_file(&path, &bytes, to.mode),
        };
        if let Err(e) = result {
            failed.push(Left {
                path: planned.path.clone(),
                reason: visible(&e.to_string()),
            });
        }
    }
    // Modes last: a folder made read-only again takes no files after.
    plan.folders.put_back_modes(sandbox, &mut failed);
    Ok(Applied {
        written: true,
        failed,
        disarmed: crate::confine::gitdirs::check(sandbox.root(), since),
    })
}

/// The files a plan restores, with their bytes.
type Contents<'p> = Vec<(&'p Planned, Vec<u8>)>;

/// The part of `plan` that can be carried out as things are now, each
/// restored file's bytes, and the paths that cannot, with why.
///
/// A path is blocked by what stands there now (a folder where the file
/// was, a file or link where the folder was). When the plan itself
/// removes what blocks it (the steps made that folder or file), the path
/// is put back after the removals. Otherwise it is left, and so is
/// everything of the plan at, above or beneath it: nothing is removed for
/// a path that cannot be put back.
fn checked<'p>(
    store: &Store,
    sandbox: &crate::sandbox::Sandbox,
    plan: &'p Plan,
) -> (Plan, Contents<'p>, Vec<Left>) {
    let removed: Vec<&Path> = plan
        .planned
        .iter()
        .filter(|p| p.action == Action::Remove)
        .map(|p| p.path.as_path())
        .chain(
            plan.folders
                .planned
                .iter()
                .filter(|f| f.change == folders::Change::Remove)
                .map(|f| f.path.as_path()),
        )
        .collect();
    // What the plan removes at a path or above it clears the way there.
    let cleared = |path: &Path| removed.iter().any(|gone| path.starts_with(gone));
    let mut contents = Vec::new();
    let mut blocked: Vec<Left> = Vec::new();
    for planned in &plan.planned {
        let content = planned.to.as_ref().map(|to| store.get(&to.hash));
        let checked = match (planned.path.to_str(), &content) {
            (_, Some(Err(e))) => Err(visible(&e.to_string())),
            (Some(_), _) if planned.action == Action::Restore && cleared(&planned.path) => Ok(()),
            (Some(text), _) => sandbox
                .check_restorable(text)
                .map_err(|e| visible(&e.to_string())),
            (None, _) => Err("its name is not UTF-8, which offcode cannot put back".to_owned()),
        };
        match (checked, content) {
            (Err(reason), _) => blocked.push(Left {
                path: planned.path.clone(),
                reason,
            }),
            (Ok(()), Some(Ok(bytes))) => contents.push((planned, bytes)),
            (Ok(()), _) => {}
        }
    }
    for folder in &plan.folders.planned {
        let checked = match folder.path.to_str() {
            Some(_)
                if matches!(folder.change, folders::Change::Make(_)) && cleared(&folder.path) =>
            {
                Ok(())
            }
            Some(text) => sandbox
                .check_folder(text)
                .map(|_| ())
                .map_err(|e| visible(&e.to_string())),
            None => Err("its name is not UTF-8, which offcode cannot put back".to_owned()),
        };
        if let Err(reason) = checked {
            blocked.push(Left {
                path: folder.path.clone(),
                reason,
            });
        }
    }
    let related = |path: &Path| {
        blocked
            .iter()
            .any(|b| path.starts_with(&b.path) || b.path.starts_with(path))
    };
    contents.retain(|(planned, _)| !related(&planned.path));
    let kept = Plan {
        planned: plan
            .planned
            .iter()
            .filter(|p| !related(&p.path))
            .cloned()
            .collect(),
        left: Vec::new(),
        folders: folders::Folders {
            planned: plan
                .folders
                .planned
                .iter()
                .filter(|f| !related(&f.path))
                .cloned()
                .collect(),
            ..plan.folders.clone()
        },
        since: plan.since,
    };
    (kept, contents, blocked)
}
