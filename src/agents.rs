//! Agent profiles: who the model is asked to be, with which tools, rules
//! and sampling. Built in: `build` (the default, every tool), `plan`
//! (reads, and says what it would change), and the subagents `general`
//! and `explore`. More come from the config's `agent` key and from
//! Markdown files with YAML frontmatter in `~/.config/offcode/agents/` and
//! the project's `.offcode/agents/` (`OpenCode`'s shape); a definition with
//! a built-in's name changes that built-in.
//!
//! A profile's `permission` is a policy layer above the config files; the
//! gate, the managed policy and confinement still apply, and a project's
//! profile (its config or its `.offcode/agents/`) can only tighten.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::sampling::Sampling;
use crate::sandbox::Sandbox;

/// The agent a session starts with.
pub const DEFAULT: &str = "build";
/// The hidden agent that writes compaction summaries.
pub const COMPACTION: &str = "compaction";
/// The hidden agent that names interactive sessions.
pub const TITLE: &str = "title";

/// Where an agent can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// As the session's agent (Tab, `/agent`, `--agent`).
    Primary,
    /// Only through the `task` tool.
    Subagent,
    /// Either.
    All,
    /// Used by offcode itself (`compaction`, `title`): never switched to, never
    /// started by `task`, not listed; its prompt, model and sampling can
    /// still be changed.
    Hidden,
}

impl Mode {
    /// Whether a session can be switched to it.
    pub fn primary(self) -> bool {
        matches!(self, Self::Primary | Self::All)
    }

    /// Whether the `task` tool can start it.
    pub fn subagent(self) -> bool {
        matches!(self, Self::Subagent | Self::All)
    }
}

/// Where a profile was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Compiled in.
    BuiltIn,
    /// A config file's `agent` key.
    Config(PathBuf),
    /// A Markdown file.
    File(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("built in"),
            Self::Config(path) | Self::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// One agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Its name, as typed after `/agent`.
    pub name: String,
    /// Where it can be used.
    pub mode: Mode,
    /// What it is for, shown in lists and to a model choosing a subagent.
    pub description: String,
    /// The model it asks, instead of the session's.
    pub model: Option<String>,
    /// Sampling temperature, instead of the config's.
    pub temperature: Option<Sampling>,
    /// Nucleus sampling, instead of the config's.
    pub top_p: Option<Sampling>,
    /// The sampling it gets when neither it nor the config says any:
    /// temperature and top-p.
    pub default_sampling: (Option<f64>, Option<f64>),
    /// Model requests in one turn, instead of the config's `max_steps`.
    pub max_steps: Option<u32>,
    /// Tools switched on or off by name (`*` for all); unnamed tools are on.
    pub tools: BTreeMap<String, bool>,
    /// Its `permission` rules, laid over the config's.
    pub permission: Option<Value>,
    /// Rules a project's definition adds: they only tighten.
    pub project_permission: Option<Value>,
    /// Added to the system prompt.
    pub prompt: String,
    /// Keys added to its requests' body (`reasoning_effort`, its `options`).
    pub body: serde_json::Map<String, Value>,
    /// Where it was defined, last.
    pub origin: Origin,
}

impl Profile {
    /// An agent with nothing set yet.
    fn blank(name: &str, mode: Mode, origin: Origin) -> Self {
        Self {
            name: name.to_owned(),
            mode,
            description: String::new(),
            model: None,
            temperature: None,
            top_p: None,
            default_sampling: (None, None),
            max_steps: None,
            tools: BTreeMap::new(),
            permission: None,
            project_permission: None,
            prompt: String::new(),
            body: serde_json::Map::new(),
            origin,
        }
    }

    /// Whether the agent is offered no tool that changes files (`plan`,
    /// `explore`): it is offered only the MCP tools their server marks
    /// read-only.
    pub fn reads_only(&self) -> bool {
        ["write", "edit", "patch"]
            .iter()
            .all(|tool| !self.offers(tool))
    }

    /// Whether the tool called `name` is offered (the `tools` map: the
    /// name, else `*`, else yes).
    pub fn offers(&self, name: &str) -> bool {
        self.tools
            .get(name)
            .or_else(|| self.tools.get("*"))
            .copied()
            .unwrap_or(true)
    }
}

