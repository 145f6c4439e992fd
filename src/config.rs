//! Configuration: JSONC files, environment variables and flags, merged into
//! one [`Config`] with the source of every value.
//!
//! Precedence, lowest first: defaults, the global file
//! (`~/.config/offcode/offcode.jsonc`), the file named by `$OFFCODE_CONFIG`,
//! the project files (`.offcode/offcode.jsonc`, then `./offcode.jsonc`),
//! environment variables, flags. A bad file stops everything with an error
//! that names the file, line and column.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod env;
mod layer;
pub mod mcp;
mod opencode;
mod project;
pub mod provider;
mod sections;
mod substitute;

use std::path::{Path, PathBuf};

pub use crate::confine::{SandboxConfig, SandboxMode};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use env::{Environment, process_var};
use layer::{Merged, check_url, display_path, parse_file};
pub use layer::{Source, schema};
pub use opencode::keys as opencode_keys;
pub use sections::{
    Compact, CompactionConfig, RetryConfig, SubagentsConfig, TimeoutsConfig, TlsConfig,
    ToolCallMode, ValidateConfig,
};

/// The endpoint used when none is configured: a local vLLM's default.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000/v1";

/// Problems loading configuration.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A config file could not be read.
    #[error("Could not read config file `{path}`")]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A config file is not valid.
    #[error("Invalid config file `{path}`{}: {message}", position(*.line, *.column))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line, from 1, when known.
        line: Option<usize>,
        /// The column, from 1, when known.
        column: Option<usize>,
        /// What went wrong, in words.
        message: String,
    },
    /// An environment variable or flag has a bad value.
    #[error("Invalid value for {source_name}: {message}")]
    BadValue {
        /// The variable or flag.
        source_name: String,
        /// What went wrong, in words.
        message: String,
    },
    /// The merged values do not form a valid config.
    #[error("Invalid configuration: {0}")]
    Merged(String),
}

fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(" at line {line}, column {column}"),
        (Some(line), None) => format!(" at line {line}"),
        _ => String::new(),
    }
}

/// The effective configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// The OpenAI-compatible API root, e.g. `http://gpu1:8000/v1`.
    pub base_url: String,
    /// The model to use; when unset, the server's first model.
    pub model: Option<String>,
    /// Sent as a bearer token when set.
    pub api_key: Option<String>,
    /// Cap on generated tokens per response; unset, the compaction
    /// reserve (a quarter of the context at most). Always sent, never more
    /// than the context leaves.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; unset, the agent's default; `"server"`,
    /// none is sent.
    pub temperature: Option<crate::sampling::Sampling>,
    /// Nucleus sampling; unset, the agent's default; `"server"`, none is
    /// sent.
    pub top_p: Option<crate::sampling::Sampling>,
    /// The compact prompt and tool set: `auto`, `on` or `off`.
    pub compact: Compact,
    /// Model requests allowed in one turn.
    pub max_steps: u32,
    /// Extra instruction files for the system prompt: paths or globs
    /// inside the workspace.
    pub instructions: Vec<String>,
    /// Global skills (folders of `~/.config/offcode/skills`) to load.
    pub skills: Vec<String>,
    /// The model's context length, when the server does not say (or says
    /// wrong).
    pub context_limit: Option<u64>,
    /// Context compaction.
    pub compaction: CompactionConfig,
    /// Native or text tool calls.
    pub tool_calls: ToolCallMode,
    /// TLS settings.
    pub tls: TlsConfig,
    /// Retry policy.
    pub retry: RetryConfig,
    /// Timeouts.
    pub timeouts: TimeoutsConfig,
    /// How shell commands are confined.
    pub sandbox: SandboxConfig,
    /// Validation after a turn that changed files.
    pub validate: ValidateConfig,
    /// Subagents started by the `task` tool.
    pub subagents: SubagentsConfig,
    /// Local MCP servers by name, in `OpenCode`'s shape.
    pub mcp: std::collections::BTreeMap<String, crate::config::mcp::ServerConfig>,
    /// What MCP may cost.
    pub mcp_limits: crate::config::mcp::Limits,
    /// Checkpoints of the workspace, for undo and revert.
    pub checkpoints: crate::checkpoint::CheckpointSettings,
    /// The log file.
    pub log: crate::log::LogSettings,
    /// How long what was learned about servers is kept.
    pub cache: crate::servers::CacheSettings,
    /// Servers by name, in `OpenCode`'s shape; `model` names one of their
    /// models as `provider/model`.
    pub provider: indexmap::IndexMap<String, provider::ProviderConfig>,
    /// The model for hidden work (session titles, compaction summaries);
    /// unset, the session's.
    pub small_model: Option<String>,
    /// Where the model in use leads ([`Config::routed`]); not a key.
    #[serde(skip)]
    pub route: provider::Route,
    /// The agent a new session starts with, when `--agent` does not say.
    pub default_agent: Option<String>,
    /// Whether `base_url` was set (a file, the environment): its server
    /// is listed beside the providers'.
    #[serde(skip)]
    pub base_url_set: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            model: None,
            api_key: None,
            max_tokens: None,
            temperature: None,
            top_p: None,
            compact: Compact::Auto,
            max_steps: 50,
            instructions: Vec::new(),
            skills: Vec::new(),
            context_limit: None,
            compaction: CompactionConfig::default(),
            tool_calls: ToolCallMode::Auto,
            tls: TlsConfig::default(),
            retry: RetryConfig::default(),
            timeouts: TimeoutsConfig::default(),
            sandbox: SandboxConfig::default(),
            validate: ValidateConfig::default(),
            subagents: SubagentsConfig::default(),
            mcp: std::collections::BTreeMap::new(),
            mcp_limits: crate::config::mcp::Limits::default(),
            checkpoints: crate::checkpoint::CheckpointSettings::default(),
            log: crate::log::LogSettings::default(),
            cache: crate::servers::CacheSettings::default(),
            provider: indexmap::IndexMap::new(),
            small_model: None,
            route: provider::Route::default(),
            base_url_set: false,
            default_agent: None,
        }
    }
}

