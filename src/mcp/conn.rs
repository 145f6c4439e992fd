//! One MCP server process and the JSON-RPC 2.0 conversation with it: one
//! JSON object per line on its stdin and stdout (the stdio transport).
//!
//! A reader task sorts what the server writes: answers go to the request
//! waiting for them, the server's own requests are answered (`ping`; any
//! other method is not offered), notifications go to the owner, and a line
//! that is not JSON is counted and skipped, never fatal. When the output
//! ends, every waiting request fails with the reason (its exit status and
//! the end of what it wrote to stderr).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot, watch};

use super::wire::{ErrorObject, Incoming, Notice, Reply, Request};
use crate::cancel::Cancel;

/// A line longer than this is skipped as garbage (a result of several MB
/// fits; a server that never ends its line does not eat the memory).
const LONGEST_LINE: usize = 64 * 1024 * 1024;
/// What is kept of the server's stderr, for the reason it stopped.
const STDERR_TAIL: usize = 2_048;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RpcError {
    /// The server answered with an error.
    #[error("{message} (error {code})")]
    Server {
        /// JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The server stopped (or could not be written to) before answering.
    #[error("{0}")]
    Closed(String),
    /// No answer in time.
    #[error("no answer in {0:.1} s")]
    Timeout(f64),
    /// The user stopped the call.
    #[error("aborted by the user")]
    Cancelled,
}

/// A notification from the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// Its method, e.g. `notifications/tools/list_changed`.
    pub method: String,
    /// Its params.
    pub params: Value,
}

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// A running server process.
#[derive(Debug)]
pub struct Connection {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    waiting: Waiting,
    next_id: AtomicU64,
    /// Its process group (the process's own id), killed with it.
    group: crate::groups::Group,
    /// Set once its output has ended, with the reason.
    closed: watch::Receiver<Option<String>>,
    /// Lines of its output that were not JSON-RPC.
    garbage: Arc<AtomicUsize>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Connection {
    /// Starts `command` (its own process group, pipes on stdio) and the
    /// tasks that read it; its notifications go to `notes`.
    pub fn spawn(
        mut command: std::process::Command,
        notes: mpsc::UnboundedSender<Notification>,
    ) -> std::io::Result<Arc<Self>> {
        let running = crate::groups::Running::global();
        // The group is the reaper's before the server can run.
        let announced = running.announce(&mut command);
        let spawned = tokio::process::Command::from(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(error) => {
                if let Some(announced) = announced {
                    announced.failed(&running);
                }
                return Err(error);
            }
        };
        let group = running.hold(child.id());
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("no pipes to the server"));
        };
        let tail = Arc::new(Mutex::new(String::new()));
        tokio::spawn(keep_tail(stderr, Arc::clone(&tail)));
        let (closed_sender, closed) = watch::channel(None);
        let connection = Arc::new(Self {
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            waiting: Arc::default(),
            next_id: AtomicU64::new(1),
            group,
            closed,
            garbage: Arc::default(),
        });
        let reader = Reader {
            waiting: Arc::clone(&connection.waiting),
            garbage: Arc::clone(&connection.garbage),
            replies: Arc::downgrade(&connection),
            notes,
        };
        tokio::spawn(async move {
            reader.read(stdout).await;
            let reason = ended(child, &tail).await;
            for (_, sender) in lock(&reader.waiting).drain() {
                let _ = sender.send(Err(RpcError::Closed(reason.clone())));
            }
            let _ = closed_sender.send(Some(reason));
        });
        Ok(connection)
    }

    /// Why it stopped, once it has.
    pub fn closed(&self) -> Option<String> {
        self.closed.borrow().clone()
    }

    /// Waits until it stops; the reason.
    pub async fn wait_closed(&self) -> String {
        let mut closed = self.closed.clone();
        loop {
            if let Some(reason) = closed.borrow_and_update().clone() {
                return reason;
            }
            if closed.changed().await.is_err() {
                return "it stopped".to_owned();
            }
        }
    }

    /// Lines of its output that were not JSON-RPC so far.
    pub fn garbage(&self) -> usize {
        self.garbage.load(Ordering::Relaxed)
    }

    /// Sends `method` and waits for its result, at most `timeout`, or
    /// until `cancel` fires; a request given up is cancelled at the server.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: Option<&Cancel>,
    ) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        lock(&self.waiting).insert(id, sender);
        let message = Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        if let Err(error) = self.send(&message).await {
            lock(&self.waiting).remove(&id);
            return Err(error);
        }
        let cancelled = async {
            match cancel {
                Some(cancel) => cancel.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let given_up = tokio::select! {
            answer = receiver => {
                return answer.unwrap_or_else(|_| Err(RpcError::Closed("it stopped".to_owned())));
            }
            () = tokio::time::sleep(timeout) => RpcError::Timeout(timeout.as_secs_f64()),
            () = cancelled => RpcError::Cancelled,
        };
        lock(&self.waiting).remove(&id);
        let reason = given_up.to_string();
        let _ = self
            .notify(
                "notifications/cancelled",
                json!({"requestId": id, "reason": reason}),
            )
            .await;
        Err(given_up)
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        self.send(&Notice {
            jsonrpc: "2.0",
            method,
            params,
        })
        .await
    }

    async fn send(&self, message: &impl serde::Serialize) -> Result<(), RpcError> {
        let Ok(mut line) = serde_json::to_string(message) else {
            return Err(RpcError::Closed(
                "a message could not be written".to_owned(),
            ));
        };
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(RpcError::Closed("it is being stopped".to_owned()));
        };
        let written = async {
            pipe.write_all(line.as_bytes()).await?;
            pipe.flush().await
        };
        let Err(error) = written.await else {
            return Ok(());
        };
        drop(stdin);
        // It has most likely just exited: its exit status and last words
        // say more than the broken pipe.
        let reason = tokio::time::timeout(Duration::from_secs(1), self.wait_closed())
            .await
            .unwrap_or_else(|_| format!("writing to it failed: {error}"));
        Err(RpcError::Closed(reason))
    }

    /// Stops it: its input is closed (a server exits on that), then its
    /// whole process group is sent SIGTERM, and SIGKILL after `grace`.
    pub async fn stop(&self, grace: Duration) {
        drop(self.stdin.lock().await.take());
        if tokio::time::timeout(grace / 2, self.wait_closed())
            .await
            .is_err()
        {
            self.signal(rustix::process::Signal::TERM);
            let _ = tokio::time::timeout(grace / 2, self.wait_closed()).await;
        }
        self.signal(rustix::process::Signal::KILL);
    }

    fn signal(&self, signal: rustix::process::Signal) {
        self.group.signal(signal);
    }
}

