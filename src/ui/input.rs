//! Where the interactive loop gets its input, on a thread of its own.
//!
//! On a terminal, between turns the reedline editor reads a prompt
//! (wide-character editing, multi-line input, history kept across
//! restarts, `/` and `@path` completion); while a turn runs, keys are read
//! one by one in raw mode, so typing goes into the queue and Esc or Ctrl+C
//! abort. Otherwise (a pipe, `TERM=dumb`) input is plain lines of standard
//! input. Only one of these reads at a time, and only when asked.

pub use super::prompt::StatusLine;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossterm::event::{self, Event, KeyEvent, KeyEventKind};
use reedline::{
    ColumnarMenu, EditCommand, Emacs, FileBackedHistory, KeyCode, KeyModifiers, MenuBuilder,
    Reedline, ReedlineEvent, ReedlineMenu, Signal, default_emacs_keybindings,
};
use tokio::sync::mpsc;

use super::complete::Completions;
use super::prompt::{Dynamic, Shown, terminal_width};

/// The prompt in front of typed text.
pub const TASK: &str = "> ";
/// The prompt of a plain-line approval answer.
pub const ANSWER: &str = "answer [y/n] > ";
/// The prompt of a plain-line approval answer that may allow for the
/// session.
pub const ANSWER_SESSION: &str = "answer [y/n/a] > ";

/// Entries kept in the history file.
const HISTORY_SIZE: usize = 1_000;
/// How often the key reader looks for a new request.
const KEY_POLL: Duration = Duration::from_millis(20);
/// The name reedline knows the completion menu by.
const MENU: &str = "completion_menu";
/// What Esc sends back from the editor.
const ESC: &str = "\u{1b}";
/// What Ctrl+C sends back from the editor (the typed text is kept, so the
/// loop can tell an empty prompt).
const CTRL_C: &str = "\u{3}";
/// What Ctrl+O sends back from the editor: `/expand`, the last call's
/// whole output (what was typed stays in the editor).
const CTRL_O: &str = "\u{f}";
/// What Shift+Tab sends back from the editor: the next primary agent
/// (what was typed stays in the editor).
const SHIFT_TAB: &str = "\u{1b}[Z";

/// What the loop asks for.
pub enum Request {
    /// A line: the editor with `status` above the prompt and `initial`
    /// already typed, or a plain line after `prompt`.
    Line {
        /// Paints the status line at a width (editor only).
        status: StatusLine,
        /// The prompt text.
        prompt: &'static str,
        /// Text to start with (editor only).
        initial: String,
    },
    /// Keys one at a time until the next request (terminal only).
    Keys,
    /// Stop reading keys; answered by [`Reply::Paused`].
    Pause,
}

/// What the input thread reports.
#[derive(Debug)]
pub enum Reply {
    /// A submitted line.
    Line(String),
    /// Ctrl+C in the editor on an empty line.
    Interrupt,
    /// Esc in the editor, or Ctrl+C clearing typed text; the editor is
    /// asked for again.
    Escape,
    /// The end of input: Ctrl+D, or standard input closed.
    End,
    /// A key while a turn runs.
    Key(KeyEvent),
    /// Pasted text while a turn runs.
    Paste(String),
    /// The terminal's new size.
    Resize(u16, u16),
    /// Ctrl+O in the editor: `/expand`, then the editor again with what
    /// was typed.
    Expand(String),
    /// Shift+Tab in the editor: the next agent, then the editor again
    /// with what was typed.
    NextAgent(String),
    /// Keys are no longer read; every key read before is reported.
    Paused,
}

/// The loop's side of the input thread.
pub struct Input {
    requests: std::sync::mpsc::Sender<Request>,
    /// Replies, in order.
    pub replies: mpsc::UnboundedReceiver<Reply>,
    /// Whether this is the terminal editor (keys and live drawing work).
    pub terminal: bool,
    /// Prints lines above the editor while it reads a line (terminal only).
    printer: Option<std::sync::mpsc::SyncSender<String>>,
    /// The status line the editor shows now, for changing it while it
    /// reads a line.
    status: Arc<Mutex<Shown>>,
}

impl Input {
    /// Asks for something; replies arrive on [`Input::replies`].
    pub fn request(&self, request: Request) {
        let _ = self.requests.send(request);
    }

    /// Changes the status line above the prompt the editor shows now; it
    /// is drawn again with the next thing printed above it.
    pub fn set_status(&self, status: StatusLine) {
        let mut shown = self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shown.show(status, terminal_width());
    }

    /// Prints `text` above the editor while it reads a line; false when
    /// there is no editor to print above.
    pub fn print_above(&self, text: String) -> bool {
        self.printer
            .as_ref()
            .is_some_and(|printer| printer.try_send(text).is_ok())
    }