/// Values given on the command line.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--model`.
    pub model: Option<String>,
}

/// A config file that was looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    /// Its path.
    pub path: PathBuf,
    /// Whether it existed and was loaded.
    pub loaded: bool,
}

/// The loaded configuration and where it came from.
#[derive(Debug)]
pub struct Loaded {
    /// The effective values.
    pub config: Config,
    /// Every file looked for, in precedence order.
    pub files: Vec<ConfigFile>,
    /// The policy keys (`permission`, `dangerous`) of each loaded file,
    /// in precedence order; they are layered by the policy, not merged.
    pub policy_layers: Vec<crate::policy::Layer>,
    /// What the project's config would loosen, and whether the user
    /// trusts it ([`crate::trust`]).
    pub loosening: Option<crate::trust::Loosening>,
    /// The `agent` key of each loaded file, in precedence order
    /// ([`crate::agents`]).
    pub agent_layers: Vec<crate::agents::ConfigAgents>,
    /// `OpenCode`'s keys each file holds that offcode ignores, named.
    pub ignored: Vec<(PathBuf, Vec<String>)>,
    merged: Merged,
}

impl Loaded {
    /// Where the value at a dotted path came from.
    pub fn source_of(&self, path: &str) -> Source {
        self.merged.source_of(path)
    }

    /// Every effective value as `(dotted path, value, source)`, secrets masked.
    pub fn entries(&self) -> Vec<(String, Value, Source)> {
        let mut rows = Vec::new();
        if let Ok(Value::Object(tree)) = serde_json::to_value(&self.config) {
            flatten("", &Value::Object(tree), &mut rows);
        }
        rows.into_iter()
            .map(|(path, value)| {
                // MCP servers' variables and headers often hold tokens.
                let secret = path == "api_key"
                    || (path.starts_with("provider.")
                        && (path.ends_with(".apiKey") || path.contains(".headers.")))
                    || (path.starts_with("mcp.")
                        && (path.contains(".environment.") || path.contains(".headers.")));
                let value = if secret { mask_secret(&value) } else { value };
                let source = self.source_of(&path);
                (path, value, source)
            })
            .collect()
    }

    /// A config file's path, relative (`./...`) when it lies in `cwd`.
    pub fn describe_file(file: &ConfigFile, cwd: &Path) -> String {
        display_path(&file.path, cwd)
    }

    /// A source as text, file paths relative to `cwd` where they lie in it.
    pub fn describe_source(source: &Source, cwd: &Path) -> String {
        match source {
            Source::File(path) => display_path(path, cwd),
            other => other.to_string(),
        }
    }
}

fn flatten(prefix: &str, value: &Value, rows: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, child, rows);
            }
        }
        other => rows.push((prefix.to_owned(), other.clone())),
    }
}

