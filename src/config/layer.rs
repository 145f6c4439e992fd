//! One configuration layer (a file, the environment, the flags) and how layers
//! merge, remembering where each value came from.
//!
//! A file is first deserialised into [`FileLayer`], whose fields are all
//! optional and whose value types validate themselves, so json5 reports an
//! unknown key, a wrong type or a bad value with its line and column. The same
//! text is then merged as plain JSON, key by key, into the effective tree.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, de};
use serde_json::{Map, Value, json};

mod schema;
pub use schema::schema;

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// A config file.
    File(PathBuf),
    /// An environment variable.
    Env(String),
    /// A command-line flag.
    Flag(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Env(name) => write!(f, "env {name}"),
            Self::Flag(name) => write!(f, "flag {name}"),
        }
    }
}

/// The keys a config file may hold. Only used to validate a file; values are
/// taken from the merged JSON tree.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
#[allow(
    clippy::doc_markdown,
    reason = "the fields' docs are the schema's descriptions, shown to people in their editor"
)]
pub struct FileLayer {
    /// The schema an editor checks the file against; ignored by offcode.
    #[serde(rename = "$schema")]
    schema: Option<String>,
    /// The OpenAI-compatible API root, e.g. `http://gpu1:8000/v1`.
    base_url: Option<HttpUrl>,
    /// The model id to request (default: the server's first).
    model: Option<NonEmpty>,
    /// Sent as `Authorization: Bearer`; prefer `OFFCODE_API_KEY`.
    api_key: Option<String>,
    /// Cap on generated tokens per response.
    max_tokens: Option<Positive>,
    /// Sampling temperature, 0 to 2, or "server".
    temperature: Option<SamplingLayer<0, 2>>,
    /// Nucleus sampling, 0 to 1, or "server".
    top_p: Option<SamplingLayer<0, 1>>,
    /// The prompt and tools a model gets: "auto", "on" (compact) or "off".
    compact: Option<crate::config::Compact>,
    /// Model requests allowed in one turn (default 50).
    max_steps: Option<Positive>,
    /// Extra instruction files (paths or globs in the workspace).
    instructions: Option<Vec<NonEmpty>>,
    /// Global skills to load, by folder name.
    skills: Option<Vec<SkillName>>,
    /// The model's context length, when the server does not report it.
    context_limit: Option<Positive>,
    /// When and how a long conversation is compacted.
    compaction: Option<CompactionLayer>,
    /// How tools reach the model: "auto", "native" or "text".
    tool_calls: Option<crate::config::ToolCallMode>,
    /// An internal CA for an https endpoint, or no check at all.
    tls: Option<TlsLayer>,
    /// Retries of a failed request.
    retry: Option<RetryLayer>,
    /// Connect and idle timeouts, in milliseconds.
    timeouts: Option<TimeoutsLayer>,
    /// Kernel confinement of commands: "on", "off" (global config only),
    /// or `{ network, writable, readable }`.
    sandbox: Option<SandboxLayer>,
    /// Permission rules in OpenCode's syntax (docs/permissions.md).
    permission: Option<crate::policy::PermissionValue>,
    /// Patterns and rules added to the dangerous-command class.
    dangerous: Option<crate::policy::DangerousValue>,
    /// Entries for the gate's table of understood programs
    /// (`policy/commands.jsonc`'s format; global config only).
    commands: Option<Value>,
    /// Agents by name (docs/agents.md). Checked by [`crate::agents`],
    /// which names the agent and the key.
    agent: Option<serde_json::Map<String, Value>>,
    /// What checks the work after a turn that changed files.
    validate: Option<ValidateLayer>,
    /// Subagents of one step running at once.
    subagents: Option<SubagentsLayer>,
    /// Local MCP servers by name, in OpenCode's shape (docs/mcp.md). What
    /// must go together is checked by [`crate::config::mcp::check`].
    mcp: Option<BTreeMap<String, crate::config::mcp::ServerConfig>>,
    /// What MCP may cost: tools, definition and result sizes, call time.
    mcp_limits: Option<crate::config::mcp::Limits>,
    /// Checkpoints for /undo and /revert (global config only).
    checkpoints: Option<crate::checkpoint::CheckpointSettings>,
    /// offcode's log (global config only).
    log: Option<crate::log::LogSettings>,
    /// How long what servers were found to do is kept.
    cache: Option<crate::servers::CacheSettings>,
    /// Servers by name in OpenCode's shape (docs/providers.md); `model`
    /// names one of their models as `provider/model`.
    provider: Option<indexmap::IndexMap<String, crate::config::provider::ProviderConfig>>,
    /// The model for session titles and compaction summaries.
    small_model: Option<NonEmpty>,
    /// The agent a new session starts with (default "build").
    default_agent: Option<NonEmpty>,
    /// OpenCode's deprecated tool switches: `false` denies the tool.
    tools: Option<BTreeMap<String, bool>>,
    /// OpenCode's name for `checkpoints.enabled`.
    snapshot: Option<bool>,
    /// Providers left out.
    disabled_providers: Option<Vec<String>>,
    /// Only these providers are used.
    enabled_providers: Option<Vec<String>>,
    /// OpenCode's plugins: refused (offcode runs none).
    plugin: Option<crate::config::opencode::NoPlugin>,
    /// OpenCode's custom commands: refused (use a skill).
    command: Option<crate::config::opencode::NoCommand>,
    /// OpenCode's old name for `agent`: refused.
    mode: Option<crate::config::opencode::NoMode>,
    /// OpenCode's; ignored (UI styling).
    theme: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (UI styling).
    keybinds: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (UI styling).
    tui: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (UI styling).
    layout: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (UI styling).
    username: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (no updates offline).
    autoupdate: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (no sharing offline).
    share: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (no sharing offline).
    autoshare: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (no server mode).
    server: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (offcode's log is `log`).
    #[serde(rename = "logLevel")]
    log_level: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (no file watcher).
    watcher: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (`validate` checks the work).
    formatter: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored (`validate` checks the work).
    lsp: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored.
    experimental: Option<crate::config::opencode::Ignored>,
    /// OpenCode's; ignored.
    enterprise: Option<crate::config::opencode::Ignored>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
struct SubagentsLayer {
    concurrency: Option<Ranged<1, 16>>,
}

/// `"validate": "cargo test"`, a list of commands, `false`, or the
/// object form.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(
    untagged,
    expecting = "a command, a list of commands, true or false, or an object with `enabled`, `commands`, `attempts`, `timeout_ms`"
)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
enum ValidateLayer {
    Command(NonEmpty),
    Commands(Vec<NonEmpty>),
    Enabled(bool),
    Keys(ValidateKeys),
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
struct ValidateKeys {
    enabled: Option<bool>,
    commands: Option<Vec<NonEmpty>>,
    attempts: Option<Positive>,
    timeout_ms: Option<Positive>,
}

/// A sampling value from `LOW` to `HIGH`, or `"server"`.
#[derive(Debug)]
struct SamplingLayer<const LOW: u8, const HIGH: u8>;

impl<'de, const LOW: u8, const HIGH: u8> Deserialize<'de> for SamplingLayer<LOW, HIGH> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(word) if word == "server" => Ok(Self),
            Value::Number(number) => {
                let value = number.as_f64().unwrap_or(f64::NAN);
                if (f64::from(LOW)..=f64::from(HIGH)).contains(&value) {
                    Ok(Self)
                } else {
                    Err(de::Error::custom(format!(
                        "{value} is outside {LOW} to {HIGH}"
                    )))
                }
            }
            other => Err(de::Error::custom(format!(
                "expected a number from {LOW} to {HIGH}, or \"server\" to send none, not {other}"
            ))),
        }
    }
}

