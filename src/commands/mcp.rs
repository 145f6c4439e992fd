//! `offcode mcp list` and `offcode mcp test`: the configured MCP servers
//! started as a session would start them (confined, in this directory),
//! listed with their tools and what each costs, or one tried by hand.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::cli::{McpArgs, McpCommand, McpTestArgs};
use crate::client::wire::ToolSpec;
use crate::config::{Environment, Flags};
use crate::failure::{EXIT_FAILED, EXIT_USAGE, Failure};
use crate::mcp::{Launcher, Mcp};
use crate::protocol::{McpServerReport, McpState};
use crate::startup::{load_config, load_policy, runtime, shell, workspace};
use crate::stdio::{out, read_stdin};

/// `offcode mcp ...`.
pub fn mcp(args: &McpArgs, environment: &Environment) -> Result<u8, Failure> {
    let loaded = load_config(environment, &Flags::default())?;
    let config = &loaded.config;
    if config.mcp.is_empty() {
        out(
            "No MCP servers are configured. Add an `mcp` block to ~/.config/offcode/offcode.jsonc \
             (OpenCode's shape works as it is); see docs/mcp.md.\n",
        )?;
        return Ok(0);
    }
    let sandbox = workspace(environment)?;
    let servers = servers(environment, config, sandbox.root());
    let runtime = runtime()?;
    match &args.command {
        McpCommand::List(json) => {
            let (reports, _) = runtime.block_on(started(&servers));
            let failed = reports.iter().any(|r| r.state == McpState::Failed);
            if json.json {
                let text = serde_json::to_string_pretty(&reports).unwrap_or_default();
                out(&format!("{text}\n"))?;
            } else {
                out(&list(&reports))?;
            }
            Ok(if failed { EXIT_FAILED } else { 0 })
        }
        McpCommand::Test(test) => {
            let policy = load_policy(environment, &loaded, sandbox.root())?;
            runtime.block_on(async {
                let code = try_one(&servers, test, &policy).await;
                servers.shutdown().await;
                code
            })
        }
    }
}

/// `offcode doctor`'s MCP check: every enabled server started as a
/// session would; for each, what to say and, for a problem, the fix.
pub(crate) fn doctor(
    environment: &Environment,
    config: &crate::config::Config,
) -> Result<Vec<(String, Option<String>)>, Failure> {
    if config.mcp.is_empty() {
        return Ok(Vec::new());
    }
    let sandbox = workspace(environment)?;
    let servers = servers(environment, config, sandbox.root());
    let (reports, _) = runtime()?.block_on(started(&servers));
    Ok(reports
        .into_iter()
        .filter(|r| r.state != McpState::Disabled)
        .map(|r| match r.state {
            McpState::Ready => {
                let offered: Vec<_> = r.tools.iter().filter(|t| t.left_out.is_none()).collect();
                let tokens: u64 = offered.iter().map(|t| t.tokens).sum();
                let left_out = r.tools.len() - offered.len();
                let mut text = format!(
                    "MCP server `{}` starts{}: {} ({} tokens)",
                    r.name,
                    if r.confined {
                        " confined"
                    } else {
                        " unconfined"
                    },
                    crate::protocol::count(offered.len(), "tool"),
                    crate::protocol::format_tokens(tokens)
                );
                if left_out > 0 {
                    let _ = write!(
                        text,
                        ", {left_out} left out by the budget (`offcode mcp list`)"
                    );
                }
                (text, None)
            }
            McpState::Unsupported => (
                format!("MCP server `{}` is remote: {}", r.name, r.detail),
                Some(format!(
                    "set `\"enabled\": false` on `{}`, or run it locally",
                    r.name
                )),
            ),
            _ => (
                format!("MCP server `{}` does not start: {}", r.name, r.detail),
                Some(format!(
                    "check its `command` (`{}`) runs here; `offcode mcp test {}` shows it start",
                    r.command, r.name
                )),
            ),
        })
        .collect())
}

/// The configured servers, as a session would start them (not started).
pub(crate) fn servers(
    environment: &Environment,
    config: &crate::config::Config,
    root: &std::path::Path,
) -> Arc<Mcp> {
    let launcher = Launcher {
        shell: shell(environment, config, root),
        root: root.to_owned(),
    };
    Mcp::new(&config.mcp, config.mcp_limits, launcher)
}

/// Starts every enabled server as a session would, waits for them, and
/// stops them: what each reported, and the tools offered.
pub(crate) async fn started(servers: &Arc<Mcp>) -> (Vec<McpServerReport>, Vec<ToolSpec>) {
    servers.start();
    servers.settle().await;
    let found = (servers.reports(), servers.specs(false));
    servers.shutdown().await;
    found
}

/// Starts the server `test` names; lists its tools, or calls one.
async fn try_one(
    servers: &Arc<Mcp>,
    test: &McpTestArgs,
    policy: &crate::policy::Policy,
) -> Result<u8, Failure> {
    let name = &test.name;
    if let Err(reason) = servers.start_one(name).await {
        let known = servers.reports().iter().any(|r| r.name == *name);
        let code = if known { EXIT_FAILED } else { EXIT_USAGE };
        return Err(Failure::message(
            format!("The MCP server `{name}` did not start: {reason}"),
            code,
        ));
    }
    let reports = servers.reports();
    let Some(report) = reports.iter().find(|r| r.name == *name) else {
        return Err(Failure::message(
            format!("No MCP server `{name}`"),
            EXIT_USAGE,
        ));
    };
    let Some(wanted) = &test.tool else {
        out(&list(std::slice::from_ref(report)))?;
        return Ok(0);
    };
    let Some(tool) = report
        .tools
        .iter()
        .find(|t| t.tool == *wanted || t.name == *wanted)
    else {
        let names: Vec<&str> = report.tools.iter().map(|t| t.tool.as_str()).collect();
        return Err(
            Failure::message(format!("`{name}` has no tool `{wanted}`"), EXIT_USAGE)
                .with_hint(format!("Its tools: {}", names.join(", "))),
        );
    };
    if let Some(why) = &tool.left_out {
        return Err(Failure::message(
            format!("`{}` is not offered to the model: {why}", tool.name),
            EXIT_FAILED,
        ));
    }
    let given = match test.arguments.as_deref() {
        Some("-") => read_stdin()?,
        Some(json) => json.to_owned(),
        None => String::new(),
    };
    let arguments = crate::tools::parse_argument_text(&given).map_err(|reason| {
        Failure::message(
            format!("The arguments are not a JSON object: {reason}"),
            EXIT_USAGE,
        )
    })?;
    let decision = policy.decide(&tool.name, &arguments, &[]);
    super::tool::permitted(&decision, test.yes)?;
    let output = servers
        .call(&tool.name, arguments, &crate::cancel::Cancel::default())
        .await;
    let newline = if output.output.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    out(&format!("{}{newline}", output.output))?;
    Ok(if output.ok { 0 } else { EXIT_FAILED })
}

/// The servers as plain text, as `/mcp` shows them.
fn list(reports: &[McpServerReport]) -> String {
    let palette = crate::ui::render::Palette::new(false);
    let mut text = String::new();
    // Lines whole: a terminal or a pipe wraps them, not us.
    for line in crate::ui::view::mcp_list(reports, usize::MAX / 2) {
        let _ = writeln!(text, "{}", crate::ui::paint::line(palette, &line));
    }
    text
}
