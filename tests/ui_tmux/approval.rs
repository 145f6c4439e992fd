//! Approval prompts on a real terminal: what a key approves is always
//! on the screen first.

use std::time::Duration;

use super::{Tmux, answer_after_grace};
use crate::support::{Workspace, demo_mock, wait_until};

#[test]
fn a_long_dangerous_chain_is_shown_whole_at_100_and_40_columns() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("approval-long");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    let command = "git status --porcelain --find-renames --untracked-files=all \
                   --ignore-submodules=none --ahead-behind --show-stash \
                   && tar czf keys.tgz /etc/ssh";
    tmux.send("one", &format!("run `{command}`"));
    let screen = tmux.wait_for("one", "answer:");
    let prompt = approval_block(&screen);
    let joined: String = prompt.lines().map(str::trim).collect();
    assert!(joined.contains("tar czf keys.tgz /etc/ssh"), "{screen}");
    assert!(!prompt.contains('…'), "a cut in the prompt:\n{screen}");
    assert!(
        prompt.contains("a adds: bash `git status *`\n          bash `tar *`\n"),
        "{screen}"
    );
    answer_after_grace(&tmux, "one", "n");
    tmux.wait_for("one", "denied");
    // The same at 40 columns.
    // The width is read when the line is sent.
    tmux.tmux(&["resize-window", "-t", "one", "-x", "40"]);
    tmux.send("one", &format!("run `{command}`"));
    assert!(wait_until(Duration::from_secs(20), || tmux
        .history("one")
        .matches("Allow bash?")
        .count()
        == 2));
    let screen = tmux.wait_for("one", "answer:");
    let prompt = approval_block(&screen);
    let joined: String = prompt.lines().map(str::trim).collect();
    assert!(joined.contains("&& tar czf keys.tgz /etc/ssh"), "{screen}");
    assert!(!prompt.contains('…'), "a cut in the prompt:\n{screen}");
    answer_after_grace(&tmux, "one", "n");
}

/// The last approval prompt on `screen`, up to its answer row.
fn approval_block(screen: &str) -> String {
    let start = screen.rfind("Allow bash?").expect("an approval prompt");
    let block = &screen[start..];
    // Up to the status line (cut to the width, as it always is).
    block[..block.find("build · mock-model").unwrap_or(block.len())].to_owned()
}

#[test]
fn a_command_taller_than_the_screen_is_read_before_y_answers() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("approval-tall");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    // About 40 rows at 100 columns: the start scrolls off a 30-row screen.
    let command = format!("echo {} && touch hidden-at-the-end", "padding ".repeat(480));
    // Pasted: typing it key by key takes longer than the test waits.
    let file = ws.home.join("prompt.txt");
    std::fs::write(&file, format!("run `{command}`")).unwrap();
    tmux.tmux(&["load-buffer", "-b", "prompt", file.to_str().unwrap()]);
    tmux.tmux(&["paste-buffer", "-p", "-b", "prompt", "-t", "one"]);
    // Enter once the paste is in: read with it, the editor takes a key
    // that arrives with a paste for part of it (a new line).
    tmux.wait_for("one", "padding padding");
    tmux.keys("one", &["Enter"]);
    tmux.wait_for("one", "taller than the screen");
    // `y` does not answer what was not seen: `v` still finds the
    // question to page through.
    answer_after_grace(&tmux, "one", "y");
    answer_after_grace(&tmux, "one", "v");
    let first = tmux.wait_for("one", "q closes");
    assert!(!tmux.history("one").contains("allowed once"));
    assert!(first.contains("$ echo padding"), "{first}");
    for _ in 0..3 {
        tmux.keys("one", &["Down"]);
    }
    // The last rows and the answer row that `y` answers now.
    tmux.wait_for_all("one", &["touch hidden-at-the-end", " y  once"]);
    // Paging is deliberate: the `y` right behind it answers.
    tmux.keys("one", &["y"]);
    tmux.wait_for("one", "allowed once");
    assert!(wait_until(Duration::from_secs(10), || ws
        .root
        .join("hidden-at-the-end")
        .exists()));
}

