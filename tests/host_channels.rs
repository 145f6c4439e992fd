//! The host's shared channels that are not files, as an outside tester
//! used them from a confined command: System V shared memory, semaphores
//! and message queues, the kernel's keyrings, and file descriptors offcode
//! itself was started with. Each test sets up the host's side, runs the
//! attack, and checks the host's side afterwards, with and without
//! namespaces (the Landlock-only fallback).

use std::fmt::Write as _;
use std::process::Command;

use serde_json::json;

use crate::confine::{helper, sandbox_box, spec};
use crate::support::{Workspace, chunks, mock, run, sse, tool_results};

/// A key no other test or program uses: this test's and the process's.
fn key(n: i32) -> i32 {
    let pid = i32::try_from(std::process::id()).unwrap();
    0x0ff0_0000 | ((pid & 0xffff) << 4) | n
}

/// The host's System V objects, made by this process before the attack
/// and removed when dropped.
struct HostIpc {
    memory: i32,
    address: *mut libc::c_void,
    semaphores: i32,
    queue_key: i32,
}

impl HostIpc {
    #[allow(unsafe_code, reason = "the test plays the host's program")]
    fn new(base: i32) -> Self {
        // SAFETY: plain System V calls on objects this test owns; the
        // segment is 4 KiB and only its first bytes are written.
        unsafe {
            let memory = libc::shmget(key(base), 4096, libc::IPC_CREAT | 0o600);
            assert!(memory >= 0, "{}", std::io::Error::last_os_error());
            let address = libc::shmat(memory, std::ptr::null(), 0);
            assert_ne!(address as isize, -1);
            std::ptr::copy_nonoverlapping(b"precious".as_ptr(), address.cast(), 8);
            let semaphores = libc::semget(key(base + 1), 1, libc::IPC_CREAT | 0o600);
            assert!(semaphores >= 0, "{}", std::io::Error::last_os_error());
            Self {
                memory,
                address,
                semaphores,
                queue_key: key(base + 2),
            }
        }
    }

    #[allow(unsafe_code, reason = "the test plays the host's program")]
    fn memory(&self) -> Vec<u8> {
        // SAFETY: the segment stays attached while `self` lives.
        unsafe { std::slice::from_raw_parts(self.address.cast::<u8>(), 8).to_vec() }
    }

    #[allow(unsafe_code, reason = "the test plays the host's program")]
    fn semaphores_exist(&self) -> bool {
        // SAFETY: IPC_STAT of a set with one semaphore, into a zeroed struct.
        unsafe {
            let mut stat: libc::semid_ds = std::mem::zeroed();
            libc::semctl(self.semaphores, 0, libc::IPC_STAT, &raw mut stat) == 0
        }
    }

    #[allow(unsafe_code, reason = "the test plays the host's program")]
    fn queue(&self) -> Option<i32> {
        // SAFETY: a lookup by key; it creates nothing.
        let id = unsafe { libc::msgget(self.queue_key, 0) };
        (id >= 0).then_some(id)
    }

