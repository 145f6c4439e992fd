//! How a front end can show a tool call's result beyond the model's text:
//! a change's diff, the todo list, a command's output and how it ended.

use serde::{Deserialize, Serialize};

/// How a front end can show a tool result beyond its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolDisplay {
    /// Files the call changed.
    Diff {
        /// Each file changed.
        files: Vec<FileDiff>,
    },
    /// The todo list after the call.
    Todo {
        /// The todo list.
        items: Vec<TodoItem>,
    },
    /// A command that ran: what it printed and how it ended. The model's
    /// text is made from these two.
    Command {
        /// What it printed (stdout and stderr as they came, capped), with
        /// offcode's notes on it.
        output: String,
        /// How it ended.
        end: CommandEnd,
    },
}

/// How a command that was started ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum CommandEnd {
    /// It exited by itself.
    Exited {
        /// Its exit code.
        code: i32,
    },
    /// A signal killed it (not offcode's timeout).
    Signalled,
    /// offcode killed it: it ran past its time.
    TimedOut {
        /// The time it had.
        after_secs: u64,
    },
    /// offcode could not wait for it.
    WaitFailed {
        /// Why.
        error: String,
    },
}

impl CommandEnd {
    /// Whether the command succeeded (exit code 0).
    pub fn ok(&self) -> bool {
        matches!(self, Self::Exited { code: 0 })
    }

    /// How it ended in a few words: `exit code: 1`, `killed: timed out
    /// after 120 s`.
    pub fn describe(&self) -> String {
        match self {
            Self::Exited { code } => format!("exit code: {code}"),
            Self::Signalled => "exit code: killed by a signal".to_owned(),
            Self::TimedOut { after_secs } => format!("killed: timed out after {after_secs} s"),
            Self::WaitFailed { error } => format!("failed to wait for the command: {error}"),
        }
    }
}

/// One item of the agent's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Stable within the list (`1`, `2`, ... when the model gives none).
    pub id: String,
    /// What to do.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// Where a todo item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Completed,
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    /// The path as the model gave it.
    pub path: String,
    /// `created`, `updated`, `deleted` or `unchanged`.
    pub operation: String,
    /// Lines added.
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// A unified diff (cut at a size limit).
    pub diff: String,
}
