//! Command-line definitions (clap). No behaviour lives here.

use clap::{Args, Parser, Subcommand};

/// An offline coding agent for self-hosted OpenAI-compatible (vLLM) endpoints.
#[derive(Debug, Parser)]
#[command(
    name = "offcode",
    disable_version_flag = true,
    about = "An offline coding agent for the terminal, for self-hosted OpenAI-compatible (vLLM) \
endpoints.\n\nWithout a command, `offcode` starts the interactive UI in this directory (`offcode \
-c` resumes the latest session here); `offcode run \"TASK\"` runs one task headless.",
    long_about = None
)]
#[command(
    after_help = "Configuration: ~/.config/offcode/offcode.jsonc, ./offcode.jsonc, \
OFFCODE_BASE_URL, OFFCODE_MODEL, OFFCODE_API_KEY. See `offcode config`.\n\
Permissions: `permission` and `dangerous` in those files, and the managed \
/etc/offcode/policy.jsonc. See `offcode policy check --help`."
)]
pub struct Cli {
    /// What to do; without one, the interactive UI starts.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A first task for the interactive UI: it starts with this prompt sent
    /// (as `codex "PROMPT"` does); `offcode run` runs one headless.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Work in DIR, as if offcode were started there (before anything is
    /// read: the project's config, rules and sessions are DIR's).
    #[arg(short = 'C', long = "cd", value_name = "DIR", global = true)]
    pub cd: Option<std::path::PathBuf>,
    /// For the interactive UI.
    #[command(flatten)]
    pub start: SessionArgs,
    /// Print the version, the commit, the target and the build date.
    #[arg(short = 'V', long)]
    pub version: bool,
    /// With `--version`: also what the kernel offers the sandbox (Landlock,
    /// user namespaces, pidfd).
    #[arg(long, requires = "version")]
    pub verbose: bool,
}

/// `offcode --version`: the version, the commit it was built from, the
/// target and the day of the commit.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("OFFCODE_COMMIT"),
    " ",
    env!("OFFCODE_BUILD_DATE"),
    ", ",
    env!("OFFCODE_TARGET"),
    ")"
);

/// Which model and session to start with (interactive UI and `run`).
#[derive(Debug, Args)]
pub struct SessionArgs {
    /// Model to use (overrides config and the session's model).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// Resume the latest session started in this directory.
    #[arg(long, short = 'c', conflicts_with = "session")]
    pub r#continue: bool,
    /// Resume the session with this id.
    #[arg(long, short = 's')]
    pub session: Option<String>,
    /// Start a new session from a copy of session ID's conversation (all
    /// of it, or up to before turn `--at N`); the original is left as it is.
    #[arg(long, value_name = "ID", conflicts_with_all = ["session", "continue"])]
    pub fork: Option<String>,
    /// With `--fork`: copy the conversation up to before this turn (1 is
    /// the first; `offcode revert --session ID` lists them).
    #[arg(long, value_name = "N", requires = "fork", value_parser = clap::value_parser!(u64).range(1..))]
    pub at: Option<u64>,
    /// Agent to work as: `build` (the default), `plan` (reads and plans,
    /// changes nothing) or one of your own (docs/agents.md).
    #[arg(long, short = 'a')]
    pub agent: Option<String>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task headless and print the answer.
    #[command(visible_alias = "exec")]
    Run(RunArgs),
    /// List the models the endpoint serves, with their context length.
    Models(JsonArg),
    /// Check the sandbox, the MCP servers and the endpoint step by step
    /// (connection, TLS, models, tool calling, reasoning, token counting)
    /// and print the fix for each problem. Exit status 0 when healthy, 1 when problems were found.
    Doctor(DoctorArgs),
    /// List saved sessions for this directory; delete or prune them.
    Sessions(SessionsArgs),
    /// Take a session back to before a turn: its conversation, and the
    /// files the agent changed since (shown first; `--yes` does it).
    Revert(RevertArgs),
    /// What the agent changed in this workspace during a session, from its
    /// checkpoints (no git needed), as a unified diff.
    Diff(DiffArgs),
    /// Write a session as Markdown.
    Export(ExportArgs),
    /// Print where offcode's log is, and its last lines.
    Logs(LogsArgs),
    /// offcode's cache of what servers were found to do.
    Cache(CacheArgs),
    /// Show the effective configuration and where each value came from;
    /// `offcode config schema` prints the config file's JSON schema.
    Config(ConfigArgs),
    /// Print a completion script for SHELL (docs/install.md says where it
    /// goes), e.g. `offcode completions bash`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `offcode man | man -l -`; with `--dir`,
    /// write it and one page per subcommand there.
    Man(ManArgs),
    /// Show what each request carries (system prompt, rules, instructions,
    /// tool schemas, history) with its source and estimated tokens.
    Context(ContextArgs),
    /// Run one built-in tool in this directory, as the agent would, and
    /// print what the model would receive.
    Tool(ToolArgs),
    /// Inspect the permission policy.
    Policy(PolicyArgs),
    /// The MCP servers: list them with their tools, or try one.
    Mcp(McpArgs),
    /// Trust this folder's config to loosen offcode's safety settings (its
    /// `allow` rules, `sandbox.network: true`, its MCP servers, its
    /// `base_url` and TLS settings), as it reads now.
    Trust(TrustArgs),
}

