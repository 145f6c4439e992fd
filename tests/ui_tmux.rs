//! The interactive UI in a real terminal: the binary runs in tmux, keys
//! are sent as a person types them, and the screen is read back.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::demo::without_workspace;
use crate::support::{Workspace, demo_mock, wait_until};

mod approval;
mod live;
mod messages;
mod providers;
mod rewind;

/// A tmux server of its own, so tests never meet each other's sessions.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    pub(crate) fn new(name: &str) -> Self {
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "tmux is needed for the UI tests: `release/setup.sh` installs it"
        );
        Self {
            socket: format!("offcode-test-{name}-{}", std::process::id()),
        }
    }

    pub(crate) fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Starts offcode in a new 100x30 window; the shell prints `EXITED n`
    /// when it ends, and the pane then runs `sleep`, never a shell: keys a
    /// test sends after offcode is gone run nothing.
    fn start(&self, window: &str, ws: &Workspace, url: &str, data: &Path) {
        self.start_with(window, ws, url, data, "");
    }

    /// Like [`Tmux::start`] with `extra` (`NAME=value ...`) in the
    /// environment.
    fn start_with(&self, window: &str, ws: &Workspace, url: &str, data: &Path, extra: &str) {
        self.start_args(window, ws, url, data, extra, "");
    }

    /// Like [`Tmux::start_with`], with `args` after the binary.
    fn start_args(
        &self,
        window: &str,
        ws: &Workspace,
        url: &str,
        data: &Path,
        extra: &str,
        args: &str,
    ) {
        let command = format!(
            "env -i HOME={home} PATH={path} TERM=xterm-256color LANG=C.UTF-8 \
             OFFCODE_BASE_URL={url} OFFCODE_MODEL=mock-model OFFCODE_DATA_DIR={data} \
             OFFCODE_MANAGED_POLICY={managed} OFFCODE_TEST_SYSTEM_POLICY={system} {extra} {bin} {args}; \
             echo EXITED $?; exec sleep 86400",
            home = ws.home.display(),
            path = std::env::var("PATH").unwrap_or_default(),
            data = data.display(),
            managed = ws.managed_policy().display(),
            system = ws.system_policy().display(),
            bin = env!("CARGO_BIN_EXE_offcode"),
        );
        let root = ws.root.display().to_string();
        self.tmux(&[
            "new-session",
            "-d",
            "-x",
            "100",
            "-y",
            "30",
            "-s",
            window,
            "-c",
            &root,
            &command,
        ]);
    }

    fn keys(&self, window: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", window];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Types `text` and presses Enter.
    fn send(&self, window: &str, text: &str) {
        self.type_text(window, text);
        self.keys(window, &["Enter"]);
    }

    /// Types `text` literally (no key names).
    fn type_text(&self, window: &str, text: &str) {
        self.tmux(&["send-keys", "-t", window, "-l", text]);
    }

    fn screen(&self, window: &str) -> String {
        self.tmux(&["capture-pane", "-p", "-t", window])
    }

    /// The screen and everything scrolled off it.
    fn history(&self, window: &str) -> String {
        self.tmux(&["capture-pane", "-p", "-S", "-", "-t", window])
    }

    /// The screen with its colour codes.
    fn screen_with_colour(&self, window: &str) -> String {
        self.tmux(&["capture-pane", "-p", "-e", "-t", window])
    }

    /// Waits until every one of `texts` is on the screen at once: a frame
    /// can be caught half painted (tmux 3.3 does not hold synchronized
    /// output), so what a frame shows together is waited for together.
    fn wait_for_all(&self, window: &str, texts: &[&str]) -> String {
        let found = wait_until(Duration::from_secs(20), || {
            let screen = self.screen(window);
            texts.iter().all(|text| screen.contains(text))
        });
        let screen = self.screen(window);
        assert!(found, "{texts:?} did not appear together:\n{screen}");
        screen
    }

    fn wait_for(&self, window: &str, text: &str) -> String {
        let found = wait_until(Duration::from_secs(20), || {
            self.screen(window).contains(text)
        });
        let screen = self.screen(window);
        assert!(found, "`{text}` did not appear:\n{screen}");
        screen
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

#[test]
fn chinese_editing_approval_by_key_and_history_after_restart() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("task");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    // Wide characters: two Lefts move over two of them, Backspace deletes
    // one, and the submitted text is exactly what is on the screen.
    // Each batch waits for the last to be drawn: keys that arrive with
    // typed text in one read are taken as a paste, where arrows do nothing.
    tmux.type_text("one", "你好世界");
    tmux.wait_for("one", "> 你好世界");
    tmux.keys("one", &["Left", "Left", "BSpace"]);
    tmux.wait_for("one", "> 你世界");
    tmux.send("one", "X");
    tmux.wait_for("one", "You said: 你X世界");
    // A write asks; `y` and Enter approve it.
    tmux.send("one", "write notes.txt");
    let prompt = tmux.wait_for("one", "answer:");
    assert!(prompt.contains("notes.txt  created  +3 -0"), "{prompt}");
    assert!(prompt.contains(" a  allow for this session"), "{prompt}");
    assert!(prompt.contains("awaiting approval"), "{prompt}");
    answer_after_grace(&tmux, "one", "y");
    tmux.wait_for("one", "✓ notes.txt: created");
    tmux.wait_for("one", "→ allowed once");
    assert!(ws.root.join("notes.txt").exists());
    // Alt+Enter starts a second line of the same prompt.
    tmux.type_text("one", "line one");
    tmux.keys("one", &["M-Enter"]);
    tmux.send("one", "line two");
    tmux.wait_for("one", "You said: line one\nline two");
    // Ctrl+D leaves, pressed as soon as the answer shows: whether it lands
    // in the turn, as the turn ends, or at the prompt (a Ctrl+D typed as
    // the turn ended was lost).
    tmux.keys("one", &["C-d"]);
    tmux.wait_for("one", "EXITED 0");
    // A line typed after offcode left runs nothing in the workspace.
    tmux.send("one", "touch typed-after-exit");
    tmux.wait_for("one", "touch typed-after-exit");
    // A new process recalls the prompts (not the `y`) with Up.
    tmux.start("two", &ws, &server.base_url(), &data);
    tmux.wait_for("two", "Type a task");
    tmux.keys("two", &["Up"]);
    tmux.wait_for("two", "… line two");
    tmux.keys("two", &["Up"]);
    let screen = tmux.wait_for("two", "> write notes.txt");
    assert!(!screen.contains("> y\n"), "{screen}");
    // Long after a shell would have run it.
    assert!(!ws.root.join("typed-after-exit").exists());
}

#[test]
fn a_dangerous_command_offers_only_once_or_deny() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("build")).unwrap();
    let tmux = Tmux::new("danger");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "run `rm -rf build`");
    let prompt = tmux.wait_for("one", "answer:");
    assert!(prompt.contains("$ rm -rf build"), "{prompt}");
    assert!(
        prompt.contains("⚠ rm -rf build: `rm` deletes files"),
        "{prompt}"
    );
    assert!(!prompt.contains("allow for this session"), "{prompt}");
    // `a` is not an answer here; `n` denies (had `a` allowed it, the
    // directory would be gone and nothing denied).
    answer_after_grace(&tmux, "one", "a");
    answer_after_grace(&tmux, "one", "n");
    tmux.wait_for("one", "⊘ Permission denied");
    assert!(ws.root.join("build").is_dir());
}

