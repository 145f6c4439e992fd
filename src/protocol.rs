//! The data that crosses between the agent core and its front ends.
//!
//! Front ends send [`Op`]s in and read [`Event`]s out; nothing else crosses.
//! Everything here is owned, serialisable data with no I/O, so the headless
//! `--json` output and the session log are just these values written out.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod agents;
mod approval;
mod display;
mod format;
mod mcp;
mod reports;
mod rewind;
mod wire;
pub use agents::{AgentSummary, SubagentEvent, ValidationEvent, ValidationStatus};
pub use approval::{ApprovalRequestEvent, PermissionDecisionEvent};
pub use display::{CommandEnd, FileDiff, TodoItem, TodoStatus, ToolDisplay};
pub use format::{count, format_size, format_tokens};
pub use mcp::{McpServerReport, McpState, McpStatusEvent, McpToolReport};
pub use reports::{ContextPart, ContextReport, ModelInfo, ModelListEvent, ProviderInfo};
pub use rewind::{RewindKind, RewindReport, TurnRow};
pub use wire::managed as managed_wire;

/// The body keys a request sets as its own fields: never sent twice.
pub const REQUEST_FIELDS: &[&str] = &[
    "model",
    "messages",
    "stream",
    "stream_options",
    "tools",
    "max_tokens",
    "temperature",
    "top_p",
];

/// Identifies the [`Op`] an [`Event`] answers.
pub type SubmissionId = u64;

/// A request from a front end to the agent core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// Start a turn with this user text (queued if a turn is running).
    UserTurn {
        /// What the user typed.
        text: String,
    },
    /// Abort the running turn: close the model connection, kill the tool.
    Interrupt,
    /// Stop the subagents running now (each ends as aborted, and the turn
    /// goes on with that result); without any, the same as [`Op::Interrupt`].
    InterruptSubagents,
    /// Answer an [`EventMsg::ApprovalRequest`].
    Approve {
        /// The call the answer is for.
        call_id: String,
        /// The answer.
        decision: ApprovalDecision,
        /// For a denial: why, told to the model.
        #[serde(default)]
        reason: Option<String>,
    },
    /// Run a shell command the user typed (`!cmd`) under the same gate as
    /// the model's `bash` calls; the input and the result are recorded as
    /// a user and an assistant message, so the model sees them next turn.
    Shell {
        /// The command line.
        command: String,
    },
    /// Use this model from the next request on.
    SetModel {
        /// The model's id.
        model: String,
    },
    /// Switch the session's agent profile: to `name`, or (none given) to
    /// the next primary agent (Tab). Answered by
    /// [`EventMsg::AgentChanged`], or a warning saying why not.
    SetAgent {
        /// The agent's name.
        #[serde(default)]
        name: Option<String>,
    },
    /// List the agents; answered by [`EventMsg::AgentList`].
    ListAgents,
    /// List the MCP servers; answered by [`EventMsg::McpList`].
    ListMcp,
    /// Compact the context now (`/compact`), as a turn of its own.
    Compact,
    /// Report what a request carries now; answered by
    /// [`EventMsg::ContextReport`].
    Context,
    /// Ask the server which models it serves; answered by
    /// [`EventMsg::ModelList`] once the server has (asked in the
    /// background: it never holds up a turn, and a turn running when the
    /// answer comes is finished first).
    ListModels,
    /// Take back the file changes of the last step that made any
    /// (`/undo`); answered by [`EventMsg::Rewind`].
    Undo,
    /// Take the session back to before turn `turn` (1 is the first): its
    /// messages, and the files the agent changed since. With `apply`
    /// false, only say what would change. Answered by [`EventMsg::Rewind`].
    Revert {
        /// The turn.
        turn: usize,
        /// Do it, rather than show it.
        apply: bool,
    },
    /// What the agent changed in the workspace since turn `since` (1: the
    /// whole session); answered by [`EventMsg::Rewind`].
    Diff {
        /// The turn.
        since: usize,
    },
    /// List the session's turns; answered by [`EventMsg::Turns`].
    Turns,
    /// Summarise the session for a new one (`/summarize`); answered by
    /// [`EventMsg::Summary`], or a warning.
    Summarize,
    /// Finish the running turn's bookkeeping and stop the core.
    Shutdown,
}

/// A front end's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this one call.
    AllowOnce,
    /// Run this call and similar ones for the rest of the session.
    AllowSession,
    /// Do not run it; the model is told so.
    Deny,
}

/// One message from the core, tagged with the submission it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The submission this event answers (0 for session-level events).
    pub id: SubmissionId,
    /// What happened.
    #[serde(flatten)]
    pub msg: EventMsg,
}

