//! `OpenCode`'s keys in a pasted config: the ones with no meaning offline
//! or that only style `OpenCode`'s UI are accepted and named once as
//! ignored; the ones that change behaviour are read as offcode's own
//! (`tools`, `snapshot`, `default_agent`, `disabled_providers`,
//! `enabled_providers`, `compaction.reserved`) or refused with what to
//! use instead (`plugin`, `command`, `mode`).
#![allow(
    clippy::doc_markdown,
    reason = "the types' docs are the schema's descriptions, shown to people in their editor"
)]

use serde::{Deserialize, Deserializer, de};
use serde_json::{Map, Value, json};

/// Top-level keys of `OpenCode`'s config accepted and ignored, with why.
pub const IGNORED: &[(&str, &str)] = &[
    ("theme", "UI styling"),
    ("keybinds", "UI styling"),
    ("tui", "UI styling"),
    ("layout", "UI styling"),
    ("username", "UI styling"),
    ("autoupdate", "no updates offline"),
    ("share", "no sharing offline"),
    ("autoshare", "no sharing offline"),
    ("server", "no server mode"),
    ("logLevel", "offcode's log is `log`"),
    ("watcher", "no file watcher"),
    ("formatter", "no formatters: `validate` checks the work"),
    ("lsp", "no language servers: `validate` checks the work"),
    ("experimental", "OpenCode's experiments"),
    ("enterprise", "OpenCode's enterprise settings"),
];

/// Top-level keys of `OpenCode`'s config read here that offcode's own
/// keys do not name: the ignored ones, and those read or refused.
pub fn keys() -> Vec<&'static str> {
    let mut keys = vec![
        "tools",
        "snapshot",
        "disabled_providers",
        "enabled_providers",
        "plugin",
        "command",
        "mode",
    ];
    keys.extend(IGNORED.iter().map(|(key, _)| *key));
    keys
}

/// Agent keys that only style `OpenCode`'s UI.
pub const IGNORED_AGENT_KEYS: &[&str] = &["color", "hidden"];

/// A key accepted as anything and ignored.
#[derive(Debug)]
pub struct Ignored;

impl<'de> Deserialize<'de> for Ignored {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer)?;
        Ok(Self)
    }
}

impl schemars::JsonSchema for Ignored {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Ignored".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "description": "OpenCode's; accepted and ignored by offcode" })
    }
}

/// `OpenCode`'s `plugin`: refused where it is written.
#[derive(Debug)]
pub struct NoPlugin;

/// `OpenCode`'s `command`.
#[derive(Debug)]
pub struct NoCommand;

/// `OpenCode`'s `mode` (agents before they were `agent`).
#[derive(Debug)]
pub struct NoMode;

macro_rules! refused {
    ($type:ty, $message:expr) => {
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Value::deserialize(deserializer)?;
                Err(de::Error::custom($message))
            }
        }

        impl schemars::JsonSchema for $type {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($type).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "not": {}, "description": $message })
            }
        }
    };
}

refused!(
    NoPlugin,
    "offcode runs no OpenCode plugins (JavaScript); remove `plugin`: MCP servers (`mcp`) add tools"
);
refused!(
    NoCommand,
    "offcode has no custom commands; remove `command` and put reusable instructions in a skill (`.offcode/skills/NAME/SKILL.md`)"
);
refused!(
    NoMode,
    "`mode` is OpenCode's old name for agents; rename it to `agent` (docs/agents.md)"
);

/// Reads `OpenCode`'s keys out of one file's `layer`: the ignored ones
/// are taken out and returned (for a note), the ones with an offcode
/// meaning are turned into offcode's keys.
pub fn adapt(layer: &mut Map<String, Value>) -> Vec<String> {
    let mut ignored: Vec<String> = IGNORED
        .iter()
        .filter(|(key, _)| layer.remove(*key).is_some())
        .map(|(key, why)| format!("`{key}` ({why})"))
        .collect();
    // `tools: { "bash": false }` (deprecated, still read by OpenCode):
    // the tool is denied, as OpenCode's migration does.
    if let Some(Value::Object(tools)) = layer.remove("tools") {
        let permission = layer
            .entry("permission")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::String(all) = permission {
            *permission = json!({ "*": all.clone() });
        }
        if let Value::Object(rules) = permission {
            for (tool, on) in tools {
                if on == Value::Bool(false) {
                    rules.entry(tool).or_insert_with(|| json!("deny"));
                }
            }
        }
    }
    if let Some(snapshot) = layer.remove("snapshot") {
        let checkpoints = layer.entry("checkpoints").or_insert_with(|| json!({}));
        if let Value::Object(checkpoints) = checkpoints {
            checkpoints.entry("enabled").or_insert(snapshot);
        }
    }
    if let Some(Value::Object(compaction)) = layer.get_mut("compaction")
        && let Some(reserved) = compaction.remove("reserved")
    {
        compaction.entry("reserve").or_insert(reserved);
    }
    // Agent keys that only style the UI.
    if let Some(Value::Object(agents)) = layer.get_mut("agent") {
        for (name, definition) in agents {
            if let Value::Object(definition) = definition {
                for key in IGNORED_AGENT_KEYS {
                    if definition.remove(*key).is_some() {
                        ignored.push(format!("agent `{name}`'s `{key}` (UI styling)"));
                    }
                }
            }
        }
    }
    ignored
}

/// `disabled_providers` and `enabled_providers`, applied to the merged
/// `provider` key.
pub fn filter_providers(tree: &mut Map<String, Value>) {
    let names = |key: &str, tree: &mut Map<String, Value>| -> Option<Vec<String>> {
        let list = tree.remove(key)?;
        Some(
            list.as_array()?
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        )
    };
    let disabled = names("disabled_providers", tree).unwrap_or_default();
    let enabled = names("enabled_providers", tree);
    if let Some(Value::Object(providers)) = tree.get_mut("provider") {
        providers.retain(|name, _| {
            !disabled.contains(name) && enabled.as_ref().is_none_or(|e| e.contains(name))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencode_keys_are_ignored_named_or_read_as_offcodes() {
        let mut layer = json!({
            "theme": "opencode", "autoupdate": false, "share": "disabled",
            "tools": {"bash": false, "read": true, "webfetch": false},
            "permission": {"edit": "ask"},
            "snapshot": false,
            "compaction": {"reserved": 8000, "auto": true},
            "agent": {"review": {"color": "#ff0000", "hidden": true, "prompt": "p"}}
        })
        .as_object()
        .unwrap()
        .clone();
        let ignored = adapt(&mut layer);
        assert_eq!(
            ignored,
            [
                "`theme` (UI styling)",
                "`autoupdate` (no updates offline)",
                "`share` (no sharing offline)",
                "agent `review`'s `color` (UI styling)",
                "agent `review`'s `hidden` (UI styling)",
            ]
        );
        assert_eq!(
            Value::Object(layer),
            json!({
                "permission": {"edit": "ask", "bash": "deny", "webfetch": "deny"},
                "compaction": {"auto": true, "reserve": 8000},
                "agent": {"review": {"prompt": "p"}},
                "checkpoints": {"enabled": false}
            })
        );
    }

    #[test]
    fn disabled_and_enabled_providers_filter_the_merged_providers() {
        let mut tree = json!({
            "provider": {"a": {}, "b": {}, "c": {}},
            "disabled_providers": ["b"],
            "enabled_providers": ["a", "b"]
        })
        .as_object()
        .unwrap()
        .clone();
        filter_providers(&mut tree);
        assert_eq!(Value::Object(tree), json!({"provider": {"a": {}}}));
    }
}
