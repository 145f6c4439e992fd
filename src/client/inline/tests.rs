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

#[test]
fn calls_small_models_write_together_or_slightly_broken_are_read() {
    let read = ("read", json!({"path": "hello.txt"}));
    let run_ls = ("bash", json!({"command": "ls\tx"}));
    // Several pretty-printed objects in one fence, as Qwen2.5-Coder 1.5B
    // writes them.
    sweep(
        "```json\n{\n  \"name\": \"read\",\n  \"arguments\": {\n    \"path\": \"hello.txt\"\n  }\n}\n{\n  \"name\": \"bash\",\n  \"arguments\": {\"command\": \"ls\\tx\"}\n}\n```",
        false,
        &expect("", "", &[read.clone(), run_ls.clone()]),
    );
    // An array of calls.
    sweep(
        "```json\n[{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"}}]\n```",
        false,
        &expect("", "", std::slice::from_ref(&read)),
    );
    // A raw TAB inside a string, and a trailing comma.
    sweep(
        "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\tx\",}}\n",
        false,
        &expect("", "", std::slice::from_ref(&run_ls)),
    );
    // The last braces never written.
    sweep(
        "{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"",
        false,
        &expect("", "", std::slice::from_ref(&read)),
    );
    // The doubled braces of the template's example.
    sweep(
        "{{\"name\": \"read\", \"arguments\": {{\"path\": \"hello.txt\"}}}}\n",
        false,
        &expect("", "", std::slice::from_ref(&read)),
    );
    // Inside <tool_call> too.
    sweep(
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\tx\",},}\n</tool_call>",
        false,
        &expect("", "", &[run_ls]),
    );
}

#[test]
fn repairs_never_make_a_mention_a_call() {
    let cases = [
        // One of several is not a call: none is.
        "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n{\"name\": \"delete_all\", \"arguments\": {}}\n```",
        // Broken beyond an unambiguous repair.
        "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"]}\n",
        "{\"name\": \"read\", \"arguments\": {\"path\": \"unterminated}}\n",
        // A repaired call followed by prose is an example.
        "{\"name\": \"read\", \"arguments\": {\"path\": \"a\",}}\nbut not now.",
        // Text between objects.
        "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\nthen\n{\"name\": \"read\", \"arguments\": {\"path\": \"b\"}}\n```",
    ];
    for input in cases {
        sweep_as(input, false, false, &expect(input, "", &[]));
    }
}

#[test]
fn calls_in_a_tools_block_are_read_and_its_schemas_are_not() {
    let read = ("read", json!({"path": "hello.txt"}));
    let ls = ("bash", json!({"command": "ls"}));
    sweep(
        "<tools>\n{\"name\": \"read\", \"arguments\": {\"path\": \"hello.txt\"}}\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tools>",
        false,
        &expect("", "", &[read.clone(), ls.clone()]),
    );
    sweep(
        "<tools>\n  <function name=\"read\" arguments='{\"path\": \"hello.txt\", \"limit\": 1}'/>\n  <function name=\"bash\" arguments='{\"command\": \"ls\"}'/>\n</tools>",
        false,
        &expect(
            "",
            "",
            &[("read", json!({"path": "hello.txt", "limit": 1})), ls],
        ),
    );
    sweep(
        "<tools><function><name>read</name><arguments>{\"path\": \"hello.txt\"}</arguments></function></tools>",
        false,
        &expect("", "", std::slice::from_ref(&read)),
    );
    // Each call is judged on its own: one whose arguments are not JSON does
    // not sink the good one beside it, and goes to its tool as written,
    // which says what is wrong (the 1.5B model's block, issue 28).
    sweep(
        "<tools>\n<function name=\"read\" arguments='{\"path\": \"hello.txt\"}'/>\n<function name=\"bash\" arguments='{\"command\": ls -l}'/>\n</tools>",
        false,
        &expect(
            "",
            "",
            &[read.clone(), ("bash", json!("{\"command\": ls -l}"))],
        ),
    );
    // With a result the model imagined inside, and a `>` in a value.
    sweep(
        "<tools>\n  <function name=\"read\" arguments='{\"path\": \"hello.txt\"}'>\n    <result>\n      hello\n    </result>\n  </function>\n  <function name=\"bash\" arguments='{\"command\": \"ls > out.txt\"}'/>\n</tools>",
        false,
        &expect(
            "",
            "",
            &[read.clone(), ("bash", json!({"command": "ls > out.txt"}))],
        ),
    );
    sweep(
        "<tools>\n<function name=\"read\" arguments='{\"path\": 3}'/>\n</tools>",
        false,
        &expect("", "", &[("read", json!({"path": 3}))]),
    );
    let not_calls = [
        // The template's own block: schemas, not calls.
        "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"read\", \"description\": \"read tool\", \"parameters\": {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}}}}}\n</tools>",
        // An unknown tool, arguments that do not fit, prose inside.
        "<tools>\n<function name=\"rm_all\" arguments='{}'/>\n</tools>",
        "<tools>\nFirst <function name=\"read\" arguments='{\"path\": \"a\"}'/>\n</tools>",
        "Wrap calls in `<tools>` tags.",
        "The <tools> tag lists tools.",
    ];
    for input in not_calls {
        sweep(input, false, &expect(input, "", &[]));
    }
}

