//! offcode never runs itself by a path a command can change: with offcode
//! started from a folder inside the workspace (built or unpacked there), a
//! command renames a script over its binary's path, and the commands and
//! the validation run after it still go through the confinement helper
//! offcode was started as, so the script never runs unconfined.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde_json::json;

use crate::support::{Workspace, chunks, mock, run, sse, tool_results};

#[test]
fn a_script_renamed_over_offcodes_path_never_runs_unconfined() {
    for namespaces in [true, false] {
        swapped_binary(namespaces);
    }
}

/// The swap, with or without user namespaces for the commands.
fn swapped_binary(namespaces: bool) {
    let ws = Workspace::new();
    let bin = ws.root.join("target/release");
    std::fs::create_dir_all(&bin).unwrap();
    let offcode = bin.join("offcode");
    std::fs::copy(env!("CARGO_BIN_EXE_offcode"), &offcode).unwrap();
    // Outside the workspace: what the script writes if it runs unconfined.
    let escaped = ws.home.join("escaped");
    std::fs::write(
        ws.root.join("swap.sh"),
        format!(
            "printf '#!/bin/sh\\necho ran \"$@\" >> {}\\n' > target/release/offcode.new\n\
             chmod +x target/release/offcode.new\n\
             mv target/release/offcode.new target/release/offcode\n",
            escaped.display()
        ),
    )
    .unwrap();
    std::fs::write(ws.root.join("notes.txt"), "draft\n").unwrap();
    // The person's own config: commands allowed, a validation command.
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        "{ permission: { bash: 'allow', edit: 'allow' }, validate: { commands: ['grep -q final result.txt'], attempts: 1 } }\n",
    )
    .unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("c1", "bash", json!({ "command": "sh swap.sh" }))],
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[("c2", "bash", json!({ "command": "echo still-confined" }))],
    )));
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "c3",
            "write",
            json!({ "path": "result.txt", "content": "final\n" }),
        )],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    // offcode started by its path inside the workspace, as a person who
    // built it there would.
    let template = ws.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "mock-model", "go"],
    );
    let mut command = Command::new(&offcode);
    command
        .args(template.get_args())
        .current_dir(&ws.root)
        .env_clear();
    for (key, value) in template.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    if !namespaces {
        command.env("OFFCODE_TEST_NO_NAMESPACES", "1");
    }
    let output = run(command);
    // The swap happened: the path now names the script.
    let now = std::fs::read_to_string(&offcode).unwrap_or_default();
    assert!(
        now.starts_with("#!/bin/sh"),
        "the swap did not happen: {}",
        output.stderr
    );
    assert!(
        std::fs::metadata(&offcode).unwrap().permissions().mode() & 0o111 != 0,
        "the script is executable"
    );
    // The script never ran: no command, no validation went through it.
    assert!(
        !escaped.exists(),
        "namespaces {namespaces}: ran unconfined: {}",
        std::fs::read_to_string(&escaped).unwrap_or_default()
    );
    // And the next command did run, confined, through the binary started.
    let results: Vec<String> = server.chat_bodies().iter().flat_map(tool_results).collect();
    assert!(
        results.iter().any(|r| r.contains("still-confined")),
        "{results:#?}\n{}",
        output.stderr
    );
    assert!(
        output.stdout.contains("validate") || output.stderr.contains("validate"),
        "validation ran: {}{}",
        output.stdout,
        output.stderr
    );
}
