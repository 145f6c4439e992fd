//! Local MCP servers (stdio): started in the background, their tools
//! offered to the model as `SERVER_TOOL` within a budget, called through
//! the permission rules like any tool, restarted when they crash (a few
//! times, with backoff), and stopped with their process group.
//!
//! A server that is down, slow or writes garbage never takes the session
//! down: its calls fail with the reason, and what happened to it reaches
//! the session record and the user as [`McpStatusEvent`]s.

mod conn;
mod render;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

use self::conn::{Connection, Notification, RpcError};
use crate::cancel::Cancel;
use crate::client::wire::{FunctionSpec, ToolSpec};
pub use crate::config::mcp::{Kind, Limits, ServerConfig};
use crate::protocol::{McpServerReport, McpState, McpStatusEvent, McpToolReport};
use crate::tools::ToolOutput;

/// The protocol versions offcode speaks; it asks for the first.
const VERSIONS: [&str; 4] = ["2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05"];
/// Starts in [`CRASH_WINDOW`] after which a crashing server is given up.
const MOST_RESTARTS: usize = 3;
const CRASH_WINDOW: Duration = Duration::from_mins(10);
/// Servers started at the same time.
const STARTING_AT_ONCE: usize = 2;
/// Time a stopping server gets before its group is killed.
const STOP_GRACE: Duration = Duration::from_millis(400);
/// A tool name the `OpenAI` API takes: `^[a-zA-Z0-9_-]{1,64}$`.
const LONGEST_NAME: usize = 64;

/// How servers are started: in the workspace, confined like shell
/// commands unless a server's config opts out.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// How commands run (confined or not).
    pub shell: Arc<crate::confine::Shell>,
    /// The workspace root (the servers' working directory).
    pub root: PathBuf,
}

/// A tool as its server lists it.
#[derive(Debug, Clone)]
struct RemoteTool {
    name: String,
    description: String,
    schema: Value,
}

#[derive(Debug)]
struct Inner {
    state: McpState,
    detail: String,
    tools: Vec<RemoteTool>,
    connection: Option<Arc<Connection>>,
    /// When it was started (the first start and each restart).
    starts: Vec<Instant>,
}

#[derive(Debug)]
struct Server {
    name: String,
    config: ServerConfig,
    inner: Mutex<Inner>,
    /// Held while it starts, so one start serves every caller.
    starting: tokio::sync::Mutex<()>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A tool offered to the model, or left out and why.
#[derive(Debug, Clone)]
struct Entry {
    exposed: String,
    server: usize,
    tool: RemoteTool,
    bytes: usize,
    left_out: Option<String>,
}

/// The configured servers.
#[derive(Debug)]
pub struct Mcp {
    servers: Vec<Arc<Server>>,
    limits: Limits,
    launcher: Launcher,
    /// Bumped whenever the tools offered may have changed.
    generation: AtomicU64,
    /// What happened to servers, not yet taken by the core.
    events: Mutex<Vec<McpStatusEvent>>,
    /// Fires when an event is queued or a server's state changes.
    changed: Notify,
    /// Tool lists being fetched again after `list_changed`.
    refreshing: std::sync::atomic::AtomicUsize,
}

impl Mcp {
    /// The servers of `configs` (none started yet).
    pub fn new(
        configs: &BTreeMap<String, ServerConfig>,
        limits: Limits,
        launcher: Launcher,
    ) -> Arc<Self> {
        let servers = configs
            .iter()
            .map(|(name, config)| {
                let (state, detail) = match (config.kind, config.enabled) {
                    (_, false) => (McpState::Disabled, "`enabled: false`".to_owned()),
                    (Kind::Remote, true) => (
                        McpState::Unsupported,
                        "remote MCP servers are not supported: offcode runs where they cannot be reached; run the server locally (`type: local`)".to_owned(),
                    ),
                    (Kind::Local, true) => (McpState::Waiting, String::new()),
                };
                Arc::new(Server {
                    name: name.clone(),
                    config: config.clone(),
                    inner: Mutex::new(Inner {
                        state,
                        detail,
                        tools: Vec::new(),
                        connection: None,
                        starts: Vec::new(),
                    }),
                    starting: tokio::sync::Mutex::new(()),
                })
            })
            .collect();
        Arc::new(Self {
            servers,
            limits,
            launcher,
            generation: AtomicU64::new(0),
            events: Mutex::new(Vec::new()),
            changed: Notify::new(),
            refreshing: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every enabled server in the background.
    ///
    /// Tasks already woken (a front end showing the session) run first,
    /// and at most [`STARTING_AT_ONCE`] servers start together: a confined
    /// start (namespaces, mounts) takes a core for a moment, and the
    /// machine may have two.
    pub fn start(self: &Arc<Self>) {
        let mcp = Arc::clone(self);
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            let slots = Arc::new(tokio::sync::Semaphore::new(STARTING_AT_ONCE));
            for index in 0..mcp.servers.len() {
                if mcp.state(index) != McpState::Waiting {
                    continue;
                }
                let mcp = Arc::clone(&mcp);
                let slots = Arc::clone(&slots);
                tokio::spawn(async move {
                    let _slot = slots.acquire().await;
                    let _ = mcp.ensure(index).await;
                });
            }
        });
    }

    /// Starts the server called `name` and waits for it; the reason when
    /// it cannot start.
    pub async fn start_one(self: &Arc<Self>, name: &str) -> Result<(), String> {
        let index = self
            .servers
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| format!("no MCP server is called `{name}`"))?;
        self.ensure(index).await.map(drop)
    }

