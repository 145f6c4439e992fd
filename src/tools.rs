//! The built-in tools and their registry.
//!
//! A tool is a type implementing [`Tool`]: a name, a JSON schema the model
//! sees, and `run`. A failed tool is a result for the model (`ok: false`),
//! never an error that ends the turn.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod bash;
pub mod coerce;
pub(crate) mod diff;
mod edit;
mod glob;
mod grep;
mod list;
pub mod names;
mod output;
mod patch;
mod read;
mod skill;
pub mod text;
pub mod todo;
mod walk;
mod write;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use crate::groups::{Running, kill_running};
pub use bash::{SECRET_VARIABLES, hide_variables_holding, secret_variables};
pub use output::ToolOutput;

use crate::cancel::Cancel;
use crate::protocol::ToolDisplay;
use crate::sandbox::Sandbox;

/// A tool definition as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function.
    pub function: FunctionSpec,
}

/// The function part of a [`ToolSpec`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionSpec {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
}

/// What a tool run needs from its surroundings.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root (the startup directory), held open.
    pub sandbox: Arc<Sandbox>,
    /// Fires when the turn is aborted.
    pub cancel: Cancel,
    /// `bash` may overwrite existing files through `>` (a person approved
    /// exactly that); otherwise commands run under `set -o noclobber`.
    pub allow_clobber: bool,
    /// How shell commands run (confined by the kernel, or not).
    pub shell: Arc<crate::confine::Shell>,
    /// A person approved running this call's command unconfined.
    pub unconfined: bool,
    /// Where the command's process group is held until it ends.
    pub running: Arc<Running>,
    /// What the checks after commands cut short undid, for the call's end.
    pub late: crate::confine::after::Late,
    /// The session's checkpoints, where the files a command replaces or
    /// removes are kept before its changes land; `None` when off.
    pub checkpoints: Option<Arc<dyn KeepBefore>>,
}

/// Where the files a command is about to replace or remove are kept
/// before its changes land (the session's checkpoints).
pub trait KeepBefore: Send + Sync + std::fmt::Debug {
    /// Keeps the files at or beneath `touched` (relative to the
    /// workspace); what could not be kept, to say (empty when all were).
    fn keep_before(&self, touched: &[std::path::PathBuf]) -> String;
}

/// Why a tool failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The arguments did not match the schema.
    #[error("Invalid arguments for `{tool}`: {reason}")]
    InvalidArguments {
        /// The tool's name.
        tool: &'static str,
        /// Why.
        reason: String,
    },
    /// A path is not acceptable.
    #[error("{0}")]
    Path(#[from] crate::sandbox::Error),
    /// A process could not be started or waited for.
    #[error("Could not {action} `{path}`: {source}")]
    Io {
        /// What was being done (`read`, `create`, ...).
        action: &'static str,
        /// The path as given.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not text.
    #[error("`{0}` is a binary file; only text files can be read")]
    Binary(String),
    /// The call cannot be carried out as asked; the text says why and what
    /// to do instead.
    #[error("{0}")]
    Rejected(String),
    /// The turn was aborted while the tool ran.
    #[error("Aborted by the user")]
    Aborted,
}

/// The argument that says what a call is about (the command, the path,
/// the pattern), for one-line displays; `None` for other tools or when it
/// is missing.
pub fn subject<'a>(tool: &str, arguments: &'a Value) -> Option<&'a str> {
    arguments.get(subject_key(tool)?).and_then(Value::as_str)
}

/// The argument naming what a call of `tool` acts on ([`Tool::SUBJECT`]).
pub fn subject_key(tool: &str) -> Option<&'static str> {
    // `task` is the core's, not a tool here: the subagent it starts.
    if tool == "task" {
        return Some("agent");
    }
    built_in(tool)?.subject
}

/// Whether calls of `tool` change files in the workspace (the `edit`
/// permission covers them).
pub fn changes_files(tool: &str) -> bool {
    effect(tool) == Effect::ChangesFiles
}

/// What calls of `tool`, one of offcode's tools, do to the workspace
/// ([`Tool::EFFECT`]). Any other name may do anything a command could:
/// the core judges MCP tools and `task` by their kind
/// (`agent::kind`), not here.
pub fn effect(tool: &str) -> Effect {
    built_in(tool).map_or(Effect::RunsCommands, |kind| kind.effect)
}

/// What a tool's calls do to the workspace, for code that judges or
/// orders calls by what they are rather than by their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Nothing a later call could depend on (the todo list, a skill).
    None,
    /// Tells what the files hold (read, list, grep, glob).
    ReadsFiles,
    /// Changes files (write, edit, patch): the `edit` permission covers
    /// them.
    ChangesFiles,
    /// Runs commands, which may read and change anything (bash).
    RunsCommands,
}