/// A definition as written: every field optional, unknown ones refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Definition {
    /// Ignored in a config (the key is the name); a file's name otherwise.
    name: Option<String>,
    mode: Option<Mode>,
    description: Option<String>,
    model: Option<String>,
    temperature: Option<Sampling>,
    top_p: Option<Sampling>,
    #[serde(alias = "steps")]
    max_steps: Option<u32>,
    tools: Option<BTreeMap<String, bool>>,
    permission: Option<Value>,
    prompt: Option<String>,
    /// `true` removes the agent (built-ins too, except `build`).
    disable: Option<bool>,
    /// `OpenCode`'s; UI styling, ignored.
    #[expect(
        dead_code,
        reason = "accepted so a pasted agent loads; it only styles OpenCode's UI"
    )]
    color: Option<Value>,
    /// `OpenCode`'s: hides a subagent from its `@` menu; ignored.
    #[expect(
        dead_code,
        reason = "accepted so a pasted agent loads; it only styles OpenCode's UI"
    )]
    hidden: Option<bool>,
    /// Sent as `reasoning_effort` (`OpenCode` passes it to the provider).
    #[serde(rename = "reasoningEffort", alias = "reasoning_effort")]
    reasoning_effort: Option<String>,
    /// Sent as `verbosity`.
    #[serde(rename = "textVerbosity", alias = "verbosity")]
    text_verbosity: Option<String>,
    /// Request body keys for this agent's requests (`top_k`,
    /// `chat_template_kwargs`...).
    options: Option<serde_json::Map<String, Value>>,
}

/// Problems with an agent definition.
#[derive(Debug, thiserror::Error)]
#[error("Invalid agent `{name}` in `{path}`{}: {message}", position(*.line, *.column))]
pub struct Error {
    /// The agent's name.
    pub name: String,
    /// The file it is defined in.
    pub path: PathBuf,
    /// The line, from 1, when known.
    pub line: Option<usize>,
    /// The column, from 1, when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(" at line {line}, column {column}"),
        (Some(line), None) => format!(" at line {line}"),
        _ => String::new(),
    }
}

/// One config file's `agent` key.
#[derive(Debug, Clone)]
pub struct ConfigAgents {
    /// The file.
    pub path: PathBuf,
    /// The key's value: an object of definitions by name.
    pub value: Value,
    /// A project's file: its rules only tighten.
    pub project: bool,
}

/// The agents of a session.
#[derive(Debug, Clone)]
pub struct Agents {
    profiles: Vec<Profile>,
}

impl Default for Agents {
    fn default() -> Self {
        Self {
            profiles: built_in(),
        }
    }
}

impl Agents {
    /// The built-ins, changed and added to by the config files' `agent`
    /// keys (in precedence order), then the global agent files in
    /// `config_dir`, then the project's (read through `sandbox`).
    pub fn load(
        config: &[ConfigAgents],
        config_dir: Option<&Path>,
        sandbox: Option<&Sandbox>,
    ) -> Result<Self, Error> {
        let mut agents = Self::default();
        for layer in config {
            let Some(map) = layer.value.as_object() else {
                return Err(Error {
                    name: "agent".to_owned(),
                    path: layer.path.clone(),
                    line: None,
                    column: None,
                    message: "`agent` must be an object of agents by name".to_owned(),
                });
            };
            for (name, value) in map {
                // Where in the file: the key the message names, else the agent.
                let fail = |message: String| {
                    let text = std::fs::read_to_string(&layer.path).unwrap_or_default();
                    let key = message
                        .split_once("field `")
                        .and_then(|(_, rest)| rest.split_once('`'))
                        .map(|(key, _)| key);
                    let at = key
                        .and_then(|key| crate::jsonc::locate_key(&text, &["agent", name, key]))
                        .or_else(|| crate::jsonc::locate_key(&text, &["agent", name]));
                    Error {
                        name: name.clone(),
                        path: layer.path.clone(),
                        line: at.map(|(line, _)| line),
                        column: at.map(|(_, column)| column),
                        message,
                    }
                };
                let definition: Definition = serde_json::from_value(value.clone())
                    .map_err(|e| fail(format!("`agent.{name}`: {e}")))?;
                let origin = Origin::Config(layer.path.clone());
                agents
                    .define(name, definition, origin, layer.project)
                    .map_err(fail)?;
            }
        }
        if let Some(dir) = config_dir {
            for folder in files::global_dirs(dir) {
                for (path, text) in files::global_files(&folder) {
                    agents.define_file(&path, &text, false)?;
                }
            }
        }
        if let Some(sandbox) = sandbox {
            for (path, text) in files::project_files(sandbox) {
                agents.define_file(&path, &text, true)?;
            }
        }
        Ok(agents)
    }

