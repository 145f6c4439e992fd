//! Taking back what the agent did, as a person would from the command
//! line: `offcode revert`, `offcode diff`, `offcode run --fork`, `offcode
//! export`, `offcode sessions --delete`, and `--continue` after a failed
//! run. Every test checks the files themselves, byte for byte.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;

use crate::support::{Workspace, chunks, mock, run, sse};

const A: &[u8] = b"alpha\nbeta\n";
const B: &[u8] = b"one\ntwo\nthree\n";
const C: &[u8] = &[0, 159, 146, 150, 255];
const D: &[u8] = b"to be deleted\n";

fn seeded() -> Workspace {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("a.txt"), A).unwrap();
    std::fs::write(ws.root.join("b.txt"), B).unwrap();
    std::fs::write(ws.root.join("c.bin"), C).unwrap();
    std::fs::write(ws.root.join("d.txt"), D).unwrap();
    std::fs::set_permissions(
        ws.root.join("d.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    // A project's own script, like a `make clean`: no gate can judge it.
    std::fs::write(ws.root.join("clean.sh"), CLEAN).unwrap();
    ws
}

const CLEAN: &str = "rm -f d.txt\nprintf 'changed\\n' >> b.txt\nprintf 'text now\\n' > c.bin\n";

/// One turn: a file overwritten, one created in a new folder, and the
/// project's script run, which changes two and deletes one.
fn agent_turn(server: &crate::support::MockServer) {
    // What is overwritten is read first, as offcode asks.
    server.push(sse(&chunks::tool_answer(
        "",
        &[("r1", "read", json!({"path": "a.txt"}))],
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[
            (
                "w1",
                "write",
                json!({"path": "a.txt", "content": "ALPHA\n"}),
            ),
            (
                "w2",
                "write",
                json!({"path": "new/made.txt", "content": "new\n"}),
            ),
            ("b1", "bash", json!({"command": "sh clean.sh"})),
        ],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
}

fn only_session(ws: &Workspace) -> String {
    let files = ws.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].file_stem().unwrap().to_string_lossy().into_owned()
}

fn user_messages(ws: &Workspace, id: &str) -> Vec<String> {
    let store = offcode::session::Store::new(ws.home.join(".local/share/offcode/sessions"));
    let (_, messages) = store.load(id).unwrap();
    messages
        .into_iter()
        .filter_map(|m| match m {
            offcode::session::Message::User { content } => Some(content),
            _ => None,
        })
        .collect()
}

fn assert_seed(root: &Path) {
    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), A);
    assert_eq!(std::fs::read(root.join("b.txt")).unwrap(), B);
    assert_eq!(std::fs::read(root.join("c.bin")).unwrap(), C);
    assert_eq!(std::fs::read(root.join("d.txt")).unwrap(), D);
    let mode = std::fs::metadata(root.join("d.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    assert!(!root.join("new").exists());
}

#[test]
fn revert_takes_back_every_file_and_the_conversation() {
    let ws = seeded();
    let server = mock();
    server.push(sse(&chunks::text_answer("Looked around.")));
    let first = ws.run_task(&server.base_url(), &["--yes"], "look around");
    assert_eq!(first.code, 0, "{}", first.stderr);
    let id = only_session(&ws);
    agent_turn(&server);
    let second = ws.run_task(
        &server.base_url(),
        &["--yes", "--session", &id],
        "change things",
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(std::fs::read(ws.root.join("a.txt")).unwrap(), b"ALPHA\n");
    assert_eq!(std::fs::read(ws.root.join("c.bin")).unwrap(), b"text now\n");
    assert!(!ws.root.join("d.txt").exists(), "{}", second.stderr);

    // The diff, from the checkpoints, without git.
    let diff = run(ws.offcode(&server.base_url(), &["diff"]));
    assert_eq!(diff.code, 0, "{}", diff.stderr);
    for expected in [
        "modified a.txt  +1 -2",
        "modified b.txt  +1 -0",
        "modified c.bin  (not text)",
        "deleted  d.txt  +0 -1",
        "added    new/made.txt  +1 -0",
        "-alpha\n-beta\n+ALPHA\n",
    ] {
        assert!(
            diff.stdout.contains(expected),
            "{expected:?} in:\n{}",
            diff.stdout
        );
    }

    // Shown first; nothing changes without --yes.
    let shown = run(ws.offcode(&server.base_url(), &["revert", "--to", "2"]));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains("revert  a.txt  +2 -1"),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("restore d.txt"), "{}", shown.stdout);
    assert!(
        shown.stdout.contains("remove  new/made.txt"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("Nothing was changed"),
        "{}",
        shown.stdout
    );
    assert_eq!(std::fs::read(ws.root.join("a.txt")).unwrap(), b"ALPHA\n");

    let done = run(ws.offcode(&server.base_url(), &["revert", "--to", "2", "--yes"]));
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert_seed(&ws.root);
    assert_eq!(user_messages(&ws, &id), ["look around"]);

    // The conversation goes on from before the reverted turn.
    server.push(sse(&chunks::text_answer("Again.")));
    let again = ws.run_task(&server.base_url(), &["--continue"], "what now");
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(user_messages(&ws, &id), ["look around", "what now"]);
    let request = server.requests().last().unwrap().json();
    let sent: Vec<String> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        sent.iter().all(|m| !m.contains("change things")),
        "{sent:?}"
    );
}

#[test]
fn a_hand_edit_after_the_agent_is_reported_and_kept() {
    let ws = seeded();
    let server = mock();
    agent_turn(&server);
    let output = ws.run_task(&server.base_url(), &["--yes"], "change things");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(!ws.root.join("d.txt").exists(), "{}", output.stderr);
    std::fs::write(ws.root.join("b.txt"), "my own edit\n").unwrap();
    let done = run(ws.offcode(&server.base_url(), &["revert", "--yes"]));
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert!(
        done.stdout
            .contains("kept    b.txt: changed by hand since the agent changed it"),
        "{}",
        done.stdout
    );
    assert_eq!(
        std::fs::read(ws.root.join("b.txt")).unwrap(),
        b"my own edit\n"
    );
    assert_eq!(std::fs::read(ws.root.join("a.txt")).unwrap(), A);
    assert_eq!(std::fs::read(ws.root.join("d.txt")).unwrap(), D);
}

#[test]
fn what_the_agent_wrote_is_taken_back_even_where_gitignore_leaves_it_out() {
    let ws = Workspace::new();
    // A project that ignores everything, and a secret file besides.
    std::fs::write(ws.root.join(".gitignore"), "*\n.env\n").unwrap();
    std::fs::write(ws.root.join(".env"), "KEY=old\n").unwrap();
    std::fs::write(ws.root.join("app.py"), "print(1)\n").unwrap();
    std::fs::create_dir(ws.root.join("local")).unwrap();
    std::fs::write(ws.root.join("local/mine.txt"), "mine\n").unwrap();
    // The person's empty folder (a mount point): the agent's file in it
    // goes, the folder stays.
    std::fs::create_dir(ws.root.join("mnt")).unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("r1", "read", json!({"path": ".env"}))],
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[
            (
                "w1",
                "write",
                json!({"path": ".env", "content": "KEY=new\n"}),
            ),
            (
                "w2",
                "write",
                json!({"path": "local/new.txt", "content": "made\n"}),
            ),
            (
                "w3",
                "write",
                json!({"path": "mnt/deep/f.txt", "content": "f\n"}),
            ),
            (
                "b1",
                "bash",
                json!({"command": "printf 'print(2)\\n' >> app.py"}),
            ),
        ],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let first = ws.run_task(&server.base_url(), &["--yes"], "change the key");
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(std::fs::read(ws.root.join(".env")).unwrap(), b"KEY=new\n");
    assert_eq!(
        std::fs::read(ws.root.join("app.py")).unwrap(),
        b"print(1)\nprint(2)\n"
    );
    let id = only_session(&ws);
    // A later run, a new process: what was written stays kept.
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "b2",
            "bash",
            json!({"command": "printf 'x\\n' > later.txt"}),
        )],
    )));
    server.push(sse(&chunks::text_answer("Also done.")));
    let second = ws.run_task(&server.base_url(), &["--yes", "-s", &id], "one more");
    assert_eq!(second.code, 0, "{}", second.stderr);
    // The person's own ignored file, changed by hand: not offcode's.
    std::fs::write(ws.root.join("local/mine.txt"), "mine, changed\n").unwrap();

    let done = run(ws.offcode(&server.base_url(), &["revert", "--to", "1", "--yes"]));
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert_eq!(
        std::fs::read(ws.root.join(".env")).unwrap(),
        b"KEY=old\n",
        "{}",
        done.stdout
    );
    assert_eq!(
        std::fs::read(ws.root.join("app.py")).unwrap(),
        b"print(1)\n"
    );
    assert!(!ws.root.join("local/new.txt").exists(), "{}", done.stdout);
    assert!(!ws.root.join("later.txt").exists(), "{}", done.stdout);
    assert!(!ws.root.join("mnt/deep").exists(), "{}", done.stdout);
    assert!(ws.root.join("mnt").is_dir(), "{}", done.stdout);
    assert_eq!(
        std::fs::read(ws.root.join("local/mine.txt")).unwrap(),
        b"mine, changed\n"
    );
}

