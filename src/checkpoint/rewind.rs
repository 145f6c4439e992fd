//! Taking back what the agent did: the turns and steps of a session's
//! active branch, a plan for putting the files some steps changed back as
//! they were before them, and carrying the plan out.
//!
//! A step's changes are the difference between its two checkpoints. A file
//! whose content now is not what the agent's last step left was changed by
//! hand since: it is reported and left alone, never overwritten. Every
//! object a plan needs is read and checked against its hash before the
//! first file is written.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::manifest::{Entry, Kind, Manifest, diff};
use super::{Error, Store};
use crate::session::{self, EntryBody};

mod apply;
pub mod folders;

pub use apply::{Applied, apply};

/// A step recorded with its checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The `checkpoint` entry's id.
    pub entry: String,
    /// The checkpoint before it.
    pub before: String,
    /// The checkpoint after it.
    pub after: String,
    /// What ran.
    pub tool: String,
    /// Whether `/undo` took it back already.
    pub undone: bool,
    /// Cut short: offcode stopped while it ran, and its end is what was
    /// found later.
    pub uncertain: bool,
    /// When it began (RFC 3339): the time of its beginning's record, taken
    /// right after the checkpoint before it.
    pub began: String,
}

/// A turn of the active branch: a user message and the steps after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// 1 for the first.
    pub number: usize,
    /// The entry before the turn's user message (none: the session entry
    /// is the start).
    pub parent: Option<String>,
    /// The user message's first line.
    pub prompt: String,
    /// Its steps.
    pub steps: Vec<Step>,
}

/// The turns of a branch (from [`session::Session::branch`]).
pub fn turns(branch: &[session::Entry]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    let mut undone = std::collections::HashSet::new();
    for entry in branch {
        if let EntryBody::Undo { step, .. } = &entry.body {
            undone.insert(step.clone());
        }
    }
    for entry in branch {
        match &entry.body {
            // A turn is what the person typed; offcode's own notes to the
            // model go on the turn they are in.
            EntryBody::Message { message } if message.typed().is_some() => turns.push(Turn {
                number: turns.len() + 1,
                parent: entry.parent_id.clone(),
                prompt: message
                    .typed()
                    .and_then(|t| t.lines().next())
                    .unwrap_or("")
                    .to_owned(),
                steps: Vec::new(),
            }),
            EntryBody::Checkpoint {
                before,
                after,
                tool,
                found_later,
                ..
            } => {
                if let Some(turn) = turns.last_mut() {
                    // A step's end replaces its beginning (steps that may
                    // change files run one at a time; its checkpoint
                    // before may have been amended since, with what a
                    // command's layer replaced); a beginning alone is a
                    // step cut short ([`settle`]).
                    let mut began = entry.ts.clone();
                    if let Some(begun) = turn.steps.last()
                        && begun.after.is_empty()
                        && (begun.before == *before || begun.tool == *tool)
                        && !after.is_empty()
                    {
                        began.clone_from(&begun.began);
                        turn.steps.pop();
                    }
                    turn.steps.push(Step {
                        began,
                        entry: entry.id.clone(),
                        before: before.clone(),
                        after: after.clone(),
                        tool: tool.clone(),
                        undone: undone.contains(&entry.id),
                        uncertain: *found_later || after.is_empty(),
                    });
                }
            }
            _ => {}
        }
    }
    turns
}

/// What happens to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Put back as it was (the file had been changed or removed).
    Restore,
    /// Removed (the agent created it).
    Remove,
}

/// One path of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// What happens.
    pub action: Action,
    /// The state it gets (none: removed).
    pub to: Option<Entry>,
    /// Lines added and removed by putting it back (text files).
    pub lines: Option<(usize, usize)>,
    /// Changed by a step cut short ([`Spanned::uncertain`]).
    pub uncertain: bool,
}

/// How a change by a step cut short is marked.
pub(super) const UNCERTAIN: &str = "  (offcode stopped mid-step: may hold your own changes since)";

/// A path left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// What taking back some steps would do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Paths put back, in path order.
    pub planned: Vec<Planned>,
    /// Paths changed by hand since the agent touched them, or that cannot
    /// be put back: reported, never written.
    pub left: Vec<Left>,
    /// The folders put back or removed.
    pub folders: folders::Folders,
    /// When the first step taken back began: a folder left empty that no
    /// checkpoint recorded is removed only when it was born since (the
    /// agent's), never one the person had before.
    pub since: Option<std::time::SystemTime>,
}