fn mask_secret(value: &Value) -> Value {
    match value.as_str() {
        Some(secret) if secret.chars().count() > 8 => {
            let tail: String = secret.chars().skip(secret.chars().count() - 4).collect();
            Value::String(format!("****{tail}"))
        }
        Some(_) => Value::String("****".to_owned()),
        None => value.clone(),
    }
}

/// The project's own config files, in the startup directory: what they
/// would loosen waits for the folder to be trusted.
pub fn project_files(environment: &Environment) -> [PathBuf; 2] {
    [
        environment.cwd.join(".offcode").join("offcode.jsonc"),
        environment.cwd.join("offcode.jsonc"),
    ]
}

/// The config files consulted, lowest precedence first.
pub fn candidate_files(environment: &Environment) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(dir) = environment.config_dir() {
        files.push(dir.join("offcode.jsonc"));
    }
    if let Some(path) = environment.var("OFFCODE_CONFIG") {
        files.push(environment.cwd.join(path));
    }
    files.extend(project_files(environment));
    files
}

/// Loads the configuration from files, environment and flags.
pub fn load(environment: &Environment, flags: &Flags) -> Result<Loaded, Error> {
    let mut merged = Merged::default();
    let mut files = Vec::new();
    let mut policy_layers = Vec::new();
    let mut agent_layers = Vec::new();
    let mut ignored = Vec::new();
    let project_files = project_files(environment);
    // What the project's files would loosen: applied only once trusted.
    let mut project = project::ProjectPart::default();
    let explicit = environment
        .var("OFFCODE_CONFIG")
        .map(|p| environment.cwd.join(p));
    for path in candidate_files(environment) {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error)
                if error.kind() == std::io::ErrorKind::NotFound
                    && explicit.as_ref() != Some(&path) =>
            {
                files.push(ConfigFile {
                    path,
                    loaded: false,
                });
                continue;
            }
            Err(source) => return Err(Error::Read { path, source }),
        };
        let is_project = if explicit.as_ref() == Some(&path) {
            explicit_is_projects(environment)
        } else {
            // By position, not by prefix: run from $HOME, the global
            // config lies under the working directory but is the user's.
            project_files.contains(&path)
        };
        let text = substituted(&text, &path, environment, is_project)?;
        let mut layer = parse_file(&text).map_err(|problem| Error::Invalid {
            path: path.clone(),
            line: problem.line,
            column: problem.column,
            message: problem.message,
        })?;
        let opencode = opencode::adapt(&mut layer);
        if !opencode.is_empty() {
            ignored.push((path.clone(), opencode));
        }
        layer::validate_layer(&mut layer);
        mcp::check_layer(&layer, &merged.tree, &text, &path)?;
        layer::sandbox_layer(&mut layer, is_project).map_err(|message| Error::Invalid {
            path: path.clone(),
            line: None,
            column: None,
            message,
        })?;
        let commands = layer.remove("commands");
        if commands.is_some() && is_project {
            return Err(Error::Invalid {
                path,
                line: None,
                column: None,
                message: "`commands` may only be set in your global config or the managed policy: a project cannot vouch for the programs it runs".to_owned(),
            });
        }
        if let Some(value) = layer.remove("agent") {
            agent_layers.push(crate::agents::ConfigAgents {
                path: path.clone(),
                value,
                project: is_project,
            });
        }
        let permission = layer.remove("permission");
        if is_project {
            provider::check_project(&layer, &merged.tree, &text)
                .map_err(|(at, message)| Error::at(&path, at, message))?;
            project.take(&path, &environment.cwd, &mut layer, permission.as_ref());
        }
        let dangerous_extra = dangerous_extra(&mut layer, &path)?;
        if permission.is_some() || !dangerous_extra.is_empty() || commands.is_some() {
            policy_layers.push(crate::policy::Layer {
                path: path.clone(),
                permission,
                dangerous_extra,
                commands,
                untrusted: is_project,
            });
        }
        merged.apply(layer, &Source::File(path.clone()));
        files.push(ConfigFile { path, loaded: true });
    }
    let loosening = project.finish(environment, &mut policy_layers, &mut merged);
    apply_env(&mut merged, environment)?;
    apply_flags(&mut merged, flags)?;
    let config = effective(&merged)?;
    Ok(Loaded {
        config,
        files,
        policy_layers,
        loosening,
        agent_layers,
        ignored,
        merged,
    })
}

