//! Checkpoints around every step that may change files, and taking steps
//! back: `/undo`, `/revert`, `/diff`, the turns for the picker, and the
//! summary `/summarize` starts a new session with.

use super::kind::Kind;
use std::sync::Arc;

use super::state::AgentState;
use crate::checkpoint::rewind::{self, Turn};
use crate::protocol::{EventMsg, RewindKind, RewindReport, SubmissionId, TurnRow};
use crate::session::EntryBody;

impl AgentState {
    /// Whether the call `name` may change files: a file tool, a command
    /// (also `!cmd` and validation), a subagent, or an MCP tool its server
    /// does not call read-only.
    pub(super) fn may_change(&self, name: &str) -> bool {
        if self.checkpoints.is_none() {
            return false;
        }
        match self.kind(name) {
            Kind::Task => true,
            Kind::Mcp { read_only } => !read_only,
            kind @ (Kind::BuiltIn | Kind::Unknown) => matches!(
                kind.effect(name),
                crate::tools::Effect::ChangesFiles | crate::tools::Effect::RunsCommands
            ),
        }
    }

    /// The workspace's checkpoint now, taken off the runtime's thread; none
    /// when checkpoints are off. A failure turns them off, said once.
    pub(super) async fn checkpoint(&mut self, id: SubmissionId) -> Option<String> {
        self.checkpoint_pinning(id, Vec::new()).await
    }

    /// [`Self::checkpoint`], keeping `writes` in it and every later one
    /// ([`crate::checkpoint::Checkpoints::pin`]), whatever their size
    /// ([`crate::checkpoint::Checkpoints::keep_before`]).
    async fn checkpoint_pinning(
        &mut self,
        id: SubmissionId,
        writes: Vec<std::path::PathBuf>,
    ) -> Option<String> {
        let shared = Arc::clone(self.checkpoints.as_ref()?);
        let taken = tokio::task::spawn_blocking(move || {
            shared.with(|checkpoints| {
                checkpoints.pin(&writes)?;
                let mut taken = checkpoints.take()?;
                // What the call writes, kept as it is even where too large
                // for the walk to keep.
                let unkept = checkpoints.keep_before(&writes).err();
                taken.id = checkpoints.amended(&taken.id);
                Ok::<_, crate::checkpoint::Error>((taken, unkept))
            })
        })
        .await;
        let (taken, pruned) = match taken {
            Ok(Ok(result)) => result,
            Ok(Err(why)) => {
                self.checkpoints_off(id, &why);
                return None;
            }
            Err(join) => {
                self.checkpoints_off(id, &join.to_string());
                return None;
            }
        };
        // Opening the store (in the background) pruned older sessions.
        if !pruned.sessions.is_empty() {
            self.warn(id, &pruned.note(self.config.checkpoints.max_store_mb));
        }
        match taken {
            Ok((taken, unkept)) => {
                if let Some(e) = unkept {
                    self.warn(
                        id,
                        &format!("The files this call writes could not be kept: {e}"),
                    );
                }
                if taken.share_full {
                    self.warn(
                        id,
                        &format!(
                            "This session's checkpoints reached half of checkpoints.max_store_mb ({} MB): a changed file whose content does not fit is seen but not kept (a revert names it), so older sessions' checkpoints stay",
                            self.config.checkpoints.max_store_mb
                        ),
                    );
                }
                if taken.not_kept_new > 0 {
                    self.warn(
                        id,
                        &format!(
                            "{} new past checkpoints.max_files ({}): they are named in the checkpoint, not kept, and a revert removes them if unchanged; every other change of the step can be taken back",
                            crate::protocol::count(taken.not_kept_new, "file"),
                            self.config.checkpoints.max_files
                        ),
                    );
                }
                if taken.unlisted {
                    self.warn(
                        id,
                        &format!(
                            "The workspace has more than {} times checkpoints.max_files ({}) files: new files are not in the checkpoint (a revert leaves them), the files there before are, and their changes can be taken back",
                            crate::checkpoint::CEILING,
                            self.config.checkpoints.max_files
                        ),
                    );
                }
                // Over an overlay, a command's layer and the file tools
                // keep what they replace, whatever its size.
                let kept_anyway = self.shell.layered();
                for (path, size) in taken.too_large.iter().filter(|_| !kept_anyway) {
                    self.warn(
                        id,
                        &format!(
                            "`{}` ({}) is over checkpoints.max_file_mb: its changes cannot be taken back",
                            path.display(),
                            crate::protocol::format_size(*size)
                        ),
                    );
                }
                Some(taken.id)
            }
            Err(e) => {
                self.checkpoints_off(id, &e.to_string());
                None
            }
        }
    }

