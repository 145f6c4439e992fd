//! The core's state: handles on what the session works with (client,
//! session, tools, sandbox, shell, the event sender) and one owner per
//! concern, each a plain value of a module below this one. What the core
//! does with it lives in the modules above (`turn`, `call`, `permit`...).

use std::sync::Arc;

use tokio::sync::mpsc;

use super::Shared;
use super::budget::Budget;
use super::finish::Calls;
use super::permits::Permits;
use super::request::Request;
use crate::client::{self, Client};
use crate::config::Config;
use crate::protocol::{ErrorKind, Event, EventMsg, SubmissionId, TurnState, TurnStatus};
use crate::sandbox::Sandbox;
use crate::session::{EntryBody, Message, Session};
use crate::tools::Registry;

/// How a step ended.
pub(super) enum Step {
    /// The model answered without tool calls.
    Final(String),
    /// Ask the model again; these calls ran, and these waited for
    /// earlier results ([`super::dependent::first_dependent`]).
    Continue(Calls),
    /// The turn ends with this status.
    End(TurnStatus),
}

/// The core's state, owned by the turn runner task: handles on what the
/// session works with, and one owner per concern.
pub(super) struct AgentState {
    /// The client of the model in use.
    pub(super) client: Arc<Client>,
    /// Every endpoint's client used so far.
    pub(super) clients: client::Pool,
    pub(super) session: Session,
    pub(super) tools: Registry,
    /// What earlier runs learned about servers.
    pub(super) servers: crate::servers::ServerCache,
    /// The configuration with the agent's sampling and step limit.
    pub(super) config: Config,
    /// The configuration as loaded.
    pub(super) base_config: Config,
    /// The agent profiles, and the one in use.
    pub(super) agents: crate::agents::Agents,
    pub(super) agent: crate::agents::Profile,
    pub(super) sandbox: Arc<Sandbox>,
    pub(super) shell: Arc<crate::confine::Shell>,
    pub(super) events: mpsc::UnboundedSender<Event>,
    /// Where model lists asked for in the background come back.
    pub(super) listed: mpsc::UnboundedSender<(SubmissionId, Vec<crate::catalogue::Listed>)>,
    pub(super) shared: Arc<Shared>,
    /// What every request carries besides the history.
    pub(super) request: Request,
    /// The context budget.
    pub(super) budget: Budget,
    /// Whether each call may run.
    pub(super) permits: Permits,
    /// The user was told that nothing validates this project.
    pub(super) said_no_validation: bool,
    /// 0 for the session's own core, 1 for a subagent's.
    pub(super) depth: u32,
    /// The session's name, asked for after its first turn.
    pub(super) titles: Titles,
    /// The MCP servers (shared with subagents).
    pub(super) mcp: Option<Arc<crate::mcp::Mcp>>,
    /// The servers' tool generation the request's tools were built at.
    pub(super) mcp_generation: u64,
    /// The workspace's checkpoints (none: off).
    pub(super) checkpoints: Option<Arc<crate::checkpoint::Shared>>,
    /// Steps whose checkpoints before and after differ: steps that
    /// changed files.
    pub(super) changing_steps: u64,
    /// The checkpoints before the turn's first step that changed files and
    /// after its last one: a turn that put every file back changed nothing.
    pub(super) changed_span: Option<(String, String)>,
    /// Commands that ran confined: only these may ask to run unconfined.
    pub(super) ran_confined: std::collections::HashSet<String>,
    /// The entry the last reply followed: where a reply set aside is
    /// taken back to ([`super::ending`]).
    pub(super) reply_parent: Option<String>,
}