/// Whether `$OFFCODE_CONFIG` is read as the project's: a relative name
/// is a file of whatever folder offcode starts in (a repository's, maybe).
fn explicit_is_projects(environment: &Environment) -> bool {
    environment
        .var("OFFCODE_CONFIG")
        .is_some_and(|name| Path::new(name).is_relative())
}

impl Error {
    /// An invalid file's error at `at` (line, column) when known.
    fn at(path: &Path, at: Option<(usize, usize)>, message: String) -> Self {
        Self::Invalid {
            path: path.to_path_buf(),
            line: at.map(|(line, _)| line),
            column: at.map(|(_, column)| column),
            message,
        }
    }
}

/// `text` of the file at `path` with its `{env:...}` and `{file:...}`
/// put in ([`substitute`]).
fn substituted(
    text: &str,
    path: &Path,
    environment: &Environment,
    is_project: bool,
) -> Result<String, Error> {
    let var = |name: &str| environment.var(name).map(str::to_owned);
    let reach = substitute::Reach {
        folder: path.parent().unwrap_or(&environment.cwd),
        home: environment.var("HOME").map(Path::new),
        var: &var,
        project_root: is_project.then_some(environment.cwd.as_path()),
    };
    substitute::substitute(text, &reach).map_err(|problem| Error::Invalid {
        path: path.to_path_buf(),
        line: problem.line,
        column: problem.column,
        message: problem.message,
    })
}

/// The merged tree as a [`Config`], checked as a whole.
fn effective(merged: &Merged) -> Result<Config, Error> {
    let mut tree = merged.tree.clone();
    opencode::filter_providers(&mut tree);
    let mut config: Config =
        serde_json::from_value(Value::Object(tree)).map_err(|e| Error::Merged(e.to_string()))?;
    config.base_url = normalise_base_url(&config.base_url);
    config.base_url_set = merged.source_of("base_url") != Source::Default;
    config.check_providers().map_err(Error::Merged)?;
    if config.retry.max_delay_ms < config.retry.initial_delay_ms {
        config.retry.max_delay_ms = config.retry.initial_delay_ms;
    }
    Ok(config)
}

/// A layer's `dangerous.extra` entries, taken out of it.
fn dangerous_extra(
    layer: &mut Map<String, Value>,
    path: &Path,
) -> Result<Vec<crate::policy::ExtraFile>, Error> {
    let Some(value) = layer.remove("dangerous") else {
        return Ok(Vec::new());
    };
    serde_json::from_value::<crate::policy::DangerousValue>(value)
        .map(|dangerous| dangerous.extra)
        .map_err(|e| Error::Invalid {
            path: path.to_path_buf(),
            line: None,
            column: None,
            message: e.to_string(),
        })
}

fn single(key: &str, value: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    map
}

fn apply_flags(merged: &mut Merged, flags: &Flags) -> Result<(), Error> {
    if let Some(model) = &flags.model {
        if model.trim().is_empty() {
            return Err(Error::BadValue {
                source_name: "--model".to_owned(),
                message: "must not be empty".to_owned(),
            });
        }
        merged.apply(
            single("model", json!(model)),
            &Source::Flag("--model".to_owned()),
        );
    }
    Ok(())
}

fn apply_env(merged: &mut Merged, environment: &Environment) -> Result<(), Error> {
    if let Some(url) = environment.var("OFFCODE_BASE_URL") {
        check_url(url).map_err(|message| Error::BadValue {
            source_name: "OFFCODE_BASE_URL".to_owned(),
            message,
        })?;
        merged.apply(
            single("base_url", json!(url)),
            &Source::Env("OFFCODE_BASE_URL".to_owned()),
        );
    }
    if let Some(model) = environment.var("OFFCODE_MODEL") {
        merged.apply(
            single("model", json!(model)),
            &Source::Env("OFFCODE_MODEL".to_owned()),
        );
    }
    // The first key variable that is set wins; a key in a config file is
    // overridden by any of them (env beats files).
    for name in ["OFFCODE_API_KEY", "DASHSCOPE_API_KEY", "OPENAI_API_KEY"] {
        if let Some(key) = environment.var(name) {
            merged.apply(single("api_key", json!(key)), &Source::Env(name.to_owned()));
            break;
        }
    }
    Ok(())
}

/// Adds `/v1` to a bare `http://host:port` so either form of the URL works.
fn normalise_base_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let after_scheme = trimmed.split_once("://").map_or(trimmed, |(_, rest)| rest);
    if after_scheme.contains('/') {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1")
    }
}

#[cfg(test)]
mod tests;
