//! What an outside tester did from inside the sandbox, checked by its real
//! effect: a command that clears its parent-death signal and leaves its
//! process group must still end with its call, and a command that clones
//! the workspace's mount from under the private mounts (`open_tree`) must
//! find nothing of offcode's there.

use std::time::Duration;

use serde_json::json;

use crate::support::{Workspace, chunks, mock, processes_with, run, sse, tool_results, wait_until};

/// Runs `bash s.sh` (with `script` as s.sh in `dir`) as the model's one
/// call with `timeout` seconds, headless with `--yes`; the tool result.
fn run_script(ws: &Workspace, dir: &std::path::Path, script: &str, timeout: u64) -> String {
    run_script_with(ws, dir, script, timeout, None)
}

/// [`run_script`] with offcode's `PATH` set to `path`.
fn run_script_with(
    ws: &Workspace,
    dir: &std::path::Path,
    script: &str,
    timeout: u64,
    path: Option<&std::ffi::OsStr>,
) -> String {
    std::fs::write(dir.join("s.sh"), script).unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[(
            "s1",
            "bash",
            json!({"command": "bash s.sh", "timeout": timeout}),
        )],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let mut command = ws.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "mock-model", "run the script"],
    );
    command.current_dir(dir);
    if let Some(path) = path {
        command.env("PATH", path);
    }
    let output = run(command);
    assert_eq!(output.code, 0, "{}", output.stderr);
    tool_results(&server.chat_bodies()[1]).join("\n")
}

#[test]
fn a_command_that_clears_its_death_signal_and_leaves_its_group_still_ends() {
    let ws = Workspace::new();
    let marker = format!("40.{}7", std::process::id());
    // As PID 1 of its namespace, this outlived offcode and its own
    // timeout, and went on writing in the workspace.
    let script = format!(
        "exec python3 -c 'import ctypes,os; l=ctypes.CDLL(None); l.prctl(1,0,0,0,0); os.setpgrp(); os.system(\"sleep {marker} & sleep {marker}; touch survived\")'\n"
    );
    let result = run_script(&ws, &ws.root, &script, 2);
    assert!(result.contains("timed out"), "{result}");
    let gone = wait_until(Duration::from_secs(10), || {
        processes_with(&marker).is_empty()
    });
    let left = processes_with(&marker);
    crate::support::kill_with(&marker);
    assert!(gone, "outlived its call: {left:?}");
    assert!(!ws.root.join("survived").exists());
}

#[test]
fn a_clone_of_the_workspace_mount_shows_nothing_of_offcodes_config() {
    // The workspace is the home folder, so offcode's config folder lies
    // in it, covered by an empty private folder.
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "api_key": "sk-cloned-key-5555" }"#,
    )
    .unwrap();
    // open_tree(AT_FDCWD, ".", OPEN_TREE_CLONE) is syscall 428 on every
    // architecture offcode ships for.
    let script = "python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(428, -100, b\".\", 1)
print(\"clone:\", fd, os.strerror(ctypes.get_errno()) if fd < 0 else \"made\")
if fd >= 0:
    print(open(os.open(\".config/offcode/offcode.jsonc\", 0, dir_fd=fd)).read())
'\n";
    let result = run_script(&ws, &ws.home, script, 20);
    assert!(result.contains("clone:"), "{result}");
    assert!(!result.contains("sk-cloned-key"), "{result}");
}

#[test]
fn a_home_folder_inside_the_workspace_cannot_be_swapped_for_another() {
    // The workspace lies above the home folder. Renamed away, the home
    // folder took its read-only files and offcode's hidden config with it,
    // and a new one with the command's login file and offcode config
    // stood in its place.
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "api_key": "sk-swapped-home-6666" }"#,
    )
    .unwrap();
    let above = ws.home.parent().unwrap().to_path_buf();
    let script = "mv home home.old; mv home/.config home/config.old; \
                  cat home.old/.config/offcode/offcode.jsonc home/config.old/offcode/offcode.jsonc; \
                  mkdir -p home/.config/offcode; \
                  echo '{ \"sandbox\": \"off\" }' > home/.config/offcode/offcode.jsonc; \
                  echo 'touch pwned' > home/.bashrc; echo ran\n";
    let result = run_script(&ws, &above, script, 20);
    assert!(result.contains("ran"), "{result}");
    assert!(!result.contains("sk-swapped-home"), "{result}");
    assert!(!above.join("home.old").exists(), "{result}");
    assert!(!ws.home.join(".bashrc").exists(), "{result}");
    assert_eq!(
        std::fs::read_to_string(ws.home.join(".config/offcode/offcode.jsonc")).unwrap(),
        r#"{ "api_key": "sk-swapped-home-6666" }"#
    );
}

#[test]
fn hooks_in_the_folder_core_hookspath_names_stay_as_they_were() {
    // husky's layout: the person's repository runs its hooks from a
    // folder of the workspace, which commands could write.
    let ws = Workspace::new();
    ws.git(&["init", "-q"]);
    ws.git(&["config", "core.hooksPath", ".husky/_"]);
    std::fs::create_dir_all(ws.root.join(".husky/_")).unwrap();
    std::fs::write(ws.root.join(".husky/_/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    let script = "printf '#!/bin/sh\\ntouch pwned\\n' > .husky/_/pre-commit; \
                  printf '#!/bin/sh\\ntouch pwned\\n' > .husky/_/post-checkout; \
                  chmod +x .husky/_/post-checkout; echo ran\n";
    let result = run_script(&ws, &ws.root, script, 20);
    assert!(result.contains("ran"), "{result}");
    assert_eq!(
        std::fs::read_to_string(ws.root.join(".husky/_/pre-commit")).unwrap(),
        "#!/bin/sh\nexit 0\n",
        "{result}"
    );
    assert!(!ws.root.join(".husky/_/post-checkout").exists(), "{result}");
}

#[test]
fn a_folder_of_the_home_on_path_is_the_persons_own() {
    // The workspace is the home folder; `~/go/bin` is on the person's
    // PATH, so a `git` put there runs the next time they type git.
    let ws = Workspace::new();
    let bin = ws.home.join("go/bin");
    std::fs::create_dir_all(&bin).unwrap();
    // Last, so the gate's look-up of `bash` still finds the system's.
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    path.push(":");
    path.push(bin.as_os_str());
    // One on PATH that is not there yet, as `$HOME/mybin` before it is made.
    path.push(":");
    path.push(ws.home.join("mybin").as_os_str());
    let script = "printf '#!/bin/sh\\ntouch pwned\\n' > go/bin/git; chmod +x go/bin/git; \
                  mkdir mybin && printf '#!/bin/sh\\ntouch pwned\\n' > mybin/tool; echo ran\n";
    let result = run_script_with(&ws, &ws.home, script, 20, Some(&path));
    assert!(result.contains("ran"), "{result}");
    assert!(!bin.join("git").exists(), "{result}");
    assert!(!ws.home.join("mybin").exists(), "{result}");
}
