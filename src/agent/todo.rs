//! The agent's todo list in the core: each new version is recorded in the
//! session and shown, and a task that changes files gets one.

use std::fmt::Write as _;

use super::turn::AgentState;
use crate::client;
use crate::protocol::{EventMsg, SubmissionId};
use crate::session::{EntryBody, Message};
use crate::tools::ToolOutput;

impl AgentState {
    /// Keeps the todo list: a new version is recorded and shown; the first
    /// file change of a task with no list starts one, and the model is
    /// told so in the tool's result. Returns the output and whether the
    /// list changed.
    pub(super) fn after_call(&mut self, tool: &str, mut output: ToolOutput) -> (ToolOutput, bool) {
        if !output.ok {
            return (output, false);
        }
        if tool == "todowrite" {
            return (output, true);
        } else if matches!(tool, "write" | "edit" | "patch") && self.tools.todos().is_empty() {
            let task = self
                .session
                .messages
                .iter()
                .rev()
                .find_map(|m| match m {
                    Message::User { content } => Some(content.as_str()),
                    _ => None,
                })
                .unwrap_or("the task");
            let mut content: String = task
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(100)
                .collect();
            if content.trim().is_empty() {
                "the task".clone_into(&mut content);
            }
            let item = crate::protocol::TodoItem {
                id: "1".to_owned(),
                content,
                status: crate::protocol::TodoStatus::InProgress,
            };
            let line = crate::tools::todo::checklist(std::slice::from_ref(&item));
            self.tools.set_todos(vec![item]);
            let _ = write!(
                output.output,
                "\n\noffcode started a todo list for this task:\n{line}\nKeep it current with \
                 `todowrite`: list the steps, mark each completed when done."
            );
            return (output, true);
        }
        (output, false)
    }

    pub(super) fn todos_changed(&mut self, id: SubmissionId) {
        let items = self.tools.todos();
        self.emit(
            id,
            EventMsg::TodoUpdated {
                items: items.clone(),
            },
        );
        if let Err(error) = self.session.append(EntryBody::Todo { items }) {
            self.warn(id, &client::error_chain(&error));
        }
    }
}