#[test]
fn a_fork_resumes_and_leaves_the_original_alone() {
    let ws = seeded();
    let server = mock();
    server.push(sse(&chunks::text_answer("First.")));
    assert_eq!(ws.run_task(&server.base_url(), &[], "first").code, 0);
    let id = only_session(&ws);
    server.push(sse(&chunks::text_answer("Second.")));
    assert_eq!(
        ws.run_task(&server.base_url(), &["-s", &id], "second").code,
        0
    );
    server.push(sse(&chunks::text_answer("Forked.")));
    let forked = ws.run_task(&server.base_url(), &["--fork", &id, "--at", "2"], "instead");
    assert_eq!(forked.code, 0, "{}", forked.stderr);
    let files = ws.session_files();
    assert_eq!(files.len(), 2);
    let fork = files
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .find(|f| *f != id)
        .unwrap();
    assert_eq!(user_messages(&ws, &fork), ["first", "instead"]);
    assert_eq!(user_messages(&ws, &id), ["first", "second"]);
    let missing = ws.run_task(&server.base_url(), &["--fork", &id, "--at", "9"], "x");
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("has no turn 9"),
        "{}",
        missing.stderr
    );
}

#[test]
fn continue_resumes_the_real_conversation_after_a_failed_run() {
    let ws = Workspace::new();
    let server = mock();
    server.push(sse(&chunks::text_answer("Real answer.")));
    assert_eq!(
        ws.run_task(&server.base_url(), &[], "the real task").code,
        0
    );
    let real = only_session(&ws);
    // A run the server fails (nothing queued: 500s until retries run out).
    let failed = ws.run_task(&server.base_url(), &[], "this one fails");
    assert_ne!(failed.code, 0);
    assert_eq!(ws.session_files().len(), 2);
    server.push(sse(&chunks::text_answer("Resumed.")));
    let resumed = ws.run_task(&server.base_url(), &["--continue"], "go on");
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(user_messages(&ws, &real), ["the real task", "go on"]);
}

