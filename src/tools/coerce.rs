//! Arguments brought to their tool's schema where the intent is beyond
//! doubt: small models write `"120"` for an integer, `"true"` for a
//! boolean, a list as JSON text, and other agents' names for the same
//! field (`file_path`, `oldString`). Nothing else is guessed: a value that
//! does not convert stays as it was and the tool says what is wrong.

use std::path::Path;

use serde_json::{Map, Value};

/// Other agents' names for a field, and ours.
const ALIASES: [(&str, &str); 9] = [
    ("file_path", "path"),
    ("filePath", "path"),
    ("filename", "path"),
    ("old_str", "old_string"),
    ("oldString", "old_string"),
    ("new_str", "new_string"),
    ("newString", "new_string"),
    ("replaceAll", "replace_all"),
    ("cmd", "command"),
];

/// `arguments` with each value of a declared type converted when that is
/// unambiguous, and aliases renamed when the schema has the field and the
/// call does not. A number for a string (`"content": 6`) is made text
/// only with `numbers_as_text`: for a call already taken as one, not for
/// deciding whether JSON in an answer is a call.
pub fn coerce(arguments: Value, schema: &Value, numbers_as_text: bool) -> Value {
    let Value::Object(arguments) = arguments else {
        return arguments;
    };
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Value::Object(arguments);
    };
    let given: Vec<String> = arguments.keys().cloned().collect();
    let mut out = Map::new();
    for (key, value) in arguments {
        // An alias stands for our field only when the call lacks that
        // field; otherwise it stays an unknown key, whatever the order.
        let key = match ALIASES.iter().find(|(alias, _)| *alias == key) {
            Some((_, ours))
                if properties.contains_key(*ours)
                    && !properties.contains_key(&key)
                    && !given.iter().any(|k| k == ours) =>
            {
                (*ours).to_owned()
            }
            _ => key,
        };
        // `null` (Python's `None`) for a field the schema does not require
        // and does not type as null: the field left out.
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key.as_str())));
        let nullable = properties
            .get(&key)
            .and_then(|p| p.get("type"))
            .is_some_and(|t| {
                t == "null" || t.as_array().is_some_and(|a| a.iter().any(|x| x == "null"))
            });
        if value.is_null() && properties.contains_key(&key) && !required && !nullable {
            continue;
        }
        let value = match properties.get(&key).and_then(|p| p.get("type")) {
            Some(Value::String(kind)) if kind != "string" || numbers_as_text => {
                convert(value, kind)
            }
            _ => value,
        };
        // The call's own name wins over an alias of it.
        out.entry(key).or_insert(value);
    }
    Value::Object(out)
}

/// A `path` argument that is absolute, outside `root`, and in a folder
/// above it (`/w/task/greet.py` for the workspace `/w/task/project`: a
/// small model drops the last part of the workspace's path) made the
/// workspace's, when that file is there or goes straight in it. Nothing
/// else moves: `/etc/hosts` stays, for the gate and the tool to refuse.
pub fn into_workspace(arguments: &mut Value, root: &Path) {
    let Some(Value::String(path)) = arguments.get_mut("path") else {
        return;
    };
    let given = Path::new(path.as_str());
    let Some(above) = root.parent().filter(|p| p.parent().is_some()) else {
        return;
    };
    if !given.is_absolute() || given.starts_with(root) {
        return;
    }
    let Ok(rest) = given.strip_prefix(above) else {
        return;
    };
    let plain = rest
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if plain && (root.join(rest).exists() || rest.components().count() == 1) {
        *path = rest.display().to_string();
    }
}

