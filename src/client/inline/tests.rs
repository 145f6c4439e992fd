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
                "required": [key],
                "additionalProperties": false
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
    let mut parser = InlineParser::new(&tools(), presumed);
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
    let (outs, calls) = parser.finish();
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
    let mut parser = InlineParser::new(&tools(), false);
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
