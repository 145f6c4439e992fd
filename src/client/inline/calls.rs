//! Reading one call from the text: the forms models write (Hermes/Qwen
//! JSON, Qwen3-Coder XML, Mistral, bare JSON) and the check a bare object
//! must pass against the offered tool's schema.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::repair::repaired;
use super::{FENCE, MISTRAL, TextCall};
use crate::client::wire::ToolSpec;

/// Each offered tool's parameter schema, by name.
pub(super) fn schemas(tools: &[ToolSpec]) -> HashMap<String, Value> {
    tools
        .iter()
        .map(|t| (t.function.name.clone(), t.function.parameters.clone()))
        .collect()
}

/// `{"name": …, "arguments": …}` (or `parameters`); arguments may be an
/// object or JSON text (repaired like the call). Returns the name and the
/// arguments object.
pub(super) fn name_and_arguments(value: &Value) -> Option<(String, Value)> {
    let object = value.as_object()?;
    let function = object.get("function").filter(|f| f.is_object());
    let source = function.unwrap_or(value);
    let name = source.get("name")?.as_str()?.trim().to_owned();
    if name.is_empty() {
        return None;
    }
    let arguments = match source.get("arguments").or_else(|| source.get("parameters")) {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) => repaired(text).unwrap_or_else(|| Value::String(text.clone())),
        Some(other) => other.clone(),
    };
    Some((name, arguments))
}

fn call(name: String, arguments: &Value) -> TextCall {
    TextCall {
        name,
        arguments: match arguments {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        },
    }
}

/// The body of a `<tool_call>` block. The model clearly meant a call, so
/// any name is taken; the tool checks its arguments and answers errors.
pub(super) fn parse_tagged(body: &str, schemas: &HashMap<String, Value>) -> Option<TextCall> {
    let body = body.trim();
    if body.starts_with("<function=") {
        return parse_xml_call(body, schemas);
    }
    let body = strip_fence(body);
    // Some servers drop the last brace (vLLM with speculative decoding);
    // small models write raw TABs and trailing commas.
    let value = repaired(body)?;
    let (name, arguments) = name_and_arguments(&value)?;
    Some(call(name, &arguments))
}

/// The body of a `<tools>` block: calls as JSON (an object, several, or
/// an array), or as `<function name="NAME" arguments='{…}'/>` or
/// `<function><name>NAME</name><arguments>{…}</arguments></function>`
/// elements. Each is judged on its own: a call that fits an offered tool
/// runs; one that names an offered tool but does not fit (arguments that
/// are not JSON, a field missing) goes to the tool as written, which says
/// what is wrong with it; anything else (the template's own `<tools>`
/// block lists schemas, not calls) is not a call. `None` when no element
/// is one.
pub(super) fn parse_tools(body: &str, schemas: &HashMap<String, Value>) -> Option<Vec<TextCall>> {
    let body = strip_fence(body.trim());
    let elements = if body.starts_with('<') {
        function_elements(body)?
    } else {
        json_elements(body)?
    };
    let calls: Vec<TextCall> = elements
        .into_iter()
        .filter_map(|(name, arguments)| judged(&name, &arguments, schemas))
        .collect();
    (!calls.is_empty()).then_some(calls)
}

/// One element of a `<tools>` block as a call: fitting, or an offered
/// tool's call that does not fit, kept as written for the tool to refuse.
fn judged(name: &str, arguments: &str, schemas: &HashMap<String, Value>) -> Option<TextCall> {
    let name = name.trim().to_owned();
    schemas.get(&name)?;
    if let Some(value) = repaired(arguments.trim())
        && let Some(call) = bare_call(
            &serde_json::json!({"name": name, "arguments": value}),
            schemas,
        )
    {
        return Some(call);
    }
    Some(TextCall {
        name,
        arguments: arguments.trim().to_owned(),
    })
}

