//! The small subcommands: `models`, `sessions`, `config`, and the setup
//! steps they share with headless runs; `tool` ([`mod@tool`]), `policy check`
//! and `trust` ([`policy`]) in their own modules.

mod policy;
mod tool;

pub use policy::{policy_check, trust};
pub use tool::tool;

use std::fmt::Write as _;

use std::io::Write;
use std::sync::Arc;

use serde_json::json;

use crate::cli::SessionsArgs;
use crate::client::{self, Client};
use crate::config::{self, Config, Environment, Flags, Loaded};
use crate::confine::Shell;
use crate::policy::{Policy, PolicySource};
use crate::sandbox::Sandbox;
use crate::session::Store;
use crate::{EXIT_FAILED, EXIT_USAGE, Failure};

/// Writes to stdout; a closed pipe (`offcode models | head`) is not an error.
pub fn out(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::new(&error, EXIT_FAILED))
        }
        _ => Ok(()),
    }
}

/// Loads the configuration, mapping problems to exit status 2.
pub fn load_config(environment: &Environment, flags: &Flags) -> Result<Loaded, Failure> {
    config::load(environment, flags).map_err(Failure::from)
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
        policy.with_shell(crate::confine::Status::of(
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

/// How shell commands run in `root`: confined by this `offcode` binary
/// acting as the helper, unless the config turned it off or the kernel
/// cannot.
pub fn shell(environment: &Environment, config: &Config, root: &std::path::Path) -> Arc<Shell> {
    let helper = std::env::current_exe().unwrap_or_else(|_| "offcode".into());
    Arc::new(Shell::new(
        helper,
        root,
        &config.sandbox,
        environment.var("HOME"),
    ))
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

/// All of standard input; a redirected file is read in one allocation.
pub fn read_stdin() -> Result<String, Failure> {
    let size = rustix::fs::fstat(std::io::stdin()).map_or(0, |s| s.st_size);
    let mut text = String::with_capacity(usize::try_from(size).unwrap_or(0));
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .map_err(|e| Failure::new(&e, EXIT_USAGE))?;
    Ok(text)
}

/// The client for a command that talks to the server once; it warns on
/// stderr when certificate checks are off.
fn command_client(
    config: &crate::config::Config,
    environment: &Environment,
) -> Result<Client, Failure> {
    let client = client(config, environment)?;
    if config.tls.insecure_skip_verify && config.base_url.starts_with("https") {
        #[expect(clippy::print_stderr, reason = "a warning for the user of a command")]
        {
            eprintln!("warning: {}", crate::client::net::INSECURE_WARNING);
        }
    }
    Ok(client)
}

/// The client for the configured endpoint; bad TLS or proxy settings are
/// a usage error.
pub fn client(
    config: &crate::config::Config,
    environment: &Environment,
) -> Result<Client, Failure> {
    Client::with_env(config, &|name| environment.var(name).map(str::to_owned)).map_err(|e| {
        Failure::new(&e, EXIT_USAGE)
            .with_hint("Fix `tls` in the config, or the proxy variables (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`)")
    })
}

/// A client error as a top-level failure with a hint for the usual causes.
pub fn client_failure(error: &client::Error, base_url: &str) -> Failure {
    let failure = Failure::new(error, EXIT_FAILED);
    match error {
        client::Error::Connect { .. } if error.is_certificate_problem() => failure.with_hint(
            format!("The server's certificate is not trusted: {}", client::CERTIFICATE_FIX),
        ),
        client::Error::Connect { .. } => failure.with_hint(format!(
            "Is the model server running at `{base_url}`? Set `base_url` in `~/.config/offcode/offcode.jsonc` or `OFFCODE_BASE_URL`"
        )),
        client::Error::Status { status: 401 | 403, .. } => failure.with_hint(
            "Set the endpoint's API key with `OFFCODE_API_KEY` or `api_key` in the config",
        ),
        client::Error::Status { status: 404, .. } => failure.with_hint(
            "Check `base_url` (it usually ends in `/v1`) and the model name (`offcode models`)",
        ),
        _ => failure,
    }
}

/// `offcode models`.
pub fn models(as_json: bool, environment: &Environment) -> Result<u8, Failure> {
    let loaded = load_config(environment, &Flags::default())?;
    let client = command_client(&loaded.config, environment)?;
    let models = client
        .list_models()
        .map_err(|e| client_failure(&e, client.base_url()))?;
    if as_json {
        let text = serde_json::to_string_pretty(&models).unwrap_or_default();
        out(&format!("{text}\n"))?;
        return Ok(0);
    }
    let width = models.iter().map(|m| m.id.len()).max().unwrap_or(0).max(5);
    let mut text = format!("{:width$}  {:>8}  OWNED BY\n", "MODEL", "CONTEXT");
    for model in &models {
        let context = model
            .max_model_len
            .map_or_else(|| "-".to_owned(), |n| n.to_string());
        let owner = model.owned_by.as_deref().unwrap_or("-");
        let _ = writeln!(text, "{:width$}  {context:>8}  {owner}", model.id);
    }
    if models.is_empty() {
        text = format!("The server at `{}` lists no models\n", client.base_url());
    }
    out(&text)?;
    Ok(0)
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

/// `offcode context`.
pub fn context(args: &crate::cli::ContextArgs, environment: &Environment) -> Result<u8, Failure> {
    let loaded = load_config(environment, &Flags::default())?;
    let sandbox = workspace(environment)?;
    let policy = policy_source(environment, &Flags::default(), &loaded, sandbox.root())?;
    let current = policy.current().ok();
    let (assembly, skills) =
        workspace_context(environment, &sandbox, &loaded.config, current.as_deref());
    let store = session_store(environment)?;
    let session_failure = |e: crate::session::Error| Failure::new(&e, EXIT_USAGE);
    let id = match (&args.session, args.r#continue) {
        (Some(id), _) => Some(id.clone()),
        (None, true) => Some(
            store
                .latest_for(&environment.cwd)
                .map_err(session_failure)?,
        ),
        (None, false) => None,
    };
    let (history, session) = match &id {
        Some(id) => (store.load(id).map_err(session_failure)?.1, id.clone()),
        None => (Vec::new(), "new".to_owned()),
    };
    let client = command_client(&loaded.config, environment)?;
    // The limit: the config's, else the server's for the configured model.
    let limit = loaded
        .config
        .context_limit
        .or_else(|| client.context_length(loaded.config.model.as_deref()));
    let specs = crate::tools::Registry::default()
        .with_skills(skills)
        .specs();
    let report = crate::context::report(&assembly, &specs, &history, &session, limit, None);
    if args.json {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        out(&format!("{text}\n"))?;
        return Ok(0);
    }
    let palette = crate::ui::render::Palette::new(false);
    let mut text = String::new();
    for line in crate::ui::render::context_report(&report, 80) {
        let _ = writeln!(text, "{}", palette.paint(&line));
    }
    for warning in &assembly.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    out(&text)?;
    Ok(0)
}

/// `offcode sessions`.
pub fn sessions(args: &SessionsArgs, environment: &Environment) -> Result<u8, Failure> {
    let store = session_store(environment)?;
    let cwd = environment.cwd.display().to_string();
    let summaries: Vec<_> = store
        .list()
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?
        .into_iter()
        .filter(|s| args.all || s.meta.cwd == cwd)
        .collect();
    if args.json {
        let rows: Vec<_> = summaries
            .iter()
            .map(|s| {
                json!({"id": s.id, "updated": s.updated, "cwd": s.meta.cwd, "model": s.meta.model,
                       "messages": s.messages, "title": s.title})
            })
            .collect();
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        ))?;
        return Ok(0);
    }
    if summaries.is_empty() {
        let scope = if args.all {
            String::new()
        } else {
            format!(" for `{cwd}`")
        };
        out(&format!(
            "No sessions{scope} (use --all to list every directory)\n"
        ))?;
        return Ok(0);
    }
    let mut text = String::from("SESSION                 UPDATED (UTC)      MSGS  TITLE\n");
    for s in &summaries {
        let updated: String = s.updated.replace('T', " ").chars().take(16).collect();
        let title = if args.all {
            format!("{}  {}", s.meta.cwd, s.title)
        } else {
            s.title.clone()
        };
        let _ = writeln!(
            text,
            "{:22}  {updated:16}  {:>4}  {title}",
            s.id, s.messages
        );
    }
    out(&text)?;
    Ok(0)
}

/// `offcode config`.
pub fn config(as_json: bool, environment: &Environment) -> Result<u8, Failure> {
    let loaded = load_config(environment, &Flags::default())?;
    let entries = loaded.entries();
    if as_json {
        let values: serde_json::Map<_, _> = entries
            .iter()
            .map(|(path, value, source)| {
                (
                    path.clone(),
                    json!({"value": value, "source": source.to_string()}),
                )
            })
            .collect();
        let files: Vec<_> = loaded
            .files
            .iter()
            .map(|f| json!({"path": f.path.display().to_string(), "loaded": f.loaded}))
            .collect();
        let text = serde_json::to_string_pretty(&json!({"values": values, "files": files}))
            .unwrap_or_default();
        out(&format!("{text}\n"))?;
        return Ok(0);
    }
    let mut text = String::from("Config files (later ones win):\n");
    for file in &loaded.files {
        let state = if file.loaded { "loaded" } else { "not found" };
        let _ = writeln!(
            text,
            "  {}  ({state})",
            Loaded::describe_file(file, &environment.cwd)
        );
    }
    text.push_str("\nEffective values:\n");
    let width = entries.iter().map(|(p, ..)| p.len()).max().unwrap_or(0);
    for (path, value, source) in &entries {
        let source = Loaded::describe_source(source, &environment.cwd);
        let _ = writeln!(text, "  {path:width$} = {value}  # {source}");
    }
    out(&text)?;
    Ok(0)
}

/// Runs `work`; when it takes longer than `after`, `notice` goes to
/// standard error meanwhile, so a silent server is never a silent wait.
pub fn with_notice<T>(after: std::time::Duration, notice: String, work: impl FnOnce() -> T) -> T {
    let (done, waiter) = std::sync::mpsc::channel::<()>();
    let shown = std::thread::spawn(move || {
        if waiter.recv_timeout(after) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            let _ = writeln!(std::io::stderr(), "{notice}");
        }
    });
    let result = work();
    drop(done);
    let _ = shown.join();
    result
}
