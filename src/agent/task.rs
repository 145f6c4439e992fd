//! The `task` tool: a subagent in a child session of its own, started
//! with the subagent's prompt, the rules and the task, and nothing else of
//! the parent's history. Its events reach the front end as they happen,
//! tagged ([`EventMsg::Subagent`]); its approval questions reach the user
//! with its name on them and the answers go back to it; an abort of the
//! parent stops it. Its final answer is the call's result. Several `task`
//! calls of one step run at once, up to `subagents.concurrency`; a
//! subagent gets no `task` tool of its own.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::state::AgentState;
use super::{AgentHandle, AgentSetup, Shared, lock};
use crate::cancel::Cancel;
use crate::client::wire::{FunctionSpec, ToolSpec};
use crate::protocol::{CallOutcome, Event, EventMsg, Op, SubagentEvent, SubmissionId, TurnStatus};
use crate::session::{ParentRef, Store, ToolCall};
use crate::tools::{Registry, ToolOutput};

/// The tool's name.
pub(super) const NAME: &str = "task";

/// The `task` tool's definition, naming the subagents there are.
pub(super) fn spec(agents: &crate::agents::Agents) -> Option<ToolSpec> {
    let subagents: Vec<String> = agents
        .subagents()
        .map(|p| format!("- {}: {}", p.name, p.description))
        .collect();
    if subagents.is_empty() {
        return None;
    }
    Some(ToolSpec {
        kind: "function",
        function: FunctionSpec {
            name: NAME.to_owned(),
            description: format!(
                "Give a part of the task to a subagent (it sees only your prompt):\n{}",
                subagents.join("\n")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "agent": {"type": "string"},
                    "prompt": {"type": "string"},
                    "description": {"type": "string"}
                },
                "required": ["agent", "prompt"]
            }),
        },
    })
}

/// A `task` call's arguments.
#[derive(Debug, serde::Deserialize)]
struct Arguments {
    agent: String,
    prompt: String,
    #[serde(default)]
    description: Option<String>,
}

impl AgentState {
    /// Runs every `task` call of `calls` (one step's), at once within the
    /// bound; the results by call id.
    pub(super) async fn run_tasks(
        &mut self,
        id: SubmissionId,
        calls: &[&ToolCall],
        cancel: &Cancel,
    ) -> HashMap<String, ToolOutput> {
        let mut results = HashMap::new();
        let mut running = Vec::new();
        let at_once = usize::try_from(self.config.subagents.concurrency.clamp(1, 16)).unwrap_or(1);
        let bound = Arc::new(Semaphore::new(at_once));
        for call in calls {
            let arguments = self.announce(id, call, false);
            match self.start_task(id, call, arguments, cancel).await {
                Ok(child) => {
                    let bound = Arc::clone(&bound);
                    running.push((
                        call.id.clone(),
                        tokio::spawn(async move {
                            let _slot = bound.acquire_owned().await;
                            child.drive().await
                        }),
                    ));
                }
                Err(refusal) => {
                    self.ended(id, call, &refusal, CallOutcome::Refused);
                    results.insert(call.id.clone(), refusal);
                }
            }
        }
        for (call_id, child) in running {
            let (output, outcome) = child.await.unwrap_or_else(|error| {
                (
                    ToolOutput::error(format!("the subagent stopped: {error}")),
                    CallOutcome::Failed,
                )
            });
            if let Some(call) = calls.iter().find(|c| c.id == call_id) {
                self.ended(id, call, &output, outcome);
            }
            results.insert(call_id, output);
        }
        results
    }

    /// Checks a `task` call (the agent exists and may be started: the
    /// `task` rules, asked like any call) and starts its core.
    async fn start_task(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        arguments: Value,
        cancel: &Cancel,
    ) -> Result<Child, ToolOutput> {
        let parsed: Arguments = serde_json::from_value(arguments.clone())
            .map_err(|e| ToolOutput::error(format!("Invalid arguments for `task`: {e}")))?;
        let profile = self
            .agents
            .subagent(&parsed.agent)
            .map_err(ToolOutput::error)?
            .clone();
        if self.depth > 0 {
            return Err(ToolOutput::error(
                "A subagent cannot start subagents of its own; do the work yourself",
            ));
        }
        self.permit(id, call, arguments, super::permits::Caller::Model, cancel)
            .await
            .map_err(|refusal| refusal.into_output(&call.name))?;
        let store = Store::new(
            self.session
                .path
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default(),
        );
        let session = store
            .create_child(
                self.sandbox.root(),
                self.model(),
                self.client.base_url(),
                ParentRef {
                    session_id: self.session.id.clone(),
                    call_id: call.id.clone(),
                },
            )
            .map_err(|e| ToolOutput::error(format!("Could not start the subagent: {e}")))?;
        let session_id = session.id.clone();
        // Its own cancel: the turn's stops it, and so can Esc alone.
        let own = cancel.child();
        lock(&self.shared.subagents).push(own.clone());
        let setup = AgentSetup {
            client: Arc::clone(&self.client),
            session,
            tools: Registry::default(),
            config: self.base_config.clone(),
            sandbox: Arc::clone(&self.sandbox),
            shell: Arc::clone(&self.shell),
            policy: self.permits.policy(),
            approver: self.permits.approver(),
            context: self.request.context().clone(),
            servers: self.servers.clone(),
            agents: self.agents.clone(),
            agent: Some(profile.name.clone()),
            depth: self.depth + 1,
            mcp: self.mcp.clone(),
            checkpoints: None,
        };
        Ok(Child {
            handle: super::spawn(setup),
            prompt: parsed.prompt,
            description: parsed.description,
            parent: id,
            call_id: call.id.clone(),
            session_id,
            agent: profile.name,
            events: self.events.clone(),
            shared: Arc::clone(&self.shared),
            cancel: own,
        })
    }
}