    /// Shows `prompt` and waits for a line (plain lines, or the editor
    /// with no status line); `None` at the end of input.
    pub async fn line(&mut self, prompt: &'static str) -> Option<String> {
        self.request(Request::Line {
            status: Box::new(|_| String::new()),
            prompt,
            initial: String::new(),
        });
        loop {
            match self.replies.recv().await? {
                Reply::Line(line) => return Some(line),
                Reply::End => return None,
                _ => {}
            }
        }
    }
}

/// Plain lines of standard input. When `echo` is set (input is not a
/// terminal), each line is printed after its prompt so the output reads
/// as a transcript.
pub fn plain(echo: bool) -> Input {
    spawn(false, move |requests, replies| {
        let stdin = std::io::stdin();
        let mut reader = stdin.lock();
        for request in requests {
            let prompt = match request {
                Request::Line { prompt, .. } => prompt,
                Request::Keys => continue,
                Request::Pause => {
                    if replies.send(Reply::Paused).is_err() {
                        break;
                    }
                    continue;
                }
            };
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{prompt}");
            let _ = out.flush();
            drop(out);
            let mut line = String::new();
            let read = reader.read_line(&mut line);
            let line = match read {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
            };
            if echo {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", line.as_deref().unwrap_or(""));
            }
            let reply = line.map_or(Reply::End, Reply::Line);
            let end = matches!(reply, Reply::End);
            if replies.send(reply).is_err() || end {
                break;
            }
        }
    })
}

/// The reedline editor, with history in `history` when given and
/// completion from `completions`. Alt+Enter and Ctrl+J insert a newline;
/// Enter sends; Tab completes.
pub fn editor(history: Option<PathBuf>, completions: Completions, colour: bool) -> Input {
    let printer = reedline::ExternalPrinter::<String>::default();
    let sender = printer.sender();
    let shown = Arc::new(Mutex::new(Shown::default()));
    let status_line = Arc::clone(&shown);
    let mut input = spawn(true, move |requests, replies| {
        let tab = completions.clone();
        let mut editor = build_editor(history, completions, colour).with_external_printer(printer);
        let mut pending = None;
        while let Some(request) = pending.take().or_else(|| requests.recv().ok()) {
            match request {
                Request::Line {
                    status,
                    prompt,
                    initial,
                } => {
                    let (ahead, then) = match typed_ahead(initial) {
                        Ahead::Text(text, then) => (text, then),
                        Ahead::Recall => (last_prompt(&editor), None),
                        Ahead::Sent(text) => {
                            // Typed ahead with its Enter: sent as it is.
                            let mut err = std::io::stderr();
                            let _ = writeln!(err, "{prompt}{text}");
                            let _ = editor
                                .history_mut()
                                .save(reedline::HistoryItem::from_command_line(&text));
                            let _ = editor.sync_history();
                            if replies.send(Reply::Line(text)).is_err() {
                                break;
                            }
                            continue;
                        }
                        Ahead::Interrupt => {
                            if replies.send(Reply::Interrupt).is_err() {
                                break;
                            }
                            continue;
                        }
                        Ahead::End => {
                            let _ = replies.send(Reply::End);
                            break;
                        }
                    };
                    if !ahead.is_empty() {
                        editor.run_edit_commands(&[EditCommand::InsertString(ahead)]);
                    }
                    if let Some(key) = then {
                        let line = editor.current_buffer_contents().to_owned();
                        editor.run_edit_commands(&key_ahead(&key, &line, &tab));
                    }
                    let prompt = Dynamic::new(status, prompt, Arc::clone(&status_line));
                    let reply = match editor.read_line(&prompt) {
                        Ok(Signal::Success(text)) => {
                            // Written at once, so a crash or a quick exit
                            // keeps it.
                            let _ = editor.sync_history();
                            Reply::Line(text)
                        }
                        Ok(Signal::CtrlC) => Reply::Interrupt,
                        Ok(Signal::HostCommand(command)) if command == CTRL_C => {
                            if editor.current_buffer_contents().is_empty() {
                                Reply::Interrupt
                            } else {
                                editor.run_edit_commands(&[EditCommand::Clear]);
                                Reply::Escape
                            }
                        }
                        Ok(Signal::HostCommand(command)) if command == CTRL_O => {
                            // What was typed comes back after; below the
                            // prompt, as after Enter, so what `/expand`
                            // prints is not painted over.
                            let typed = editor.current_buffer_contents().to_owned();
                            editor.run_edit_commands(&[EditCommand::Clear]);
                            let _ = write!(std::io::stderr(), "\r\n");
                            Reply::Expand(typed)
                        }
                        Ok(Signal::HostCommand(command)) if command == SHIFT_TAB => {
                            let typed = editor.current_buffer_contents().to_owned();
                            editor.run_edit_commands(&[EditCommand::Clear]);
                            // Written over: the status line above says the
                            // agent the editor comes back with.
                            let _ = write!(std::io::stderr(), "\r");
                            Reply::NextAgent(typed)
                        }
                        Ok(Signal::HostCommand(_) | Signal::ExternalBreak(_)) => Reply::Escape,
                        Ok(_) | Err(_) => Reply::End,
                    };
                    let end = matches!(reply, Reply::End);
                    if replies.send(reply).is_err() || end {
                        break;
                    }
                }
                Request::Keys => {
                    pending = read_keys(&requests, &replies);
                    if pending.is_none() {
                        break;
                    }
                }
                Request::Pause => {
                    if replies.send(Reply::Paused).is_err() {
                        break;
                    }
                }
            }
        }
    });
    input.printer = Some(sender);
    input.status = shown;
    input
}

