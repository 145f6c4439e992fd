//! Keys read ahead, and the key that ends the reading.

use super::*;

fn keys(typed: &[(KeyCode, KeyModifiers)]) -> Vec<Event> {
    typed
        .iter()
        .map(|&(code, modifiers)| Event::Key(KeyEvent::new(code, modifiers)))
        .collect()
}

#[test]
fn keys_typed_as_a_turn_ends_act_as_in_the_editor() {
    let (none, control) = (KeyModifiers::NONE, KeyModifiers::CONTROL);
    // Ctrl+D on nothing leaves (it was dropped, issue 29).
    let ahead = read_ahead(
        String::new(),
        keys(&[(KeyCode::Char('d'), control)]).into_iter(),
    );
    assert!(matches!(ahead, Ahead::End));
    // On typed text it leaves nothing and the text stays.
    let typed = keys(&[(KeyCode::Char('h'), none), (KeyCode::Char('d'), control)]);
    assert!(
        matches!(read_ahead(String::new(), typed.into_iter()), Ahead::Text(t, Some(_)) if t == "h")
    );
    let sent = keys(&[(KeyCode::Char('i'), none), (KeyCode::Enter, none)]);
    assert!(matches!(read_ahead("h".into(), sent.into_iter()), Ahead::Sent(t) if t == "hi"));
    let interrupt = keys(&[(KeyCode::Char('c'), control)]);
    assert!(matches!(
        read_ahead(String::new(), interrupt.into_iter()),
        Ahead::Interrupt
    ));
    // Up on nothing recalls the last prompt (it was dropped: a person
    // pressing Up as offcode started got an empty line); the keys
    // after it are left for the editor.
    let mut up = keys(&[(KeyCode::Up, none), (KeyCode::Char('x'), none)]).into_iter();
    assert!(matches!(read_ahead(String::new(), &mut up), Ahead::Recall));
    assert_eq!(up.count(), 1);
    // Up on text, Tab, an arrow: the reading stops at it, and the
    // keys after it are left for the editor.
    for stop in [KeyCode::Up, KeyCode::Tab, KeyCode::Left] {
        let mut typed = keys(&[
            (KeyCode::Char('h'), none),
            (stop, none),
            (KeyCode::Char('x'), none),
        ])
        .into_iter();
        assert!(matches!(
            read_ahead(String::new(), &mut typed),
            Ahead::Text(t, Some(key)) if t == "h" && key.code == stop
        ));
        assert_eq!(typed.count(), 1, "{stop:?}");
    }
}

#[test]
fn the_key_that_ends_the_reading_ahead_acts_as_in_the_editor() {
    let dir = std::env::temp_dir().join(format!("offcode-ahead-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    let completions = Completions::new(dir.clone());
    let tab = KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE);
    // A Tab typed ahead completes as the editor's first Tab would.
    assert_eq!(
        key_ahead(&tab, "summarise @do", &completions),
        vec![
            EditCommand::Clear,
            EditCommand::InsertString("summarise @docs/".to_owned())
        ]
    );
    assert_eq!(
        key_ahead(&tab, "/cont", &completions),
        vec![
            EditCommand::Clear,
            EditCommand::InsertString("/context ".to_owned())
        ]
    );
    // Nothing to complete: nothing done.
    assert!(key_ahead(&tab, "plain words", &completions).is_empty());
    let left = KeyEvent::new(KeyCode::Left, KeyModifiers::NONE);
    assert_eq!(
        key_ahead(&left, "ab", &completions),
        vec![EditCommand::MoveLeft { select: false }]
    );
    let alt_left = KeyEvent::new(KeyCode::Left, KeyModifiers::ALT);
    assert!(key_ahead(&alt_left, "ab", &completions).is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}