    /// The agent called `name`.
    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// Every agent, built-ins first.
    pub fn all(&self) -> &[Profile] {
        &self.profiles
    }

    /// The names of the agents whose mode passes `keep`, for messages.
    fn names(&self, keep: impl Fn(Mode) -> bool) -> String {
        self.profiles
            .iter()
            .filter(|p| keep(p.mode))
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The agent a session can switch to by `name`, or why not.
    pub fn primary(&self, name: &str) -> Result<&Profile, String> {
        match self.get(name).filter(|p| p.mode != Mode::Hidden) {
            Some(profile) if profile.mode.primary() => Ok(profile),
            Some(_) => Err(format!(
                "`{name}` is a subagent, started by the `task` tool; the agents to switch to are: {}",
                self.names(Mode::primary)
            )),
            None => Err(format!(
                "there is no agent `{name}`; the agents to switch to are: {}",
                self.names(Mode::primary)
            )),
        }
    }

    /// The agent the `task` tool can start by `name`, or why not.
    pub fn subagent(&self, name: &str) -> Result<&Profile, String> {
        self.get(name).filter(|p| p.mode.subagent()).ok_or_else(|| {
            format!(
                "There is no subagent `{name}`; the subagents are: {}",
                self.names(Mode::subagent)
            )
        })
    }

    /// The agents the `task` tool can start.
    pub fn subagents(&self) -> impl Iterator<Item = &Profile> {
        self.profiles.iter().filter(|p| p.mode.subagent())
    }

    /// The primary agent after `name`, round the list (Tab).
    pub fn next_primary(&self, name: &str) -> &str {
        let primaries: Vec<&Profile> = self.profiles.iter().filter(|p| p.mode.primary()).collect();
        let at = primaries.iter().position(|p| p.name == name);
        let next = at.map_or(0, |at| (at + 1) % primaries.len().max(1));
        primaries.get(next).map_or(DEFAULT, |p| p.name.as_str())
    }

    fn define_file(&mut self, path: &Path, text: &str, project: bool) -> Result<(), Error> {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (definition, name) = files::parse_file(path, &name, text)?;
        self.define(&name, definition, Origin::File(path.to_path_buf()), project)
            .map_err(|message| Error {
                name,
                path: path.to_path_buf(),
                line: None,
                column: None,
                message,
            })
    }

    /// Lays `definition` over the agent `name` (or adds it).
    fn define(
        &mut self,
        name: &str,
        definition: Definition,
        origin: Origin,
        project: bool,
    ) -> Result<(), String> {
        check_name(name)?;
        if let Some(t) = definition.temperature.and_then(Sampling::value)
            && !(0.0..=2.0).contains(&t)
        {
            return Err(format!("`temperature` must be between 0 and 2, not {t}"));
        }
        if let Some(p) = definition.top_p.and_then(Sampling::value)
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(format!("`top_p` must be above 0 and at most 1, not {p}"));
        }
        if definition.max_steps == Some(0) {
            return Err("`max_steps` must be at least 1".to_owned());
        }
        if let Some(permission) = &definition.permission {
            crate::policy::rules_from(permission, &crate::policy::Source::BuiltIn)
                .map_err(|e| format!("`permission`: {e}"))?;
        }
        if definition.disable == Some(true) {
            if name == COMPACTION {
                return Err(
                    "`compaction` writes the summaries compaction needs and cannot be disabled; set `compaction.auto: false` instead".to_owned(),
                );
            }
            if name == DEFAULT {
                return Err(format!(
                    "`{DEFAULT}` is the default agent and cannot be disabled"
                ));
            }
            self.profiles.retain(|p| p.name != name);
            return Ok(());
        }
        let known = self.profiles.iter().position(|p| p.name == name);
        let at = known.unwrap_or_else(|| {
            self.profiles
                .push(Profile::blank(name, Mode::All, origin.clone()));
            self.profiles.len() - 1
        });
        let profile = &mut self.profiles[at];
        let hidden = profile.mode == Mode::Hidden;
        if definition
            .mode
            .is_some_and(|m| (m == Mode::Hidden) != hidden)
        {
            return Err(
                "`hidden` is for offcode's own agents (compaction, title); they stay hidden"
                    .to_owned(),
            );
        }
        if name == DEFAULT && definition.mode.is_some_and(|m| !m.primary()) {
            return Err(format!(
                "`{DEFAULT}` is the default agent and must stay primary"
            ));
        }
        if let Some(mode) = definition.mode {
            profile.mode = mode;
        }
        if let Some(description) = definition.description {
            profile.description = description;
        }
        if definition.model.is_some() {
            profile.model = definition.model.filter(|m| !m.trim().is_empty());
        }
        profile.temperature = definition.temperature.or(profile.temperature);
        profile.top_p = definition.top_p.or(profile.top_p);
        profile.max_steps = definition.max_steps.or(profile.max_steps);
        if let Some(tools) = definition.tools {
            profile.tools.extend(tools);
        }
        if let Some(permission) = definition.permission {
            let rules = if project {
                &mut profile.project_permission
            } else {
                &mut profile.permission
            };
            *rules = Some(match rules.take() {
                Some(before) => merge_permission(before, permission),
                None => permission,
            });
        }
        if let Some(prompt) = definition.prompt {
            prompt.trim().clone_into(&mut profile.prompt);
        }
        profile.body.extend(body_of(
            definition.options,
            definition.reasoning_effort,
            definition.text_verbosity,
            project,
        )?);
        profile.origin = origin;
        Ok(())
    }
}