/// The `(name, arguments)` of each `<function …>` element; `None` when
/// the body holds anything else.
fn function_elements(body: &str) -> Option<Vec<(String, String)>> {
    let mut elements = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("<function") {
        if !rest[..start].trim().is_empty() {
            return None;
        }
        let element = &rest[start..];
        let (name, arguments, used) = if let Some(inner) = element.strip_prefix("<function>") {
            let end = inner.find("</function>")?;
            let inner_text = &inner[..end];
            let name = between(inner_text, "<name>", "</name>")?;
            let arguments = between(inner_text, "<arguments>", "</arguments>").unwrap_or("{}");
            (
                name,
                arguments,
                "<function>".len() + end + "</function>".len(),
            )
        } else {
            // `<function name=… arguments=…/>`, or with a body (a result
            // the model imagined), which is not read.
            let end = tag_end(element)?;
            let attributes = element["<function".len()..end].trim_end_matches('/');
            let name = attribute(attributes, "name")?;
            let arguments = attribute(attributes, "arguments").unwrap_or("{}");
            let used = if element[..end].ends_with('/') {
                end + 1
            } else {
                end + element[end..].find("</function>")? + "</function>".len()
            };
            (name, arguments, used)
        };
        elements.push((name.to_owned(), arguments.to_owned()));
        rest = &element[used..];
    }
    rest.trim().is_empty().then_some(elements)
}

/// The `(name, arguments)` of each call-shaped object of a JSON body.
fn json_elements(body: &str) -> Option<Vec<(String, String)>> {
    let values = match repaired(body) {
        Some(Value::Array(items)) => items,
        Some(value) => vec![value],
        None => objects(body)?.into_iter().filter_map(repaired).collect(),
    };
    Some(
        values
            .iter()
            .filter(|value| {
                // Schemas have a description; calls do not.
                let described = |v: &Value| v.get("description").is_some();
                value.is_object()
                    && !described(value)
                    && !value.get("function").is_some_and(described)
            })
            .filter_map(name_and_arguments)
            .map(|(name, arguments)| {
                let text = match arguments {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                (name, text)
            })
            .collect(),
    )
}

/// Where the opening tag `element` starts with ends: its first `>` outside
/// quoted attribute values.
fn tag_end(element: &str) -> Option<usize> {
    let mut quote = None;
    for (at, c) in element.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '>') => return Some(at),
            _ => {}
        }
    }
    None
}

/// The text between `open` and the next `close`.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)?;
    Some(&text[start..start + end])
}

/// An attribute's value, quoted with `"` or `'`.
fn attribute<'a>(attributes: &'a str, key: &str) -> Option<&'a str> {
    let at = attributes.find(&format!("{key}="))? + key.len() + 1;
    let quote = attributes[at..]
        .chars()
        .next()
        .filter(|q| matches!(q, '"' | '\''))?;
    let value = &attributes[at + 1..];
    Some(&value[..value.find(quote)?])
}

/// Qwen3-Coder: `<function=NAME><parameter=K>V</parameter>…</function>`.
fn parse_xml_call(body: &str, schemas: &HashMap<String, Value>) -> Option<TextCall> {
    let rest = body.strip_prefix("<function=")?;
    let (name, mut rest) = rest.split_once('>')?;
    let name = name.trim().to_owned();
    let properties = schemas.get(&name).and_then(|s| s.get("properties"));
    let mut arguments = Map::new();
    while let Some(start) = rest.find("<parameter=") {
        let after = &rest[start + "<parameter=".len()..];
        let (key, after) = after.split_once('>')?;
        let (value, after) = after.split_once("</parameter>")?;
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        let wants_string = properties
            .and_then(|p| p.get(key.trim()))
            .and_then(|p| p.get("type"))
            .is_none_or(|t| t == "string");
        let parsed = if wants_string {
            Value::String(value.to_owned())
        } else {
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()))
        };
        arguments.insert(key.trim().to_owned(), parsed);
        rest = after;
    }
    Some(call(name, &Value::Object(arguments)))
}

pub(super) fn strip_fence(body: &str) -> &str {
    let Some(inner) = body.strip_prefix(FENCE) else {
        return body;
    };
    let inner = inner.split_once('\n').map_or("", |(_, rest)| rest);
    inner.trim_end().strip_suffix(FENCE).unwrap_or(inner).trim()
}

