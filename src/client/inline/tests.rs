use super::*;
use crate::client::wire::FunctionSpec;
use pretty_assertions::assert_eq;
use serde_json::json;

fn tools() -> Vec<ToolSpec> {
    let tool = |name: &str, key: &str| ToolSpec {
        kind: "function",
        function: FunctionSpec {
            name: name.to_owned(),
            description: format!("{name} tool"),
            parameters: json!({
                "type": "object",
                "properties": {key: {"type": "string"}, "limit": {"type": "integer"}},
                "required": [key]
            }),
        },
    };
    vec![tool("read", "path"), tool("bash", "command")]
}

/// What a user would end with: the answer, the reasoning, the calls.
#[derive(Debug, PartialEq, Eq)]
struct Result {
    content: String,
    reasoning: String,
    calls: Vec<(String, Value)>,
}

fn run(chunks: &[&str], presumed: bool) -> Result {
    run_as(chunks, presumed, true, false)
}

/// `text_mode`: tools described in the prompt; `cut_short`: the response
/// hit the output limit.
fn run_as(chunks: &[&str], presumed: bool, text_mode: bool, cut_short: bool) -> Result {
    let mut parser = InlineParser::new(&tools(), presumed, text_mode);
    let mut content = String::new();
    let mut reasoning = String::new();
    let apply = |outs: Vec<Out>, content: &mut String, reasoning: &mut String| {
        for out in outs {
            match out {
                Out::Content(text) => content.push_str(&text),
                Out::Reasoning(text) => reasoning.push_str(&text),
                Out::WasReasoning(text) => {
                    assert!(text.starts_with(content.as_str()), "{text:?} / {content:?}");
                    content.clear();
                    reasoning.push_str(&text);
                }
                Out::WasContent(text) => {
                    assert_eq!(reasoning, &text);
                    reasoning.clear();
                }
            }
        }
    };
    for chunk in chunks {
        apply(parser.push(chunk), &mut content, &mut reasoning);
    }
    let (outs, calls) = parser.finish(cut_short);
    apply(outs, &mut content, &mut reasoning);
    assert_eq!(
        parser.visible(),
        content,
        "visible() matches what was given"
    );
    Result {
        content,
        reasoning,
        calls: calls
            .into_iter()
            .map(|c| {
                let arguments =
                    serde_json::from_str(&c.arguments).unwrap_or(Value::String(c.arguments));
                (c.name, arguments)
            })
            .collect(),
    }
}

fn expect(content: &str, reasoning: &str, calls: &[(&str, Value)]) -> Result {
    Result {
        content: content.to_owned(),
        reasoning: reasoning.to_owned(),
        calls: calls
            .iter()
            .map(|(n, a)| ((*n).to_owned(), a.clone()))
            .collect(),
    }
}

/// Every way of cutting `input` in two, and one character at a time, gives
/// `expected`.
fn sweep(input: &str, presumed: bool, expected: &Result) {
    assert_eq!(&run(&[input], presumed), expected, "whole: {input:?}");
    for (at, _) in input.char_indices().skip(1) {
        let got = run(&[&input[..at], &input[at..]], presumed);
        assert_eq!(
            &got,
            expected,
            "split at {at}: {:?} | {:?}",
            &input[..at],
            &input[at..]
        );
    }
    let chars: Vec<String> = input.chars().map(String::from).collect();
    let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(&run(&pieces, presumed), expected, "char by char: {input:?}");
}

#[test]
fn hermes_blocks_become_calls_and_leave_the_text() {
    sweep(
        "I'll list the files.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls -la\"}}\n</tool_call>",
        false,
        &expect(
            "I'll list the files.\n",
            "",
            &[("bash", json!({"command": "ls -la"}))],
        ),
    );
    sweep(
        "<tool_call>{\"name\":\"read\",\"arguments\":{\"path\":\"a.txt\"}}</tool_call>\n<tool_call>{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"b.txt\\\"}\"}</tool_call>",
        false,
        &expect(
            "",
            "",
            &[
                ("read", json!({"path": "a.txt"})),
                ("read", json!({"path": "b.txt"})),
            ],
        ),
    );
}

#[test]
fn a_tagged_call_with_its_last_brace_dropped_is_still_a_call() {
    sweep(
        "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}\n</tool_call>",
        false,
        &expect("", "", &[("read", json!({"path": "a"}))]),
    );
}