#[test]
fn typing_on_as_the_question_shows_never_approves() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("approval-typing");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "run `touch typed-through`");
    // The person goes on typing their next message, full of `y` and
    // `a`, at a fast typist's pace, until the question has been up for
    // more than twice the grace, however slow the machine is to show it.
    let sentence = "yes yes, and also add a test; ya";
    let mut shown: Option<std::time::Instant> = None;
    let started = std::time::Instant::now();
    for c in sentence.chars().cycle() {
        if shown.is_some_and(|at| at.elapsed() >= Duration::from_millis(700)) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no question");
        tmux.type_text("one", &c.to_string());
        std::thread::sleep(Duration::from_millis(40));
        if shown.is_none() && tmux.screen("one").contains("answer:") {
            shown = Some(std::time::Instant::now());
        }
    }
    // A sentence begun after a pause: its first letter, `a`, answered
    // (an outside tester's session grant); and a paste without its
    // bracketed-paste markers, which arrives as keys.
    std::thread::sleep(Duration::from_millis(600));
    for c in "and then fix it".chars() {
        tmux.type_text("one", &c.to_string());
        std::thread::sleep(Duration::from_millis(60));
    }
    std::thread::sleep(Duration::from_millis(600));
    let file = ws.home.join("paste.txt");
    std::fs::write(&file, "yes").unwrap();
    tmux.tmux(&["load-buffer", "-b", "plain", file.to_str().unwrap()]);
    tmux.tmux(&["paste-buffer", "-b", "plain", "-t", "one"]);
    // Nothing was approved: still asked, and the file not made.
    let screen = tmux.screen("one");
    assert!(screen.contains("answer:"), "{screen}");
    assert!(!tmux.history("one").contains("allowed"), "{screen}");
    assert!(!ws.root.join("typed-through").exists());
    // After a quiet moment a key answers: a second, as the person has
    // been typing.
    std::thread::sleep(Duration::from_millis(1_600));
    tmux.type_text("one", "n");
    tmux.wait_for("one", "→ denied");
    assert!(!ws.root.join("typed-through").exists());
    // What was typed is not lost: it is in the input line, the sentence
    // begun after the pause whole, its `a` included, and the paste.
    tmux.wait_for("one", "and then fix ityes");
}

#[test]
fn a_word_begun_slowly_as_the_question_shows_approves_nothing() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("approval-slow");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "run `touch made-by-and`");
    tmux.wait_for("one", "answer:");
    // An outside tester's: `and`, a key every 400 ms after a pause, was
    // `a`, allow for the session. (300 ms here: a loaded machine may
    // stretch the gaps, and half a second is the line.)
    std::thread::sleep(Duration::from_millis(600));
    for c in ["a", "n", "d"] {
        tmux.type_text("one", c);
        std::thread::sleep(Duration::from_millis(300));
    }
    // Answered the next moment, as a person stopping to look: the quiet
    // is a second, since the person was typing.
    std::thread::sleep(Duration::from_millis(1_600));
    tmux.type_text("one", "n");
    tmux.wait_for("one", "→ denied");
    assert!(!tmux.history("one").contains("allowed"));
    assert!(!ws.root.join("made-by-and").exists());
    tmux.wait_for("one", "> and");
}

