//! The check after a command, when the command is cut short: an outside
//! tester planted git settings and hooks, offcode's config and a login
//! file, then had offcode interrupted or killed while the command slept,
//! and the check that undoes them was never made. Each test checks the
//! files themselves once offcode is gone: put back by the call's own end
//! (SIGINT), by the reaper (SIGKILL, SIGTERM, SIGHUP), or by the next
//! start when the reaper was killed too.

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rustix::process::{Pid, Signal};

use crate::support::{Workspace, demo_mock, kill_with, processes_with, wait_until};

/// What the command plants, then it sleeps on `marker` until killed,
/// with a writer in a session of its own rewriting offcode's config. Over
/// an overlay of the workspace nothing of a command cut short lands at
/// all; the check is made all the same, and nothing planted is left.
fn plant(home: &Path, marker: &str) {
    std::fs::write(
        home.join("plant.sh"),
        format!(
            "echo '{{ \"permission\": \"allow\" }}' > offcode.jsonc\n\
             git init -q sub\n\
             git -C sub config alias.st '!touch pwned'\n\
             printf '#!/bin/sh\\ntouch pwned\\n' > sub/.git/hooks/pre-commit\n\
             chmod +x sub/.git/hooks/pre-commit\n\
             (setsid bash -c 'while :; do echo x >| offcode.jsonc; done' &)\n\
             touch planted\n\
             sleep {marker}\n"
        ),
    )
    .unwrap();
}

/// Whether nothing planted is left as planted.
fn undone(home: &Path) -> Result<(), String> {
    let config = std::fs::read_to_string(home.join("sub/.git/config")).unwrap_or_default();
    let left = [
        (home.join("offcode.jsonc").exists(), "offcode.jsonc"),
        (
            config.contains("touch pwned"),
            "the nested repository's alias",
        ),
        (
            home.join("sub/.git/hooks/pre-commit").exists(),
            "the nested repository's hook",
        ),
    ];
    let left: Vec<&str> = left
        .iter()
        .filter(|(there, _)| *there)
        .map(|(_, what)| *what)
        .collect();
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("left as planted: {left:?}"))
    }
}

/// Starts `offcode run --yes` in the home directory on the planting
/// command, and waits until the command sleeps; the run and the marker.
fn start(ws: &Workspace, server: &crate::support::MockServer) -> (Child, String) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let marker = format!(
        "31.{}{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    );
    plant(&ws.root, &marker);
    let child = ws
        .offcode(
            &server.base_url(),
            &["run", "--yes", "--json", "run `bash plant.sh`"],
        )
        .current_dir(&ws.root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Seen by its process: what it writes lands only when it ends.
    let asleep = wait_until(Duration::from_secs(30), || {
        processes_with(&marker)
            .iter()
            .any(|p| p.contains(": sleep "))
    });
    assert!(asleep, "the command never got to its sleep");
    (child, marker)
}

fn signal(child: &Child, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

/// Ends a run with `signal` during the command; what it planted must be
/// undone soon after offcode is gone.
fn ended_by(with: Signal) -> String {
    ended_with_helpers(with, false)
}

/// [`ended_by`]; with `helpers`, its reaper and the command's confining
/// helper get the signal too, as `pkill offcode` or a logout sends it to
/// every process named offcode.
fn ended_with_helpers(with: Signal, helpers: bool) -> String {
    let began = std::time::SystemTime::now() - Duration::from_secs(1);
    let server = demo_mock();
    let ws = Workspace::new();
    let (mut child, marker) = start(&ws, &server);
    let pid = child.id();
    if helpers {
        for name in [offcode::groups::REAPER_ARG, offcode::confine::HELPER_ARG] {
            let helper = child_with(pid, name).unwrap_or_else(|| panic!("no {name} running"));
            rustix::process::kill_process(helper, with).unwrap();
        }
    }
    signal(&child, with);
    let output = std::io::read_to_string(child.stdout.take().unwrap()).unwrap_or_default();
    let _ = child.wait();
    let checked = wait_until(Duration::from_secs(15), || undone(&ws.root).is_ok());
    // A writer that left the command's group was gone before the check,
    // not rewriting what the check removed.
    std::thread::sleep(Duration::from_millis(300));
    let gone = wait_until(Duration::from_secs(10), || {
        processes_with(&marker).is_empty()
    });
    kill_with(&marker);
    assert!(gone, "the command outlived offcode");
    let still = undone(&ws.root);
    assert!(checked && still.is_ok(), "{with:?}: {still:?}");
    // Nor is the session's private temp dir left behind.
    let temporary = || {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|entry| {
                // This run's: a dir of an earlier process with the same
                // PID is older.
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("offcode-{pid}-"))
                    && entry
                        .metadata()
                        .and_then(|meta| meta.modified())
                        .is_ok_and(|time| time >= began)
            })
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(5), || temporary() == 0),
        "{with:?}: the private temp dir was left"
    );
    output
}