fn build_editor(history: Option<PathBuf>, completions: Completions, colour: bool) -> Reedline {
    let mut keys = default_emacs_keybindings();
    for (modifiers, code) in [
        (KeyModifiers::ALT, KeyCode::Enter),
        (KeyModifiers::CONTROL, KeyCode::Char('j')),
    ] {
        keys.add_binding(
            modifiers,
            code,
            ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
        );
    }
    keys.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![
            ReedlineEvent::Menu(MENU.to_owned()),
            ReedlineEvent::MenuNext,
        ]),
    );
    // Esc closes an open menu; otherwise the loop hears of it.
    keys.add_binding(
        KeyModifiers::NONE,
        KeyCode::Esc,
        ReedlineEvent::UntilFound(vec![
            ReedlineEvent::Esc,
            ReedlineEvent::ExecuteHostCommand(ESC.to_owned()),
        ]),
    );
    keys.add_binding(
        KeyModifiers::CONTROL,
        KeyCode::Char('c'),
        ReedlineEvent::ExecuteHostCommand(CTRL_C.to_owned()),
    );
    keys.add_binding(
        KeyModifiers::CONTROL,
        KeyCode::Char('o'),
        ReedlineEvent::ExecuteHostCommand(CTRL_O.to_owned()),
    );
    // Tab completes, so Shift+Tab switches the agent (build ⇄ plan ⇄ …).
    keys.add_binding(
        KeyModifiers::SHIFT,
        KeyCode::BackTab,
        ReedlineEvent::ExecuteHostCommand(SHIFT_TAB.to_owned()),
    );
    keys.add_binding(
        KeyModifiers::NONE,
        KeyCode::BackTab,
        ReedlineEvent::ExecuteHostCommand(SHIFT_TAB.to_owned()),
    );
    // No marker: the prompt stays `> ` while the menu is open.
    let menu = ColumnarMenu::default().with_name(MENU).with_marker("");
    let mut editor = Reedline::create()
        .with_edit_mode(Box::new(Emacs::new(keys)))
        .with_completer(Box::new(completions))
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
        .with_quick_completions(true)
        .with_partial_completions(true)
        .with_ansi_colors(colour)
        .use_bracketed_paste(true)
        .with_transient_prompt(Box::new(Dynamic {
            status: Arc::default(),
            prompt: TASK,
        }));
    if let Some(path) = history
        && let Ok(file) = FileBackedHistory::with_file(HISTORY_SIZE, path)
    {
        editor = editor.with_history(Box::new(file));
    }
    editor
}

/// The newest line of the editor's history; empty when there is none.
fn last_prompt(editor: &Reedline) -> String {
    let newest = reedline::SearchQuery {
        limit: Some(1),
        ..reedline::SearchQuery::everything(reedline::SearchDirection::Backward, None)
    };
    editor
        .history()
        .search(newest)
        .ok()
        .and_then(|items| items.into_iter().next())
        .map(|item| item.command_line)
        .unwrap_or_default()
}

/// What keys typed before the editor started amount to.
enum Ahead {
    /// Text to start the editor with, and the key that ended the reading
    /// ahead, if one did: the keys after it wait for the editor.
    Text(String, Option<KeyEvent>),
    /// A line sent with Enter.
    Sent(String),
    /// Ctrl+C on an empty line.
    Interrupt,
    /// Ctrl+D on an empty line: leave.
    End,
    /// Up on an empty line: the last prompt, as the editor would recall
    /// it (keys after it are left to the editor).
    Recall,
}

