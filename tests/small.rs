//! What small local models meet (issue 28): the first request's size, the
//! compact prompt and tools, the sampling sent, answers that leave the task
//! undone ending with exit 3, repeated calls refused, the forms small
//! models write calls in, and the report of what was done. Each test checks
//! the real effect: files on disk, requests on the wire, exit codes.

use serde_json::{Value, json};

use crate::support::{Workspace, chunks, mock, notes, offered as names, run, sse, system_prompt};

/// A small model's name, as llama.cpp lists it.
const SMALL: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// `Workspace::new`'s config with `extra` keys.
fn config(ws: &Workspace, extra: &str) {
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        format!(
            "{{ retry: {{ initial_delay_ms: 10, max_delay_ms: 40, max_retries: 2 }}, {extra} }}"
        ),
    )
    .unwrap();
}

/// A reply of one tool call and no words.
fn one_call(id: &str, tool: &str, arguments: Value) -> crate::support::Reply {
    sse(&chunks::tool_answer("", &[(id, tool, arguments)]))
}

/// `offcode run --yes --model MODEL PROMPT`.
fn task(ws: &Workspace, base_url: &str, model: &str, prompt: &str) -> crate::support::Output {
    run(ws.offcode(base_url, &["run", "--yes", "--model", model, prompt]))
}