#[test]
fn sessions_are_exported_deleted_and_kept_private() {
    use std::os::unix::fs::MetadataExt;
    let ws = seeded();
    let server = mock();
    agent_turn(&server);
    assert_eq!(
        ws.run_task(&server.base_url(), &["--yes"], "change things")
            .code,
        0
    );
    let id = only_session(&ws);
    let data = ws.home.join(".local/share/offcode");
    let checkpoints = offcode::checkpoint::store_dir(&data, &ws.root);
    for dir in [data.join("sessions"), checkpoints.clone()] {
        assert_eq!(
            std::fs::metadata(&dir).unwrap().mode() & 0o777,
            0o700,
            "{}",
            dir.display()
        );
    }
    assert_eq!(
        std::fs::metadata(&ws.session_files()[0]).unwrap().mode() & 0o777,
        0o600
    );
    let exported = run(ws.offcode(&server.base_url(), &["export", &id]));
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert!(
        exported.stdout.contains("## User\n\nchange things"),
        "{}",
        exported.stdout
    );
    assert!(
        exported.stdout.contains("**Tool call** `bash`"),
        "{}",
        exported.stdout
    );
    assert!(checkpoints.join("sessions").join(&id).exists());
    // The deleted file's bytes are kept by the checkpoint before the turn.
    let holds_d = || objects(&checkpoints.join("objects")).contains(&D.to_vec());
    assert!(holds_d());
    let before = files_under(&checkpoints.join("objects"));
    let deleted = run(ws.offcode(&server.base_url(), &["sessions", "--delete", &id]));
    assert_eq!(deleted.code, 0, "{}", deleted.stderr);
    assert!(ws.session_files().is_empty());
    assert!(!checkpoints.join("sessions").join(&id).exists());
    // ...and go with the session: what no other session needs is removed
    // (the workspace as it is now stays, for the next checkpoint).
    assert!(!holds_d(), "{}", deleted.stdout);
    assert!(files_under(&checkpoints.join("objects")) < before);
    assert!(deleted.stdout.contains("freed)"), "{}", deleted.stdout);
    // The next session starts from what was kept, and its turn is taken
    // back whole.
    let b_now = std::fs::read(ws.root.join("b.txt")).unwrap();
    agent_turn(&server);
    let again = ws.run_task(&server.base_url(), &["--yes"], "change things");
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_ne!(std::fs::read(ws.root.join("b.txt")).unwrap(), b_now);
    let undone = run(ws.offcode(&server.base_url(), &["revert", "--yes"]));
    assert_eq!(undone.code, 0, "{}\n{}", undone.stdout, undone.stderr);
    assert_eq!(std::fs::read(ws.root.join("b.txt")).unwrap(), b_now);
    let again = run(ws.offcode(&server.base_url(), &["sessions", "--delete", &id]));
    assert_eq!(again.code, 1);
    assert!(
        again.stdout.contains(&format!("No session `{id}`")),
        "{}",
        again.stdout
    );
}

