//! The agent's todo list in the core: each new version is recorded in the
//! session and shown, and a task that changes files gets one.

use super::state::AgentState;
use crate::client;
use crate::protocol::{EventMsg, SubmissionId, TodoStatus};

/// The id of the one item offcode puts on a list it starts.
const AUTOMATIC: &str = "1";
use crate::session::{EntryBody, Message};
use crate::tools::ToolOutput;

impl AgentState {
    /// Keeps the todo list: a new version is recorded and shown; the first
    /// file change of a task with no list starts one, shown to the person
    /// and completed when the turn ends well. The model is not told: a
    /// note inviting it to keep the list took every small model measured
    /// off its task. Returns whether the list changed.
    pub(super) fn after_call(&mut self, tool: &str, output: &ToolOutput) -> bool {
        if !output.ok {
            return false;
        }
        if tool == "todowrite" {
            return true;
        } else if self.tools.changes_files(tool) && self.tools.todos().is_empty() {
            self.tools.set_todos(vec![crate::protocol::TodoItem {
                id: AUTOMATIC.to_owned(),
                content: self.task_line(),
                status: TodoStatus::InProgress,
            }]);
            return true;
        }
        false
    }

    /// The task as the one item of a list offcode starts: the first line
    /// of the last prompt.
    fn task_line(&self) -> String {
        let task = self
            .session
            .messages
            .iter()
            .rev()
            .find_map(Message::typed)
            .unwrap_or("the task");
        let content: String = task
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(100)
            .collect();
        if content.trim().is_empty() {
            "the task".to_owned()
        } else {
            content
        }
    }

    /// A turn that ended well completes the list offcode started, if the
    /// model never took it over: it would show the task as still going.
    pub(super) fn finish_automatic_todo(&mut self, id: SubmissionId) {
        let mut items = self.tools.todos();
        let [item] = items.as_mut_slice() else {
            return;
        };
        if item.id != AUTOMATIC
            || item.status != TodoStatus::InProgress
            || item.content != self.task_line()
        {
            return;
        }
        item.status = TodoStatus::Completed;
        self.tools.set_todos(items);
        self.todos_changed(id);
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
