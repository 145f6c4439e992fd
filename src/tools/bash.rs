//! `bash`: run a command in the workspace, in its own process group, with a
//! timeout, closed stdin and capped output.

use std::fmt::Write as _;

use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{Effect, Error, Tool, ToolContext, ToolOutput};
use crate::confine::after::After;
use crate::protocol::CommandEnd;

/// Seconds a command may run when the model gives no timeout.
const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// The longest timeout a call may ask for.
const MAX_TIMEOUT_SECS: u64 = 600;
/// Variables never passed to commands and MCP servers (the model endpoint's keys).
pub const SECRET_VARIABLES: &[&str] = &["OFFCODE_API_KEY", "DASHSCOPE_API_KEY", "OPENAI_API_KEY"];

/// More variables that hold an endpoint's key, found at start-up
/// ([`hide_variables_holding`]).
static HELD_KEYS: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Every variable never passed to commands and MCP servers: the three
/// above, and those found to hold a configured key.
pub fn secret_variables() -> Vec<String> {
    let found = HELD_KEYS.read().map(|v| v.clone()).unwrap_or_default();
    SECRET_VARIABLES
        .iter()
        .map(|name| (*name).to_owned())
        .chain(found)
        .collect()
}

/// Hides from commands and MCP servers every variable of `vars` whose
/// value is one of `keys` (an endpoint's key however the config reached
/// it: `{env:GPU_KEY}`, a provider's `env`, a key variable).
pub fn hide_variables_holding<'a>(
    keys: &[&str],
    vars: impl IntoIterator<Item = (&'a String, &'a String)>,
) {
    let names: Vec<String> = vars
        .into_iter()
        // Any value holding a key (`http://u:KEY@gpu/v1` too); a short
        // "key" (`1`, `dev`) would hide unrelated variables.
        .filter(|(_, value)| keys.iter().any(|key| key.len() >= 8 && value.contains(key)))
        .map(|(name, _)| name.clone())
        .collect();
    if let Ok(mut held) = HELD_KEYS.write() {
        for name in names {
            if !held.contains(&name) {
                held.push(name);
            }
        }
    }
}
/// Output kept from the start and from the end of a long output.
const KEEP_BYTES: usize = 16 * 1024;

/// The `bash` tool.
pub struct Bash;

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    command: String,
    timeout: Option<u64>,
    #[expect(dead_code, reason = "shown in approval prompts by the front end")]
    description: Option<String>,
    /// Asks to run outside the sandbox; read by the policy, which makes a
    /// person answer, and lifted only through [`ToolContext::unconfined`].
    #[serde(default)]
    #[expect(dead_code, reason = "read by the policy from the raw arguments")]
    unconfined: bool,
}

impl Tool for Bash {
    const NAME: &'static str = "bash";

    const DESCRIPTION: &'static str = "Run a bash command in the workspace.";
    const SUBJECT: Option<&'static str> = Some("command");
    const EFFECT: Effect = Effect::RunsCommands;
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer"},
                "unconfined": {"type": "boolean", "description": "Only after the sandbox refused it; a person approves"}
            },
            "required": ["command"]
        })
    }

    async fn run(&self, arguments: Arguments, context: &ToolContext) -> Result<ToolOutput, Error> {
        let timeout = arguments
            .timeout
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        run_command(&arguments.command, Duration::from_secs(timeout), context).await
    }
}

