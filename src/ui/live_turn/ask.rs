//! An approval question in the live turn: the keys that answer it, and,
//! when the prompt is taller than the screen, a pager that must reach
//! its last row before `y` or `a` can answer. A key answers only when it
//! stands alone, a quiet moment before it and after it, as the trust
//! question at start does: a person typing when the question appears, or
//! starting to type after a pause, must not approve with a `y` or an `a`
//! of their text.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::protocol::{ApprovalDecision, ApprovalRequestEvent};
use crate::ui::render::{self, Line, Lines, Role};

/// The pending approval question.
pub struct Question {
    /// What is asked.
    pub request: ApprovalRequestEvent,
    /// When it appeared, or the last key that was not a deliberate move
    /// of the pager: a key answers only [`GRACE`] after it.
    heard: Instant,
    /// An answering key, and when it came: it answers once [`Self::quiet`]
    /// has passed with no other key ([`Question::due`]).
    waiting: Option<(KeyEvent, Instant)>,
    /// The person has been typing (a message on the input line when the
    /// question showed, or keys taken as typing since): a key must then
    /// stand alone for [`TYPING_QUIET`], not [`GRACE`].
    typing: bool,
    /// The prompt's rows at the current width.
    rows: usize,
    /// Whether every row of the prompt has been on the screen.
    read: bool,
    /// While paging: the first row shown.
    page: Option<usize>,
    /// After `t`: the note being typed that goes to the model with the
    /// refusal.
    note: Option<String>,
}

/// What a key did to the question.
#[derive(Debug, PartialEq)]
pub enum Answer {
    /// The question is answered.
    Decided(ApprovalDecision, Option<String>),
    /// The key moved the pager, or began the note of `t`.
    Moved,
    /// The key was not an answer.
    Nothing,
    /// The keys were typing, not an answer (a stream, the first moment,
    /// a key that answers nothing): they belong to the input line.
    Typed(Vec<KeyEvent>),
}

/// Once the person has been typing, how long the keyboard must be still
/// before and after a key for it to answer: a slow typist (an outside
/// tester approved with keys 300 to 600 ms apart) is still typing.
pub const TYPING_QUIET: Duration = Duration::from_secs(1);

/// How long the keyboard must stay still after an answering key, before
/// anyone typed: the next letter of a word begun slowly comes sooner.
pub const ALONE: Duration = Duration::from_millis(500);

/// How long the keyboard must be still before a key answers, and after
/// it: keys typed before the question showed, in its first moment, or in
/// a stream (each within this of the one before: typing ahead, a held
/// key, a paste, the first letter of a sentence begun after a pause) are
/// not an answer. Ctrl+C always is.
pub const GRACE: Duration = Duration::from_millis(250);

impl Question {
    /// A question just shown on a terminal of `width` × `height`.
    pub fn new(request: ApprovalRequestEvent, width: usize, height: usize) -> Self {
        let mut question = Self {
            request,
            heard: Instant::now(),
            waiting: None,
            typing: false,
            rows: 0,
            read: false,
            page: None,
            note: None,
        };
        question.resized(width, height);
        question
    }

    /// The terminal changed size: a prompt that now fits is read whole.
    pub fn resized(&mut self, width: usize, height: usize) {
        self.rows = render::approval(&self.request, width).len();
        // The prompt, then the status and answer rows, in the rows the
        // live area may use (all but one).
        self.read |= self.rows + 2 <= height.saturating_sub(1);
        if let Some(page) = &mut self.page {
            *page = (*page).min(self.rows.saturating_sub(1));
        }
    }

    /// Takes a key that arrived `at`; `height` is the terminal's. A key
    /// too soon after the one before (see [`GRACE`]) is dropped and starts
    /// the wait again; so does a key that does nothing (a letter of a
    /// sentence). A key that answers waits for [`Question::due`], and any
    /// key before then makes it typing. Moving the pager is deliberate and
    /// acts at once: `↓` then `y` answers. The note after `t` takes every
    /// key; Ctrl+C answers at once.
    pub fn take(&mut self, key: &KeyEvent, height: usize, at: Instant) -> Answer {
        if self.note.is_some() || is_interrupt(key) {
            self.waiting = None;
            return self.key(key, height);
        }
        let quiet = at.saturating_duration_since(self.heard) >= self.quiet();
        let waited = self.waiting.take();
        if waited.is_some() || !quiet {
            self.heard = at;
            self.typing = true;
            let mut typed: Vec<KeyEvent> = waited.map(|(key, _)| key).into_iter().collect();
            typed.push(*key);
            return Answer::Typed(typed);
        }
        if self.answers(key) {
            self.waiting = Some((*key, at));
            return Answer::Nothing;
        }
        let answer = self.key(key, height);
        if answer == Answer::Nothing {
            self.heard = at;
            // A letter no answer uses is typing; `a` where it is not
            // offered, or `y` before the prompt was read, is a try.
            self.typing |= text_not_answer(key);
            return Answer::Typed(vec![*key]);
        }
        answer
    }

