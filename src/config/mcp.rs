//! The `mcp` config key in `OpenCode`'s shape, so a user's block works
//! unchanged:
//!
//! ```jsonc
//! "mcp": {
//!   "memory": { "type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-memory"],
//!               "environment": { "MEMORY_FILE_PATH": "/data/memory.json" }, "enabled": true, "timeout": 5000 }
//! }
//! ```
//!
//! Also read: `timeout_ms` for `timeout`, Claude's `command` + `args` +
//! `env`, and offcode's `confine: false` (run the server outside the
//! sandbox). Remote servers (`"type": "remote"`) are accepted and left
//! off: offcode runs where there is no network to reach them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How long `initialize` and `tools/list` may take when the config does
/// not say (`OpenCode`'s default).
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// `local` (a program speaking MCP on stdio) or `remote`.
    #[serde(rename = "type", default)]
    pub kind: Kind,
    /// The program and its arguments.
    #[serde(default, deserialize_with = "command_words")]
    #[schemars(with = "CommandWords")]
    pub command: Vec<String>,
    /// More arguments (Claude's shape).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for the server.
    #[serde(default, alias = "env", skip_serializing_if = "BTreeMap::is_empty")]
    pub environment: BTreeMap<String, String>,
    /// Whether to start it.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Time `initialize` and `tools/list` may take, in milliseconds.
    #[serde(default, alias = "timeout_ms", skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Run the server confined like a shell command (the default).
    #[serde(default = "yes")]
    pub confine: bool,
    /// A remote server's address (not used here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A remote server's headers (not used here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Value>,
    /// A remote server's OAuth settings (not used here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<Value>,
}

/// Where a server runs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A local program on stdio.
    #[default]
    Local,
    /// A server reached over HTTP.
    Remote,
}

/// A server's command as the schema shows it: a list of words, or one
/// line split at spaces.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[expect(dead_code, reason = "only describes the shape for the schema")]
enum CommandWords {
    List(Vec<String>),
    Line(String),
}

fn yes() -> bool {
    true
}

/// `["npx", "-y", "pkg"]`, or one string split at spaces.
fn command_words<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Words {
        List(Vec<String>),
        Line(String),
    }
    Ok(match Words::deserialize(d)? {
        Words::List(words) => words,
        Words::Line(line) => line.split_whitespace().map(str::to_owned).collect(),
    })
}

impl ServerConfig {
    /// The program and all its arguments.
    pub fn argv(&self) -> Vec<String> {
        self.command.iter().chain(&self.args).cloned().collect()
    }

    /// The start-up timeout.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout.unwrap_or(DEFAULT_TIMEOUT_MS)
    }
}

/// What MCP may cost a request and a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// MCP tools offered to the model at most (over all servers).
    pub tools: usize,
    /// A tool whose definition (name, description, schema as JSON) is
    /// longer than this many bytes is left out.
    pub schema_bytes: usize,
    /// A result longer than this many bytes is cut, with a marker.
    pub result_bytes: usize,
    /// Time one tool call may take, in milliseconds.
    pub call_timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            tools: 64,
            schema_bytes: 8_192,
            result_bytes: 32_768,
            call_timeout_ms: 300_000,
        }
    }
}

/// Checks one config file's `mcp` value: the name of the server at fault
/// and what is wrong with it.
///
/// A server `defined` by an earlier file (with its command) may be changed
/// field by field (`{"enabled": false}` for one project); a new one that
/// is enabled needs its `command`.
pub fn check(
    value: &Value,
    defined: &dyn Fn(&str) -> bool,
) -> Result<(), (Option<String>, String)> {
    let Value::Object(servers) = value else {
        return Err((
            None,
            "`mcp` must be an object of servers by name".to_owned(),
        ));
    };
    for (name, server) in servers {
        let fault = |message: String| (Some(name.clone()), message);
        if name.is_empty() || name.chars().any(|c| c.is_control() || c == '/') {
            return Err(fault(format!("`{name}` is not a usable server name")));
        }
        let server: ServerConfig = serde_json::from_value(server.clone())
            .map_err(|e| fault(format!("server `{name}`: {e}")))?;
        if server.kind == Kind::Local
            && server.command.is_empty()
            && server.enabled
            && !defined(name)
        {
            return Err(fault(format!(
                "server `{name}`: a local server needs `command`, e.g. [\"npx\", \"-y\", \"pkg\"]"
            )));
        }
        if server.timeout == Some(0) {
            return Err(fault(format!(
                "server `{name}`: `timeout` must be at least 1 ms"
            )));
        }
    }
    Ok(())
}