/// Where a turn is in its life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    /// No turn is running.
    Idle,
    /// Waiting for the model's first output of a step.
    Planning,
    /// A tool call waits for the user's answer.
    AwaitingPermission,
    /// A tool is running.
    ToolRunning,
    /// The model is streaming output.
    ModelGenerating,
    /// The turn ended with a final answer.
    Done,
    /// The turn ended with an error or was aborted.
    Error,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model gave a final answer.
    Done,
    /// An error ended the turn (server, step limit, ...).
    Failed,
    /// The user aborted the turn.
    Aborted,
    /// The model ended before the task was done, even after being told
    /// once what was missing: a call it wrote but never sent in a form
    /// offcode could run, a change or command held back for an earlier
    /// result and never made, or no word after a call that failed.
    Incomplete,
    /// The model ended without the work: a rule, the managed policy or a
    /// person refused a call that would change files or run a command,
    /// and no file changed and no command ran in the turn.
    Refused,
}

impl TurnStatus {
    /// `done`, `failed`, `aborted`, `not done`, `refused`.
    pub fn words(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Aborted => "aborted",
            Self::Incomplete => "not done",
            Self::Refused => "refused",
        }
    }
}

/// Token counts reported by the server for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens in the prompt (everything sent).
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Sum of both as the server reports it.
    pub total_tokens: u64,
}

/// What kind of failure an [`EventMsg::Error`] reports, for front ends that
/// react differently (hints, retry buttons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The endpoint could not be reached.
    Connect,
    /// The server answered with an error status or an in-band error.
    Server,
    /// The server's stream was not valid (malformed chunk, cut short).
    Stream,
    /// No data arrived within the idle timeout.
    Timeout,
    /// The step limit was reached.
    StepLimit,
    /// The message alone cannot fit the model's context; it was not sent.
    TooBig,
    /// The session log could not be written.
    Session,
    /// Anything else.
    Internal,
}

/// The payload of an [`Event`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventMsg {
    /// The session is open: sent once, before anything else.
    SessionConfigured(SessionConfiguredEvent),
    /// A turn started for a user message.
    TurnStarted {
        /// What the user typed.
        text: String,
    },
    /// The turn's state machine moved.
    StateChanged {
        /// The new state.
        state: TurnState,
    },
    /// A piece of assistant text.
    AssistantDelta {
        /// The text that arrived.
        delta: String,
    },
    /// A piece of reasoning text (shown dimmed, never sent back).
    ReasoningDelta {
        /// The text that arrived.
        delta: String,
    },
    /// The context was compacted to fit the model.
    Compacted(CompactedEvent),
    /// The text streamed so far in this step was the model's reasoning
    /// (its think block was opened by the prompt); it is moved there.
    ReasoningRecovered {
        /// What the user typed.
        text: String,
    },
    /// The model is writing text that may be a tool call, so it is not
    /// shown while it arrives (it is shown, or run, when the step ends).
    /// Sent every few seconds while that lasts, so a long one is not
    /// taken for a hang.
    HeldText {
        /// Bytes written and not shown so far in this step.
        bytes: usize,
        /// Seconds since the step's request was sent.
        secs: u64,
    },
    /// The whole text of one model step, once it finished.
    AssistantMessage(AssistantMessageEvent),
    /// A tool call is about to run.
    ToolCallBegin(ToolCallBeginEvent),
    /// A tool call finished (or was refused).
    ToolCallEnd(ToolCallEndEvent),
    /// A tool call needs the user's answer; reply with [`Op::Approve`].
    ApprovalRequest(ApprovalRequestEvent),
    /// How a permission question was settled.
    PermissionDecision(PermissionDecisionEvent),
    /// Token counts for the last request.
    TokenUsage(TokenUsage),
    /// A request failed and will be retried after a delay.
    Retry(RetryEvent),
    /// The active model changed.
    ModelChanged {
        /// The model's id.
        model: String,
        /// Its context length, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u64>,
    },
    /// The answer to [`Op::ListModels`].
    ModelList(ModelListEvent),
    /// A validation command started or ended.
    Validation(ValidationEvent),
    /// Something a subagent did, as it happened.
    Subagent(SubagentEvent),
    /// The session's agent profile changed.
    AgentChanged {
        /// The agent's name.
        agent: String,
        /// The model its requests go to.
        model: String,
    },
    /// The answer to [`Op::ListAgents`].
    AgentList {
        /// Every agent, the built-ins first.
        agents: Vec<AgentSummary>,
    },
    /// Something happened to an MCP server.
    Mcp(McpStatusEvent),
    /// The answer to [`Op::Undo`], [`Op::Revert`] and [`Op::Diff`].
    Rewind(RewindReport),
    /// The answer to [`Op::Turns`].
    Turns {
        /// The turns of the session's active branch.
        turns: Vec<TurnRow>,
    },
    /// The answer to [`Op::Summarize`].
    Summary {
        /// The compaction agent's summary of the session.
        text: String,
    },
    /// The answer to [`Op::ListMcp`].
    McpList {
        /// Every configured server.
        servers: Vec<McpServerReport>,
    },
    /// The agent's todo list changed.
    TodoUpdated {
        /// The todo list.
        items: Vec<TodoItem>,
    },
    /// The answer to [`Op::Context`].
    ContextReport(ContextReport),
    /// Something the user should know that did not stop the turn.
    Warning {
        /// What to tell the user.
        message: String,
    },
    /// Something failed; the turn ends with [`TurnStatus::Failed`].
    Error {
        /// What to tell the user.
        message: String,
        /// What kind of failure.
        kind: ErrorKind,
    },
    /// The turn is over.
    TurnComplete(TurnCompleteEvent),
}

