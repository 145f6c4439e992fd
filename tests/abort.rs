//! Aborting a running command, headless: SIGINT to `offcode run` ends the
//! command and everything it started, confined or not.

use std::process::Stdio;
use std::time::Duration;

use crate::support::{Workspace, demo_mock, wait_until};

/// Runs `command` through the demo model's `run` with `--yes`, sends
/// SIGINT once it runs, and returns the workspace after the markers would
/// have been written.
fn interrupt_while_running(command: &str, global_config: Option<&str>) -> Workspace {
    let server = demo_mock();
    let workspace = Workspace::new();
    if let Some(config) = global_config {
        std::fs::write(workspace.home.join(".config/offcode/offcode.jsonc"), config).unwrap();
    }
    let prompt = format!("run `{command}`");
    let mut child = workspace
        .offcode(&server.base_url(), &["run", "--yes", &prompt])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `started` is written first thing by the command itself.
    assert!(
        wait_until(Duration::from_secs(20), || workspace
            .root
            .join("started")
            .exists()),
        "the command never started"
    );
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "an interrupted run fails");
    std::thread::sleep(Duration::from_secs(4));
    workspace
}

#[test]
fn sigint_to_a_run_kills_the_command_and_its_background_children() {
    let workspace = interrupt_while_running(
        "touch started; (sleep 3; touch survived.1) & sleep 3; touch survived.2",
        None,
    );
    for name in ["survived.1", "survived.2"] {
        assert!(
            !workspace.root.join(name).exists(),
            "{name} was written after the interrupt"
        );
    }
}

#[test]
fn unconfined_commands_die_with_their_group_too() {
    let workspace = interrupt_while_running(
        "touch started; (sleep 3; touch survived.1) & sleep 3; touch survived.2",
        Some(r#"{ "sandbox": "off" }"#),
    );
    for name in ["survived.1", "survived.2"] {
        assert!(
            !workspace.root.join(name).exists(),
            "{name} was written after the interrupt"
        );
    }
}
