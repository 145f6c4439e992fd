//! One turn in a live terminal: the core's events become lines above a
//! live area (text still arriving, what is queued, the status line and an
//! input line), keys edit the input or answer an approval, Enter queues,
//! Esc or Ctrl+C abort.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use unicode_width::UnicodeWidthStr;

pub mod ask;
mod rows;

use super::app::App;
use super::input::{Input, Reply};
use super::paint::{Frame, Live};
use super::render::{self, Line, Lines, Role};
use crate::protocol::{ErrorKind, EventMsg, Op};
use ask::{Answer, Question, answered, is_interrupt};
pub use rows::{LiveParts, frame_rows, live_rows};

pub use ask::GRACE as APPROVAL_GRACE;
/// Spinner frames.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// The shortest time between two frames drawn for streamed text.
const FRAME: Duration = Duration::from_millis(16);
/// Queued messages shown one per row; the rest are counted.
const QUEUE_ROWS: usize = 3;
/// Events taken in before a frame is drawn.
const BATCH: usize = 256;

/// How a turn ended for the loop.
pub struct Outcome {
    /// Typed but not sent; it goes back into the editor.
    pub typed: String,
    /// What the loop does next.
    pub next: Next,
    /// The message was refused unsent (too big for the model): what was
    /// typed goes back into the editor.
    pub refused: bool,
}

/// What the loop does after a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The next prompt.
    Prompt,
    /// The next prompt, where one more Ctrl+C (on an empty line) leaves:
    /// Ctrl+C was pressed once.
    Interrupted,
    /// Ctrl+D on an empty input line: leave once the queue is done.
    Quit,
    /// Ctrl+C twice: leave now.
    Leave,
    /// The core stopped.
    CoreStopped,
}

/// The input line while the agent works.
#[derive(Debug, Default)]
pub struct Edit {
    /// The text.
    pub text: String,
    /// Byte offset of the cursor.
    pub cursor: usize,
}

impl Edit {
    /// Applies an editing key; false when the key is not an edit.
    pub fn key(&mut self, key: &KeyEvent) -> bool {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('j') if control => self.insert("\n"),
            KeyCode::Enter if key.modifiers.contains(KeyModifiers::ALT) => self.insert("\n"),
            KeyCode::Char('a') if control => self.cursor = 0,
            KeyCode::Char('e') if control => self.cursor = self.text.len(),
            KeyCode::Char('u') if control => {
                self.text.drain(..self.cursor);
                self.cursor = 0;
            }
            KeyCode::Char(_) if control => return false,
            KeyCode::Char(c) => self.insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Tab => self.insert("    "),
            KeyCode::Backspace => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                    self.text.remove(self.cursor);
                }
            }
            KeyCode::Delete => {
                if self.cursor < self.text.len() {
                    self.text.remove(self.cursor);
                }
            }
            KeyCode::Left => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                }
            }
            KeyCode::Right => {
                if let Some(c) = self.text[self.cursor..].chars().next() {
                    self.cursor += c.len_utf8();
                }
            }
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.text.len(),
            _ => return false,
        }
        true
    }

    /// Inserts `text` at the cursor.
    /// Inserts `text` at the cursor; line ends become `\n`, tabs spaces,
    /// other control characters are dropped.
    pub fn insert(&mut self, text: &str) {
        let text = render::clean(&text.replace("\r\n", "\n").replace('\r', "\n"));
        self.text.insert_str(self.cursor, &text);
        self.cursor += text.len();
    }

    /// The input row at `width` and the cursor's column in it: the part
    /// around the cursor when the text is wider than the row.
    pub fn row(&self, prompt: &str, width: usize) -> (Line, usize) {
        let shown = |s: &str| s.replace('\n', "⏎");
        let before = shown(&self.text[..self.cursor]);
        let after = shown(&self.text[self.cursor..]);
        let room = width.saturating_sub(prompt.width() + 1).max(1);
        let before = if before.width() > room {
            render::tail(&Line::new().with(Role::Text, before), room).plain()
        } else {
            before
        };
        let column = prompt.width() + before.width();
        let after = render::truncate(&after, width.saturating_sub(column));
        let line = Line::new()
            .with(Role::Label, prompt)
            .with(Role::Text, format!("{before}{after}"));
        (line, column)
    }
}