/// `"sandbox": "off"` or the object form.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(
    untagged,
    expecting = "\"on\", \"off\" or an object with `mode`, `network`, `writable`"
)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
enum SandboxLayer {
    Mode(crate::config::SandboxMode),
    Keys(SandboxKeys),
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
struct SandboxKeys {
    mode: Option<crate::config::SandboxMode>,
    network: Option<bool>,
    writable: Option<Vec<NonEmpty>>,
    readable: Option<Vec<NonEmpty>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
struct CompactionLayer {
    auto: Option<bool>,
    prune: Option<bool>,
    reserve: Option<Positive>,
    /// `OpenCode`'s name for `reserve`.
    reserved: Option<Positive>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
struct TlsLayer {
    ca_file: Option<NonEmpty>,
    insecure_skip_verify: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
struct RetryLayer {
    max_retries: Option<u32>,
    initial_delay_ms: Option<Positive>,
    max_delay_ms: Option<Positive>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "fields exist to be validated, not read")]
struct TimeoutsLayer {
    connect_ms: Option<Positive>,
    idle_ms: Option<Positive>,
}

/// An `http://` or `https://` URL with a host.
#[derive(Debug)]
pub struct HttpUrl;

impl<'de> Deserialize<'de> for HttpUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        check_url(&text).map_err(de::Error::custom)?;
        Ok(Self)
    }
}

/// Checks that `text` is an http(s) URL with a host.
pub fn check_url(text: &str) -> Result<(), String> {
    let rest = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
        .ok_or_else(|| format!("`{text}` is not an http:// or https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("`{text}` has no host"));
    }
    Ok(())
}

#[derive(Debug)]
struct NonEmpty;

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if String::deserialize(deserializer)?.trim().is_empty() {
            return Err(de::Error::custom("must not be empty"));
        }
        Ok(Self)
    }
}