/// The contents of every file under `dir`.
fn objects(dir: &Path) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(objects(&entry.path()));
        } else if let Ok(bytes) = std::fs::read(entry.path()) {
            found.push(bytes);
        }
    }
    found
}

fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    files_under(&e.path())
                } else {
                    1
                }
            })
            .sum()
    })
}

#[test]
fn the_records_are_out_of_reach_when_the_workspace_is_home() {
    let ws = Workspace::new();
    // A file of another project, kept by a checkpoint there, then gone
    // from that project: only offcode's store holds it now.
    std::fs::write(ws.root.join("secret.txt"), "TOKEN-9917\n").unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("w1", "write", json!({"path": "x.txt", "content": "x\n"}))],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    assert_eq!(
        ws.run_task(&server.base_url(), &["--yes"], "write x").code,
        0
    );
    std::fs::remove_file(ws.root.join("secret.txt")).unwrap();
    let data = ws.home.join(".local/share/offcode");
    let kept = files_under(&data);
    assert!(kept > 3, "the store and the session are there");
    // A script the gate cannot read: the kernel's to stop.
    std::fs::write(
        ws.home.join("wipe.py"),
        "import shutil\nshutil.rmtree('.local/share/offcode', ignore_errors=True)\n",
    )
    .unwrap();
    let session = ws.session_files()[0]
        .strip_prefix(&ws.home)
        .unwrap()
        .display()
        .to_string();

    server.push(sse(&chunks::tool_answer(
        "",
        &[
            ("b1", "bash", json!({"command": "grep -r 'TOKEN-99[1]7' . 2>&1 | head -5; echo searched"})),
            ("b2", "bash", json!({"command": "cat .local/share/offcode/checkpoints/*/objects/*/* 2>&1 | grep -a TOKEN; ls -R .local/share/offcode 2>&1 | head"})),
            ("b3", "bash", json!({"command": "python3 wipe.py; echo removed"})),
            ("t1", "grep", json!({"pattern": "TOKEN-99[1]7", "path": "."})),
            ("t2", "list", json!({"path": ".local/share/offcode"})),
            ("t3", "read", json!({"path": session})),
            ("t4", "glob", json!({"pattern": ".local/share/offcode/**/*"})),
        ],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let mut command = ws.offcode(
        &server.base_url(),
        &["run", "--json", "--yes", "--model", "mock-model", "look"],
    );
    command.current_dir(&ws.home);
    let output = run(command);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let results: Vec<String> = output
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "tool_call_end")
        .map(|e| format!("{}: {}", e["call_id"], e["output"]))
        .collect();
    assert_eq!(results.len(), 7, "{}", output.stdout);
    assert!(
        results[6].contains("No files match"),
        "not even a count: {}",
        results[6]
    );
    let text = results.join("\n");
    assert!(!text.contains("TOKEN-9917"), "{text}");
    assert!(
        text.contains("searched") && text.contains("removed"),
        "{text}"
    );
    assert!(files_under(&data) >= kept, "nothing was removed: {text}");
    // The project's session can still be taken back.
    let revert = run(ws.offcode(&server.base_url(), &["revert", "--yes"]));
    assert_eq!(revert.code, 0, "{}", revert.stderr);
    assert!(!ws.root.join("x.txt").exists(), "{}", revert.stdout);
    // The object of the file the person deleted is still kept.
    let hash = offcode::checkpoint::store::hash_of(b"TOKEN-9917\n");
    let object = offcode::checkpoint::store_dir(&data, &ws.root)
        .join("objects")
        .join(&hash[..2])
        .join(&hash[2..]);
    assert_eq!(std::fs::read(object).unwrap(), b"TOKEN-9917\n");
}

#[test]
fn the_log_says_what_happened_but_not_what_was_said_and_the_cache_clears() {
    let ws = seeded();
    let server = mock();
    agent_turn(&server);
    let output = ws.run_task(&server.base_url(), &["--yes"], "a private prompt 4711");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let logs = run(ws.offcode(&server.base_url(), &["logs", "-n", "200"]));
    assert_eq!(logs.code, 0, "{}", logs.stderr);
    let path = ws.home.join(".local/state/offcode/offcode.log");
    assert!(
        logs.stdout.starts_with(&format!("{}\n", path.display())),
        "{}",
        logs.stdout
    );
    for expected in [
        " session ",
        " permission write Allow",
        " tool write Ok: ",
        " tool bash Ok: ",
        " turn Done",
    ] {
        assert!(
            logs.stdout.contains(expected),
            "{expected:?} in:\n{}",
            logs.stdout
        );
    }
    assert!(
        !logs.stdout.contains("4711"),
        "no prompt without debug:\n{}",
        logs.stdout
    );
    assert!(
        !logs.stdout.contains("ALPHA"),
        "no file content:\n{}",
        logs.stdout
    );
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    }
    // A project cannot turn checkpoints off, or have prompts logged.
    for key in ["checkpoints: { enabled: false }", "log: { debug: true }"] {
        std::fs::write(ws.root.join("offcode.jsonc"), format!("{{ {key} }}")).unwrap();
        let refused = ws.run_task(&server.base_url(), &[], "x");
        assert_eq!(refused.code, 2, "{}", refused.stderr);
        assert!(
            refused
                .stderr
                .contains("may only be set in your global config"),
            "{}",
            refused.stderr
        );
    }
    std::fs::remove_file(ws.root.join("offcode.jsonc")).unwrap();
    // With `log.debug` in the person's own config, prompts are kept too.
    let global = ws.home.join(".config/offcode/offcode.jsonc");
    std::fs::write(&global, "{ log: { debug: true } }").unwrap();
    server.push(sse(&chunks::text_answer("ok")));
    assert_eq!(
        ws.run_task(&server.base_url(), &[], "debug prompt 5812")
            .code,
        0
    );
    let logs = run(ws.offcode(&server.base_url(), &["logs"]));
    assert!(
        logs.stdout.contains(" prompt debug prompt 5812"),
        "{}",
        logs.stdout
    );

    let cache = ws.home.join(".cache/offcode/servers.json");
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    std::fs::write(&cache, "{}").unwrap();
    let cleared = run(ws.offcode(&server.base_url(), &["cache", "clear"]));
    assert_eq!(cleared.code, 0, "{}", cleared.stderr);
    assert!(cleared.stdout.starts_with("Removed "), "{}", cleared.stdout);
    assert!(!cache.exists());
}

