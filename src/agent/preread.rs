//! A small model's task starts with the files it names already read.
//!
//! Measured on a 1.5B model: it often writes its first `read` among words
//! (so it is an example, not a call), guesses a file's content instead of
//! reading it, or writes the read and the change in one message, where the
//! change must wait for the read's result. In the compact profile the
//! runtime reads the workspace files the prompt names before the first
//! request, as `read` calls of its own: the model starts from their
//! content, and every later rule (a write over an unseen file, a question
//! answered without reading) sees them as read.
//!
//! Only files the policy lets `read` open without asking are read: a rule
//! that asks or denies is never put to the person for a read they did not
//! ask for, and a denied file is never shown to the model.

use serde_json::json;

use super::finish::Calls;
use super::state::{AgentState, Step};
use crate::cancel::Cancel;
use crate::protocol::{AssistantMessageEvent, EventMsg, SubmissionId, TurnStatus};
use crate::session::{EntryBody, Message, ToolCall};

/// The id prefix of the runtime's own reads.
pub(super) const PREREAD_ID: &str = "preread_";
/// Files read at most, in the order the prompt names them.
const FILES: usize = 4;
/// A file larger than this is left for the model to read in parts.
const FILE_BYTES: u64 = 8 * 1024;
/// Bytes read at most in all.
const TOTAL_BYTES: u64 = 16 * 1024;

impl AgentState {
    /// Reads the files `prompt` names (compact profile only), as calls of
    /// the runtime's own; `None` when none was read.
    pub(super) async fn read_named(
        &mut self,
        id: SubmissionId,
        prompt: &str,
        cancel: &Cancel,
    ) -> Result<Option<Calls>, TurnStatus> {
        if !self.compact() || !self.offered("read") || cancel.is_cancelled() {
            return Ok(None);
        }
        let mut total = 0;
        let mut calls = Vec::new();
        for path in super::intent::named_files(prompt) {
            if calls.len() == FILES {
                break;
            }
            let Ok((_, stat)) = self.sandbox.open_file(&path, rustix::fs::OFlags::empty()) else {
                continue; // not there yet (`write it to out.txt`), or not a file
            };
            let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
            // Read again when an earlier turn read it: it may have changed,
            // and the turn's answer is judged on what this turn read.
            let arguments = json!({ "path": path });
            // A hard link may be a file from outside the workspace, or one
            // a rule denies under another name: the model may ask for it,
            // the runtime does not read it unasked.
            if size > FILE_BYTES
                || total + size > TOTAL_BYTES
                || stat.st_nlink > 1
                || !self.permits.allows_unasked("read", &arguments)
            {
                continue;
            }
            total += size;
            calls.push(ToolCall {
                id: format!(
                    "{PREREAD_ID}{}_{}",
                    self.session.messages.len(),
                    calls.len()
                ),
                name: "read".to_owned(),
                arguments: arguments.to_string(),
            });
        }
        if calls.is_empty() {
            return Ok(None);
        }
        let message = Message::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: calls.clone(),
            interrupted: false,
        };
        self.record(id, EntryBody::Message { message })?;
        self.emit(
            id,
            EventMsg::AssistantMessage(AssistantMessageEvent {
                text: String::new(),
                tool_calls: calls.len(),
            }),
        );
        match self.run_calls(id, &calls, false, None, cancel).await {
            Step::Continue(calls) => Ok(Some(calls)),
            Step::End(status) => Err(status),
            Step::Final(_) => Ok(None),
        }
    }
}