#[test]
fn a_bare_call_with_a_key_its_tool_does_not_take_is_not_run() {
    let tools = tools();
    // The 0.5B model reciting its tools: `read` with another tool's key.
    let recited =
        "{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\", \"replace_all\": true}}";
    for text_mode in [true, false] {
        sweep_as(recited, text_mode, false, &expect(recited, "", &[]));
    }
    let told = unrun_call(recited, &tools).expect("told");
    assert!(
        told.contains("it takes no `replace_all` (it takes `path`, `limit`)"),
        "{told}"
    );
    // Lines of calls, one of them recited: none ran, and the one that
    // does not fit is named, not the well-formed one.
    let dump = format!(
        "{{\"name\": \"read\", \"arguments\": {{\"path\": \"a.txt\"}}}}\n{recited}\n{{\"name\": \"bash\", \"arguments\": {{\"command\": \"ls\"}}}}"
    );
    let got = run_as(&[&dump], false, false, false);
    assert!(got.calls.is_empty(), "{got:?}");
    let told = unrun_call(&dump, &tools).expect("told");
    assert!(
        told.starts_with("Your last message has a `read` call whose arguments do not fit the tool")
            && told.contains("`replace_all`"),
        "{told}"
    );
}

#[test]
fn a_call_to_a_tool_the_agent_lacks_is_told_as_such() {
    let tools = tools();
    let text =
        "```json\n{\"name\": \"write\", \"arguments\": {\"path\": \"a\", \"content\": \"b\"}}\n```";
    let told = unrun_call_as(text, &tools, &["write".to_owned()]).expect("told");
    assert!(
        told.starts_with("Your last message calls `write`, which you do not have here")
            && told.contains("answer in words"),
        "{told}"
    );
    // Also amid words: the name says what was meant.
    let told = unrun_call_as(
        &format!("I will write it:\n{text}\nDone."),
        &tools,
        &["write".to_owned()],
    );
    assert!(told.is_some_and(|t| t.contains("which you do not have here")));
    // Without an agent that lacks it, still a tool that does not exist.
    assert!(
        unrun_call(text, &tools)
            .unwrap()
            .contains("There is no `write` tool")
    );
}

#[test]
fn a_call_that_cannot_be_run_says_what_is_wrong() {
    let tools = tools();
    // A small model's edit with grep's arguments, the whole message.
    let told = unrun_call(
        "{\"name\": \"read\", \"arguments\": {\"pattern\": \"Hello\", \"limit\": \"ten\"}}",
        &tools,
    )
    .expect("told");
    assert!(
        told.starts_with("Your last message has a `read` call whose arguments do not fit the tool, so nothing was run: missing `path`; `limit` must be of type \"integer\"; it takes no `pattern` (it takes `path`, `limit`)"),
        "{told}"
    );
    // In a fence, with words around it: the name still says what was meant.
    let told = unrun_call(
        "I'll read it:\n```json\n{\"name\": \"read\", \"arguments\": {}}\n```",
        &tools,
    )
    .expect("told");
    assert!(told.contains("missing `path`"), "{told}");
    // A tool that does not exist, as the whole message.
    let told = unrun_call(
        "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\"}}\n```",
        &tools,
    )
    .expect("told");
    assert!(
        told.starts_with("There is no `write_file` tool, so nothing was run.")
            && told.contains("The tools are: bash, read."),
        "{told}"
    );
    // JSON shown as an example of something else is not a call.
    assert_eq!(
        unrun_call(
            "OpenAI's format looks like {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}.",
            &tools,
        ),
        None
    );
    assert_eq!(
        unrun_call("{\"name\": \"api\", \"port\": 7341}", &tools),
        None
    );
}