#[test]
fn qwen3_coder_xml_calls_are_read() {
    sweep(
        "<tool_call>\n<function=bash>\n<parameter=command>\nls -la\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>",
        false,
        &expect(
            "",
            "",
            &[("bash", json!({"command": "ls -la", "limit": 5}))],
        ),
    );
}

#[test]
fn mistral_calls_both_forms() {
    sweep(
        "[TOOL_CALLS][{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}]",
        false,
        &expect("", "", &[("read", json!({"path": "a.txt"}))]),
    );
    sweep(
        "Reading.[TOOL_CALLS]read[ARGS]{\"path\": \"a.txt\"}[TOOL_CALLS]bash[CALL_ID]x1[ARGS]{\"command\": \"ls\"}",
        false,
        &expect(
            "Reading.",
            "",
            &[
                ("read", json!({"path": "a.txt"})),
                ("bash", json!({"command": "ls"})),
            ],
        ),
    );
}

#[test]
fn think_tags_split_reasoning_from_the_answer() {
    sweep(
        "<think>\nThe user greets me.\n</think>\n\nHello, 你好!",
        false,
        &expect("Hello, 你好!", "\nThe user greets me.\n", &[]),
    );
}

#[test]
fn a_lone_close_makes_the_text_before_it_reasoning() {
    let input = "Let me think.\nOK.\n</think>\n\nThe answer.";
    sweep(
        input,
        false,
        &expect("The answer.", "Let me think.\nOK.\n", &[]),
    );
    let mut parser = InlineParser::new(&tools(), false, true);
    parser.push(input);
    assert!(parser.saw_lone_close());
}

#[test]
fn reasoning_is_never_searched_for_calls() {
    sweep(
        "<think>I could <tool_call>{\"name\":\"bash\",\"arguments\":{\"command\":\"rm -rf x\"}}</tool_call> but no.</think>\n<tool_call>{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}</tool_call>",
        false,
        &expect(
            "",
            "I could <tool_call>{\"name\":\"bash\",\"arguments\":{\"command\":\"rm -rf x\"}}</tool_call> but no.",
            &[("read", json!({"path": "a"}))],
        ),
    );
}

#[test]
fn a_presumed_think_block_either_closes_or_was_the_answer() {
    sweep(
        "Thinking it over.</think>\n\nThe answer.",
        true,
        &expect("The answer.", "Thinking it over.", &[]),
    );
    sweep("Just an answer.", true, &expect("Just an answer.", "", &[]));
    sweep(
        "Reading.\n<tool_call>{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}</tool_call>",
        true,
        &expect("Reading.\n", "", &[("read", json!({"path": "a"}))]),
    );
}

#[test]
fn bare_json_calls_fenced_or_not_when_nothing_follows() {
    sweep(
        "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
        false,
        &expect("", "", &[("read", json!({"path": "a.txt"}))]),
    );
    sweep(
        "I'll read it.\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n",
        false,
        &expect("I'll read it.\n", "", &[("read", json!({"path": "a.txt"}))]),
    );
}

#[test]
fn text_that_mentions_a_tool_is_never_a_call() {
    let cases = [
        // An example followed by more text.
        "To read, you could call\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\nbut I won't.",
        // Unknown tool, wrong argument type, extra keys.
        "{\"name\": \"delete_all\", \"arguments\": {}}",
        "{\"name\": \"read\", \"arguments\": {\"path\": 3}}",
        "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}, \"why\": \"x\"}",
        "{\"name\": \"read\", \"arguments\": {\"path\": \"a\", \"mode\": \"w\"}}",
        // Inside prose on one line.
        "Call {\"name\": \"read\", \"arguments\": {\"path\": \"a\"}} to read.",
        "Use `<tool_call>` tags to call tools.",
        "Mistral writes [TOOL_CALLS] before calls.",
        // Inside a code block of another language.
        "```python\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```\n",
        "```rust\nfn main() {\n    {\n    }\n}\n```\nDone.",
        "{x} is a set, and a < b, [y] too.\nNext line.",
        "<think> is a tag models use.",
    ];
    for input in cases {
        sweep(input, false, &expect(input, "", &[]));
    }
}

#[test]
fn the_fixture_without_a_tool_parser_gives_its_call() {
    let body = include_str!("../../../tests/fixtures/openai-sse/vllm-tool-call-in-content.sse");
    let content: String = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    sweep(
        &content,
        false,
        &expect(
            "I'll list the files.\n",
            "",
            &[("run_command", json!({"command": "ls -la"}))],
        ),
    );
}

