//! Builders for vLLM-shaped chat-completion SSE events.

use serde_json::{Value, json};

const ID: &str = "chatcmpl-mock0123456789ab";

fn event(value: &Value) -> String {
    format!("data: {value}\n\n")
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    event(&json!({
        "id": ID, "object": "chat.completion.chunk", "created": 1_767_225_600, "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
    }))
}

/// The first chunk: the assistant role.
pub fn role() -> String {
    chunk(&json!({"role": "assistant", "content": ""}), None)
}

/// A content delta.
pub fn text_delta(text: &str) -> String {
    chunk(&json!({"content": text}), None)
}

/// A reasoning delta (vLLM >= 0.16 field name).
pub fn reasoning_delta(text: &str) -> String {
    chunk(&json!({"reasoning": text}), None)
}

/// A whole tool call: name delta, then the arguments in two fragments.
pub fn tool_call(index: u32, id: &str, name: &str, arguments: &Value) -> Vec<String> {
    let text = arguments.to_string();
    // Halfway, on a character boundary (paths may be Chinese).
    let mut half = text.len() / 2;
    while !text.is_char_boundary(half) {
        half += 1;
    }
    let (first, second) = text.split_at(half);
    vec![
        chunk(
            &json!({"tool_calls": [{"id": id, "type": "function", "index": index, "function": {"name": name}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": index, "function": {"arguments": first}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": index, "function": {"arguments": second}}]}),
            None,
        ),
    ]
}

/// The finishing chunk.
pub fn finish(reason: &str) -> String {
    chunk(&json!({"content": ""}), Some(reason))
}

/// The usage-only chunk.
pub fn usage(prompt: u64, completion: u64) -> String {
    event(&json!({
        "id": ID, "object": "chat.completion.chunk", "created": 1_767_225_600, "model": "mock-model",
        "choices": [], "usage": {"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion}
    }))
}

/// The end marker.
pub fn done() -> String {
    "data: [DONE]\n\n".to_owned()
}

/// A complete text answer, split into word deltas.
pub fn text_answer(text: &str) -> Vec<String> {
    let mut events = vec![role()];
    let mut rest = text;
    while !rest.is_empty() {
        let first = rest.chars().next().map_or(0, char::len_utf8);
        let cut = rest[first..]
            .find([' ', '，', '。'])
            .map_or(rest.len(), |i| i + first);
        events.push(text_delta(&rest[..cut]));
        rest = &rest[cut..];
    }
    events.extend([finish("stop"), usage(100, 10), done()]);
    events
}

/// A complete reply that calls tools, with optional text before them.
pub fn tool_answer(text: &str, calls: &[(&str, &str, Value)]) -> Vec<String> {
    let mut events = vec![role()];
    if !text.is_empty() {
        events.push(text_delta(text));
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        events.extend(tool_call(
            u32::try_from(index).unwrap(),
            id,
            name,
            arguments,
        ));
    }
    events.extend([finish("tool_calls"), usage(120, 20), done()]);
    events
}

/// `GET /v1/models` body.
pub fn models(ids: &[(&str, u64)]) -> Value {
    json!({"object": "list", "data": ids.iter().map(|(id, len)| json!({
        "id": id, "object": "model", "created": 1_760_000_000, "owned_by": "vllm",
        "root": id, "parent": null, "max_model_len": len
    })).collect::<Vec<_>>()})
}