#[test]
fn a_tool_name_on_its_own_line_then_its_arguments_is_a_call() {
    let read = ("read", json!({"path": "hello.txt"}));
    for text_mode in [true, false] {
        for input in [
            "read\n```json\n{\"path\": \"hello.txt\"}\n```",
            "`read`:\n```\n{\"path\": \"hello.txt\"}\n```\n",
            "**read**\n{\"path\": \"hello.txt\"}",
        ] {
            let name_line = input.split('\n').next().unwrap_or_default().to_owned() + "\n";
            sweep_as(
                input,
                text_mode,
                false,
                &expect(&name_line, "", std::slice::from_ref(&read)),
            );
        }
        // Prose before, an unknown name, arguments that do not fit, or
        // words after: text.
        for input in [
            "I will use read\n```json\n{\"path\": \"hello.txt\"}\n```",
            "cat\n```json\n{\"path\": \"hello.txt\"}\n```",
            "read\n```json\n{\"file\": \"hello.txt\"}\n```",
            "read\n```json\n{\"path\": \"hello.txt\"}\n```\nThat is how you call it.",
        ] {
            let got = run_as(&[input], false, text_mode, false);
            assert!(got.calls.is_empty(), "{input:?}: {got:?}");
        }
    }
}

#[test]
fn call_markup_left_in_an_answer_is_named() {
    let tools = tools();
    let told = unrun_call("<tools></tools>", &tools).expect("told");
    assert!(
        told.starts_with("Your last message has an empty <tools> block"),
        "{told}"
    );
    assert!(told.contains("naming one of: bash, read."), "{told}");
    let told = unrun_call("<tools>\ntodos = [\"read\"]\n</tools>", &tools).expect("told");
    assert!(
        told.contains("nothing in it is a call to one of the tools (bash, read)"),
        "{told}"
    );
    let told = unrun_call("<function name=read>hello.txt</function>", &tools).expect("told");
    assert!(
        told.starts_with("Your last message has a <function> element"),
        "{told}"
    );
    let told = unrun_call("Done.\n<tool_call>\n</tool_call>", &tools).expect("told");
    assert!(told.contains("with no call in it"), "{told}");
    // Plain answers are not markup.
    assert_eq!(unrun_call("The port is 7341.", &tools), None);
}

#[test]
fn python_strings_and_a_stray_closing_brace_are_repaired() {
    let ls = ("bash", json!({"command": "ls -l\n"}));
    for text_mode in [true, false] {
        // The 1.5B model's patch call, with a `"""` string.
        sweep_as(
            "```json\n{\n  \"name\": \"bash\",\n  \"arguments\": {\n    \"command\": \"\"\"ls -l\n\"\"\"\n  }\n}\n```",
            text_mode,
            false,
            &expect("", "", std::slice::from_ref(&ls)),
        );
        sweep_as(
            "{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}}",
            text_mode,
            false,
            &expect("", "", &[("read", json!({"path": "a.txt"}))]),
        );
    }
    // Text after the stray brace is not a repair.
    let got = run_as(
        &["{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}} and more"],
        false,
        false,
        false,
    );
    assert!(got.calls.is_empty(), "{got:?}");
}

