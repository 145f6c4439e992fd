//! Reading one call from the text: the forms models write (Hermes/Qwen
//! JSON, Qwen3-Coder XML, Mistral, bare JSON) and the check a bare object
//! must pass against the offered tool's schema.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{FENCE, MISTRAL, TextCall};
use crate::client::wire::ToolSpec;

/// `{"name": …, "arguments": …}` (or `parameters`); arguments may be an
/// object or JSON text (repaired like the call). Returns the name and the
/// arguments object.
fn name_and_arguments(value: &Value) -> Option<(String, Value)> {
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

fn strip_fence(body: &str) -> &str {
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
fn objects(text: &str) -> Option<Vec<&str>> {
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
fn object_end(text: &str) -> Option<usize> {
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

/// `text` as JSON, repaired where the repair is unambiguous: control
/// characters written raw inside strings (a TAB, a newline), a comma
/// before a closing bracket, closing brackets missing at the end, the
/// doubled braces of a template's example (`{{"name": …}}`), Python's
/// `"""` strings, and closing brackets past the end of a whole value.
pub(super) fn repaired(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    if let Some(quoted) = triple_quoted(text) {
        return repaired(&quoted);
    }
    if let Some(value) = extra_closers(text) {
        return Some(value);
    }
    let undoubled;
    let text = if text.starts_with("{{") && text.ends_with("}}") {
        undoubled = undouble(text);
        &undoubled
    } else {
        text
    };
    let mut out = String::with_capacity(text.len() + 8);
    let mut open = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            match c {
                _ if escaped => {
                    escaped = false;
                    out.push(c);
                }
                '\\' => {
                    escaped = true;
                    out.push(c);
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => out.push(c),
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => open.push('}'),
            '[' => open.push(']'),
            '}' | ']' => {
                if open.pop() != Some(c) {
                    return None;
                }
                // A comma right before a closing bracket goes.
                let trimmed = out.trim_end().len();
                if out[..trimmed].ends_with(',') {
                    out.truncate(trimmed - 1);
                }
            }
            _ => {}
        }
        out.push(c);
    }
    if in_string {
        return None;
    }
    while let Some(close) = open.pop() {
        out.push(close);
    }
    serde_json::from_str(&out).ok()
}

/// Python's `"""…"""` strings, outside JSON strings, as JSON strings.
fn triple_quoted(text: &str) -> Option<String> {
    const TRIPLE: &str = "\"\"\"";
    let mut out = String::with_capacity(text.len() + 16);
    let (mut quotes, mut changed) = (Quotes::default(), false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !quotes.in_string && rest.starts_with(TRIPLE) {
            let body = &rest[TRIPLE.len()..];
            let end = body.find(TRIPLE)?;
            out.push_str(&serde_json::to_string(&body[..end]).ok()?);
            rest = &body[end + TRIPLE.len()..];
            changed = true;
            continue;
        }
        quotes.outside(c);
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    changed.then_some(out)
}

/// Where a scan of JSON text stands: in a string or not.
#[derive(Default)]
struct Quotes {
    in_string: bool,
    escaped: bool,
}

impl Quotes {
    /// Takes in `c`; whether it stands outside every string (an opening
    /// or closing quote does not).
    fn outside(&mut self, c: char) -> bool {
        if self.in_string {
            match c {
                _ if self.escaped => self.escaped = false,
                '\\' => self.escaped = true,
                '"' => self.in_string = false,
                _ => {}
            }
            false
        } else {
            self.in_string = c == '"';
            !self.in_string
        }
    }
}

/// A whole value followed by nothing but stray closing brackets (`{…}}`,
/// a small model's extra brace): the value.
fn extra_closers(text: &str) -> Option<Value> {
    let text = text.trim();
    if !text.starts_with('{') {
        return None;
    }
    let end = object_end(text)?;
    let tail = &text[end..];
    (!tail.is_empty()
        && tail
            .chars()
            .all(|c| matches!(c, '}' | ']') || c.is_whitespace()))
    .then(|| repaired(&text[..end]))
    .flatten()
}

/// `{{` and `}}` outside strings made single.
fn undouble(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut quotes = Quotes::default();
    while let Some(c) = chars.next() {
        if quotes.outside(c) && matches!(c, '{' | '}') && chars.peek() == Some(&c) {
            chars.next();
        }
        out.push(c);
    }
    out
}

/// A bare JSON object is a call only with a known tool, nothing but the
/// call's keys and arguments that fit the tool's schema, with no key it
/// does not declare: a key of another tool's (`write` with `edit`'s
/// `replace_all`) marks a model reciting its tools, not calling one.
fn bare_call(value: &Value, schemas: &HashMap<String, Value>) -> Option<TextCall> {
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
struct Fit<'a> {
    /// Required keys not given.
    missing: Vec<&'a str>,
    /// Keys given with the wrong type, and the type declared.
    mistyped: Vec<(&'a str, &'a Value)>,
    /// Keys the schema does not declare.
    unknown: Vec<&'a str>,
    /// The keys it declares.
    known: Vec<&'a str>,
    /// Whether undeclared keys are forbidden (`additionalProperties: false`).
    closed: bool,
}

impl<'a> Fit<'a> {
    fn of(arguments: &'a Map<String, Value>, schema: &'a Value) -> Self {
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
    fn fits(&self) -> bool {
        self.missing.is_empty()
            && self.mistyped.is_empty()
            && (!self.closed || self.unknown.is_empty())
    }

    /// What is wrong, one finding each, for the model.
    fn problems(&self) -> Vec<String> {
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

/// A call the model wrote in `text` (its final answer) that was not taken
/// as one: a well-formed call to an offered tool with words around it (an
/// example, by the rules above), a call to an offered tool whose
/// arguments do not fit it, a message of nothing but a call to a tool
/// that does not exist, or a `<tool_call>` block that did not parse. Says
/// which, in words the model can act on.
pub fn unrun_call(text: &str, tools: &[ToolSpec]) -> Option<String> {
    unrun_call_as(text, tools, &[])
}

/// The first well-formed call to an offered tool in `text` (a final
/// answer), taken as an example because words came with it.
pub fn example_call(text: &str, tools: &[ToolSpec]) -> Option<TextCall> {
    let schemas: HashMap<String, Value> = tools
        .iter()
        .map(|t| (t.function.name.clone(), t.function.parameters.clone()))
        .collect();
    text.match_indices('{').take(64).find_map(|(at, _)| {
        let end = object_end(&text[at..])?;
        bare_call(&repaired(&text[at..at + end])?, &schemas)
    })
}

/// [`unrun_call`], where `withheld` are tools that exist but are not this
/// agent's (`plan` has no `write`): a call to one is told as such.
pub fn unrun_call_as(text: &str, tools: &[ToolSpec], withheld: &[String]) -> Option<String> {
    /// Objects looked at; a longer answer is not searched further.
    const MAX_OBJECTS: usize = 64;
    let schemas: HashMap<String, Value> = tools
        .iter()
        .map(|t| (t.function.name.clone(), t.function.parameters.clone()))
        .collect();
    // Nothing but objects (in a fence or bare): meant as calls.
    let only_objects = objects_only(strip_fence(text.trim()));
    let mut misfit = None;
    let mut well_formed = None;
    for (at, _) in text.match_indices('{').take(MAX_OBJECTS) {
        let Some(end) = object_end(&text[at..]) else {
            continue;
        };
        let Some(value) = repaired(&text[at..at + end]) else {
            continue;
        };
        if let Some(call) = bare_call(&value, &schemas) {
            well_formed.get_or_insert(call);
        } else if misfit.is_none() {
            misfit = misfit_call(&value, &schemas, only_objects, withheld);
        }
    }
    // In a message of nothing but calls, one that does not fit is why
    // none ran; elsewhere a well-formed call among words is the example.
    match (well_formed, misfit) {
        (Some(_), Some(misfit)) if only_objects => return Some(misfit),
        (Some(call), _) => {
            let name = &call.name;
            let arguments: Value =
                serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments));
            let alone = serde_json::json!({"name": name, "arguments": arguments});
            return Some(format!(
                "Your last message has a `{name}` call with words around it, so it was read as an example and not run: nothing was done for it. To run it, send a message of nothing but the call, no words before or after it:\n{alone}"
            ));
        }
        (None, Some(misfit)) => return Some(misfit),
        (None, None) => {}
    }
    unrun_markup(text, &schemas)
}

/// Call markup left in a final answer: a `<tool_call>`, `<tools>` or
/// `<function` that held no call offcode could run.
fn unrun_markup(text: &str, schemas: &HashMap<String, Value>) -> Option<String> {
    if let Some(block) = text.find(super::CALL_OPEN) {
        return Some(
            if text[block + super::CALL_OPEN.len()..]
                .trim_start()
                .starts_with('{')
            {
                "Your last message has a <tool_call> block whose JSON is not valid, so nothing was run. Write it again as <tool_call>\n{\"name\": \"TOOL\", \"arguments\": {...}}\n</tool_call> with valid JSON, naming one of the tools."
                .to_owned()
            } else {
                "Your last message has a <tool_call> tag with no call in it, so nothing was run. Put the call inside it: <tool_call>\n{\"name\": \"TOOL\", \"arguments\": {...}}\n</tool_call>.".to_owned()
            },
        );
    }
    let mut names: Vec<&str> = schemas.keys().map(String::as_str).collect();
    names.sort_unstable();
    let example = names.first().copied().unwrap_or("TOOL");
    if let Some(at) = text.find(super::TOOLS_OPEN) {
        let body = text[at + super::TOOLS_OPEN.len()..]
            .split(super::TOOLS_CLOSE)
            .next()
            .unwrap_or_default();
        return Some(if body.trim().is_empty() {
            format!(
                "Your last message has an empty <tools> block: no call was in it, so nothing was run. To call a tool, put the call inside the block, e.g. <tools>{{\"name\": \"{example}\", \"arguments\": {{...}}}}</tools>, naming one of: {}.",
                names.join(", ")
            )
        } else {
            format!(
                "Your last message has a <tools> block, but nothing in it is a call to one of the tools ({}), so nothing was run. Write each call as {{\"name\": \"TOOL\", \"arguments\": {{...}}}} inside the block, with the arguments the tool takes.",
                names.join(", ")
            )
        });
    }
    text.contains("<function").then(|| {
        format!(
            "Your last message has a <function> element that is not a call offcode can run, so nothing was run. Write it as <function name=\"TOOL\" arguments='{{...}}'/> with valid JSON arguments, naming one of: {}.",
            names.join(", ")
        )
    })
}

/// Whether `text` is one or more objects and nothing else.
fn objects_only(text: &str) -> bool {
    text.starts_with('{') && (objects(text).is_some() || object_end(text) == Some(text.len()))
}

/// A call-shaped object that cannot be run, and why: an offered tool's
/// arguments that do not fit its schema (anywhere: the name says what was
/// meant), or a tool that does not exist (only in a message of nothing
/// but calls, so JSON shown as an example of something else is left
/// alone).
fn misfit_call(
    value: &Value,
    schemas: &HashMap<String, Value>,
    only_objects: bool,
    withheld: &[String],
) -> Option<String> {
    let object = value.as_object()?;
    if !object.contains_key("arguments") && !object.contains_key("parameters") {
        return None;
    }
    let (name, arguments) = name_and_arguments(value)?;
    let Some(schema) = schemas.get(&name) else {
        if withheld.contains(&name) {
            return Some(format!(
                "Your last message calls `{name}`, which you do not have here, so nothing was run. Do the task with the tools you have; if it needs `{name}`, answer in words with what you would do instead."
            ));
        }
        if !only_objects {
            return None;
        }
        let mut names: Vec<&str> = schemas.keys().map(String::as_str).collect();
        names.sort_unstable();
        let mut told = crate::tools::names::no_such_tool(&name, &names);
        // No name like it: the arguments may say which tool was meant
        // (the 0.5B model calls `fix_calc.py` with a `command`).
        if !told.contains("Did you mean")
            && let Some(meant) = arguments
                .as_object()
                .and_then(|given| by_arguments(given, schemas))
        {
            let _ = write!(
                told,
                " Its arguments are `{meant}`'s: call `{meant}` with them."
            );
        }
        return Some(told);
    };
    let problems = match arguments.as_object() {
        Some(arguments) => Fit::of(arguments, schema).problems(),
        None => vec!["`arguments` is not an object".to_owned()],
    };
    Some(format!(
        "Your last message has a `{name}` call whose arguments do not fit the tool, so nothing was run: {}. Write the same call again with that fixed, and wait for the result.",
        problems.join("; ")
    ))
}

/// The one tool whose schema has every required key of `given` and the
/// most of its keys, when it is unambiguous.
fn by_arguments(given: &Map<String, Value>, schemas: &HashMap<String, Value>) -> Option<String> {
    let mut best: Vec<(usize, &String)> = schemas
        .iter()
        .filter_map(|(name, schema)| {
            let fit = Fit::of(given, schema);
            let shared = fit.known.iter().filter(|k| given.contains_key(**k)).count();
            (fit.missing.is_empty() && shared > 0).then_some((shared, name))
        })
        .collect();
    best.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    match best.as_slice() {
        [(first, name), rest @ ..] if rest.first().is_none_or(|(second, _)| second < first) => {
            Some((*name).clone())
        }
        _ => None,
    }
}

/// The tools described for a model that reads them from the prompt.
pub fn describe_tools(tools: &[ToolSpec]) -> String {
    let mut text = String::from(
        "# Tools\n\nYou can call these tools. To call one, write a block like this on its own \
         (several blocks for several calls), then stop and wait for the results:\n\n\
         <tool_call>\n{\"name\": \"TOOL\", \"arguments\": {ARGUMENTS}}\n</tool_call>\n\n\
         The results come back in <tool_response> blocks. Only the blocks run tools; \
         never write one you do not mean to run.\n\nThe tools, as JSON schemas:\n",
    );
    for tool in tools {
        let function = serde_json::json!({
            "name": tool.function.name,
            "description": tool.function.description,
            "parameters": tool.function.parameters,
        });
        text.push('\n');
        text.push_str(&function.to_string());
    }
    text
}