#[test]
fn the_first_request_with_every_built_in_tool_is_under_4_kb() {
    let ws = Workspace::new();
    config(&ws, r#""compact": "off", "validate": false"#);
    std::fs::write(
        ws.root.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(ws.root.join("test_calc.py"), "from calc import add\n").unwrap();
    let server = mock();
    server.push(one_call(
        "w",
        "write",
        json!({"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
    ));
    server.push(sse(&chunks::text_answer("Fixed calc.py.")));
    let output = task(
        &ws,
        &server.base_url(),
        "mock-model",
        // The longest prompt of the real-model tier's task set.
        "test_calc.py 里的测试失败了。修复 calc.py 里的错误，让 python3 -m unittest test_calc 通过。",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let first = server
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    let body = first.json();
    for tool in [
        "read",
        "write",
        "edit",
        "patch",
        "list",
        "grep",
        "glob",
        "bash",
        "todowrite",
        "todoread",
        "task",
    ] {
        assert!(names(&body).iter().any(|n| n == tool), "{tool}");
    }
    assert!(first.body.len() < 4096, "{} bytes", first.body.len());
}

#[test]
fn a_small_model_gets_the_compact_prompt_and_tools_unless_the_config_says_otherwise() {
    let cases = [
        // (config, model, compact)
        ("", SMALL, true),
        ("", "Qwen/Qwen2.5-Coder-32B-Instruct", false),
        // An MoE's active size is not its size.
        ("", "Qwen3-Coder-30B-A3B-Instruct", false),
        (r#""compact": "off""#, SMALL, false),
        (
            r#""compact": "on""#,
            "Qwen/Qwen2.5-Coder-32B-Instruct",
            true,
        ),
        // A short context.
        (r#""context_limit": 8192"#, "mock-model", true),
    ];
    for (extra, model, compact) in cases {
        let ws = Workspace::new();
        config(&ws, extra);
        let server = mock();
        server.push(sse(&chunks::text_answer("The port is 7341.")));
        let output = task(
            &ws,
            &server.base_url(),
            model,
            "Which port does the api use?",
        );
        assert_eq!(output.code, 0, "{}", output.stderr);
        let body = &server.chat_bodies()[0];
        let tools = names(body);
        let left_out = ["task", "todowrite", "todoread", "patch"];
        assert_eq!(
            left_out.iter().any(|t| tools.iter().any(|n| n == t)),
            !compact,
            "{extra} {model}: {tools:?}"
        );
        for kept in ["read", "write", "edit", "bash", "grep", "glob", "list"] {
            assert!(tools.iter().any(|n| n == kept), "{kept}: {tools:?}");
        }
        // The compact prompt does not push the todo list.
        assert_eq!(
            system_prompt(body).contains("todowrite"),
            !compact,
            "{extra} {model}"
        );
        // `offcode context` shows which prompt is in use.
        let shown = run(ws.offcode(&server.base_url(), &["context"]));
        if extra.is_empty() {
            continue;
        }
        assert_eq!(
            shown.stdout.contains("compact prompt"),
            compact,
            "{extra}: {}",
            shown.stdout
        );
    }
}

#[test]
fn the_agents_sampling_is_sent_unless_the_config_says_server() {
    let cases = [
        ("", Some(0.2), Some(0.9)),
        (r#""temperature": 0.7"#, Some(0.7), Some(0.9)),
        (r#""temperature": "server", "top_p": "server""#, None, None),
    ];
    for (extra, temperature, top_p) in cases {
        let ws = Workspace::new();
        config(&ws, extra);
        let server = mock();
        server.push(sse(&chunks::text_answer("Hi.")));
        let output = task(&ws, &server.base_url(), "mock-model", "hello");
        assert_eq!(output.code, 0, "{}", output.stderr);
        let body = &server.chat_bodies()[0];
        assert_eq!(body["temperature"].as_f64(), temperature, "{extra}");
        assert_eq!(body["top_p"].as_f64(), top_p, "{extra}");
    }
    // A word other than "server" is an error naming the key.
    let ws = Workspace::new();
    config(&ws, r#""temperature": "low""#);
    let output = task(&ws, "http://127.0.0.1:9/v1", "mock-model", "hello");
    assert_eq!(output.code, 2, "{}", output.stderr);
    assert!(
        output.stderr.contains("\"server\" to send none"),
        "{}",
        output.stderr
    );
}

#[test]
fn a_change_asked_for_and_never_made_is_repaired_once_then_exit_3() {
    // A larger model is told at once (a small one is asked again first:
    // `a_small_models_answer_that_did_nothing_is_set_aside_and_asked_again`).
    for prompt in [
        "In greet.py, change the greeting from Hello to Goodbye.",
        "把 greet.py 里的问候语 Hello 改成 Goodbye。",
    ] {
        let ws = Workspace::new();
        std::fs::write(ws.root.join("greet.py"), "print('Hello')\n").unwrap();
        let server = mock();
        // The small model reports the change it never made, twice.
        server.push(sse(&chunks::text_answer("I changed Hello to Goodbye.")));
        server.push(sse(&chunks::text_answer("Done: Goodbye.")));
        let output = task(&ws, &server.base_url(), "mock-model", prompt);
        assert_eq!(output.code, 3, "{}", output.stderr);
        assert!(
            output
                .stderr
                .contains("no file changed, though the task asks for a change"),
            "{}",
            output.stderr
        );
        let bodies = server.chat_bodies();
        assert_eq!(bodies.len(), 2);
        assert!(
            notes(&bodies[1])[0].ends_with(&format!(
                "Nothing has changed yet, so the task is not done. Do it now: {prompt}"
            )),
            "{:?}",
            notes(&bodies[1])
        );
        assert_eq!(
            std::fs::read_to_string(ws.root.join("greet.py")).unwrap(),
            "print('Hello')\n"
        );
    }
    // A question is not a change: answered, exit 0, one request.
    let ws = Workspace::new();
    let server = mock();
    server.push(sse(&chunks::text_answer("It prints Hello.")));
    let output = task(
        &ws,
        &server.base_url(),
        "mock-model",
        "What does greet.py print?",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(server.chat_bodies().len(), 1);
}

#[test]
fn call_markup_left_in_the_answer_is_told_then_exit_3() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("hello.txt"), "hello world\n").unwrap();
    let server = mock();
    server.push(sse(&chunks::text_answer("<tools></tools>")));
    server.push(sse(&chunks::text_answer("<tools>\n</tools>")));
    let output = task(
        &ws,
        &server.base_url(),
        "mock-model",
        "What is in hello.txt?",
    );
    assert_eq!(output.code, 3, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 2);
    assert!(
        notes(&bodies[1])[0].contains("an empty <tools> block"),
        "{:?}",
        notes(&bodies[1])
    );
}

#[test]
fn the_same_call_answered_the_same_is_refused_even_under_yes() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("hello.txt"), "hello world\n").unwrap();
    let server = mock();
    for n in 0..3 {
        server.push(one_call(
            &format!("r{n}"),
            "read",
            json!({"path": "hello.txt"}),
        ));
    }
    server.push(sse(&chunks::text_answer("It says hello world.")));
    let output = run(ws.offcode(
        &server.base_url(),
        &[
            "run",
            "--yes",
            "--json",
            "--model",
            "mock-model",
            "What is in hello.txt?",
        ],
    ));
    assert_eq!(output.code, 0, "{}", output.stderr);
    let ends: Vec<Value> = output
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_call_end")
        .collect();
    let outcomes: Vec<&str> = ends
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["ok", "ok", "refused"], "{}", output.stdout);
    let bodies = server.chat_bodies();
    let last = crate::support::tool_results(&bodies[3]);
    assert!(
        last.last()
            .unwrap()
            .contains("Not run: you made this exact `read` call 2 times"),
        "{last:?}"
    );
}

#[test]
fn calls_in_the_forms_small_models_write_them_do_the_work() {
    let forms = [
        // `<tools>` with attribute arguments, a result it imagined inside,
        // beside a call whose arguments are not JSON.
        "<tools>\n  <function name=\"write\" arguments='{\"path\": \"out.txt\", \"content\": \"HELLO WORLD\\n\"}'>\n    <result>ok</result>\n  </function>\n  <function name=\"read\" arguments='{\"path\": hello.txt}'/>\n</tools>",
        // The tool's name on its own line, then its arguments, fenced.
        "write\n```json\n{\"path\": \"out.txt\", \"content\": \"HELLO WORLD\\n\"}\n```",
        // A Python string and a stray closing brace.
        "{\"name\": \"write\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"\"\"HELLO WORLD\n\"\"\"}}}",
        // Another agent's field name.
        "{\"name\": \"write\", \"arguments\": {\"file_path\": \"out.txt\", \"content\": \"HELLO WORLD\\n\"}}",
    ];
    for form in forms {
        for model in ["mock-model", SMALL] {
            let ws = Workspace::new();
            std::fs::write(ws.root.join("hello.txt"), "hello world\n").unwrap();
            let server = mock();
            server.push(sse(&chunks::text_answer(form)));
            server.push(sse(&chunks::text_answer("Wrote HELLO WORLD to out.txt.")));
            let output = task(
                &ws,
                &server.base_url(),
                model,
                "write hello.txt in upper case to out.txt",
            );
            assert_eq!(output.code, 0, "{form}\n{}", output.stderr);
            assert_eq!(
                std::fs::read_to_string(ws.root.join("out.txt")).unwrap(),
                "HELLO WORLD\n",
                "{form}"
            );
        }
    }
}

#[test]
fn a_first_request_to_run_unconfined_runs_in_the_sandbox() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("app.log"),
        "INFO a\nERROR b\nINFO c\nERROR d\n",
    )
    .unwrap();
    let server = mock();
    // The small model's count: `unconfined` and `timeout` as a string.
    server.push(one_call("b1", "bash", json!({"command": "grep -c ERROR app.log > count.txt", "unconfined": true, "timeout": "120"})));
    server.push(sse(&chunks::text_answer("I'm off.")));
    let output = task(
        &ws,
        &server.base_url(),
        "mock-model",
        "Count the ERROR lines of app.log and write the number to count.txt.",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("count.txt")).unwrap(),
        "2\n"
    );
    let result = crate::support::first_tool_result(&server.chat_bodies()[1]);
    assert!(
        result.contains("`unconfined` is only for a command that failed there first"),
        "{result}"
    );
    // The answer said nothing; offcode says what was done.
    assert!(
        output
            .stdout
            .trim_end()
            .ends_with("Ran `grep -c ERROR app.log > count.txt`."),
        "{}",
        output.stdout
    );
}

#[test]
fn a_file_the_task_names_that_never_appears_leaves_it_undone() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("app.log"), "ERROR a\nINFO b\n").unwrap();
    let server = mock();
    // It counts into another file, and says it wrote count.txt, twice.
    for n in 0..2 {
        server.push(one_call(
            "b",
            "bash",
            json!({"command": format!("grep -c ERROR app.log > counted{n}.txt")}),
        ));
        server.push(sse(&chunks::text_answer("I wrote 1 to count.txt.")));
    }
    let output = task(
        &ws,
        &server.base_url(),
        "mock-model",
        "Count the ERROR lines of app.log and write the number to count.txt.",
    );
    assert_eq!(output.code, 3, "{}", output.stderr);
    assert!(
        output
            .stderr
            .contains("a file the task names still missing"),
        "{}",
        output.stderr
    );
    assert!(!ws.root.join("count.txt").exists());
    assert!(ws.root.join("counted1.txt").exists());
}

/// A workspace with a config file to ask about.
fn port() -> Workspace {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("config.json"), "{\"port\": 7341}\n").unwrap();
    ws
}