/// A turn being shown.
struct Turn<'t> {
    edit: Edit,
    queue: &'t mut VecDeque<String>,
    question: Option<Question>,
    aborting: bool,
    /// Ctrl+C presses in this turn: the second leaves, whatever else is
    /// going on.
    interrupts: usize,
    done: bool,
    quit: bool,
    /// The kinds of the errors the turn reported.
    errors: Vec<ErrorKind>,
    /// Terminal rows.
    height: usize,
}

/// Runs `op` to the end of its turn.
pub async fn turn(
    app: &mut App<'_>,
    op: Op,
    input: &mut Input,
    queue: &mut VecDeque<String>,
    typed: String,
) -> Outcome {
    input.request(super::input::Request::Keys);
    app.handle.ops.submit(op);
    let mut live = Live::new();
    let mut turn = Turn {
        edit: Edit {
            cursor: typed.len(),
            text: typed,
        },
        queue,
        question: None,
        aborting: false,
        interrupts: 0,
        done: false,
        quit: false,
        errors: Vec::new(),
        height: 24,
    };
    // The terminal may have been resized while the editor had it.
    if let Ok((columns, rows)) = crossterm::terminal::size() {
        app.view.width = usize::from(columns).max(10);
        turn.height = usize::from(rows);
    }
    let mut spin = 0usize;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut out = std::io::stdout();
    let mut alive = true;
    let mut last_frame = tokio::time::Instant::now();
    let mut dirty = false;
    loop {
        // Keys are drawn at once; streamed text at most once a frame, so a
        // fast stream costs the terminal a frame, not a redraw per token.
        let mut now = false;
        tokio::select! {
            event = app.handle.events.recv() => match event {
                Some(event) => turn.events(app, input, &mut live, event),
                None => alive = false,
            },
            reply = input.replies.recv() => {
                now = true;
                match reply {
                    Some(reply) => turn.reply(app, &mut live, reply),
                    None => alive = false,
                }
            },
            _ = tick.tick() => spin = turn.tick(app, spin),
            () = tokio::time::sleep_until(last_frame + FRAME), if dirty => {}
        }
        dirty = true;
        if turn.done || !alive || turn.interrupts >= 2 {
            let committed = app.view.take_committed();
            let frame = Frame {
                committed: &committed,
                live: &[],
                cursor: (0, 0),
                width: app.view.width,
            };
            live.draw(&mut out, app.palette, &frame);
            live.clear(&mut out);
            break;
        }
        if !now && last_frame.elapsed() < FRAME {
            continue;
        }
        let committed = app.view.take_committed();
        let (rows, cursor) = turn.rows(app, spin);
        let frame = Frame {
            committed: &committed,
            live: &rows,
            cursor,
            width: app.view.width,
        };
        live.draw(&mut out, app.palette, &frame);
        last_frame = tokio::time::Instant::now();
        dirty = false;
    }
    // Keys typed up to now belong to the next prompt.
    input.request(super::input::Request::Pause);
    while let Some(reply) = input.replies.recv().await {
        match reply {
            // A Ctrl+C that lands as the turn ends still counts: the
            // second of two pressed together leaves (it was dropped here).
            Reply::Key(key) if is_interrupt(&key) => turn.interrupts += 1,
            Reply::Key(key) if key.code != KeyCode::Esc => turn.typing(&key),
            Reply::Paste(text) => turn.edit.insert(&text),
            Reply::Paused => break,
            _ => {}
        }
    }
    let next = if !alive {
        Next::CoreStopped
    } else if turn.interrupts >= 2 {
        Next::Leave
    } else if turn.quit {
        Next::Quit
    } else if turn.interrupts == 1 {
        Next::Interrupted
    } else {
        Next::Prompt
    };
    Outcome {
        typed: turn.edit.text,
        next,
        refused: turn.errors.contains(&ErrorKind::TooBig),
    }
}

