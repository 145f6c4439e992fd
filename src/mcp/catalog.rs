//! The servers' tools as the model sees them: `SERVER_TOOL` names, in
//! config order, within the budget; what is left out, and why.

use std::sync::Arc;

use super::{Mcp, McpState, RemoteTool, lock};
use crate::client::wire::{FunctionSpec, ToolSpec};

/// A tool name the `OpenAI` API takes: `^[a-zA-Z0-9_-]{1,64}$`.
const LONGEST_NAME: usize = 64;

/// A tool offered to the model, or left out and why.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) exposed: String,
    pub(super) server: usize,
    pub(super) tool: RemoteTool,
    pub(super) bytes: usize,
    pub(super) left_out: Option<String>,
}

impl Mcp {
    /// The tools of running servers, named and budgeted: worked out again
    /// only when the generation moved (every state or tool change moves
    /// it), so the checks made on every call stay cheap.
    pub(super) fn catalog(&self) -> Arc<Vec<Entry>> {
        let generation = self.generation();
        let mut cached = lock(&self.catalogued);
        match &*cached {
            Some((at, entries)) if *at == generation => Arc::clone(entries),
            _ => {
                let entries = Arc::new(self.budgeted());
                *cached = Some((generation, Arc::clone(&entries)));
                entries
            }
        }
    }

    /// The entry of the MCP tool the model knows as `name`, offered or
    /// left out.
    pub(super) fn entry(&self, name: &str) -> Option<Entry> {
        self.catalog().iter().find(|e| e.exposed == name).cloned()
    }

    fn budgeted(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut offered = 0;
        for (index, server) in self.servers.iter().enumerate() {
            let tools = {
                let inner = lock(&server.inner);
                if !matches!(inner.state, McpState::Ready | McpState::Restarting) {
                    continue;
                }
                inner.tools.clone()
            };
            for tool in tools {
                let taken: Vec<&str> = entries.iter().map(|e| e.exposed.as_str()).collect();
                let exposed = unique(&exposed_name(&server.name, &tool.name), &taken);
                let bytes = serde_json::to_string(&spec(&exposed, &tool)).map_or(0, |s| s.len());
                let left_out = if bytes > self.limits.schema_bytes {
                    Some(format!(
                        "its definition is {bytes} bytes, over `mcp_limits.schema_bytes` ({})",
                        self.limits.schema_bytes
                    ))
                } else if offered >= self.limits.tools {
                    Some(format!(
                        "over `mcp_limits.tools` ({} MCP tools at most)",
                        self.limits.tools
                    ))
                } else {
                    offered += 1;
                    None
                };
                entries.push(Entry {
                    exposed,
                    server: index,
                    tool,
                    bytes,
                    left_out,
                });
            }
        }
        entries
    }
}

pub(super) fn spec(exposed: &str, tool: &RemoteTool) -> ToolSpec {
    ToolSpec {
        kind: "function",
        function: FunctionSpec {
            name: exposed.to_owned(),
            description: tool.description.clone(),
            parameters: tool.schema.clone(),
        },
    }
}

/// `SERVER_TOOL`, with characters a tool name cannot have as `_`, at most
/// [`LONGEST_NAME`] long.
pub(super) fn exposed_name(server: &str, tool: &str) -> String {
    format!("{server}_{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(LONGEST_NAME)
        .collect()
}

/// `name`, or `name_2`, `name_3`... when it is `taken`.
fn unique(name: &str, taken: &[&str]) -> String {
    let mut candidate = name.to_owned();
    let mut n = 2;
    while taken.contains(&candidate.as_str()) {
        let suffix = format!("_{n}");
        let keep = name.len().min(LONGEST_NAME - suffix.len());
        candidate = format!("{}{suffix}", &name[..keep]);
        n += 1;
    }
    candidate
}

/// The one line shown for a result.
pub(super) fn summary(text: &str, failed: bool) -> String {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let first: String = first.chars().take(80).collect();
    let lines = text.lines().count();
    let size = crate::protocol::format_size(u64::try_from(text.len()).unwrap_or(u64::MAX));
    match (failed, lines) {
        (true, _) => format!("failed: {first}"),
        (false, 0 | 1) => first,
        // A line like `[` or `{` says nothing: JSON, most likely.
        (false, n) if first.chars().count() < 3 => format!("{n} lines, {size}"),
        (false, n) => format!("{first} … ({n} lines)"),
    }
}

/// Splits the MCP servers' tools out of `tool schemas` in `report`, a part
/// per server, and lists what the budget left out.
pub fn context_parts(
    report: &mut crate::protocol::ContextReport,
    servers: &[crate::protocol::McpServerReport],
    offered: &[crate::client::wire::ToolSpec],
) {
    use crate::protocol::ContextPart;
    let mut parts = Vec::new();
    let (mut mcp_tools, mut mcp_tokens) = (0, 0);
    let mut left_out = Vec::new();
    for server in servers {
        let specs: Vec<_> = offered
            .iter()
            .filter(|spec| server.tools.iter().any(|t| t.name == spec.function.name))
            .collect();
        left_out.extend(
            server
                .tools
                .iter()
                .filter(|t| t.left_out.is_some())
                .map(|t| t.name.as_str()),
        );
        if specs.is_empty() {
            continue;
        }
        let tokens =
            crate::context::estimate_tokens(&serde_json::to_string(&specs).unwrap_or_default());
        mcp_tools += specs.len();
        mcp_tokens += tokens;
        parts.push(ContextPart {
            name: format!("MCP {}", server.name),
            source: crate::protocol::count(specs.len(), "tool"),
            tokens,
        });
    }
    if let Some(schemas) = report.parts.iter_mut().find(|p| p.name == "tool schemas") {
        schemas.tokens = schemas.tokens.saturating_sub(mcp_tokens);
        schemas.source = format!("{} tools", offered.len() - mcp_tools);
    }
    if !left_out.is_empty() {
        parts.push(ContextPart {
            name: "MCP left out".to_owned(),
            source: format!(
                "{} (over the budget; `offcode mcp list` says why)",
                left_out.join(", ")
            ),
            tokens: 0,
        });
    }
    // Right after offcode's own tools.
    let at = report
        .parts
        .iter()
        .position(|p| p.name == "tool schemas")
        .map_or(report.parts.len(), |at| at + 1);
    report.parts.splice(at..at, parts);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_summed_up_by_its_first_line_unless_that_says_nothing() {
        assert_eq!(summary("echo: hi", false), "echo: hi");
        assert_eq!(summary("one\ntwo\n", false), "one … (2 lines)");
        assert_eq!(summary("[\n  1,\n  2\n]", false), "4 lines, 12 B");
        assert_eq!(
            summary("Error: it broke\nmore", true),
            "failed: Error: it broke"
        );
    }

    #[test]
    fn tool_names_are_sanitised_bounded_and_unique() {
        assert_eq!(
            exposed_name("memory", "create_entities"),
            "memory_create_entities"
        );
        assert_eq!(
            exposed_name("my.server", "read file/v2"),
            "my_server_read_file_v2"
        );
        assert_eq!(exposed_name("s", &"x".repeat(100)).len(), LONGEST_NAME);
        let taken = ["a_b", "a_b_2"];
        assert_eq!(unique("a_b", &taken), "a_b_3");
        assert_eq!(unique("c", &taken), "c");
        let long = "y".repeat(64);
        assert_eq!(unique(&long, &[long.as_str()]).len(), 64);
    }
}
