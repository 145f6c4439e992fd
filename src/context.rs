//! Request assembly: the system prompt and the conversation, in a fixed
//! order, so each request's messages start with the previous request's.
//!
//! The system prompt holds no clock or random values: vLLM's prefix cache
//! then serves every request of a session from the first one's prefix.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;

use crate::client::wire::{WireFunctionCall, WireMessage, WireToolCall};
use crate::session::Message;

/// The base system prompt; `{root}` is the workspace.
const SYSTEM_PROMPT: &str = "You are offcode, a coding agent in a terminal. You work in the \
directory {root} and change it only with your tools. Read files before you edit them, keep \
changes small and correct, and run commands to check your work when that helps. When the task \
is done, answer briefly with what you did. Reply in the language the user writes in. For a \
task of more than one step, keep a todo list with `todowrite` and update it as you go.";

/// The system prompt for a workspace.
pub fn system_prompt(root: &Path) -> String {
    SYSTEM_PROMPT.replace("{root}", &root.display().to_string())
}

/// The request messages: the system prompt, then the conversation.
/// Reasoning is never sent back.
pub fn build_messages(system: &str, history: &[Message]) -> Vec<WireMessage> {
    let mut messages = Vec::with_capacity(history.len() + 1);
    messages.push(text_message("system", system));
    messages.extend(history.iter().map(wire_message));
    messages
}

fn text_message(role: &str, content: &str) -> WireMessage {
    WireMessage {
        role: role.to_owned(),
        content: Some(content.to_owned()),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn wire_message(message: &Message) -> WireMessage {
    match message {
        Message::User { content } => text_message("user", content),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => WireMessage {
            role: "assistant".to_owned(),
            content: (!content.is_empty() || tool_calls.is_empty()).then(|| content.clone()),
            tool_calls: tool_calls
                .iter()
                .map(|call| WireToolCall {
                    id: call.id.clone(),
                    kind: "function".to_owned(),
                    function: WireFunctionCall {
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    },
                })
                .collect(),
            tool_call_id: None,
        },
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => WireMessage {
            role: "tool".to_owned(),
            content: Some(content.clone()),
            tool_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.clone()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::ToolCall;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn history_maps_to_wire_without_reasoning() {
        let history = vec![
            Message::User {
                content: "hi".into(),
            },
            Message::Assistant {
                content: String::new(),
                reasoning: Some("secret thoughts".into()),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                }],
                interrupted: false,
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                name: "read".into(),
                content: "x".into(),
                is_error: false,
            },
        ];
        let wire = serde_json::to_value(build_messages("sys", &history)).unwrap();
        assert_eq!(
            wire,
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}
                ]},
                {"role": "tool", "content": "x", "tool_call_id": "c1"}
            ])
        );
    }

    #[test]
    fn system_prompt_is_stable() {
        assert_eq!(
            system_prompt(Path::new("/w")),
            system_prompt(Path::new("/w"))
        );
        assert!(system_prompt(Path::new("/w")).contains("directory /w"));
    }
}
