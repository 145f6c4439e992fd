//! Ending offcode while a command runs, headless: SIGINT to `offcode run`,
//! or SIGKILL, which offcode never sees. Either way the command and
//! everything it started in the background end with it, confined or not:
//! checked by the processes themselves and the files they would write.

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rustix::process::Signal;

use crate::support::{Workspace, demo_mock, processes_with, wait_until};

/// Runs a command that starts a background child through the demo model's
/// `run` with `--yes`, sends `signal` to offcode once the command runs,
/// and checks that nothing of the command is left: no process, and none
/// of the files it would have written after.
fn end_while_running(signal: Signal, global_config: Option<&str>) {
    end_while_running_with(signal, global_config, &[], "");
}

/// [`end_while_running`], offcode given `env`, the command run as a
/// script after the lines `before` (when there are any); the workspace,
/// for what else to look at.
fn end_while_running_with(
    signal: Signal,
    global_config: Option<&str>,
    env: &[(&str, &str)],
    before: &str,
) -> Workspace {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    // `sleep 30.PIDN`: long enough to be killed, and found by its name.
    let marker = format!(
        "30.{}{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    );
    let command = format!(
        "touch started; (sleep {marker}; touch survived.1) & sleep {marker}; touch survived.2"
    );
    let server = demo_mock();
    let workspace = Workspace::new();
    if let Some(config) = global_config {
        std::fs::write(workspace.home.join(".config/offcode/offcode.jsonc"), config).unwrap();
    }
    let prompt = if before.is_empty() {
        format!("run `{command}`")
    } else {
        std::fs::write(workspace.root.join("s.sh"), format!("{before}{command}\n")).unwrap();
        "run `bash s.sh`".to_owned()
    };
    let mut child = workspace
        .offcode(&server.base_url(), &["run", "--yes", &prompt])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Both sleeps run: the command's and its background child's.
    let sleeps = || {
        processes_with(&marker)
            .iter()
            .filter(|p| p.contains(": sleep "))
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(20), || sleeps() == 2),
        "the command never started: {:?}",
        processes_with(&marker)
    );
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
    let status = child.wait().unwrap();
    if signal == Signal::INT {
        assert_eq!(status.code(), Some(1), "an interrupted run fails");
    }
    let gone = wait_until(Duration::from_secs(10), || {
        processes_with(&marker).is_empty()
    });
    let left = processes_with(&marker);
    // Whatever the result, nothing of this test is left running after it.
    crate::support::kill_with(&marker);
    assert!(gone, "outlived offcode: {left:?}");
    // A command confined over an overlay lands its changes only once it
    // has ended; one cut short by offcode's end lands nothing.
    let direct = global_config.is_some_and(|config| config.contains("\"off\""))
        || env
            .iter()
            .any(|(name, _)| *name == "OFFCODE_TEST_NO_NAMESPACES");
    assert_eq!(workspace.root.join("started").exists(), direct);
    for name in ["survived.1", "survived.2"] {
        assert!(
            !workspace.root.join(name).exists(),
            "{name} was written after offcode ended"
        );
    }
    workspace
}

#[test]
fn sigint_to_a_run_kills_the_command_and_its_background_children() {
    end_while_running(Signal::INT, None);
}

#[test]
fn unconfined_commands_die_with_their_group_too() {
    end_while_running(Signal::INT, Some(r#"{ "sandbox": "off" }"#));
}

#[test]
fn a_confined_command_and_its_children_die_with_offcode_killed() {
    end_while_running(Signal::KILL, None);
}

#[test]
fn an_unconfined_command_and_its_children_die_with_offcode_killed() {
    end_while_running(Signal::KILL, Some(r#"{ "sandbox": "off" }"#));
}

/// Killed after the command started but before offcode's thread got back
/// to it (held there on purpose, as a loaded machine once did): the
/// command had told the reaper of its group itself, so its background
/// child dies too. Without that, 2 runs in 300 under load left it alive.
#[test]
fn a_command_killed_with_offcode_right_after_it_started_leaves_nothing() {
    end_while_running_with(
        Signal::KILL,
        Some(r#"{ "sandbox": "off" }"#),
        &[("OFFCODE_TEST_HOLD_LATE", "1")],
        "",
    );
}

/// When a command ends, its group is killed before its leader is reaped:
/// until then no other process can take the leader's PID, which is the
/// group's number. A process the command left in its group (it holds the
/// output, so offcode waits 200 ms for it) watches the leader: it must
/// see it running, then a zombie, never gone. (Reaped first, the PID was
/// free for those 200 ms, and an outside tester's process that took it
/// was killed as the command's group.)
#[test]
fn a_commands_group_is_killed_before_its_leader_is_reaped() {
    let server = demo_mock();
    let workspace = Workspace::new();
    std::fs::write(
        workspace.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "sandbox": "off" }"#,
    )
    .unwrap();
    std::fs::write(
        workspace.root.join("watch.sh"),
        "leader=$$\n\
         (while :; do\n\
            if [ -e /proc/$leader/stat ]; then cut -d' ' -f3 /proc/$leader/stat >> states; else echo gone >> states; fi\n\
            sleep 0.005\n\
          done) &\n\
         sleep 0.1\n",
    )
    .unwrap();
    let output = workspace.run_task(&server.base_url(), &["--yes"], "run `bash watch.sh`");
    assert_eq!(output.code, 0, "{}", output.stderr);
    let states = std::fs::read_to_string(workspace.root.join("states")).unwrap();
    assert!(
        states.contains('Z'),
        "the leader was never seen a zombie:\n{states}"
    );
    assert!(
        !states.contains("gone"),
        "the leader was reaped while its group still ran:\n{states}"
    );
}

/// An unconfined command kills offcode's reaper, waits for the one offcode
/// starts in its place, then leaves a background child; offcode is killed:
/// the new reaper, told what the old one held, ends the group. (Nothing
/// replaced a killed reaper before: an outside tester's finding.)
#[test]
fn a_killed_reaper_is_replaced_and_still_ends_the_group() {
    let workspace = end_while_running_with(
        Signal::KILL,
        Some(r#"{ "sandbox": "off" }"#),
        &[],
        "old=$(pgrep -P $PPID -f __reaper)\n\
         kill -9 $old\n\
         for i in $(seq 200); do new=$(pgrep -P $PPID -f __reaper); [ -n \"$new\" ] && [ \"$new\" != \"$old\" ] && break; sleep 0.05; done\n\
         echo \"old=$old new=$new\" > reapers\n",
    );
    let reapers = std::fs::read_to_string(workspace.root.join("reapers")).unwrap_or_default();
    let (old, new) = reapers.trim().split_once(' ').unwrap_or_default();
    assert!(
        old.len() > 4 && new.len() > 4 && old[4..] != new[4..],
        "{reapers}"
    );
}