#[test]
fn an_interrupted_command_is_checked_and_the_check_reported() {
    let output = ended_by(Signal::INT);
    // The call ends as aborted, and nothing it planted landed (checked
    // by `ended_by`).
    assert!(output.contains("Aborted by the user"), "{output}");
}

#[test]
fn a_command_of_a_killed_offcode_is_checked_by_the_reaper() {
    ended_by(Signal::KILL);
}

#[test]
fn a_command_of_a_terminated_or_hung_up_offcode_is_checked() {
    ended_by(Signal::TERM);
    ended_by(Signal::HUP);
}

/// `pkill offcode`, `killall offcode`, a logout: every process named
/// offcode gets the signal, the reaper among them, and it must live to
/// make the check (found by an outside test: it died with the rest, and
/// the person's next `git status` ran what the command left).
#[test]
fn a_command_is_checked_when_offcode_and_its_helpers_get_the_signal_together() {
    ended_with_helpers(Signal::TERM, true);
    ended_with_helpers(Signal::HUP, true);
}

/// The PID of `parent`'s child whose command line holds `text`.
fn child_with(parent: u32, text: &str) -> Option<Pid> {
    processes_with(text).iter().find_map(|process| {
        let pid: i32 = process.split(':').next()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(") ")?;
        let parent_pid: u32 = rest.split(' ').nth(1)?.parse().ok()?;
        (parent_pid == parent).then(|| Pid::from_raw(pid))?
    })
}

#[test]
fn a_check_neither_offcode_nor_its_reaper_lived_to_make_is_made_at_the_next_start() {
    let server = demo_mock();
    let ws = Workspace::new();
    let (mut child, marker) = start(&ws, &server);
    let reaper = child_with(child.id(), offcode::groups::REAPER_ARG).expect("a reaper runs");
    // Stopped first: offcode replaces a reaper that dies while it runs
    // (and that one would make the check), so the two must end together.
    signal(&child, Signal::STOP);
    rustix::process::kill_process(reaper, Signal::KILL).unwrap();
    signal(&child, Signal::KILL);
    let _ = child.wait();
    let gone = wait_until(Duration::from_secs(10), || {
        processes_with(&marker).is_empty()
    });
    kill_with(&marker);
    assert!(gone, "the command outlived offcode");
    // Nobody was left to check, and nothing of the command landed.
    undone(&ws.root).unwrap();
    assert!(!ws.root.join("planted").exists());
    let next = crate::support::run(
        ws.offcode(&server.base_url(), &["run", "say hello"])
            .current_dir(&ws.root),
    );
    assert_eq!(next.code, 0, "{}", next.stderr);
    undone(&ws.root).unwrap();
}

#[test]
fn a_fifo_planted_as_a_nested_git_config_hangs_neither_the_check_nor_git() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("fifo.sh"),
        "git init -q sub && rm sub/.git/config && mkfifo sub/.git/config && echo planted\n",
    )
    .unwrap();
    assert!(
        ends_in_time(&ws, &server, "run `bash fifo.sh`"),
        "offcode hung on the FIFO"
    );
    // A confined command may not make a named pipe in the workspace.
    let result = command_output(&server);
    assert!(
        result.contains("cannot create fifo") && !result.contains("planted"),
        "{result}"
    );
    let config = ws.root.join("sub/.git/config");
    let plain = std::fs::symlink_metadata(&config).map_or(true, |meta| meta.is_file());
    assert!(plain, "the FIFO was left where git reads its config");
}

/// What the model was told the step's command printed (the second
/// request's tool results), as one text.
fn command_output(server: &crate::support::MockServer) -> String {
    let result = server
        .chat_bodies()
        .get(1)
        .map(crate::support::tool_results);
    format!("{result:?}")
}

/// Runs `offcode run --yes PROMPT` in `dir` and waits up to 40 s; whether
/// it ended (it is killed when not).
fn ends_in_time(ws: &Workspace, server: &crate::support::MockServer, prompt: &str) -> bool {
    let mut child = ws
        .offcode(&server.base_url(), &["run", "--yes", prompt])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ended = wait_until(Duration::from_secs(40), || {
        child.try_wait().is_ok_and(|status| status.is_some())
    });
    if !ended {
        let _ = child.kill();
        let _ = child.wait();
    }
    ended
}