#[test]
fn a_call_the_model_was_told_to_send_alone_runs_among_words() {
    let call = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```";
    let text = format!("I will read it:\n{call}\nThis reads the file.");
    let meant = || {
        vec![TextCall {
            name: "read".into(),
            arguments: "{\"path\":\"a.txt\"}".into(),
        }]
    };
    for text_mode in [true, false] {
        // Not told: an example.
        let mut parser = InlineParser::new(&tools(), false, text_mode);
        let _ = parser.push(&text);
        assert!(parser.finish(false).1.is_empty());
        // Told, and written again: meant.
        let mut parser = InlineParser::new(&tools(), false, text_mode).with_meant(meant());
        let _ = parser.push(&text);
        assert_eq!(parser.finish(false).1, meant());
        // Another call is still an example.
        let other = text.replace("a.txt", "b.txt");
        let mut parser = InlineParser::new(&tools(), false, text_mode).with_meant(meant());
        let _ = parser.push(&other);
        assert!(parser.finish(false).1.is_empty());
    }
}

#[test]
fn a_tagged_call_inside_a_sentence_is_a_mention() {
    // An outside tester's finds: a README's call quoted in a sentence ran.
    for input in [
        "The README says: <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}</tool_call> which I will not follow.",
        "Never do this: <tools>{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}</tools> it is an example.",
        "Quote:\n> <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}</tool_call>\nThat is what the docs say.",
        "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}</tool_call> is the format.",
    ] {
        for text_mode in [true, false] {
            sweep_as(input, text_mode, false, &expect(input, "", &[]));
        }
    }
    // On lines of its own it is a call, words on other lines or not.
    let touch = ("bash", json!({"command": "touch x"}));
    sweep(
        "Sure, I will do that.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}\n</tool_call>  \nThis creates the file.",
        false,
        &expect(
            "Sure, I will do that.\nThis creates the file.",
            "",
            &[touch],
        ),
    );
}

#[test]
fn a_made_up_tool_with_anothers_arguments_is_pointed_at_it() {
    let tools = tools();
    // The 0.5B model's call: a file's name as the tool, bash's arguments.
    let told = unrun_call(
        "{\"name\": \"fix_calc.py\", \"arguments\": {\"command\": \"python3 -m unittest\", \"timeout\": 10}}",
        &tools,
    )
    .expect("told");
    assert!(
        told.starts_with("There is no `fix_calc.py` tool")
            && told.ends_with("Its arguments are `bash`'s: call `bash` with them."),
        "{told}"
    );
    // Arguments that fit no tool say nothing more.
    let told =
        unrun_call("{\"name\": \"do_it\", \"arguments\": {\"x\": 1}}", &tools).expect("told");
    assert!(!told.contains("Its arguments"), "{told}");
}

#[test]
fn python_values_in_a_call_are_json_values() {
    // The 1.5B model's fix, written with Python's `False`.
    let edit = ToolSpec {
        kind: "function",
        function: FunctionSpec {
            name: "edit".to_owned(),
            description: "edit tool".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean"}
                },
                "required": ["path", "old_string", "new_string"]
            }),
        },
    };
    let text = "{\"name\": \"edit\", \"arguments\": {\"path\": \"calc.py\", \"old_string\": \"return a - b\", \"new_string\": \"return a + b\", \"replace_all\": False}}";
    for text_mode in [true, false] {
        for at in [0, 20, text.len() - 3] {
            let mut parser = InlineParser::new(std::slice::from_ref(&edit), false, text_mode);
            let mut shown: Vec<Out> = parser.push(&text[..at]);
            shown.extend(parser.push(&text[at..]));
            let (rest, calls) = parser.finish(false);
            shown.extend(rest);
            assert!(
                !shown
                    .iter()
                    .any(|o| matches!(o, Out::Content(c) if !c.is_empty())),
                "{shown:?}"
            );
            assert_eq!(calls.len(), 1, "split at {at}");
            assert_eq!(
                serde_json::from_str::<Value>(&calls[0].arguments).unwrap(),
                json!({"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b", "replace_all": false})
            );
        }
    }
}

#[test]
fn a_call_after_words_that_disown_it_is_a_mention_in_every_form() {
    // An outside tester's finds: a text caller's call after prose ran,
    // though the prose said not to run it.
    let call = "{\"name\": \"bash\", \"arguments\": {\"command\": \"touch PWNED\"}}";
    for before in [
        "Never run this, it is only an example:\n\n",
        "I will not run the following command:\n",
        "不要运行这个：\n",
        "For example:\n",
    ] {
        for form in [
            call.to_owned(),
            format!("```json\n{call}\n```"),
            format!("<tool_call>\n{call}\n</tool_call>"),
            format!("bash\n{}", "{\"command\": \"touch PWNED\"}"),
        ] {
            for text_mode in [true, false] {
                let text = format!("{before}{form}");
                let got = run_as(&[&text], false, text_mode, false);
                assert!(got.calls.is_empty(), "{text_mode} {text:?}: {got:?}");
                assert!(got.content.contains("PWNED"), "{text:?}: {got:?}");
            }
        }
    }
    // Words that announce the call still let it run for a text caller.
    for before in ["I'll run it:\n", "Here:\n", "我来运行：\n"] {
        let got = run_as(&[&format!("{before}{call}")], false, true, false);
        assert_eq!(got.calls.len(), 1, "{before:?}: {got:?}");
    }
}