/// Waits out the approval prompt's grace period, then types `key`.
fn answer_after_grace(tmux: &Tmux, window: &str, key: &str) {
    std::thread::sleep(Duration::from_millis(350));
    tmux.type_text(window, key);
}

fn session_text(data: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(data.join("sessions")).unwrap() {
        text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

#[test]
fn keys_typed_before_a_question_never_answer_it() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("early");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    // `y` right behind Enter reaches offcode before the question does.
    tmux.type_text("one", "write a.txt");
    tmux.keys("one", &["Enter", "y"]);
    tmux.wait_for("one", "answer:");
    // Had the early `y` answered, the file would be written and nothing
    // left to deny. It waits on the input line, so the question takes a
    // key only after a second's quiet.
    std::thread::sleep(Duration::from_millis(1_600));
    tmux.type_text("one", "n");
    tmux.wait_for("one", "→ denied");
    tmux.wait_for("one", "ready");
    assert!(!ws.root.join("a.txt").exists());
}

#[test]
fn abort_mid_stream_keeps_the_partial_answer_and_ctrl_c_twice_leaves() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("abort");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "answer slowly");
    tmux.wait_for("one", "Line 3 of");
    tmux.keys("one", &["Escape"]);
    let screen = tmux.wait_for("one", "Aborted; what arrived so far is kept.");
    assert!(screen.contains("ANSWER Slow answer"), "{screen}");
    assert!(!screen.contains("The end."), "{screen}");
    assert!(session_text(&data).contains("\"interrupted\":true"));
    // Ctrl+C aborts too, and the prompt is back for the next task.
    tmux.send("one", "answer slowly");
    tmux.wait_for("one", "Line 2 of");
    tmux.keys("one", &["C-c"]);
    assert!(
        wait_until(Duration::from_secs(10), || {
            tmux.history("one")
                .matches("Aborted; what arrived so far is kept.")
                .count()
                == 2
        }),
        "Ctrl+C did not abort:\n{}",
        tmux.history("one")
    );
    // Neither answer ran to its end.
    assert!(!tmux.history("one").contains("The end."));
    tmux.send("one", "hello");
    tmux.wait_for("one", "You said: hello");
    // Ctrl+C on typed text clears it; twice on an empty prompt leaves.
    tmux.type_text("one", "never sent");
    tmux.keys("one", &["C-c"]);
    tmux.wait_for("one", "ready");
    tmux.keys("one", &["C-c"]);
    let screen = tmux.wait_for("one", "Ctrl+C again");
    // The notice joins the status line; the state and model stay.
    let status = screen
        .lines()
        .find(|l| l.contains("Ctrl+C again"))
        .unwrap_or_default();
    assert!(
        status.contains("ready") && status.contains("mock-model"),
        "{screen}"
    );
    tmux.keys("one", &["C-c"]);
    tmux.wait_for("one", "EXITED 0");
    assert!(!session_text(&data).contains("never sent"));
}