/// A subagent's core and what its events are passed on with.
struct Child {
    handle: AgentHandle,
    prompt: String,
    description: Option<String>,
    parent: SubmissionId,
    call_id: String,
    session_id: String,
    agent: String,
    events: mpsc::UnboundedSender<Event>,
    shared: Arc<Shared>,
    cancel: Cancel,
}

impl Child {
    /// Gives it the task, passes its events on until its turn ends, and
    /// stops it; its final answer is the result.
    async fn drive(mut self) -> (ToolOutput, CallOutcome) {
        self.handle.ops.submit(Op::UserTurn {
            text: self.prompt.clone(),
        });
        let mut interrupted = false;
        let mut steps = 0usize;
        let ended = loop {
            let event = tokio::select! {
                event = self.handle.events.recv() => event,
                () = self.cancel.cancelled(), if !interrupted => {
                    interrupted = true;
                    self.handle.ops.submit(Op::Interrupt);
                    continue;
                }
            };
            let Some(event) = event else {
                break None;
            };
            match event.msg {
                EventMsg::ApprovalRequest(request) => self.ask(request),
                EventMsg::TurnComplete(complete) => {
                    self.pass(EventMsg::TurnComplete(complete.clone()));
                    break Some(complete);
                }
                msg => {
                    if matches!(msg, EventMsg::AssistantMessage(_)) {
                        steps += 1;
                    }
                    self.pass(msg);
                }
            }
        };
        self.handle.ops.submit(Op::Shutdown);
        lock(&self.shared.subagents).retain(|c| !c.same_as(&self.cancel));
        let what = self
            .description
            .as_deref()
            .map_or_else(String::new, |d| format!(" ({d})"));
        let Some(complete) = ended else {
            return (
                ToolOutput::error(format!(
                    "The subagent `{}` stopped before it answered",
                    self.agent
                )),
                CallOutcome::Failed,
            );
        };
        let answer = complete.last_message.unwrap_or_default();
        let footer = format!(
            "[subagent `{}`{what}, session {}, {}, {}]",
            self.agent,
            self.session_id,
            crate::protocol::count(steps, "step"),
            complete.status.words()
        );
        let ok = complete.status == TurnStatus::Done;
        let output = if answer.trim().is_empty() {
            footer
        } else {
            format!("{}\n\n{footer}", answer.trim_end())
        };
        let summary = format!("{}: {}", self.agent, crate::protocol::count(steps, "step"));
        let outcome = match complete.status {
            TurnStatus::Done => CallOutcome::Ok,
            TurnStatus::Aborted => CallOutcome::Aborted,
            _ => CallOutcome::Failed,
        };
        let output = if ok {
            ToolOutput::ok(output, summary)
        } else {
            let mut failed = ToolOutput::error(output);
            failed.summary = summary;
            failed
        };
        (output, outcome)
    }

    /// Passes an event on, tagged with the subagent.
    fn pass(&self, event: EventMsg) {
        let _ = self.events.send(Event {
            id: self.parent,
            msg: EventMsg::Subagent(SubagentEvent {
                call_id: self.call_id.clone(),
                child_session_id: self.session_id.clone(),
                agent: self.agent.clone(),
                event: Box::new(event),
            }),
        });
    }

    /// Puts its approval question to the user, with its name on it, and
    /// sends the answer back to it.
    fn ask(&self, mut request: crate::protocol::ApprovalRequestEvent) {
        let own = request.call_id.clone();
        request.call_id = format!("{}/{own}", self.session_id);
        request.agent = Some(self.agent.clone());
        let (answer, answered) = oneshot::channel();
        lock(&self.shared.approvals).insert(request.call_id.clone(), answer);
        let ops = self.handle.ops.clone();
        tokio::spawn(async move {
            if let Ok((decision, reason)) = answered.await {
                ops.submit(Op::Approve {
                    call_id: own,
                    decision,
                    reason,
                });
            }
        });
        let _ = self.events.send(Event {
            id: self.parent,
            msg: EventMsg::ApprovalRequest(request),
        });
    }
}