/// Payload of [`EventMsg::SessionConfigured`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionConfiguredEvent {
    /// The session's id, for `--session ID`.
    pub session_id: String,
    /// The session file.
    pub path: String,
    /// The model requests go to.
    pub model: String,
    /// The agent profile in use.
    #[serde(default)]
    pub agent: String,
    /// The endpoint requests go to.
    pub base_url: String,
    /// Whether an existing session was resumed.
    pub resumed: bool,
    /// Messages restored from the session file.
    pub restored_messages: usize,
    /// The todo list restored from the session file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<TodoItem>,
}

/// Payload of [`EventMsg::AssistantMessage`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessageEvent {
    /// The step's text.
    pub text: String,
    /// How many tool calls the step asked for (0 for a final answer).
    pub tool_calls: usize,
}

/// Payload of [`EventMsg::Compacted`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactedEvent {
    /// What was done ("old tool outputs left out", "12 earlier messages
    /// summarised").
    pub what: String,
    /// Estimated tokens of the next request before.
    pub before: u64,
    /// Estimated tokens of the next request after.
    pub after: u64,
    /// The model's context length.
    pub limit: u64,
}

impl CompactedEvent {
    /// One line for people.
    pub fn describe(&self) -> String {
        format!(
            "compacted: {}; about {} → {} of {} tokens",
            self.what,
            format_tokens(self.before),
            format_tokens(self.after),
            format_tokens(self.limit)
        )
    }
}

/// Payload of [`EventMsg::ToolCallBegin`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallBeginEvent {
    /// The call's id, shared with the matching end event.
    pub call_id: String,
    /// The tool's name as the model gave it.
    pub name: String,
    /// The parsed arguments (the raw string when they were not JSON).
    pub arguments: Value,
    /// The call was read from the model's text, not sent as a tool call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
}

/// Payload of [`EventMsg::ToolCallEnd`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEndEvent {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// How it ended; on the wire `outcome`, and `ok` for readers that
    /// only tell success from the rest.
    #[serde(flatten, with = "wire::outcome")]
    pub outcome: CallOutcome,
    /// One line for progress displays.
    pub summary: String,
    /// What the model receives.
    pub output: String,
    /// A richer form for the UI (diffs, a command's output and exit),
    /// never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<ToolDisplay>,
    /// Why the call failed or was refused, for the person (without words
    /// meant for the model alone); absent when it worked or a command ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// The tool ran and succeeded.
    Ok,
    /// The tool ran (or was called wrongly) and failed.
    Failed,
    /// The call was not run: the policy or a person refused it.
    Refused,
    /// The user aborted the turn while the call ran.
    Aborted,
}

impl CallOutcome {
    /// Whether the call succeeded.
    pub fn ok(self) -> bool {
        self == Self::Ok
    }
}

/// Why a question needs a person's answer whatever the rules, `--yes` or
/// session approvals say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mandate {
    /// A managed policy rule asks.
    ManagedPolicy,
    /// The command asks to run outside the sandbox.
    Unconfined,
    /// Commands cannot be confined on this machine, so each one asks.
    NoConfinement,
}

/// Who decided whether a tool call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decider {
    /// The permission rules.
    Policy,
    /// A person, asked in the UI.
    User,
    /// A rule the user allowed for this session.
    Session,
    /// A headless run's answer (`--yes` or its refusal).
    Headless,
}

/// Payload of [`EventMsg::Retry`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryEvent {
    /// This retry's number, from 1.
    pub attempt: u32,
    /// How many retries are allowed.
    pub max_retries: u32,
    /// How long until the retry is sent.
    pub delay_ms: u64,
    /// What failed.
    pub reason: String,
}

/// Payload of [`EventMsg::TurnComplete`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnCompleteEvent {
    /// How the turn ended.
    pub status: TurnStatus,
    /// The final answer, when there is one.
    pub last_message: Option<String>,
}

#[cfg(test)]
mod tests;
