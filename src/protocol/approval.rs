//! Payloads of the events that ask a person about a call and say how it
//! was settled.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ApprovalDecision, Decider, Mandate, ToolDisplay, wire};

/// Payload of [`EventMsg::ApprovalRequest`](super::EventMsg::ApprovalRequest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "separate facts a front end shows, each its own key on the wire"
)]
pub struct ApprovalRequestEvent {
    /// The call to approve.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
    /// The model's stated reason, when it gave one.
    pub reason: Option<String>,
    /// Why approval is needed (the rule that asked).
    pub rule: String,
    /// Whether "allow for the session" may be offered.
    pub session_allowed: bool,
    /// What "allow for the session" would add, one rule each
    /// (``bash `git status *` ``, `every edit call`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_rules: Vec<String>,
    /// The call is in the dangerous class: offer only allow once / deny,
    /// and never approve it without a person.
    #[serde(default)]
    pub dangerous: bool,
    /// Why it is dangerous, one line per finding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dangers: Vec<String>,
    /// For bash lines that are not dangerous: why they are not plain
    /// either (`cargo test` runs the project's code).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Who demands a person's answer, if anyone: never answered by
    /// `--yes` or for the session.
    #[serde(flatten, with = "wire::mandatory")]
    pub mandate: Option<Mandate>,
    /// For bash: how the command would run (confined and what it may
    /// write, or unconfined and why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// The question is whether to lift the sandbox for this one command.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unconfined: bool,
    /// The command would run unconfined: lifted for it, or the session's
    /// commands are not confined.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runs_unconfined: bool,
    /// For write, edit and patch: the change the call would make, worked
    /// out without making it (absent when the call would fail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<ToolDisplay>,
    /// The subagent whose call this is; none for the session's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Payload of [`EventMsg::PermissionDecision`](super::EventMsg::PermissionDecision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionDecisionEvent {
    /// The call decided on.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The outcome.
    pub decision: ApprovalDecision,
    /// Who decided.
    pub by: Decider,
    /// The rule or reason behind it.
    pub rule: String,
}
