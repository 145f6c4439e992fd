//! A small model's answer that rests on nothing the turn saw (issue 28):
//! a count written with no command run though the task asks for one, an
//! answer about a file's value that does not say it, an answer that only
//! repeats the task, an edit made again, and a change edited back. Each
//! ends done when the model repairs it and with exit 3 when it does not;
//! the files on disk and the notes on the wire are checked.

use serde_json::json;

use crate::support::{Workspace, chunks, mock, notes, run, sse};

/// A small model's name, as llama.cpp lists it.
const SMALL: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// The real-model tier's count task.
const COUNT: &str = "Count the lines of app.log that contain ERROR, using a command, and write the number to count.txt.";

/// `offcode run --yes --model SMALL PROMPT`, validation off.
fn task(ws: &Workspace, base_url: &str, prompt: &str) -> crate::support::Output {
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        "{ retry: { initial_delay_ms: 10, max_delay_ms: 40, max_retries: 2 }, validate: false }",
    )
    .unwrap();
    run(ws.offcode(base_url, &["run", "--yes", "--model", SMALL, prompt]))
}

/// A reply of one call of `tool` with `arguments`, and no words.
fn call(id: &str, tool: &str, arguments: serde_json::Value) -> crate::support::Reply {
    sse(&chunks::tool_answer("", &[(id, tool, arguments)]))
}

/// A reply of one `edit` of `path`.
fn edit(id: &str, path: &str, old: &str, new: &str) -> crate::support::Reply {
    call(
        id,
        "edit",
        json!({"path": path, "old_string": old, "new_string": new}),
    )
}

/// A workspace with a log of two ERROR lines among four.
fn log() -> Workspace {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("app.log"),
        "10:01 INFO up\n10:02 ERROR disk full\n10:03 INFO ok\n10:04 ERROR disk full\n",
    )
    .unwrap();
    ws
}

#[test]
fn a_count_written_with_no_command_run_is_undone_until_one_runs() {
    for repaired in [true, false] {
        let ws = log();
        let server = mock();
        // The 1.5B model's way: the number written straight from the
        // file it was shown, then "Done." three times.
        server.push(call(
            "w",
            "write",
            json!({"path": "count.txt", "content": "3"}),
        ));
        for _ in 0..3 {
            server.push(sse(&chunks::text_answer("Done.")));
        }
        if repaired {
            // The grep tool's count is a command's (the 1.5B model's way,
            // done and yet exit 3 before this counted).
            server.push(call(
                "g",
                "grep",
                json!({"pattern": "ERROR", "path": "app.log"}),
            ));
            server.push(call(
                "w2",
                "write",
                json!({"path": "count.txt", "content": "2"}),
            ));
            server.push(sse(&chunks::text_answer("Wrote 2 to count.txt.")));
        } else {
            server.push(sse(&chunks::text_answer("Done.")));
        }
        let output = task(&ws, &server.base_url(), COUNT);
        let bodies = server.chat_bodies();
        // Set aside twice, then told.
        assert!(notes(&bodies[2]).len() == 1 && notes(&bodies[3]).len() == 1);
        assert_eq!(
            notes(&bodies[4]).last().unwrap(),
            "(offcode) The task says to use a command, and none has run. Run it now with `bash`, and use what it prints."
        );
        let count = std::fs::read_to_string(ws.root.join("count.txt")).unwrap();
        if repaired {
            assert_eq!(output.code, 0, "{}", output.stderr);
            assert_eq!(count, "2");
        } else {
            assert_eq!(output.code, 3, "{}", output.stderr);
            assert!(
                output.stderr.contains(
                    "the model ended again with no command run, though the task asks for one"
                ),
                "{}",
                output.stderr
            );
            assert_eq!(count, "3");
        }
    }
}