#[test]
fn a_loosening_project_config_is_asked_about_once_at_start() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        r#"{ "permission": "allow" }"#,
    )
    .unwrap();
    let tmux = Tmux::new("trust");
    // Refused: the UI starts, says it is ignored, and asks before running.
    // A task typed ahead that starts with `y` is no answer (keys before
    // the question, or within its grace period, as for approvals).
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.type_text("one", "yes, run the tests");
    // One key answers, as an approval does; nor does a stream of `y` (a
    // held key, or typing on) that runs past the grace period: a key
    // answers only after a quiet moment. The stream goes on from the
    // typed-ahead text, at a held key's pace, until the question has been
    // up for twice the grace, however slow the machine is to show it.
    let mut shown: Option<std::time::Instant> = None;
    let started = std::time::Instant::now();
    while shown.is_none_or(|at| at.elapsed() < Duration::from_millis(500)) {
        assert!(started.elapsed() < Duration::from_secs(20), "no question");
        tmux.type_text("one", "y");
        std::thread::sleep(Duration::from_millis(20));
        if shown.is_none()
            && tmux
                .screen("one")
                .contains("Trust this folder and apply them? [y/N]")
        {
            shown = Some(std::time::Instant::now());
        }
    }
    answer_after_grace(&tmux, "one", "n");
    tmux.wait_for("one", "Its stricter rules apply.");
    tmux.send("one", "run `touch refused-by-default`");
    tmux.wait_for("one", "answer:");
    answer_after_grace(&tmux, "one", "n");
    tmux.wait_for("one", "denied");
    tmux.keys("one", &["C-d"]);
    tmux.wait_for("one", "EXITED 0");
    // Trusted: asked once, then the config applies and is not asked again.
    tmux.start("two", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("two", "Trust this folder");
    answer_after_grace(&tmux, "two", "y");
    tmux.wait_for("two", "Type a task");
    tmux.send("two", "run `touch allowed-by-trust`");
    assert!(wait_until(Duration::from_secs(20), || ws
        .root
        .join("allowed-by-trust")
        .exists()));
    // Leave at the prompt (what Ctrl+D during a turn does is tested on
    // its own).
    tmux.wait_for("two", "ANSWER Done");
    tmux.keys("two", &["C-d"]);
    tmux.wait_for("two", "EXITED 0");
    tmux.start("three", &ws, &server.base_url(), &ws.home.join("data"));
    let screen = tmux.wait_for("three", "Type a task");
    assert!(!screen.contains("Trust this folder"), "{screen}");
    assert!(!ws.root.join("refused-by-default").exists());
}

#[test]
fn t_denies_with_a_note_the_model_reads() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("approval-note");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "run `touch made.txt`");
    let screen = tmux.wait_for("one", "answer:");
    assert!(screen.contains(" t  why"), "{screen}");
    answer_after_grace(&tmux, "one", "t");
    tmux.wait_for("one", "why: ");
    tmux.type_text("one", "用 make test 吧");
    tmux.wait_for("one", "吧▏");
    tmux.keys("one", &["Enter"]);
    tmux.wait_for("one", "denied");
    assert!(wait_until(Duration::from_secs(20), || {
        server.chat_bodies().iter().any(|body| {
            body.to_string()
                .contains("the user declined and says: 用 make test 吧")
        })
    }));
    assert!(!ws.root.join("made.txt").exists());
}

#[test]
fn slash_init_asks_the_model_for_agents_md_and_its_write_asks_first() {
    let server = crate::support::mock();
    server.push(crate::support::sse(&crate::support::chunks::tool_answer(
        "",
        &[(
            "w1",
            "write",
            serde_json::json!({"path": "AGENTS.md", "content": "# Rules\nBuild: make\n"}),
        )],
    )));
    server.push(crate::support::sse(&crate::support::chunks::text_answer(
        "Wrote AGENTS.md.",
    )));
    let ws = Workspace::new();
    let tmux = Tmux::new("slash-init");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "/init");
    tmux.wait_for("one", "Allow write?");
    answer_after_grace(&tmux, "one", "y");
    tmux.wait_for("one", "Wrote AGENTS.md.");
    assert_eq!(
        std::fs::read_to_string(ws.root.join("AGENTS.md")).unwrap(),
        "# Rules\nBuild: make\n"
    );
    let asked = server.chat_bodies()[0].to_string();
    assert!(
        asked.contains("Write AGENTS.md at the root of this project"),
        "{asked}"
    );
}
