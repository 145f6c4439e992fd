//! What the view shows beside the conversation: validation runs, agent
//! switches and lists, and the subagents' work with their rows for
//! `/agents`.

use std::fmt::Write as _;

use super::View;
use crate::protocol::EventMsg;
use crate::ui::render::{self, Line, Lines, Role};

/// One subagent, for `/agents`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentRow {
    /// Its session's id (`/inspect` takes it).
    pub session_id: String,
    /// The agent.
    pub agent: String,
    /// `running`, `done`, `not done`, `aborted`, `failed`.
    pub state: String,
    /// Model requests so far.
    pub steps: usize,
    /// Tokens of its last request.
    pub tokens: u64,
    /// Calls it made.
    pub calls: usize,
    /// Calls of it that failed.
    pub failed: usize,
    /// Its latest lines, shown under the `task` line while it works and
    /// folded into one line when it ends.
    pub lines: Vec<Line>,
}

/// A running subagent's lines shown at once; `/inspect` has them all.
pub const CHILD_LINES: usize = 4;

impl View {
    /// Whether a subagent is at work now.
    pub fn subagent_running(&self) -> bool {
        self.subagents.iter().any(|r| r.state == "running")
    }

    /// The running subagents' latest lines, for the live area.
    pub(super) fn subagent_lines(&self) -> impl Iterator<Item = &Line> {
        self.subagents
            .iter()
            .filter(|r| r.state == "running")
            .flat_map(|r| &r.lines)
    }

    /// A subagent's event: its calls indented under the `task` line while
    /// it works, folded to one line when it ends; its row in `/agents`
    /// kept up to date.
    fn subagent(&mut self, sub: &crate::protocol::SubagentEvent) {
        let known = self
            .subagents
            .iter()
            .position(|r| r.session_id == sub.child_session_id);
        let at = known.unwrap_or_else(|| {
            self.subagents.push(SubagentRow {
                session_id: sub.child_session_id.clone(),
                agent: sub.agent.clone(),
                state: "running".to_owned(),
                steps: 0,
                tokens: 0,
                calls: 0,
                failed: 0,
                lines: Vec::new(),
            });
            self.subagents.len() - 1
        });
        let row = &mut self.subagents[at];
        let width = self.width.saturating_sub(4);
        let line = match sub.event.as_ref() {
            EventMsg::AssistantMessage(_) => {
                row.steps += 1;
                None
            }
            EventMsg::TokenUsage(usage) => {
                row.tokens = usage.total_tokens;
                None
            }
            EventMsg::ToolCallBegin(call) => {
                row.calls += 1;
                let subject = crate::tools::subject(&call.name, &call.arguments).unwrap_or("");
                Some(
                    Line::new()
                        .with(Role::Dim, format!("  │ {} ", sub.agent))
                        .with(Role::Tool, call.name.clone())
                        .with(Role::Text, "  ")
                        .with(
                            Role::Code,
                            render::truncate(&render::one_line(subject), width),
                        ),
                )
            }
            EventMsg::ToolCallEnd(end) => {
                let (mark, role) = if end.outcome.ok() {
                    ("✓ ", Role::Ok)
                } else {
                    row.failed += 1;
                    ("✗ ", Role::Error)
                };
                Some(
                    Line::new()
                        .with(Role::Dim, "  │   ")
                        .with(role, mark)
                        .with(Role::Dim, render::truncate(&end.summary, width)),
                )
            }
            EventMsg::Warning { message } | EventMsg::Error { message, .. } => {
                Some(Line::new().with(Role::Dim, "  │ ").with(
                    Role::Warning,
                    render::truncate(&render::one_line(message), width),
                ))
            }
            EventMsg::TurnComplete(complete) => {
                complete.status.words().clone_into(&mut row.state);
                let calls = match row.failed {
                    0 => crate::protocol::count(row.calls, "call"),
                    failed => format!(
                        "{}, {failed} failed",
                        crate::protocol::count(row.calls, "call")
                    ),
                };
                let summary = format!(
                    "  └ {} {} · {} · {} · {}",
                    row.agent,
                    row.state,
                    crate::protocol::count(row.steps, "step"),
                    calls,
                    row.session_id
                );
                // A subagent that did not finish keeps its last line (the
                // reason, as a rule) above the summary.
                let last = (complete.status != crate::protocol::TurnStatus::Done)
                    .then(|| row.lines.last().cloned())
                    .flatten();
                row.lines.clear();
                self.end_reasoning();
                self.end_block("PLAN");
                self.committed.extend(last);
                self.commit(Line::new().with(Role::Dim, render::truncate(&summary, width + 4)));
                return;
            }
            _ => None,
        };
        if let Some(line) = line {
            row.lines.push(line);
            if row.lines.len() > CHILD_LINES {
                row.lines.remove(0);
            }
        }
    }

