//! `offcode revert`, `offcode diff`, `offcode export` and the deleting side
//! of `offcode sessions`: sessions and their checkpoints from the command
//! line, without the UI.

use std::fmt::Write as _;

use crate::checkpoint::rewind;
use crate::cli::{DiffArgs, ExportArgs, RevertArgs};
use crate::config::{Environment, Flags};
use crate::failure::{EXIT_FAILED, EXIT_USAGE, Failure};
use crate::session::{EntryBody, Store};
use crate::startup::{load_config, session_store, workspace};
use crate::stdio::out;

/// The session asked for, or the latest of this directory.
fn chosen(
    store: &Store,
    given: Option<&String>,
    environment: &Environment,
) -> Result<String, Failure> {
    match given {
        Some(id) => Ok(id.clone()),
        None => store.latest_for(&environment.cwd).map_err(|e| {
            Failure::new(&e, EXIT_USAGE)
                .with_hint("Name one with `--session ID` (`offcode sessions` lists them)")
        }),
    }
}

/// The workspace's checkpoints for session `id`, which must have been
/// started here.
fn checkpoints_here(
    environment: &Environment,
    meta: &crate::session::Meta,
    id: &str,
) -> Result<
    (
        std::sync::Arc<crate::sandbox::Sandbox>,
        crate::checkpoint::Checkpoints,
    ),
    Failure,
> {
    let sandbox = workspace(environment)?;
    if meta.cwd != environment.cwd.display().to_string() {
        return Err(Failure::message(
            format!(
                "Session `{id}` was started in `{}`, not here; run this there",
                meta.cwd
            ),
            EXIT_USAGE,
        ));
    }
    let loaded = load_config(environment, &Flags::default())?;
    let settings = loaded.config.checkpoints;
    let data = environment.data_dir().ok_or_else(|| {
        Failure::message("Cannot tell where checkpoints are kept", EXIT_USAGE)
            .with_hint("Set `HOME`, `XDG_DATA_HOME` or `OFFCODE_DATA_DIR`")
    })?;
    let sessions = session_store(environment)?;
    let (checkpoints, _) = crate::checkpoint::Checkpoints::open(
        &data,
        sandbox.root(),
        id,
        settings,
        environment.own_files(),
        &|other: &str| sessions.in_use(other),
    )
    .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
    Ok((sandbox, checkpoints))
}

fn write_lines(text: &mut String, lines: &[String]) {
    for line in lines {
        let _ = writeln!(text, "  {line}");
    }
}

/// `offcode revert`.
pub fn revert(args: &RevertArgs, environment: &Environment) -> Result<u8, Failure> {
    let store = session_store(environment)?;
    let id = chosen(&store, args.session.as_ref(), environment)?;
    let session_failure = |e: crate::session::Error| Failure::new(&e, EXIT_USAGE);
    // Open (locked): a session in use by a running offcode is refused.
    let mut session = store.open(&id).map_err(session_failure)?;
    let turns = rewind::turns(&session.branch().map_err(session_failure)?);
    let Some(last) = turns.last() else {
        out(&format!("Session `{id}` has no turns; nothing to revert\n"))?;
        return Ok(0);
    };
    let number = args
        .to
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(last.number);
    let Some(turn) = turns.iter().find(|t| t.number == number).cloned() else {
        return Err(Failure::message(
            format!(
                "Session `{id}` has no turn {number}; it has {}",
                crate::protocol::count(turns.len(), "turn")
            ),
            EXIT_USAGE,
        ));
    };
    let (sandbox, mut checkpoints) = checkpoints_here(environment, &session.meta, &id)?;
    let plan = rewind::revert_plan(&mut checkpoints, &turns, number)
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
    let mut text = String::new();
    let _ = writeln!(text, "Turns of session {id}:");
    for t in &turns {
        let mark = if t.number >= number { "×" } else { " " };
        let _ = writeln!(text, " {mark}{:>3}  {}", t.number, t.prompt);
    }
    let applied = if args.yes {
        rewind::apply(checkpoints.store(), &sandbox, &plan)
            .map_err(|e| Failure::new(&e, EXIT_FAILED))?
    } else {
        rewind::Applied::default()
    };
    let verb = match (args.yes, applied.written) {
        (false, _) => "Reverting would take",
        (true, true) => "Reverted",
        (true, false) => "Reverting was to take",
    };
    let _ = writeln!(
        text,
        "\n{verb} the conversation back to before turn {number} ({}), and the files:",
        crate::protocol::count(turns.len() + 1 - number, "turn")
    );
    if plan.lines().is_empty() {
        text.push_str("  (no file the agent changed needs putting back)\n");
    }
    write_lines(&mut text, &plan.lines());
    if !args.yes {
        text.push_str("\nNothing was changed. Run again with --yes to do it.\n");
        out(&text)?;
        return Ok(0);
    }
    if !applied.written {
        text.push_str("\nNothing was changed, files or conversation: these cannot be put back as they are now:\n");
        for left in &applied.failed {
            let _ = writeln!(text, "  {}: {}", rewind::shown(&left.path), left.reason);
        }
        out(&text)?;
        return Ok(EXIT_FAILED);
    }
    let failed = &applied.failed;
    if !failed.is_empty() {
        // Put back what could be; the conversation stays where it is, so
        // the same revert can be run again once the paths below are dealt
        // with (it then takes only what is still to put back).
        text.push_str("\nThe other files were put back. These could not be, so the conversation stays as it was (run the same revert again once they are dealt with):\n");
        for left in failed {
            let _ = writeln!(text, "  {}: {}", rewind::shown(&left.path), left.reason);
        }
        out(&text)?;
        return Ok(EXIT_FAILED);
    }
    session
        .rewind_to(turn.parent.as_deref())
        .map_err(session_failure)?;
    session
        .append(EntryBody::Revert {
            to_turn: number,
            restored: plan.restored(),
            kept: plan.kept(),
        })
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
    let _ = session.sync();
    for line in &applied.disarmed {
        let _ = writeln!(
            text,
            "warning: put back, then undone again (git settings that would run programs when a person next uses git): {}",
            rewind::visible(line)
        );
    }
    let _ = writeln!(
        text,
        "\nContinue from there with `offcode run --session {id} \"...\"`."
    );
    out(&text)?;
    Ok(0)
}

