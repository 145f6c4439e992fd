//! What a call's name names, resolved in one place: one of offcode's tools,
//! a tool an MCP server offers now, `task` (a subagent), or nothing.

use super::state::AgentState;

/// The kind of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// One of offcode's own tools.
    BuiltIn,
    /// A tool an MCP server offers now; `read_only` as its server marks it.
    Mcp {
        /// The server says the tool changes nothing.
        read_only: bool,
    },
    /// `task`: starts a subagent.
    Task,
    /// No tool by that name.
    Unknown,
}

impl AgentState {
    /// What `name` names. offcode's tools come first; MCP tools are named
    /// `SERVER_TOOL`, so they cannot take a built-in's name.
    pub(super) fn kind(&self, name: &str) -> Kind {
        if self.tools.get(name).is_some() {
            return Kind::BuiltIn;
        }
        if name == super::task::NAME {
            return Kind::Task;
        }
        match &self.mcp {
            Some(mcp) if mcp.offers(name) => Kind::Mcp {
                read_only: mcp.is_read_only(name),
            },
            _ => Kind::Unknown,
        }
    }
}
