//! Taking back what the agent did: the answers to `Undo`, `Revert`,
//! `Diff`, `Turns` and `Summarize`.

use serde::{Deserialize, Serialize};

/// Which rewind a [`RewindReport`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindKind {
    /// `/undo`: the last step's file changes were taken back.
    Undo,
    /// `/revert N` asked first: what would change.
    Preview,
    /// The session went back to before a turn, with its files.
    Revert,
    /// `/diff`: what the agent changed.
    Diff,
}

/// What an undo, a revert or a diff did (or would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindReport {
    /// Which.
    pub kind: RewindKind,
    /// The turn it goes back to (or the diff starts at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// One line per file: what happens to it (or happened).
    pub lines: Vec<String>,
    /// Files that could not be put back, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// For a diff: the unified diff.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub diff: String,
    /// A sentence for the user (nothing to undo, checkpoints off, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A turn, as the `/revert` picker lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRow {
    /// 1 for the first.
    pub number: usize,
    /// The prompt's first line.
    pub prompt: String,
    /// Steps that may have changed files.
    pub steps: usize,
}
