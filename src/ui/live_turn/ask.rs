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
    /// An answering key, and when it came: it answers once [`GRACE`] has
    /// passed with no other key ([`Question::due`]).
    waiting: Option<(KeyEvent, Instant)>,
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
}

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
        let quiet = at.saturating_duration_since(self.heard) >= GRACE;
        if self.waiting.take().is_some() || !quiet {
            self.heard = at;
            return Answer::Nothing;
        }
        if self.answers(key) {
            self.waiting = Some((*key, at));
            return Answer::Nothing;
        }
        let answer = self.key(key, height);
        if answer == Answer::Nothing {
            self.heard = at;
        }
        answer
    }

    /// The answer of a key that has stood alone for [`GRACE`] by `now`.
    pub fn due(&mut self, height: usize, now: Instant) -> Answer {
        match self.waiting {
            Some((key, at)) if now.saturating_duration_since(at) >= GRACE => {
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

    /// Text was pasted `at`: like typing, it starts the wait again.
    pub fn pasted(&mut self, at: Instant) {
        self.heard = at;
        self.waiting = None;
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
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn request(command: &str, session_allowed: bool) -> ApprovalRequestEvent {
        ApprovalRequestEvent {
            call_id: "c".into(),
            tool: "bash".into(),
            arguments: serde_json::json!({ "command": command }),
            reason: None,
            rule: String::new(),
            session_allowed,
            session_rules: Vec::new(),
            dangerous: !session_allowed,
            dangers: Vec::new(),
            notes: Vec::new(),
            mandate: None,
            confinement: None,
            unconfined: false,
            runs_unconfined: false,
            preview: None,
            agent: None,
        }
    }

    #[test]
    fn only_offered_answers_count() {
        let mut question = Question::new(request("rm -rf build", false), 80, 24);
        assert_eq!(question.key(&key(KeyCode::Char('a')), 24), Answer::Nothing);
        assert_eq!(question.key(&key(KeyCode::Enter), 24), Answer::Nothing);
        assert_eq!(
            question.key(&key(KeyCode::Char('y')), 24),
            Answer::Decided(ApprovalDecision::AllowOnce, None)
        );
        assert!(matches!(
            question.key(&key(KeyCode::Esc), 24),
            Answer::Decided(ApprovalDecision::Deny, _)
        ));
    }

    #[test]
    fn t_denies_with_a_note_typed_for_the_model_and_esc_goes_back() {
        let mut question = Question::new(request("make build", true), 80, 24);
        assert!(question.answer_row(80, 24).plain().contains(" t  why"));
        assert_eq!(question.key(&key(KeyCode::Char('t')), 24), Answer::Moved);
        for c in "用 make test 吧x".chars() {
            assert_eq!(question.key(&key(KeyCode::Char(c)), 24), Answer::Nothing);
        }
        assert_eq!(question.key(&key(KeyCode::Backspace), 24), Answer::Nothing);
        // `y` while typing is text, not an answer.
        let row = question.answer_row(40, 24).plain();
        assert!(row.starts_with("why: ") && row.contains("吧▏"), "{row}");
        assert!(row.width() <= 40, "{row}");
        assert_eq!(
            question.key(&key(KeyCode::Enter), 24),
            Answer::Decided(
                ApprovalDecision::Deny,
                Some("the user declined and says: 用 make test 吧".to_owned())
            )
        );
        // Esc leaves the note; the question answers as before.
        let mut question = Question::new(request("make build", true), 80, 24);
        question.key(&key(KeyCode::Char('t')), 24);
        question.key(&key(KeyCode::Char('y')), 24);
        assert_eq!(question.key(&key(KeyCode::Esc), 24), Answer::Moved);
        assert_eq!(
            question.key(&key(KeyCode::Char('y')), 24),
            Answer::Decided(ApprovalDecision::AllowOnce, None)
        );
    }

    #[test]
    fn a_prompt_taller_than_the_screen_must_be_read_before_y() {
        let command = (1..=40).fold(String::new(), |text, n| text + &format!("echo line {n}\n"));
        let mut question = Question::new(request(&command, true), 80, 20);
        assert!(
            question
                .answer_row(80, 20)
                .plain()
                .contains("taller than the screen"),
            "{}",
            question.answer_row(80, 20).plain()
        );
        // y and a do not answer what was not seen; n always does.
        assert_eq!(question.key(&key(KeyCode::Char('y')), 20), Answer::Nothing);
        assert_eq!(question.key(&key(KeyCode::Char('a')), 20), Answer::Nothing);
        assert_eq!(question.key(&key(KeyCode::Char('v')), 20), Answer::Moved);
        let first = question.page_rows(80, 20).unwrap();
        assert_eq!(first.len(), 18);
        assert_eq!(first[1].plain(), "  $ echo line 1");
        assert_eq!(question.key(&key(KeyCode::Char('y')), 20), Answer::Nothing);
        // Down to the last row, and the keys answer.
        let mut seen: Vec<String> = first.iter().map(Line::plain).collect();
        for _ in 0..5 {
            question.key(&key(KeyCode::Down), 20);
            seen.extend(question.page_rows(80, 20).unwrap().iter().map(Line::plain));
        }
        for n in 1..=40 {
            let row = format!("    echo line {n}");
            assert!(
                seen.iter().any(|s| s.ends_with(&row[4..])),
                "line {n} never shown"
            );
        }
        assert!(question.answer_row(80, 20).plain().contains(" a  session"));
        assert_eq!(
            question.key(&key(KeyCode::Char('a')), 20),
            Answer::Decided(ApprovalDecision::AllowSession, None)
        );
    }

    #[test]
    fn at_40_columns_and_less_every_key_stays_on_the_answer_row() {
        let command = (1..=40).fold(String::new(), |text, n| text + &format!("echo line {n}\n"));
        let mut question = Question::new(request(&command, true), 40, 20);
        for width in [40, 30, 24] {
            let row = question.answer_row(width, 20).plain();
            assert!(
                row.contains(" n  deny") && row.contains(" v  read"),
                "{width}: {row}"
            );
            assert!(row.width() <= width, "{width}: {row}");
        }
        assert!(
            question
                .answer_row(120, 20)
                .plain()
                .contains("taller than the screen")
        );
        question.key(&key(KeyCode::Char('v')), 20);
        for width in [40, 30] {
            let row = question.answer_row(width, 20).plain();
            assert!(row.contains("↓") && row.contains('q'), "{width}: {row}");
            assert!(row.contains('/'), "{width}: {row}");
        }
        for _ in 0..5 {
            question.key(&key(KeyCode::Down), 20);
        }
        let row = question.answer_row(40, 20).plain();
        for key in [" y ", " n ", " a "] {
            assert!(row.contains(key), "{row}");
        }
    }

    #[test]
    fn at_40_columns_every_answer_key_of_a_short_prompt_is_shown() {
        let question = Question::new(request("make build", true), 40, 24);
        let row = question.answer_row(40, 24).plain();
        assert!(row.starts_with("answer: "), "{row}");
        for key in [" y ", " n ", " t ", " a "] {
            assert!(row.contains(key), "{key:?} in {row}");
        }
        assert!(row.width() <= 40, "{row}");
        assert_eq!(row, "answer:  y  once n  deny t  why a  all");
        // A column more, the spaces come back; wider, the words.
        let row = question.answer_row(41, 24).plain();
        assert_eq!(row, "answer:  y  once  n  deny  t  why  a  all");
        let row = question.answer_row(60, 24).plain();
        assert!(row.contains(" a  session"), "{row}");
    }

    #[test]
    fn esc_closes_the_pager_and_a_wider_terminal_may_make_it_fit() {
        let command = "x".repeat(2_000);
        let mut question = Question::new(request(&command, false), 40, 30);
        question.key(&key(KeyCode::Char('v')), 30);
        assert!(question.page_rows(40, 30).is_some());
        assert_eq!(question.key(&key(KeyCode::Esc), 30), Answer::Moved);
        assert!(question.page_rows(40, 30).is_none());
        assert_eq!(question.key(&key(KeyCode::Char('y')), 30), Answer::Nothing);
        question.resized(200, 30);
        assert_eq!(
            question.key(&key(KeyCode::Char('y')), 30),
            Answer::Decided(ApprovalDecision::AllowOnce, None)
        );
    }

    #[test]
    fn a_key_answers_only_standing_alone_and_paging_keeps_it() {
        let ms = Duration::from_millis;
        let typed = |question: &mut Question, text: &str, from: Instant, every: Duration| {
            let mut at = from;
            for c in text.chars() {
                let answer = question.take(&key(KeyCode::Char(c)), 24, at);
                assert_eq!(answer, Answer::Nothing, "{c:?}");
                // Nor does anything come due between two keys.
                assert_eq!(
                    question.due(24, at + every.saturating_sub(ms(1))),
                    Answer::Nothing,
                    "{c:?}"
                );
                at += every;
            }
            at
        };
        // A sentence typed at 60 ms a key as the question shows: its `y`
        // and `a` are not answers however long it runs.
        let mut question = Question::new(request("rm -rf build", true), 80, 24);
        let start = question.heard;
        let end = typed(
            &mut question,
            "yes, and also add a test, yay",
            start,
            ms(60),
        );
        // One begun after a pause: its first letter, `a`, is followed at
        // once by the next, so it was typing too.
        let end = typed(&mut question, "and then fix it", end + ms(600), ms(60));
        assert_eq!(question.due(24, end + GRACE * 4), Answer::Nothing);
        // Still, a `y`, still after it: the answer, once due.
        let y = end + GRACE;
        assert_eq!(
            question.take(&key(KeyCode::Char('y')), 24, y),
            Answer::Nothing
        );
        assert_eq!(
            question.due(24, y + GRACE.saturating_sub(ms(1))),
            Answer::Nothing
        );
        assert_eq!(
            question.due(24, y + GRACE),
            Answer::Decided(ApprovalDecision::AllowOnce, None)
        );

        // A key that does nothing starts the wait again: `x` then `y`
        // 100 ms later is typing; so does a paste. Alt+y is not y.
        let mut question = Question::new(request("rm -rf build", true), 80, 24);
        let x = question.heard + GRACE + ms(10);
        assert_eq!(
            question.take(&key(KeyCode::Char('x')), 24, x),
            Answer::Nothing
        );
        assert_eq!(
            question.take(&key(KeyCode::Char('y')), 24, x + ms(100)),
            Answer::Nothing
        );
        question.pasted(x + ms(500));
        assert_eq!(
            question.take(&key(KeyCode::Char('n')), 24, x + ms(600)),
            Answer::Nothing
        );
        let alt_y = KeyEvent::new(KeyCode::Char('y'), KeyModifiers::ALT);
        assert_eq!(question.take(&alt_y, 24, x + ms(2_000)), Answer::Nothing);
        assert_eq!(question.due(24, x + ms(4_000)), Answer::Nothing);
        // Ctrl+C answers at once.
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert!(matches!(
            question.take(&ctrl_c, 24, x + ms(4_001)),
            Answer::Decided(ApprovalDecision::Deny, _)
        ));

        // Paging is deliberate: `v`, `↓` … then `a` right after answers.
        let command = (1..=40).fold(String::new(), |text, n| text + &format!("echo {n}\n"));
        let mut question = Question::new(request(&command, true), 80, 20);
        let mut at = question.heard + GRACE;
        assert_eq!(
            question.take(&key(KeyCode::Char('v')), 20, at),
            Answer::Moved
        );
        for _ in 0..3 {
            at += ms(30);
            assert_eq!(question.take(&key(KeyCode::Down), 20, at), Answer::Moved);
        }
        at += ms(30);
        assert_eq!(
            question.take(&key(KeyCode::Char('a')), 20, at),
            Answer::Nothing
        );
        assert_eq!(
            question.due(20, at + GRACE),
            Answer::Decided(ApprovalDecision::AllowSession, None)
        );

        // The note after `t` takes every key, however fast.
        let mut question = Question::new(request("make", true), 80, 24);
        let at = question.heard + GRACE;
        assert_eq!(
            question.take(&key(KeyCode::Char('t')), 24, at),
            Answer::Nothing
        );
        assert_eq!(question.due(24, at + GRACE), Answer::Moved);
        for c in "no".chars() {
            question.take(&key(KeyCode::Char(c)), 24, at + GRACE + ms(5));
        }
        assert_eq!(
            question.take(&key(KeyCode::Enter), 24, at + GRACE + ms(10)),
            Answer::Decided(
                ApprovalDecision::Deny,
                Some("the user declined and says: no".to_owned())
            )
        );
    }
}