#[test]
fn widening_the_terminal_redraws_the_status_line_at_once() {
    // A newcomer widened the terminal and the status line stayed as it was
    // drawn at 40 columns until the next turn.
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("widen");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.tmux(&["resize-window", "-t", "one", "-x", "40", "-y", "20"]);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "hello");
    tmux.wait_for("one", "You said: hello");
    let narrow = tmux.wait_for("one", "build · mock-model · ready");
    assert!(!narrow.contains("(0%)"), "{narrow}");
    tmux.tmux(&["resize-window", "-t", "one", "-x", "100", "-y", "30"]);
    // Waited for by what only the widened line shows: the first prompt's
    // status line, still in the scrollback, also starts `ready · `.
    let wide = tmux.wait_for("one", "(0%) · ");
    let status = wide
        .lines()
        .rev()
        .find(|line| line.starts_with("build · "))
        .unwrap_or_default();
    assert!(
        status.starts_with("build · mock-model · ready · ") && status.contains("(0%) · "),
        "{wide}"
    );
}

#[test]
fn resizing_while_text_streams_leaves_no_debris() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("resize");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "think, then answer slowly");
    tmux.wait_for("one", "Line 2 of");
    tmux.tmux(&["resize-window", "-t", "one", "-x", "60", "-y", "20"]);
    tmux.wait_for("one", "Line 8 of");
    tmux.tmux(&["resize-window", "-t", "one", "-x", "100", "-y", "30"]);
    tmux.wait_for("one", "The end.");
    tmux.wait_for("one", "ready");
    let history = tmux.history("one");
    // Every line arrived once and whole (lines committed at 60 columns
    // were wrapped there, between words); no status line or half-drawn
    // row was left behind.
    let words = history.split_whitespace().collect::<Vec<_>>().join(" ");
    for n in 1..=40 {
        let line = format!(
            "Line {n} of a long answer that keeps streaming so there is time to look at it."
        );
        assert_eq!(words.matches(&line).count(), 1, "line {n}:\n{history}");
    }
    for row in history.lines() {
        assert!(
            !row.ends_with("streami") && !row.ends_with("ti"),
            "a word cut: {row}"
        );
    }
    assert!(!history.contains("generating"), "{history}");
    assert_eq!(
        history.matches("thought for 2 lines").count(),
        1,
        "{history}"
    );
    assert_eq!(
        history.matches("ANSWER Slow answer").count(),
        1,
        "{history}"
    );
}