/// A folder name under `~/.config/offcode/skills/`: no path.
#[derive(Debug)]
struct SkillName;

impl<'de> Deserialize<'de> for SkillName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        let plain =
            !name.trim().is_empty() && !name.contains(['/', '\\']) && name != "." && name != "..";
        if !plain {
            return Err(de::Error::custom(format!(
                "`{name}` is not a folder name under ~/.config/offcode/skills/ (no paths)"
            )));
        }
        Ok(Self)
    }
}

#[derive(Debug)]
struct Positive;

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if u64::deserialize(deserializer)? == 0 {
            return Err(de::Error::custom("must be at least 1"));
        }
        Ok(Self)
    }
}

#[derive(Debug)]
struct Ranged<const LOW: u8, const HIGH: u8>;

impl<'de, const LOW: u8, const HIGH: u8> Deserialize<'de> for Ranged<LOW, HIGH> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(deserializer)?;
        if !(f64::from(LOW)..=f64::from(HIGH)).contains(&value) {
            return Err(de::Error::custom(format!(
                "{value} is outside {LOW} to {HIGH}"
            )));
        }
        Ok(Self)
    }
}

/// The effective tree being built, with the source of every leaf.
#[derive(Debug, Default)]
pub struct Merged {
    /// The merged values.
    pub tree: Map<String, Value>,
    /// Source of each leaf, by dotted path.
    pub sources: BTreeMap<String, Source>,
}

impl Merged {
    /// Lays `layer` over what is there: objects merge key by key, any other
    /// value replaces.
    pub fn apply(&mut self, layer: Map<String, Value>, source: &Source) {
        merge_into(&mut self.tree, layer, "", source, &mut self.sources);
    }

    /// Where the value at `path` came from.
    pub fn source_of(&self, path: &str) -> Source {
        self.sources.get(path).cloned().unwrap_or(Source::Default)
    }
}

fn merge_into(
    target: &mut Map<String, Value>,
    layer: Map<String, Value>,
    prefix: &str,
    source: &Source,
    sources: &mut BTreeMap<String, Source>,
) {
    for (key, value) in layer {
        if key == "$schema" {
            continue;
        }
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (target.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => {
                merge_into(existing, incoming, &path, source, sources);
            }
            (_, Value::Object(incoming)) => {
                let mut fresh = Map::new();
                merge_into(&mut fresh, incoming, &path, source, sources);
                target.insert(key, Value::Object(fresh));
            }
            (_, value) => {
                sources.insert(path, source.clone());
                target.insert(key, value);
            }
        }
    }
}

/// A config file that failed to load.
#[derive(Debug)]
pub struct FileProblem {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// Validates and parses one config file's text.
pub fn parse_file(text: &str) -> Result<Map<String, Value>, FileProblem> {
    let problem = |error: json5::Error| {
        let position = error.position();
        let message = error.to_string();
        // json5 appends " at line L column C"; the caller prints the position.
        let message = match message.rfind(" at line ") {
            Some(at) if position.is_some() => message[..at].to_owned(),
            _ => message,
        };
        FileProblem {
            line: position.map(|p| p.line + 1),
            column: position.map(|p| p.column + 1),
            message: without_opencode_keys(&message),
        }
    };
    // An empty file sets nothing, as `{}` would.
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    if let Some((line, column)) = super::substitute::too_deep(text) {
        return Err(FileProblem {
            line: Some(line),
            column: Some(column),
            message: format!(
                "nested more than {} levels deep; no config needs that",
                super::substitute::DEEPEST
            ),
        });
    }
    // Syntax first: a file cut short is reported where it ends, not where
    // the object it leaves open began.
    let value = json5::from_str::<Value>(text).map_err(|error| {
        if error.to_string().contains("EOF") {
            let line = text.lines().count().max(1);
            let column = text.lines().last().map_or(0, |l| l.chars().count()) + 1;
            FileProblem {
                line: Some(line),
                column: Some(column),
                message: "the file ends before every `{`, `[` or string is closed".to_owned(),
            }
        } else {
            problem(error)
        }
    })?;
    servers_wrapped(&value, text)?;
    json5::from_str::<FileLayer>(text).map_err(problem)?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(FileProblem {
            line: Some(1),
            column: Some(1),
            message: "the top level must be an object".to_owned(),
        }),
    }
}

