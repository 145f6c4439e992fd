//! The live turn under pressure: bursts of events, a stopped process, and
//! leaving whatever the UI is doing.

use std::time::Duration;

use super::{Tmux, session_text};
use crate::support::demo::BURST_WORDS;
use crate::support::{MockServer, Workspace, demo_mock, wait_until};

/// The offcode process running in `window`: the pane's shell's child.
fn offcode_pid(tmux: &Tmux, window: &str) -> rustix::process::Pid {
    let shell = tmux.tmux(&["display-message", "-p", "-t", window, "#{pane_pid}"]);
    let children =
        std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", shell.trim())).unwrap();
    let pid: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    rustix::process::Pid::from_raw(pid).unwrap()
}

/// The numbered words of the burst that `text` lacks.
fn missing_words(text: &str) -> Vec<String> {
    let shown: std::collections::HashSet<&str> = text.split_whitespace().collect();
    (0..BURST_WORDS)
        .map(|n| format!("w{n:05}"))
        .filter(|word| !shown.contains(word.as_str()))
        .collect()
}

#[test]
fn a_burst_of_ten_thousand_events_through_a_stopped_ui_loses_nothing() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("burst");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.tmux(&["set-option", "-g", "history-limit", "50000"]);
    tmux.wait_for("one", "Type a task");
    let pid = offcode_pid(&tmux, "one");
    // Stopped as a slow link stops it: the whole answer piles up unread.
    tmux.send("one", "stream a burst");
    assert!(wait_until(Duration::from_secs(10), || !server
        .chat_bodies()
        .is_empty()));
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    tmux.wait_for("one", "The end of the burst.");
    // The turn ended: the prompt is back and takes the next task.
    tmux.wait_for("one", "ready");
    tmux.send("one", "hello");
    tmux.wait_for("one", "You said: hello");
    let history = tmux.history("one");
    let missing = missing_words(&history);
    assert!(
        missing.is_empty(),
        "{} words never shown, first {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    // And the session holds the answer whole.
    assert!(session_text(&data).contains("w09999"));
}

#[test]
fn ctrl_c_twice_during_a_turn_leaves_at_once() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("leave");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "answer slowly");
    tmux.wait_for("one", "Line 2 of");
    tmux.keys("one", &["C-c", "C-c"]);
    tmux.wait_for("one", "EXITED 0");
    assert!(session_text(&data).contains("\"interrupted\":true"));
}

#[test]
fn ctrl_c_aborts_and_one_more_on_the_empty_prompt_leaves() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("leave-after");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "answer slowly");
    tmux.wait_for("one", "Line 2 of");
    tmux.keys("one", &["C-c"]);
    tmux.wait_for("one", "Aborted; what arrived so far is kept.");
    tmux.wait_for("one", "Ctrl+C again");
    tmux.keys("one", &["C-c"]);
    tmux.wait_for("one", "EXITED 0");
}

#[test]
fn aborting_a_command_kills_everything_it_started() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    // In the workspace, where a confined command may write.
    let marker = ws.root.join("survived");
    let tmux = Tmux::new("abort-command");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    // Started in the background, in a new session, and in the foreground:
    // none of them may outlive the abort.
    // A sleep of its own, to find the command's processes by.
    let nap = format!("3.{}", std::process::id());
    let command = format!(
        "(sleep {nap}; touch survived.1) & setsid sh -c 'sleep {nap}; touch survived.2' & \
         touch started; sleep {nap}; touch survived.3"
    );
    tmux.send("one", &format!("run `{command}`"));
    // The approval shows before the command starts.
    tmux.wait_for("one", "answer:");
    super::answer_after_grace(&tmux, "one", "y");
    tmux.wait_for("one", "allowed once");
    // Aborted once all three are under way (seen by their processes: over
    // an overlay, nothing the command writes shows before it ends).
    let sleeping = || {
        crate::support::processes_with(&format!("sleep {nap}"))
            .iter()
            .filter(|p| p.contains(": sleep "))
            .count()
    };
    assert!(wait_until(Duration::from_secs(10), || sleeping() >= 3));
    tmux.keys("one", &["Escape"]);
    tmux.wait_for("one", "ready");
    // Every process of the command is gone, so no file can come later.
    let nap = format!("sleep {nap}");
    assert!(
        wait_until(Duration::from_secs(10), || crate::support::processes_with(
            &nap
        )
        .is_empty()),
        "{:?}",
        crate::support::processes_with(&nap)
    );
    assert!(
        !ws.root.join("started").exists(),
        "an aborted command lands nothing"
    );
    for n in 1..=3 {
        let file = marker.with_extension(n.to_string());
        assert!(
            !file.exists(),
            "{} was written after the abort",
            file.display()
        );
    }
}

