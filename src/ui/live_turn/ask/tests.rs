//! The approval question's keys.

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

/// Types `text` into `question` a key every `every` from `from`: none
/// answers, and every key comes back as typing, in order, none lost
/// (its last may still wait, as a lone key would). When it ends.
fn typed(question: &mut Question, text: &str, from: Instant, every: Duration) -> Instant {
    let mut at = from;
    let mut back = String::new();
    for c in text.chars() {
        match question.take(&key(KeyCode::Char(c)), 24, at) {
            Answer::Typed(keys) => {
                back.extend(keys.iter().filter_map(|k| k.code.as_char()));
            }
            Answer::Nothing => {}
            other => panic!("{c:?}: {other:?}"),
        }
        // Nor does anything come due between two keys.
        let between = at + every.saturating_sub(Duration::from_millis(1));
        assert_eq!(question.due(24, between), Answer::Nothing, "{c:?}");
        at += every;
    }
    assert_eq!(back, text);
    at
}

#[test]
fn a_key_answers_only_standing_alone_and_typing_is_kept() {
    let ms = Duration::from_millis;
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
    // once by the next, so it was typing too; so is slow typing, a key
    // every 300 or 600 ms, once the person has been typing.
    let end = typed(&mut question, "and then fix it", end + ms(600), ms(60));
    let end = typed(&mut question, "hey you", end + ms(600), ms(300));
    let end = typed(&mut question, "and yes", end + ms(900), ms(600));
    assert_eq!(question.due(24, end + TYPING_QUIET * 4), Answer::Nothing);
    // Stopped, a `y`, stopped again: the answer, once due.
    let y = end + TYPING_QUIET;
    assert_eq!(
        question.take(&key(KeyCode::Char('y')), 24, y),
        Answer::Nothing
    );
    assert_eq!(
        question.due(24, y + TYPING_QUIET.saturating_sub(ms(1))),
        Answer::Nothing
    );
    assert_eq!(
        question.due(24, y + TYPING_QUIET),
        Answer::Decided(ApprovalDecision::AllowOnce, None)
    );
    // Before anyone typed, a lone key needs the short grace before it
    // and half a second after; `and` begun slowly (400 ms a key) as the
    // question shows is typing.
    let mut question = Question::new(request("rm -rf build", true), 80, 24);
    let y = question.heard + GRACE;
    assert_eq!(
        question.take(&key(KeyCode::Char('y')), 24, y),
        Answer::Nothing
    );
    assert_eq!(
        question.due(24, y + ALONE.saturating_sub(ms(1))),
        Answer::Nothing
    );
    assert_eq!(
        question.due(24, y + ALONE),
        Answer::Decided(ApprovalDecision::AllowOnce, None)
    );
    let mut question = Question::new(request("rm -rf build", true), 80, 24);
    let start = question.heard + GRACE;
    typed(&mut question, "and", start, ms(400));
    // A try at an answer not offered (`a` for a dangerous command) is not
    // typing: a lone `n` right after still answers.
    let mut question = Question::new(request("rm -rf build", false), 80, 24);
    let a = question.heard + GRACE;
    assert!(matches!(
        question.take(&key(KeyCode::Char('a')), 24, a),
        Answer::Typed(_)
    ));
    assert_eq!(
        question.take(&key(KeyCode::Char('n')), 24, a + GRACE),
        Answer::Nothing
    );
    assert!(matches!(
        question.due(24, a + GRACE + ALONE),
        Answer::Decided(ApprovalDecision::Deny, _)
    ));
    // A message on the input line when the question showed: its keys are
    // typing, slow or not.
    let mut question = Question::new(request("rm -rf build", true), 80, 24);
    question.typing();
    let start = question.heard + GRACE;
    typed(&mut question, "a yes", start, ms(400));

    // A key that does nothing starts the wait again: `x` then `y`
    // 100 ms later is typing; so does a paste, and the key waiting to
    // answer when it came was its first. Alt+y is not y.
    let k = |c| key(KeyCode::Char(c));
    let mut question = Question::new(request("rm -rf build", true), 80, 24);
    let x = question.heard + GRACE + ms(10);
    assert_eq!(question.take(&k('x'), 24, x), Answer::Typed(vec![k('x')]));
    assert_eq!(
        question.take(&k('y'), 24, x + ms(100)),
        Answer::Typed(vec![k('y')])
    );
    assert_eq!(question.take(&k('y'), 24, x + ms(1_200)), Answer::Nothing);
    assert_eq!(question.pasted(x + ms(1_210)), Some(k('y')));
    assert_eq!(
        question.take(&k('n'), 24, x + ms(1_400)),
        Answer::Typed(vec![k('n')])
    );
    let alt_y = KeyEvent::new(KeyCode::Char('y'), KeyModifiers::ALT);
    assert_eq!(
        question.take(&alt_y, 24, x + ms(3_000)),
        Answer::Typed(vec![alt_y])
    );
    assert_eq!(question.due(24, x + ms(5_000)), Answer::Nothing);
    // Ctrl+C answers at once.
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(matches!(
        question.take(&ctrl_c, 24, x + ms(5_001)),
        Answer::Decided(ApprovalDecision::Deny, _)
    ));
}

#[test]
fn paging_and_the_note_keep_their_keys() {
    let ms = Duration::from_millis;
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
        question.due(20, at + ALONE),
        Answer::Decided(ApprovalDecision::AllowSession, None)
    );

    // The note after `t` takes every key, however fast.
    let mut question = Question::new(request("make", true), 80, 24);
    let at = question.heard + GRACE;
    assert_eq!(
        question.take(&key(KeyCode::Char('t')), 24, at),
        Answer::Nothing
    );
    assert_eq!(question.due(24, at + ALONE), Answer::Moved);
    for c in "no".chars() {
        question.take(&key(KeyCode::Char(c)), 24, at + ALONE + ms(5));
    }
    assert_eq!(
        question.take(&key(KeyCode::Enter), 24, at + ALONE + ms(10)),
        Answer::Decided(
            ApprovalDecision::Deny,
            Some("the user declined and says: no".to_owned())
        )
    );
}
