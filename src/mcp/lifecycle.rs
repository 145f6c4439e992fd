//! Starting a server, watching it, and starting it again after a crash:
//! one start at a time per server, its tools listed page by page.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::conn::{Connection, Notification};
use super::wire::{InitializeResult, ToolsPage};
use super::{CRASH_WINDOW, MOST_RESTARTS, Mcp, RemoteTool, STOP_GRACE, VERSIONS, lock};
use crate::protocol::McpState;
use std::sync::atomic::Ordering;

impl Mcp {
    /// The server's running connection, started (or restarted) first when
    /// it is not running; the reason when it cannot be.
    pub(super) async fn ensure(self: &Arc<Self>, index: usize) -> Result<Arc<Connection>, String> {
        let server = Arc::clone(&self.servers[index]);
        let _starting = server.starting.lock().await;
        {
            let mut inner = lock(&server.inner);
            match inner.state {
                McpState::Disabled | McpState::Unsupported | McpState::Failed => {
                    return Err(inner.detail.clone());
                }
                McpState::Stopped => return Err("offcode is stopping it".to_owned()),
                _ => {}
            }
            if let Some(connection) = inner.connection.clone()
                && connection.closed().is_none()
            {
                if inner.state != McpState::Ready {
                    // Started again by a call while a restart waited.
                    let tools = inner.tools.len();
                    drop(inner);
                    self.set(index, McpState::Ready, &format!("{tools} tools"));
                }
                return Ok(connection);
            }
            let now = Instant::now();
            inner
                .starts
                .retain(|at| now.duration_since(*at) < CRASH_WINDOW);
            if inner.starts.len() > MOST_RESTARTS {
                let starts = inner.starts.len();
                drop(inner);
                let reason = format!(
                    "it stopped or failed to start {starts} times in {} minutes; offcode gave up on it",
                    CRASH_WINDOW.as_secs() / 60
                );
                self.set(index, McpState::Failed, &reason);
                return Err(reason);
            }
            inner.starts.push(now);
        }
        let restart = lock(&server.inner).starts.len() > 1;
        self.set(
            index,
            if restart {
                McpState::Restarting
            } else {
                McpState::Starting
            },
            "",
        );
        match self.connect(index).await {
            Ok(connection) => {
                let tools = lock(&server.inner).tools.len();
                self.set(index, McpState::Ready, &format!("{tools} tools"));
                Ok(connection)
            }
            Err(reason) => {
                self.set(index, McpState::Failed, &reason);
                Err(reason)
            }
        }
    }

    /// Starts the process, says hello, lists its tools, and watches it.
    async fn connect(self: &Arc<Self>, index: usize) -> Result<Arc<Connection>, String> {
        let server = Arc::clone(&self.servers[index]);
        let argv = server.config.argv();
        let (program, rest) = argv.split_first().ok_or("no `command` to run")?;
        let words: Vec<&str> = rest.iter().map(String::as_str).collect();
        let shell = &self.launcher.shell;
        let lifted = !server.config.confine;
        let mut command = shell
            .command(program, &words, lifted)
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        command.current_dir(&self.launcher.root);
        for secret in crate::tools::secret_variables() {
            command.env_remove(secret);
        }
        shell
            .give_environment(&mut command, lifted, &server.config.environment)
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        let (note_sender, mut notes) = mpsc::unbounded_channel();
        let connection = start(command, note_sender)
            .await
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        let timeout = Duration::from_millis(server.config.timeout_ms());
        let started = async {
            let hello = connection
                .request(
                    "initialize",
                    json!({
                        "protocolVersion": VERSIONS[0],
                        "capabilities": {},
                        "clientInfo": {"name": "offcode", "version": env!("CARGO_PKG_VERSION")},
                    }),
                    timeout,
                    None,
                )
                .await
                .map_err(|e| format!("`initialize` failed: {e}"))?;
            let hello: InitializeResult = serde_json::from_value(hello).unwrap_or_default();
            let version = hello.protocol_version.as_str();
            if !VERSIONS.contains(&version) {
                return Err(format!(
                    "it speaks MCP version `{version}`; offcode speaks {}",
                    VERSIONS.join(", ")
                ));
            }
            connection
                .notify("notifications/initialized", json!({}))
                .await
                .map_err(|e| format!("it stopped after `initialize`: {e}"))?;
            list_tools(&connection, timeout).await
        };
        let tools = match started.await {
            Ok(tools) => tools,
            Err(reason) => {
                connection.stop(STOP_GRACE).await;
                let garbage = connection.garbage();
                return Err(if garbage > 0 {
                    format!("{reason}; it wrote {garbage} lines that are not JSON-RPC to stdout")
                } else {
                    reason
                });
            }
        };
        {
            let mut inner = lock(&server.inner);
            inner.tools = tools;
            inner.connection = Some(Arc::clone(&connection));
        }
        // Its notifications: a changed tool list is fetched again.
        let mcp = Arc::downgrade(self);
        let listing = Arc::downgrade(&connection);
        tokio::spawn(async move {
            while let Some(Notification { method, .. }) = notes.recv().await {
                if method != "notifications/tools/list_changed" {
                    continue;
                }
                let (Some(mcp), Some(connection)) = (mcp.upgrade(), listing.upgrade()) else {
                    return;
                };
                mcp.refreshing.fetch_add(1, Ordering::Relaxed);
                if let Ok(tools) = list_tools(&connection, timeout).await {
                    let count = tools.len();
                    lock(&mcp.servers[index].inner).tools = tools;
                    mcp.set(
                        index,
                        McpState::Ready,
                        &format!("{count} tools (the list changed)"),
                    );
                }
                mcp.refreshing.fetch_sub(1, Ordering::Relaxed);
                mcp.changed.notify_waiters();
            }
        });
        // Its end: a crash is restarted, a few times, with backoff.
        tokio::spawn(watch(Arc::clone(self), index, Arc::clone(&connection)));
        Ok(connection)
    }