    /// Waits until no server is still starting and no changed tool list is
    /// being fetched, at most `limit`.
    pub async fn settle(&self, limit: Duration) {
        let waiting = async {
            loop {
                let changed = self.changed.notified();
                let busy = self.refreshing.load(Ordering::Relaxed) > 0
                    || (0..self.servers.len()).any(|index| {
                        matches!(self.state(index), McpState::Waiting | McpState::Starting)
                    });
                if !busy {
                    return;
                }
                changed.await;
            }
        };
        let _ = tokio::time::timeout(limit, waiting).await;
    }

    /// Changes whenever the tools offered may have.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// What happened to servers since the last call.
    pub fn take_events(&self) -> Vec<McpStatusEvent> {
        std::mem::take(&mut *lock(&self.events))
    }

    /// Waits for the next change (an event queued, a state changed).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The tools offered to the model, in config order, within the budget.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.catalog()
            .into_iter()
            .filter(|entry| entry.left_out.is_none())
            .map(|entry| spec(&entry.exposed, &entry.tool))
            .collect()
    }

    /// Whether `name` is an MCP tool offered now.
    pub fn offers(&self, name: &str) -> bool {
        self.catalog()
            .iter()
            .any(|entry| entry.exposed == name && entry.left_out.is_none())
    }

    /// Why the tool the model knew as `name` cannot be called now: its
    /// server failed, or is stopping. `None` for a tool offered now or not
    /// an MCP tool at all.
    pub fn unavailable(&self, name: &str) -> Option<String> {
        if self.offers(name) {
            return None;
        }
        self.servers.iter().find_map(|server| {
            let inner = lock(&server.inner);
            let known = inner
                .tools
                .iter()
                .any(|tool| exposed_name(&server.name, &tool.name) == name);
            (known && matches!(inner.state, McpState::Failed | McpState::Stopped)).then(|| {
                format!(
                    "The MCP server `{}` is not available: {}",
                    server.name, inner.detail
                )
            })
        })
    }