/// Checks a file's `mcp` block beyond its fields' types (a local server
/// needs a command...), naming the server's line and column.
pub(super) fn check_layer(
    layer: &serde_json::Map<String, Value>,
    before: &serde_json::Map<String, Value>,
    text: &str,
    path: &std::path::Path,
) -> Result<(), super::Error> {
    let Some(mcp) = layer.get("mcp") else {
        return Ok(());
    };
    let defined = |name: &str| {
        before
            .get("mcp")
            .and_then(|servers| servers.get(name))
            .and_then(|server| server.get("command"))
            .is_some()
    };
    check(mcp, &defined).map_err(|(server, message)| {
        let (line, column) = server
            .as_deref()
            .and_then(|name| crate::jsonc::locate_key(text, &["mcp", name]))
            .map_or((None, None), |(l, c)| (Some(l), Some(c)));
        super::Error::Invalid {
            path: path.to_path_buf(),
            line,
            column,
            message: format!("`mcp`: {message}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn open_code_s_block_reads_unchanged() {
        let block = json!({
            "memory": {"type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-memory"],
                       "environment": {"MEMORY_FILE_PATH": "/data/m.json"}, "enabled": true, "timeout": 5000},
            "docs": {"type": "remote", "url": "https://example.com/mcp", "headers": {"Authorization": "x"}},
            "claude": {"command": "node", "args": ["server.js"], "env": {"A": "1"}, "timeout_ms": 100}
        });
        assert_eq!(check(&block, &|_| false), Ok(()));
        let servers: BTreeMap<String, ServerConfig> = serde_json::from_value(block).unwrap();
        assert_eq!(
            servers["memory"].argv(),
            ["npx", "-y", "@modelcontextprotocol/server-memory"]
        );
        assert_eq!(servers["memory"].timeout_ms(), 5000);
        assert!(servers["memory"].confine);
        assert_eq!(servers["docs"].kind, Kind::Remote);
        assert_eq!(servers["claude"].argv(), ["node", "server.js"]);
        assert_eq!(servers["claude"].environment["A"], "1");
        assert_eq!(servers["claude"].timeout_ms(), 100);
    }

    #[test]
    fn a_bad_server_is_named_with_what_is_wrong() {
        let (name, message) = check(&json!({"fs": {"type": "local"}}), &|_| false).unwrap_err();
        assert_eq!(name.as_deref(), Some("fs"));
        assert!(message.contains("needs `command`"), "{message}");
        let (_, message) = check(&json!({"fs": {"command": ["x"], "enabeld": true}}), &|_| {
            false
        })
        .unwrap_err();
        assert!(message.contains("unknown field `enabeld`"), "{message}");
        let (_, message) = check(&json!({"fs": {"command": ["x"], "type": "sse"}}), &|_| {
            false
        })
        .unwrap_err();
        assert!(message.contains("unknown variant `sse`"), "{message}");
        assert!(check(&json!(["x"]), &|_| false).unwrap_err().0.is_none());
        // A server an earlier file defined may be changed field by field,
        // and any may be turned off.
        assert_eq!(
            check(&json!({"fs": {"confine": false}}), &|n| n == "fs"),
            Ok(())
        );
        assert_eq!(
            check(&json!({"new": {"enabled": false}}), &|_| false),
            Ok(())
        );
    }
}
