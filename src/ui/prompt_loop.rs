//! The interactive loop: prompts come from [`Input`] (the editor on a
//! terminal, plain lines otherwise), commands run in [`App`], and a turn is
//! shown live ([`super::live_turn`]) on a terminal or as finished lines
//! otherwise, where approval questions are answered on the next line.

use std::collections::VecDeque;
use std::io::Write as _;
use std::time::Duration;

use super::app::{self, App, Dispatch};
use super::input::{self, Input, Reply, Request};
use super::live_turn::Next;
use super::render::Palette;
use crate::agent::AgentSetup;
use crate::config::Environment;
use crate::protocol::{ApprovalDecision, ApprovalRequestEvent, EventMsg, Op};

/// How long a model switch may take to be recorded.
const SETTLE: Duration = Duration::from_secs(5);
/// How long leaving with Ctrl+C twice waits for the core to stop.
const LEAVE: Duration = Duration::from_secs(2);

/// Runs the loop until `/quit` or the end of input; returns the exit status.
pub async fn run(
    environment: &Environment,
    setup: AgentSetup,
    mut input: Input,
    (colour, width): (bool, usize),
    first: Option<String>,
) -> u8 {
    let mut app = App::start(environment, setup, Palette::new(colour), width).await;
    app.view.fit = input.terminal;
    // `offcode "PROMPT"`: the first task, sent as if typed.
    let mut queue: VecDeque<String> = first.into_iter().filter(|p| !p.trim().is_empty()).collect();
    let mut typed = String::new();
    let mut interrupted = false;
    // Ctrl+D during a turn: leave once the queue is done.
    let mut leaving = false;
    loop {
        app.take_events();
        app.print_committed();
        if leaving && queue.is_empty() {
            break;
        }
        let text = if let Some(queued) = queue.pop_front() {
            app.note(format!("> {queued}"));
            app.print_committed();
            queued
        } else {
            ask_for_line(&mut app, &input, interrupted, std::mem::take(&mut typed));
            match next_reply(&mut app, &mut input).await {
                Some(Reply::Line(text)) => {
                    interrupted = false;
                    text
                }
                Some(Reply::NextAgent(kept)) => {
                    typed = quick(&mut app, Op::SetAgent { name: None }, kept).await;
                    continue;
                }
                Some(Reply::Expand(kept)) => {
                    typed = kept;
                    "/expand".to_owned()
                }
                Some(Reply::Interrupt) if !interrupted => {
                    interrupted = true;
                    continue;
                }
                Some(
                    Reply::Escape
                    | Reply::Key(_)
                    | Reply::Paste(_)
                    | Reply::Resize(..)
                    | Reply::Paused,
                ) => {
                    continue;
                }
                Some(Reply::Interrupt | Reply::End) | None => {
                    // The editor leaves the cursor on its line.
                    if input.terminal {
                        let _ = writeln!(std::io::stderr());
                    }
                    break;
                }
            }
        };
        let op = match app.dispatch(&text).await {
            Dispatch::Quit => break,
            Dispatch::Done => {
                if let Some(text) = app.refused.take() {
                    typed = text;
                }
                continue;
            }
            Dispatch::Turn(op) if is_quick(&op) => {
                typed = quick(&mut app, op, std::mem::take(&mut typed)).await;
                continue;
            }
            Dispatch::Turn(op) => op,
        };
        app.turn_started();
        let alive = if input.terminal {
            let outcome = super::live_turn::turn(&mut app, op, &mut input, &mut queue, typed).await;
            typed = outcome.typed;
            if outcome.refused && typed.is_empty() {
                typed.clone_from(&text);
            }
            interrupted = outcome.next == Next::Interrupted;
            match outcome.next {
                Next::Leave => return leave(&mut app).await,
                Next::Quit if queue.is_empty() => break,
                Next::Quit => leaving = true,
                Next::Prompt | Next::Interrupted | Next::CoreStopped => {}
            }
            outcome.next != Next::CoreStopped
        } else {
            app.handle.ops.submit(op);
            typed = String::new();
            plain_turn(&mut app, &mut input).await
        };
        if !alive {
            app.print_committed();
            app.handle.stop_servers().await;
            return crate::failure::EXIT_FAILED;
        }
        after_turn(&mut app).await;
    }
    app.print_committed();
    app.stop().await;
    0
}

/// How long events that arrive while the editor waits are gathered into
/// one print: longer than the editor's 100 ms between batches.
const PRINT_BATCH: std::time::Duration = std::time::Duration::from_millis(150);

