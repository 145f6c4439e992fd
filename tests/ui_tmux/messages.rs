//! Messages on a real terminal: a message too big for the model.

use std::fmt::Write as _;
use std::time::Duration;

use super::Tmux;
use crate::support::{Workspace, demo_mock, wait_until};

#[test]
fn attaching_a_file_too_big_says_so_and_gives_the_text_back() {
    let server = demo_mock();
    let ws = Workspace::new();
    let mut big = String::new();
    for n in 0..12_000 {
        let _ = writeln!(big, "log line {n}: value alpha beta gamma");
    }
    std::fs::write(ws.root.join("big.log"), &big).unwrap();
    let tmux = Tmux::new("too-big");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "summarise @big.log please");
    let screen = tmux.wait_for("one", "Nothing was sent.");
    assert!(
        screen.contains("error: This message is too big"),
        "{screen}"
    );
    // What was typed is back in the editor, unexpanded.
    let last_line = || {
        let screen = tmux.screen("one");
        let last = screen.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        last.trim_end().to_owned()
    };
    assert!(
        wait_until(Duration::from_secs(20), || last_line()
            == "> summarise @big.log please"),
        "{}",
        tmux.screen("one")
    );
    let screen = tmux.screen("one");
    // Nothing claims the context is over-full.
    assert!(!screen.contains("%)"), "{screen}");
    assert!(server.chat_bodies().is_empty());
}

#[test]
fn a_commands_output_shows_its_ends_and_ctrl_o_shows_it_whole() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("expand");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "run `seq 101 130`");
    tmux.wait_for("one", "answer:");
    super::answer_after_grace(&tmux, "one", "y");
    let screen = tmux.wait_for("one", "… 24 more lines · /expand 1");
    for shown in ["    101", "    103", "    128", "    130"] {
        assert!(screen.contains(shown), "{shown}: {screen}");
    }
    assert!(!screen.contains("    115"), "{screen}");
    tmux.wait_for("one", "ready");
    tmux.keys("one", &["C-o"]);
    tmux.wait_for("one", "[exit code: 0]");
    let history = tmux.history("one");
    let whole = &history[history.find("OUTPUT 1 bash").expect("the output's header")..];
    for n in 101..=130 {
        assert!(whole.contains(&format!("    {n}\n")), "{n}: {whole}");
    }
}

#[test]
fn a_resumed_session_shows_its_conversation_and_resume_picks_another() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("resume");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "hello from the first session");
    tmux.wait_for("one", "You said: hello from the first session");
    tmux.wait_for("one", "ready");
    tmux.keys("one", &["C-d"]);
    tmux.wait_for("one", "EXITED 0");
    tmux.start_args("two", &ws, &server.base_url(), &data, "", "--continue");
    let screen = tmux.wait_for("two", "the conversation so far");
    assert!(
        screen.contains("> hello from the first session"),
        "{screen}"
    );
    // The answer as the live view showed it: labelled.
    assert!(
        screen.contains("ANSWER Mock model here. You said: hello from the first session"),
        "{screen}"
    );
    // A new session, then back to the first with the picker.
    tmux.send("two", "/new");
    assert!(wait_until(Duration::from_secs(20), || tmux
        .history("two")
        .matches("Type a task")
        .count()
        == 2));
    tmux.send("two", "second session here");
    tmux.wait_for("two", "You said: second session here");
    tmux.wait_for("two", "ready");
    tmux.send("two", "/resume");
    tmux.wait_for("two", "Pick one with `/resume N`.");
    tmux.send("two", "/resume 2");
    assert!(wait_until(Duration::from_secs(20), || tmux
        .history("two")
        .matches("the conversation so far")
        .count()
        == 2));
    let history = tmux.history("two");
    let last = &history[history.rfind("the conversation so far").unwrap()..];
    assert!(last.contains("> hello from the first session"), "{last}");
    assert!(!last.contains("second session here"), "{last}");
}

#[test]
fn lines_break_between_words_at_40_columns() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("narrow");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    // The width is read when the line is sent.
    tmux.tmux(&["resize-window", "-t", "one", "-x", "40", "-y", "52"]);
    tmux.send("one", "/help");
    let screen = tmux.wait_for("one", "Approvals:");
    // Every word whole, descriptions wrapped under themselves.
    for word in [
        "summarise",
        "conversation",
        "reasoning,",
        "directory",
        "continue",
        "session:",
        "queues",
    ] {
        assert!(
            screen.split_whitespace().any(|w| w == word),
            "`{word}` was cut:\n{screen}"
        );
    }
    assert!(
        screen.contains("\n             conversation now\n"),
        "{screen}"
    );
    for row in screen.lines() {
        assert!(row.chars().count() <= 40, "{row}");
    }
}

#[test]
fn ctrl_o_at_the_first_prompt_answers_and_keeps_what_was_typed() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("ctrl-o");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    // The model list arrived meanwhile (nothing shows that it did, so this
    // waits); the status line is still drawn.
    std::thread::sleep(Duration::from_millis(500));
    tmux.wait_for("one", "build · mock-model · ready");
    tmux.type_text("one", "half typed");
    tmux.wait_for("one", "> half typed");
    tmux.keys("one", &["C-o"]);
    tmux.wait_for("one", "error: No tool has run in this session yet");
    // The editor comes back below the error with the text (the error can
    // be on the screen a moment before it: waited for, not sampled).
    let last_row = || {
        let screen = tmux.screen("one");
        let last = screen.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        (last.trim_end() == "> half typed", screen)
    };
    assert!(
        wait_until(Duration::from_secs(20), || last_row().0),
        "{}",
        last_row().1
    );
}

#[test]
fn keys_typed_while_the_editor_is_away_reach_it_tab_too() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("docs")).unwrap();
    std::fs::write(ws.root.join("docs/说明书.md"), "内容第一行\n").unwrap();
    let tmux = Tmux::new("tab-ahead");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    // One burst: the editor takes `/context` with its Enter and leaves
    // the rest; while `/context` is answered no editor runs, and the keys
    // after are read ahead when it starts again. Its Tab was dropped, so
    // the line stayed `summarise @do` (found by the stress runs).
    tmux.keys("one", &["/context", "Enter", "summarise @do", "Tab"]);
    tmux.wait_for("one", "of 32.8k tokens (");
    tmux.wait_for("one", "> summarise @docs/");
    // The editor has the line: its own Tab goes on from there.
    tmux.keys("one", &["Tab"]);
    tmux.wait_for("one", "> summarise @docs/说明书.md");
}
