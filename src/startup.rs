//! The composition root: from the environment and the command line to
//! the parts a command needs (config, workspace, policy, client, session,
//! skills, context) and, for `offcode run` and the UI, one core ready to
//! start ([`prepare`]). Every front end starts here; nothing here prints
//! but the notice of a slow server.

mod model;
mod shell;

pub use shell::{recover_checks, secret, shell};

use std::sync::Arc;

use serde_json::json;

use model::default_model;

use crate::agent::AgentSetup;
use crate::client::Client;
use crate::config::{self, Config, Environment, Flags, Loaded};
use crate::failure::{EXIT_FAILED, EXIT_USAGE, Failure};
use crate::policy::{Policy, PolicySource};
use crate::sandbox::Sandbox;
use crate::session::{self, EntryBody, Session, Store};
use crate::tools::Registry;

/// Which session and model a core starts with.
#[derive(Debug, Default, Clone)]
pub struct Start {
    /// `--model`.
    pub model: Option<String>,
    /// `--session`.
    pub session: Option<String>,
    /// `--continue`.
    pub resume_latest: bool,
    /// `--agent`.
    pub agent: Option<String>,
    /// `--fork ID [--at N]`: a new session from a copy of that one, up to
    /// before turn N.
    pub fork: Option<(String, Option<usize>)>,
    /// The interactive UI's first task (`offcode "PROMPT"`).
    pub prompt: Option<String>,
}

impl From<&crate::cli::SessionArgs> for Start {
    fn from(args: &crate::cli::SessionArgs) -> Self {
        Self {
            model: args.model.clone(),
            session: args.session.clone(),
            resume_latest: args.r#continue,
            agent: args.agent.clone(),
            fork: args
                .fork
                .clone()
                .map(|id| (id, args.at.and_then(|n| usize::try_from(n).ok()))),
            prompt: None,
        }
    }
}

/// Everything a core needs, from config, flags and the session asked for
/// (`session` id, or the latest here with `resume_latest`); shared by
/// headless runs and the interactive UI. `approver` is recorded as who
/// answered approval requests.
pub fn prepare(
    environment: &Environment,
    start: &Start,
    approver: crate::protocol::Decider,
) -> Result<AgentSetup, Failure> {
    let flags = Flags {
        model: start.model.clone(),
    };
    let loaded = load_config(environment, &flags)?;
    // Before a session is created, so a failure leaves no empty session.
    let sandbox = workspace(environment)?;
    let policy = policy_source(environment, &flags, &loaded, sandbox.root())?;
    let (agents, ignored) = agents(environment, start, &loaded, &sandbox)?;
    let untrusted = loaded
        .loosening
        .as_ref()
        .filter(|l| !l.trusted)
        .map(crate::trust::Loosening::warning);
    let config = loaded.config;
    if let Some(state) = environment.state_dir() {
        crate::log::init(crate::log::path_in(&state), config.log);
    }
    let store = session_store(environment)?;
    let resumed = resumed_session(&store, start, environment)?;
    let model = match (&flags.model, &resumed, &config.model) {
        (Some(model), ..) | (None, Some(Session { model, .. }), _) | (None, None, Some(model)) => {
            model.clone()
        }
        (None, None, None) => default_model(&config, environment)?,
    };
    // The client of the model's provider.
    let routed = config
        .routed(&model, &|name| environment.var(name).map(str::to_owned))
        .map_err(|why| {
            Failure::message(format!("Invalid model: {why}"), EXIT_USAGE)
                .with_hint("`offcode models` lists the configured providers' models; set `base_url` for a server of its own")
        })?;
    let client = Arc::new(client(&routed, environment)?);
    let mut session = match resumed {
        Some(mut session) => {
            if session.model != model {
                session
                    .append(EntryBody::ModelChange { model })
                    .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
            }
            session
        }
        None => store
            .create(&environment.cwd, &model, client.base_url())
            .map_err(|e| Failure::new(&e, EXIT_FAILED))?,
    };
    let current = policy.current().ok();
    let (mut context, skills) =
        workspace_context(environment, &sandbox, &config, current.as_deref());
    context.warnings.extend(untrusted);
    context.warnings.extend(ignored);
    context
        .warnings
        .extend(broad_workspace(sandbox.root(), environment.var("HOME")));
    let shell = shell(environment, &config, sandbox.root());
    let mcp = mcp_servers(&config, &shell, sandbox.root(), &mut context.warnings);
    let checkpoints = checkpoints(
        environment,
        &config.checkpoints,
        sandbox.root(),
        &mut session,
        &mut context.warnings,
    );
    let servers = crate::servers::ServerCache::in_dir(environment.cache_dir().as_deref())
        .with_ttl(config.cache);
    // `default_agent` for a new session; a resumed one goes on with its own.
    let agent = start.agent.clone().or_else(|| {
        (!session.resumed)
            .then(|| config.default_agent.clone())
            .flatten()
    });
    Ok(AgentSetup {
        context,
        client,
        session,
        tools: Registry::default().with_skills(skills),
        config,
        shell,
        sandbox,
        policy,
        approver,
        servers,
        agents,
        agent,
        depth: 0,
        mcp,
        checkpoints,
    })
}

