//! The turn state machine: `planning -> model_generating ->
//! awaiting_permission -> tool_running -> ... -> done | error`.
//!
//! One model request is a step; a turn takes steps until the model answers
//! without tool calls, the step limit is hit, an error occurs or the user
//! aborts. Every message is in the session before the next step starts.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{Queued, Shared, lock};
use crate::cancel::Cancel;
use crate::client::wire::{ChatRequest, StreamOptions, ToolSpec};
use crate::client::{self, Client, Piece, Update};
use crate::config::Config;
use crate::context::{build_messages, system_prompt};
use crate::policy::{Action, Decision, Policy, PolicySource, Rule, SESSION_ORIGIN};
use crate::protocol::{
    ApprovalDecision, ApprovalRequestEvent, AssistantMessageEvent, ErrorKind, Event, EventMsg, Op,
    PermissionDecisionEvent, SessionConfiguredEvent, SubmissionId, TokenUsage, ToolCallBeginEvent,
    ToolCallEndEvent, TurnCompleteEvent, TurnState, TurnStatus,
};
use crate::sandbox::Sandbox;
use crate::session::{AllowedRule, EntryBody, Message, Session, ToolCall};
use crate::tools::{Registry, ToolContext, ToolOutput, parse_argument_text};

/// How a step ended.
enum Step {
    /// The model answered without tool calls.
    Final(String),
    /// Tools ran; ask the model again.
    Continue,
    /// The turn ends with this status.
    End(TurnStatus),
}

/// The core's state, owned by the turn runner task.
pub(super) struct AgentState {
    client: Arc<Client>,
    session: Session,
    tools: Registry,
    specs: Vec<ToolSpec>,
    config: Config,
    sandbox: Arc<Sandbox>,
    system: String,
    events: mpsc::UnboundedSender<Event>,
    shared: Arc<Shared>,
    policy: Arc<PolicySource>,
    /// Rules the user allowed for the rest of the session.
    session_rules: Vec<Rule>,
    /// Who answers approval requests (`user`, `headless`).
    approver: &'static str,
    /// The last call asked for and how many times in a row.
    last_call: Option<(String, String)>,
    repeats: u32,
}

impl AgentState {
    pub(super) fn new(
        setup: super::AgentSetup,
        events: mpsc::UnboundedSender<Event>,
        shared: Arc<Shared>,
    ) -> Self {
        let specs = setup.tools.specs();
        Self {
            system: system_prompt(setup.sandbox.root()),
            client: setup.client,
            tools: setup.tools,
            specs,
            config: setup.config,
            sandbox: setup.sandbox,
            events,
            shared,
            session_rules: setup
                .session
                .allowed
                .iter()
                .map(|a| Rule {
                    permission: a.permission.clone(),
                    pattern: a.pattern.clone(),
                    action: Action::Allow,
                    origin: SESSION_ORIGIN.to_owned(),
                })
                .collect(),
            session: setup.session,
            policy: setup.policy,
            approver: setup.approver,
            last_call: None,
            repeats: 0,
        }
    }

    fn emit(&self, id: SubmissionId, msg: EventMsg) {
        // Nobody listening means the front end is gone; the session still
        // records everything.
        let _ = self.events.send(Event { id, msg });
    }

    fn set_state(&self, id: SubmissionId, state: TurnState) {
        self.emit(id, EventMsg::StateChanged { state });
    }

    /// Appends to the session; a failure is reported and ends the turn.
    fn record(&mut self, id: SubmissionId, body: EntryBody) -> Result<(), TurnStatus> {
        self.session.append(body).map_err(|error| {
            self.emit(
                id,
                EventMsg::Error {
                    message: client::error_chain(&error),
                    kind: ErrorKind::Session,
                },
            );
            TurnStatus::Failed
        })
    }

    pub(super) async fn run(mut self, mut queue: mpsc::UnboundedReceiver<Queued>) {
        self.emit(
            0,
            EventMsg::SessionConfigured(SessionConfiguredEvent {
                session_id: self.session.id.clone(),
                path: self.session.path.display().to_string(),
                model: self.session.model.clone(),
                base_url: self.client.base_url().to_owned(),
                resumed: self.session.resumed,
                restored_messages: self.session.messages.len(),
            }),
        );
        if self.session.skipped_lines > 0 {
            self.emit(
                0,
                EventMsg::Warning {
                    message: format!(
                        "{} unreadable lines in `{}` were skipped",
                        self.session.skipped_lines,
                        self.session.path.display()
                    ),
                },
            );
        }
        while let Some((id, op, cancel)) = queue.recv().await {
            match op {
                Op::UserTurn { text } => self.run_turn(id, text, &cancel).await,
                Op::SetModel { model } => {
                    if self
                        .record(
                            id,
                            EntryBody::ModelChange {
                                model: model.clone(),
                            },
                        )
                        .is_ok()
                    {
                        self.emit(id, EventMsg::ModelChanged { model });
                    }
                }
                Op::Shutdown => break,
                // The router answers these itself.
                Op::Interrupt | Op::Approve { .. } => {}
            }
        }
    }

