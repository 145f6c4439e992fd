use super::*;
use pretty_assertions::assert_eq;

fn user(text: &str) -> EntryBody {
    EntryBody::Message {
        message: Message::User {
            content: text.to_owned(),
        },
    }
}

#[test]
fn reopening_rebuilds_messages_and_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("sessions"));
    let mut session = store.create(Path::new("/w"), "m1", "http://x/v1").unwrap();
    session.append(user("hello")).unwrap();
    session
        .append(EntryBody::ModelChange { model: "m2".into() })
        .unwrap();
    let id = session.id.clone();
    drop(session);
    let reopened = store.open(&id).unwrap();
    assert_eq!(
        reopened.messages,
        vec![Message::User {
            content: "hello".into()
        }]
    );
    assert_eq!(reopened.model, "m2");
    assert!(matches!(
        store.latest_for(Path::new("/other")),
        Err(Error::NoneForDirectory { .. })
    ));
}

fn answer(text: &str) -> EntryBody {
    EntryBody::Message {
        message: Message::Assistant {
            content: text.to_owned(),
            reasoning: None,
            tool_calls: Vec::new(),
            interrupted: false,
        },
    }
}

#[test]
fn continue_skips_a_run_that_failed_before_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("sessions"));
    let mut real = store.create(Path::new("/w"), "m", "http://x/v1").unwrap();
    real.append(user("fix the bug")).unwrap();
    real.append(answer("fixed")).unwrap();
    let real_id = real.id.clone();
    drop(real);
    std::thread::sleep(std::time::Duration::from_millis(20));
    // A later run whose prompt the server rejected: no answer.
    let mut failed = store.create(Path::new("/w"), "m", "http://x/v1").unwrap();
    failed.append(user(&"x".repeat(1000))).unwrap();
    failed
        .append(EntryBody::Error {
            message: "the prompt is too long".into(),
        })
        .unwrap();
    drop(failed);
    assert_eq!(store.latest_for(Path::new("/w")).unwrap(), real_id);
    let listed = store.list().unwrap();
    let answered: Vec<bool> = listed.iter().map(|s| s.answered).collect();
    assert_eq!(answered, [false, true]);
}

#[test]
fn session_files_are_private() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir(&sessions).unwrap();
    std::fs::set_permissions(
        &sessions,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let store = Store::new(sessions.clone());
    let session = store.create(Path::new("/w"), "m", "http://x/v1").unwrap();
    assert_eq!(std::fs::metadata(&sessions).unwrap().mode() & 0o777, 0o700);
    assert_eq!(
        std::fs::metadata(&session.path).unwrap().mode() & 0o777,
        0o600
    );
}

#[test]
fn a_fork_copies_the_branch_up_to_a_point_and_renumbers_undos() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("sessions"));
    let mut session = store.create(Path::new("/w"), "m", "http://x/v1").unwrap();
    session.append(user("one")).unwrap();
    session.append(answer("did one")).unwrap();
    let before_two = session.last_id.clone();
    session.append(user("two")).unwrap();
    session
        .append(EntryBody::Checkpoint {
            before: "a".repeat(64),
            after: "b".repeat(64),
            tool: "bash".into(),
            call_id: None,
            found_later: false,
        })
        .unwrap();
    let step = session.last_id.clone().unwrap();
    session
        .append(EntryBody::Undo {
            step,
            restored: vec!["x".into()],
            kept: Vec::new(),
        })
        .unwrap();
    session.append(answer("did two")).unwrap();
    let id = session.id.clone();
    // A fork of the whole session, while the original is open.
    let whole = store.fork(&id, None, None).unwrap();
    assert_eq!(whole.messages, session.messages);
    let (meta, branch) = store.load_branch(&whole.id).unwrap();
    assert_eq!(meta.origin.as_ref().map(|o| o.how.as_str()), Some("fork"));
    let undo = branch.iter().find_map(|e| match &e.body {
        EntryBody::Undo { step, .. } => Some(step.clone()),
        _ => None,
    });
    let checkpoint = branch
        .iter()
        .find(|e| matches!(e.body, EntryBody::Checkpoint { .. }))
        .map(|e| e.id.clone());
    assert_eq!(undo, checkpoint);
    // Up to before turn two: one exchange; it resumes.
    let part = store.fork(&id, before_two.as_deref(), Some(2)).unwrap();
    let part_id = part.id.clone();
    drop(part);
    let resumed = store.open(&part_id).unwrap();
    assert_eq!(resumed.messages.len(), 2);
    assert_eq!(session.messages.len(), 4, "the original is as it was");
}