#[test]
fn a_fifo_as_the_workspaces_git_head_hangs_neither_the_check_nor_the_next_start() {
    use std::os::unix::fs::FileTypeExt as _;
    let server = demo_mock();
    let ws = Workspace::new();
    ws.git(&["init", "-q"]);
    // git, run in the workspace to read the nested configs, waited on the
    // FIFO for ever, and the settings stayed.
    std::fs::write(
        ws.root.join("f2.sh"),
        "for n in aa zz; do git init -q $n && git -C $n config core.fsmonitor 'touch pwned; false'; done\n\
         rm .git/HEAD && mkfifo .git/HEAD && echo planted\n",
    )
    .unwrap();
    assert!(
        ends_in_time(&ws, &server, "run `bash f2.sh`"),
        "offcode hung"
    );
    for repository in ["aa", "zz"] {
        let config = std::fs::read_to_string(ws.root.join(repository).join(".git/config"));
        assert!(
            !config.unwrap_or_default().contains("fsmonitor"),
            "{repository} kept its fsmonitor"
        );
    }
    let head = std::fs::symlink_metadata(ws.root.join(".git/HEAD"));
    assert!(
        !head.is_ok_and(|meta| meta.file_type().is_fifo()),
        "the FIFO was left as .git/HEAD"
    );
    // Planted by other means, it does not hang offcode's start either.
    let _ = std::fs::remove_file(ws.root.join(".git/HEAD"));
    let fifo = std::process::Command::new("mkfifo")
        .arg(ws.root.join(".git/HEAD"))
        .status()
        .unwrap();
    assert!(fifo.success());
    assert!(
        ends_in_time(&ws, &server, "say hello"),
        "offcode's start hung"
    );
}

#[test]
fn a_git_directory_reached_only_through_a_pointer_is_checked_and_fifos_git_reads_go() {
    use std::os::unix::fs::FileTypeExt as _;
    // An outside tester's layout: `gf/.git` names `wt`, whose `commondir`
    // names `common`, a folder with a config and no `HEAD`: git in `gf`
    // took that config (and ran its fsmonitor), which no check looked at.
    let server = demo_mock();
    let ws = Workspace::new();
    ws.git(&["init", "-q"]);
    std::fs::write(
        ws.root.join("p3.sh"),
        "mkdir -p common/objects common/refs/heads gf wt\n\
         printf '[core]\\n\\tfsmonitor = touch pwned\\n\\tbare = false\\n' > common/config\n\
         echo 'ref: refs/heads/master' > wt/HEAD; echo ../common > wt/commondir\n\
         echo 'gitdir: ../wt' > gf/.git; echo \"$PWD/gf\" > wt/gitdir\n\
         mkfifo .gitattributes .git/objects/info/alternates && echo planted\n",
    )
    .unwrap();
    assert!(
        ends_in_time(&ws, &server, "run `bash p3.sh`"),
        "offcode hung"
    );
    let result = command_output(&server);
    assert!(
        result.contains("cannot create fifo") && !result.contains("planted"),
        "{result}"
    );
    let config = std::fs::read_to_string(ws.root.join("common/config")).unwrap_or_default();
    assert!(!config.contains("fsmonitor"), "{config}");
    for fifo in [".gitattributes", ".git/objects/info/alternates"] {
        let meta = std::fs::symlink_metadata(ws.root.join(fifo));
        assert!(
            !meta.is_ok_and(|meta| meta.file_type().is_fifo()),
            "{fifo} was left a FIFO"
        );
    }
}