    /// After a crash: starts it again after a backoff (0.5 s, 2 s, 8 s),
    /// until it runs or has been started too often lately; then it is
    /// failed for the session.
    async fn restart(self: &Arc<Self>, index: usize, mut reason: String) {
        loop {
            let starts = {
                let mut inner = lock(&self.servers[index].inner);
                let now = Instant::now();
                inner
                    .starts
                    .retain(|at| now.duration_since(*at) < CRASH_WINDOW);
                inner.starts.len()
            };
            if starts > MOST_RESTARTS {
                self.set(
                    index,
                    McpState::Failed,
                    &format!(
                        "it stopped or failed to start {starts} times in {} minutes, the last time because {reason}; offcode gave up on it",
                        CRASH_WINDOW.as_secs() / 60
                    ),
                );
                return;
            }
            self.set(
                index,
                McpState::Restarting,
                &format!("it stopped: {reason}"),
            );
            let exponent = u32::try_from(starts.saturating_sub(1))
                .unwrap_or(u32::MAX)
                .min(3);
            tokio::time::sleep(Duration::from_millis(500) * 4u32.pow(exponent)).await;
            match self.ensure(index).await {
                Ok(_) => return,
                Err(why) => reason = why,
            }
            if self.state(index) == McpState::Stopped {
                return;
            }
            // Failed to start: restartable again until the budget is spent.
            lock(&self.servers[index].inner).state = McpState::Restarting;
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Waits for `connection` to end; unless offcode stopped it or it was
/// replaced, restarts the server. (Boxed: a restart starts a connection
/// that is watched in turn.)
fn watch(
    mcp: Arc<Mcp>,
    index: usize,
    watched: Arc<Connection>,
) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        let reason = watched.wait_closed().await;
        let current = lock(&mcp.servers[index].inner)
            .connection
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, &watched));
        if current && mcp.state(index) != McpState::Stopped {
            mcp.restart(index, reason).await;
        }
    })
}

/// `tools/list`, every page.
async fn list_tools(connection: &Connection, timeout: Duration) -> Result<Vec<RemoteTool>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let params = cursor
            .as_ref()
            .map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let page = connection
            .request("tools/list", params, timeout, None)
            .await
            .map_err(|e| format!("`tools/list` failed: {e}"))?;
        let page: ToolsPage = serde_json::from_value(page)
            .map_err(|e| format!("`tools/list` answered without a list of tools: {e}"))?;
        tools.extend(page.tools.into_iter().map(|tool| RemoteTool {
            name: tool.name,
            description: tool.description,
            read_only: tool.annotations.read_only_hint,
            schema: tool.input_schema.map_or_else(
                || json!({"type": "object", "properties": {}}),
                Value::Object,
            ),
        }));
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err("`tools/list` never ended (over 100 pages)".to_owned())
}

/// Starts a server's process, killed with offcode even by SIGKILL (under
/// confinement the whole PID namespace goes with it): a server that
/// ignores its closed stdin would otherwise live on. Starting blocks (fork,
/// exec), so not on the core's thread; and on the one thread that lasts as
/// long as offcode, which the parent-death signal follows.
async fn start(
    mut command: std::process::Command,
    notes: mpsc::UnboundedSender<super::conn::Notification>,
) -> std::io::Result<Arc<Connection>> {
    crate::confine::die_with_parent(&mut command);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        crate::confine::on_lasting_thread(move || {
            let _entered = runtime.enter();
            Connection::spawn(command, notes)
        })
        .and_then(|spawned| spawned)
    })
    .await
    .map_err(std::io::Error::other)?
}