impl Plan {
    /// Whether nothing would change.
    pub fn is_empty(&self) -> bool {
        self.planned.is_empty() && self.folders.planned.is_empty()
    }

    /// One line per path: what happens, and the lines it changes.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for planned in &self.planned {
            let verb = match (&planned.action, planned.lines) {
                (Action::Remove, _) => "remove ",
                (Action::Restore, Some(_)) => "revert ",
                (Action::Restore, None) => "restore",
            };
            let counts = planned
                .lines
                .filter(|(a, r)| a + r > 0)
                .map(|(added, removed)| format!("  +{added} -{removed}"))
                .unwrap_or_default();
            let mark = if planned.uncertain { UNCERTAIN } else { "" };
            lines.push(format!("{verb} {}{counts}{mark}", shown(&planned.path)));
        }
        lines.extend(self.folders.planned.iter().map(folders::Planned::line));
        for left in self.left.iter().chain(&self.folders.left) {
            lines.push(format!("kept    {}: {}", shown(&left.path), left.reason));
        }
        lines
    }

    /// The paths put back, as text (a folder ends in `/`).
    pub fn restored(&self) -> Vec<String> {
        self.planned
            .iter()
            .map(|p| shown(&p.path))
            .chain(
                self.folders
                    .planned
                    .iter()
                    .map(|f| format!("{}/", shown(&f.path))),
            )
            .collect()
    }

    /// The paths left alone, as text.
    pub fn kept(&self) -> Vec<String> {
        self.left
            .iter()
            .chain(&self.folders.left)
            .map(|l| shown(&l.path))
            .collect()
    }
}

pub(super) fn same(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_content(b),
        _ => false,
    }
}

/// What some steps did to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned {
    /// Its state before the first of them.
    pub first: Option<Entry>,
    /// The state the last left.
    pub last: Option<Entry>,
    /// A step that changed it was cut short: its end was only seen later,
    /// so the change may hold the person's own work too.
    pub uncertain: bool,
}

/// Every path some steps changed.
pub type Span = BTreeMap<PathBuf, Spanned>;

/// The [`Span`] of `steps`.
pub fn span(store: &Store, steps: &[Step]) -> Result<Span, Error> {
    let mut paths = Span::new();
    for step in steps {
        if step.before == step.after {
            continue;
        }
        let before = store.manifest(&step.before)?;
        let after = store.manifest(&step.after)?;
        for change in diff(&before, &after) {
            paths
                .entry(change.path)
                .and_modify(|spanned| {
                    spanned.last.clone_from(&change.after);
                    spanned.uncertain |= step.uncertain;
                })
                .or_insert(Spanned {
                    first: change.before,
                    last: change.after,
                    uncertain: step.uncertain,
                });
        }
    }
    Ok(paths)
}

/// The plan that puts back, as they were before `steps`, the files they
/// changed, given the workspace `now`.
pub fn plan(store: &Store, steps: &[Step], now: &Manifest) -> Result<Plan, Error> {
    let mut plan = Plan {
        since: steps
            .iter()
            .map(|step| crate::session::parse_rfc3339(&step.began))
            .min()
            .flatten(),
        ..Plan::default()
    };
    for (path, spanned) in span(store, steps)? {
        let Spanned {
            first,
            last,
            uncertain,
        } = spanned;
        let current = now.get(&path);
        if same(current, first.as_ref()) {
            continue;
        }
        if !same(current, last.as_ref()) {
            plan.left.push(Left {
                path,
                reason: "changed by hand since the agent changed it; left as it is".to_owned(),
            });
            continue;
        }
        if first.as_ref().is_some_and(|e| e.kind == Kind::NotKept) {
            plan.left.push(Left {
                path,
                reason: "its content then was not kept (over checkpoints.max_file_mb, or the session's share of the store was full)".to_owned(),
            });
            continue;
        }
        // Counts only: an object gone is named when the plan is carried out.
        let lines = match (&first, current) {
            (Some(to), Some(now)) if to.kind == Kind::File && now.kind == Kind::File => {
                match (store.get(&now.hash), store.get(&to.hash)) {
                    (Ok(now), Ok(to)) => line_counts(&now, &to),
                    _ => None,
                }
            }
            _ => None,
        };
        plan.planned.push(Planned {
            path,
            action: if first.is_some() {
                Action::Restore
            } else {
                Action::Remove
            },
            to: first,
            lines,
            uncertain,
        });
    }
    let removed: Vec<&Path> = plan
        .planned
        .iter()
        .filter(|p| p.action == Action::Remove)
        .map(|p| p.path.as_path())
        .collect();
    plan.folders = folders::plan(store, steps, now, &removed)?;
    Ok(plan)
}