/// A workspace with a function to rename across two files.
fn shop() -> Workspace {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("shop.py"),
        "def compute_total(p):\n    return sum(p)\n",
    )
    .unwrap();
    std::fs::write(ws.root.join("main.py"), "from shop import compute_total\n").unwrap();
    ws
}

/// The prompt of a rename across two files.
const RENAME: &str = "Rename the function compute_total to total_price in shop.py and in main.py.";

#[test]
fn a_rename_done_in_one_of_the_files_named_is_pointed_at_the_other() {
    let ws = shop();
    let edit = |id: &str, path: &str| {
        one_call(
            id,
            "edit",
            json!({"path": path, "old_string": "compute_total", "new_string": "total_price"}),
        )
    };
    let server = mock();
    server.push(edit("e1", "shop.py"));
    // Set aside twice (asked again), then told.
    for _ in 0..3 {
        server.push(sse(&chunks::text_answer("Renamed.")));
    }
    server.push(edit("e2", "main.py"));
    server.push(sse(&chunks::text_answer("Renamed in both.")));
    let output = task(&ws, &server.base_url(), SMALL, RENAME);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 6);
    // Right after the edit: what is left, as offcode sees it.
    assert_eq!(
        notes(&bodies[1]),
        [r#"(offcode) `main.py` still has `compute_total`:
{"name":"edit","arguments":{"path":"main.py","old_string":"compute_total","new_string":"total_price","replace_all":false}}"#]
    );
    for asked_again in &bodies[2..4] {
        assert_eq!(asked_again["messages"], bodies[1]["messages"]);
    }
    assert!(
        notes(&bodies[4])[1]
            .contains("`main.py`, which the task names, still has `compute_total`, which you replaced in `shop.py`")
            && notes(&bodies[4])[1].contains(r#"{"name":"edit","arguments":{"path":"main.py","old_string":"compute_total","new_string":"total_price","replace_all":false}}"#),
        "{:?}",
        notes(&bodies[4])
    );
    // Both files renamed: it may be done.
    assert_eq!(
        notes(&bodies[5])[2],
        "(offcode) If the task is done now, reply in one sentence, with no tool call."
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("main.py")).unwrap(),
        "from shop import total_price\n"
    );
}