/// The session's agents (`--agent` and `default_agent` checked against
/// them), and a note of the `OpenCode` keys the config files hold that
/// offcode ignores.
fn agents(
    environment: &Environment,
    start: &Start,
    loaded: &crate::config::Loaded,
    sandbox: &crate::sandbox::Sandbox,
) -> Result<(crate::agents::Agents, Vec<String>), Failure> {
    let agents = crate::agents::Agents::load(
        &loaded.agent_layers,
        environment.config_dir().as_deref(),
        Some(sandbox),
    )
    .map_err(|e| Failure::new(&e, EXIT_USAGE))?;
    if let Some(name) = &start.agent {
        agents.primary(name).map_err(|why| {
            Failure::message(format!("Invalid value for --agent: {why}"), EXIT_USAGE)
        })?;
    }
    if let Some(name) = &loaded.config.default_agent {
        agents.primary(name).map_err(|why| {
            Failure::message(
                format!(
                    "Invalid value for `default_agent` ({}): {why}",
                    loaded.source_of("default_agent")
                ),
                EXIT_USAGE,
            )
        })?;
    }
    let ignored = loaded.ignored.iter().map(|(path, keys)| {
        format!(
            "{}: OpenCode keys ignored here: {}",
            crate::config::Loaded::describe_source(
                &crate::config::Source::File(path.clone()),
                &environment.cwd
            ),
            keys.join(", ")
        )
    });
    let ignored: Vec<String> = ignored.collect();
    Ok((agents, ignored))
}

/// Keeps every endpoint key the config holds (the shorthand's, each
/// provider's, whichever variable it came from) out of commands' and MCP
/// servers' environment.
fn hide_keys(config: &Config, environment: &Environment) {
    let var = |name: &str| environment.var(name).map(str::to_owned);
    let mut keys: Vec<String> = config.api_key.iter().cloned().collect();
    keys.extend(config.provider.values().filter_map(|p| p.key(&var)));
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    crate::tools::hide_variables_holding(&keys, &environment.vars);
}

/// The session `start` asks to go on with (`--session`, `--continue`,
/// `--fork`), opened; none for a new one.
fn resumed_session(
    store: &Store,
    start: &Start,
    environment: &Environment,
) -> Result<Option<Session>, Failure> {
    let session_failure = |e: session::Error| Failure::new(&e, EXIT_USAGE);
    let resumed = match (start.session.as_deref(), start.resume_latest) {
        _ if start.fork.is_some() => {
            let (id, at) = start.fork.clone().unwrap_or_default();
            Some(fork(store, &id, at).map_err(|why| Failure::message(why, EXIT_USAGE))?)
        }
        (Some(id), _) => Some(store.open(id).map_err(session_failure)?),
        (None, true) => {
            let id = store.latest_for(&environment.cwd).map_err(|e| {
                session_failure(e).with_hint("Start one with `offcode run \"PROMPT\"`")
            })?;
            Some(store.open(&id).map_err(session_failure)?)
        }
        (None, false) => None,
    };
    Ok(resumed)
}