/// What an agent adds to its requests' body: its `options`, and
/// `OpenCode`'s `reasoningEffort` and `textVerbosity` as the API names them.
/// A key offcode sends itself is an error, and a project's agent may set
/// none (they change what the person's server is asked).
fn body_of(
    options: Option<serde_json::Map<String, Value>>,
    effort: Option<String>,
    verbosity: Option<String>,
    project: bool,
) -> Result<serde_json::Map<String, Value>, String> {
    if project && (options.is_some() || effort.is_some() || verbosity.is_some()) {
        return Err("a project's agent may not set request options (`options`, `reasoningEffort`, `textVerbosity`); they change what your server is asked".to_owned());
    }
    let mut body = options.unwrap_or_default();
    if let Some(key) = body
        .keys()
        .find(|key| crate::protocol::REQUEST_FIELDS.contains(&key.as_str()))
    {
        return Err(format!(
            "`options.{key}` is what offcode sends itself (for sampling, use the agent's `temperature` and `top_p`)"
        ));
    }
    if let Some(effort) = effort {
        body.insert("reasoning_effort".to_owned(), Value::String(effort));
    }
    if let Some(verbosity) = verbosity {
        body.insert("verbosity".to_owned(), Value::String(verbosity));
    }
    Ok(body)
}

/// `later` laid over `earlier`: tool keys of `later` win, and a tool's
/// patterns are added after the earlier ones (the last match wins).
fn merge_permission(earlier: Value, later: Value) -> Value {
    match (earlier, later) {
        (Value::Object(mut earlier), Value::Object(later)) => {
            for (key, value) in later {
                let merged = match (earlier.remove(&key), value) {
                    (Some(Value::Object(mut before)), Value::Object(after)) => {
                        for (pattern, action) in after {
                            before.remove(&pattern);
                            before.insert(pattern, action);
                        }
                        Value::Object(before)
                    }
                    (_, value) => value,
                };
                earlier.insert(key, merged);
            }
            Value::Object(earlier)
        }
        (_, later) => later,
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "the name `{name}` must be 1-64 letters, digits, `-`, `_` or `.`"
        ))
    }
}

mod built_in;
pub use built_in::DEFAULT_SAMPLING;
use built_in::built_in;
mod files;
mod size;
pub use size::{LEFT_OUT_WHEN_COMPACT, compact_choice};
#[cfg(test)]
mod tests;