#[test]
fn a_rename_made_inside_a_longer_edit_is_pointed_at_the_other_file() {
    // At llama.cpp's own sampling the 1.5B model renamed the function in
    // its `def` line only, and said it had renamed it in both files.
    let ws = shop();
    std::fs::write(
        ws.root.join("main.py"),
        "from shop import compute_total\n\nprint(compute_total([1, 2]))\n",
    )
    .unwrap();
    let server = mock();
    server.push(one_call(
        "e1",
        "edit",
        json!({"path": "shop.py", "old_string": "def compute_total(p):", "new_string": "def total_price(p):"}),
    ));
    server.push(one_call(
        "e2",
        "edit",
        json!({"path": "main.py", "old_string": "compute_total", "new_string": "total_price", "replace_all": true}),
    ));
    server.push(sse(&chunks::text_answer("Renamed in both.")));
    let output = task(&ws, &server.base_url(), SMALL, RENAME);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(
        notes(&bodies[1]),
        [r#"(offcode) `main.py` still has `compute_total` (2 times):
{"name":"edit","arguments":{"path":"main.py","old_string":"compute_total","new_string":"total_price","replace_all":true}}"#]
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("main.py")).unwrap(),
        "from shop import total_price\n\nprint(total_price([1, 2]))\n"
    );
}

#[test]
fn an_edit_that_is_no_rename_is_not_offered_for_the_other_files() {
    // At llama.cpp's own sampling the 1.5B model replaced `add` in calc.py
    // with a whole line; offered the same edit for test_calc.py, it made
    // it and broke the test file.
    let ws = Workspace::new();
    config(&ws, r#""validate": false"#);
    std::fs::write(
        ws.root.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    let test = "from calc import add\n\nassert add(2, 3) == 5\n";
    std::fs::write(ws.root.join("test_calc.py"), test).unwrap();
    let server = mock();
    server.push(one_call(
        "e",
        "edit",
        // The model's own call, as it made it.
        json!({"path": "calc.py", "old_string": "add", "new_string": "def add(a, b): return a - b"}),
    ));
    server.push(sse(&chunks::text_answer("Fixed add in calc.py.")));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "The test in test_calc.py fails. Fix the bug in calc.py.",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(
        notes(&bodies[1]),
        ["(offcode) If the task is done now, reply in one sentence, with no tool call."]
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("test_calc.py")).unwrap(),
        test
    );
}

#[test]
fn a_path_beside_the_workspace_and_words_before_a_call_still_do_the_work() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("greet.py"), "print('Hello')\n").unwrap();
    // The small model drops the workspace's last folder and explains first.
    let beside = ws.root.parent().unwrap().join("greet.py");
    let call = json!({"name": "edit", "arguments": {"path": beside, "old_string": "Hello", "new_string": "Goodbye"}});
    let server = mock();
    server.push(sse(&chunks::text_answer(&format!(
        "I will use the edit tool:\n```json\n{call}\n```"
    ))));
    server.push(sse(&chunks::text_answer("Changed greet.py.")));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "In greet.py, change the greeting from Hello to Goodbye.",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("greet.py")).unwrap(),
        "print('Goodbye')\n"
    );
    assert!(!beside.exists());
}

