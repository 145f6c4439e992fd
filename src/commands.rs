//! The subcommands besides `run`: `models`, `sessions`, `config` and
//! `context` here; `doctor` ([`mod@doctor`]), `tool` ([`mod@tool`]),
//! `policy check` and `trust` ([`policy`]) in their own modules. Each
//! gets what it needs from [`crate::startup`].

mod doctor;
mod mcp;
mod policy;
mod rewind;
mod tool;

pub use doctor::run as doctor;
pub use mcp::mcp;
pub use policy::{policy_check, policy_show, trust};
pub use rewind::{diff, export, revert};
pub use tool::tool;

use std::fmt::Write as _;

use serde_json::json;

use crate::cli::SessionsArgs;
use crate::client::Client;
use crate::config::{Environment, Flags, Loaded};
use crate::failure::{EXIT_FAILED, EXIT_USAGE, Failure};
use crate::startup::{load_config, policy_source, session_store, workspace, workspace_context};
use crate::stdio::out;

/// The client for a command that talks to the server once; it warns on
/// stderr when certificate checks are off.
fn command_client(
    config: &crate::config::Config,
    environment: &Environment,
) -> Result<Client, Failure> {
    let client = crate::startup::client(config, environment)?;
    if config.tls.insecure_skip_verify && config.base_url.starts_with("https") {
        #[expect(clippy::print_stderr, reason = "a warning for the user of a command")]
        {
            eprintln!("warning: {}", crate::client::net::INSECURE_WARNING);
        }
    }
    Ok(client)
}

