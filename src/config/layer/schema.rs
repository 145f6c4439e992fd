//! The JSON schema of a config file (`offcode config schema`), made from
//! the type every file is checked against.

use serde_json::{Value, json};

/// The JSON schema of a config file, for editors (`"$schema"` in a file)
/// and `offcode config schema`: made from `FileLayer`, the type every
/// file is checked against, so the two cannot disagree.
pub fn schema() -> Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(super::FileLayer)).unwrap_or_default();
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".to_owned(), json!("offcode.jsonc"));
        object.insert(
            "description".to_owned(),
            json!("offcode's configuration (docs/configuration.md)"),
        );
    }
    // The other names serde accepts for an MCP server's keys.
    if let Some(properties) = schema.pointer_mut("/$defs/ServerConfig/properties")
        && let Some(properties) = properties.as_object_mut()
    {
        for (alias, name) in [("env", "environment"), ("timeout_ms", "timeout")] {
            if let Some(same) = properties.get(name).cloned() {
                properties.insert(alias.to_owned(), same);
            }
        }
    }
    schema
}

/// What the checked newtypes look like in the schema.
mod shapes {
    use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
    use std::borrow::Cow;

    use super::super::{HttpUrl, NonEmpty, Positive, Ranged, SamplingLayer, SkillName};

    impl JsonSchema for SkillName {
        fn schema_name() -> Cow<'static, str> {
            "SkillName".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({"type": "string", "pattern": "^[^/\\\\]+$", "description": "A folder name under ~/.config/offcode/skills/"})
        }
    }

    impl JsonSchema for HttpUrl {
        fn schema_name() -> Cow<'static, str> {
            "HttpUrl".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({"type": "string", "pattern": "^https?://[^/]", "description": "An http:// or https:// URL with a host"})
        }
    }

    impl JsonSchema for NonEmpty {
        fn schema_name() -> Cow<'static, str> {
            "NonEmpty".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({"type": "string", "pattern": "\\S"})
        }
    }

    impl JsonSchema for Positive {
        fn schema_name() -> Cow<'static, str> {
            "Positive".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({"type": "integer", "minimum": 1})
        }
    }

    impl<const LOW: u8, const HIGH: u8> JsonSchema for Ranged<LOW, HIGH> {
        fn schema_name() -> Cow<'static, str> {
            format!("Ranged{LOW}to{HIGH}").into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({"type": "number", "minimum": LOW, "maximum": HIGH})
        }
    }

    impl<const LOW: u8, const HIGH: u8> JsonSchema for SamplingLayer<LOW, HIGH> {
        fn schema_name() -> Cow<'static, str> {
            format!("Sampling{LOW}to{HIGH}").into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A number, or \"server\" to send none and keep the server's setting",
                "oneOf": [
                    {"type": "number", "minimum": LOW, "maximum": HIGH},
                    {"const": "server"}
                ]
            })
        }
    }
}