    /// How long the keyboard must have been still before a key answers.
    fn quiet(&self) -> Duration {
        if self.typing { TYPING_QUIET } else { GRACE }
    }

    /// How long it must stay still after an answering key.
    fn alone(&self) -> Duration {
        if self.typing { TYPING_QUIET } else { ALONE }
    }

    /// The person has a message on the input line: their keys are
    /// typing until they stop for [`TYPING_QUIET`].
    pub fn typing(&mut self) {
        self.typing = true;
    }

    /// The answer of a key that has stood alone for [`GRACE`] by `now`.
    pub fn due(&mut self, height: usize, now: Instant) -> Answer {
        match self.waiting {
            Some((key, at)) if now.saturating_duration_since(at) >= self.alone() => {
                self.waiting = None;
                self.key(&key, height)
            }
            _ => Answer::Nothing,
        }
    }

    /// Whether `key` would answer (or begin the note of `t`): a plain key
    /// (Alt+y is not y), one the question offers now.
    fn answers(&self, key: &KeyEvent) -> bool {
        if !(key.modifiers - KeyModifiers::SHIFT).is_empty() {
            return false;
        }
        match key.code {
            KeyCode::Char('y' | 'Y') => self.read,
            KeyCode::Char('a' | 'A') => self.read && self.request.session_allowed,
            KeyCode::Char('n' | 'N' | 't' | 'T') => true,
            KeyCode::Esc => self.page.is_none(),
            _ => false,
        }
    }

    /// Text was pasted `at`: like typing, it starts the wait again; a key
    /// waiting to answer was the paste's first, returned as typing.
    pub fn pasted(&mut self, at: Instant) -> Option<KeyEvent> {
        self.heard = at;
        self.typing = true;
        self.waiting.take().map(|(key, _)| key)
    }