    /// Every server, its state and its tools (offered or left out).
    pub fn reports(&self) -> Vec<McpServerReport> {
        let catalog = self.catalog();
        self.servers
            .iter()
            .enumerate()
            .map(|(index, server)| {
                let inner = lock(&server.inner);
                McpServerReport {
                    name: server.name.clone(),
                    state: inner.state,
                    detail: inner.detail.clone(),
                    command: server.config.argv().join(" "),
                    confined: server.config.confine
                        && self.launcher.shell.confinement(false).is_some(),
                    tools: catalog
                        .iter()
                        .filter(|entry| entry.server == index)
                        .map(|entry| McpToolReport {
                            name: entry.exposed.clone(),
                            tool: entry.tool.name.clone(),
                            tokens: u64::try_from(entry.bytes.div_ceil(4)).unwrap_or(u64::MAX),
                            left_out: entry.left_out.clone(),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// Calls the MCP tool offered as `name`; any failure (the server down,
    /// slow, gone mid-call, or answering garbage) is an error result.
    pub async fn call(
        self: &Arc<Self>,
        name: &str,
        arguments: Value,
        cancel: &Cancel,
    ) -> ToolOutput {
        let Some(entry) = self
            .catalog()
            .into_iter()
            .find(|entry| entry.exposed == name && entry.left_out.is_none())
        else {
            return ToolOutput::error(format!("`{name}` is not an MCP tool offered now"));
        };
        let server = &self.servers[entry.server].name;
        let connection = match self.ensure(entry.server).await {
            Ok(connection) => connection,
            Err(reason) => {
                return ToolOutput::error(format!(
                    "The MCP server `{server}` is not available: {reason}"
                ));
            }
        };
        let params = json!({"name": entry.tool.name, "arguments": arguments});
        let timeout = Duration::from_millis(self.limits.call_timeout_ms);
        match connection
            .request("tools/call", params, timeout, Some(cancel))
            .await
        {
            Ok(result) => {
                let (text, failed) = render::result_text(&result, self.limits.result_bytes);
                let summary = summary(&text, failed);
                if failed {
                    let mut output = ToolOutput::error(text);
                    output.summary = summary;
                    output
                } else {
                    ToolOutput::ok(text, summary)
                }
            }
            Err(RpcError::Closed(reason)) => ToolOutput::error(format!(
                "The MCP server `{server}` stopped during the call ({reason}); offcode is starting it again, so the call can be made again"
            )),
            Err(RpcError::Cancelled) => ToolOutput::error("Aborted by the user"),
            Err(error) => ToolOutput::error(format!(
                "The MCP server `{server}` did not run `{}`: {error}",
                entry.tool.name
            )),
        }
    }

    /// Stops every server and its process group.
    pub async fn shutdown(&self) {
        let mut stopping = tokio::task::JoinSet::new();
        for server in &self.servers {
            let mut inner = lock(&server.inner);
            if let Some(connection) = inner.connection.take() {
                inner.state = McpState::Stopped;
                stopping.spawn(async move { connection.stop(STOP_GRACE).await });
            }
        }
        while stopping.join_next().await.is_some() {}
    }

    fn state(&self, index: usize) -> McpState {
        lock(&self.servers[index].inner).state
    }

    /// Sets a server's state and tells.
    fn set(&self, index: usize, state: McpState, detail: &str) {
        let server = &self.servers[index];
        let tools = {
            let mut inner = lock(&server.inner);
            inner.state = state;
            detail.clone_into(&mut inner.detail);
            inner.tools.len()
        };
        lock(&self.events).push(McpStatusEvent {
            server: server.name.clone(),
            state,
            detail: detail.to_owned(),
            tools,
        });
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_waiters();
        self.changed.notify_one();
    }

    /// The server's running connection, started (or restarted) first when
    /// it is not running; the reason when it cannot be.
    async fn ensure(self: &Arc<Self>, index: usize) -> Result<Arc<Connection>, String> {
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
        let mut command = self
            .launcher
            .shell
            .command(program, &words, !server.config.confine);
        command.current_dir(&self.launcher.root);
        for secret in crate::tools::SECRET_VARIABLES {
            command.env_remove(secret);
        }
        command.envs(&server.config.environment);
        let (note_sender, mut notes) = mpsc::unbounded_channel();
        // Starting a process blocks (fork, exec): not on the core's thread.
        let spawned = tokio::task::spawn_blocking(move || Connection::spawn(command, note_sender))
            .await
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        let connection = spawned.map_err(|error| format!("cannot start `{program}`: {error}"))?;
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
            let version = hello
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
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
        }
    }

    /// The tools of running servers, named and budgeted.
    fn catalog(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut offered = 0;
        for (index, server) in self.servers.iter().enumerate() {
            let tools = {
                let inner = lock(&server.inner);
                if !matches!(inner.state, McpState::Ready | McpState::Restarting) {
                    continue;
                }
                inner.tools.clone()
            };
            for tool in tools {
                let taken: Vec<&str> = entries.iter().map(|e| e.exposed.as_str()).collect();
                let exposed = unique(&exposed_name(&server.name, &tool.name), &taken);
                let bytes = serde_json::to_string(&spec(&exposed, &tool)).map_or(0, |s| s.len());
                let left_out = if bytes > self.limits.schema_bytes {
                    Some(format!(
                        "its definition is {bytes} bytes, over `mcp_limits.schema_bytes` ({})",
                        self.limits.schema_bytes
                    ))
                } else if offered >= self.limits.tools {
                    Some(format!(
                        "over `mcp_limits.tools` ({} MCP tools at most)",
                        self.limits.tools
                    ))
                } else {
                    offered += 1;
                    None
                };
                entries.push(Entry {
                    exposed,
                    server: index,
                    tool,
                    bytes,
                    left_out,
                });
            }
        }
        entries
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
        let listed = page
            .get("tools")
            .and_then(Value::as_array)
            .ok_or("`tools/list` answered without `tools`")?;
        for tool in listed {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            tools.push(RemoteTool {
                name: name.to_owned(),
                description: tool
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                schema: tool
                    .get("inputSchema")
                    .filter(|s| s.is_object())
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            });
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err("`tools/list` never ended (over 100 pages)".to_owned())
}

fn spec(exposed: &str, tool: &RemoteTool) -> ToolSpec {
    ToolSpec {
        kind: "function",
        function: FunctionSpec {
            name: exposed.to_owned(),
            description: tool.description.clone(),
            parameters: tool.schema.clone(),
        },
    }
}

/// `SERVER_TOOL`, with characters a tool name cannot have as `_`, at most
/// [`LONGEST_NAME`] long.
pub fn exposed_name(server: &str, tool: &str) -> String {
    format!("{server}_{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(LONGEST_NAME)
        .collect()
}

/// `name`, or `name_2`, `name_3`... when it is `taken`.
fn unique(name: &str, taken: &[&str]) -> String {
    let mut candidate = name.to_owned();
    let mut n = 2;
    while taken.contains(&candidate.as_str()) {
        let suffix = format!("_{n}");
        let keep = name.len().min(LONGEST_NAME - suffix.len());
        candidate = format!("{}{suffix}", &name[..keep]);
        n += 1;
    }
    candidate
}

/// The one line shown for a result.
fn summary(text: &str, failed: bool) -> String {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let first: String = first.chars().take(80).collect();
    let lines = text.lines().count();
    match (failed, lines) {
        (true, _) => format!("failed: {first}"),
        (false, 0 | 1) => first,
        (false, n) => format!("{first} … ({n} lines)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_sanitised_bounded_and_unique() {
        assert_eq!(
            exposed_name("memory", "create_entities"),
            "memory_create_entities"
        );
        assert_eq!(
            exposed_name("my.server", "read file/v2"),
            "my_server_read_file_v2"
        );
        assert_eq!(exposed_name("s", &"x".repeat(100)).len(), LONGEST_NAME);
        let taken = ["a_b", "a_b_2"];
        assert_eq!(unique("a_b", &taken), "a_b_3");
        assert_eq!(unique("c", &taken), "c");
        let long = "y".repeat(64);
        assert_eq!(unique(&long, &[long.as_str()]).len(), 64);
    }
}
