//! The agent core: runs turns against the model, executes tool calls and
//! records everything in the session.
//!
//! Front ends talk to it only through [`Op`]s and [`Event`]s. A router task
//! handles `Interrupt` and `Approve` at once, even while a turn runs; every
//! other op is queued for the turn runner, in order. Queries of the server
//! (`ListModels`) are asked in the background; the runner takes the answer
//! in between ops.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod budget;
mod call;
mod compact;
mod dependent;
mod ending;
mod failed;
mod finish;
mod grounded;
mod guards;
mod handler;
mod intent;
mod kind;
mod leftover;
mod mcp;
mod permit;
mod permits;
mod preread;
mod profile;
mod repeat;
mod request;
mod rewind;
mod shell;
mod startup;
mod state;
mod task;
mod textcalls;
mod title;
mod todo;
mod turn;
mod validate;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use crate::cancel::Cancel;
use crate::client::Client;
use crate::config::Config;
use crate::policy::PolicySource;
use crate::protocol::{ApprovalDecision, Event, Op, SubmissionId};
use crate::sandbox::Sandbox;
use crate::session::Session;
use crate::tools::Registry;

/// Everything the core needs to run.
pub struct AgentSetup {
    /// The model endpoint.
    pub client: Arc<Client>,
    /// The open session (new or resumed).
    pub session: Session,
    /// The tools offered to the model.
    pub tools: Registry,
    /// Effective configuration.
    pub config: Config,
    /// The workspace root, held open; every file tool goes through it.
    pub sandbox: Arc<Sandbox>,
    /// How shell commands run (confined by the kernel, or not).
    pub shell: Arc<crate::confine::Shell>,
    /// The effective permission policy, resolved before every call.
    pub policy: Arc<PolicySource>,
    /// Who answers approval requests, as recorded: `user` or `headless`.
    pub approver: crate::protocol::Decider,
    /// The system prompt in its parts (base prompt, rules, instructions).
    pub context: crate::context::Assembly,
    /// What earlier runs learned about servers (none: learn afresh).
    pub servers: crate::servers::ServerCache,
    /// The agent profiles.
    pub agents: crate::agents::Agents,
    /// The agent to start with (`--agent`); else the session's, else
    /// `build`.
    pub agent: Option<String>,
    /// 0 for the session's own core; 1 for a subagent's (which gets no
    /// `task` tool).
    pub depth: u32,
    /// The configured MCP servers (a subagent shares its parent's).
    pub mcp: Option<Arc<crate::mcp::Mcp>>,
    /// The workspace's checkpoints (none: off, or a subagent's core, whose
    /// changes its parent's `task` step covers).
    pub checkpoints: Option<Arc<crate::checkpoint::Shared>>,
}

/// Sends ops to a running core. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OpSender {
    sender: mpsc::UnboundedSender<(SubmissionId, Op)>,
    next_id: Arc<AtomicU64>,
}

impl OpSender {
    /// Submits an op; events answering it carry the returned id. An op sent
    /// after the core stopped is dropped.
    pub fn submit(&self, op: Op) -> SubmissionId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.sender.send((id, op));
        id
    }
}

/// The front end's side of a running core.
#[derive(Debug)]
pub struct AgentHandle {
    /// Where ops go.
    pub ops: OpSender,
    /// Where events come from; closed when the core stops.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The MCP servers the core started, stopped by [`AgentHandle::stop_servers`].
    mcp: Option<Arc<crate::mcp::Mcp>>,
}

impl AgentHandle {
    /// Stops the MCP servers and their process groups; front ends call it
    /// before they exit.
    pub async fn stop_servers(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
    }
}

/// An answer to an approval request: the decision and, for a denial, why.
pub type Answer = (ApprovalDecision, Option<String>);

/// State shared by the router and the turn runner.
#[derive(Debug, Default)]
struct Shared {
    /// Cancels of turns queued or running.
    cancels: Mutex<Vec<Cancel>>,
    /// Approval requests waiting for an answer, by call id.
    approvals: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    /// Cancels of the subagents running now.
    subagents: Mutex<Vec<Cancel>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts the core on the current tokio runtime.
pub fn spawn(setup: AgentSetup) -> AgentHandle {
    // The session's own core starts the servers (once it has said it is
    // ready) and the front end stops them.
    let mcp = setup.mcp.clone().filter(|_| setup.depth == 0);
    let (op_sender, op_receiver) = mpsc::unbounded_channel();
    let (event_sender, event_receiver) = mpsc::unbounded_channel();
    let (queue_sender, queue_receiver) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared::default());
    tokio::spawn(route(op_receiver, queue_sender, Arc::clone(&shared)));
    let (listed_sender, listed_receiver) = mpsc::unbounded_channel();
    let state = state::AgentState::new(setup, event_sender, listed_sender, shared);
    tokio::spawn(state.run(queue_receiver, listed_receiver));
    AgentHandle {
        ops: OpSender {
            sender: op_sender,
            next_id: Arc::new(AtomicU64::new(1)),
        },
        events: event_receiver,
        mcp,
    }
}

/// A queued op with the cancel of the turn it starts.
type Queued = (SubmissionId, Op, Cancel);

async fn route(
    mut ops: mpsc::UnboundedReceiver<(SubmissionId, Op)>,
    queue: mpsc::UnboundedSender<Queued>,
    shared: Arc<Shared>,
) {
    while let Some((id, op)) = ops.recv().await {
        match op {
            Op::Interrupt => {
                for cancel in lock(&shared.cancels).drain(..) {
                    cancel.cancel();
                }
            }
            Op::InterruptSubagents => {
                let running: Vec<Cancel> = lock(&shared.subagents)
                    .iter()
                    .filter(|c| !c.is_cancelled())
                    .cloned()
                    .collect();
                if running.is_empty() {
                    for cancel in lock(&shared.cancels).drain(..) {
                        cancel.cancel();
                    }
                }
                for cancel in running {
                    cancel.cancel();
                }
            }
            Op::Approve {
                call_id,
                decision,
                reason,
            } => {
                if let Some(waiter) = lock(&shared.approvals).remove(&call_id) {
                    let _ = waiter.send((decision, reason));
                }
            }
            Op::UserTurn { .. }
            | Op::Shell { .. }
            | Op::SetModel { .. }
            | Op::SetAgent { .. }
            | Op::ListAgents
            | Op::ListMcp
            | Op::Context
            | Op::ListModels
            | Op::Compact
            | Op::Undo
            | Op::Revert { .. }
            | Op::Diff { .. }
            | Op::Turns
            | Op::Summarize
            | Op::Shutdown => {
                let cancel = Cancel::default();
                if matches!(
                    op,
                    Op::UserTurn { .. } | Op::Shell { .. } | Op::Compact | Op::Summarize
                ) {
                    lock(&shared.cancels).push(cancel.clone());
                }
                if queue.send((id, op, cancel)).is_err() {
                    break;
                }
            }
        }
    }
}