    fn checkpoints_off(&mut self, id: SubmissionId, why: &str) {
        self.checkpoints = None;
        self.warn(
            id,
            &format!(
                "Checkpoints are off from here on, so later changes cannot be taken back: {why}"
            ),
        );
    }

    /// Takes the checkpoint before a step that may change files and
    /// records it as begun, so a step cut short (offcode killed while it
    /// ran) can still be taken back; none when checkpoints are off or the
    /// call cannot change files. The files the call names as written
    /// (`writes`) are kept from now on even if `.gitignore` leaves them out.
    pub(super) async fn begin_step(
        &mut self,
        id: SubmissionId,
        name: &str,
        tool: &str,
        call_id: Option<&str>,
        writes: &[std::path::PathBuf],
    ) -> Option<String> {
        if !self.may_change(name) {
            return None;
        }
        let before = self.checkpoint_pinning(id, writes.to_vec()).await?;
        let _ = self.record(
            id,
            EntryBody::Checkpoint {
                before: before.clone(),
                after: String::new(),
                tool: tool.to_owned(),
                call_id: call_id.map(str::to_owned),
                found_later: false,
            },
        );
        Some(before)
    }

    /// Takes the checkpoint after a step that began at `before`, and
    /// records both.
    pub(super) async fn record_step(
        &mut self,
        id: SubmissionId,
        before: Option<String>,
        tool: &str,
        call_id: Option<&str>,
    ) {
        let Some(before) = before else { return };
        let Some(after) = self.checkpoint(id).await else {
            return;
        };
        // A command's layer kept more of the files it replaced.
        let before = self.amended(before);
        if after != before {
            self.changing_steps += 1;
            let first = self
                .changed_span
                .take()
                .map_or_else(|| before.clone(), |(first, _)| first);
            self.changed_span = Some((first, after.clone()));
        }
        let _ = self.record(
            id,
            EntryBody::Checkpoint {
                before,
                after,
                tool: tool.to_owned(),
                call_id: call_id.map(str::to_owned),
                found_later: false,
            },
        );
    }

    /// The id the checkpoint `before` has now, amended since it was taken
    /// with files a step keeps before they change
    /// ([`crate::checkpoint::Checkpoints::keep_before`]).
    fn amended(&self, before: String) -> String {
        self.checkpoints
            .as_ref()
            .and_then(|shared| shared.with(|c| c.amended(&before)).ok())
            .map_or(before, |(amended, _)| amended)
    }

    fn turns(&self) -> Result<Vec<Turn>, String> {
        self.session
            .branch()
            .map(|branch| rewind::turns(&branch))
            .map_err(|e| e.to_string())
    }

    fn report(&self, id: SubmissionId, report: RewindReport) {
        self.emit(id, EventMsg::Rewind(report));
    }

    fn note(&self, id: SubmissionId, kind: RewindKind, note: impl Into<String>) {
        self.report(
            id,
            RewindReport {
                kind,
                turn: None,
                lines: Vec::new(),
                failed: Vec::new(),
                diff: String::new(),
                note: note.into(),
            },
        );
    }

    /// The checkpoints, or the reason there are none.
    fn checkpoints_here(&self) -> Result<Arc<crate::checkpoint::Shared>, String> {
        self.checkpoints.clone().ok_or_else(|| {
            if self.config.checkpoints.enabled {
                "Checkpoints are off in this session (see the warning at its start), so nothing can be taken back".to_owned()
            } else {
                "Checkpoints are off (`checkpoints.enabled` is false), so nothing can be taken back".to_owned()
            }
        })
    }