/// Lines added and removed going from `old` to `new`, when both are text.
pub fn line_counts(old: &[u8], new: &[u8]) -> Option<(usize, usize)> {
    let (old, new) = (
        std::str::from_utf8(old).ok()?,
        std::str::from_utf8(new).ok()?,
    );
    Some(crate::tools::diff::line_counts(old, new))
}

/// A path as text, for the sandbox and for people: control characters
/// (an escape sequence in a file name) made visible.
pub fn shown(path: &Path) -> String {
    visible(&String::from_utf8_lossy(path.as_os_str().as_bytes()))
}

/// `text` with control characters made visible (`\u{1b}`): a reason
/// that quotes a file name must not carry its escape sequences to the
/// terminal either.
pub fn visible(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<char>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// `turns` with each step cut short (offcode was killed while it ran, so
/// only its beginning was recorded) ended at the next step's beginning, or
/// at `now` when it was the last; such a step is uncertain.
pub fn settle(turns: &[Turn], now: &str) -> Vec<Turn> {
    let mut settled = turns.to_vec();
    let mut next = now.to_owned();
    for turn in settled.iter_mut().rev() {
        for step in turn.steps.iter_mut().rev() {
            if step.after.is_empty() {
                step.after.clone_from(&next);
            }
            next.clone_from(&step.before);
        }
    }
    settled
}

/// `turns` with each step's checkpoint before as it was amended since it
/// was recorded ([`super::Checkpoints::keep_before`]): a step cut short
/// recorded it before what its command replaced was added.
fn amended(turns: &[Turn], checkpoints: &super::Checkpoints) -> Vec<Turn> {
    let mut turns = turns.to_vec();
    for step in turns.iter_mut().flat_map(|turn| turn.steps.iter_mut()) {
        step.before = checkpoints.amended(&step.before);
    }
    turns
}

/// The last step of `turns` that changed files and was not undone yet,
/// and the plan that takes it back; `None` when there is none.
pub fn undo_plan(
    checkpoints: &mut super::Checkpoints,
    turns: &[Turn],
) -> Result<Option<(Step, Plan)>, Error> {
    let now = checkpoints.take()?;
    let turns = settle(&amended(turns, checkpoints), &now.id);
    let last = turns
        .iter()
        .flat_map(|t| t.steps.iter())
        .rev()
        .find(|s| !s.undone && s.before != s.after)
        .cloned();
    let Some(step) = last else {
        return Ok(None);
    };
    let store = checkpoints.store();
    let now = store.manifest(&now.id)?;
    let plan = plan(store, std::slice::from_ref(&step), &now)?;
    Ok(Some((step, plan)))
}

/// The steps of turn `number` and of those after it, and the workspace
/// now.
pub(super) fn from_turn(
    checkpoints: &mut super::Checkpoints,
    turns: &[Turn],
    number: usize,
) -> Result<(Vec<Step>, Manifest), Error> {
    let now = checkpoints.take()?;
    let steps = settle(&amended(turns, checkpoints), &now.id)
        .into_iter()
        .filter(|t| t.number >= number)
        .flat_map(|t| t.steps)
        .collect();
    Ok((steps, checkpoints.store().manifest(&now.id)?))
}

/// The plan that takes the files back to before turn `number` (every step
/// of it and of the turns after).
pub fn revert_plan(
    checkpoints: &mut super::Checkpoints,
    turns: &[Turn],
    number: usize,
) -> Result<Plan, Error> {
    let (steps, now) = from_turn(checkpoints, turns, number)?;
    plan(checkpoints.store(), &steps, &now)
}

/// At a session's start: the last step cut short (offcode was killed
/// while it ran) gets its end as the workspace is found now, marked found
/// later, so what the person changes from here on is never taken for the
/// agent's. Returns whether there was one.
pub fn complete_cut_short(
    session: &mut crate::session::Session,
    checkpoints: &mut super::Checkpoints,
) -> Result<bool, Error> {
    let Ok(branch) = session.branch() else {
        return Ok(false);
    };
    let turns = turns(&branch);
    let Some(step) = turns
        .last()
        .and_then(|t| t.steps.last())
        .filter(|s| s.after.is_empty())
        .cloned()
    else {
        return Ok(false);
    };
    let now = checkpoints.take()?;
    let recorded = session.append(EntryBody::Checkpoint {
        before: checkpoints.amended(&step.before),
        after: now.id,
        tool: step.tool,
        call_id: None,
        found_later: true,
    });
    Ok(recorded.is_ok())
}
