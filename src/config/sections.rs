//! The configuration's sections with their defaults: retries, compaction,
//! timeouts, tool calls, validation, subagents and TLS.

use serde::{Deserialize, Serialize};

/// Retry policy for model requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetryConfig {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay before the first retry; doubles each time.
    pub initial_delay_ms: u64,
    /// Upper bound for one delay.
    pub max_delay_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_delay_ms: 1_000,
            max_delay_ms: 30_000,
        }
    }
}

/// When and how the context is compacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompactionConfig {
    /// Compact automatically when a request would not leave `reserve`
    /// tokens free.
    pub auto: bool,
    /// Leave out old tool outputs first.
    pub prune: bool,
    /// Tokens kept free for the answer (and for the summary request).
    pub reserve: u64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            auto: true,
            prune: true,
            reserve: 4_096,
        }
    }
}

/// Network timeouts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimeoutsConfig {
    /// Connecting to the endpoint.
    pub connect_ms: u64,
    /// Longest silence allowed while waiting for or reading a response.
    pub idle_ms: u64,
}

impl Default for TimeoutsConfig {
    fn default() -> Self {
        Self {
            connect_ms: 10_000,
            idle_ms: 300_000,
        }
    }
}

/// How tool calls reach the model and come back.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallMode {
    /// Native calls; text calls when the server cannot parse them (and
    /// remember that for the next start).
    #[default]
    Auto,
    /// Native calls only.
    Native,
    /// Tools described in the prompt and calls read from the text.
    Text,
}

/// Which prompt and tool set the model gets.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Compact {
    /// Compact for a small model or a short context
    /// (a name that says at most 4B parameters, or a context of at most
    /// 8192 tokens), full otherwise.
    #[default]
    Auto,
    /// Always compact: a short prompt, no `task`, `patch` or todo tools.
    On,
    /// Always the full prompt and every tool.
    Off,
}

impl Compact {
    /// `on`/`off` as forced, `auto` as `None`.
    pub fn forced(self) -> Option<bool> {
        match self {
            Self::Auto => None,
            Self::On => Some(true),
            Self::Off => Some(false),
        }
    }
}

/// Checking the work after a turn that changed files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ValidateConfig {
    /// Whether to validate at all.
    pub enabled: bool,
    /// Commands run in order, each through the permission rules and
    /// confinement; unset, the project type's default.
    pub commands: Option<Vec<String>>,
    /// Validations in one turn before it ends as incomplete.
    pub attempts: u32,
    /// Time one command may take.
    pub timeout_ms: u64,
}

impl Default for ValidateConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            commands: None,
            attempts: 3,
            timeout_ms: 600_000,
        }
    }
}

/// Subagents started by the `task` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubagentsConfig {
    /// Subagents of one step running at once (1 to 16).
    pub concurrency: u32,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        Self { concurrency: 3 }
    }
}

/// TLS for `https://` endpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsConfig {
    /// A PEM bundle of extra CA certificates (besides the system store).
    pub ca_file: Option<String>,
    /// Accept any certificate. Dangerous; warned about loudly.
    pub insecure_skip_verify: bool,
}