#[test]
fn a_call_among_words_sent_again_after_the_note_runs() {
    let ws = port();
    let call = json!({"name": "read", "arguments": {"path": "config.json"}});
    let server = mock();
    for _ in 0..2 {
        server.push(sse(&chunks::text_answer(&format!(
            "I'll read it:\n```json\n{call}\n```\nThis reads the file."
        ))));
    }
    server.push(sse(&chunks::text_answer("The port is 7341.")));
    // A larger model: told at once, and nothing read for it first.
    let output = task(
        &ws,
        &server.base_url(),
        "mock-model",
        "What is the port in config.json?",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        notes(&bodies[1])[0].ends_with(&format!("no words before or after it:\n{call}")),
        "{:?}",
        notes(&bodies[1])
    );
    assert!(
        crate::support::first_tool_result(&bodies[2]).contains("\"port\": 7341"),
        "{:?}",
        bodies[2]
    );
    assert_eq!(output.stdout.trim(), "The port is 7341.");
}

#[test]
fn a_question_about_a_file_answered_without_reading_it_is_not_an_answer() {
    for (replies, code) in [
        // Told, it reads and answers from the file.
        (
            vec![
                chunks::text_answer("The port is 3000."),
                chunks::tool_answer("", &[("r", "read", json!({"path": "config.json"}))]),
                chunks::text_answer("The port is 7341."),
            ],
            0,
        ),
        // Guessing twice.
        (
            vec![
                chunks::text_answer("The port is 3000."),
                chunks::text_answer("The port is 8080."),
            ],
            3,
        ),
    ] {
        let ws = port();
        let server = mock();
        for reply in &replies {
            server.push(sse(reply));
        }
        // A larger model (a small one starts with the file read).
        let output = task(
            &ws,
            &server.base_url(),
            "mock-model",
            "What is the port in config.json?",
        );
        assert_eq!(output.code, code, "{}", output.stderr);
        let bodies = server.chat_bodies();
        assert!(
            notes(&bodies[1])[0].contains("You answered without reading `config.json`"),
            "{:?}",
            notes(&bodies[1])
        );
    }
}

#[test]
fn a_rename_left_half_done_after_the_note_exits_3() {
    let ws = shop();
    let server = mock();
    server.push(one_call(
        "e1",
        "edit",
        json!({"path": "shop.py", "old_string": "compute_total", "new_string": "total_price"}),
    ));
    // It says it changed main.py too, and never does: set aside twice,
    // told, and said again.
    for _ in 0..3 {
        server.push(sse(&chunks::text_answer("Renamed.")));
    }
    server.push(sse(&chunks::text_answer("I renamed it in main.py too.")));
    let output = task(&ws, &server.base_url(), SMALL, RENAME);
    assert_eq!(output.code, 3, "{}", output.stderr);
    assert!(
        output
            .stderr
            .contains("a file the task names still holding what it replaced elsewhere"),
        "{}",
        output.stderr
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("main.py")).unwrap(),
        "from shop import compute_total\n"
    );
}

#[test]
fn a_search_that_found_the_file_counts_as_reading_it() {
    let ws = port();
    let server = mock();
    server.push(one_call("g", "grep", json!({"pattern": "port"})));
    server.push(sse(&chunks::text_answer("The port is 7341.")));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "What is the port in config.json?",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(server.chat_bodies().len(), 2);
}

