//! The interactive loop: tasks and approval answers come a line at a time
//! from [`Input`] (the editor on a terminal, plain lines otherwise);
//! approval questions are answered with `y`, `n` or `a`; output blocks
//! come from [`super::render`] and go into the terminal's scrollback.

use std::io::Write;

use super::input::{self, Input};
use super::render::{self, Line, Palette, Role};
use crate::agent::{self, AgentHandle, AgentSetup};
use crate::protocol::{ApprovalDecision, ApprovalRequestEvent, EventMsg, Op};

/// Columns used when the width is unknown.
const WIDTH: usize = 80;

const HELP: &str = "\
Type a task and press Enter. Commands:
  /help   this text
  /quit   leave (also /exit, or end of input)
Approval questions: y = allow once, n = deny, a = allow for this session.";

/// Runs the loop until `/quit` or the end of input; returns the exit status.
pub async fn run(setup: AgentSetup, mut input: Input, colour: bool) -> u8 {
    let palette = Palette::new(colour);
    let mut screen = Screen {
        palette,
        in_text: false,
    };
    let mut handle = agent::spawn(setup);
    // The core introduces the session first.
    let mut session_file = None;
    let mut turns = 0;
    while let Some(event) = handle.events.recv().await {
        if let EventMsg::SessionConfigured(configured) = &event.msg {
            session_file = (!configured.resumed).then(|| configured.path.clone());
            screen.line(&Line::new().with(
                Role::Dim,
                format!(
                    "offcode · {} · {} · session {}",
                    configured.model, configured.base_url, configured.session_id
                ),
            ));
            break;
        }
    }
    screen.line(&Line::new().with(
        Role::Dim,
        "Type a task and press Enter; /help lists the commands.",
    ));
    loop {
        let Some(text) = input.line(input::TASK).await else {
            break;
        };
        match text.trim() {
            "" => {}
            "/quit" | "/exit" => break,
            "/help" => {
                for line in HELP.lines() {
                    screen.line(&Line::new().with(Role::Text, line));
                }
            }
            command if command.starts_with('/') => screen.line(&Line::new().with(
                Role::Error,
                format!("Unknown command `{command}`; /help lists them"),
            )),
            _ => {
                turns += 1;
                handle.ops.submit(Op::UserTurn { text });
                if !turn(&mut handle, &mut input, &mut screen).await {
                    return crate::EXIT_FAILED;
                }
            }
        }
    }
    handle.ops.submit(Op::Shutdown);
    while handle.events.recv().await.is_some() {}
    // A new session nobody typed into is not worth keeping.
    if let (0, Some(path)) = (turns, session_file) {
        let _ = std::fs::remove_file(path);
    }
    0
}

/// Shows one turn's events and answers its questions; false when the core
/// stopped unexpectedly.
async fn turn(handle: &mut AgentHandle, input: &mut Input, screen: &mut Screen) -> bool {
    loop {
        let event = tokio::select! {
            event = handle.events.recv() => event,
            _ = tokio::signal::ctrl_c() => {
                handle.ops.submit(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else {
            return false;
        };
        match &event.msg {
            EventMsg::AssistantDelta { delta } => screen.text(delta),
            EventMsg::ToolCallBegin(call) => {
                screen.end_text();
                screen.line(&render::tool_begin(
                    &call.name,
                    crate::tools::subject(&call.name, &call.arguments).unwrap_or(""),
                    WIDTH,
                ));
            }
            EventMsg::ToolCallEnd(end) => {
                for line in render::tool_end(end, WIDTH) {
                    screen.line(&line);
                }
            }
            EventMsg::ApprovalRequest(request) => {
                screen.end_text();
                for line in render::approval(request, WIDTH) {
                    screen.line(&line);
                }
                let answer = input.line(input::ANSWER).await;
                let (decision, reason) = answer_of(request, answer.as_deref());
                handle.ops.submit(Op::Approve {
                    call_id: request.call_id.clone(),
                    decision,
                    reason,
                });
            }
            EventMsg::Warning { message } => {
                screen.end_text();
                screen.line(&Line::new().with(Role::Warning, message.as_str()));
            }
            EventMsg::Error { message, .. } => {
                screen.end_text();
                screen.line(&Line::new().with(Role::Error, message.as_str()));
            }
            EventMsg::TurnComplete(_) => {
                screen.end_text();
                return true;
            }
            _ => {}
        }
    }
}

/// `y`/`yes`, `a`/`always` (only when offered), anything else denies.
fn answer_of(
    request: &ApprovalRequestEvent,
    answer: Option<&str>,
) -> (ApprovalDecision, Option<String>) {
    match answer.map(|a| a.trim().to_lowercase()).as_deref() {
        Some("y" | "yes") => (ApprovalDecision::AllowOnce, None),
        Some("a" | "always") if request.session_allowed => (ApprovalDecision::AllowSession, None),
        None => (
            ApprovalDecision::Deny,
            Some("the input ended before an answer".to_owned()),
        ),
        Some(_) => (ApprovalDecision::Deny, Some("the user declined".to_owned())),
    }
}

/// Standard output; write errors (a closed pipe) are ignored so the
/// session still finishes and is saved.
struct Screen {
    palette: Palette,
    /// Answer text was streamed and its line is not finished.
    in_text: bool,
}

impl Screen {
    fn line(&mut self, line: &Line) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", self.palette.paint(line));
        let _ = out.flush();
    }

    fn text(&mut self, delta: &str) {
        self.in_text = !delta.ends_with('\n');
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "{delta}");
        let _ = out.flush();
    }

    fn end_text(&mut self) {
        if self.in_text {
            self.in_text = false;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out);
        }
    }
}
