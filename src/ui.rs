//! The interactive terminal UI: `offcode` with no subcommand.
//!
//! Output goes into the terminal's normal scrollback; while the agent
//! works, a live area at the bottom shows text still arriving, queued
//! input, an input line and the status line ([`live_turn`]). Between turns the
//! reedline editor reads the next prompt ([`input`]). Without a terminal
//! the same loop reads plain lines and prints finished lines ([`prompt_loop`]).

pub mod app;
pub mod complete;
pub mod input;
pub mod line;
pub mod live_turn;
pub mod markdown;
pub mod paint;
mod prompt;
pub mod prompt_loop;
pub mod render;
#[cfg(test)]
mod screens;
#[cfg(test)]
mod snapshots;
pub mod tty;
pub mod view;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use crate::config::Environment;
use crate::failure::Failure;
use crate::startup::{self, runtime};

/// Columns assumed when the terminal does not say.
const WIDTH: usize = 80;

/// `offcode` with no subcommand.
pub fn run(environment: &Environment, start: &startup::Start) -> Result<u8, Failure> {
    // The editor and the live area need a terminal they can drive;
    // anything else (a pipe, `TERM=dumb`) gets plain lines.
    let terminal = std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal()
        && environment.var("TERM").is_some_and(|term| term != "dumb");
    if terminal {
        ask_trust(environment)?;
    }
    let setup = startup::prepare(environment, start, crate::protocol::Decider::User)?;
    let colour = std::io::stdout().is_terminal()
        && environment.var("NO_COLOR").is_none()
        && environment.var("OFFCODE_NO_COLOR").is_none();
    let session_path = setup.session.path.clone();
    let input = if terminal {
        let history = environment.data_dir().map(|dir| {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir);
            let history = dir.join("history");
            // Made private before the editor opens it (it would make it 0644).
            let _ = crate::paths::private_file()
                .create(true)
                .append(true)
                .open(&history);
            let _ = std::fs::set_permissions(
                &history,
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            );
            history
        });
        let root = setup.sandbox.root().to_owned();
        input::editor(history, complete::Completions::new(root), colour)
    } else {
        input::plain(!std::io::stdin().is_terminal())
    };
    let width = if terminal {
        crossterm::terminal::size().map_or(WIDTH, |(columns, _)| usize::from(columns).max(10))
    } else {
        WIDTH
    };
    install_panic_hook(crash_log(environment), session_path);
    if terminal {
        tty::quiet();
    }
    let runtime = runtime()?;
    let code = runtime.block_on(prompt_loop::run(
        environment,
        setup,
        input,
        (colour, width),
        start.prompt.clone(),
    ));
    tty::restore();
    // A model list still on its way (an endpoint that does not answer)
    // must not hold up leaving.
    runtime.shutdown_background();
    Ok(code)
}

/// A project config that would loosen the policy and is not trusted yet:
/// say what it would loosen and ask, once, before anything starts. Any
/// answer but `y` leaves it ignored (with a warning at start).
fn ask_trust(environment: &Environment) -> Result<(), Failure> {
    // No project file: nothing to ask, and no config read twice at start.
    if !crate::config::project_files(environment)
        .iter()
        .any(|file| file.exists())
    {
        return Ok(());
    }
    let loaded = startup::load_config(environment, &crate::config::Flags::default())?;
    let Some(loosening) = loaded.loosening.filter(|l| !l.trusted) else {
        return Ok(());
    };
    let mut err = std::io::stderr();
    let files: Vec<String> = loosening
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let _ = writeln!(
        err,
        "This folder's config ({}) would loosen offcode's safety settings:",
        files.join(", ")
    );
    for entry in &loosening.entries {
        let _ = writeln!(err, "  {entry}");
    }
    let _ = write!(
        err,
        "A cloned repository can ship such a file. Trust this folder and apply them? [y/N] "
    );
    let _ = err.flush();
    if answered_yes() {
        let store = crate::trust::Store::in_dir(environment.data_dir().as_deref());
        store
            .trust(&loosening)
            .map_err(|e| Failure::new(&e, crate::failure::EXIT_FAILED))?;
        let _ = writeln!(err, "Trusted; `offcode trust --revoke` forgets it.");
    }
    Ok(())
}