#[test]
fn a_small_model_starts_with_the_files_its_task_names_read_as_the_policy_allows() {
    let ws = Workspace::new();
    config(
        &ws,
        r#""permission": { "read": { "*": "allow", "secret.txt": "deny", "notes.md": "ask" } }"#,
    );
    std::fs::write(ws.root.join("hello.txt"), "hello world\n").unwrap();
    std::fs::write(ws.root.join("secret.txt"), "TOKEN-4711\n").unwrap();
    std::fs::write(ws.root.join("notes.md"), "ASKED-0815\n").unwrap();
    std::fs::write(ws.root.join("big.log"), "line\n".repeat(4000)).unwrap();
    // A hard link to a file outside the workspace.
    let outside = ws.home.join("outside.txt");
    std::fs::write(&outside, "OUTSIDE-4242\n").unwrap();
    std::fs::hard_link(&outside, ws.root.join("linked.txt")).unwrap();
    let prompt = "Read hello.txt, secret.txt, notes.md, linked.txt and big.log and write a summary to out.txt";
    for (model, read) in [(SMALL, true), ("mock-model", false)] {
        let server = mock();
        server.push(one_call(
            "w",
            "write",
            json!({"path": "out.txt", "content": "HELLO WORLD"}),
        ));
        server.push(sse(&chunks::text_answer("Done.")));
        let output = task(&ws, &server.base_url(), model, prompt);
        assert_eq!(output.code, 0, "{model}: {}", output.stderr);
        let first = &server.chat_bodies()[0];
        let results = crate::support::tool_results(first);
        if read {
            // Only hello.txt: denied, asked-for, hard-linked, too big and missing files are not.
            assert_eq!(results.len(), 1, "{results:?}");
            assert!(results[0].contains("hello world"), "{results:?}");
            let calls = &first["messages"][2]["tool_calls"];
            assert_eq!(calls.as_array().unwrap().len(), 1, "{calls}");
            assert_eq!(calls[0]["function"]["name"], "read");
        } else {
            assert!(results.is_empty(), "{results:?}");
        }
        // Nobody was asked, and what the policy keeps from the model never reached it.
        let sent: String = server.chat_bodies().iter().map(Value::to_string).collect();
        assert!(
            !sent.contains("TOKEN-4711")
                && !sent.contains("ASKED-0815")
                && !sent.contains("OUTSIDE-4242")
        );
        assert!(
            !output.stderr.contains("→ read notes.md"),
            "{}",
            output.stderr
        );
        std::fs::remove_file(ws.root.join("out.txt")).unwrap();
    }
}

#[test]
fn a_small_models_answer_that_did_nothing_is_set_aside_and_asked_again() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("hello.txt"), "hello world\n").unwrap();
    let server = mock();
    server.push(sse(&chunks::text_answer("I wrote it to out.txt.")));
    server.push(one_call(
        "w",
        "write",
        json!({"path": "out.txt", "content": "HELLO WORLD"}),
    ));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "read hello.txt and write it in upper case to out.txt",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("out.txt")).unwrap(),
        "HELLO WORLD"
    );
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    // Asked again as before the answer, sampled hotter, and told nothing.
    assert_eq!(bodies[1]["messages"], bodies[0]["messages"]);
    assert_eq!(bodies[0]["temperature"], json!(0.2));
    assert_eq!(bodies[1]["temperature"], json!(0.5));
    assert_eq!(bodies[2]["temperature"], json!(0.2));
    assert!(notes(&bodies[1]).is_empty());
    // After the write, nothing offcode can see is left: it may be done.
    assert_eq!(
        notes(&bodies[2]),
        ["(offcode) If the task is done now, reply in one sentence, with no tool call."]
    );
    assert!(
        output
            .stderr
            .contains("offcode set the answer aside and asks again")
    );
    // The answer printed is the last one; the one set aside stays in the
    // session file, off the conversation's branch.
    assert_eq!(output.stdout, "Done.\n\nChanged out.txt.\n");
    let session = std::fs::read_to_string(&ws.session_files()[0]).unwrap();
    assert!(session.contains("I wrote it to out.txt."));
}