/// A new session from a copy of `id`'s conversation, up to before turn
/// `at` (none: all of it).
pub fn fork(store: &Store, id: &str, at: Option<usize>) -> Result<Session, String> {
    let upto = match at {
        None => None,
        Some(number) => {
            let (_, branch) = store.load_branch(id).map_err(|e| e.to_string())?;
            let turns = crate::checkpoint::rewind::turns(&branch);
            let turn = turns.iter().find(|t| t.number == number).ok_or_else(|| {
                format!(
                    "Session `{id}` has no turn {number} (it has {})",
                    crate::protocol::count(turns.len(), "turn")
                )
            })?;
            // Before the first turn: the session entry alone.
            Some(turn.parent.clone().unwrap_or_else(|| "1".to_owned()))
        }
    };
    store
        .fork(id, upto.as_deref(), at)
        .map_err(|e| e.to_string())
}

/// The workspace's checkpoints for `session`; none when they are off.
/// A new session's store is opened in the background (its first use
/// waits, and says what opening pruned); a resumed one's now, so that a
/// step cut short is ended as the workspace is found at this start (said
/// in `warnings`, as is any pruning or failure).
pub fn checkpoints(
    environment: &Environment,
    settings: &crate::checkpoint::CheckpointSettings,
    root: &std::path::Path,
    session: &mut Session,
    warnings: &mut Vec<String>,
) -> Option<Arc<crate::checkpoint::Shared>> {
    if !settings.enabled {
        return None;
    }
    let data = environment.data_dir()?;
    if let Err(e) = settings.check(root) {
        warnings.push(format!(
            "Checkpoints are off, so /undo and /revert cannot take changes back: {e}"
        ));
        return None;
    }
    let sessions = session_store(environment).ok();
    let kept_out = environment.own_files();
    let (root, id, settings) = (root.to_path_buf(), session.id.clone(), settings.clone());
    let open = move || {
        let in_use = |other: &str| sessions.as_ref().is_some_and(|store| store.in_use(other));
        crate::checkpoint::Checkpoints::open(&data, &root, &id, settings, kept_out, &in_use)
    };
    if !session.resumed {
        return Some(Arc::new(crate::checkpoint::Shared::opening(open)));
    }
    match open() {
        Ok((mut checkpoints, pruned)) => {
            if !pruned.sessions.is_empty() {
                warnings.push(pruned.note(checkpoints.settings().max_store_mb));
            }
            let cut_short =
                crate::checkpoint::rewind::complete_cut_short(session, &mut checkpoints)
                    .unwrap_or(false);
            if cut_short {
                warnings.push("This session's last step was cut short (offcode stopped while it ran): its changes are taken as the workspace is now, and a revert marks them, as they may hold your own".to_owned());
            }
            Some(Arc::new(crate::checkpoint::Shared::ready(checkpoints)))
        }
        Err(e) => {
            warnings.push(format!(
                "Checkpoints are off, so /undo and /revert cannot take changes back: {e}"
            ));
            None
        }
    }
}

/// A warning when the workspace is the home directory, one above it, or
/// `/`: everything in it is the model's to read and change (the person's
/// shell, login and settings files stay read-only).
fn broad_workspace(root: &std::path::Path, home: Option<&str>) -> Option<String> {
    let home = home.map(|home| crate::policy::gate::real_path(std::path::Path::new(home)));
    let what = if root == std::path::Path::new("/") {
        "the root of the file system"
    } else if home.as_deref() == Some(root) {
        "your home directory"
    } else if home.is_some_and(|home| home.starts_with(root)) {
        "a folder that holds your home directory"
    } else {
        return None;
    };
    Some(format!(
        "The workspace is {what} (`{}`): the model may read and change everything in it but your shell, login and settings files (dot files) and offcode's own; start offcode in a project folder instead",
        root.display()
    ))
}