/// The reader's side: where answers and notifications go.
struct Reader {
    waiting: Waiting,
    garbage: Arc<AtomicUsize>,
    /// For answering the server's own requests.
    replies: std::sync::Weak<Connection>,
    notes: mpsc::UnboundedSender<Notification>,
}

impl Reader {
    async fn read(&self, stdout: ChildStdout) {
        let mut lines = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut lines, &mut line).await {
                Ok(Line::End) | Err(_) => return,
                Ok(Line::TooLong) => {
                    self.garbage.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Line::Whole) => self.take(&line).await,
            }
        }
    }

    async fn take(&self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Some(message) = Incoming::parse(line) else {
            self.garbage.fetch_add(1, Ordering::Relaxed);
            return;
        };
        match message {
            Incoming::Request { id, method } => self.answer(&method, id).await,
            Incoming::Notification { method, params } => {
                let _ = self.notes.send(Notification { method, params });
            }
            Incoming::Answer { id, result } => {
                let sender = id.and_then(|id| lock(&self.waiting).remove(&id));
                let Some(sender) = sender else {
                    // An answer to nothing asked (or asked and given up).
                    return;
                };
                let answer = result.map_err(|error| RpcError::Server {
                    code: error.code,
                    message: if error.message.is_empty() {
                        "an error without a message".to_owned()
                    } else {
                        error.message
                    },
                });
                let _ = sender.send(answer);
            }
        }
    }

    /// Answers the server's own request: `ping`; nothing else is offered
    /// (no roots, no sampling, no elicitation).
    async fn answer(&self, method: &str, id: Value) {
        let Some(connection) = self.replies.upgrade() else {
            return;
        };
        let (result, error) = if method == "ping" {
            (Some(json!({})), None)
        } else {
            let error = ErrorObject {
                code: -32601,
                message: format!("offcode does not offer {method}"),
            };
            (None, Some(error))
        };
        let reply = Reply {
            jsonrpc: "2.0",
            id,
            result,
            error,
        };
        // Not awaited in the reader's own loop for long: a full pipe means
        // the server is not reading, and then it is stopping anyway.
        let _ = tokio::time::timeout(Duration::from_secs(5), connection.send(&reply)).await;
    }
}

enum Line {
    Whole,
    TooLong,
    End,
}

/// Reads one line (without its end) into `line`, giving up on it past
/// [`LONGEST_LINE`] (the rest of it is read and dropped).
async fn read_line(
    reader: &mut BufReader<ChildStdout>,
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(if line.is_empty() && !too_long {
                Line::End
            } else if too_long {
                Line::TooLong
            } else {
                Line::Whole
            });
        }
        let (part, found) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (&buffer[..at], Some(at + 1)),
            None => (buffer, None),
        };
        if !too_long {
            if line.len() + part.len() > LONGEST_LINE {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(part);
            }
        }
        let used = found.unwrap_or(buffer.len());
        reader.consume(used);
        if found.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Whole });
        }
    }
}

/// Keeps the last [`STDERR_TAIL`] bytes the server writes to stderr.
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut buffer = vec![0; 4_096];
    while let Ok(read) = stderr.read(&mut buffer).await {
        if read == 0 {
            return;
        }
        let mut tail = lock(&tail);
        tail.push_str(&String::from_utf8_lossy(&buffer[..read]));
        if tail.len() > STDERR_TAIL {
            let mut cut = tail.len() - STDERR_TAIL;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
    }
}

/// Why the server's output ended: its exit status (waited for briefly)
/// and the last line of its stderr.
async fn ended(mut child: Child, tail: &Mutex<String>) -> String {
    let status = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
    let mut reason = match status {
        Ok(Ok(status)) => match status.code() {
            Some(code) => format!("it exited with status {code}"),
            None => "it was killed by a signal".to_owned(),
        },
        _ => "it closed its output".to_owned(),
    };
    // Let the stderr reader catch up with the last words.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let tail = lock(tail).clone();
    if let Some(last) = tail.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        let last: String = last.chars().take(300).collect();
        let _ = write!(reason, " (stderr: {last})");
    }
    reason
}