/// The answer to a yes-or-no question at start: one key on a terminal, as
/// approvals take (`y` is yes, any other key no, echoed), or a line when
/// input is not a terminal. A key answers only standing alone, a quiet
/// moment before and after it: keys typed before the question showed, in
/// its grace period, or in a stream (each within the grace of the one
/// before: typing ahead, a held key, the first letter of a sentence begun
/// after a pause) are not an answer. Outside testers trusted a folder with
/// a stream of `y` that ran past the first grace period, and approved a
/// command with typing begun after a pause.
fn answered_yes() -> bool {
    use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
    let terminal = std::io::stdin().is_terminal();
    if !terminal || crossterm::terminal::enable_raw_mode().is_err() {
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        return matches!(answer.trim(), "y" | "Y" | "yes");
    }
    let mut quiet_since = std::time::Instant::now();
    let yes = loop {
        match crossterm::event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                let quiet = quiet_since.elapsed() >= live_turn::APPROVAL_GRACE;
                quiet_since = std::time::Instant::now();
                // It answers only standing alone: a key right after it
                // makes it the first of a stream (typing begun after a
                // pause, a paste without its markers), which is not one.
                let alone = || !crossterm::event::poll(live_turn::APPROVAL_GRACE).unwrap_or(true);
                if quiet && alone() {
                    let plain = (key.modifiers - KeyModifiers::SHIFT).is_empty();
                    break plain && matches!(key.code, KeyCode::Char('y' | 'Y'));
                }
            }
            Ok(Event::Paste(_)) => quiet_since = std::time::Instant::now(),
            Ok(_) => {}
            Err(_) => break false,
        }
    };
    let _ = crossterm::terminal::disable_raw_mode();
    let _ = writeln!(std::io::stderr(), "{}", if yes { "y" } else { "n" });
    yes
}

/// Where a crash report goes: the state directory.
fn crash_log(environment: &Environment) -> Option<PathBuf> {
    let dir = environment
        .var("OFFCODE_STATE_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            environment
                .var("HOME")
                .map(|home| PathBuf::from(home).join(".local/state/offcode"))
        })?;
    Some(dir.join("crash.log"))
}

/// A panic anywhere puts the terminal back (the mode it started in, cursor shown,
/// paste mode off), appends the report to the crash log and says where it
/// and the session are. Session lines are written as they happen, so the
/// session file is whole.
fn install_panic_hook(log: Option<PathBuf>, session: PathBuf) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        crate::tools::kill_running();
        let _ = crossterm::terminal::disable_raw_mode();
        tty::restore();
        let mut err = std::io::stderr();
        paint::restore(&mut err);
        let report = format!(
            "offcode {} panicked: {info}\n{}\n",
            env!("CARGO_PKG_VERSION"),
            std::backtrace::Backtrace::force_capture()
        );
        let written = log.as_ref().is_some_and(|path| {
            path.parent()
                .is_some_and(|dir| crate::paths::private_dir(dir).is_ok())
                && crate::paths::private_file()
                    .create(true)
                    .append(true)
                    .open(path)
                    .and_then(|mut file| file.write_all(report.as_bytes()))
                    .is_ok()
        });
        let _ = writeln!(err, "offcode stopped on an internal error: {info}");
        if written && let Some(path) = &log {
            let _ = writeln!(err, "The report is in {}", path.display());
        }
        let _ = writeln!(
            err,
            "The session is saved in {}; `offcode --continue` resumes it.",
            session.display()
        );
        if !written {
            previous(info);
        }
        std::process::exit(crate::failure::EXIT_FAILED.into());
    }));
}
