//! Shared test helpers: the mock server, temporary workspaces and a config
//! with fast retries.
#![allow(dead_code)]

#[path = "mock_server/chunks.rs"]
pub mod chunks;
#[path = "mock_server/demo.rs"]
pub mod demo;
#[path = "mock_server/server.rs"]
pub mod server;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use server::{End, MockServer, Reply};

/// A mock that answers 500 to anything not queued.
pub fn mock() -> MockServer {
    MockServer::start(Arc::new(server::unscripted))
}

/// A mock running the demo model.
pub fn demo_mock() -> MockServer {
    MockServer::start(Arc::new(demo::respond))
}

/// A config pointing at `base_url` with fast retries and short timeouts.
pub fn fast_config(base_url: &str) -> offcode::config::Config {
    let mut config = offcode::config::Config {
        base_url: base_url.to_owned(),
        model: Some("mock-model".to_owned()),
        ..Default::default()
    };
    config.retry.initial_delay_ms = 10;
    config.retry.max_delay_ms = 40;
    config.retry.max_retries = 2;
    config.timeouts.idle_ms = 5_000;
    config
}

/// The content of the first tool result a chat request carried.
pub fn first_tool_result(body: &serde_json::Value) -> String {
    tool_results(body).into_iter().next().unwrap()
}

/// Every tool result a chat request carried, in order.
pub fn tool_results(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Processes whose command line mentions `marker` (a server's log path).
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// Kills every process whose command line holds `marker` (what a test
/// started and found alive), so that nothing of it outlives the test.
pub fn kill_with(marker: &str) {
    for process in processes_with(marker) {
        let pid = process.split(':').next().and_then(|p| p.parse().ok());
        if let Some(pid) = pid.and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// The `(offcode)` notes a chat request carried.
pub fn notes(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("(offcode)"))
        .map(str::to_owned)
        .collect()
}

/// The tool names a chat request offered.
pub fn offered(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The system message of a chat request.
pub fn system_prompt(body: &serde_json::Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

/// Concatenated SSE events, as one reply.
pub fn sse(events: &[String]) -> Reply {
    Reply::sse(events.concat().into_bytes())
}

/// A temporary home directory and project directory.
pub struct Workspace {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub root: PathBuf,
}

impl Workspace {
    /// Runs `git ARGS` in the workspace as the person would (their home,
    /// an identity for commits); fails the test if git fails.
    pub fn git(&self, args: &[&str]) {
        let done = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .output()
            .unwrap();
        assert!(done.status.success(), "git {args:?}: {done:?}");
    }

    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let root = dir.path().join("project");
        std::fs::create_dir_all(home.join(".config/offcode")).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            home.join(".config/offcode/offcode.jsonc"),
            "{\n  // fast retries for tests\n  retry: { initial_delay_ms: 10, max_delay_ms: 40, max_retries: 2 },\n}\n",
        )
        .unwrap();
        Self {
            _dir: dir,
            home,
            root,
        }
    }

    /// `offcode ARGS` in the project with a clean environment.
    pub fn offcode(&self, base_url: &str, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_offcode"));
        command
            .args(args)
            .current_dir(&self.root)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("OFFCODE_BASE_URL", base_url)
            .env("OFFCODE_MANAGED_POLICY", self.managed_policy())
            .env("OFFCODE_TEST_SYSTEM_POLICY", self.system_policy());
        command
    }

    /// `offcode run FLAGS --model mock-model PROMPT` against `base_url`.
    pub fn run_task(&self, base_url: &str, flags: &[&str], prompt: &str) -> Output {
        let mut args = vec!["run"];
        args.extend_from_slice(flags);
        args.extend(["--model", "mock-model", prompt]);
        run(self.offcode(base_url, &args))
    }

    /// The environment [`Workspace::offcode`] gives the binary, for code
    /// that runs offcode's start-up in this process.
    pub fn environment(&self, base_url: &str) -> offcode::config::Environment {
        let vars = [
            ("HOME", self.home.display().to_string()),
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("OFFCODE_BASE_URL", base_url.to_owned()),
            (
                "OFFCODE_MANAGED_POLICY",
                self.managed_policy().display().to_string(),
            ),
            (
                "OFFCODE_TEST_SYSTEM_POLICY",
                self.system_policy().display().to_string(),
            ),
        ];
        offcode::config::Environment {
            vars: vars.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            cwd: self.root.clone(),
        }
    }

    /// What stands in for `/etc/offcode/policy.jsonc` (debug builds only):
    /// absent unless a test writes it, so the machine's own file never
    /// leaks in.
    pub fn system_policy(&self) -> PathBuf {
        self.home.join("system-policy.jsonc")
    }

    /// The managed file `OFFCODE_MANAGED_POLICY` adds: absent unless a test
    /// writes it.
    pub fn managed_policy(&self) -> PathBuf {
        self.home.join("managed-policy.jsonc")
    }

    /// The session files written so far.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let dir = self.home.join(".local/share/offcode/sessions");
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        files
    }
}

/// Waits up to `limit` for `condition`.
#[must_use = "a wait that times out must fail the test"]
pub fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    condition()
}

/// Output of a finished command as text.
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(mut command: impl std::borrow::BorrowMut<Command>) -> Output {
    let command = command.borrow_mut();
    let output = command.output().unwrap();
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `command` with `input` written to its standard input.
pub fn run_with_stdin(mut command: impl std::borrow::BorrowMut<Command>, input: &str) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = command
        .borrow_mut()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Commands in `root` confined as a session confines them, by the built
/// `offcode` binary acting as the helper.
pub fn confined_shell(root: &std::path::Path) -> std::sync::Arc<offcode::confine::Shell> {
    std::sync::Arc::new(offcode::confine::Shell::new(
        env!("CARGO_BIN_EXE_offcode").into(),
        root,
        &offcode::config::SandboxConfig::default(),
        None,
    ))
}

/// The core's answer to submission `id` (events of others are skipped),
/// within 10 s.
pub async fn answer_to(
    handle: &mut offcode::agent::AgentHandle,
    id: u64,
) -> offcode::protocol::EventMsg {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), handle.events.recv())
            .await
            .expect("an answer within 10 s")
            .expect("the core is running");
        if event.id == id {
            return event.msg;
        }
    }
}

/// Opens session `id` once its lock is free. The lock goes with the file's
/// last descriptor: a process another test forks at the moment the core
/// lets go holds a copy until its exec closes it (at 8 test threads the
/// open failed with `InUse`).
pub async fn open_when_free(
    store: &offcode::session::Store,
    id: &str,
) -> offcode::session::Session {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match store.open(id) {
            Err(offcode::session::Error::InUse { .. }) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            opened => return opened.unwrap(),
        }
    }
}

/// A local port that refuses connections for as long as the socket lives:
/// bound and never listened on, so no other test's server can take it (a
/// port bound and let go again was taken by one at 8 test threads).
pub fn refusing_port() -> (std::os::fd::OwnedFd, u16) {
    let held = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::STREAM,
        None,
    )
    .unwrap();
    rustix::net::bind(&held, &std::net::SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let address: std::net::SocketAddr =
        rustix::net::getsockname(&held).unwrap().try_into().unwrap();
    (held, address.port())
}