#[test]
fn typing_while_the_agent_works_queues_the_next_task() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("queue");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "answer slowly");
    tmux.wait_for("one", "Line 1 of");
    tmux.send("one", "第二个 task");
    tmux.wait_for("one", "queued: 第二个 task");
    let screen = tmux.wait_for("one", "You said: 第二个 task");
    assert!(!screen.contains("queued:"), "{screen}");
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 2);
}

#[test]
fn a_bang_command_runs_under_the_gate_and_the_model_sees_it() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::write(ws.root.join("README.md"), "hello\n").unwrap();
    let data = ws.home.join("data");
    let tmux = Tmux::new("bang");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "!ls");
    let screen = tmux.wait_for("one", "    README.md");
    assert!(screen.contains("TOOL bash  ls"), "{screen}");
    // A dangerous one asks, like the model's would.
    tmux.send("one", "!rm README.md");
    let prompt = tmux.wait_for("one", "answer:");
    assert!(prompt.contains("`rm` deletes files"), "{prompt}");
    answer_after_grace(&tmux, "one", "n");
    tmux.wait_for("one", "→ denied");
    assert!(ws.root.join("README.md").exists());
    tmux.send("one", "what did I do?");
    tmux.wait_for("one", "You said: what did I do?");
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 1, "`!` never asks the model");
    let messages = bodies[0]["messages"].as_array().unwrap();
    let texts: Vec<String> = messages
        .iter()
        .map(|m| {
            let content = m["content"].as_str().unwrap_or("");
            format!("{}: {}", m["role"], without_workspace(content))
        })
        .collect();
    let user = texts
        .iter()
        .position(|t| t == "\"user\": !ls")
        .expect("user !ls");
    assert!(
        texts[user + 1].starts_with("\"assistant\": The user ran `ls`")
            && texts[user + 1].contains("README.md")
            && texts[user + 1].contains("[exit code: 0]"),
        "{texts:#?}"
    );
}

#[test]
fn models_lists_and_switches_and_the_next_request_uses_it() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("models");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "/models");
    let screen = tmux.wait_for("one", "Switch with /models ID.");
    // In columns, the context right-aligned under its heading.
    assert!(
        screen.contains(
            "  MODEL             CONTEXT\n\
             * mock-model          32.8k\n  \
             mock-model-large     131k\n"
        ),
        "{screen}"
    );
    tmux.send("one", "/models nope");
    tmux.wait_for("one", "No server serves `nope`");
    tmux.send("one", "/models mock-model-large");
    tmux.wait_for("one", "model: mock-model-large");
    tmux.wait_for("one", "build · mock-model-large · ready");
    tmux.send("one", "hi");
    tmux.wait_for("one", "You said: hi");
    tmux.wait_for("one", "mock-model-large · ready · 110/131k (0%)");
    let bodies = server.chat_bodies();
    assert_eq!(bodies.last().unwrap()["model"], "mock-model-large");
    assert!(session_text(&data).contains("\"model\":\"mock-model-large\""));
}