#[test]
fn the_tool_description_names_every_tool_and_the_format() {
    let text = describe_tools(&tools());
    assert!(text.contains("<tool_call>"));
    assert!(text.contains("\"name\":\"read\""));
    assert!(text.contains("\"name\":\"bash\""));
}

/// Like `sweep`, with the parser set up as `text_mode` / `cut_short`.
fn sweep_as(input: &str, text_mode: bool, cut_short: bool, expected: &Result) {
    assert_eq!(
        &run_as(&[input], false, text_mode, cut_short),
        expected,
        "whole: {input:?}"
    );
    for (at, _) in input.char_indices().skip(1) {
        let got = run_as(&[&input[..at], &input[at..]], false, text_mode, cut_short);
        assert_eq!(&got, expected, "split at {at}");
    }
}

#[test]
fn with_a_working_tool_parser_bare_json_counts_only_alone() {
    let call = "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"rm -rf build\"}}\n```";
    // Shown as an example after prose: never run.
    let example = format!("A bash call looks like this:\n{call}");
    sweep_as(&example, false, false, &expect(&example, "", &[]));
    // The whole answer is the call (Qwen2.5-Coder's habit): run.
    sweep_as(
        call,
        false,
        false,
        &expect("", "", &[("bash", json!({"command": "rm -rf build"}))]),
    );
}

#[test]
fn calls_in_reasoning_that_never_closed_are_never_run() {
    let input = "<think>I could <tool_call>{\"name\":\"bash\",\"arguments\":{\"command\":\"git reset --hard\"}}</tool_call> but";
    let got = run_as(&[input], false, true, true);
    assert!(got.calls.is_empty(), "{got:?}");
    assert_eq!(got.content, input, "shown, not lost");
    // Presumed reasoning cut off at the output limit: the same.
    let got = run_as(
        &["I could <tool_call>{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}</tool_call>"],
        true,
        true,
        true,
    );
    assert!(got.calls.is_empty(), "{got:?}");
}

#[test]
fn prose_about_the_tags_stays_prose() {
    for input in [
        "Qwen wraps reasoning in `<think>` and `</think>` tags.",
        "The block ends with `</think>` in the output.",
        "Use `<tool_call>` tags, then wait for the result.\nMore text follows here.",
        "Mistral writes [TOOL_CALLS] before its calls, then JSON.",
    ] {
        sweep(input, false, &expect(input, "", &[]));
    }
    // A mention before a real block: the block still runs.
    sweep(
        "Here is a `<tool_call>` block:\n<tool_call>{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}</tool_call>",
        false,
        &expect(
            "Here is a `<tool_call>` block:\n",
            "",
            &[("read", json!({"path": "a"}))],
        ),
    );
}

#[test]
fn fences_indented_or_followed_by_words_are_read_right() {
    // An indented JSON block in a list: shown, and the rest not held.
    let list = "1. Config:\n   ```json\n   {\"a\": 1}\n   ```\n2. Run it.\n";
    sweep(list, false, &expect(list, "", &[]));
    let mut parser = InlineParser::new(&tools(), false, true);
    let shown: String = parser
        .push(list)
        .into_iter()
        .map(|o| match o {
            Out::Content(t) => t,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(shown, list, "nothing waits for the end of the response");
    // Words after the closing fence make the call an example.
    let example = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n``` is what a call looks like.";
    sweep(example, false, &expect(example, "", &[]));
}

#[test]
fn a_code_fence_inside_an_unbalanced_brace_keeps_its_code_block() {
    let input = "{\nnot json\n```rust\nlet x = {\n```\nAfter.";
    sweep(input, false, &expect(input, "", &[]));
}

#[test]
fn long_held_text_is_scanned_once() {
    // A 200 KB call arriving 4 bytes at a time stays linear: this would
    // take minutes if every push rescanned the buffer.
    let body = "x".repeat(200_000);
    let input = format!(
        "<tool_call>{{\"name\":\"write\",\"arguments\":{{\"content\":\"{body}\"}}}}</tool_call>"
    );
    let chunks: Vec<&str> = input
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let got = run(&chunks, false);
    assert_eq!(got.calls.len(), 1);
    let json = format!("{{\"name\":\"write\",\"arguments\":{{\"content\":\"{body}\"}}}}");
    let chunks: Vec<&str> = json
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let got = run(&chunks, false);
    assert_eq!(got.content, json, "an unknown tool's object is text");
}

/// What small models write: calls run together, slightly broken, beside
/// words, or in Python's spelling.
mod small_models;