/// `"mcp": { "servers": { NAME: {...} } }` (VS Code's shape): named as
/// such, rather than as a server called `servers` with unknown keys.
fn servers_wrapped(value: &Value, text: &str) -> Result<(), FileProblem> {
    let Some(Value::Object(servers)) = value.pointer("/mcp/servers") else {
        return Ok(());
    };
    let all_servers = !servers.is_empty()
        && servers.values().all(|server| {
            ["command", "type", "url"]
                .iter()
                .any(|key| server.get(key).is_some())
        });
    if !all_servers {
        return Ok(());
    }
    let (line, column) = crate::jsonc::locate_key(text, &["mcp", "servers"])
        .map_or((None, None), |(l, c)| (Some(l), Some(c)));
    let names: Vec<String> = servers.keys().map(|k| format!("`{k}`")).collect();
    Err(FileProblem {
        line,
        column,
        message: format!(
            "`mcp.servers` holds servers ({}): offcode, like OpenCode, names them directly under `mcp`; move them up one level",
            names.join(", ")
        ),
    })
}

/// An unknown-key message's list of keys without the `OpenCode` keys
/// accepted for pasted configs: they would hide offcode's own.
fn without_opencode_keys(message: &str) -> String {
    let Some((head, list)) = message.split_once(", expected one of ") else {
        return message.to_owned();
    };
    let kept: Vec<&str> = list
        .split(", ")
        .filter(|quoted| {
            let key = quoted.trim_matches('`');
            // `reserved`: `compaction`'s OpenCode name for `reserve`.
            !crate::config::opencode::keys().contains(&key) && key != "reserved"
        })
        .collect();
    format!("{head}, expected one of {}", kept.join(", "))
}

/// Displays a path relative to `base` when it lies beneath it.
pub fn display_path(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(relative) => format!("./{}", relative.display()),
        Err(_) => path.display().to_string(),
    }
}

/// Reads the short forms of `validate`: a command (`"cargo test"`), a
/// list of them, or `false`.
pub(super) fn validate_layer(layer: &mut Map<String, Value>) {
    let Some(validate) = layer.get_mut("validate") else {
        return;
    };
    match validate {
        Value::String(_) | Value::Array(_) => {
            let commands = match validate.take() {
                Value::String(command) => json!([command]),
                list => list,
            };
            *validate = json!({ "commands": commands });
        }
        Value::Bool(enabled) => *validate = json!({ "enabled": *enabled }),
        _ => {}
    }
}

/// Reads `"sandbox": "off"` as `{"mode": "off"}`, and refuses what a
/// project config may not do: a repository cannot turn off or widen the
/// confinement of the commands run in it.
pub(super) fn sandbox_layer(
    layer: &mut Map<String, Value>,
    is_project: bool,
) -> Result<(), String> {
    // Nor can it stop what it does from being taken back, or log prompts.
    for key in ["checkpoints", "log"] {
        if is_project && layer.contains_key(key) {
            return Err(format!(
                "`{key}` may only be set in your global config: a project cannot change what offcode keeps of the work done in it"
            ));
        }
    }
    let Some(sandbox) = layer.get_mut("sandbox") else {
        return Ok(());
    };
    if let Value::String(mode) = sandbox {
        *sandbox = json!({ "mode": mode });
    }
    if is_project {
        let loosens = sandbox.get("mode").and_then(Value::as_str) == Some("off")
            || sandbox
                .get("writable")
                .and_then(Value::as_array)
                .is_some_and(|dirs| !dirs.is_empty());
        if loosens {
            return Err("`sandbox.mode: off` and `sandbox.writable` may only be set in your global config: a project cannot loosen the confinement of its own commands".to_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
