//! `!command`: the user's own shell command, run through the same
//! permission check as the model's `bash` calls and recorded as a user and
//! an assistant message, so the model sees it next turn.

use super::state::AgentState;
use crate::cancel::Cancel;
use crate::protocol::{EventMsg, SubmissionId, ToolDisplay, TurnStatus};
use crate::session::{EntryBody, Message, ToolCall};
use crate::tools::ToolOutput;

/// How much of a `!command`'s output is recorded for the model.
const SHELL_RECORD_BYTES: usize = 16 * 1024;

/// `text` cut to about `most` bytes by leaving out its middle, so the end
/// (errors, the exit code) stays.
fn middle_cut(text: &str, most: usize) -> String {
    if text.len() <= most {
        return text.to_owned();
    }
    let mut head = most / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - most / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

impl AgentState {
    /// `!command`: one `bash` call by the user, through the same permission
    /// check, recorded as a user message (the input) and an assistant
    /// message (the command, its exit code and output, cut to
    /// [`SHELL_RECORD_BYTES`]).
    pub(super) async fn run_shell(&mut self, id: SubmissionId, command: String, cancel: &Cancel) {
        let input = format!("!{command}");
        self.emit(
            id,
            EventMsg::TurnStarted {
                text: input.clone(),
            },
        );
        let call = ToolCall {
            id: format!("shell_{}", self.session.messages.len()),
            name: "bash".to_owned(),
            arguments: serde_json::json!({ "command": command }).to_string(),
        };
        let user = EntryBody::Message {
            message: Message::User {
                content: input.clone(),
            },
        };
        if let Err(status) = self.record(id, user) {
            self.end_turn(id, status, None, cancel);
            return;
        }
        // The user's own command is not one of the model's repeats.
        self.permits.break_repeats();
        let output = if cancel.is_cancelled() {
            ToolOutput::error("not run: aborted")
        } else {
            self.run_call(id, &call, super::permits::Caller::Person, false, cancel)
                .await
                .0
        };
        self.permits.break_repeats();
        let reply = match &output.display {
            Some(ToolDisplay::Command { .. }) => format!(
                "The user ran `{command}` in the workspace:\n```\n{}\n```",
                middle_cut(&output.output, SHELL_RECORD_BYTES)
            ),
            _ => format!(
                "The user tried to run `{command}`; it did not run: {}",
                output.shown_reason()
            ),
        };
        let status = if cancel.is_cancelled() {
            TurnStatus::Aborted
        } else if output.ok {
            TurnStatus::Done
        } else {
            TurnStatus::Failed
        };
        let message = Message::Assistant {
            content: reply.clone(),
            reasoning: None,
            tool_calls: Vec::new(),
            interrupted: false,
        };
        let status = match self.record(id, EntryBody::Message { message }) {
            Ok(()) => status,
            Err(failed) => failed,
        };
        self.end_turn(id, status, Some(reply), cancel);
    }
}

#[cfg(test)]
mod tests {
    use super::middle_cut;

    #[test]
    fn a_long_output_keeps_its_end() {
        assert_eq!(middle_cut("short", 100), "short");
        let text = format!("{}\n[exit code: 2]", "错".repeat(50));
        let cut = middle_cut(&text, 40);
        assert!(cut.starts_with("错错错错错错"), "{cut}");
        assert!(cut.ends_with("\n[exit code: 2]"), "{cut}");
        assert!(cut.contains("bytes left out"), "{cut}");
    }
}