#[test]
fn a_closed_port_is_reported_at_start_before_anything_is_typed() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ws = Workspace::new();
    let tmux = Tmux::new("closed-port");
    let url = format!("http://127.0.0.1:{port}/v1");
    tmux.start("one", &ws, &url, &ws.home.join("data"));
    let screen = tmux.wait_for("one", "did not list its models");
    assert!(screen.contains("Could not connect"), "{screen}");
    // The editor is still there, under the warning, and takes input.
    tmux.type_text("one", "still typing");
    let screen = tmux.wait_for("one", "> still typing");
    let warning = screen.find("did not list").unwrap();
    assert!(screen.find("> still typing").unwrap() > warning, "{screen}");
}

#[test]
fn ctrl_d_during_a_turn_says_so_and_leaves_when_it_ends() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("ctrl-d");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "answer slowly");
    tmux.wait_for("one", "Line 2 of");
    tmux.keys("one", &["C-d"]);
    let screen = tmux.wait_for("one", "leaving when this turn ends");
    // On the status line, not in the middle of the answer.
    let row = screen
        .lines()
        .find(|row| row.contains("leaving when"))
        .unwrap();
    assert!(row.contains("generating"), "{screen}");
    tmux.wait_for("one", "EXITED 0");
    let history = tmux.history("one");
    assert!(history.contains("The end."), "{history}");
    assert!(!history.contains("Leaving when"), "{history}");
}

/// A mock whose model list takes `delay`: `/models` then runs that long
/// between two prompts, with neither the editor nor the live turn reading
/// keys.
fn slow_list_mock(delay: Duration) -> MockServer {
    MockServer::start(std::sync::Arc::new(move |request| {
        if request.path.ends_with("/models") {
            std::thread::sleep(delay);
        }
        crate::support::demo::respond(request)
    }))
}

/// Sends `/models` and waits until the server is asked for the list.
fn models_waiting(tmux: &Tmux, server: &MockServer) {
    let lists = || {
        server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count()
    };
    let before = lists();
    tmux.send("one", "/models");
    assert!(
        wait_until(Duration::from_secs(10), || lists() > before),
        "the model list was not asked for; the pane:\n{}\nthe requests: {:?}",
        tmux.history("one"),
        server
            .requests()
            .iter()
            .map(|r| r.path.clone())
            .collect::<Vec<_>>()
    );
}

#[test]
fn keys_typed_while_a_command_runs_between_prompts_are_kept_as_typed() {
    let server = slow_list_mock(Duration::from_secs(2));
    let ws = Workspace::new();
    let tmux = Tmux::new("between");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    // A line with its Enter, typed while `/models` waits for the list:
    // sent as a task, not left in the editor with a newline.
    models_waiting(&tmux, &server);
    tmux.send("one", "typed while listing");
    let screen = tmux.wait_for("one", "You said: typed while listing");
    assert!(screen.contains("Switch with /models ID"), "{screen}");
    // Not echoed by the terminal where the report goes: the line shows
    // once as the prompt it was sent from, and once in the answer.
    let history = tmux.history("one");
    assert_eq!(
        history.matches("typed while listing").count(),
        2,
        "{history}"
    );
    // Ctrl+C between prompts is a key, as at the prompt: it does not stop
    // offcode.
    models_waiting(&tmux, &server);
    tmux.keys("one", &["C-c"]);
    tmux.wait_for("one", "Ctrl+C again");
    assert!(!tmux.screen("one").contains("EXITED"));
    tmux.send("one", "still here");
    tmux.wait_for("one", "You said: still here");
}
