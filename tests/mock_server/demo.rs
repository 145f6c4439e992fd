//! A deterministic stand-in for a model, so offcode can be tried and
//! benchmarked without a GPU. It follows the prompt's instructions
//! `read PATH`, `write PATH` and ``run `COMMAND` `` (also `读取` / `写入` /
//! `运行`) with real tool calls, one per step, then answers. A prompt with
//! `slowly` gets a long markdown answer streamed a word every 10 ms (to
//! watch streaming, abort it or resize during it), `stream fast` 3000
//! words at about 1000 a second (to benchmark the UI), `make a plan` a
//! todo list of two steps, one with `think`
//! reasons first; any other prompt gets an echo.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::chunks;
use super::server::{Reply, Request};

/// The model id the demo serves.
pub const MODEL: &str = "mock-model";
/// A second model to switch to.
pub const LARGE_MODEL: &str = "mock-model-large";

enum Action {
    Read(String),
    Write(String),
    Run(String),
}

fn actions(prompt: &str) -> Vec<Action> {
    // Backticks delimit commands: even pieces are prose, odd ones code.
    let pieces: Vec<&str> = prompt.split('`').collect();
    let mut plan = Vec::new();
    for (index, piece) in pieces.iter().enumerate() {
        if index % 2 == 1 {
            continue;
        }
        let words: Vec<&str> = piece.split_whitespace().collect();
        plan.extend(words.windows(2).filter_map(|pair| {
            let path =
                pair[1].trim_matches(|c: char| c == ',' || c == '，' || c == '`' || c == '。');
            match pair[0].to_lowercase().as_str() {
                "read" | "读取" => Some(Action::Read(path.to_owned())),
                "write" | "写入" => Some(Action::Write(path.to_owned())),
                _ => None,
            }
        }));
        let asks_to_run = words
            .last()
            .is_some_and(|w| matches!(w.to_lowercase().as_str(), "run" | "运行"));
        if let (true, Some(command)) = (asks_to_run, pieces.get(index + 1)) {
            plan.push(Action::Run((*command).to_owned()));
        }
    }
    plan
}

/// How the pretend server is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavour {
    /// Started with `--enable-auto-tool-choice --tool-call-parser`: without
    /// it, requests with `tools` get vLLM's 400 and calls come as text.
    pub tool_parser: bool,
    /// How the model's reasoning shows up with no reasoning parser.
    pub think: Think,
}

impl Default for Flavour {
    fn default() -> Self {
        Self {
            tool_parser: true,
            think: Think::None,
        }
    }
}

/// A thinking model on a server without a reasoning parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Think {
    /// Not a thinking model.
    None,
    /// `<think>…</think>` at the start of the content (Qwen3).
    Tags,
    /// The template opened the block: reasoning, then a lone `</think>`
    /// (Qwen3.5, DeepSeek-R1).
    Open,
}

/// The message vLLM sends when a request has `tools` and no parser is set.
pub const NO_TOOL_PARSER: &str =
    "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set";

/// A responder for a server set up as `flavour`.
pub fn responder(flavour: Flavour) -> impl Fn(&Request) -> Reply + Send + Sync + 'static {
    move |request: &Request| {
        let has_tools = request.method == "POST"
            && request.path.ends_with("/chat/completions")
            && request.json()["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty());
        if !flavour.tool_parser && has_tools {
            return Reply::json(
                400,
                &json!({"error": {"message": NO_TOOL_PARSER, "type": "BadRequestError", "param": null, "code": 400}}),
            );
        }
        let reply = respond(request);
        if flavour == Flavour::default()
            || reply.status != 200
            || !request.path.ends_with("/chat/completions")
        {
            return reply;
        }
        reply.map_body(|body| reshape(body, flavour))
    }
}