/// Asks the editor for a line, with the status line above it and `typed`
/// in it.
fn ask_for_line(app: &mut App<'_>, input: &Input, interrupted: bool, typed: String) {
    refresh_width(app, input);
    let hint = interrupted.then_some("Ctrl+C again leaves");
    input.request(Request::Line {
        status: app.status_line(hint),
        prompt: input::TASK,
        initial: typed,
    });
}

/// An op the core answers at once (a switch, a report): sent, and its
/// answer shown.
/// Ops answered at once, between turns, with no turn of their own.
fn is_quick(op: &Op) -> bool {
    matches!(
        op,
        Op::SetModel { .. }
            | Op::SetAgent { .. }
            | Op::ListAgents
            | Op::ListMcp
            | Op::Context
            | Op::Undo
            | Op::Revert { .. }
            | Op::Diff { .. }
            | Op::Turns
    )
}

/// Runs a quick op; returns what the editor holds next (`typed`, or what
/// the op gave back: a reverted turn's prompt).
async fn quick(app: &mut App<'_>, op: Op, typed: String) -> String {
    let asked = app.handle.ops.submit(op);
    app::settle(app, asked, SETTLE).await;
    app.refused.take().unwrap_or(typed)
}

/// What a finished turn leaves to do: a `/summarize` summary starts a new
/// session.
async fn after_turn(app: &mut App<'_>) {
    if let Some(summary) = app.view.summary.take() {
        app.start_from_summary(&summary).await;
        app.print_committed();
    }
}

/// Takes the terminal's width now (it may have been resized).
fn refresh_width(app: &mut App<'_>, input: &Input) {
    if input.terminal
        && let Ok((columns, _)) = crossterm::terminal::size()
    {
        app.view.width = usize::from(columns).max(10);
    }
}

/// The editor's next reply. What the core says while it waits (the
/// start-up model list failing) is printed above it at once, over the
/// status line the editor drew above its prompt (it draws that again
/// below).
async fn next_reply(app: &mut App<'_>, input: &mut Input) -> Option<Reply> {
    let mut core = true;
    loop {
        tokio::select! {
            reply = input.replies.recv() => {
                // The terminal may have been resized while the editor had
                // it: what the line prints fits the width now.
                refresh_width(app, input);
                return reply;
            }
            event = app.handle.events.recv(), if input.terminal && core => {
                let Some(event) = event else {
                    core = false;
                    continue;
                };
                app.view.event(&event.msg);
                // What comes with it goes in the same print: the editor takes
                // prints in batches (every 100 ms), and a second one in a
                // batch would write over the first (it starts a line up).
                while let Ok(Some(event)) =
                    tokio::time::timeout(PRINT_BATCH, app.handle.events.recv()).await
                {
                    app.view.event(&event.msg);
                }
                let lines = app.view.take_committed();
                if !lines.is_empty() {
                    // The status line drawn again below them says what
                    // changed (a server down).
                    input.set_status(app.status_line(None));
                    input.print_above(super::paint::over_the_row_above(app.palette, &lines));
                }
            }
        }
    }
}

/// Leaves during a turn (Ctrl+C twice): the session is saved as it goes,
/// and a core stuck on something must not keep us here.
async fn leave(app: &mut App<'_>) -> u8 {
    app.note("Left during the turn; the session is saved.");
    app.print_committed();
    let _ = tokio::time::timeout(LEAVE, app.stop()).await;
    0
}

/// Shows one turn's events as finished lines and answers its questions
/// on the next input line; false when the core stopped unexpectedly.
async fn plain_turn(app: &mut App<'_>, input: &mut Input) -> bool {
    let mut interrupts = crate::cancel::Interrupts::listen();
    loop {
        let event = tokio::select! {
            event = app.handle.events.recv() => event,
            Some(()) = interrupts.next() => {
                app.handle.ops.submit(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else {
            return false;
        };
        app.view.event(&event.msg);
        app.print_committed();
        match &event.msg {
            EventMsg::ApprovalRequest(request) => {
                let prompt = if request.session_allowed {
                    input::ANSWER_SESSION
                } else {
                    input::ANSWER
                };
                let answer = input.line(prompt).await;
                let (decision, reason) = answer_of(request, answer.as_deref());
                app.handle.ops.submit(Op::Approve {
                    call_id: request.call_id.clone(),
                    decision,
                    reason,
                });
            }
            EventMsg::TurnComplete(_) => return true,
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