    /// The attack: overwrite the segment, remove the semaphores, leave a
    /// queue behind.
    fn attack(base: i32) -> String {
        format!(
            "python3 -c '
import ctypes
l = ctypes.CDLL(None, use_errno=True)
l.shmat.restype = ctypes.c_void_p
m = l.shmget({m}, 0, 0)
print(\"memory\", m)
if m >= 0:
    a = l.shmat(m, None, 0)
    if a not in (None, 2**64 - 1):
        ctypes.memmove(a, b\"OVERWRITE\", 8)
s = l.semget({s}, 0, 0)
print(\"semaphores\", s, l.semctl(s, 0, 0) if s >= 0 else -1)
print(\"queue\", l.msgget({q}, 0o1600))
own = l.shmget(0, 4096, 0o1600)
print(\"own memory\", own)
'",
            m = key(base),
            s = key(base + 1),
            q = key(base + 2),
        )
    }
}

impl Drop for HostIpc {
    #[allow(unsafe_code, reason = "the test plays the host's program")]
    fn drop(&mut self) {
        // SAFETY: removes what `new` made (and a queue the attack left).
        unsafe {
            libc::shmdt(self.address);
            libc::shmctl(self.memory, libc::IPC_RMID, std::ptr::null_mut());
            libc::semctl(self.semaphores, 0, libc::IPC_RMID);
            if let Some(queue) = self.queue() {
                libc::msgctl(queue, libc::IPC_RMID, std::ptr::null_mut());
            }
        }
    }
}

#[test]
fn a_command_reaches_none_of_the_hosts_system_v_ipc() {
    for (base, namespaces) in [(0, true), (4, false)] {
        let host = HostIpc::new(base);
        let jail = sandbox_box();
        let spec = offcode::confine::Spec {
            namespaces,
            ..spec(&jail.root)
        };
        let output = helper(&spec, &HostIpc::attack(base), &jail.root);
        let text = format!(
            "namespaces {namespaces}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(text.contains("queue"), "the attack did not run: {text}");
        assert_eq!(host.memory(), b"precious", "{text}");
        assert!(host.semaphores_exist(), "{text}");
        assert_eq!(host.queue(), None, "{text}");
        // In its own IPC namespace a test suite keeps System V memory of
        // its own (PostgreSQL's, say).
        if namespaces {
            assert!(!text.contains("own memory -1"), "{text}");
        }
    }
}

/// A key in the host user's keyring, revoked when dropped.
struct HostKey(i64);

const KEYCTL_READ: i64 = 11;
const KEYCTL_SEARCH: i64 = 10;
const KEYCTL_REVOKE: i64 = 3;
const USER_KEYRING: i64 = -4;

impl HostKey {
    #[allow(unsafe_code, reason = "the test plays the host's program")]
    fn add(description: &str, payload: &str) -> Self {
        let description = std::ffi::CString::new(description).unwrap();
        // SAFETY: add_key with NUL-terminated strings and a payload whose
        // length is passed; all outlive the call.
        let id = unsafe {
            libc::syscall(
                libc::SYS_add_key,
                c"user".as_ptr(),
                description.as_ptr(),
                payload.as_ptr(),
                payload.len(),
                USER_KEYRING,
            )
        };
        assert!(id > 0, "{}", std::io::Error::last_os_error());
        Self(id)
    }

    #[allow(unsafe_code, reason = "the test plays the host's program")]
    fn find(description: &str) -> Option<Self> {
        let description = std::ffi::CString::new(description).unwrap();
        // SAFETY: a search by NUL-terminated strings that outlive the call.
        let id = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_SEARCH,
                USER_KEYRING,
                c"user".as_ptr(),
                description.as_ptr(),
                0,
            )
        };
        (id > 0).then_some(Self(id))
    }
}

impl Drop for HostKey {
    #[allow(unsafe_code, reason = "the test plays the host's program")]
    fn drop(&mut self) {
        // SAFETY: revokes the key this test made.
        unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_REVOKE, self.0) };
    }
}

#[test]
fn a_command_can_neither_read_the_persons_keys_nor_leave_one() {
    for namespaces in [true, false] {
        let pid = std::process::id();
        let secret = format!("offcode-secret-{pid}-{namespaces}");
        let planted = format!("offcode-planted-{pid}-{namespaces}");
        let _key = HostKey::add(&secret, "KEY-PAYLOAD-8472");
        let jail = sandbox_box();
        let spec = offcode::confine::Spec {
            namespaces,
            ..spec(&jail.root)
        };
        let attack = format!(
            "cat /proc/keys; python3 -c '
import ctypes
l = ctypes.CDLL(None, use_errno=True)
k = l.syscall({search}, {search_op}, {ring}, b\"user\", b\"{secret}\", 0)
b = ctypes.create_string_buffer(64)
print(\"found\", k, \"read\", l.syscall({search}, {read}, k, b, 64), b.value)
print(\"added\", l.syscall({add}, b\"user\", b\"{planted}\", b\"x\", 1, {ring}))
'",
            search = libc::SYS_keyctl,
            search_op = KEYCTL_SEARCH,
            read = KEYCTL_READ,
            add = libc::SYS_add_key,
            ring = USER_KEYRING,
        );
        let output = helper(&spec, &attack, &jail.root);
        let text = format!(
            "namespaces {namespaces}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(text.contains("added"), "the attack did not run: {text}");
        assert!(!text.contains("KEY-PAYLOAD-8472"), "{text}");
        // Where the PID namespace's own /proc is mounted, the list of the
        // person's keys is covered too.
        if namespaces {
            assert!(!text.contains(&secret), "{text}");
        }
        assert!(HostKey::find(&planted).is_none(), "{text}");
    }
}

/// `command` run by bash with `redirections` applied first, as a shell
/// starts a program with `7>>file`.
fn started_with(command: &Command, redirections: &str) -> Command {
    let mut wrapped = Command::new("bash");
    wrapped
        .arg("-c")
        .arg(format!("{redirections} exec \"$@\""))
        .arg("bash")
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(name, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

#[test]
fn files_offcode_was_started_with_reach_no_command() {
    for config in [None, Some(r#"{ "sandbox": "off" }"#)] {
        let ws = Workspace::new();
        if let Some(config) = config {
            std::fs::write(ws.home.join(".config/offcode/offcode.jsonc"), config).unwrap();
        }
        let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let victim = outside.path().join("victim");
        let secret = outside.path().join("secret");
        std::fs::write(&victim, "precious").unwrap();
        std::fs::write(&secret, "SECRET-3141").unwrap();
        let server = mock();
        server.push(sse(&chunks::tool_answer(
            "",
            &[(
                "f1",
                "bash",
                json!({"command": "echo pwned >&7; cat <&8; echo done"}),
            )],
        )));
        server.push(sse(&chunks::text_answer("Done.")));
        let offcode = ws.offcode(
            &server.base_url(),
            &[
                "run",
                "--yes",
                "--model",
                "mock-model",
                "use the descriptors",
            ],
        );
        let redirections = format!("exec 7>>'{}' 8<'{}';", victim.display(), secret.display());
        let output = run(started_with(&offcode, &redirections));
        assert_eq!(output.code, 0, "{config:?}: {}", output.stderr);
        let result = tool_results(&server.chat_bodies()[1]).join("\n");
        assert!(result.contains("done"), "{config:?}: {result}");
        assert!(!result.contains("SECRET-3141"), "{config:?}: {result}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious",
            "{config:?}: {result}"
        );
    }
}

#[test]
fn no_command_reaches_a_daemon_listening_at_a_path_outside_the_hidden_places() {
    // A daemon's socket in a plain folder of the home, in the workspace,
    // and beside it (as `/var/snap/lxd/common/lxd/unix.socket` or the Nix
    // daemon's would be): none is in a place offcode hides whole.
    let ws = Workspace::new();
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::create_dir_all(ws.home.join("proj")).unwrap();
    let places = [
        ws.home.join("proj/dev.sock"),
        ws.root.join("app.sock"),
        outside.path().join("daemon.sock"),
    ];
    let listeners: Vec<std::os::unix::net::UnixListener> = places
        .iter()
        .map(|path| {
            let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
            listener.set_nonblocking(true).unwrap();
            listener
        })
        .collect();
    let mut script = String::from("python3 -c '\nimport socket\n");
    for path in &places {
        let _ = write!(
            script,
            "s = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(\"{}\"); s.send(b\"x\"); print(\"reached\")\nexcept OSError as e:\n    print(\"refused\", e)\n",
            path.display()
        );
    }
    script.push_str("'\n");
    std::fs::write(ws.root.join("s.sh"), script).unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("u1", "bash", json!({"command": "bash s.sh"}))],
    )));
    server.push(sse(&chunks::text_answer("Done.")));
    let output = run(ws.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "mock-model", "reach the daemons"],
    ));
    assert_eq!(output.code, 0, "{}", output.stderr);
    let result = tool_results(&server.chat_bodies()[1]).join("\n");
    let refused = result.lines().filter(|line| line.starts_with("refused"));
    assert_eq!(refused.count(), 3, "{result}");
    for (listener, path) in listeners.iter().zip(&places) {
        let accepted = listener.accept();
        assert!(
            accepted.is_err(),
            "{} was reached: {result}",
            path.display()
        );
    }
}
