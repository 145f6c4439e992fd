//! The `task` tool: a subagent in a child session of its own, started
//! with the subagent's prompt, the rules and the task, and nothing else of
//! the parent's history. Its events reach the front end as they happen,
//! tagged ([`EventMsg::Subagent`]); its approval questions reach the user
//! with its name on them and the answers go back to it; an abort of the
//! parent stops it. Its final answer is the call's result. Several `task`
//! calls of one step run at once, up to `subagents.concurrency`; a
//! subagent gets no `task` tool of its own.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc, oneshot};

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

/// Reads a `task` call's arguments and finds the subagent they name;
/// `depth` is the calling core's (a subagent starts none); else why not.
pub(super) fn order(
    arguments: Value,
    agents: &crate::agents::Agents,
    depth: u32,
) -> Result<Order, String> {
    let arguments: Arguments = serde_json::from_value(arguments)
        .map_err(|e| format!("Invalid arguments for `task`: {e}"))?;
    let profile = agents.subagent(&arguments.agent)?;
    if depth > 0 {
        return Err(
            "A subagent cannot start subagents of its own; do the work yourself".to_owned(),
        );
    }
    Ok(Order {
        agent: profile.name.clone(),
        prompt: arguments.prompt,
        description: arguments.description,
    })
}

/// A checked `task` call: the subagent to start and what to tell it.
pub(super) struct Order {
    agent: String,
    prompt: String,
    description: Option<String>,
}

/// What starting a step's subagents needs from the core that calls them,
/// and nothing else: a child core is set up from these, its events go out
/// through `events`, its approvals and cancel are registered in `shared`.
/// The core checks and permits each call ([`order`], the `task`
/// rules); this only starts and drives what was permitted.
pub(super) struct Subagents {
    /// The parent's setup a child core is started with (its session, tools
    /// and agent are the child's own).
    pub(super) client: Arc<crate::client::Client>,
    pub(super) config: crate::config::Config,
    pub(super) sandbox: Arc<crate::sandbox::Sandbox>,
    pub(super) shell: Arc<crate::confine::Shell>,
    pub(super) policy: Arc<crate::policy::PolicySource>,
    pub(super) approver: crate::protocol::Decider,
    pub(super) context: crate::context::Assembly,
    pub(super) servers: crate::servers::ServerCache,
    pub(super) agents: crate::agents::Agents,
    pub(super) mcp: Option<Arc<crate::mcp::Mcp>>,
    /// Where the child sessions are made, and the parent they name.
    pub(super) store: Store,
    pub(super) parent_session: String,
    pub(super) model: String,
    /// The turn the calls belong to; its events carry the children's.
    pub(super) turn: SubmissionId,
    pub(super) events: mpsc::UnboundedSender<Event>,
    pub(super) shared: Arc<Shared>,
    /// How many run at once (`subagents.concurrency`).
    pub(super) bound: Arc<Semaphore>,
}

/// A subagent started for a call, running until its turn ends.
pub(super) struct Started {
    call_id: String,
    driving: tokio::task::JoinHandle<(ToolOutput, CallOutcome)>,
}

impl Subagents {
    /// The bound on subagents running at once, from the configuration.
    pub(super) fn bound(config: &crate::config::Config) -> Arc<Semaphore> {
        let at_once = usize::try_from(config.subagents.concurrency.clamp(1, 16)).unwrap_or(1);
        Arc::new(Semaphore::new(at_once))
    }

    /// Starts the subagent of a permitted `task` call in a child session;
    /// it runs (within the bound) while the core goes on. The turn's
    /// `cancel` stops it, and so can Esc alone. Why it could not start.
    pub(super) fn start(
        &self,
        call: &ToolCall,
        order: Order,
        cancel: &Cancel,
    ) -> Result<Started, String> {
        let session = self
            .store
            .create_child(
                self.sandbox.root(),
                &self.model,
                self.client.base_url(),
                ParentRef {
                    session_id: self.parent_session.clone(),
                    call_id: call.id.clone(),
                },
            )
            .map_err(|e| format!("Could not start the subagent: {e}"))?;
        let session_id = session.id.clone();
        let own = cancel.child();
        lock(&self.shared.subagents).push(own.clone());
        let setup = AgentSetup {
            client: Arc::clone(&self.client),
            session,
            tools: Registry::default(),
            config: self.config.clone(),
            sandbox: Arc::clone(&self.sandbox),
            shell: Arc::clone(&self.shell),
            policy: Arc::clone(&self.policy),
            approver: self.approver,
            context: self.context.clone(),
            servers: self.servers.clone(),
            agents: self.agents.clone(),
            agent: Some(order.agent.clone()),
            depth: 1,
            mcp: self.mcp.clone(),
            checkpoints: None,
        };
        let child = Child {
            handle: super::spawn(setup),
            prompt: order.prompt,
            description: order.description,
            parent: self.turn,
            call_id: call.id.clone(),
            session_id,
            agent: order.agent,
            events: self.events.clone(),
            shared: Arc::clone(&self.shared),
            cancel: own,
        };
        let bound = Arc::clone(&self.bound);
        Ok(Started {
            call_id: call.id.clone(),
            driving: tokio::spawn(async move {
                let _slot = bound.acquire_owned().await;
                child.drive().await
            }),
        })
    }

    /// Waits for every started subagent; each call's result and outcome,
    /// by call id, in the order started.
    pub(super) async fn finish(started: Vec<Started>) -> Vec<(String, ToolOutput, CallOutcome)> {
        let mut ended = Vec::with_capacity(started.len());
        for Started { call_id, driving } in started {
            let (output, outcome) = driving.await.unwrap_or_else(|error| {
                (
                    ToolOutput::error(format!("the subagent stopped: {error}")),
                    CallOutcome::Failed,
                )
            });
            ended.push((call_id, output, outcome));
        }
        ended
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