/// `offcode completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `offcode man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `offcode.1` and `offcode-SUBCOMMAND.1` into this folder
    /// instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

/// `offcode trust`.
#[derive(Debug, Args)]
#[command(
    after_help = "A project's offcode.jsonc (or .offcode/offcode.jsonc) may always tighten the policy; what it would loosen applies only after you trust the folder. The trust covers exactly the loosening settings shown; when they change, offcode ignores them again until you trust the folder anew. Trusted folders are kept in ~/.local/share/offcode/trusted.json."
)]
pub struct TrustArgs {
    /// Forget this folder instead: its loosening is ignored again.
    #[arg(long)]
    pub revoke: bool,
}

/// `offcode policy`.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: PolicyCommand,
}

/// `offcode policy` subcommands.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Show how the effective policy would decide on a command or tool call.
    Check(PolicyCheckArgs),
    /// Print the whole effective policy: every rule in the order it is
    /// laid, with the file it came from; the managed layer and a project's
    /// untrusted rules marked; each agent's rules; the managed files.
    #[command(
        after_help = "The last matching rule wins, except that a managed rule is applied after all the others and only tightens, and an untrusted project's rule applies only where it is stricter. Exit status: 0, or 2 for usage and configuration errors."
    )]
    Show(JsonArg),
}

/// `offcode policy check`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  offcode policy check -- rm -rf build\n  offcode policy check --json -- 'git status && cargo test'\n  offcode policy check --tool edit '{\"path\": \"src/main.rs\"}'\n\nThe words after `--` are joined with spaces into one bash command line; quote it to keep operators such as `|`, `>` and `&&` away from your own shell. Nothing is run. Exit status: 0 when a decision was printed, 2 for usage and configuration errors."
)]
pub struct PolicyCheckArgs {
    /// Print the decision as JSON.
    #[arg(long)]
    pub json: bool,
    /// Check a call of this tool instead of a bash command line.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The command line (or, with --tool, its JSON arguments; `-` reads
    /// them from stdin).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub words: Vec<String>,
}

/// `offcode tool`.
#[derive(Debug, Args)]
#[command(
    after_help = "Example: offcode tool grep '{\"pattern\": \"fn main\", \"include\": \"*.rs\"}'\n\
Exit status: 0 when the tool succeeded, 1 when it failed or was refused, 2 for usage errors."
)]
pub struct ToolArgs {
    /// The tool: read, write, edit, patch, list, grep, glob, bash,
    /// todowrite, todoread. Without one, the tools are listed with what
    /// they do.
    pub name: Option<String>,
    /// The arguments as a JSON object (default `{}`); `-` reads them from stdin.
    pub arguments: Option<String>,
    /// Run a call that would ask for approval (never a dangerous one).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `offcode run`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status:\n  0  the task finished\n  1  it failed (the server, the step \
limit...) or was interrupted\n  2  usage or configuration error\n  3  the model ended without \
doing what the task needed (a warning says what)\n  4  a rule, the managed policy or a person \
refused a call that would change files or run a command, and nothing else changed a file or ran"
)]
pub struct RunArgs {
    /// The task; `-` reads it from standard input.
    pub prompt: String,
    /// Print one JSON event per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// Model and session.
    #[command(flatten)]
    pub start: SessionArgs,
    /// Approve tool calls that would ask for permission; dangerous calls
    /// and questions the managed policy demands are still refused.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Also write the model's last message to FILE (as Codex's `exec -o`
    /// does), whatever the exit status, when there is one.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output_last_message: Option<std::path::PathBuf>,
}

