//! offcode's log: one file under the XDG state dir
//! (`~/.local/state/offcode/offcode.log`), rotated by size, private to the
//! user. It says what happened (sessions, tool calls and their outcome,
//! permission decisions, retries, MCP servers, warnings and errors), never
//! what was said or what files hold: prompts and answers only when `debug`
//! is set.
//!
//! One logger per process, set up by [`init`]; before that (and in tests
//! that never call it) every line is dropped.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::protocol::EventMsg;

/// The `log` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// Whether anything is logged.
    pub enabled: bool,
    /// The file is rotated past this many KiB.
    pub max_kb: u64,
    /// Rotated files kept (`offcode.log.1` is the newest).
    pub keep: usize,
    /// Also prompts and answers (for a bug report; they may hold secrets).
    pub debug: bool,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_kb: 1024,
            keep: 3,
            debug: false,
        }
    }
}

struct Logger {
    path: PathBuf,
    settings: LogSettings,
}

static LOGGER: OnceLock<Mutex<Option<Logger>>> = OnceLock::new();

/// The log file in the state dir `state`.
pub fn path_in(state: &Path) -> PathBuf {
    state.join("offcode.log")
}

/// Starts logging to `path` (a second call changes nothing).
pub fn init(path: PathBuf, settings: LogSettings) {
    let slot = LOGGER.get_or_init(|| Mutex::new(None));
    let mut logger = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if logger.is_none() && settings.enabled {
        *logger = Some(Logger { path, settings });
    }
}

/// Writes one line: `TIME PID KIND text` (newlines in `text` escaped).
pub fn line(kind: &str, text: &str) {
    let Some(slot) = LOGGER.get() else { return };
    let guard = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(logger) = guard.as_ref() else { return };
    let text: String = text.replace('\n', "\\n").chars().take(2_000).collect();
    let entry = format!(
        "{} {} {kind} {text}\n",
        crate::session::now_rfc3339(),
        std::process::id()
    );
    let _ = write(logger, entry.as_bytes());
}

fn write(logger: &Logger, entry: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = logger.path.parent() {
        crate::paths::private_dir(dir)?;
    }
    let size = std::fs::metadata(&logger.path).map_or(0, |m| m.len());
    if size + entry.len() as u64 > logger.settings.max_kb.saturating_mul(1024) && size > 0 {
        rotate(&logger.path, logger.settings.keep);
    }
    let mut file = crate::paths::private_file()
        .create(true)
        .append(true)
        .open(&logger.path)?;
    file.write_all(entry)
}

/// `offcode.log` becomes `.1`, `.1` becomes `.2`, … up to `keep`; older
/// ones go.
fn rotate(path: &Path, keep: usize) {
    let numbered = |n: usize| PathBuf::from(format!("{}.{n}", path.display()));
    if keep == 0 {
        let _ = std::fs::remove_file(path);
        return;
    }
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        let _ = std::fs::rename(numbered(n), numbered(n + 1));
    }
    let _ = std::fs::rename(path, numbered(1));
}

/// Whether prompts and answers are logged.
fn debug() -> bool {
    LOGGER.get().is_some_and(|slot| {
        slot.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .is_some_and(|l| l.settings.debug)
    })
}

/// Logs what an event says, when it says something worth keeping.
pub fn event(msg: &EventMsg) {
    if LOGGER.get().is_none() {
        return;
    }
    match msg {
        EventMsg::SessionConfigured(c) => line(
            "session",
            &format!(
                "{} model {} at {} agent {}{}",
                c.session_id,
                c.model,
                c.base_url,
                c.agent,
                if c.resumed { " (resumed)" } else { "" }
            ),
        ),
        EventMsg::ToolCallEnd(end) => line(
            "tool",
            &format!("{} {:?}: {}", end.name, end.outcome, end.summary),
        ),
        EventMsg::PermissionDecision(d) => line(
            "permission",
            &format!("{} {:?} by {:?} ({})", d.tool, d.decision, d.by, d.rule),
        ),
        EventMsg::Retry(r) => line(
            "retry",
            &format!(
                "attempt {}/{} in {} ms: {}",
                r.attempt, r.max_retries, r.delay_ms, r.reason
            ),
        ),
        EventMsg::Mcp(m) => line(
            "mcp",
            &format!(
                "{} {:?} ({} tools): {}",
                m.server, m.state, m.tools, m.detail
            ),
        ),
        EventMsg::Warning { message } => line("warning", message),
        EventMsg::Error { message, .. } => line("error", message),
        EventMsg::ModelChanged { model, limit } => {
            line("model", &format!("{model} (context {limit:?})"));
        }
        EventMsg::TurnComplete(t) => line("turn", &format!("{:?}", t.status)),
        EventMsg::Rewind(r) => line(
            "rewind",
            &format!("{:?} turn {:?}: {} files", r.kind, r.turn, r.lines.len()),
        ),
        EventMsg::TurnStarted { text } if debug() => line("prompt", text),
        EventMsg::AssistantMessage(m) if debug() => line("answer", &m.text),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_keeps_the_newest_files_and_each_is_private() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let logger = Logger {
            path: dir.path().join("state/offcode.log"),
            settings: LogSettings {
                max_kb: 1,
                keep: 2,
                ..LogSettings::default()
            },
        };
        for n in 0..100 {
            write(
                &logger,
                format!("line {n:03} {}\n", "x".repeat(80)).as_bytes(),
            )
            .unwrap();
        }
        let read = |name: &str| std::fs::read_to_string(dir.path().join("state").join(name));
        let current = read("offcode.log").unwrap();
        assert!(current.ends_with(&format!("line 099 {}\n", "x".repeat(80))));
        assert!(current.len() <= 1024);
        let one = read("offcode.log.1").unwrap();
        let two = read("offcode.log.2").unwrap();
        assert!(one.len() <= 1024 && two.len() <= 1024);
        assert!(read("offcode.log.3").is_err(), "only `keep` are kept");
        assert!(two < one, "older lines rotate further");
        let meta = std::fs::metadata(dir.path().join("state/offcode.log")).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        let folder = std::fs::metadata(dir.path().join("state")).unwrap();
        assert_eq!(folder.mode() & 0o777, 0o700);
    }
}