#[test]
fn rewinding_goes_on_from_an_earlier_entry_and_keeps_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("sessions"));
    let mut session = store.create(Path::new("/w"), "m", "http://x/v1").unwrap();
    session.append(user("one")).unwrap();
    session.append(answer("did one")).unwrap();
    let before_two = session.last_id.clone();
    session.append(user("two")).unwrap();
    session.append(answer("did two")).unwrap();
    let lines = std::fs::read_to_string(&session.path)
        .unwrap()
        .lines()
        .count();
    session.rewind_to(before_two.as_deref()).unwrap();
    assert_eq!(session.messages.len(), 2);
    session.append(user("two, again")).unwrap();
    let id = session.id.clone();
    drop(session);
    let reopened = store.open(&id).unwrap();
    let texts: Vec<&str> = reopened
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["one", "two, again"]);
    let now = std::fs::read_to_string(&reopened.path)
        .unwrap()
        .lines()
        .count();
    assert_eq!(now, lines + 1, "nothing was removed from the file");
}

#[test]
fn export_writes_markdown_with_fences_that_hold() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("sessions"));
    let mut session = store.create(Path::new("/w"), "m", "http://x/v1").unwrap();
    session.append(user("show ```code```")).unwrap();
    session
        .append(EntryBody::Message {
            message: Message::Assistant {
                content: "Reading.".into(),
                reasoning: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: r#"{"path":"a.md"}"#.into(),
                }],
                interrupted: false,
            },
        })
        .unwrap();
    session
        .append(EntryBody::Message {
            message: Message::Tool {
                tool_call_id: "c1".into(),
                name: "read".into(),
                content: "1\t```rust\n2\tfn x() {}".into(),
                is_error: false,
                shown: None,
            },
        })
        .unwrap();
    let markdown = store.export(&session.id).unwrap();
    assert!(
        markdown.starts_with(&format!("# offcode session {}", session.id)),
        "{markdown}"
    );
    assert!(
        markdown.contains("## User\n\nshow ```code```\n"),
        "{markdown}"
    );
    assert!(
        markdown.contains("**Tool call** `read`\n\n```json\n{\n  \"path\": \"a.md\"\n}\n```\n"),
        "{markdown}"
    );
    assert!(
        markdown.contains("**Tool result** `read`\n\n````\n1\t```rust"),
        "{markdown}"
    );
}

#[test]
fn partial_last_line_is_dropped_and_dangling_calls_answered() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let mut session = store.create(Path::new("/w"), "m", "http://x/v1").unwrap();
    session.append(user("go")).unwrap();
    session
        .append(EntryBody::Message {
            message: Message::Assistant {
                content: String::new(),
                reasoning: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: "{}".into(),
                }],
                interrupted: false,
            },
        })
        .unwrap();
    let path = session.path.clone();
    drop(session);
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(br#"{"id":"4","parent_id":"3","ts":"x","type":"mess"#)
        .unwrap();
    let mut reopened = store
        .open(&path.file_stem().unwrap().to_string_lossy())
        .unwrap();
    assert_eq!(reopened.messages.len(), 3);
    assert!(
        matches!(&reopened.messages[2], Message::Tool { tool_call_id, is_error: true, .. } if tool_call_id == "c1")
    );
    reopened.append(user("again")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .all(|line| serde_json::from_str::<Entry>(line).is_ok()),
        "{text}"
    );
    assert_eq!(store.list().unwrap()[0].messages, 4);
}

#[test]
fn an_open_session_cannot_be_opened_twice() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let session = store.create(Path::new("/w"), "m", "http://x/v1").unwrap();
    let id = session.id.clone();
    assert!(matches!(store.open(&id), Err(Error::InUse { .. })));
    drop(session);
    assert!(store.open(&id).is_ok());
}

#[test]
fn unknown_id_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    assert!(matches!(store.open("nope"), Err(Error::NotFound { .. })));
    assert!(matches!(store.open("../x"), Err(Error::NotFound { .. })));
}