    /// `/undo`: the last step's file changes.
    pub(super) fn undo(&mut self, id: SubmissionId) {
        let result = self.turns().and_then(|turns| {
            let sandbox = &self.sandbox;
            self.checkpoints_here()?
                .with(|checkpoints| {
                    let Some((step, plan)) = rewind::undo_plan(checkpoints, &turns)? else {
                        return Ok(None);
                    };
                    let applied = rewind::apply(checkpoints.store(), sandbox, &plan)?;
                    Ok(Some((step, plan, applied)))
                })?
                .0
                .map_err(|e: crate::checkpoint::Error| e.to_string())
        });
        match result {
            Err(why) => self.note(id, RewindKind::Undo, why),
            Ok(None) => self.note(
                id,
                RewindKind::Undo,
                "Nothing to undo: no step of this session changed files (or all were undone)",
            ),
            Ok(Some((step, plan, applied))) => {
                let note = if !applied.written {
                    "Nothing was put back: these paths cannot be, as they are now".to_owned()
                } else if !applied.failed.is_empty() {
                    format!(
                        "Took back what could be of the last `{}` step; the paths below could not be, so the step stays (run /undo again once they are dealt with)",
                        step.tool
                    )
                } else if plan.is_empty() {
                    format!(
                        "The last `{}` step's changes were already gone; nothing was written",
                        step.tool
                    )
                } else {
                    format!("Took back the last `{}` step's file changes", step.tool)
                };
                if applied.written && applied.failed.is_empty() {
                    let _ = self.record(
                        id,
                        EntryBody::Undo {
                            step: step.entry,
                            restored: plan.restored(),
                            kept: plan.kept(),
                        },
                    );
                }
                self.report(
                    id,
                    RewindReport {
                        kind: RewindKind::Undo,
                        turn: None,
                        lines: plan.lines(),
                        failed: failed_lines(&applied),
                        diff: String::new(),
                        note,
                    },
                );
            }
        }
    }

    /// `/revert N`: shows what would change, or (with `apply`) takes the
    /// files and the conversation back to before turn `number`.
    pub(super) fn revert(&mut self, id: SubmissionId, number: usize, apply: bool) {
        let kind = if apply {
            RewindKind::Revert
        } else {
            RewindKind::Preview
        };
        let turns = match self.turns() {
            Ok(turns) => turns,
            Err(why) => return self.note(id, kind, why),
        };
        let Some(turn) = turns.iter().find(|t| t.number == number).cloned() else {
            return self.note(
                id,
                kind,
                format!(
                    "There is no turn {number}: this session has {}",
                    crate::protocol::count(turns.len(), "turn")
                ),
            );
        };
        // Without checkpoints the conversation can still go back.
        let sandbox = &self.sandbox;
        let planned = self.checkpoints_here().and_then(|shared| {
            shared
                .with(|checkpoints| {
                    let plan = rewind::revert_plan(checkpoints, &turns, number)?;
                    let applied = if apply {
                        rewind::apply(checkpoints.store(), sandbox, &plan)?
                    } else {
                        rewind::Applied::default()
                    };
                    Ok((plan, applied))
                })?
                .0
                .map_err(|e: crate::checkpoint::Error| e.to_string())
        });
        let (plan, applied, mut note) = match planned {
            Ok((plan, applied)) => (plan, applied, String::new()),
            Err(why) if turn.steps.is_empty() || self.checkpoints.is_none() => (
                rewind::Plan::default(),
                rewind::Applied {
                    written: true,
                    ..rewind::Applied::default()
                },
                why,
            ),
            Err(why) => return self.note(id, kind, format!("Nothing was changed: {why}")),
        };
        let blocked = apply && !applied.failed.is_empty();
        if blocked && !applied.written {
            "Nothing was changed, files or conversation: these paths cannot be put back as they are now".clone_into(&mut note);
        } else if blocked {
            "The other files were put back; these could not be, so the conversation stays as it was (run the same revert again once they are dealt with)".clone_into(&mut note);
        }
        if apply && !blocked {
            if let Err(e) = self.session.rewind_to(turn.parent.as_deref()) {
                return self.note(
                    id,
                    kind,
                    format!("The files were put back, but the conversation could not be: {e}"),
                );
            }
            let _ = self.record(
                id,
                EntryBody::Revert {
                    to_turn: number,
                    restored: plan.restored(),
                    kept: plan.kept(),
                },
            );
            self.tools.set_todos(self.session.todos.clone());
        }
        self.report(
            id,
            RewindReport {
                kind,
                turn: Some(number),
                lines: plan.lines(),
                failed: failed_lines(&applied),
                diff: String::new(),
                note,
            },
        );
    }

