//! Calls as small models write them, repaired or told apart from mentions.

use super::*;
use pretty_assertions::assert_eq;

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
