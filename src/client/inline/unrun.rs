//! What a final answer holds that looks like a call but was not run, and
//! how to tell the model; and the tools described for a model that reads
//! them from the prompt.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::TextCall;
use super::calls::{Fit, bare_call, name_and_arguments, object_end, objects, schemas, strip_fence};
use super::repair::repaired;
use crate::client::wire::ToolSpec;

/// Objects of an answer looked at; a longer answer is not searched further.
const MAX_OBJECTS: usize = 64;

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
    let schemas = schemas(tools);
    text.match_indices('{')
        .take(MAX_OBJECTS)
        .find_map(|(at, _)| {
            let end = object_end(&text[at..])?;
            bare_call(&repaired(&text[at..at + end])?, &schemas)
        })
}

/// [`unrun_call`], where `withheld` are tools that exist but are not this
/// agent's (`plan` has no `write`): a call to one is told as such.
pub fn unrun_call_as(text: &str, tools: &[ToolSpec], withheld: &[String]) -> Option<String> {
    let schemas = schemas(tools);
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
