//! Taking back what the agent did, from the UI, as a person would: `/undo`,
//! the `/revert` picker with its preview and `y`, a hand edit reported and
//! kept, `/diff`, `/fork` and `/summarize` giving sessions that resume.

use super::{Tmux, answer_after_grace};
use crate::support::{Workspace, demo_mock, run};

fn sessions(data: &std::path::Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(data.join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path().file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

#[test]
fn undo_and_the_revert_picker_take_back_the_agents_changes_and_keep_a_hand_edit() {
    let server = demo_mock();
    let ws = Workspace::new();
    let root = &ws.root;
    std::fs::write(root.join("b.txt"), "one\n").unwrap();
    std::fs::write(root.join("d.txt"), "precious\n").unwrap();
    std::fs::write(
        root.join("clean.sh"),
        "rm -f d.txt\nprintf 'two\\n' >> b.txt\n",
    )
    .unwrap();
    let data = ws.home.join("data");
    let tmux = Tmux::new("rewind");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    // Turn 1: the project's script deletes one file and changes another.
    tmux.send("one", "run `sh clean.sh`");
    tmux.wait_for("one", "answer:");
    answer_after_grace(&tmux, "one", "y");
    tmux.wait_for("one", "build · mock-model · ready");
    assert!(!root.join("d.txt").exists());
    // Turn 2: a new file.
    tmux.send("one", "write notes.md");
    tmux.wait_for("one", "answer:");
    answer_after_grace(&tmux, "one", "y");
    tmux.wait_for("one", "✓ notes.md: created");
    tmux.wait_for("one", "build · mock-model · ready");
    assert!(root.join("notes.md").exists());

    // /undo takes back the last step only.
    tmux.send("one", "/undo");
    let screen = tmux.wait_for("one", "Took back the last `write` step");
    assert!(screen.contains("remove  notes.md"), "{screen}");
    assert!(!root.join("notes.md").exists());
    assert!(!root.join("d.txt").exists(), "turn 1 stays done");

    // By hand, after the agent.
    std::fs::write(root.join("b.txt"), "mine\n").unwrap();

    // The picker: the turns, then what going back would do, then `y`.
    tmux.send("one", "/revert");
    let screen = tmux.wait_for("one", "`/revert N` shows");
    assert!(
        screen.contains("   1  run `sh clean.sh`  · 1 change"),
        "{screen}"
    );
    assert!(
        screen.contains("   2  write notes.md  · 1 change"),
        "{screen}"
    );
    tmux.send("one", "/revert 1");
    let screen = tmux.wait_for("one", "y reverts the files");
    assert!(screen.contains("REVERT to before turn 1?"), "{screen}");
    assert!(screen.contains("restore d.txt"), "{screen}");
    assert!(
        screen.contains("kept    b.txt: changed by hand since the agent"),
        "{screen}"
    );
    assert!(!root.join("d.txt").exists(), "nothing changes before `y`");
    tmux.send("one", "y");
    let screen = tmux.wait_for("one", "REVERTED to before turn 1");
    // The turn's prompt is back in the editor.
    assert!(screen.contains("> run `sh clean.sh`"), "{screen}");
    assert_eq!(std::fs::read(root.join("d.txt")).unwrap(), b"precious\n");
    assert_eq!(std::fs::read(root.join("b.txt")).unwrap(), b"mine\n");
    tmux.keys("one", &["C-u"]);

    // The conversation went back too: nothing of it reaches the model.
    tmux.send("one", "hello again");
    tmux.wait_for("one", "You said: hello again");
    let last = server.chat_bodies().pop().unwrap();
    let text = last["messages"].to_string();
    assert!(
        !text.contains("clean.sh") && !text.contains("notes.md"),
        "{text}"
    );

    // /diff says what the agent changed (nothing on this branch now).
    tmux.send("one", "/diff");
    tmux.wait_for("one", "The agent changed no files in this session yet");
}

#[test]
fn fork_and_summarize_give_sessions_that_resume() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("fork");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "first question");
    tmux.wait_for("one", "You said: first question");
    tmux.wait_for("one", "ready");
    let original = sessions(&data);
    assert_eq!(original.len(), 1);

    tmux.send("one", "/fork");
    let screen = tmux.wait_for("one", "stays as it was");
    assert!(
        screen.contains(&format!("Forked {}", original[0])),
        "{screen}"
    );
    tmux.wait_for("one", "ready");
    tmux.send("one", "in the fork");
    tmux.wait_for("one", "You said: in the fork");
    tmux.wait_for("one", "ready");
    let after_fork = sessions(&data);
    assert_eq!(after_fork.len(), 2);
    let fork = after_fork
        .iter()
        .find(|id| **id != original[0])
        .unwrap()
        .clone();

    tmux.send("one", "/summarize");
    let screen = tmux.wait_for("one", "from the summary of");
    assert!(screen.contains(&fork), "{screen}");
    tmux.wait_for("one", "ready");
    tmux.send("one", "after the summary");
    tmux.wait_for("one", "You said: after the summary");
    tmux.wait_for("one", "ready");
    tmux.keys("one", &["C-d"]);
    tmux.wait_for("one", "EXITED 0");

    let all = sessions(&data);
    assert_eq!(all.len(), 3, "{all:?}");
    let summary = all.iter().find(|id| !after_fork.contains(id)).unwrap();
    let store = offcode::session::Store::new(data.join("sessions"));
    let (meta, messages) = store.load(summary).unwrap();
    let origin = meta.origin.unwrap();
    assert_eq!(
        (origin.how.as_str(), origin.session_id.as_str()),
        ("summary", fork.as_str())
    );
    let first = match &messages[0] {
        offcode::session::Message::User { content } => content.clone(),
        other => panic!("{other:?}"),
    };
    assert!(first.contains("summarised"), "{first}");
    // Each resumes from the command line.
    for id in [&original[0], &fork, summary] {
        let mut command = ws.offcode(
            &server.base_url(),
            &["run", "--session", id, "--model", "mock-model", "again"],
        );
        command.env("OFFCODE_DATA_DIR", &data);
        let output = run(command);
        assert_eq!(output.code, 0, "{id}: {}", output.stderr);
    }
    let (_, forked) = store.load(&fork).unwrap();
    let (_, first_session) = store.load(&original[0]).unwrap();
    assert!(
        forked.len() > first_session.len() - 2,
        "the fork kept the first exchange"
    );
    let fork_text = format!("{forked:?}");
    assert!(fork_text.contains("first question") && fork_text.contains("in the fork"));
    assert!(!format!("{first_session:?}").contains("in the fork"));
}