/// The configured MCP servers (started later, by the core, in the
/// background), with a warning for each that will not run confined or
/// not at all.
fn mcp_servers(
    config: &Config,
    shell: &Arc<crate::confine::Shell>,
    root: &std::path::Path,
    warnings: &mut Vec<String>,
) -> Option<Arc<crate::mcp::Mcp>> {
    if config.mcp.is_empty() {
        return None;
    }
    let confined = shell.confinement(false).is_some();
    if let crate::confine::Status::Unavailable { reason } = shell.status()
        && config
            .mcp
            .values()
            .any(|s| s.enabled && s.kind == crate::config::mcp::Kind::Local)
    {
        warnings.push(format!(
            "MCP servers run unconfined here ({reason}): each of their calls asks, and no rule or --yes answers it"
        ));
    }
    for (name, server) in config.mcp.iter().filter(|(_, s)| s.enabled) {
        if server.kind == crate::config::mcp::Kind::Remote {
            warnings.push(format!(
                "MCP server `{name}` is remote; offcode runs only local (stdio) servers, so it is left off"
            ));
        } else if !server.confine && confined {
            warnings.push(format!(
                "MCP server `{name}` runs outside the sandbox (`confine: false` in its config): it can write anywhere you can and reach the network"
            ));
        }
    }
    Some(crate::mcp::Mcp::new(
        &config.mcp,
        config.mcp_limits,
        crate::mcp::Launcher {
            shell: Arc::clone(shell),
            root: root.to_owned(),
        },
    ))
}

/// Loads the configuration, mapping problems to exit status 2.
pub fn load_config(environment: &Environment, flags: &Flags) -> Result<Loaded, Failure> {
    let loaded = config::load(environment, flags).map_err(Failure::from)?;
    hide_keys(&loaded.config, environment);
    Ok(loaded)
}

/// The effective permission policy for the workspace at `root`: the
/// built-in default, the config files' `permission` and `dangerous` keys,
/// and the managed files (the system's, always, and one more that
/// `OFFCODE_MANAGED_POLICY` may add).
pub fn load_policy(
    environment: &Environment,
    loaded: &Loaded,
    root: &std::path::Path,
) -> Result<Policy, Failure> {
    Policy::load(
        &loaded.policy_layers,
        &managed_paths(environment),
        root,
        environment.var("HOME"),
    )
    .map(|policy| {
        policy
            .with_own_files(&environment.own_files())
            .with_shell(crate::confine::Status::of(
                root,
                &loaded.config.sandbox,
                environment.var("HOME"),
            ))
    })
    .map_err(|e| {
        let hint = match &e {
            crate::policy::Error::Managed { .. } => {
                "The managed policy is set by your administrators; ask them to fix it"
            }
            crate::policy::Error::Rule(_) => "Fix the rule in the config file it names",
        };
        Failure::new(&e, EXIT_USAGE).with_hint(hint)
    })
}

/// The managed files: the system's (`/etc/offcode/policy.jsonc`), which
/// nothing in the environment can remove, then the one
/// `OFFCODE_MANAGED_POLICY` adds (for a team that keeps theirs elsewhere, and
/// for tests).
fn managed_paths(environment: &Environment) -> Vec<std::path::PathBuf> {
    let system = system_managed_path(environment);
    let mut paths = vec![system.clone()];
    if let Some(extra) = environment.var("OFFCODE_MANAGED_POLICY")
        && !extra.is_empty()
        && std::path::Path::new(extra) != system
    {
        paths.push(extra.into());
    }
    paths
}

/// `/etc/offcode/policy.jsonc`. Debug builds (the test suite's) let
/// `OFFCODE_TEST_SYSTEM_POLICY` stand in for it, so tests neither depend on
/// the machine's file nor need root to write one; a release build has no
/// such variable.
fn system_managed_path(environment: &Environment) -> std::path::PathBuf {
    #[cfg(debug_assertions)]
    if let Some(path) = environment.var("OFFCODE_TEST_SYSTEM_POLICY") {
        return path.into();
    }
    #[cfg(not(debug_assertions))]
    let _ = environment;
    crate::policy::MANAGED_PATH.into()
}

