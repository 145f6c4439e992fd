//! Payloads of the events about agents, subagents and validation.

use serde::{Deserialize, Serialize};

use super::EventMsg;

/// Payload of [`EventMsg::Subagent`]: one event of a subagent's core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentEvent {
    /// The `task` call that started it.
    pub call_id: String,
    /// Its session's id.
    pub child_session_id: String,
    /// The agent.
    pub agent: String,
    /// What happened there.
    pub event: Box<EventMsg>,
}

/// Where a validation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValidationStatus {
    /// Started.
    Running,
    /// Exited 0.
    Passed,
    /// Failed; its output went to the model.
    Failed,
    /// Refused or aborted.
    NotRun,
}

/// Payload of [`EventMsg::Validation`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationEvent {
    /// The command.
    pub command: String,
    /// Where it came from: the config's `validate`, `Cargo.toml`, ...
    pub from: String,
    /// The turn's validation it belongs to, from 1.
    pub attempt: u32,
    /// Where it stands.
    pub status: ValidationStatus,
    /// `passed in 3.1 s`, `2 failed`, `3 errors`, or why it did not run.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// A failure's output, failing part first.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

/// One agent in an [`EventMsg::AgentList`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSummary {
    /// Its name.
    pub name: String,
    /// `primary`, `subagent` or `all`.
    pub mode: String,
    /// What it is for.
    pub description: String,
    /// Where it was defined (`built in`, a file).
    pub origin: String,
    /// Whether the session uses it now.
    pub active: bool,
}