/// Everything from the first `[TOOL_CALLS]` to the end of the response.
pub(super) fn parse_mistral(raw: &str) -> Option<Vec<TextCall>> {
    let mut calls = Vec::new();
    for part in raw.split(MISTRAL).skip(1) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if part.starts_with('[') || part.starts_with('{') {
            let value: Value = serde_json::from_str(part).ok()?;
            let items = match value {
                Value::Array(items) => items,
                other => vec![other],
            };
            for item in &items {
                let (name, arguments) = name_and_arguments(item)?;
                calls.push(call(name, &arguments));
            }
        } else {
            let (name, arguments) = part.split_once("[ARGS]")?;
            let name = name.split("[CALL_ID]").next().unwrap_or(name).trim();
            if name.is_empty() {
                return None;
            }
            let arguments: Value = serde_json::from_str(arguments.trim()).ok()?;
            calls.push(call(name.to_owned(), &arguments));
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// `inner`, an arguments object, as a call of `name`, when `name` is an
/// offered tool and the arguments fit it (a tool's name written on a line
/// of its own before them).
pub(super) fn parse_arguments_of(
    name: &str,
    inner: &str,
    schemas: &HashMap<String, Value>,
) -> Option<TextCall> {
    schemas.get(name)?;
    let arguments = repaired(inner.trim())?;
    arguments.as_object()?;
    bare_call(
        &serde_json::json!({"name": name, "arguments": arguments}),
        schemas,
    )
}

/// Bare JSON, fenced or on lines of its own: one object, several in a row
/// (a model that writes its calls together), or an array of them. Each
/// must be a call ([`bare_call`]); if one is not, none is.
pub(super) fn parse_bare(inner: &str, schemas: &HashMap<String, Value>) -> Option<Vec<TextCall>> {
    let values = match repaired(inner.trim()) {
        Some(Value::Array(items)) => items,
        Some(value) => vec![value],
        None => objects(inner)?
            .into_iter()
            .map(repaired)
            .collect::<Option<Vec<_>>>()?,
    };
    if values.is_empty() {
        return None;
    }
    values
        .iter()
        .map(|value| bare_call(value, schemas))
        .collect()
}

/// The top-level objects of `text`, in order, when it holds nothing else
/// but whitespace and commas between them.
pub(super) fn objects(text: &str) -> Option<Vec<&str>> {
    let mut found = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if !rest.starts_with('{') {
            return None;
        }
        let end = object_end(rest)?;
        found.push(&rest[..end]);
        rest = rest[end..].trim_start_matches(|c: char| c.is_whitespace() || c == ',');
    }
    (found.len() > 1).then_some(found)
}

/// Just past the brace that closes the object `text` starts with.
pub(super) fn object_end(text: &str) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (at, c) in text.char_indices() {
        match c {
            _ if in_string && escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' | '[' if !in_string => depth += 1,
            '}' | ']' if !in_string => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// A bare JSON object is a call only with a known tool, nothing but the
/// call's keys and arguments that fit the tool's schema, with no key it
/// does not declare: a key of another tool's (`write` with `edit`'s
/// `replace_all`) marks a model reciting its tools, not calling one.
pub(super) fn bare_call(value: &Value, schemas: &HashMap<String, Value>) -> Option<TextCall> {
    let object = value.as_object()?;
    let allowed = ["name", "arguments", "parameters", "id", "type", "function"];
    if object.keys().any(|k| !allowed.contains(&k.as_str())) {
        return None;
    }
    let (name, arguments) = name_and_arguments(value)?;
    let schema = schemas.get(&name)?;
    // Plain mistypes and other agents' field names are the call's own.
    let arguments = crate::tools::coerce::coerce(arguments, schema, false);
    let fit = Fit::of(arguments.as_object()?, schema);
    (fit.fits() && fit.unknown.is_empty()).then(|| call(name, &arguments))
}

/// How a call's arguments stand against its tool's schema.
pub(super) struct Fit<'a> {
    /// Required keys not given.
    pub(super) missing: Vec<&'a str>,
    /// Keys given with the wrong type, and the type declared.
    mistyped: Vec<(&'a str, &'a Value)>,
    /// Keys the schema does not declare.
    unknown: Vec<&'a str>,
    /// The keys it declares.
    pub(super) known: Vec<&'a str>,
    /// Whether undeclared keys are forbidden (`additionalProperties: false`).
    closed: bool,
}

impl<'a> Fit<'a> {
    pub(super) fn of(arguments: &'a Map<String, Value>, schema: &'a Value) -> Self {
        let properties = schema.get("properties").and_then(Value::as_object);
        let mut fit = Self {
            missing: schema
                .get("required")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter_map(Value::as_str)
                .filter(|key| !arguments.contains_key(*key))
                .collect(),
            mistyped: Vec::new(),
            unknown: Vec::new(),
            known: properties.map_or_else(Vec::new, |p| p.keys().map(String::as_str).collect()),
            closed: schema.get("additionalProperties") == Some(&Value::Bool(false)),
        };
        for (key, value) in arguments {
            match properties.and_then(|p| p.get(key)) {
                Some(property) if !has_type(value, property.get("type")) => {
                    fit.mistyped
                        .push((key, property.get("type").unwrap_or(&Value::Null)));
                }
                Some(_) => {}
                None => fit.unknown.push(key),
            }
        }
        fit
    }

    /// Required keys present, declared types right, no unknown keys when
    /// the schema forbids them.
    pub(super) fn fits(&self) -> bool {
        self.missing.is_empty()
            && self.mistyped.is_empty()
            && (!self.closed || self.unknown.is_empty())
    }

    /// What is wrong, one finding each, for the model.
    pub(super) fn problems(&self) -> Vec<String> {
        let quoted = |keys: &[&str]| -> String {
            keys.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut problems = Vec::new();
        if !self.missing.is_empty() {
            problems.push(format!("missing {}", quoted(&self.missing)));
        }
        for (key, kind) in &self.mistyped {
            problems.push(format!("`{key}` must be of type {kind}"));
        }
        if !self.unknown.is_empty() {
            let known = if self.known.is_empty() {
                "nothing".to_owned()
            } else {
                quoted(&self.known)
            };
            problems.push(format!(
                "it takes no {} (it takes {known})",
                quoted(&self.unknown)
            ));
        }
        if problems.is_empty() {
            problems.push("they do not match its schema".to_owned());
        }
        problems
    }
}

fn has_type(value: &Value, kind: Option<&Value>) -> bool {
    let one = |kind: &str| match kind {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    };
    match kind {
        Some(Value::String(kind)) => one(kind),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

/// Words that disown a call written after them: it is shown, not meant
/// ("Never run this, it is only an example:"). English as whole words,
/// Chinese as written.
const DISOWNING: [&str; 17] = [
    "example",
    "examples",
    "e.g.",
    "never",
    "not run",
    "don't run",
    "won't run",
    "not execute",
    "don't execute",
    "not use",
    "don't use",
    "shouldn't",
    "should not",
    "avoid",
    "instead",
    "dangerous",
    "malicious",
];
const DISOWNING_ZH: [&str; 12] = [
    "不要",
    "别运行",
    "别执行",
    "勿",
    "不能",
    "禁止",
    "示例",
    "例如",
    "例子",
    "比如",
    "不应",
    "危险",
];

/// Whether `before`, the words a call follows, disown it: then it is a
/// mention whatever else holds, and the model is told to send it alone if
/// it meant it.
pub(super) fn disowned(before: &str) -> bool {
    let lower = before.to_lowercase();
    let words: String = lower
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '\'' | '.') {
                c
            } else {
                ' '
            }
        })
        .collect();
    let padded = format!(
        " {} ",
        words.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    DISOWNING.iter().any(|w| padded.contains(&format!(" {w} ")))
        || DISOWNING_ZH.iter().any(|w| before.contains(w))
}