/// Rewrites a native answer the way a server without parsers streams it.
fn reshape(body: &[u8], flavour: Flavour) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    let mut content = String::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut usage = None;
    for data in text.split("\n\n").filter_map(|e| e.strip_prefix("data: ")) {
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            usage = Some(u.clone());
        }
        let delta = &chunk["choices"][0]["delta"];
        if let Some(text) = delta["content"].as_str() {
            content.push_str(text);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = usize::try_from(call["index"].as_u64().unwrap_or(0)).unwrap();
            if calls.len() <= index {
                calls.resize(index + 1, (String::new(), String::new()));
            }
            if let Some(name) = call["function"]["name"].as_str() {
                calls[index].0.push_str(name);
            }
            if let Some(arguments) = call["function"]["arguments"].as_str() {
                calls[index].1.push_str(arguments);
            }
        }
    }
    let mut pieces: Vec<String> = Vec::new();
    let reasoning = "The user wants this done.\nI will go step by step.\n";
    match flavour.think {
        Think::None => {}
        Think::Tags => {
            pieces.push("<think>".into());
            pieces.extend(reasoning.split_inclusive(' ').map(str::to_owned));
            pieces.extend(["</think>".into(), "\n\n".into()]);
        }
        Think::Open => {
            pieces.extend(reasoning.split_inclusive(' ').map(str::to_owned));
            pieces.extend(["</think>".into(), "\n\n".into()]);
        }
    }
    pieces.extend(content.split_inclusive(' ').map(str::to_owned));
    let mut native = Vec::new();
    for (index, (name, arguments)) in calls.iter().enumerate() {
        if flavour.tool_parser {
            let arguments: Value = serde_json::from_str(arguments).unwrap_or(json!({}));
            native.extend(chunks::tool_call(
                u32::try_from(index).unwrap(),
                &format!("call_{index}"),
                name,
                &arguments,
            ));
        } else {
            // What a Hermes-style model writes, in small pieces.
            let arguments: Value = serde_json::from_str(arguments).unwrap_or(json!({}));
            let block = format!(
                "\n<tool_call>\n{}\n</tool_call>",
                json!({"name": name, "arguments": arguments})
            );
            let chars: Vec<char> = block.chars().collect();
            pieces.extend(chars.chunks(7).map(|c| c.iter().collect::<String>()));
        }
    }
    let mut events = vec![chunks::role()];
    events.extend(pieces.iter().map(|p| chunks::text_delta(p)));
    events.extend(native);
    let finish = if flavour.tool_parser && !calls.is_empty() {
        "tool_calls"
    } else {
        "stop"
    };
    events.push(chunks::finish(finish));
    if let Some(usage) = usage {
        events.push(format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "choices": [], "usage": usage})
        ));
    }
    events.push(chunks::done());
    events.concat().into_bytes()
}