    /// The agent switched or listed; a validation ran; a subagent did
    /// something.
    pub(super) fn agent_event(&mut self, msg: &EventMsg) {
        match msg {
            EventMsg::Subagent(sub) => self.subagent(sub),
            EventMsg::Validation(event) => {
                self.end_reasoning();
                self.end_block("PLAN");
                self.committed.extend(render::validation(event, self.width));
            }
            // The status line says it; a line in the scrollback would land
            // where the editor is being drawn again (Shift+Tab).
            EventMsg::AgentChanged { agent, model } => {
                self.status.agent.clone_from(agent);
                self.status.model.clone_from(model);
            }
            EventMsg::Mcp(event) => self.mcp(event),
            EventMsg::McpList { servers } => {
                self.committed.extend(mcp_list(servers, self.width));
            }
            EventMsg::AgentList { agents } => {
                self.committed
                    .extend(render::agent_list(agents, self.width));
            }
            _ => {}
        }
    }
}

impl View {
    /// Something happened to an MCP server: a line when it starts or
    /// fails, and the status line names it while it is down.
    fn mcp(&mut self, event: &crate::protocol::McpStatusEvent) {
        use crate::protocol::McpState;
        let down = matches!(event.state, McpState::Failed | McpState::Restarting);
        self.status.mcp_down.retain(|name| *name != event.server);
        if down {
            self.status.mcp_down.push(event.server.clone());
        }
        let role = match event.state {
            McpState::Ready => Role::Dim,
            McpState::Failed | McpState::Restarting => Role::Warning,
            _ => return,
        };
        let detail = if event.detail.is_empty() {
            String::new()
        } else {
            format!(": {}", render::one_line(&event.detail))
        };
        let text = format!(
            "MCP server `{}` {}{detail}",
            event.server,
            event.state.words()
        );
        self.end_reasoning();
        self.end_block("PLAN");
        self.commit(Line::new().with(role, render::truncate(&text, self.width)));
    }
}

/// `/mcp` and `offcode mcp list`: each server, its state, command and
/// tools, with what is left out and why.
pub fn mcp_list(servers: &[crate::protocol::McpServerReport], width: usize) -> Vec<Line> {
    use crate::protocol::McpState;
    if servers.is_empty() {
        return vec![Line::new().with(
            Role::Dim,
            render::truncate(
                "No MCP servers are configured: add an `mcp` block to offcode.jsonc (docs/mcp.md).",
                width,
            ),
        )];
    }
    let row = |role: Role, text: &str| Line::new().with(role, render::truncate(text, width));
    let mut lines = Vec::new();
    for server in servers {
        let offered: Vec<_> = server
            .tools
            .iter()
            .filter(|t| t.left_out.is_none())
            .collect();
        let tokens: u64 = offered.iter().map(|t| t.tokens).sum();
        let mut head = format!("MCP {} · {}", server.name, server.state.words());
        if !server.tools.is_empty() || server.state == McpState::Ready {
            let _ = write!(
                head,
                " · {} · {} tokens",
                crate::protocol::count(offered.len(), "tool"),
                crate::protocol::format_tokens(tokens)
            );
        }
        let started = !matches!(server.state, McpState::Disabled | McpState::Unsupported);
        if started {
            head.push_str(if server.confined {
                " · confined"
            } else {
                " · not confined"
            });
        }
        lines.push(row(Role::Tool, &head));
        if started {
            lines.push(row(Role::Dim, &format!("    command: {}", server.command)));
        }
        if server.state != McpState::Ready && !server.detail.is_empty() {
            let detail = format!("    {}", render::one_line(&server.detail));
            lines.push(row(Role::Dim, &detail));
        }
        for tool in &server.tools {
            lines.push(match &tool.left_out {
                None if tool.read_only => row(
                    Role::Dim,
                    &format!("    {}  {} tokens · read-only", tool.name, tool.tokens),
                ),
                None => row(
                    Role::Dim,
                    &format!("    {}  {} tokens", tool.name, tool.tokens),
                ),
                Some(why) => row(
                    Role::Warning,
                    &format!("    {}  left out: {why}", tool.name),
                ),
            });
        }
    }
    lines
}