/// `offcode models`.
pub fn models(as_json: bool, environment: &Environment) -> Result<u8, Failure> {
    let loaded = load_config(environment, &Flags::default())?;
    if !loaded.config.provider.is_empty() {
        return provider_models(&loaded.config, as_json);
    }
    let client = command_client(&loaded.config, environment)?;
    let models = client
        .list_models()
        .map_err(|e| Failure::from_client(&e, client.base_url()))?;
    if as_json {
        let text = serde_json::to_string_pretty(&models).unwrap_or_default();
        out(&format!("{text}\n"))?;
        return Ok(0);
    }
    let width = models.iter().map(|m| m.id.len()).max().unwrap_or(0).max(5);
    let mut text = format!("{:width$}  {:>8}  OWNED BY\n", "MODEL", "CONTEXT");
    for model in &models {
        let context = model
            .context()
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

/// `offcode models` with providers: every endpoint's models, grouped,
/// by the names `--model` and `/models` take; an endpoint that does not
/// answer is named on stderr, and only when none answers is it a failure.
fn provider_models(config: &crate::config::Config, as_json: bool) -> Result<u8, Failure> {
    let pool = crate::client::Pool::default();
    // A bare model id is the shorthand's; no model at all is the first
    // provider's.
    let shorthand_in_use = config
        .model
        .as_deref()
        .is_some_and(|m| config.split_reference(m).is_none());
    let endpoints = crate::catalogue::endpoints(config, &pool, shorthand_in_use);
    let listed = crate::startup::runtime()?.block_on(crate::catalogue::fetch(endpoints));
    let (models, providers) = crate::catalogue::models(config, &listed);
    let mut failed = Vec::new();
    for provider in &providers {
        if let Some(error) = &provider.error {
            failed.push(format!(
                "{} ({}) did not answer: {error}",
                provider.label, provider.base_url
            ));
        }
    }
    if as_json {
        let text = serde_json::to_string_pretty(&models).unwrap_or_default();
        out(&format!("{text}\n"))?;
    } else {
        let current = config.model.clone().unwrap_or_default();
        let lines = crate::ui::render::models(&models, &providers, &current, 100);
        let mut text = String::new();
        for line in &lines {
            let _ = writeln!(text, "{}", crate::ui::render::Lines::plain(line));
        }
        out(&text)?;
    }
    #[expect(clippy::print_stderr, reason = "which endpoints did not answer")]
    for line in &failed {
        eprintln!("warning: {line}");
    }
    if !failed.is_empty() && failed.len() == providers.len() {
        return Err(Failure::message(
            "No configured server answered",
            EXIT_FAILED,
        ));
    }
    Ok(0)
}

/// `offcode context`.
pub fn context(args: &crate::cli::ContextArgs, environment: &Environment) -> Result<u8, Failure> {
    let loaded = load_config(environment, &Flags::default())?;
    let sandbox = workspace(environment)?;
    let policy = policy_source(environment, &Flags::default(), &loaded, sandbox.root())?;
    let current = policy.current().ok();
    let (mut assembly, skills) =
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
    let limit = crate::context::context_limit(loaded.config.context_limit, None, || {
        client.context_length(loaded.config.model.as_deref())
    });
    // The compact profile, chosen as a session would.
    let model = loaded.config.model.clone().or_else(|| {
        (loaded.config.compact.forced().is_none())
            .then(|| client.list_models().ok()?.first().map(|m| m.id.clone()))
            .flatten()
    });
    let (compact, _) = crate::agents::compact_choice(
        loaded.config.compact.forced(),
        model.as_deref().unwrap_or_default(),
        limit,
    );
    assembly.set_compact(compact);
    let mut specs = crate::tools::Registry::default()
        .with_skills(skills)
        .specs();
    if compact {
        specs.retain(|s| !crate::agents::LEFT_OUT_WHEN_COMPACT.contains(&s.function.name.as_str()));
    }
    // The MCP servers are started, as a session would, to count their tools.
    let servers = (!loaded.config.mcp.is_empty())
        .then(|| mcp::servers(environment, &loaded.config, sandbox.root()));
    let reports = match &servers {
        Some(servers) => {
            let (reports, offered) = crate::startup::runtime()?.block_on(mcp::started(servers));
            specs.extend(offered);
            reports
        }
        None => Vec::new(),
    };
    let mut report = crate::context::report(&assembly, &specs, &history, &session, limit, None);
    crate::mcp::context_parts(&mut report, &reports, &specs);
    if args.json {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        out(&format!("{text}\n"))?;
        return Ok(0);
    }
    let palette = crate::ui::render::Palette::new(false);
    let mut text = String::new();
    for line in crate::ui::render::context_report(&report, 80) {
        let _ = writeln!(text, "{}", crate::ui::paint::line(palette, &line));
    }
    for warning in &assembly.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    out(&text)?;
    Ok(0)
}

/// `offcode sessions`.
pub fn sessions(args: &SessionsArgs, environment: &Environment) -> Result<u8, Failure> {
    if !args.delete.is_empty() || args.prune.is_some() {
        return rewind::delete(&args.delete, args.prune, args.all, environment);
    }
    let store = session_store(environment)?;
    let cwd = environment.cwd.display().to_string();
    let summaries: Vec<_> = store
        .list()
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?
        .into_iter()
        // Subagents' sessions belong to their parents'.
        .filter(|s| (args.all || s.meta.cwd == cwd) && s.meta.parent.is_none())
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
    // The agents are read as a session would, so a bad one fails here too.
    crate::agents::Agents::load(
        &loaded.agent_layers,
        environment.config_dir().as_deref(),
        None,
    )
    .map_err(|e| Failure::new(&e, EXIT_USAGE))?;
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
        let ignored: serde_json::Map<_, _> = loaded
            .ignored
            .iter()
            .map(|(path, keys)| (path.display().to_string(), json!(keys)))
            .collect();
        let text = serde_json::to_string_pretty(
            &json!({"values": values, "files": files, "ignored": ignored}),
        )
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
    for (path, keys) in &loaded.ignored {
        let file =
            Loaded::describe_source(&crate::config::Source::File(path.clone()), &environment.cwd);
        let _ = writeln!(text, "\nIgnored in {file} (OpenCode's, no meaning here):");
        for key in keys {
            let _ = writeln!(text, "  {key}");
        }
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

/// `offcode logs`: the log's path, then its last lines.
pub fn logs(args: &crate::cli::LogsArgs, environment: &Environment) -> Result<u8, Failure> {
    let Some(state) = environment.state_dir() else {
        return Err(Failure::message("Cannot tell where the log is", EXIT_USAGE)
            .with_hint("Set `HOME` or `XDG_STATE_HOME`"));
    };
    let path = crate::log::path_in(&state);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            out(&format!("{}\n(nothing logged yet)\n", path.display()))?;
            return Ok(0);
        }
        Err(e) => {
            return Err(Failure::message(
                format!("Could not read `{}`: {e}", path.display()),
                EXIT_FAILED,
            ));
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(args.lines)..];
    let mut shown = format!("{}\n", path.display());
    for line in tail {
        let _ = writeln!(shown, "{line}");
    }
    out(&shown)?;
    Ok(0)
}

/// `offcode cache clear`.
pub fn cache_clear(environment: &Environment) -> Result<u8, Failure> {
    let Some(dir) = environment.cache_dir() else {
        return Err(
            Failure::message("Cannot tell where the cache is", EXIT_USAGE)
                .with_hint("Set `HOME`, `XDG_CACHE_HOME` or `OFFCODE_CACHE_DIR`"),
        );
    };
    let mut removed = Vec::new();
    for name in ["servers.json", "servers.json.lock"] {
        let path = dir.join(name);
        if std::fs::remove_file(&path).is_ok() {
            removed.push(path.display().to_string());
        }
    }
    crate::log::line("cache", "cleared by `offcode cache clear`");
    if removed.is_empty() {
        out(&format!("The cache in `{}` was empty\n", dir.display()))?;
    } else {
        out(&format!("Removed {}\n", removed.join(", ")))?;
    }
    Ok(0)
}

/// `offcode config schema`: the JSON schema of a config file.
pub fn config_schema() -> Result<u8, Failure> {
    let schema = serde_json::to_string_pretty(&crate::config::schema())
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
    out(&format!("{schema}\n"))?;
    Ok(0)
}

/// `offcode completions SHELL`: the completion script, from the clap
/// definitions.
pub fn completions(shell: clap_complete::Shell) -> Result<u8, Failure> {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut <crate::cli::Cli as clap::CommandFactory>::command(),
        "offcode",
        &mut script,
    );
    out(&String::from_utf8_lossy(&script))?;
    Ok(0)
}

/// `offcode man`: the manual page in roff, from the clap definitions; with
/// `dir`, it and a page per subcommand written there.
pub fn man(dir: Option<&std::path::Path>) -> Result<u8, Failure> {
    let mut command = <crate::cli::Cli as clap::CommandFactory>::command();
    // The one-line name the page is found by; the paragraph below it.
    let about = command.get_about().cloned().unwrap_or_default();
    command = command
        .version(crate::cli::VERSION)
        .about("an offline coding agent for the terminal")
        .long_about(about);
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(command, dir))
            .map_err(|e| {
                Failure::new(&e, EXIT_FAILED).with_hint(format!("writing to {}", dir.display()))
            })?;
        return Ok(0);
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .date(env!("OFFCODE_BUILD_DATE"))
        .render(&mut page)
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
    out(&String::from_utf8_lossy(&page))?;
    Ok(0)
}