/// The policy for an agent: loaded now (problems stop the start with a
/// clear error), then re-read before a tool call whenever a config file or
/// the managed file changed.
pub fn policy_source(
    environment: &Environment,
    flags: &Flags,
    loaded: &Loaded,
    root: &std::path::Path,
) -> Result<Arc<PolicySource>, Failure> {
    let policy = load_policy(environment, loaded, root)?;
    let initial = policy_files(environment, loaded);
    let (environment, flags, root) = (environment.clone(), flags.clone(), root.to_path_buf());
    let reload = move || -> Result<(Policy, Vec<std::path::PathBuf>), String> {
        let loaded = config::load(&environment, &flags).map_err(|e| e.to_string())?;
        let policy = load_policy(&environment, &loaded, &root).map_err(|f| f.message)?;
        Ok((policy, policy_files(&environment, &loaded)))
    };
    Ok(Arc::new(PolicySource::new(
        policy,
        initial,
        Box::new(reload),
    )))
}

/// Every file the policy is read from or looked for: the config files and
/// the managed file.
fn policy_files(environment: &Environment, loaded: &Loaded) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = loaded.files.iter().map(|f| f.path.clone()).collect();
    files.extend(managed_paths(environment));
    files
}

/// The session store under the data directory.
pub fn session_store(environment: &Environment) -> Result<Store, Failure> {
    environment
        .data_dir()
        .map(|dir| Store::new(dir.join("sessions")))
        .ok_or_else(|| {
            Failure::message("Cannot tell where to keep sessions", EXIT_USAGE)
                .with_hint("Set `HOME`, `XDG_DATA_HOME` or `OFFCODE_DATA_DIR`")
        })
}

/// The workspace: the startup directory held open, also reachable through
/// a logical `$PWD` that names the same directory.
pub fn workspace(environment: &Environment) -> Result<Arc<Sandbox>, Failure> {
    let sandbox = Sandbox::new(&environment.cwd).map_err(|e| {
        Failure::new(&e, EXIT_USAGE)
            .with_hint("offcode works in the directory it starts in; it must be readable")
    })?;
    let sandbox = sandbox.with_secret(&secret(environment, &environment.cwd));
    Ok(Arc::new(match environment.var("PWD") {
        Some(pwd) => sandbox.with_alias(std::path::Path::new(pwd)),
        None => sandbox,
    }))
}

/// The single-threaded runtime the front ends drive the core on.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(&e, EXIT_FAILED))
}

/// The client for the configured endpoint; bad TLS or proxy settings are
/// a usage error.
pub fn client(
    config: &crate::config::Config,
    environment: &Environment,
) -> Result<Client, Failure> {
    Client::with_env(config, &|name| environment.var(name).map(str::to_owned)).map_err(|e| {
        Failure::new(&e, EXIT_USAGE)
            .with_hint("Fix `tls` in the config, or the proxy variables (`HTTPS_PROXY`, `http_proxy`, `ALL_PROXY`, `NO_PROXY`)")
    })
}

/// The system prompt's parts and the skills for a workspace: rules,
/// instructions, and the skills `policy` does not deny (a denied skill is
/// not even listed).
pub fn workspace_context(
    environment: &Environment,
    sandbox: &crate::sandbox::Sandbox,
    config: &crate::config::Config,
    policy: Option<&crate::policy::Policy>,
) -> (crate::context::Assembly, Vec<crate::skills::Skill>) {
    let config_dir = environment.config_dir();
    let mut assembly =
        crate::context::assemble(sandbox, config_dir.as_deref(), &config.instructions);
    let found = crate::skills::discover(sandbox, config_dir.as_deref(), &config.skills);
    let skills: Vec<crate::skills::Skill> = found
        .skills
        .into_iter()
        .filter(|skill| {
            policy.is_none_or(|policy| {
                policy
                    .decide("skill", &json!({ "name": skill.name }), &[])
                    .action
                    != crate::policy::Action::Deny
            })
        })
        .collect();
    assembly.add_skills(&skills, found.warnings);
    (assembly, skills)
}