    async fn run_turn(&mut self, id: SubmissionId, text: String, cancel: &Cancel) {
        self.emit(id, EventMsg::TurnStarted { text: text.clone() });
        let (status, last_message) = self.turn(id, text, cancel).await;
        lock(&self.shared.cancels).retain(|c| !c.is_cancelled() && !c.same_as(cancel));
        let _ = self.record(id, EntryBody::TurnEnd { status });
        if let Err(error) = self.session.sync() {
            self.emit(
                id,
                EventMsg::Warning {
                    message: client::error_chain(&error),
                },
            );
        }
        let state = match status {
            TurnStatus::Done => TurnState::Done,
            TurnStatus::Failed | TurnStatus::Aborted => TurnState::Error,
        };
        self.set_state(id, state);
        self.emit(
            id,
            EventMsg::TurnComplete(TurnCompleteEvent {
                status,
                last_message,
            }),
        );
    }

    async fn turn(
        &mut self,
        id: SubmissionId,
        text: String,
        cancel: &Cancel,
    ) -> (TurnStatus, Option<String>) {
        if cancel.is_cancelled() {
            return (TurnStatus::Aborted, None);
        }
        let user = EntryBody::Message {
            message: Message::User { content: text },
        };
        if let Err(status) = self.record(id, user) {
            return (status, None);
        }
        for _ in 0..self.config.max_steps {
            match self.step(id, cancel).await {
                Step::Final(text) => return (TurnStatus::Done, Some(text)),
                Step::Continue => {}
                Step::End(status) => return (status, None),
            }
        }
        let message = format!(
            "Stopped after {} model requests in one turn (`max_steps`); send another message to continue",
            self.config.max_steps
        );
        self.fail(id, message, ErrorKind::StepLimit);
        (TurnStatus::Failed, None)
    }

    async fn step(&mut self, id: SubmissionId, cancel: &Cancel) -> Step {
        self.set_state(id, TurnState::Planning);
        let messages = build_messages(&self.system, &self.session.messages);
        let model = self.session.model.clone();
        let request = ChatRequest {
            model: &model,
            messages: &messages,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tools: &self.specs,
            max_tokens: self.config.max_tokens,
            temperature: self.config.temperature,
            top_p: self.config.top_p,
        };
        let mut partial = String::new();
        let mut reasoning = String::new();
        let mut generating = false;
        let events = self.events.clone();
        let emit = |msg| {
            let _ = events.send(Event { id, msg });
        };
        let result = self
            .client
            .stream_chat(&request, cancel, &mut |update| match update {
                Update::Piece(piece) => {
                    if !generating && piece.is_output() {
                        generating = true;
                        emit(EventMsg::StateChanged {
                            state: TurnState::ModelGenerating,
                        });
                    }
                    match piece {
                        Piece::Content(delta) => {
                            partial.push_str(&delta);
                            emit(EventMsg::AssistantDelta { delta });
                        }
                        Piece::Reasoning(delta) => {
                            reasoning.push_str(&delta);
                            emit(EventMsg::ReasoningDelta { delta });
                        }
                        Piece::ToolCallNamed { .. } | Piece::Usage(_) | Piece::Error(_) => {}
                    }
                }
                Update::Retry(retry) => emit(EventMsg::Retry(retry)),
            })
            .await;
        match result {
            Ok(response) => self.finish_step(id, response, cancel).await,
            Err(error) => {
                if !partial.is_empty() || !reasoning.is_empty() {
                    let message = Message::Assistant {
                        content: partial,
                        reasoning: (!reasoning.is_empty()).then_some(reasoning),
                        tool_calls: Vec::new(),
                        interrupted: true,
                    };
                    if let Err(status) = self.record(id, EntryBody::Message { message }) {
                        return Step::End(status);
                    }
                }
                if matches!(error, client::Error::Cancelled) {
                    return Step::End(TurnStatus::Aborted);
                }
                let message = client::error_chain(&error);
                self.fail(id, message, error_kind(&error));
                Step::End(TurnStatus::Failed)
            }
        }
    }

