//! Local MCP servers (stdio): started in the background, their tools
//! offered to the model as `SERVER_TOOL` within a budget, called through
//! the permission rules like any tool, restarted when they crash (a few
//! times, with backoff), and stopped with their process group.
//!
//! A server that is down, slow or writes garbage never takes the session
//! down: its calls fail with the reason, and what happened to it reaches
//! the session record and the user as [`McpStatusEvent`]s.

mod catalog;
mod conn;
mod lifecycle;
mod render;
mod wire;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Notify;

pub use self::catalog::context_parts;
use self::catalog::{exposed_name, spec, summary};
use self::conn::{Connection, RpcError};
use crate::cancel::Cancel;
use crate::client::wire::ToolSpec;
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
    /// Its server says it changes nothing (`annotations.readOnlyHint`).
    read_only: bool,
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
    /// The catalogue and the generation it was worked out at.
    catalogued: Mutex<Option<(u64, Arc<Vec<catalog::Entry>>)>>,
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
            catalogued: Mutex::new(None),
        })
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every enabled server in the background.
    ///
    /// Tasks already woken (a front end showing the session) run first,
    /// and at most two servers start together: a confined
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
    /// being fetched; at most as long as the slowest start may take
    /// (`initialize` and `tools/list` each have the server's timeout).
    pub async fn settle(&self) {
        let limit = self
            .servers
            .iter()
            .map(|s| s.config.timeout_ms())
            .max()
            .map_or(Duration::ZERO, |ms| {
                Duration::from_millis(ms.saturating_mul(2) + 500)
            });
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

    /// The tools offered to the model, in config order, within the budget;
    /// with `read_only`, only those their server says change nothing.
    pub fn specs(&self, read_only: bool) -> Vec<ToolSpec> {
        self.catalog()
            .iter()
            .filter(|entry| entry.left_out.is_none() && (entry.tool.read_only || !read_only))
            .map(|entry| spec(&entry.exposed, &entry.tool))
            .collect()
    }

    /// Whether the MCP tool `name`'s server is to run confined (its config
    /// did not opt out).
    pub fn wants_confinement(&self, name: &str) -> bool {
        self.entry(name)
            .is_some_and(|entry| self.servers[entry.server].config.confine)
    }

    /// Whether the MCP tool `name`'s server says it changes nothing.
    pub fn is_read_only(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|entry| entry.tool.read_only)
    }

    /// Whether `name` is an MCP tool offered now.
    pub fn offers(&self, name: &str) -> bool {
        self.entry(name)
            .is_some_and(|entry| entry.left_out.is_none())
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
                            read_only: entry.tool.read_only,
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
        let Some(entry) = self.entry(name).filter(|entry| entry.left_out.is_none()) else {
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
                let (text, failed) = render::result_text(result, self.limits.result_bytes);
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
        self.generation.fetch_add(1, Ordering::Relaxed);
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
}