/// `offcode mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// `offcode mcp` subcommands.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every enabled server; list each one's state and tools, with
    /// what each tool costs in context and what the budget leaves out.
    #[command(
        after_help = "Exit status: 0 when every enabled server started, 1 when one failed, 2 for usage and configuration errors."
    )]
    List(JsonArg),
    /// Start one server and list its tools; with TOOL, call it.
    #[command(
        after_help = "Examples:\n  offcode mcp test memory\n  offcode mcp test memory read_graph\n  offcode mcp test fs read_text_file '{\"path\": \"README.md\"}'\n\nThe call goes through the permission rules like the model's (its name is SERVER_TOOL). Exit status: 0 when the server started (and the call succeeded), 1 when not, 2 for usage and configuration errors."
    )]
    Test(McpTestArgs),
}

/// `offcode mcp test`.
#[derive(Debug, Args)]
pub struct McpTestArgs {
    /// The server's name in the `mcp` config.
    pub name: String,
    /// A tool to call: the server's name for it, or `SERVER_TOOL`.
    pub tool: Option<String>,
    /// Its arguments as a JSON object (default `{}`); `-` reads them from stdin.
    pub arguments: Option<String>,
    /// Run a call that would ask for approval (never a dangerous one).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `offcode config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// What to print instead of the effective configuration.
    #[command(subcommand)]
    pub command: Option<ConfigCommand>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `offcode config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the JSON schema of `offcode.jsonc`, for editors: save it and
    /// name it in a file's `"$schema"` (docs/configuration.md).
    Schema,
}

/// A `--json` switch.
#[derive(Debug, Args)]
pub struct JsonArg {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `offcode doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check this model instead of the configured one.
    #[arg(long, short = 'm')]
    pub model: Option<String>,
}

/// `offcode context`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Include the latest session's history in this directory.
    #[arg(long, short = 'c', conflicts_with = "session")]
    pub r#continue: bool,
    /// Include this session's history.
    #[arg(long, short = 's')]
    pub session: Option<String>,
}

/// `offcode sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Include sessions from every directory.
    #[arg(long, short = 'a')]
    pub all: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Delete these sessions (with their subagents' sessions and
    /// checkpoints).
    #[arg(long, value_name = "ID", num_args = 1.., conflicts_with = "prune")]
    pub delete: Vec<String>,
    /// Delete the sessions of this directory (every directory with
    /// `--all`) not used for DAYS days.
    #[arg(long, value_name = "DAYS")]
    pub prune: Option<u64>,
}

/// `offcode revert`.
#[derive(Debug, Args)]
#[command(
    after_help = "Without --to, the last turn is taken back. Without --yes, only what would change is shown (exit status 0). A file changed by hand after the agent changed it is reported and left as it is. Exit status: 0 done (or shown), 1 when a file could not be put back, 2 for usage errors."
)]
pub struct RevertArgs {
    /// The session (default: the latest of this directory).
    #[arg(long, short = 's')]
    pub session: Option<String>,
    /// Go back to before this turn (1 is the first).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub to: Option<u64>,
    /// Do it, rather than only show it.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `offcode diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The session (default: the latest of this directory).
    #[arg(long, short = 's')]
    pub session: Option<String>,
    /// Only the changes from this turn on (1 is the first).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub since: u64,
    /// Only the list of files, not the diff.
    #[arg(long)]
    pub stat: bool,
}

/// `offcode export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The session.
    pub id: String,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o')]
    pub output: Option<std::path::PathBuf>,
}

/// `offcode logs`.
#[derive(Debug, Args)]
#[command(
    after_help = "The log is ~/.local/state/offcode/offcode.log (or under $XDG_STATE_HOME), rotated by size (`log.max_kb`, `log.keep`). It holds sessions, tool calls and their outcome, permission decisions, retries, MCP servers, warnings and errors; prompts and answers only with `log.debug`."
)]
pub struct LogsArgs {
    /// How many of the last lines to print.
    #[arg(long, short = 'n', default_value_t = 40)]
    pub lines: usize,
}

/// `offcode cache`.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CacheCommand,
}

/// `offcode cache` subcommands.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Forget what servers were found to do (context length, tool-call
    /// parsing, think blocks): the next start asks them again.
    Clear,
}