/// What a built-in tool is, from its [`Tool`] constants, for code that
/// has a call's name but no registry (the policy, front ends, logs).
struct Kind {
    name: &'static str,
    subject: Option<&'static str>,
    effect: Effect,
}

const fn kind<T: Tool>() -> Kind {
    Kind {
        name: T::NAME,
        subject: T::SUBJECT,
        effect: T::EFFECT,
    }
}

/// Every built-in tool.
const BUILT_IN: &[Kind] = &[
    kind::<read::Read>(),
    kind::<write::Write>(),
    kind::<edit::Edit>(),
    kind::<patch::Patch>(),
    kind::<list::List>(),
    kind::<grep::Grep>(),
    kind::<glob::Glob>(),
    kind::<bash::Bash>(),
    kind::<todo::TodoWrite>(),
    kind::<todo::TodoRead>(),
    kind::<skill::Load>(),
];

fn built_in(tool: &str) -> Option<&'static Kind> {
    BUILT_IN.iter().find(|kind| kind.name == tool)
}

/// A boxed future, so tools can live in one registry.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One tool: what the model sees (name, description, argument schema) and
/// `run` over its typed arguments.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    const NAME: &'static str;
    /// A short description for the model.
    const DESCRIPTION: &'static str;
    /// The argument naming what a call acts on (`command`, `path`,
    /// `pattern`): shown on the call's line and in the session log.
    const SUBJECT: Option<&'static str> = None;
    /// What calls do to the workspace: a tool that changes files is
    /// covered by the `edit` permission and starts a todo list.
    const EFFECT: Effect = Effect::None;
    /// The arguments, deserialised from the model's JSON.
    type Arguments: DeserializeOwned + Send;
    /// JSON schema of the arguments.
    fn parameters(&self) -> Value;
    /// Runs the tool.
    fn run(
        &self,
        arguments: Self::Arguments,
        context: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, Error>> + Send;

    /// What the call would change, worked out without changing anything,
    /// for the approval prompt. `None` for tools that change no files.
    fn preview(
        &self,
        _arguments: &Self::Arguments,
        _context: &ToolContext,
    ) -> Option<Result<ToolDisplay, Error>> {
        None
    }
}

/// Any [`Tool`] behind a pointer, taking JSON arguments: parsing them (with
/// errors naming the tool) and boxing the future happen here, once.
pub trait DynTool: Send + Sync {
    /// [`Tool::NAME`].
    fn name(&self) -> &'static str;
    /// [`Tool::DESCRIPTION`].
    fn description(&self) -> &'static str;
    /// [`Tool::parameters`].
    fn parameters(&self) -> Value;
    /// Whether [`Tool::EFFECT`] is changing files.
    fn changes_files(&self) -> bool;
    /// Parses `arguments` and runs the tool.
    fn call<'a>(
        &'a self,
        arguments: Value,
        context: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, Error>>;
    /// Parses `arguments` and previews the call ([`Tool::preview`]).
    fn preview(
        &self,
        arguments: Value,
        context: &ToolContext,
    ) -> Option<Result<ToolDisplay, Error>>;
}

impl<T: Tool> DynTool for T {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn description(&self) -> &'static str {
        T::DESCRIPTION
    }

    fn parameters(&self) -> Value {
        Tool::parameters(self)
    }

    fn changes_files(&self) -> bool {
        T::EFFECT == Effect::ChangesFiles
    }

    fn call<'a>(
        &'a self,
        arguments: Value,
        context: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, Error>> {
        Box::pin(async move {
            let arguments =
                serde_json::from_value(arguments).map_err(|e| Error::InvalidArguments {
                    tool: T::NAME,
                    reason: e.to_string(),
                })?;
            self.run(arguments, context).await
        })
    }

    fn preview(
        &self,
        arguments: Value,
        context: &ToolContext,
    ) -> Option<Result<ToolDisplay, Error>> {
        match serde_json::from_value(arguments) {
            Ok(arguments) => Tool::preview(self, &arguments, context),
            Err(e) => Some(Err(Error::InvalidArguments {
                tool: T::NAME,
                reason: e.to_string(),
            })),
        }
    }
}

/// The available tools.
pub struct Registry {
    tools: Vec<Box<dyn DynTool>>,
    /// The todo list `todowrite` and `todoread` share.
    todos: todo::TodoList,
}