async fn run_command(
    command: &str,
    timeout: Duration,
    context: &ToolContext,
) -> Result<ToolOutput, Error> {
    // `-C` is `set -o noclobber`: a `>` the gate judged safe (its target
    // did not exist) cannot overwrite a file created since.
    let mut args = vec!["--noprofile", "--norc"];
    if !context.allow_clobber {
        args.push("-C");
    }
    args.extend(["-c", command]);
    let confinement = context.shell.confinement(context.unconfined);
    // Made however the command ends: done, timed out, aborted, or offcode
    // killed during it (by the reaper, or the next start).
    let after = After::start(
        &context.sandbox,
        confinement,
        context.shell.records(),
        &|record| context.running.pending(record),
        &context.late,
    );
    // Declared before the group: dropped after it, once the command has
    // been stopped (an aborted command's layer is never applied).
    let (mut shell, layer) = context
        .shell
        .layered_command("bash", &args, context.unconfined)
        .map_err(|source| Error::Io {
            action: "start bash for",
            path: command.to_owned(),
            source,
        })?;
    for secret in secret_variables() {
        shell.env_remove(secret);
    }
    // Killed with offcode (even by SIGKILL): under confinement the whole
    // PID namespace goes with it.
    crate::confine::die_with_parent(&mut shell);
    // The group is the reaper's before the command can run.
    let announced = context.running.announce(&mut shell);
    if let Some(confinement) = confinement {
        context.running.remove_at_end(confinement.tmp());
    }
    let spawned = tokio::process::Command::from(shell)
        .current_dir(context.sandbox.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(source) => {
            if let Some(announced) = announced {
                announced.failed(&context.running);
            }
            return Err(Error::Io {
                action: "start bash for",
                path: command.to_owned(),
                source,
            });
        }
    };
    // Debug builds only: how the tests keep offcode between the start and
    // `hold` below, where a kill once lost the group to the reaper.
    #[cfg(debug_assertions)]
    if std::env::var_os("OFFCODE_TEST_HOLD_LATE").is_some() {
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    // However this call ends (done, timed out, aborted, or its future
    // dropped by an abort elsewhere), the whole group goes with it.
    let group = context.running.hold(child.id());
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(Error::Aborted);
    };
    let mut output = CappedOutput::default();
    let finished = tokio::select! {
        ended = collect(stdout, stderr, &mut output, &mut child) => Some(ended),
        () = tokio::time::sleep(timeout) => None,
        () = context.cancel.cancelled() => return Err(Error::Aborted),
    };
    // Whatever the command left running in its group goes too; under
    // confinement the helper ends only once nothing of the command is
    // left, so the check sees what the command left. The leader is not
    // reaped yet: until it is, no other process can take its PID, so the
    // group killed by that number is still the command's.
    drop(group);
    let finished = match finished {
        Some(Ended::Exited) => Some(child.wait().await),
        Some(Ended::Reaped(status)) => Some(status),
        None => None,
    };
    let mut text = output.into_text();
    if let Some(layer) = layer {
        // Stopped at its timeout, the helper has been waited for too.
        let helper = match &finished {
            Some(status) => status.as_ref().ok().copied(),
            None => child.wait().await.ok(),
        };
        text.push_str(&land(layer, helper, context).await);
    }
    text.push_str(&after.finish());
    let end = match finished {
        Some(Ok(status)) => match status.code() {
            Some(code) => CommandEnd::Exited { code },
            None => CommandEnd::Signalled,
        },
        Some(Err(error)) => CommandEnd::WaitFailed {
            error: error.to_string(),
        },
        None => CommandEnd::TimedOut {
            after_secs: timeout.as_secs(),
        },
    };
    Ok(ToolOutput::command(text, end))
}

/// Puts what a command changed in its layer onto the workspace, once the
/// helper that ran it has exited: it exits only when nothing of the
/// command is left. A helper killed (past the grace given to a stopped
/// command) may have left a process writing: its layer is not applied.
/// First the files the layer will replace or remove are kept in the
/// step's checkpoint, whatever `.gitignore` or their size say. Off the
/// runtime's threads (a layer may hold thousands of files). What could
/// not be kept or applied, to say.
async fn land(
    layer: crate::confine::layer::Layer,
    helper: Option<std::process::ExitStatus>,
    context: &ToolContext,
) -> String {
    if helper.is_none_or(|status| status.code().is_none()) {
        return "\n[offcode: the command was killed before its changes could be checked; they were not applied]".to_owned();
    }
    let keeper = context.checkpoints.clone();
    let root = context.sandbox.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut text = String::new();
        if let Some(keeper) = keeper {
            let touched = layer.touched();
            if !touched.is_empty() {
                text.push_str(&keeper.keep_before(&touched));
            }
        }
        let applied = layer.apply(&root, &crate::confine::protect::is_protected);
        text.push_str(&crate::confine::layer::report(&applied));
        text
    })
    .await
    .unwrap_or_default()
}

/// How [`collect`] saw the command end.
enum Ended {
    /// It exited and is not reaped yet (its PID, and so its group's ID,
    /// still cannot be another's).
    Exited,
    /// Reaped already (no pidfds here): its status, or why it is not known.
    Reaped(std::io::Result<std::process::ExitStatus>),
}

/// Reads both pipes until they close and the command exits. A command that
/// leaves a background process holding the pipes gets 200 ms after its exit.
/// Where pidfds work, the exit is seen on the command's pidfd and the
/// command is left for the caller to reap after its group is stopped.
async fn collect(
    mut stdout: impl AsyncRead + Unpin,
    mut stderr: impl AsyncRead + Unpin,
    output: &mut CappedOutput,
    child: &mut tokio::process::Child,
) -> Ended {
    let mut out_buffer = vec![0; 8192];
    let mut err_buffer = vec![0; 8192];
    let (mut out_open, mut err_open) = (true, true);
    let exit = child.id().and_then(crate::confine::watch_exit);
    let mut status = None;
    let mut deadline = None;
    while out_open || err_open {
        let grace = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            read = stdout.read(&mut out_buffer), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => output.push(&out_buffer[..n]),
            },
            read = stderr.read(&mut err_buffer), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => output.push(&err_buffer[..n]),
            },
            ended = exited(exit.as_ref(), child), if status.is_none() => {
                status = Some(ended);
                deadline = Some(tokio::time::Instant::now() + Duration::from_millis(200));
            }
            () = grace => break,
        }
    }
    match status {
        Some(ended) => ended,
        None => exited(exit.as_ref(), child).await,
    }
}

