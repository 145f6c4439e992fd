//! Folders in a revert, from the command line: what the agent's commands
//! did to folders (removed, made, their modes) is taken back, and the
//! person's folders stay, judged by what the checkpoints recorded.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;

use crate::support::{Workspace, chunks, mock, run, sse};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn a_revert_puts_folders_and_their_modes_back_and_keeps_the_persons() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join("cache/tmp")).unwrap();
    std::fs::set_permissions(
        ws.root.join("cache/tmp"),
        std::fs::Permissions::from_mode(0o1777),
    )
    .unwrap();
    std::fs::create_dir(ws.root.join("private")).unwrap();
    std::fs::set_permissions(
        ws.root.join("private"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    // The person's empty folder, which the agent writes into.
    std::fs::create_dir(ws.root.join("data")).unwrap();
    // A project's own script, which no gate judges (`make clean`).
    std::fs::write(
        ws.root.join("tidy.sh"),
        "rmdir cache/tmp cache\nchmod 755 private\nmkdir -p out/logs\nprintf 'x\\n' > data/f.txt\n",
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("b1", "bash", json!({"command": "sh tidy.sh"}))],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let turn = ws.run_task(&server.base_url(), &["--yes"], "tidy up");
    assert_eq!(turn.code, 0, "{}", turn.stderr);
    assert!(!ws.root.join("cache").exists(), "{}", turn.stderr);
    assert_eq!(mode(&ws.root.join("private")), 0o755);
    assert!(ws.root.join("out/logs").is_dir());

    let done = run(ws.offcode(&server.base_url(), &["revert", "--to", "1", "--yes"]));
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    for line in [
        "restore cache/",
        "restore cache/tmp/",
        "remove  out/",
        "mode    private/  700",
    ] {
        assert!(done.stdout.contains(line), "{line}:\n{}", done.stdout);
    }
    assert_eq!(mode(&ws.root.join("cache/tmp")), 0o1777);
    assert_eq!(mode(&ws.root.join("private")), 0o700);
    assert!(!ws.root.join("out").exists(), "{}", done.stdout);
    assert!(!ws.root.join("data/f.txt").exists(), "{}", done.stdout);
    assert!(ws.root.join("data").is_dir(), "{}", done.stdout);
}