    /// `/diff N`: what the agent changed since turn `since`.
    pub(super) fn diff(&mut self, id: SubmissionId, since: usize) {
        let result = self.turns().and_then(|turns| {
            self.checkpoints_here()?
                .with(|checkpoints| crate::checkpoint::diff_since(checkpoints, &turns, since))?
                .0
                .map_err(|e| e.to_string())
        });
        match result {
            Err(why) => self.note(id, RewindKind::Diff, why),
            Ok((lines, diff)) => {
                let note = if lines.is_empty() {
                    "The agent changed no files in this session yet".to_owned()
                } else {
                    String::new()
                };
                self.report(
                    id,
                    RewindReport {
                        kind: RewindKind::Diff,
                        turn: Some(since),
                        lines,
                        failed: Vec::new(),
                        diff,
                        note,
                    },
                );
            }
        }
    }

    /// The turns, for the `/revert` picker.
    pub(super) fn list_turns(&mut self, id: SubmissionId) {
        match self.turns() {
            Ok(turns) => self.emit(
                id,
                EventMsg::Turns {
                    turns: turns
                        .into_iter()
                        .map(|t| TurnRow {
                            number: t.number,
                            prompt: t.prompt,
                            steps: t.steps.iter().filter(|s| s.before != s.after).count(),
                        })
                        .collect(),
                },
            ),
            Err(why) => self.warn(id, &why),
        }
    }

    /// `/summarize`: the compaction agent's summary of the whole session,
    /// for a new session to start from.
    pub(super) async fn summary(&mut self, id: SubmissionId, cancel: &crate::cancel::Cancel) {
        self.emit(
            id,
            EventMsg::TurnStarted {
                text: "/summarize".to_owned(),
            },
        );
        let answered = self
            .session
            .messages
            .iter()
            .any(|m| matches!(m, crate::session::Message::Assistant { .. }));
        let status = if answered {
            let room = self.context_limit().await.map_or(8_000, |limit| limit / 2);
            let current = self.session.compaction.clone().unwrap_or_default();
            let transcript = self.transcript(&current, self.session.messages.len(), room);
            match self.summarise(id, transcript, cancel).await {
                Some(text) => {
                    self.emit(id, EventMsg::Summary { text });
                    crate::protocol::TurnStatus::Done
                }
                None if cancel.is_cancelled() => crate::protocol::TurnStatus::Aborted,
                None => crate::protocol::TurnStatus::Failed,
            }
        } else {
            self.warn(
                id,
                "Nothing to summarise yet: this session has no answered turn",
            );
            crate::protocol::TurnStatus::Failed
        };
        self.end_turn(id, status, None, cancel);
    }
}

/// The files that could not be put back, with why.
fn failed_lines(applied: &rewind::Applied) -> Vec<String> {
    let disarmed = applied
        .disarmed
        .iter()
        .map(|line| format!("put back, then undone again: {}", rewind::visible(line)));
    applied
        .failed
        .iter()
        .map(|l| format!("{}: {}", rewind::shown(&l.path), l.reason))
        .chain(disarmed)
        .collect()
}