/// The user's message a step answers: tool results sent as text
/// (`<tool_response>` blocks) do not count.
fn is_prompt(message: &Value) -> bool {
    message["role"] == "user"
        && !message["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("<tool_response>"))
}

/// What the user typed: the workspace block that opens a conversation's
/// first message is offcode's, not the user's.
pub fn without_workspace(content: &str) -> &str {
    content
        .strip_prefix("<workspace>\n")
        .and_then(|rest| rest.split_once("\n</workspace>\n\n"))
        .map_or(content, |(_, text)| text)
}

/// The newest tool result, native or as text.
fn last_tool_result(messages: &[Value]) -> &str {
    messages
        .iter()
        .rev()
        .find_map(|m| {
            let content = m["content"].as_str()?;
            if m["role"] == "tool" {
                return Some(content);
            }
            let inner = content.strip_prefix("<tool_response>\n")?;
            Some(inner.split("\n</tool_response>").next().unwrap_or(inner))
        })
        .unwrap_or("")
}

/// The answers to everything but a chat completion.
fn other_route(request: &Request) -> Option<Reply> {
    if request.method == "GET" && request.path.ends_with("/models") {
        return Some(Reply::json(
            200,
            &chunks::models(&[(MODEL, 32768), (LARGE_MODEL, 131_072)]),
        ));
    }
    if request.method == "POST" && request.path.ends_with("/tokenize") {
        // About four characters a token, like a real tokenizer on English.
        let count = request.body.len() / 4;
        return Some(Reply::json(
            200,
            &json!({"count": count, "max_model_len": 32768, "tokens": []}),
        ));
    }
    if request.method != "POST" || !request.path.ends_with("/chat/completions") {
        return Some(Reply::json(
            404,
            &json!({"error": {"message": format!("no route {}", request.path), "code": 404}}),
        ));
    }
    None
}

/// Answers like a vLLM server hosting one small, obedient model.
pub fn respond(request: &Request) -> Reply {
    if let Some(reply) = other_route(request) {
        return reply;
    }
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last_user = messages.iter().rposition(is_prompt).unwrap_or(0);
    let prompt = messages
        .get(last_user)
        .and_then(|m| m["content"].as_str())
        .map_or("", without_workspace);
    let step = messages[last_user..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    if prompt.contains("stream fast") {
        return Reply::sse_events(fast_answer(), std::time::Duration::from_millis(1));
    }
    if prompt.contains("stream a burst") {
        return Reply::sse(burst_answer().concat().into_bytes());
    }
    if prompt.contains("slowly") {
        return Reply::sse_events(slow_answer(prompt.contains("think")), SLOW_DELAY);
    }
    if prompt.contains("report_status") {
        // `offcode doctor`'s probe: call the tool it offers.
        return Reply::sse(
            chunks::tool_answer(
                "",
                &[("call_probe", "report_status", json!({"status": "ok"}))],
            )
            .concat()
            .into_bytes(),
        );
    }
    if prompt.contains("make a plan") {
        return Reply::sse(plan_answer(step).concat().into_bytes());
    }
    let plan = actions(prompt);
    let chinese = prompt
        .chars()
        .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    let events = match plan.get(step) {
        Some(Action::Read(path)) => chunks::tool_answer(
            if chinese {
                "我先读取文件。"
            } else {
                "Let me read the file first."
            },
            &[(&format!("call_{step}"), "read", json!({"path": path}))],
        ),
        Some(Action::Write(path)) => {
            let last_result = last_tool_result(&messages);
            let first_line = last_result
                .lines()
                .next()
                .map_or("", |l| l.split_once('\t').map_or(l, |(_, text)| text));
            let content = format!("Notes\n\nFirst line of what I read: {first_line}\n");
            chunks::tool_answer(
                "",
                &[(
                    &format!("call_{step}"),
                    "write",
                    json!({"path": path, "content": content}),
                )],
            )
        }
        Some(Action::Run(command)) => chunks::tool_answer(
            if chinese {
                "我来运行命令。"
            } else {
                "Running it."
            },
            &[(&format!("call_{step}"), "bash", json!({"command": command}))],
        ),
        None if plan.is_empty() => {
            chunks::text_answer(&format!("Mock model here. You said: {prompt}"))
        }
        None => {
            let done: Vec<String> = plan
                .iter()
                .map(|a| match a {
                    Action::Read(p) => format!("read {p}"),
                    Action::Write(p) => format!("wrote {p}"),
                    Action::Run(c) => format!("ran `{c}`"),
                })
                .collect();
            if chinese {
                chunks::text_answer(&format!("完成：{}。", done.join("，")))
            } else {
                chunks::text_answer(&format!("Done: I {}.", done.join(" and ")))
            }
        }
    };
    Reply::sse(events.concat().into_bytes())
}

/// Words in a `stream fast` answer, one SSE event each, 1 ms apart
/// (about 1000 tokens/s).
const FAST_WORDS: usize = 3_000;

/// A todo list of two steps, then the answer.
fn plan_answer(step: usize) -> Vec<String> {
    if step > 0 {
        return chunks::text_answer("Plan made.");
    }
    chunks::tool_answer(
        "Planning.",
        &[(
            "call_plan",
            "todowrite",
            json!({"todos": [
                {"content": "look around", "status": "in_progress"},
                {"content": "answer", "status": "pending"}
            ]}),
        )],
    )
}

/// `FAST_WORDS` words, a line every 12.
fn fast_answer() -> Vec<String> {
    let mut events = vec![chunks::role()];
    for n in 0..FAST_WORDS {
        let piece = if n % 12 == 11 { "word\n" } else { "word " };
        events.push(chunks::text_delta(piece));
    }
    events.extend([
        chunks::text_delta("The end."),
        chunks::finish("stop"),
        chunks::usage(100, FAST_WORDS as u64),
        chunks::done(),
    ]);
    events
}

/// Words in a `stream a burst` answer, all written at once.
pub const BURST_WORDS: usize = 10_000;

/// [`BURST_WORDS`] numbered words (`w00000` …), one SSE event each and a
/// line every 12, sent in one write: the client takes them in faster
/// than any terminal shows them.
fn burst_answer() -> Vec<String> {
    let mut events = vec![chunks::role()];
    for n in 0..BURST_WORDS {
        let end = if n % 12 == 11 { '\n' } else { ' ' };
        events.push(chunks::text_delta(&format!("w{n:05}{end}")));
    }
    events.extend([
        chunks::text_delta("The end of the burst."),
        chunks::finish("stop"),
        chunks::usage(100, BURST_WORDS as u64),
        chunks::done(),
    ]);
    events
}

/// Time between two pieces of a slow answer.
const SLOW_DELAY: std::time::Duration = std::time::Duration::from_millis(10);

/// A long markdown answer, word by word, with reasoning first if asked.
fn slow_answer(think: bool) -> Vec<String> {
    let mut text = String::from("## Slow answer\n\nHere is a list:\n\n");
    for n in 1..=5 {
        let _ = writeln!(text, "- item {n} with `code {n}`");
    }
    text.push_str("\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n");
    for n in 1..=40 {
        let _ = writeln!(
            text,
            "Line {n} of a long answer that keeps streaming so there is time to look at it."
        );
    }
    text.push_str("The end.");
    let mut events = vec![chunks::role()];
    if think {
        for word in "The user wants a slow answer.\nI will write one.".split_inclusive(' ') {
            events.push(chunks::reasoning_delta(word));
        }
    }
    for word in text.split_inclusive([' ', '\n']) {
        events.push(chunks::text_delta(word));
    }
    events.extend([
        chunks::finish("stop"),
        chunks::usage(2_000, 600),
        chunks::done(),
    ]);
    events
}

/// Whether a value is one of the demo's tool calls (used by tests).
pub fn is_tool_call(message: &Value) -> bool {
    message["tool_calls"]
        .as_array()
        .is_some_and(|calls| !calls.is_empty())
}