#[test]
fn an_answer_that_does_not_say_the_files_value_is_undone_until_it_does() {
    for repaired in [true, false] {
        let ws = Workspace::new();
        std::fs::write(
            ws.root.join("config.json"),
            "{\n  \"name\": \"api\",\n  \"port\": 7341\n}\n",
        )
        .unwrap();
        let server = mock();
        // The 1.5B model's answers at its server's own sampling.
        for answer in [
            "This is the output from the `read` function call, which reads the contents of the `config.json` file and returns the port number from it.",
            "<workspace>\n/api/port\n</workspace>",
            "The port is in config.json.",
        ] {
            server.push(sse(&chunks::text_answer(answer)));
        }
        server.push(sse(&chunks::text_answer(if repaired {
            "The port is 7341."
        } else {
            "It is the port."
        })));
        let output = task(&ws, &server.base_url(), "What is the port in config.json?");
        let bodies = server.chat_bodies();
        assert_eq!(bodies.len(), 4);
        // The file was read before the first request; the note names the line.
        assert_eq!(
            notes(&bodies[3]),
            [
                "(offcode) Your answer does not say what `config.json` says. Its line 3 reads: \"port\": 7341\nAnswer the question from it: What is the port in config.json?"
            ]
        );
        if repaired {
            assert_eq!(output.code, 0, "{}", output.stderr);
            assert_eq!(output.stdout, "The port is 7341.\n");
        } else {
            assert_eq!(output.code, 3, "{}", output.stderr);
            assert!(
                output
                    .stderr
                    .contains("an answer that does not say what the file says")
            );
        }
    }
}

#[test]
fn an_edit_made_again_is_no_failure_and_an_edit_into_itself_no_change() {
    // The 0.5B model sent its edit again after it worked, and ended with
    // no word: done (before, "no word after a call that failed", exit 3).
    let ws = Workspace::new();
    let greet = ws.root.join("greet.py");
    std::fs::write(&greet, "def greet(name):\n    return \"Hello, \" + name\n").unwrap();
    let server = mock();
    server.push(edit("e1", "greet.py", "Hello", "Goodbye"));
    server.push(edit("e2", "greet.py", "Hello", "Goodbye"));
    server.push(sse(&chunks::text_answer("")));
    let output = task(
        &ws,
        &server.base_url(),
        "Change the greeting Hello in greet.py to Goodbye.",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, "Changed greet.py.\n");
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    let messages = bodies[2]["messages"].as_array().unwrap();
    let result = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(
        result["content"],
        "`greet.py` already has new_string (line 2), and not old_string: the change is made. Nothing was written."
    );
    assert_eq!(
        std::fs::read_to_string(&greet).unwrap(),
        "def greet(name):\n    return \"Goodbye, \" + name\n"
    );

    // The 1.5B model on a held-out task: `add` edited into itself, then
    // "sub has been added". The edit failed, nothing changed, and it ends
    // with exit 3 (it ended with exit 0 while such an edit counted as made).
    let ws = Workspace::new();
    let calc = ws.root.join("calc.py");
    let add = "def add(a, b):\n    return a + b\n";
    std::fs::write(&calc, add).unwrap();
    let server = mock();
    server.push(edit("e", "calc.py", add, add));
    for _ in 0..4 {
        server.push(sse(&chunks::text_answer(
            "The function `sub(a, b)` has been added to the `calc.py` file.",
        )));
    }
    let output = task(
        &ws,
        &server.base_url(),
        "Add a function sub(a, b) to calc.py that returns a - b.",
    );
    assert_eq!(output.code, 3, "{}", output.stderr);
    assert!(
        output
            .stderr
            .contains("the model ended again with a change that failed and was not made since"),
        "{}",
        output.stderr
    );
    assert_eq!(std::fs::read_to_string(&calc).unwrap(), add);
}