/// A session killed before it ran any command leaves nothing in the
/// shared temp dir: the private one is made by the first command, which
/// also tells the reaper to remove it. (Made at start, it was left by
/// every session killed before a command: about 27 a test run.)
#[test]
fn a_session_killed_before_any_command_leaves_no_temp_dir() {
    let server = demo_mock();
    let ws = Workspace::new();
    let shared = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut child = ws
        .offcode(&server.base_url(), &["run", "think, then answer slowly"])
        .env("TMPDIR", shared.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The session's first line: start-up is over, the answer streams for
    // seconds, and no command runs.
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.contains("session"), "{first}");
    signal(&child, Signal::KILL);
    child.wait().unwrap();
    let left: Vec<_> = std::fs::read_dir(shared.path())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    assert!(left.is_empty(), "left in the temp dir: {left:?}");
    // What a session killed with its reaper left an hour ago goes at the
    // next session's first command; a fresh one stays, and so does one of
    // another PID namespace (a container sharing the temp dir), which
    // may be in use however old.
    let dead = 1u64 << 23;
    let ns = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata("/proc/self/ns/pid").unwrap());
    let left_behind = |random: &str, age: u64| {
        let dir = shared.path().join(format!("offcode-{dead}-{random}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("scratch"), "x").unwrap();
        let private = std::os::unix::fs::PermissionsExt::from_mode(0o700);
        std::fs::set_permissions(&dir, private).unwrap();
        let then = std::time::SystemTime::now() - Duration::from_secs(age);
        std::fs::File::open(&dir)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(then))
            .unwrap();
        dir
    };
    let stale = left_behind(&format!("{ns}-00000000000000ab"), 7200);
    let fresh = left_behind(&format!("{ns}-00000000000000cd"), 60);
    let elsewhere = left_behind(&format!("{}-00000000000000ef", ns + 1), 7200);
    // A command still gets its private temp dir, and it is gone after.
    let mut run = ws.offcode(
        &server.base_url(),
        &[
            "run",
            "--yes",
            "run `test -d \"$TMPDIR\" && printenv TMPDIR > made`",
        ],
    );
    run.env("TMPDIR", shared.path());
    let output = crate::support::run(run);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let made = std::fs::read_to_string(ws.root.join("made"))
        .unwrap_or_else(|error| panic!("{error}: {}\n{}", output.stdout, output.stderr));
    assert!(
        made.starts_with(&format!("{}/offcode-", shared.path().display())),
        "{made}"
    );
    assert!(!stale.exists(), "{}", output.stderr);
    assert!(fresh.join("scratch").exists());
    assert!(elsewhere.join("scratch").exists());
    assert_eq!(std::fs::read_dir(shared.path()).unwrap().count(), 2);
}

/// Named pipes where offcode or git open what a command left (`.ignore`,
/// a nested `.gitignore`, a git config): a confined command may not make
/// them in the workspace, nor in its temp dir, which outlives it and could
/// be linked to. (A `.ignore` FIFO hung offcode's walk after the command
/// for ever.)
#[test]
fn a_confined_command_makes_no_named_pipe_in_the_workspace() {
    use std::os::unix::fs::FileTypeExt as _;
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("pipes.sh"),
        "mkdir -p sub; mkfifo .ignore sub/.gitignore\n\
         mkfifo \"$TMPDIR/p\" || echo refused-in-tmp\n",
    )
    .unwrap();
    assert!(
        ends_in_time(&ws, &server, "run `bash pipes.sh`"),
        "offcode hung"
    );
    let result = command_output(&server);
    assert!(result.contains("refused-in-tmp"), "{result}");
    for name in [".ignore", "sub/.gitignore"] {
        let meta = std::fs::symlink_metadata(ws.root.join(name));
        assert!(
            !meta.is_ok_and(|meta| meta.file_type().is_fifo()),
            "{name} is a FIFO: {result}"
        );
    }
}

/// Ignore files that would block the walks after a command when opened:
/// links to a named pipe already on the host, to a pty master, to
/// `/proc/kmsg`, in the workspace and below. The walks move them aside
/// (`.offcode-refused`) instead of waiting on them for ever.
#[test]
fn ignore_files_linked_to_what_blocks_hang_nothing() {
    let server = demo_mock();
    let ws = Workspace::new();
    let host_fifo = ws.home.join("host-fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&host_fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(
        ws.root.join("links.sh"),
        format!(
            "ln -s /dev/ptmx .gitignore; mkdir -p sub deep/er\n\
             ln -s {} sub/.ignore; ln -s /proc/kmsg deep/er/.gitignore; echo linked\n",
            host_fifo.display()
        ),
    )
    .unwrap();
    assert!(
        ends_in_time(&ws, &server, "run `bash links.sh`"),
        "offcode hung"
    );
    assert!(ends_in_time(&ws, &server, "say hello"), "the next run hung");
    for link in [".gitignore", "sub/.ignore", "deep/er/.gitignore"] {
        assert!(
            std::fs::symlink_metadata(ws.root.join(link)).is_err(),
            "{link} was left"
        );
    }
    assert!(ws.root.join("sub/.ignore.offcode-refused").is_symlink());
}
