//! Taking back what the agent did, from the UI: `/undo`, the `/revert`
//! picker (the turns, then what going back puts back, then `y`), `/diff`,
//! `/fork` and the new session `/summarize` starts.

use super::{App, Dispatch};
use crate::protocol::Op;

/// A turn number given to a command, or why it is not one.
fn turn_number(command: &str, argument: &str) -> Result<Option<usize>, String> {
    if argument.is_empty() {
        return Ok(None);
    }
    match argument.parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(format!(
            "`{command}` takes a turn's number, like `{command} 2` (`/revert` lists them), not `{argument}`"
        )),
    }
}

impl App<'_> {
    /// The turns of this session and their prompts, from its file.
    fn prompt_of(&self, number: usize) -> Option<String> {
        let store = crate::startup::session_store(self.environment).ok()?;
        let (_, branch) = store.load_branch(&self.view.status.session).ok()?;
        let entries: Vec<&crate::session::Entry> = branch.iter().collect();
        let mut seen = 0;
        for entry in entries {
            if let crate::session::EntryBody::Message { message } = &entry.body
                && let Some(typed) = message.typed()
            {
                seen += 1;
                if seen == number {
                    return Some(typed.to_owned());
                }
            }
        }
        None
    }

    /// `/revert`: the turns; `/revert N`: what going back to before turn
    /// N would put back, then a `y` does it.
    pub(super) fn revert_command(&mut self, argument: &str) -> Dispatch {
        match turn_number("/revert", argument) {
            Err(message) => {
                self.error(message);
                Dispatch::Done
            }
            Ok(None) => Dispatch::Turn(Op::Turns),
            Ok(Some(turn)) => {
                let prompt = self.prompt_of(turn).unwrap_or_default();
                self.pending_revert = Some((turn, prompt));
                Dispatch::Turn(Op::Revert { turn, apply: false })
            }
        }
    }

    /// The answer to a `/revert N` preview: `y` reverts, and the turn's
    /// prompt comes back to the editor; anything else keeps everything
    /// (a prompt typed instead goes back to the editor unsent).
    pub(super) fn confirm_revert(&mut self, text: &str) -> Option<Dispatch> {
        let (turn, prompt) = self.pending_revert.take()?;
        let answer = text.trim().to_lowercase();
        if answer == "y" || answer == "yes" {
            if !prompt.is_empty() {
                self.refused = Some(prompt);
            }
            return Some(Dispatch::Turn(Op::Revert { turn, apply: true }));
        }
        self.note("Nothing was reverted.");
        if !matches!(answer.as_str(), "" | "n" | "no") {
            self.refused = Some(text.to_owned());
        }
        Some(Dispatch::Done)
    }

    /// `/diff [N]`.
    pub(super) fn diff_command(&mut self, argument: &str) -> Dispatch {
        match turn_number("/diff", argument) {
            Ok(since) => Dispatch::Turn(Op::Diff {
                since: since.unwrap_or(1),
            }),
            Err(message) => {
                self.error(message);
                Dispatch::Done
            }
        }
    }

    /// `/fork [N]`: a new session from a copy of this one (up to before
    /// turn N), continued here; this one stays as it is.
    pub(super) async fn fork_command(&mut self, argument: &str) {
        let at = match turn_number("/fork", argument) {
            Ok(at) => at,
            Err(message) => return self.error(message),
        };
        let current = self.view.status.session.clone();
        let forked = crate::startup::session_store(self.environment)
            .map_err(|f| f.message)
            .and_then(|store| crate::startup::fork(&store, &current, at));
        match forked {
            Ok(session) => {
                let id = session.id.clone();
                drop(session);
                let from = at.map_or_else(String::new, |n| format!(" up to before turn {n}"));
                self.note(format!(
                    "Forked {current}{from} as {id}; {current} stays as it was."
                ));
                self.restart(false, Some(&id)).await;
            }
            Err(why) => self.error(format!("Could not fork this session: {why}")),
        }
    }

    /// After `/summarize`: a new session that starts from the summary.
    pub async fn start_from_summary(&mut self, summary: &str) {
        let current = self.view.status.session.clone();
        let created = crate::startup::session_store(self.environment)
            .map_err(|f| f.message)
            .and_then(|store| {
                store
                    .from_summary(&current, summary)
                    .map_err(|e| e.to_string())
            });
        match created {
            Ok(session) => {
                let id = session.id.clone();
                drop(session);
                self.note(format!(
                    "Started {id} from the summary of {current}; `/resume` goes back to it."
                ));
                self.restart(false, Some(&id)).await;
            }
            Err(why) => self.error(format!("Could not start a session from the summary: {why}")),
        }
    }
}