#[test]
fn shift_tab_and_slash_agent_switch_the_agent_and_keep_what_was_typed() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("agents");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "build · mock-model · ready");
    // Shift+Tab with a half-typed task: the agent changes, the text stays.
    tmux.type_text("one", "draft 草稿");
    tmux.keys("one", &["BTab"]);
    let screen = tmux.wait_for("one", "plan · mock-model · ready");
    assert!(screen.contains("> draft 草稿"), "{screen}");
    assert!(!screen.contains("build · mock-model"), "debris:\n{screen}");
    tmux.keys("one", &["C-u"]);
    tmux.send("one", "/agent");
    let screen = tmux.wait_for("one", "AGENTS");
    for row in [
        "  ● plan (primary, built in)",
        "    build (primary, built in)",
        "    explore (subagent, built in)",
    ] {
        assert!(screen.contains(row), "{row}:\n{screen}");
    }
    tmux.send("one", "/agent explore");
    tmux.wait_for("one", "`explore` is a subagent");
    tmux.send("one", "/agent build");
    tmux.wait_for("one", "build · mock-model · ready");
    // Shift+Tab soon after `/agent plan` (once it is drawn: a key that
    // arrives in one read with the line before is taken as a paste): the
    // status line above the prompt is the last switch's, and no other is
    // left below the command.
    tmux.send("one", "/agent plan");
    assert!(crate::support::wait_until(
        std::time::Duration::from_secs(20),
        || tmux
            .history("one")
            .rsplit("> /agent plan")
            .next()
            .is_some_and(|after| after.contains("plan · mock-model · ready"))
    ));
    tmux.keys("one", &["BTab"]);
    assert!(
        crate::support::wait_until(std::time::Duration::from_secs(10), || {
            let history = tmux.history("one");
            let after = history.rsplit("> /agent plan").next().unwrap_or_default();
            after.matches("· mock-model · ready").count() == 1
                && after.contains("build · mock-model · ready")
        }),
        "{}",
        tmux.history("one")
    );
    // The session records every switch.
    let text = session_text(&data);
    assert_eq!(
        text.matches("\"type\":\"agent_change\"").count(),
        4,
        "{text}"
    );
}

#[test]
fn a_subagent_works_indented_under_its_task_and_can_be_listed_and_inspected() {
    use crate::support::{Reply, chunks, server::Request};
    // The child's answer takes a few seconds, so its work can be seen live.
    let server = crate::support::MockServer::start(std::sync::Arc::new(|request: &Request| {
        let body = request.json();
        let child = crate::support::system_prompt(&body).contains("subagent");
        if child && !crate::support::tool_results(&body).is_empty() {
            let words = "The port is 7341, set in config.json line 1. ".repeat(6);
            return Reply::sse_events(chunks::text_answer(&words), Duration::from_millis(60));
        }
        crate::subagents::port_finder(request)
    }));
    let ws = Workspace::new();
    std::fs::write(ws.root.join("config.json"), "{\"port\": 7341}\n").unwrap();
    let data = ws.home.join("data");
    let tmux = Tmux::new("subagent");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "which port?");
    tmux.wait_for("one", "answer:");
    let screen = tmux.screen("one");
    assert!(screen.contains("Allow task?"), "{screen}");
    answer_after_grace(&tmux, "one", "y");
    // While it works, its lines are under the task line.
    let working = tmux.wait_for("one", "  │   ✓ config.json: lines 1-1 of 1");
    assert!(
        working.contains("  │ explore read  config.json"),
        "{working}"
    );
    assert!(!working.contains("  └ explore"), "{working}");
    let screen = tmux.wait_for("one", "ANSWER It listens on 7341.");
    // When it ends, they fold into one line.
    assert!(screen.contains("TOOL task  explore"), "{screen}");
    assert!(!screen.contains("  │ explore read"), "{screen}");
    let summary = "  └ explore done · 2 steps · 1 call · ";
    let id = screen
        .lines()
        .find_map(|l| l.split(summary).nth(1))
        .unwrap_or_else(|| panic!("{summary}:\n{screen}"))
        .trim()
        .to_owned();
    tmux.send("one", "/agents");
    let screen = tmux.wait_for("one", "/inspect ID");
    assert!(
        screen.contains(&format!("{id}  explore · done · 2 steps")),
        "{screen}"
    );
    tmux.send("one", &format!("/inspect {id}"));
    tmux.wait_for("one", "RESULT");
    let history = tmux.history("one");
    let inspected = &history[history.rfind("INSPECT").unwrap()..];
    for expected in [
        "Its whole context, as sent to the model (the `explore` agent):",
        "SYSTEM",
        "You are a subagent that explores code without changing it.",
        "WORKSPACE",
        "TOOLS read, list, grep, glob, bash, todowrite, todoread",
        "Find the port in this project",
        "RESULT",
    ] {
        assert!(inspected.contains(expected), "{expected}:\n{inspected}");
    }
    assert!(!inspected.contains("which port?"), "{inspected}");
}

