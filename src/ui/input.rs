//! Where the interactive loop gets its lines: the reedline editor on a
//! terminal (wide-character editing, multi-line input, history kept across
//! restarts), or plain lines of standard input otherwise. Either runs on
//! its own thread and reads only when asked, so output never interleaves
//! with an open editor.

use std::borrow::Cow;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use reedline::{
    EditCommand, Emacs, FileBackedHistory, KeyCode, KeyModifiers, Prompt, PromptEditMode,
    PromptHistorySearch, Reedline, ReedlineEvent, Signal, default_emacs_keybindings,
};
use tokio::sync::mpsc;

/// Prompt texts: the task prompt and the approval question.
pub const TASK: &str = "> ";
/// Shown for an approval answer.
pub const ANSWER: &str = "answer [y/n] > ";

/// Entries kept in the history file.
const HISTORY_SIZE: usize = 1_000;

/// Lines on request.
pub struct Input {
    requests: std::sync::mpsc::Sender<&'static str>,
    lines: mpsc::UnboundedReceiver<Option<String>>,
}

impl Input {
    /// Shows `prompt` and waits for a line; `None` at the end of input
    /// (Ctrl+D, or Ctrl+C twice on an empty line).
    pub async fn line(&mut self, prompt: &'static str) -> Option<String> {
        self.requests.send(prompt).ok()?;
        self.lines.recv().await.flatten()
    }
}

/// Plain lines of standard input. When `echo` is set (input is not a
/// terminal), each line is printed after its prompt so the output reads
/// as a transcript.
pub fn plain(echo: bool) -> Input {
    spawn(move |requests, lines| {
        let stdin = std::io::stdin();
        let mut reader = stdin.lock();
        for prompt in requests {
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
                println_quiet(line.as_deref().unwrap_or(""));
            }
            let end = line.is_none();
            if lines.send(line).is_err() || end {
                break;
            }
        }
    })
}

/// The reedline editor, with history in `history` when given. Alt+Enter
/// and Ctrl+J insert a newline; Enter sends.
pub fn editor(history: Option<PathBuf>) -> Input {
    spawn(move |requests, lines| {
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
        // Answers to approval questions stay out of the task history.
        let mut answers = Reedline::create();
        let mut editor = Reedline::create().with_edit_mode(Box::new(Emacs::new(keys)));
        if let Some(path) = history
            && let Ok(file) = FileBackedHistory::with_file(HISTORY_SIZE, path)
        {
            editor = editor.with_history(Box::new(file));
        }
        let mut interrupted = false;
        for prompt in requests {
            let line = loop {
                let reader = if prompt == ANSWER {
                    &mut answers
                } else {
                    &mut editor
                };
                match reader.read_line(&Plain(prompt)) {
                    Ok(Signal::Success(text)) => {
                        interrupted = false;
                        break Some(text);
                    }
                    // Ctrl+C clears the line; twice in a row leaves.
                    Ok(Signal::CtrlC) if !interrupted => interrupted = true,
                    Ok(_) | Err(_) => break None,
                }
            };
            let end = line.is_none();
            if lines.send(line).is_err() || end {
                break;
            }
        }
    })
}

fn spawn(
    read: impl FnOnce(std::sync::mpsc::Receiver<&'static str>, mpsc::UnboundedSender<Option<String>>)
    + Send
    + 'static,
) -> Input {
    let (request_sender, request_receiver) = std::sync::mpsc::channel();
    let (line_sender, line_receiver) = mpsc::unbounded_channel();
    std::thread::spawn(move || read(request_receiver, line_sender));
    Input {
        requests: request_sender,
        lines: line_receiver,
    }
}

fn println_quiet(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// A prompt that is just its text.
struct Plain(&'static str);

impl Prompt for Plain {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0)
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", search.term))
    }
}