/// Keys typed before the editor starts (while a turn was ending), after
/// `initial`: Enter sends, Ctrl+C clears (or, on nothing, interrupts),
/// Ctrl+D on nothing leaves, as in the editor. Reedline would take a burst
/// of waiting keys for a paste and their Enter for a new line.
fn typed_ahead(initial: String) -> Ahead {
    let _ = crossterm::terminal::enable_raw_mode();
    let waiting = std::iter::from_fn(|| {
        event::poll(Duration::ZERO)
            .unwrap_or(false)
            .then(event::read)
            .and_then(Result::ok)
    });
    let ahead = read_ahead(initial, waiting);
    if !matches!(ahead, Ahead::Text(..) | Ahead::Recall) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
    ahead
}

/// What the waiting `events` make of `initial`. Text keys are read; the
/// first key that is not (Tab, an arrow, Home…) ends the reading, so the
/// editor gets every key after it: each was dropped here once (a Tab
/// pressed as the editor started was lost, found by the stress runs).
fn read_ahead(initial: String, events: impl Iterator<Item = Event>) -> Ahead {
    let mut text = initial;
    for event in events {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => {
                let control = key.modifiers.contains(KeyModifiers::CONTROL);
                match key.code {
                    KeyCode::Enter if key.modifiers.is_empty() && !text.trim().is_empty() => {
                        return Ahead::Sent(text);
                    }
                    KeyCode::Char('c') if control => {
                        if text.is_empty() {
                            return Ahead::Interrupt;
                        }
                        text.clear();
                    }
                    // A Ctrl+D typed as a turn ended was lost here.
                    KeyCode::Char('d') if control && text.is_empty() => return Ahead::End,
                    // So was an Up pressed as the editor started.
                    KeyCode::Up if key.modifiers.is_empty() && text.is_empty() => {
                        return Ahead::Recall;
                    }
                    KeyCode::Char(c)
                        if !key
                            .modifiers
                            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
                    {
                        text.push(c);
                    }
                    KeyCode::Backspace => {
                        text.pop();
                    }
                    _ => return Ahead::Text(text, Some(key)),
                }
            }
            Event::Paste(pasted) => text.push_str(&pasted),
            _ => {}
        }
    }
    Ahead::Text(text, None)
}

/// What the key that ended the reading ahead does to `line`, the cursor
/// at its end, as in the editor: Tab completes what is unambiguous (the
/// menu needs a second Tab, in the editor), arrows, Home, End and Delete
/// move and delete. Other keys are dropped.
fn key_ahead(key: &KeyEvent, line: &str, completions: &Completions) -> Vec<EditCommand> {
    if !(key.modifiers - KeyModifiers::SHIFT).is_empty() {
        return Vec::new();
    }
    match key.code {
        KeyCode::Tab => completions
            .unambiguous(line)
            .map(|completed| vec![EditCommand::Clear, EditCommand::InsertString(completed)])
            .unwrap_or_default(),
        KeyCode::Left => vec![EditCommand::MoveLeft { select: false }],
        KeyCode::Right => vec![EditCommand::MoveRight { select: false }],
        KeyCode::Home => vec![EditCommand::MoveToLineStart { select: false }],
        KeyCode::End => vec![EditCommand::MoveToLineEnd { select: false }],
        KeyCode::Delete => vec![EditCommand::Delete],
        _ => Vec::new(),
    }
}

/// Raw keys until a request comes; returns it (`None` when the loop is
/// gone).
fn read_keys(
    requests: &std::sync::mpsc::Receiver<Request>,
    replies: &mpsc::UnboundedSender<Reply>,
) -> Option<Request> {
    let _ = crossterm::terminal::enable_raw_mode();
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste);
    let next = loop {
        match requests.try_recv() {
            Ok(request) => break Some(request),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => break None,
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
        }
        if !event::poll(KEY_POLL).unwrap_or(false) {
            continue;
        }
        let reply = match event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => Reply::Key(key),
            Ok(Event::Paste(text)) => Reply::Paste(text),
            Ok(Event::Resize(width, height)) => Reply::Resize(width, height),
            Ok(_) => continue,
            Err(_) => break None,
        };
        if replies.send(reply).is_err() {
            break None;
        }
    };
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableBracketedPaste);
    let _ = crossterm::terminal::disable_raw_mode();
    next
}

fn spawn(
    terminal: bool,
    read: impl FnOnce(std::sync::mpsc::Receiver<Request>, mpsc::UnboundedSender<Reply>) + Send + 'static,
) -> Input {
    let (request_sender, request_receiver) = std::sync::mpsc::channel();
    let (reply_sender, reply_receiver) = mpsc::unbounded_channel();
    std::thread::spawn(move || read(request_receiver, reply_sender));
    Input {
        requests: request_sender,
        replies: reply_receiver,
        terminal,
        printer: None,
        status: Arc::default(),
    }
}

#[cfg(test)]
mod tests;