#[test]
fn a_step_cut_short_by_kill_9_dies_with_offcode_and_can_still_be_taken_back() {
    let ws = seeded();
    let marker = format!("slow_{}.sh", std::process::id());
    std::fs::write(
        ws.root.join(&marker),
        "printf 'half done\\n' > a.txt\nrm -f d.txt\ntouch started\nsleep 30\nprintf late > late.txt\n",
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b1", "bash", json!({"command": format!("sh {marker}")}))],
    )));
    let mut child = ws
        .offcode(
            &server.base_url(),
            &["run", "--yes", "--model", "mock-model", "go"],
        )
        // Without namespaces the command writes to the workspace as it
        // runs (over an overlay, a step cut short lands nothing:
        // `tests/layers.rs`).
        .env("OFFCODE_TEST_NO_NAMESPACES", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(crate::support::wait_until(
        std::time::Duration::from_secs(20),
        || ws.root.join("started").exists()
    ));
    child.kill().unwrap();
    child.wait().unwrap();
    // Nothing it started goes on changing the workspace.
    assert!(
        crate::support::wait_until(std::time::Duration::from_secs(10), || {
            crate::support::processes_with(&marker).is_empty()
        }),
        "{:?}",
        crate::support::processes_with(&marker)
    );
    // The person goes on in the session; what they change from then on is
    // theirs, never taken for the step cut short.
    server.push(sse(&chunks::text_answer("Back.")));
    let resumed = ws.run_task(&server.base_url(), &["--continue"], "where were we");
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert!(
        resumed.stderr.contains("last step was cut short"),
        "{}",
        resumed.stderr
    );
    std::fs::write(ws.root.join("b.txt"), "mine\n").unwrap();
    std::fs::write(ws.root.join("mine.txt"), "mine\n").unwrap();
    let done = run(ws.offcode(&server.base_url(), &["revert", "--to", "1", "--yes"]));
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert!(
        done.stdout
            .contains("revert  a.txt  +2 -1  (offcode stopped mid-step"),
        "{}",
        done.stdout
    );
    assert!(done.stdout.contains("restore d.txt"), "{}", done.stdout);
    assert_eq!(std::fs::read(ws.root.join("a.txt")).unwrap(), A);
    assert_eq!(std::fs::read(ws.root.join("d.txt")).unwrap(), D);
    assert!(!ws.root.join("started").exists());
    assert!(!ws.root.join("late.txt").exists());
    assert_eq!(std::fs::read(ws.root.join("b.txt")).unwrap(), b"mine\n");
    assert_eq!(std::fs::read(ws.root.join("mine.txt")).unwrap(), b"mine\n");
}
