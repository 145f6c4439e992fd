//! What runs a permitted call, given only what it needs: the call and its
//! [`ToolContext`] (the workspace, the shell, the cancel, the groups),
//! never the agent's state. A call's kind picks the handler
//! ([`super::kind::Kind`]); `task` calls, which start subagents, all of a
//! step's at once, are started by [`super::task::Subagents`], given
//! likewise only what that needs.

use std::sync::Arc;

use crate::session::ToolCall;
use crate::tools::{Registry, ToolContext, ToolOutput};

/// The handler of a built-in or MCP call.
pub(super) enum Handler<'a> {
    /// One of offcode's tools.
    BuiltIn(&'a Registry),
    /// A tool an MCP server offers.
    Mcp(Arc<crate::mcp::Mcp>),
}

impl Handler<'_> {
    /// Runs `call` with `context`.
    pub(super) async fn run(&self, call: &ToolCall, context: &ToolContext) -> ToolOutput {
        match self {
            Handler::BuiltIn(tools) => {
                // A file tool may make or change a git directory as a
                // command could: the same check follows it.
                let since = crate::confine::gitdirs::mark();
                let mut output = tools.call(&call.name, &call.arguments, context).await;
                if crate::tools::changes_files(&call.name) {
                    let root = context.sandbox.root();
                    output
                        .output
                        .push_str(&crate::confine::gitdirs::checked(root, since));
                }
                output
            }
            Handler::Mcp(mcp) => call_server(mcp, call, context).await,
        }
    }
}

/// Calls an MCP server's tool, with the check after it that a command
/// gets (a server runs as confined as one).
async fn call_server(
    mcp: &Arc<crate::mcp::Mcp>,
    call: &ToolCall,
    context: &ToolContext,
) -> ToolOutput {
    match crate::tools::parse_argument_text(&call.arguments) {
        Ok(arguments) => {
            let after = crate::confine::after::After::start(
                &context.sandbox,
                context.shell.confinement(false),
                context.shell.records(),
                &|record| context.running.pending(record),
                &context.late,
            );
            let mut output = mcp.call(&call.name, arguments, &context.cancel).await;
            output.output.push_str(&after.finish());
            output
        }
        Err(reason) => ToolOutput::error(format!(
            "The arguments for `{}` are not valid JSON ({reason}); send a JSON object",
            call.name
        )),
    }
}