/// `value` as `kind`, when it is plainly that written another way.
fn convert(value: Value, kind: &str) -> Value {
    match (kind, &value) {
        ("integer", Value::String(text)) => text
            .trim()
            .parse::<i64>()
            .map_or(value, |n| Value::Number(n.into())),
        ("integer", Value::Number(n)) => match n.as_f64() {
            #[expect(clippy::cast_possible_truncation, reason = "a whole number in range")]
            Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => Value::Number((f as i64).into()),
            _ => value,
        },
        ("number", Value::String(text)) => text
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(value, Value::Number),
        ("boolean", Value::String(text)) => match text.trim() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => value,
        },
        ("string", Value::Number(n)) => Value::String(n.to_string()),
        ("array" | "object", Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(parsed)
                if (kind == "array") == parsed.is_array()
                    && (parsed.is_array() || parsed.is_object()) =>
            {
                parsed
            }
            _ => value,
        },
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::{coerce, into_workspace};
    use serde_json::json;

    #[test]
    fn a_path_beside_the_workspace_is_the_workspaces_and_no_other_moves() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("task").join("project");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("greet.py"), "").unwrap();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        let above = dir.path().join("task");
        let moved = |path: String| {
            let mut arguments = json!({ "path": path });
            into_workspace(&mut arguments, &root);
            arguments["path"].as_str().unwrap().to_owned()
        };
        let at = |p: &str| above.join(p).display().to_string();
        assert_eq!(moved(at("greet.py")), "greet.py");
        assert_eq!(moved(at("src/a.rs")), "src/a.rs");
        // A new file straight in the workspace.
        assert_eq!(moved(at("out.txt")), "out.txt");
        // A new file deeper, a file elsewhere, and the workspace's own
        // paths stay.
        for stays in [
            at("new/out.txt"),
            "/etc/hosts".to_owned(),
            root.join("greet.py").display().to_string(),
            "greet.py".to_owned(),
            format!("{}/../x", root.display()),
        ] {
            assert_eq!(moved(stays.clone()), stays);
        }
    }

    #[test]
    fn plain_mistypes_and_other_agents_names_are_brought_to_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "old_string": {"type": "string"},
            "timeout": {"type": "integer"},
            "limit": {"type": "integer"},
            "replace_all": {"type": "boolean"},
            "todos": {"type": "array"},
            "content": {"type": "string"},
        }});
        let coerced = coerce(
            json!({"file_path": "a.py", "oldString": "x", "timeout": "120", "limit": 20.0,
                   "replace_all": "true", "todos": "[{\"content\": \"a\"}]", "content": 7341}),
            &schema,
            true,
        );
        assert_eq!(
            coerced,
            json!({"path": "a.py", "old_string": "x", "timeout": 120, "limit": 20,
                   "replace_all": true, "todos": [{"content": "a"}], "content": "7341"})
        );
        // What does not convert plainly stays, for the tool to refuse.
        let kept = json!({"timeout": "two minutes", "limit": 2.5, "replace_all": "yes",
                          "todos": "{\"a\": 1}", "unknown": "1"});
        assert_eq!(coerce(kept.clone(), &schema, true), kept);
        // Deciding whether JSON is a call, a number stays a number.
        assert_eq!(
            coerce(json!({"content": 7341}), &schema, false),
            json!({"content": 7341})
        );
        // The call's own field wins over an alias, whatever the order.
        assert_eq!(
            coerce(json!({"path": "a", "file_path": "b"}), &schema, true),
            json!({"path": "a", "file_path": "b"})
        );
        assert_eq!(
            coerce(json!({"file_path": "b", "path": "a"}), &schema, true)["path"],
            "a"
        );
    }

    #[test]
    fn none_for_a_field_that_may_be_left_out_is_left_out() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer"},
                "note": {"type": ["string", "null"]}
            },
            "required": ["path"]
        });
        assert_eq!(
            coerce(
                json!({"path": "a", "offset": null, "note": null}),
                &schema,
                false
            ),
            json!({"path": "a", "note": null})
        );
        // A required field keeps it, for the tool to say what is wrong.
        assert_eq!(
            coerce(json!({"path": null}), &schema, false),
            json!({"path": null})
        );
    }
}