#[test]
fn esc_stops_the_subagent_alone_and_the_turn_goes_on() {
    use crate::support::{Reply, chunks, server::Request};
    let server = crate::support::MockServer::start(std::sync::Arc::new(|request: &Request| {
        let body = request.json();
        let system = body["messages"][0]["content"].as_str().unwrap_or("");
        let answered = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if system.contains("subagent") {
            // A child that takes its time.
            let words = vec!["slowly"; 100].join(" ");
            return Reply::sse_events(chunks::text_answer(&words), Duration::from_millis(100));
        }
        let events = if answered {
            chunks::text_answer("Carried on without it.")
        } else {
            chunks::tool_answer(
                "",
                &[(
                    "t1",
                    "task",
                    serde_json::json!({"agent": "explore", "prompt": "dig"}),
                )],
            )
        };
        Reply::sse(events.concat().into_bytes())
    }));
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "permission": { "task": "allow" } }"#,
    )
    .unwrap();
    let data = ws.home.join("data");
    let tmux = Tmux::new("subesc");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "dig deep");
    tmux.wait_for("one", "TOOL task  explore");
    // Pressed while the child's answer streams.
    assert!(wait_until(Duration::from_secs(10), || {
        server.chat_bodies().iter().any(|body| {
            body["messages"][0]["content"]
                .as_str()
                .is_some_and(|system| system.contains("subagent"))
        })
    }));
    tmux.keys("one", &["Escape"]);
    let screen = tmux.wait_for("one", "ANSWER Carried on without it.");
    assert!(screen.contains("└ explore aborted"), "{screen}");
    assert!(
        !screen.contains("Aborted; what arrived so far is kept."),
        "{screen}"
    );
}

#[test]
fn no_color_gives_plain_text_and_colour_is_the_default() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("colour");
    for (window, extra) in [("plain", "NO_COLOR=1"), ("colour", "")] {
        tmux.start_with(
            window,
            &ws,
            &server.base_url(),
            &ws.home.join("data"),
            extra,
        );
        tmux.wait_for(window, "Type a task");
        tmux.send(window, "write notes.txt");
        tmux.wait_for(window, "answer:");
    }
    let plain = tmux.screen_with_colour("plain");
    assert!(plain.contains("+Notes"), "{plain}");
    assert!(
        !plain.contains("\u{1b}[3"),
        "colour with NO_COLOR:\n{plain:?}"
    );
    assert!(
        !plain.contains("\u{1b}[1m"),
        "bold with NO_COLOR:\n{plain:?}"
    );
    let coloured = tmux.screen_with_colour("colour");
    // Green from the 16-colour palette (crossterm writes it as entry 2 of
    // the 256: the terminal's own green).
    assert!(coloured.contains("\u{1b}[38;5;2m+Notes"), "{coloured:?}");
}

#[test]
fn a_panic_restores_the_terminal_and_says_where_things_are() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("panic");
    tmux.start_with(
        "one",
        &ws,
        &server.base_url(),
        &data,
        "OFFCODE_STATE_DIR=state",
    );
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "hello");
    tmux.wait_for("one", "You said: hello");
    // In a turn, with the terminal in raw mode.
    tmux.send("one", "__panic");
    let screen = tmux.wait_for("one", "EXITED 1");
    assert!(
        screen.contains("offcode stopped on an internal error"),
        "{screen}"
    );
    assert!(
        screen.contains("The report is in state/crash.log"),
        "{screen}"
    );
    assert!(screen.contains("The session is saved in"), "{screen}");
    let report = std::fs::read_to_string(ws.root.join("state/crash.log")).unwrap();
    assert!(report.contains("a test asked for a panic"), "{report}");
    // The terminal is back in its normal mode: typed text echoes (in raw
    // mode it would not), and a line erase works (the pane runs nothing
    // after offcode, so the line only echoes).
    tmux.type_text("one", "typed-back-to-nor");
    tmux.keys("one", &["C-u"]);
    tmux.send("one", "back-to-normal");
    let screen = tmux.wait_for("one", "back-to-normal");
    assert!(!screen.contains("typed-back-to-nor"), "{screen}");
    let session = session_text(&data);
    assert!(session.contains("You said: hello"), "{session}");
    for line in session.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("whole session lines");
    }
}