#[test]
fn an_answer_set_aside_stays_out_of_the_conversation_after_a_kill() {
    // An outside tester's find: killed while asking again, `--continue`
    // brought the set-aside claim back.
    use std::time::Duration;
    let ws = Workspace::new();
    std::fs::write(ws.root.join("f.txt"), "hi\n").unwrap();
    let server = mock();
    server.push(sse(&chunks::text_answer(
        "I have updated f.txt to say hello.",
    )));
    let mut slow = vec![chunks::role(), chunks::text_delta("Working")];
    slow.extend((0..400).map(|i| chunks::text_delta(&format!("{i} "))));
    server.push(crate::support::Reply::sse_events(
        slow,
        Duration::from_millis(25),
    ));
    let mut child = ws
        .offcode(
            &server.base_url(),
            &[
                "run",
                "--yes",
                "--model",
                SMALL,
                "change f.txt so it says hello",
            ],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while server.chat_bodies().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL, while asking again
    child.wait().unwrap();
    let session = std::fs::read_to_string(&ws.session_files()[0]).unwrap();
    assert!(session.contains("I have updated f.txt to say hello."));
    assert!(session.contains("\"type\":\"set_aside\""), "{session}");
    server.push(sse(&chunks::text_answer("f.txt says hi.")));
    let output = run(ws.offcode(
        &server.base_url(),
        &[
            "run",
            "--continue",
            "--yes",
            "--model",
            SMALL,
            "what does f.txt say?",
        ],
    ));
    assert_eq!(output.code, 0, "{}", output.stderr);
    let last = server.chat_bodies().pop().unwrap();
    assert!(!last.to_string().contains("I have updated f.txt"), "{last}");
}

#[test]
fn a_small_model_asked_a_question_changes_no_file() {
    let ws = port();
    let server = mock();
    server.push(one_call(
        "e",
        "edit",
        json!({"path": "config.json", "old_string": "7341", "new_string": "8080"}),
    ));
    // A rewrite of the file is refused as a question's too, not failed as
    // a rewrite: a failed change would be owed (the 1.5B model, asked how
    // many functions utils.py defines, was told to make its rewrite work).
    server.push(one_call(
        "w",
        "write",
        json!({"path": "config.json", "content": "{}"}),
    ));
    server.push(sse(&chunks::text_answer("The port is 7341.")));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "What is the port in config.json?",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("config.json")).unwrap(),
        "{\"port\": 7341}\n"
    );
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    for body in &bodies[1..] {
        assert!(
            crate::support::tool_results(body)
                .last()
                .is_some_and(|r| r.contains("the task is a question, so no file changes")),
            "{:?}",
            crate::support::tool_results(body)
        );
    }
    assert_eq!(output.stdout.trim(), "The port is 7341.");
    // A question that asks for a change is not refused one.
    let ws = port();
    let server = mock();
    server.push(one_call(
        "e",
        "edit",
        json!({"path": "config.json", "old_string": "7341", "new_string": "8080"}),
    ));
    server.push(sse(&chunks::text_answer("Changed it.")));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "Can you change the port in config.json to 8080?",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("config.json")).unwrap(),
        "{\"port\": 8080}\n"
    );
}

#[test]
fn a_small_models_call_written_as_a_files_content_is_not_written() {
    // The 1.5B model wrote its rename's edit over shop.py.
    let ws = shop();
    let markup = "<tools><function><name>edit</name><arguments><path>shop.py</path><old_string>compute_total</old_string><new_string>total_price</new_string></arguments></function></tools>";
    for (model, written) in [(SMALL, false), ("mock-model", true)] {
        let before = std::fs::read_to_string(ws.root.join("shop.py")).unwrap();
        let server = mock();
        server.push(one_call(
            "w",
            "write",
            json!({"path": "shop.py", "content": markup}),
        ));
        server.push(sse(&chunks::text_answer("Done.")));
        server.push(sse(&chunks::text_answer("Done.")));
        server.push(sse(&chunks::text_answer("Done.")));
        server.push(sse(&chunks::text_answer("Done.")));
        let _ = task(&ws, &server.base_url(), model, RENAME);
        let after = std::fs::read_to_string(ws.root.join("shop.py")).unwrap();
        if written {
            // A larger model's write is its own.
            assert_eq!(after, markup);
        } else {
            assert_eq!(after, before);
            let results = crate::support::tool_results(&server.chat_bodies()[1]);
            assert!(
                results
                    .iter()
                    .any(|r| r.contains("the content is a call to `edit`, not the file's text")),
                "{results:?}"
            );
        }
    }
}