impl AgentState {
    pub(super) fn new(
        setup: super::AgentSetup,
        events: mpsc::UnboundedSender<Event>,
        listed: mpsc::UnboundedSender<(SubmissionId, Vec<crate::catalogue::Listed>)>,
        shared: Arc<Shared>,
    ) -> Self {
        setup.tools.set_todos(setup.session.todos.clone());
        let wanted = setup
            .agent
            .clone()
            .unwrap_or_else(|| setup.session.agent.clone());
        // Interactive sessions are named; headless runs and subagents not.
        let titled = setup.approver == crate::protocol::Decider::User && setup.depth == 0;
        let mut state = Self {
            titles: Titles::new(titled),
            mcp: setup.mcp,
            mcp_generation: 0,
            checkpoints: setup.checkpoints.filter(|_| setup.depth == 0),
            changing_steps: 0,
            changed_span: None,
            ran_confined: std::collections::HashSet::new(),
            reply_parent: None,
            request: Request::new(setup.context, setup.tools.specs()),
            budget: Budget::default(),
            permits: Permits::new(setup.policy, &setup.session.allowed, setup.approver),
            servers: setup.servers,
            clients: client::Pool::with(Arc::clone(&setup.client)),
            client: setup.client,
            tools: setup.tools,
            base_config: setup.config.clone(),
            config: setup.config,
            agent: setup
                .agents
                .get(crate::agents::DEFAULT)
                .cloned()
                .unwrap_or_else(|| crate::agents::Agents::default().all()[0].clone()),
            agents: setup.agents,
            sandbox: setup.sandbox,
            shell: setup.shell,
            events,
            listed,
            shared,
            session: setup.session,
            said_no_validation: false,
            depth: setup.depth,
        };
        state.start_agent(&wanted);
        state
    }

    /// A sender of events for submission `id` that does not borrow the
    /// state (for callbacks that run while it is borrowed).
    pub(super) fn emitter(&self, id: SubmissionId) -> impl Fn(EventMsg) + Send + use<> {
        let events = self.events.clone();
        move |msg| {
            crate::log::event(&msg);
            // Nobody listening means the front end is gone.
            let _ = events.send(Event { id, msg });
        }
    }

    pub(super) fn emit(&self, id: SubmissionId, msg: EventMsg) {
        crate::log::event(&msg);
        // Nobody listening means the front end is gone; the session still
        // records everything.
        let _ = self.events.send(Event { id, msg });
    }

    pub(super) fn set_state(&self, id: SubmissionId, state: TurnState) {
        self.emit(id, EventMsg::StateChanged { state });
    }

    /// An `(offcode)` note to the model: why the turn goes on.
    pub(super) fn tell_model(&mut self, id: SubmissionId, note: &str) -> Result<(), TurnStatus> {
        let message = Message::offcode_note(note);
        self.record(id, EntryBody::Message { message })
    }

    /// Appends to the session; a failure is reported and ends the turn.
    pub(super) fn record(&mut self, id: SubmissionId, body: EntryBody) -> Result<(), TurnStatus> {
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

    /// Records an error that ends the turn and reports it.
    pub(super) fn fail(&mut self, id: SubmissionId, message: String, kind: ErrorKind) {
        let _ = self.record(
            id,
            EntryBody::Error {
                message: message.clone(),
            },
        );
        self.emit(id, EventMsg::Error { message, kind });
    }

    pub(super) fn warn(&self, id: SubmissionId, message: &str) {
        self.emit(
            id,
            EventMsg::Warning {
                message: message.to_owned(),
            },
        );
    }
}

/// Whether a title is still to be asked for, and where it comes back.
#[derive(Debug)]
pub(super) struct Titles {
    pub(super) wanted: bool,
    pub(super) sender: mpsc::UnboundedSender<String>,
    pub(super) receiver: Option<mpsc::UnboundedReceiver<String>>,
}

impl Titles {
    /// For a core whose session is named (`wanted`) or not.
    pub(super) fn new(wanted: bool) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            wanted,
            sender,
            receiver: Some(receiver),
        }
    }

    /// Where titles arrive; taken once, by the runner.
    pub(super) fn receiver(&mut self) -> mpsc::UnboundedReceiver<String> {
        self.receiver
            .take()
            .unwrap_or_else(|| mpsc::unbounded_channel().1)
    }
}