/// Waits for `child` to exit: on its pidfd `exit` when there is one (it
/// is not reaped), else by reaping it.
async fn exited(
    exit: Option<&tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
    child: &mut tokio::process::Child,
) -> Ended {
    if let Some(exit) = exit
        && exit.readable().await.is_ok()
    {
        return Ended::Exited;
    }
    Ended::Reaped(child.wait().await)
}

/// Keeps the first and last [`KEEP_BYTES`] of an output and counts the rest.
#[derive(Debug, Default)]
struct CappedOutput {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: usize,
}

impl CappedOutput {
    fn push(&mut self, mut bytes: &[u8]) {
        let room = KEEP_BYTES.saturating_sub(self.head.len());
        let (first, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(first);
        bytes = rest;
        self.tail.extend(bytes);
        if self.tail.len() > KEEP_BYTES {
            let excess = self.tail.len() - KEEP_BYTES;
            self.tail.drain(..excess);
            self.dropped += excess;
        }
    }

    fn into_text(self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            let _ = writeln!(text, "\n[... {} bytes truncated ...]", self.dropped);
        }
        let tail: Vec<u8> = self.tail.into();
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::Cancel;
    use pretty_assertions::assert_eq;

    fn context(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext {
            sandbox: std::sync::Arc::new(crate::sandbox::Sandbox::new(dir.path()).unwrap()),
            cancel: Cancel::default(),
            allow_clobber: false,
            shell: std::sync::Arc::new(crate::confine::Shell::unconfined(
                crate::confine::Status::Off,
            )),
            unconfined: false,
            running: std::sync::Arc::default(),
            late: std::sync::Arc::default(),
            checkpoints: None,
        }
    }

    #[tokio::test]
    async fn runs_in_the_root_with_exit_code_and_closed_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let output = run_command(
            "pwd; cat; echo err >&2; exit 3",
            Duration::from_secs(10),
            &context(&dir),
        )
        .await
        .unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert!(!output.ok);
        // stdout and stderr are two pipes, read as they come: which is read
        // first is the scheduler's (at 8 test threads, `err` came first).
        let (lines, end) = output.output.rsplit_once("\n\n").unwrap();
        let mut lines: Vec<&str> = lines.lines().collect();
        lines.sort_unstable();
        let root = root.display().to_string();
        let mut expected = vec![root.as_str(), "err"];
        expected.sort_unstable();
        assert_eq!(lines, expected);
        assert_eq!(end, "[exit code: 3]");
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let output = run_command(&command, Duration::from_secs(1), &context(&dir))
            .await
            .unwrap();
        assert!(
            output.output.ends_with("[killed: timed out after 1 s]"),
            "{}",
            output.output
        );
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(
            !marker.exists(),
            "the background child was killed with its group"
        );
    }

    #[tokio::test]
    async fn cancel_kills_promptly() {
        let dir = tempfile::tempdir().unwrap();
        let context = context(&dir);
        let cancel = context.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        // Ending before the command would is the proof it was killed.
        let result = tokio::time::timeout(
            Duration::from_secs(20),
            run_command("sleep 30", Duration::from_mins(1), &context),
        )
        .await
        .expect("the command outlived its cancel");
        assert!(matches!(result, Err(Error::Aborted)));
    }

    #[tokio::test]
    async fn a_dropped_call_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let context = context(&dir);
        // An abort that wins the race elsewhere drops the call's future.
        let call =
            tokio::spawn(
                async move { run_command(&command, Duration::from_mins(1), &context).await },
            );
        tokio::time::sleep(Duration::from_millis(300)).await;
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "the background child outlived the call");
    }

    #[test]
    fn leaving_kills_commands_still_running() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let context = context(&dir);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut call = Box::pin(run_command(&command, Duration::from_mins(1), &context));
        runtime.block_on(async {
            tokio::select! {
                _ = &mut call => panic!("the command ended early"),
                () = tokio::time::sleep(Duration::from_millis(300)) => {}
            }
        });
        // Like a task left behind when offcode leaves: never dropped. This
        // test's own commands are killed, not its neighbours'.
        std::mem::forget(call);
        context.running.kill_all();
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the background child outlived offcode");
    }

    #[tokio::test]
    async fn background_process_holding_the_pipe_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        // Ending before the background `sleep` would is the proof that
        // its open pipe was not waited for.
        let output = tokio::time::timeout(
            Duration::from_secs(20),
            run_command(
                "sleep 30 & echo started",
                Duration::from_mins(1),
                &context(&dir),
            ),
        )
        .await
        .expect("the call waited for the background process")
        .unwrap();
        assert_eq!(output.output, "started\n\n[exit code: 0]");
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let mut output = CappedOutput::default();
        output.push(&vec![b'a'; KEEP_BYTES]);
        output.push(&[b'b'; 100]);
        output.push(&vec![b'c'; KEEP_BYTES]);
        let text = output.into_text();
        assert!(text.starts_with(&"a".repeat(KEEP_BYTES)));
        assert!(text.contains("\n[... 100 bytes truncated ...]\n"));
        assert!(text.ends_with(&"c".repeat(KEEP_BYTES)));
    }
}