    /// Takes a key, whenever it came; `height` is the terminal's.
    fn key(&mut self, key: &KeyEvent, height: usize) -> Answer {
        if is_interrupt(key) {
            return Answer::Decided(
                ApprovalDecision::Deny,
                Some("the user stopped the turn".to_owned()),
            );
        }
        if let Some(note) = &mut self.note {
            match key.code {
                KeyCode::Enter => {
                    let note = note.trim().to_owned();
                    let reason = if note.is_empty() {
                        "the user declined".to_owned()
                    } else {
                        format!("the user declined and says: {note}")
                    };
                    return Answer::Decided(ApprovalDecision::Deny, Some(reason));
                }
                KeyCode::Esc => {
                    self.note = None;
                    return Answer::Moved;
                }
                KeyCode::Backspace => {
                    note.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => note.push(c),
                _ => {}
            }
            return Answer::Nothing;
        }
        let step = page_rows(height);
        match (self.page, key.code) {
            (Some(_), KeyCode::Char('q') | KeyCode::Esc) => {
                self.page = None;
                return Answer::Moved;
            }
            (Some(page), KeyCode::Char(' ') | KeyCode::Down | KeyCode::PageDown) => {
                self.show(page + step, height);
                return Answer::Moved;
            }
            (Some(page), KeyCode::Up | KeyCode::PageUp) => {
                self.show(page.saturating_sub(step), height);
                return Answer::Moved;
            }
            (None, KeyCode::Char('v' | 'V')) if !self.read => {
                self.show(0, height);
                return Answer::Moved;
            }
            _ => {}
        }
        if !(key.modifiers - KeyModifiers::SHIFT).is_empty() {
            return Answer::Nothing;
        }
        match key.code {
            KeyCode::Char('y' | 'Y') if self.read => {
                Answer::Decided(ApprovalDecision::AllowOnce, None)
            }
            KeyCode::Char('a' | 'A') if self.read && self.request.session_allowed => {
                Answer::Decided(ApprovalDecision::AllowSession, None)
            }
            KeyCode::Char('n' | 'N') | KeyCode::Esc => {
                Answer::Decided(ApprovalDecision::Deny, Some("the user declined".to_owned()))
            }
            KeyCode::Char('t' | 'T') => {
                self.note = Some(String::new());
                Answer::Moved
            }
            _ => Answer::Nothing,
        }
    }

    /// Pages to `first`; reaching the last row makes the prompt read.
    fn show(&mut self, first: usize, height: usize) {
        let last_page = self.rows.saturating_sub(page_rows(height));
        let first = first.min(last_page);
        self.page = Some(first);
        if first == last_page {
            self.read = true;
        }
    }

    /// The answer row: the keys that answer now, then how to see the rest.
    /// Narrow, the words get shorter before anything is cut, so every key
    /// that answers or pages stays on the screen.
    pub fn answer_row(&self, width: usize, height: usize) -> Line {
        if let Some(note) = &self.note {
            // The end of what is typed stays in sight.
            let keys = " Enter denies with it · Esc back";
            let room = width.saturating_sub(keys.len() + 8).max(4);
            let shown = render::tail(&Line::new().with(Role::Text, format!("{note}▏")), room);
            let mut row = Line::new().with(Role::Label, "why: ");
            row.spans.extend(shown.spans);
            return render::fit(&row.with(Role::Dim, keys), width);
        }
        // Longest first: the first that fits is shown.
        // `t` goes before the label does: the row says what it is first.
        let forms = [
            (true, 0, true),
            (true, 1, true),
            (true, 2, true),
            (true, 1, false),
            (false, 1, false),
            (false, 3, false),
        ];
        let rows: Vec<Line> = forms
            .iter()
            .map(|&(label, short, why)| self.answer_form(label, short, why, height))
            .collect();
        rows.iter()
            .find(|row| row.width() <= width)
            .map_or_else(|| render::fit(&rows[rows.len() - 1], width), Clone::clone)
    }

    /// One form of the answer row: with or without its label, its words
    /// `short` steps shorter (0 is the whole form; 2 is 1 without the
    /// spaces between a word and the next key, whose own padding still
    /// parts them; 3 also shortens what the pager says).
    fn answer_form(&self, label: bool, short: u8, why: bool, height: usize) -> Line {
        let mut line = if label {
            Line::new().with(Role::Label, "answer: ")
        } else {
            Line::new()
        };
        let word = |long: &'static str, brief: &'static str| if short == 0 { long } else { brief };
        let gap = if short >= 2 { "" } else { " " };
        if self.read {
            line = line
                .with(Role::Key, " y ")
                .with(Role::Text, word(" once  ", " once"))
                .with(Role::Text, if short == 0 { "" } else { gap });
        }
        line = line.with(Role::Key, " n ").with(Role::Text, " deny");
        // `t`: deny and say why; left out where it does not fit, and
        // while paging (the pager's keys need the room).
        if why && self.page.is_none() {
            line = line
                .with(Role::Text, gap)
                .with(Role::Key, " t ")
                .with(Role::Text, " why");
        }
        if self.read && self.request.session_allowed {
            line = line
                .with(Role::Text, word("  ", gap))
                .with(Role::Key, " a ")
                .with(Role::Text, word(" session", " all"));
        }
        if let Some(page) = self.page {
            let last = self.rows.min(page + page_rows(height));
            let first = page + 1;
            let rows = self.rows;
            line = line.with(
                Role::Dim,
                match short {
                    0 => format!("  · rows {first}–{last} of {rows}: ↓ ↑ page, q closes"),
                    1 | 2 => format!(" · {first}–{last}/{rows} ↓↑ q"),
                    _ => format!(" {first}–{last}/{rows} ↓↑q"),
                },
            );
        } else if !self.read {
            let rows = self.rows;
            line = line
                .with(
                    Role::Warning,
                    match short {
                        0 => format!("  · {rows} rows, taller than the screen: "),
                        1 | 2 => format!(" · {rows} rows: "),
                        _ => " · ".to_owned(),
                    },
                )
                .with(Role::Key, " v ")
                .with(Role::Text, word(" read it all", " read"));
        }
        line
    }

    /// While paging, the prompt's rows shown in place of the live area.
    pub fn page_rows(&self, width: usize, height: usize) -> Option<Vec<Line>> {
        let first = self.page?;
        let rows = render::approval(&self.request, width);
        Some(
            rows.into_iter()
                .skip(first)
                .take(page_rows(height))
                .collect(),
        )
    }
}

/// Rows of the prompt shown at once while paging: the live area less the
/// answer row.
fn page_rows(height: usize) -> usize {
    height.saturating_sub(2).max(1)
}

/// A letter, digit or sign typed plainly that no answer or pager uses.
fn text_not_answer(key: &KeyEvent) -> bool {
    let plain = (key.modifiers - KeyModifiers::SHIFT).is_empty();
    matches!(key.code, KeyCode::Char(c) if plain && !"yYaAnNtTvVqQ".contains(c))
}

/// Ctrl+C.
pub fn is_interrupt(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

/// The line left in the scrollback once a question is answered, with the
/// rules a session answer added.
pub fn answered(decision: ApprovalDecision, request: &ApprovalRequestEvent) -> Line {
    match decision {
        ApprovalDecision::AllowOnce => Line::new().with(Role::Ok, "  → allowed once"),
        ApprovalDecision::AllowSession => {
            let mut line = Line::new().with(Role::Ok, "  → allowed for this session");
            if !request.session_rules.is_empty() {
                line = line.with(Role::Dim, format!(": {}", request.session_rules.join("; ")));
            }
            line
        }
        ApprovalDecision::Deny => Line::new().with(Role::Warning, "  → denied"),
    }
}

#[cfg(test)]
mod tests;