#[test]
fn an_answer_that_only_repeats_the_task_is_undone_until_it_answers() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("utils.py"),
        "def a():\n    pass\n\n\ndef b():\n    pass\n",
    )
    .unwrap();
    let prompt = "utils.py 里定义了几个函数？请回答数字。";
    let server = mock();
    // The 1.5B model's answers at its server's own sampling: the question
    // back, and offcode's system prompt's workspace line.
    for _ in 0..3 {
        server.push(sse(&chunks::text_answer(prompt)));
    }
    server.push(sse(&chunks::text_answer("utils.py 里定义了 2 个函数。")));
    let output = task(&ws, &server.base_url(), prompt);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, "utils.py 里定义了 2 个函数。\n");
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 4);
    assert_eq!(bodies[1]["messages"], bodies[0]["messages"]);
    assert_eq!(
        notes(&bodies[3]),
        [format!(
            "(offcode) Your answer only repeats text you were given, so it answers nothing. Answer the task now: {prompt}"
        )]
    );
    assert!(
        output
            .stderr
            .contains("an answer that only repeats the task or offcode's words")
    );
}

#[test]
fn a_change_edited_back_is_no_change() {
    // The 0.5B model made its edit, then edited the new text back.
    let ws = Workspace::new();
    let greet = ws.root.join("greet.py");
    let before = "def greet(name):\n    return \"Hello, \" + name\n";
    std::fs::write(&greet, before).unwrap();
    let edit = |id: &str, old: &str, new: &str| edit(id, "greet.py", old, new);
    let server = mock();
    server.push(edit("e1", "Hello", "Goodbye"));
    server.push(edit("e2", "Goodbye", "Hello"));
    for _ in 0..3 {
        server.push(sse(&chunks::text_answer("The task is done now.")));
    }
    server.push(edit("e3", "Hello", "Goodbye"));
    server.push(sse(&chunks::text_answer("greet.py says Goodbye now.")));
    let output = task(
        &ws,
        &server.base_url(),
        "In greet.py, change the greeting from Hello to Goodbye.",
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 7);
    assert_eq!(
        notes(&bodies[1]),
        ["(offcode) If the task is done now, reply in one sentence, with no tool call."]
    );
    assert_eq!(
        notes(&bodies[2]).last().unwrap(),
        "(offcode) The files are back as they were before this task: nothing is changed now."
    );
    assert_eq!(
        notes(&bodies[5]).last().unwrap(),
        "(offcode) Nothing has changed yet, so the task is not done. Do it now: In greet.py, change the greeting from Hello to Goodbye."
    );
    assert_eq!(
        std::fs::read_to_string(&greet).unwrap(),
        before.replace("Hello", "Goodbye")
    );
}

#[test]
fn a_name_the_task_asks_for_in_no_file_is_undone_until_it_is_there() {
    // A held-out task: the 1.5B model made add return a - b and said sub
    // was added.
    let ws = Workspace::new();
    let calc = ws.root.join("calc.py");
    std::fs::write(&calc, "def add(a, b):\n    return a + b\n").unwrap();
    let edit = |id: &str, old: &str, new: &str| edit(id, "calc.py", old, new);
    let server = mock();
    server.push(edit("e1", "return a + b", "return a - b"));
    for _ in 0..3 {
        server.push(sse(&chunks::text_answer(
            "The function `sub(a, b)` has been added to `calc.py`.",
        )));
    }
    server.push(edit(
        "e2",
        "return a - b\n",
        "return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    ));
    server.push(sse(&chunks::text_answer("Added sub to calc.py.")));
    let prompt = "Add a function sub(a, b) to calc.py that returns a - b.";
    let output = task(&ws, &server.base_url(), prompt);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 6);
    assert_eq!(
        notes(&bodies[4]).last().unwrap(),
        &format!(
            "(offcode) The task asks for `sub`, and no file has it yet, so the change it asks for is not made. Make it now: {prompt}"
        )
    );
    assert_eq!(
        std::fs::read_to_string(&calc).unwrap(),
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    );
}
