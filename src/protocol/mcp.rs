//! What the front ends learn about MCP servers.

use serde::{Deserialize, Serialize};

/// Where an MCP server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpState {
    /// `enabled: false` in the config.
    Disabled,
    /// A remote server: not started.
    Unsupported,
    /// Configured, not started yet.
    Waiting,
    /// Starting (`initialize`, `tools/list`).
    Starting,
    /// Running; its tools are offered.
    Ready,
    /// It stopped; it is being started again.
    Restarting,
    /// It could not be started, or stopped too often: its tools fail.
    Failed,
    /// Stopped by offcode (exiting).
    Stopped,
}

impl McpState {
    /// `ready`, `failed`, ...
    pub fn words(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Unsupported => "not supported",
            Self::Waiting => "waiting",
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Restarting => "restarting",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }
}

/// Something happened to an MCP server (started, failed, restarting, its
/// tools changed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpStatusEvent {
    /// The server's name in the config.
    pub server: String,
    /// Where it stands now.
    pub state: McpState,
    /// Why, or what it offers.
    pub detail: String,
    /// Tools it lists.
    pub tools: usize,
}

/// One server, for `/mcp` and `offcode mcp list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerReport {
    /// Its name in the config.
    pub name: String,
    /// Where it stands.
    pub state: McpState,
    /// Why, or what it offers.
    pub detail: String,
    /// The command line it runs.
    pub command: String,
    /// Whether it runs confined like shell commands.
    pub confined: bool,
    /// Its tools.
    pub tools: Vec<McpToolReport>,
}

/// One tool of a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolReport {
    /// The name the model sees (`SERVER_TOOL`).
    pub name: String,
    /// The server's name for it.
    pub tool: String,
    /// Its definition's size, estimated in tokens.
    pub tokens: u64,
    /// Its server says it changes nothing (`readOnlyHint`): read-only
    /// agents (`plan`, `explore`) are offered only such tools.
    #[serde(default)]
    pub read_only: bool,
    /// Why it is not offered, when it is not.
    pub left_out: Option<String>,
}
