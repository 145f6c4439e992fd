//! Arguments brought to their tool's schema where the intent is beyond
//! doubt: small models write `"120"` for an integer, `"true"` for a
//! boolean, a list as JSON text, and other agents' names for the same
//! field (`file_path`, `oldString`). Nothing else is guessed: a value that
//! does not convert stays as it was and the tool says what is wrong.

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
    let mut out = Map::new();
    for (key, value) in arguments {
        let key = match ALIASES.iter().find(|(alias, _)| *alias == key) {
            Some((_, ours)) if properties.contains_key(*ours) && !properties.contains_key(&key) => {
                (*ours).to_owned()
            }
            _ => key,
        };
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
    use super::coerce;
    use serde_json::json;

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
        // The call's own field wins over an alias.
        assert_eq!(
            coerce(json!({"path": "a", "file_path": "b"}), &schema, true),
            json!({"path": "a"})
        );
    }
}