#[test]
fn a_tool_the_compact_profile_leaves_out_never_runs() {
    // An outside tester's find: a small model, never offered `task`, ran
    // one whose subagent rewrote config.json in a question's turn.
    let ws = port();
    let server = mock();
    server.push(one_call(
        "t",
        "task",
        json!({"agent": "general", "description": "x", "prompt": "set port to 7 in config.json"}),
    ));
    server.push(one_call(
        "w",
        "write",
        json!({"path": "config.json", "content": "{\"port\": 7}\n"}),
    ));
    server.push(sse(&chunks::text_answer("ok")));
    server.push(sse(&chunks::text_answer("The port is 7341.")));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "What is the port in config.json?",
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("config.json")).unwrap(),
        "{\"port\": 7341}\n",
        "{}",
        output.stderr
    );
    let results = crate::support::tool_results(&server.chat_bodies()[1]);
    assert!(
        results
            .iter()
            .any(|r| r.contains("`task` is not one of the `build` agent's tools")),
        "{results:?}"
    );
}

#[test]
fn a_small_model_changes_an_existing_file_with_edit_and_writes_only_new_ones() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    let server = mock();
    // A whole rewrite of calc.py: refused; then the edit, and a new file
    // written twice.
    server.push(one_call(
        "w",
        "write",
        json!({"path": "calc.py", "content": "import os\n"}),
    ));
    server.push(one_call(
        "e",
        "edit",
        json!({"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
    ));
    server.push(one_call(
        "n1",
        "write",
        json!({"path": "notes.txt", "content": "one\n"}),
    ));
    server.push(one_call(
        "n2",
        "write",
        json!({"path": "notes.txt", "content": "two\n"}),
    ));
    server.push(sse(&chunks::text_answer(
        "Fixed calc.py and wrote notes.txt.",
    )));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "Fix the bug in calc.py and write a note to notes.txt",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("notes.txt")).unwrap(),
        "two\n"
    );
    let results = crate::support::tool_results(&server.chat_bodies()[1]);
    assert!(
        results
            .iter()
            .any(|r| r.contains("Not written: `calc.py` already exists. Change it with `edit`")),
        "{results:?}"
    );
    // A larger model rewrites a file whole when it wants to.
    let server = mock();
    server.push(one_call(
        "w",
        "write",
        json!({"path": "calc.py", "content": "X = 1\n"}),
    ));
    server.push(sse(&chunks::text_answer("Rewrote calc.py.")));
    let output = task(&ws, &server.base_url(), "mock-model", "Rewrite calc.py");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("calc.py")).unwrap(),
        "X = 1\n"
    );
}

#[test]
fn a_question_answered_with_nothing_is_not_answered() {
    for (model, replies, code) in [
        // A small model: asked again, then answers.
        (SMALL, vec!["", "The port is 7341."], 0),
        // A larger one: told once, then it ends with nothing again.
        ("mock-model", vec!["", ""], 3),
    ] {
        let ws = port();
        let server = mock();
        server.push(one_call("r", "read", json!({"path": "config.json"})));
        for reply in &replies {
            server.push(sse(&chunks::text_answer(reply)));
        }
        let output = task(
            &ws,
            &server.base_url(),
            model,
            "What is the port in config.json?",
        );
        assert_eq!(output.code, code, "{model}: {}", output.stderr);
        assert!(output.stderr.contains("no answer"), "{}", output.stderr);
        if code == 0 {
            assert_eq!(output.stdout.trim(), "The port is 7341.");
        } else {
            let bodies = server.chat_bodies();
            assert!(
                notes(bodies.last().unwrap())[0].starts_with(
                    "(offcode) You gave no answer. Answer the task in words: What is the port"
                ),
                "{:?}",
                notes(bodies.last().unwrap())
            );
        }
    }
}

#[test]
fn a_rewrite_refused_after_the_change_was_made_is_no_failure() {
    // A held-out run: debug set to true with an edit, then a rewrite of the
    // file refused, then no word: done, not exit 3.
    let ws = Workspace::new();
    std::fs::write(ws.root.join("config.yaml"), "name: api\ndebug: false\n").unwrap();
    let server = mock();
    server.push(one_call(
        "e",
        "edit",
        json!({"path": "config.yaml", "old_string": "debug: false", "new_string": "debug: true"}),
    ));
    server.push(one_call(
        "w",
        "write",
        json!({"path": "config.yaml", "content": "debug: true"}),
    ));
    server.push(sse(&chunks::text_answer("")));
    let output = task(
        &ws,
        &server.base_url(),
        SMALL,
        "In config.yaml, set debug to true.",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("config.yaml")).unwrap(),
        "name: api\ndebug: true\n"
    );
    assert_eq!(output.stdout, "Changed config.yaml.\n");
}
