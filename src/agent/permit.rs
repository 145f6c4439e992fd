//! Permission for each tool call: the policy's decision, the doom-loop
//! check, the question to the front end, and the record in the session.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::oneshot;

use super::lock;
use super::permits::Caller;
use super::state::AgentState;
use crate::cancel::Cancel;
use crate::policy::{Action, Decision, Source};
use crate::protocol::{
    ApprovalDecision, ApprovalRequestEvent, Decider, EventMsg, PermissionDecisionEvent,
    SubmissionId, TurnState,
};
use crate::session::{AllowedRule, EntryBody, ToolCall};
use crate::tools::{ToolContext, ToolOutput};

/// Why a call may not run.
#[derive(Debug)]
pub(super) enum Refusal {
    /// The rules or a person said no; `why` says which ("the user
    /// declined", "denied by the rule …").
    Denied {
        /// Who said no, and by which rule.
        why: String,
    },
    /// Anything else (a tool the agent does not offer, the same call
    /// again, a policy that did not load): the result the model gets.
    Other(ToolOutput),
}

impl Refusal {
    /// What the model gets for a refused call of `tool`.
    pub(super) fn into_output(self, tool: &str) -> ToolOutput {
        match self {
            Self::Denied { why } => ToolOutput {
                denied: true,
                ..ToolOutput::refused(
                    &format!("Permission denied: `{tool}` was not run ({why})."),
                    "Do not try to get around this; ask the user or choose another way.",
                )
            },
            Self::Other(output) => output,
        }
    }
}

impl AgentState {
    /// The refusal of a call that already ran [`super::permits::SAME_ANSWERS`] times with
    /// the same result, said to the user.
    fn refused_repeat(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        caller: Caller,
    ) -> Option<ToolOutput> {
        if caller == Caller::Validation {
            return None;
        }
        let refusal = self.permits.answered_again(call)?;
        self.warn(
            id,
            &format!(
                "The model asked for the same `{}` call again after the same result; offcode refused it",
                call.name
            ),
        );
        Some(refusal)
    }

    /// The refusal of a tool the agent does not offer.
    fn not_offered(&self, call: &ToolCall) -> Option<ToolOutput> {
        (!self.offered(&call.name)).then(|| {
            ToolOutput::error(format!(
                "`{}` is not one of the `{}` agent's tools, so it was not run; use the tools you were given",
                call.name, self.agent.name
            ))
        })
    }

    /// The refusal of a change in a turn that only asks a question (a
    /// small model's), said to the user. The 1.5B model asked for a port
    /// edited the file it read: 5 of 8 runs changed config.json.
    pub(super) fn refused_change(&self, id: SubmissionId, call: &ToolCall) -> Option<ToolOutput> {
        if !self.permits.question || !crate::tools::changes_files(&call.name) {
            return None;
        }
        self.warn(
            id,
            &format!(
                "The task is a question, so offcode refused the model's `{}` call",
                call.name
            ),
        );
        Some(ToolOutput::refused(
            "Not run: the task is a question, so no file changes.",
            "Answer it from what you have read.",
        ))
    }

    /// A call refused because the policy could not be loaded: said,
    /// recorded, and what the model is told.
    fn policy_unloaded(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        arguments: &Value,
        problem: &dyn std::fmt::Display,
    ) -> ToolOutput {
        let message = format!(
            "Not run: the permission policy could not be loaded ({problem}); fix it and ask again"
        );
        self.warn(id, &message);
        let entry = EntryBody::Permission {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            summary: summarize(&call.name, arguments),
            dangerous: false,
            decision: ApprovalDecision::Deny,
            by: Decider::Policy,
            rule: format!("the policy could not be loaded: {problem}"),
            allowed: Vec::new(),
        };
        let _ = self.record(id, entry);
        ToolOutput::error(message)
    }