#[test]
fn tab_completes_commands_and_workspace_paths_and_at_path_attaches() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("docs")).unwrap();
    std::fs::write(ws.root.join("docs/说明书.md"), "内容第一行\n").unwrap();
    std::fs::write(ws.home.join("outside.txt"), "secret\n").unwrap();
    let tmux = Tmux::new("complete");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    // The menu open on every command: the prompt is still `> `.
    tmux.type_text("one", "/");
    tmux.keys("one", &["Tab"]);
    let menu = tmux.wait_for("one", "/resume ");
    assert!(menu.contains("\n> /") && !menu.contains("> | /"), "{menu}");
    tmux.keys("one", &["Escape", "BSpace"]);
    tmux.type_text("one", "/cont");
    tmux.keys("one", &["Tab"]);
    tmux.wait_for("one", "> /context");
    tmux.keys("one", &["Enter"]);
    let screen = tmux.wait_for("one", "of 32.8k tokens (");
    assert!(screen.contains("  tool schemas   11 tools"), "{screen}");
    tmux.type_text("one", "summarise @do");
    tmux.keys("one", &["Tab"]);
    tmux.wait_for("one", "> summarise @docs/");
    tmux.keys("one", &["Tab"]);
    tmux.wait_for("one", "> summarise @docs/说明书.md");
    tmux.keys("one", &["Enter"]);
    tmux.wait_for("one", "<file path=\"docs/说明书.md\">");
    let body = server.chat_bodies().pop().unwrap();
    let content = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    let prompt = without_workspace(content);
    assert!(
        prompt.starts_with("summarise @docs/说明书.md\n\n<file"),
        "{prompt}"
    );
    assert!(prompt.contains("内容第一行"), "{prompt}");
    // Outside the workspace: refused, nothing sent.
    tmux.send("one", "look at @../home/outside.txt");
    tmux.wait_for("one", "Cannot attach `@../home/outside.txt`");
    // The prompt is back in the editor, to fix; words that are not files
    // stay words.
    tmux.wait_for("one", "> look at @../home/outside.txt");
    tmux.keys("one", &["C-u"]);
    tmux.send("one", "thank @alice for @types/node");
    tmux.wait_for("one", "You said: thank @alice for @types/node");
    assert_eq!(server.chat_bodies().len(), 2);
}

#[test]
fn a_large_paste_arrives_whole() {
    let server = demo_mock();
    let ws = Workspace::new();
    let tmux = Tmux::new("paste");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    let mut block = String::new();
    for n in 1..=300 {
        let _ = writeln!(block, "pasted line {n} 粘贴的文字");
    }
    block.push_str("last line");
    let file = ws.home.join("paste.txt");
    std::fs::write(&file, &block).unwrap();
    tmux.tmux(&["load-buffer", "-b", "big", file.to_str().unwrap()]);
    // `-p` pastes the way a terminal does when the program asks for
    // bracketed paste.
    tmux.tmux(&["paste-buffer", "-p", "-b", "big", "-t", "one"]);
    // Enter once the paste is in: read with it, the editor takes a key
    // that arrives with a paste for part of it (a new line).
    tmux.wait_for("one", "粘贴的文字");
    tmux.keys("one", &["Enter"]);
    tmux.wait_for("one", "last line");
    assert!(wait_until(Duration::from_secs(20), || server
        .chat_bodies()
        .len()
        == 1));
    let body = server.chat_bodies().pop().expect("one request");
    let content = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    assert_eq!(without_workspace(content), block);
}

#[test]
fn a_bare_server_and_a_thinking_model_look_clean() {
    use crate::support::demo::{self, Flavour, Think};
    let server = crate::support::MockServer::start(std::sync::Arc::new(demo::responder(Flavour {
        tool_parser: false,
        think: Think::Open,
    })));
    let ws = Workspace::new();
    std::fs::write(ws.root.join("说明.txt"), "第一行\n").unwrap();
    let data = ws.home.join("data");
    let tmux = Tmux::new("bare");
    tmux.start("bare", &ws, &server.base_url(), &data);
    tmux.wait_for("bare", "Type a task");
    tmux.send("bare", "读取 说明.txt");
    let screen = tmux.wait_for("bare", "ANSWER 完成");
    // The fix is named, wrapped between words.
    assert!(screen.contains("`--enable-auto-tool-choice"), "{screen}");
    assert!(
        screen.contains("TOOL read  说明.txt (from text)"),
        "{screen}"
    );
    assert!(screen.contains("PLAN 我先读取文件。"), "{screen}");
    // Reasoning folds; no markup shows.
    assert_eq!(screen.matches("thought for 2 lines").count(), 2, "{screen}");
    for hidden in ["step by step", "think>", "tool_call", "\"arguments\""] {
        assert!(!screen.contains(hidden), "{hidden}: {screen}");
    }
}