    async fn finish_step(
        &mut self,
        id: SubmissionId,
        response: client::Assembled,
        cancel: &Cancel,
    ) -> Step {
        if let Some(usage) = response.usage {
            let usage = TokenUsage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                total_tokens: usage.total_tokens,
            };
            self.emit(id, EventMsg::TokenUsage(usage));
            if let Err(status) = self.record(id, EntryBody::Usage(usage)) {
                return Step::End(status);
            }
        }
        if response.invalid_utf8 {
            self.warn(id, "The server sent text that is not valid UTF-8; it was shown with replacement characters");
        }
        if response.finish_reason.as_deref() == Some("length") {
            self.warn(id, "The model stopped at its output limit (`max_tokens` or the context length); the answer may be cut short");
        }
        let base = self.session.messages.len();
        let mut tool_calls: Vec<ToolCall> = Vec::new();
        for (position, call) in response.tool_calls.into_iter().enumerate() {
            let duplicate = tool_calls.iter().any(|c| c.id == call.id);
            let id = if call.id.is_empty() || duplicate {
                format!("call_{base}_{position}")
            } else {
                call.id
            };
            tool_calls.push(ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            });
        }
        let message = Message::Assistant {
            content: response.content.clone(),
            reasoning: response.reasoning,
            tool_calls: tool_calls.clone(),
            interrupted: false,
        };
        if let Err(status) = self.record(id, EntryBody::Message { message }) {
            return Step::End(status);
        }
        self.emit(
            id,
            EventMsg::AssistantMessage(AssistantMessageEvent {
                text: response.content.clone(),
                tool_calls: tool_calls.len(),
            }),
        );
        if tool_calls.is_empty() {
            return Step::Final(response.content);
        }
        // After an abort the remaining calls still get a result, so the
        // history stays a valid request.
        for call in &tool_calls {
            let output = if cancel.is_cancelled() {
                ToolOutput::error("not run: the turn was aborted")
            } else {
                self.run_call(id, call, cancel).await
            };
            let message = Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: output.output,
                is_error: !output.ok,
            };
            if let Err(status) = self.record(id, EntryBody::Message { message }) {
                return Step::End(status);
            }
        }
        if cancel.is_cancelled() {
            return Step::End(TurnStatus::Aborted);
        }
        Step::Continue
    }

    /// Records an error that ends the turn and reports it.
    fn fail(&mut self, id: SubmissionId, message: String, kind: ErrorKind) {
        let _ = self.record(
            id,
            EntryBody::Error {
                message: message.clone(),
            },
        );
        self.emit(id, EventMsg::Error { message, kind });
    }

    fn warn(&self, id: SubmissionId, message: &str) {
        self.emit(
            id,
            EventMsg::Warning {
                message: message.to_owned(),
            },
        );
    }

    /// Asks for approval when the policy says so, runs the tool and reports.
    async fn run_call(&mut self, id: SubmissionId, call: &ToolCall, cancel: &Cancel) -> ToolOutput {
        let arguments = parse_argument_text(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        self.emit(
            id,
            EventMsg::ToolCallBegin(ToolCallBeginEvent {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: arguments.clone(),
            }),
        );
        let output = match self.permit(id, call, arguments, cancel).await {
            Ok(clobbers) => {
                self.set_state(id, TurnState::ToolRunning);
                let context = ToolContext {
                    sandbox: Arc::clone(&self.sandbox),
                    cancel: cancel.clone(),
                    allow_clobber: clobbers,
                };
                // Any tool, even one stuck in a blocking call, gives way to
                // an abort; the turn never waits on it.
                tokio::select! {
                    output = self.tools.call(&call.name, &call.arguments, &context) => output,
                    () = cancel.cancelled() => ToolOutput::error("Aborted by the user"),
                }
            }
            Err(refusal) => refusal,
        };
        self.emit(
            id,
            EventMsg::ToolCallEnd(ToolCallEndEvent {
                call_id: call.id.clone(),
                name: call.name.clone(),
                ok: output.ok,
                summary: output.summary.clone(),
                output: output.output.clone(),
                display: output.display.clone(),
            }),
        );
        output
    }

    /// `Ok(clobbers)` when the call may run (`clobbers`: an approved `>`
    /// may overwrite files, so bash runs without noclobber); otherwise the
    /// result the model gets.
    async fn permit(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        arguments: Value,
        cancel: &Cancel,
    ) -> Result<bool, ToolOutput> {
        if self.tools.get(&call.name).is_none() {
            return Ok(false); // the registry reports the unknown tool
        }
        let policy = match self.policy.current() {
            Ok(policy) => policy,
            Err(problem) => {
                let message = format!(
                    "Not run: the permission policy could not be loaded ({problem}); fix it and ask again"
                );
                self.warn(id, &message);
                let entry = EntryBody::Permission {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    summary: summarize(&call.name, &arguments),
                    dangerous: false,
                    decision: ApprovalDecision::Deny,
                    by: "policy".to_owned(),
                    rule: format!("the policy could not be loaded: {problem}"),
                    allowed: Vec::new(),
                };
                let _ = self.record(id, entry);
                return Err(ToolOutput::error(message));
            }
        };
        let mut decision = policy.decide(&call.name, &arguments, &self.session_rules);
        self.doom_loop(&policy, call, &mut decision);
        let summary = summarize(&call.name, &arguments);
        let (answer, reason, by) = match decision.action {
            Action::Allow if decision.rule == SESSION_ORIGIN => {
                (ApprovalDecision::AllowOnce, None, "session")
            }
            Action::Allow => (ApprovalDecision::AllowOnce, None, "policy"),
            Action::Deny => (
                ApprovalDecision::Deny,
                Some(format!("denied by the rule {}", decision.rule)),
                "policy",
            ),
            Action::Ask => {
                let (answer, reason) = self.ask(id, call, arguments, &decision, cancel).await;
                (answer, reason, self.approver)
            }
        };
        let allowed = if answer == ApprovalDecision::AllowSession {
            let rules = std::mem::take(&mut decision.session_rules);
            self.session_rules.extend(rules.iter().cloned());
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
            by: by.to_owned(),
            rule: decision.rule.clone(),
            allowed,
        };
        self.record(id, entry)
            .map_err(|_| ToolOutput::error("not run: the session could not be written"))?;
        if by != "policy" || answer == ApprovalDecision::Deny {
            self.emit(
                id,
                EventMsg::PermissionDecision(PermissionDecisionEvent {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    decision: answer,
                    by: by.to_owned(),
                    rule: decision.rule.clone(),
                }),
            );
        }
        match answer {
            ApprovalDecision::AllowOnce | ApprovalDecision::AllowSession => Ok(decision.clobbers),
            ApprovalDecision::Deny => {
                let why = match (reason, by) {
                    (Some(reason), _) => reason,
                    (None, "policy") => format!("denied by the rule {}", decision.rule),
                    (None, _) => "the user declined".to_owned(),
                };
                Err(ToolOutput::error(format!(
                    "Permission denied: `{}` was not run ({why}). Do not try to get around this; ask the user or choose another way.",
                    call.name
                )))
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
                dangerous: decision.dangerous,
                dangers: decision
                    .dangers
                    .iter()
                    .map(|d| format!("{}: {}", d.command, d.why))
                    .collect(),
                mandatory: decision.managed,
                preview,
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

    /// The same call asked for again and again is matched as `doom_loop`
    /// too, and the stricter answer stands.
    fn doom_loop(&mut self, policy: &Policy, call: &ToolCall, decision: &mut Decision) {
        let repeats = self.count_repeat(call);
        if repeats < DOOM_LOOP_REPEATS {
            return;
        }
        let doom = policy.decide(
            "doom_loop",
            &Value::String(call.name.clone()),
            &self.session_rules,
        );
        if doom.action > decision.action {
            decision.action = doom.action;
            decision.rule = format!(
                "{} (the same `{}` call {repeats} times in a row)",
                doom.rule, call.name
            );
            decision.managed = doom.managed;
            decision.session_rules = Vec::new();
        }
    }

    /// How many times in a row this exact call has now been asked for.
    fn count_repeat(&mut self, call: &ToolCall) -> u32 {
        let key = (call.name.clone(), call.arguments.clone());
        if self.last_call.as_ref() == Some(&key) {
            self.repeats += 1;
        } else {
            self.last_call = Some(key);
            self.repeats = 1;
        }
        self.repeats
    }
}

/// The same call this many times in a row is matched as `doom_loop`.
const DOOM_LOOP_REPEATS: u32 = 3;

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

fn error_kind(error: &client::Error) -> ErrorKind {
    match error {
        client::Error::Connect { .. } => ErrorKind::Connect,
        client::Error::Status { .. } | client::Error::InBand { .. } => ErrorKind::Server,
        client::Error::Malformed { .. }
        | client::Error::Truncated
        | client::Error::TooLarge
        | client::Error::Read(_)
        | client::Error::BadResponse { .. } => ErrorKind::Stream,
        client::Error::IdleTimeout(_) => ErrorKind::Timeout,
        client::Error::Cancelled => ErrorKind::Internal,
    }
}