    /// `Ok` with how to run it when the call may run; otherwise why not.
    pub(super) async fn permit(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        arguments: Value,
        caller: Caller,
        cancel: &Cancel,
    ) -> Result<Permit, Refusal> {
        if self.kind(&call.name) == super::kind::Kind::Unknown {
            return Ok(Permit::default()); // the registry reports the unknown tool
        }
        if let Some(refusal) = self.not_offered(call) {
            return Err(Refusal::Other(refusal));
        }
        let policy = match self.permits.policy.current() {
            Ok(policy) => policy,
            Err(problem) => {
                return Err(Refusal::Other(
                    self.policy_unloaded(id, call, &arguments, &problem),
                ));
            }
        };
        if let Some(refusal) = self.refused_repeat(id, call, caller) {
            return Err(Refusal::Other(refusal));
        }
        let mut decision = policy.decide_as(
            &call.name,
            &arguments,
            &self.permits.agent,
            &self.permits.session_rules,
        );
        self.permits.doom_loop(&policy, call, caller, &mut decision);
        self.mcp_unconfined(call, &mut decision);
        let summary = summarize(&call.name, &arguments);
        let (answer, reason, by) = match decision.action {
            Action::Allow if decision.source == Source::Session => {
                (ApprovalDecision::AllowOnce, None, Decider::Session)
            }
            Action::Allow => (ApprovalDecision::AllowOnce, None, Decider::Policy),
            Action::Deny => (
                ApprovalDecision::Deny,
                Some(format!("denied by the rule {}", decision.rule)),
                Decider::Policy,
            ),
            Action::Ask => {
                let (answer, reason) = self.ask(id, call, arguments, &decision, cancel).await;
                (answer, reason, self.permits.approver)
            }
        };
        let allowed = if answer == ApprovalDecision::AllowSession {
            let rules = std::mem::take(&mut decision.session_rules);
            self.permits.session_rules.extend(rules.iter().cloned());
            rules
                .into_iter()
                .map(|r| AllowedRule {
                    permission: r.permission,
                    pattern: r.pattern,
                })
                .collect()
        } else {
            Vec::new()
        };
        let entry = EntryBody::Permission {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            summary,
            dangerous: decision.dangerous,
            decision: answer,
            by,
            rule: decision.rule.clone(),
            allowed,
        };
        self.record(id, entry).map_err(|_| {
            Refusal::Other(ToolOutput::error(
                "not run: the session could not be written",
            ))
        })?;
        if by != Decider::Policy || answer == ApprovalDecision::Deny {
            self.emit(
                id,
                EventMsg::PermissionDecision(PermissionDecisionEvent {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    decision: answer,
                    by,
                    rule: decision.rule.clone(),
                }),
            );
        }
        match answer {
            ApprovalDecision::AllowOnce | ApprovalDecision::AllowSession => Ok(Permit {
                clobbers: decision.clobbers,
                unconfined: decision.unconfined,
                writes: written(&decision),
            }),
            ApprovalDecision::Deny => {
                let why = match (reason, by) {
                    (Some(reason), _) => reason,
                    (None, Decider::Policy) => format!("denied by the rule {}", decision.rule),
                    (None, _) => "the user declined".to_owned(),
                };
                Err(Refusal::Denied { why })
            }
        }
    }

    /// Puts the question to the front end and waits for the answer.
    async fn ask(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        arguments: Value,
        decision: &Decision,
        cancel: &Cancel,
    ) -> (ApprovalDecision, Option<String>) {
        self.set_state(id, TurnState::AwaitingPermission);
        let preview = self.tools.preview(
            &call.name,
            &call.arguments,
            &ToolContext {
                sandbox: Arc::clone(&self.sandbox),
                cancel: cancel.clone(),
                allow_clobber: false,
                shell: Arc::clone(&self.shell),
                unconfined: false,
                running: crate::tools::Running::global(),
                late: std::sync::Arc::default(),
                checkpoints: None,
            },
        );
        let (sender, receiver) = oneshot::channel();
        lock(&self.shared.approvals).insert(call.id.clone(), sender);
        self.emit(
            id,
            EventMsg::ApprovalRequest(ApprovalRequestEvent {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                reason: arguments
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                arguments,
                rule: decision.rule.clone(),
                session_allowed: !decision.session_rules.is_empty(),
                session_rules: decision
                    .session_rules
                    .iter()
                    .map(crate::policy::Rule::describe)
                    .collect(),
                dangerous: decision.dangerous,
                dangers: decision
                    .dangers
                    .iter()
                    .map(|d| format!("{}: {}", d.command, d.why))
                    .collect(),
                notes: decision.runs.clone(),
                mandate: decision.mandate,
                confinement: decision.confinement.clone(),
                unconfined: decision.unconfined,
                runs_unconfined: decision.confinement.is_some()
                    && (decision.unconfined
                        || !matches!(self.shell.status(), crate::confine::Status::Confined { .. })),
                preview,
                agent: None,
            }),
        );
        let answer = tokio::select! {
            answer = receiver => answer.unwrap_or((ApprovalDecision::Deny, None)),
            () = cancel.cancelled() => (ApprovalDecision::Deny, Some("the turn was aborted".to_owned())),
        };
        lock(&self.shared.approvals).remove(&call.id);
        match answer {
            // A front end may not widen a dangerous call to the session.
            (ApprovalDecision::AllowSession, reason) if decision.session_rules.is_empty() => {
                (ApprovalDecision::AllowOnce, reason)
            }
            answer => answer,
        }
    }
}

/// How an allowed call runs.
#[derive(Debug, Clone, Default)]
pub(super) struct Permit {
    /// An approved `>` may overwrite files: bash runs without noclobber.
    pub(super) clobbers: bool,
    /// A person approved running the command outside the sandbox.
    pub(super) unconfined: bool,
    /// The workspace files the call names as written (its `edit`
    /// subjects, relative to the root): kept in checkpoints even where
    /// `.gitignore` leaves them out.
    pub(super) writes: Vec<std::path::PathBuf>,
}

/// The workspace files a call names as written: its `edit` subjects.
fn written(decision: &Decision) -> Vec<std::path::PathBuf> {
    decision
        .subjects
        .iter()
        .filter(|subject| subject.permission == "edit" && !subject.value.is_empty())
        .map(|subject| std::path::PathBuf::from(&subject.value))
        .collect()
}

/// A short, one-line form of a call's arguments for the session log.
fn summarize(tool: &str, arguments: &Value) -> String {
    let text =
        crate::tools::subject(tool, arguments).map_or_else(|| arguments.to_string(), str::to_owned);
    let line = text.replace('\n', " ");
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}
