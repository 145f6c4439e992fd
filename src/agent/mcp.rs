//! The core's side of MCP: the servers' tools join the agent's before each
//! step (when they changed), the first requests wait for servers still
//! starting, and what happened to servers is recorded in the session and
//! told to the front end.

use std::sync::Arc;

use super::state::AgentState;
use crate::mcp::Mcp;
use crate::policy::{Action, Decision};
use crate::protocol::{EventMsg, Mandate, SubmissionId};
use crate::session::{EntryBody, ToolCall};

/// Waits for news from the servers; never, for a subagent's core (its
/// parent's takes them) or without servers.
pub(super) async fn mcp_changed(mcp: Option<&Arc<Mcp>>, depth: u32) {
    match mcp {
        Some(mcp) if depth == 0 => mcp.changed().await,
        _ => std::future::pending().await,
    }
}

impl AgentState {
    /// Before a step: servers still starting are waited for (each start
    /// is bounded by its own timeout), then news is taken in.
    pub(super) async fn mcp_step(&mut self, id: SubmissionId) {
        let Some(mcp) = self.mcp.clone() else {
            return;
        };
        mcp.settle().await;
        self.mcp_news(id);
    }

    /// Records and tells what happened to servers; offers their tools as
    /// they are now.
    pub(super) fn mcp_news(&mut self, id: SubmissionId) {
        let Some(mcp) = self.mcp.clone() else {
            return;
        };
        if self.depth == 0 {
            for event in mcp.take_events() {
                let _ = self.record(
                    id,
                    EntryBody::Mcp {
                        server: event.server.clone(),
                        state: event.state,
                        detail: event.detail.clone(),
                    },
                );
                self.emit(id, EventMsg::Mcp(event));
            }
        }
        let generation = mcp.generation();
        if generation != self.mcp_generation {
            self.mcp_generation = generation;
            let profile = self.agent.clone();
            let tools = self.offered_tools(&profile);
            let compact = self.compact();
            self.request.set_agent(&profile.prompt, tools, compact);
        }
    }

    /// Answers `/context`: what a request carries now, the MCP servers'
    /// tools apart from offcode's, and the MCP tools the budget left out.
    pub(super) async fn report_context(&mut self, id: SubmissionId) {
        let limit = self.context_limit().await;
        let last_prompt = self.budget.last_prompt();
        let history = super::compact::request_history(
            &self.session.messages,
            self.session.compaction.as_ref(),
        );
        // Tools count however they travel (schemas, or described in the
        // prompt in text mode).
        let mut report = crate::context::report(
            self.request.context(),
            self.request.tools(),
            &history,
            &self.session.id,
            limit,
            last_prompt,
        );
        if let Some(mcp) = &self.mcp {
            crate::mcp::context_parts(&mut report, &mcp.reports(), self.request.tools());
        }
        self.emit(id, EventMsg::ContextReport(report));
    }

    /// A call to an MCP server that should run confined but cannot (the
    /// kernel has no Landlock) asks a person each time, as a command does;
    /// no rule, session answer or `--yes` answers it.
    pub(super) fn mcp_unconfined(&self, call: &ToolCall, decision: &mut Decision) {
        let Some(mcp) = &self.mcp else {
            return;
        };
        let crate::confine::Status::Unavailable { reason } = self.shell.status() else {
            return;
        };
        if decision.action == Action::Deny || !mcp.wants_confinement(&call.name) {
            return;
        }
        decision.action = Action::Ask;
        decision.mandate = Some(Mandate::NoConfinement);
        decision.session_rules.clear();
        decision.rule =
            format!("MCP servers cannot be confined here ({reason}), so each of their calls asks");
        decision.confinement = Some(self.shell.status().describe());
    }

    /// Whether the agent may call `name`: its `tools` map offers it, an
    /// agent that only reads gets only MCP tools marked read-only, and the
    /// requests list it (the compact profile leaves `task`, `patch` and the
    /// todo tools out: an outside tester's small model still ran `task`).
    pub(super) fn offered(&self, name: &str) -> bool {
        let changes_things = self.agent.reads_only()
            && self.kind(name) == super::kind::Kind::Mcp { read_only: false };
        let listed = self
            .request
            .tools()
            .iter()
            .any(|spec| spec.function.name == name);
        self.agent.offers(name) && !changes_things && listed
    }

    /// Answers `/mcp`.
    pub(super) fn list_mcp(&mut self, id: SubmissionId) {
        let servers = self.mcp.as_ref().map(|m| m.reports()).unwrap_or_default();
        self.emit(id, EventMsg::McpList { servers });
    }
}