#[test]
fn an_interactive_session_is_named_by_the_title_agent_after_its_first_turn() {
    use crate::support::{Reply, chunks, server::Request};
    let server = crate::support::MockServer::start(std::sync::Arc::new(|request: &Request| {
        let body = request.json();
        if crate::support::server::is_title_request(&body) {
            return Reply::sse(
                chunks::text_answer("标题：「修复登录超时」")
                    .concat()
                    .into_bytes(),
            );
        }
        crate::support::sse(&chunks::text_answer("因为连接池太小。"))
    }));
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("title");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "登录接口为什么有时超时？");
    tmux.wait_for("one", "ANSWER 因为连接池太小。");
    assert!(
        wait_until(Duration::from_secs(10), || session_text(&data)
            .contains(r#""type":"title","title":"修复登录超时""#)),
        "{}",
        session_text(&data)
    );
    // One title request, after the turn, with the first request alone.
    let titles = server.title_bodies();
    assert_eq!(titles.len(), 1);
    assert_eq!(
        titles[0]["messages"][1]["content"],
        "登录接口为什么有时超时？"
    );
    assert!(titles[0].get("tools").is_none(), "{}", titles[0]);
    // The second turn asks for none.
    tmux.send("one", "再检查一次");
    assert!(wait_until(Duration::from_secs(10), || tmux
        .screen("one")
        .matches("ANSWER 因为连接池太小。")
        .count()
        == 2));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.title_bodies().len(), 1);
    assert_eq!(server.chat_bodies().len(), 2);
    tmux.send("one", "/sessions");
    tmux.wait_for("one", "修复登录超时");
}

#[test]
fn mcp_servers_are_listed_with_mcp_and_counted_in_context() {
    let ws = Workspace::new();
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp-server");
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        serde_json::json!({
            "mcp": {
                "test": {"type": "local", "command": [bin, "--big-schemas", "1", "--log", ws.root.join("ui-mcp.log")]},
                "dead": {"type": "local", "command": ["/nonexistent/mcp"]}
            }
        })
        .to_string(),
    )
    .unwrap();
    let server = demo_mock();
    let data = ws.home.join("data");
    let tmux = Tmux::new("mcp");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    // Started in the background; a failure is said at once, and the
    // status line above the waiting prompt names it.
    tmux.wait_for("one", "MCP server `dead` failed");
    let screen = tmux.wait_for("one", "MCP down: dead");
    // Each event keeps its line (the editor takes prints in batches).
    assert!(
        screen.contains("MCP server `test` ready: 11 tools"),
        "{screen}"
    );
    tmux.send("one", "/mcp");
    let screen = tmux.wait_for("one", "MCP test · ready · 10 tools");
    for expected in [
        "test_echo",
        "test_big_schema_1  left out: its definition is 25537 bytes",
        "MCP dead · failed",
    ] {
        assert!(screen.contains(expected), "{expected}:\n{screen}");
    }
    tmux.send("one", "/context");
    let screen = tmux.wait_for("one", "MCP left out");
    assert!(screen.contains("MCP test"), "{screen}");
    assert!(screen.contains("10 tools"), "{screen}");
    assert!(
        screen.contains("test_big_schema_1 (over the budget"),
        "{screen}"
    );
    // Leaving stops the server.
    tmux.send("one", "/quit");
    tmux.wait_for("one", "EXITED 0");
    let marker = ws.root.join("ui-mcp.log").display().to_string();
    assert!(
        std::fs::read_to_string(&marker)
            .unwrap()
            .starts_with("start "),
        "the server ran"
    );
    assert!(wait_until(Duration::from_secs(3), || {
        crate::support::processes_with(&marker).is_empty()
    }));
}