/// `offcode diff`.
pub fn diff(args: &DiffArgs, environment: &Environment) -> Result<u8, Failure> {
    let store = session_store(environment)?;
    let id = chosen(&store, args.session.as_ref(), environment)?;
    // Read without the lock: a running session can be looked at.
    let (meta, branch) = store
        .load_branch(&id)
        .map_err(|e| Failure::new(&e, EXIT_USAGE))?;
    let turns = rewind::turns(&branch);
    let (_, mut checkpoints) = checkpoints_here(environment, &meta, &id)?;
    let since = usize::try_from(args.since).unwrap_or(1);
    let (summary, diff) = crate::checkpoint::diff_since(&mut checkpoints, &turns, since)
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
    if summary.is_empty() {
        out(&format!("The agent changed no files in session {id}\n"))?;
        return Ok(0);
    }
    let mut text = String::new();
    for line in &summary {
        let _ = writeln!(text, "{line}");
    }
    if !args.stat {
        text.push('\n');
        // File content is the agent's: on a terminal, no escape sequence
        // of it reaches the screen.
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            text.push_str(&crate::ui::line::clean(&diff));
        } else {
            text.push_str(&diff);
        }
    }
    out(&text)?;
    Ok(0)
}

/// `offcode export`.
pub fn export(args: &ExportArgs, environment: &Environment) -> Result<u8, Failure> {
    let store = session_store(environment)?;
    let markdown = store
        .export(&args.id)
        .map_err(|e| Failure::new(&e, EXIT_USAGE))?;
    match &args.output {
        None => out(&markdown)?,
        Some(path) => {
            let written = crate::paths::private_file()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
                .and_then(|mut file| std::io::Write::write_all(&mut file, markdown.as_bytes()));
            written.map_err(|e| {
                Failure::message(
                    format!("Could not write `{}`: {e}", path.display()),
                    EXIT_FAILED,
                )
            })?;
        }
    }
    Ok(0)
}

/// `offcode sessions --delete` and `--prune`: the sessions go, with their
/// subagents' sessions and their checkpoints.
pub fn delete(
    ids: &[String],
    prune: Option<u64>,
    all: bool,
    environment: &Environment,
) -> Result<u8, Failure> {
    let store = session_store(environment)?;
    let mut gone = Vec::new();
    let mut status = 0;
    let mut text = String::new();
    let cwds: Vec<(String, String)> = store
        .list()
        .map(|list| list.into_iter().map(|s| (s.id, s.meta.cwd)).collect())
        .unwrap_or_default();
    for id in ids {
        match store.delete(id) {
            Ok(deleted) => gone.extend(deleted),
            Err(e) => {
                let _ = writeln!(text, "error: {e}");
                status = EXIT_FAILED;
            }
        }
    }
    if let Some(days) = prune {
        let cwd = (!all).then_some(environment.cwd.as_path());
        gone.extend(
            store
                .prune(cwd, days)
                .map_err(|e| Failure::new(&e, EXIT_FAILED))?,
        );
    }
    // Their checkpoints go too, and the objects no other session needs.
    let mut freed = 0;
    if let Some(data) = environment.data_dir() {
        let mut stores = std::collections::BTreeSet::new();
        for (id, cwd) in cwds.iter().filter(|(id, _)| gone.contains(id)) {
            let dir = crate::checkpoint::store_dir(&data, std::path::Path::new(cwd));
            let _ = std::fs::remove_file(dir.join("sessions").join(id));
            stores.insert(dir);
        }
        for dir in stores.iter().filter(|dir| dir.join("objects").is_dir()) {
            match crate::checkpoint::Store::open(dir).and_then(|(store, _)| store.sweep()) {
                Ok(swept) => freed += swept.bytes,
                Err(e) => {
                    let _ = writeln!(text, "warning: checkpoints in {}: {e}", dir.display());
                }
            }
        }
    }
    match gone.len() {
        0 if status == 0 => text.push_str("No session was deleted\n"),
        0 => {}
        n => {
            let _ = writeln!(
                text,
                "Deleted {}: {}{}",
                crate::protocol::count(n, "session"),
                gone.join(", "),
                if freed > 0 {
                    format!(
                        " (checkpoints: {} freed)",
                        crate::protocol::format_size(freed)
                    )
                } else {
                    String::new()
                }
            );
        }
    }
    out(&text)?;
    Ok(status)
}