impl Turn<'_> {
    /// Takes in `event` and whatever else has arrived, before one frame.
    fn events(
        &mut self,
        app: &mut App<'_>,
        input: &mut Input,
        live: &mut Live,
        mut event: crate::protocol::Event,
    ) {
        // At most a batch before a frame, and never one more taken than
        // shown: what is left waits in the channel for the next pass.
        for taken in 1..=BATCH {
            // Debug builds only: how the tests reach the crash path with
            // the terminal in raw mode.
            #[cfg(debug_assertions)]
            if matches!(&event.msg, EventMsg::AssistantDelta { delta } if delta.contains("__panic"))
            {
                panic!("a test asked for a panic");
            }
            if let EventMsg::ApprovalRequest(request) = &event.msg {
                // Keys already on their way were not meant as an answer:
                // they are taken as typing (or an abort), never as one.
                while let Ok(reply) = input.replies.try_recv() {
                    self.reply(app, live, reply);
                }
                let mut question = Question::new(request.clone(), app.view.width, self.height);
                if !self.edit.text.is_empty() {
                    // A message being typed: its keys are not answers.
                    question.typing();
                }
                self.question = Some(question);
            }
            self.done |= matches!(event.msg, EventMsg::TurnComplete(_));
            if let EventMsg::Error { kind, .. } = &event.msg {
                self.errors.push(*kind);
            }
            app.view.event(&event.msg);
            if taken == BATCH || self.done {
                break;
            }
            match app.handle.events.try_recv() {
                Ok(next) => event = next,
                Err(_) => break,
            }
        }
    }

    fn reply(&mut self, app: &mut App<'_>, live: &mut Live, reply: Reply) {
        match reply {
            Reply::Key(key) => self.key(app, &key),
            Reply::Paste(text) => {
                if let Some(key) = self
                    .question
                    .as_mut()
                    .and_then(|q| q.pasted(Instant::now()))
                {
                    self.typing(&key);
                }
                self.edit.insert(&text);
            }
            Reply::Resize(width, height) => {
                self.height = usize::from(height);
                live.resized(usize::from(width));
                app.view.width = usize::from(width).max(10);
                if let Some(question) = &mut self.question {
                    question.resized(app.view.width, self.height);
                }
            }
            _ => {}
        }
    }

    fn key(&mut self, app: &mut App<'_>, key: &KeyEvent) {
        if is_interrupt(key) {
            self.interrupts += 1;
            if self.interrupts >= 2 {
                return;
            }
        }
        if let Some(asked) = &mut self.question {
            // Ctrl+C always counts: it denies and stops.
            let answer = asked.take(key, self.height, Instant::now());
            self.answered(app, answer);
            if is_interrupt(key) && self.question.is_none() {
                self.abort(app);
            }
        } else if key.code == KeyCode::Esc && app.view.subagent_running() {
            // Esc stops the subagents; the turn goes on without them.
            app.handle.ops.submit(Op::InterruptSubagents);
        } else if is_interrupt(key) || key.code == KeyCode::Esc {
            self.abort(app);
        } else {
            // Ctrl+D shows in the live area (see `rows`), never in the
            // middle of the answer.
            self.typing(key);
        }
    }

    /// A tick of the clock: the spinner's next frame, `spin` + 1, and an
    /// answer a key waited for, once it has stood alone long enough.
    fn tick(&mut self, app: &mut App<'_>, spin: usize) -> usize {
        if let Some(asked) = &mut self.question {
            let answer = asked.due(self.height, Instant::now());
            self.answered(app, answer);
        }
        spin.wrapping_add(1)
    }

    /// Sends the question's answer, if `answer` is one; keys that were
    /// typing go to the input line, as during the turn.
    fn answered(&mut self, app: &mut App<'_>, answer: Answer) {
        if let Answer::Typed(keys) = &answer {
            for key in keys {
                self.typing(key);
            }
        }
        let (Answer::Decided(decision, reason), Some(asked)) = (answer, &self.question) else {
            return;
        };
        app.view.commit(answered(decision, &asked.request));
        app.handle.ops.submit(Op::Approve {
            call_id: asked.request.call_id.clone(),
            decision,
            reason,
        });
        self.question = None;
    }

    fn abort(&mut self, app: &App<'_>) {
        if !self.aborting {
            app.handle.ops.submit(Op::Interrupt);
            self.aborting = true;
        }
    }

    /// An editing key; Enter queues the text; Ctrl+D on an empty line
    /// leaves after the turn.
    fn typing(&mut self, key: &KeyEvent) {
        if key.code == KeyCode::Char('d')
            && key.modifiers.contains(KeyModifiers::CONTROL)
            && self.edit.text.is_empty()
        {
            self.quit = true;
        } else if key.code == KeyCode::Enter && key.modifiers.is_empty() {
            if !self.edit.text.trim().is_empty() {
                self.queue.push_back(std::mem::take(&mut self.edit.text));
                self.edit.cursor = 0;
            }
        } else {
            self.edit.key(key);
        }
    }

    /// The live rows and the cursor position among them.
    fn rows(&self, app: &App<'_>, spin: usize) -> (Vec<Line>, (usize, usize)) {
        let note = if self.aborting {
            Some("aborting…")
        } else if self.quit && self.queue.is_empty() {
            Some("leaving when this turn ends (Ctrl+C twice: now)")
        } else if self.quit {
            Some("leaving when the queued messages are done")
        } else {
            None
        };
        let parts = LiveParts {
            edit: &self.edit,
            queued: self.queue,
            question: self.question.as_ref(),
            note,
            spin,
            height: self.height,
        };
        frame_rows(&app.view, &parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::view::View;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn editing_wide_characters_by_key() {
        let mut edit = Edit::default();
        for c in "你好世界".chars() {
            edit.key(&key(KeyCode::Char(c)));
        }
        edit.key(&key(KeyCode::Left));
        edit.key(&key(KeyCode::Left));
        edit.key(&key(KeyCode::Backspace));
        edit.key(&key(KeyCode::Char('X')));
        assert_eq!(edit.text, "你X世界");
        let (line, column) = edit.row("> ", 80);
        assert_eq!(line.plain(), "> 你X世界");
        // Two columns of prompt, two for 你 and one for X.
        assert_eq!(column, 5);
        edit.key(&KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(edit.text, "世界");
    }

    #[test]
    fn a_long_input_shows_the_part_around_the_cursor() {
        let mut edit = Edit::default();
        edit.insert(&"字".repeat(60));
        let (line, column) = edit.row("> ", 40);
        assert!(line.width() <= 40, "{}", line.plain());
        assert!(column < 40);
        assert!(line.plain().starts_with("> …"));
    }

    #[test]
    fn the_live_rows_fit_a_short_terminal_newest_text_first() {
        let mut view = View::new(
            crate::ui::view::Status {
                agent: "build".into(),
                model: "m".into(),
                state: crate::protocol::TurnState::ModelGenerating,
                used: None,
                limit: None,
                session: "s".into(),
                retry: None,
                held: None,
                mcp_down: Vec::new(),
            },
            40,
        );
        view.event(&EventMsg::AssistantDelta {
            delta: "one\ntwo\nthree\nfour\nfive\nsix".into(),
        });
        let queued: VecDeque<String> = (1..=5).map(|n| format!("task {n}")).collect();
        let (rows, cursor) = live_rows(&view, &Edit::default(), &queued, None, None, 0, 10);
        let text: Vec<String> = rows.iter().map(Line::plain).collect();
        assert_eq!(
            text,
            [
                "four",
                "five",
                "six",
                "queued: task 1",
                "queued: task 2",
                "queued: task 3",
                "… 2 more queued",
                "⠋ build · m · generating · s",
                "> ",
            ]
        );
        assert_eq!(cursor, (8, 2));
    }
}