impl Default for Registry {
    fn default() -> Self {
        let todos = todo::TodoList::default();
        Self {
            todos: std::sync::Arc::clone(&todos),
            tools: vec![
                Box::new(read::Read),
                Box::new(write::Write),
                Box::new(edit::Edit),
                Box::new(patch::Patch),
                Box::new(list::List),
                Box::new(grep::Grep),
                Box::new(glob::Glob),
                Box::new(bash::Bash),
                Box::new(todo::TodoWrite(std::sync::Arc::clone(&todos))),
                Box::new(todo::TodoRead(todos)),
            ],
        }
    }
}

impl Registry {
    /// The default tools, and `skill` when there are `skills`.
    #[must_use]
    pub fn with_skills(mut self, skills: Vec<crate::skills::Skill>) -> Self {
        if !skills.is_empty() {
            self.tools
                .push(Box::new(skill::Load(std::sync::Arc::new(skills))));
        }
        self
    }

    /// The todo list as the tools last left it.
    pub fn todos(&self) -> Vec<crate::protocol::TodoItem> {
        self.todos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Replaces the todo list (a resumed session's, or one offcode starts).
    pub fn set_todos(&self, items: Vec<crate::protocol::TodoItem>) {
        *self
            .todos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = items;
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&dyn DynTool> {
        self.tools
            .iter()
            .find(|tool| tool.name() == name)
            .map(AsRef::as_ref)
    }

    /// Whether calls of the tool called `name` change files.
    pub fn changes_files(&self, name: &str) -> bool {
        self.get(name).is_some_and(DynTool::changes_files)
    }

    /// Every tool's name.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|tool| tool.name()).collect()
    }

    /// Definitions for the request.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|tool| ToolSpec {
                kind: "function",
                function: FunctionSpec {
                    name: tool.name().to_owned(),
                    description: tool.description().to_owned(),
                    parameters: tool.parameters(),
                },
            })
            .collect()
    }

    /// Runs `name` with raw argument text, turning every failure (unknown
    /// tool, bad JSON, tool error) into a result for the model.
    /// What a call would change (for write, edit and patch), without
    /// changing anything; `None` when there is nothing to show or the
    /// call would fail (running it reports why).
    pub fn preview(
        &self,
        name: &str,
        arguments: &str,
        context: &ToolContext,
    ) -> Option<ToolDisplay> {
        let arguments = parse_argument_text(arguments).ok()?;
        self.get(name)?.preview(arguments, context)?.ok()
    }

    /// Runs the tool called `name` with `arguments` (JSON text); an unknown
    /// tool, bad arguments or a failure become an error result for the
    /// model.
    pub async fn call(&self, name: &str, arguments: &str, context: &ToolContext) -> ToolOutput {
        let Some(tool) = self.get(name) else {
            return ToolOutput::error(names::no_such_tool(name, &self.names()));
        };
        let arguments = match parse_argument_text(arguments) {
            Ok(value) => value,
            Err(reason) => {
                return ToolOutput::error(format!(
                    "The arguments for `{name}` are not valid JSON ({reason}); send a JSON object"
                ));
            }
        };
        self.call_parsed(tool, arguments, context).await
    }

    /// Runs a tool with arguments already parsed.
    pub async fn call_parsed(
        &self,
        tool: &dyn DynTool,
        arguments: Value,
        context: &ToolContext,
    ) -> ToolOutput {
        match tool.call(arguments, context).await {
            Ok(output) => output,
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }
}

impl Registry {
    /// `arguments` (JSON text) for the tool `name`, brought to its schema
    /// where that is unambiguous ([`coerce::coerce`]); `None` when nothing
    /// changes or the tool is not offcode's. A call is made like this
    /// before the gate judges it, so the gate and the tool see the same
    /// arguments.
    /// A `path` that lies beside the workspace, in a folder above it,
    /// is taken as the workspace's ([`coerce::into_workspace`]).
    pub fn normalized(
        &self,
        name: &str,
        arguments: &str,
        root: &std::path::Path,
    ) -> Option<String> {
        let tool = self.get(name)?;
        let parsed = parse_argument_text(arguments).ok()?;
        let mut coerced = coerce::coerce(parsed.clone(), &tool.parameters(), true);
        coerce::into_workspace(&mut coerced, root);
        (coerced != parsed).then(|| coerced.to_string())
    }
}

/// Argument text as JSON; empty text means no arguments. A JSON string
/// holding an object (arguments encoded twice) is that object.
pub fn parse_argument_text(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(Value::String(inner)) if inner.trim_start().starts_with('{') => {
            parse_argument_text(&inner)
        }
        Ok(_) => Err("expected an object".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}

#[cfg(test)]
mod tests;
