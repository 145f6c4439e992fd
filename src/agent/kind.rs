//! What a call's name names, resolved in one place: one of offcode's tools,
//! a tool an MCP server offers now, `task` (a subagent), or nothing.

use super::state::AgentState;
use crate::tools::Effect;

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

impl Kind {
    /// What calls of `name`, of this kind, do to the workspace: a
    /// built-in's own effect; `task` is judged by what its subagent's
    /// calls do; an MCP tool, or one that is no tool, may do anything a
    /// command could.
    pub(super) fn effect(self, name: &str) -> Effect {
        match self {
            Kind::BuiltIn => crate::tools::effect(name),
            Kind::Task => Effect::None,
            Kind::Mcp { .. } | Kind::Unknown => Effect::RunsCommands,
        }
    }
}

impl AgentState {
    /// What calls of `name` do to the workspace, by its kind.
    pub(super) fn effect(&self, name: &str) -> Effect {
        self.kind(name).effect(name)
    }

    /// `call` as the turn's bookkeeping keeps it, with `text`.
    pub(super) fn noted(
        &self,
        call: &crate::session::ToolCall,
        text: &str,
    ) -> super::finish::Noted {
        super::finish::Noted {
            name: call.name.clone(),
            effect: self.effect(&call.name),
            text: text.to_owned(),
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_effect_comes_from_its_kind_not_its_name() {
        assert_eq!(Kind::BuiltIn.effect("read"), Effect::ReadsFiles);
        assert_eq!(Kind::BuiltIn.effect("write"), Effect::ChangesFiles);
        // `task` is judged by its subagent's calls: it makes no later call
        // wait, and owes nothing itself.
        assert_eq!(Kind::Task.effect("task"), Effect::None);
        // A server's tool named like a built-in would be `SERVER_read`; by
        // its kind it may do anything a command could.
        let mcp = Kind::Mcp { read_only: true };
        assert_eq!(mcp.effect("files_read"), Effect::RunsCommands);
        assert_eq!(Kind::Unknown.effect("task"), Effect::RunsCommands);
    }
}
