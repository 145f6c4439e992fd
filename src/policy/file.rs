//! Policy keys as written in files: `permission` turned into rules, the
//! `dangerous` section, and the managed policy file.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::{Action, ExtraFile, Rule, Source};

/// Turns a `permission` value written in `source` into rules, in file
/// order; the error names the key but not the file.
pub fn rules_from(value: &Value, source: &Source) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    let action = |value: &Value, key: &str| -> Result<Action, String> {
        value
            .as_str()
            .and_then(Action::parse)
            .ok_or_else(|| format!("`{key}` must be \"allow\", \"ask\" or \"deny\", found {value}"))
    };
    match value {
        Value::String(_) => rules.push(Rule {
            permission: "*".to_owned(),
            pattern: "*".to_owned(),
            action: action(value, "permission")?,
            source: source.clone(),
            key: "permission".to_owned(),
        }),
        Value::Object(keys) => {
            for (key, value) in keys {
                match value {
                    Value::Object(patterns) => {
                        for (pattern, value) in patterns {
                            rules.push(Rule {
                                permission: key.clone(),
                                pattern: pattern.clone(),
                                action: action(value, &format!("permission.{key}[\"{pattern}\"]"))?,
                                source: source.clone(),
                                key: format!("permission.{key}[\"{pattern}\"]"),
                            });
                        }
                    }
                    other => rules.push(Rule {
                        permission: key.clone(),
                        pattern: "*".to_owned(),
                        action: action(other, &format!("permission.{key}"))?,
                        source: source.clone(),
                        key: format!("permission.{key}"),
                    }),
                }
            }
        }
        other => {
            return Err(format!(
                "`permission` must be an action or an object, found {other}"
            ));
        }
    }
    Ok(rules)
}

/// A problem loading the policy.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The managed policy file exists but cannot be read or is invalid.
    #[error("The managed policy `{path}` is invalid{}: {message}", position(*.line, *.column))]
    Managed {
        /// The file.
        path: PathBuf,
        /// The line, from 1, when known.
        line: Option<usize>,
        /// The column, from 1, when known.
        column: Option<usize>,
        /// What went wrong, in words.
        message: String,
    },
    /// A rule cannot be used (a bad regex, an empty pattern).
    #[error("{0}")]
    Rule(String),
}

fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(" at line {line}, column {column}"),
        _ => String::new(),
    }
}

/// The keys a managed policy file may hold.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManagedFile {
    #[serde(rename = "$schema")]
    #[expect(dead_code, reason = "allowed so editors can validate; not read")]
    schema: Option<String>,
    permission: Option<PermissionValue>,
    dangerous: Option<DangerousValue>,
    commands: Option<Value>,
}

/// What a managed policy file holds once read.
pub struct Managed {
    /// Its `permission` rules.
    pub rules: Vec<Rule>,
    /// Its `dangerous.extra` entries.
    pub extra: Vec<ExtraFile>,
    /// Programs the administrators vouch for.
    pub commands: Option<Value>,
}

/// Reads the managed policy: `None` when the file does not exist; its
/// rules and extra dangerous entries otherwise. Any problem is an error
/// with the file's position, so offcode never runs without it.
pub fn read_managed(path: &Path) -> Result<Option<Managed>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(Error::Managed {
                path: path.to_path_buf(),
                line: None,
                column: None,
                message: format!("cannot be read: {error}"),
            });
        }
    };
    // An empty file holds no rules, as `{}` would.
    let text = if text.trim().is_empty() { "{}" } else { &text };
    let file: ManagedFile = json5::from_str(text).map_err(|e| {
        let position = e.position();
        let message = e.to_string();
        let message = match message.rfind(" at line ") {
            Some(at) if position.is_some() => message[..at].to_owned(),
            _ => message,
        };
        Error::Managed {
            path: path.to_path_buf(),
            line: position.map(|p| p.line + 1),
            column: position.map(|p| p.column + 1),
            message,
        }
    })?;
    let source = Source::Managed(path.to_path_buf());
    let rules = match &file.permission {
        // Validated while parsing, so this cannot fail.
        Some(permission) => {
            rules_from(&permission.0, &source).map_err(|e| Error::Rule(format!("{source}: {e}")))?
        }
        None => Vec::new(),
    };
    let extra = file.dangerous.map(|d| d.extra).unwrap_or_default();
    Ok(Some(Managed {
        rules,
        extra,
        commands: file.commands,
    }))
}

/// `permission` as written: validated (with positions) by json5.
#[derive(Debug)]
pub struct PermissionValue(pub Value);

impl<'de> Deserialize<'de> for PermissionValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Shape {
            One(String),
            Keys(serde_json::Map<String, Value>),
        }
        let shape = Shape::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "expected \"allow\", \"ask\", \"deny\" or an object of permission keys",
            )
        })?;
        let value = match shape {
            Shape::One(text) => Value::String(text),
            Shape::Keys(map) => Value::Object(map),
        };
        rules_from(&value, &Source::Unmatched)
            .map(|_| Self(value))
            .map_err(serde::de::Error::custom)
    }
}

/// `dangerous` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DangerousValue {
    /// Rules added to the dangerous class.
    #[serde(default)]
    pub extra: Vec<ExtraFile>,
}

impl schemars::JsonSchema for PermissionValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Permission".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An action for every tool, or per tool an action, or per tool patterns with their action (docs/permissions.md)",
                        "oneOf": [
                {"enum": ["allow", "ask", "deny"]},
                {
                    "type": "object",
                    "additionalProperties": {
                        "oneOf": [
                            {"enum": ["allow", "ask", "deny"]},
                            {"type": "object", "additionalProperties": {"enum": ["allow", "ask", "deny"]}}
                        ]
                    }
                }
            ]
        })
    }
}

impl schemars::JsonSchema for DangerousValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Dangerous".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Patterns and rules added to the dangerous-command class (docs/permissions.md)",
            "type": "object",
            "properties": {
                "extra": {
                    "type": "array",
                    "items": {"oneOf": [{"type": "string"}, {"type": "object"}]}
                }
            },
            "additionalProperties": false
        })
    }
}
