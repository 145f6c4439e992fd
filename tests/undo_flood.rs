//! Undo cannot be denied: a step that makes more files than
//! `checkpoints.max_files` (and more than the walk's ceiling) does not turn
//! checkpoints off, so what else it did is taken back; a revert puts back
//! every file it can and names the ones it cannot.

use serde_json::json;

use crate::support::{Workspace, chunks, mock, run, sse};

/// A workspace whose checkpoints keep at most 100 files, with a victim; a
/// project script that makes `count` files and removes the victim runs as
/// the model's one call; then `offcode revert --yes`.
fn flood(count: usize) -> (Workspace, crate::support::Output, crate::support::Output) {
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        "{ retry: { initial_delay_ms: 10, max_delay_ms: 40, max_retries: 2 }, checkpoints: { max_files: 100 } }\n",
    )
    .unwrap();
    std::fs::write(ws.root.join("victim.txt"), "precious\n").unwrap();
    std::fs::write(ws.root.join("notes.md"), "mine\n").unwrap();
    std::fs::write(
        ws.root.join("gen.sh"),
        format!("mkdir -p out\nfor i in $(seq 1 {count}); do : > out/f$i; done\nrm victim.txt\necho changed > notes.md\n"),
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b1", "bash", json!({"command": "sh gen.sh"}))],
    )));
    server.push(sse(&chunks::text_answer("Generated.")));
    let turn = ws.run_task(&server.base_url(), &["--yes"], "generate");
    assert_eq!(turn.code, 0, "{}", turn.stderr);
    assert!(!ws.root.join("victim.txt").exists());
    let done = run(ws.offcode(&server.base_url(), &["revert", "--to", "1", "--yes"]));
    (ws, turn, done)
}

/// The step's removal and its change of a file there before are taken back.
fn assert_taken_back(ws: &Workspace, done: &crate::support::Output) {
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    let read = |name: &str| std::fs::read_to_string(ws.root.join(name)).unwrap_or_default();
    assert_eq!(read("victim.txt"), "precious\n", "{}", done.stdout);
    assert_eq!(read("notes.md"), "mine\n", "{}", done.stdout);
}

#[test]
fn a_flood_of_new_files_keeps_the_undo_of_the_rest_of_the_step() {
    let (ws, turn, done) = flood(300);
    assert!(
        !turn.stderr.contains("Checkpoints are off"),
        "{}",
        turn.stderr
    );
    assert_taken_back(&ws, &done);
    // The new files, named though not kept, are removed too.
    assert!(!ws.root.join("out/f1").exists(), "{}", done.stdout);
    assert!(!ws.root.join("out/f300").exists(), "{}", done.stdout);
}

#[test]
fn past_the_walks_ceiling_the_files_there_before_are_still_taken_back() {
    // Four times the limit and more: new files are not listed at all.
    let (ws, turn, done) = flood(600);
    assert!(
        turn.stderr.contains("not in the checkpoint")
            || turn.stdout.contains("not in the checkpoint"),
        "{}",
        turn.stderr
    );
    assert_taken_back(&ws, &done);
    // The flood itself stays: offcode never listed it.
    assert!(ws.root.join("out/f600").exists());
}

#[test]
fn a_path_that_cannot_be_put_back_is_named_and_the_rest_is() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.root.join("b.txt"), "two\n").unwrap();
    std::fs::write(ws.root.join("step.sh"), "echo changed > a.txt\nrm b.txt\n").unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b1", "bash", json!({"command": "sh step.sh"}))],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let turn = ws.run_task(&server.base_url(), &["--yes"], "change");
    assert_eq!(turn.code, 0, "{}", turn.stderr);
    // By hand since: a folder where the agent removed a file.
    std::fs::create_dir(ws.root.join("b.txt")).unwrap();
    std::fs::write(ws.root.join("b.txt/inside"), "person's\n").unwrap();
    let done = run(ws.offcode(&server.base_url(), &["revert", "--to", "1", "--yes"]));
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.txt")).unwrap(),
        "one\n",
        "{}\n{}",
        done.stdout,
        done.stderr
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("b.txt/inside")).unwrap(),
        "person's\n"
    );
    let said = format!("{}{}", done.stdout, done.stderr);
    assert!(said.contains("b.txt"), "{said}");
    assert_eq!(done.code, 1, "{said}");
    // The conversation stayed: once the folder is dealt with, the same
    // revert puts back what is left.
    std::fs::remove_dir_all(ws.root.join("b.txt")).unwrap();
    let again = run(ws.offcode(&server.base_url(), &["revert", "--to", "1", "--yes"]));
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("b.txt")).unwrap(),
        "two\n"
    );
}

#[test]
fn a_file_and_a_folder_that_swapped_places_are_both_put_back() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("f2"), "file two\n").unwrap();
    std::fs::create_dir_all(ws.root.join("dirA/sub")).unwrap();
    std::fs::write(ws.root.join("dirA/a.txt"), "a\n").unwrap();
    std::fs::write(ws.root.join("dirA/sub/b.txt"), "b\n").unwrap();
    std::fs::write(
        ws.root.join("swap.sh"),
        "rm f2; mkdir f2; echo x > f2/x; rm -r dirA; echo file > dirA\n",
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b1", "bash", json!({"command": "sh swap.sh"}))],
    )));
    server.push(sse(&chunks::text_answer("Swapped.")));
    let turn = ws.run_task(&server.base_url(), &["--yes"], "swap");
    assert_eq!(turn.code, 0, "{}", turn.stderr);
    assert!(ws.root.join("f2/x").exists());
    let done = run(ws.offcode(&server.base_url(), &["revert", "--to", "1", "--yes"]));
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    let read = |name: &str| std::fs::read_to_string(ws.root.join(name)).unwrap_or_default();
    assert_eq!(read("f2"), "file two\n", "{}", done.stdout);
    assert_eq!(read("dirA/a.txt"), "a\n", "{}", done.stdout);
    assert_eq!(read("dirA/sub/b.txt"), "b\n", "{}", done.stdout);
}
