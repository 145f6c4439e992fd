//! The validation loop: a turn that changed files may end only once the
//! project still builds and its tests pass. The commands come from the
//! config's `validate`, else from the project type found at the root
//! (`cargo test`, `go build ./...` and `go test ./...`, `npm test`,
//! `pytest`, `make test`); each runs as a `bash` call would, through the
//! permission rules and confinement. A failure goes back to the model,
//! failing part first, and the turn goes on, up to `validate.attempts`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Instant, SystemTime};

use serde_json::json;

use super::permit::Refusal;
use super::state::AgentState;
use crate::cancel::Cancel;
use crate::protocol::{EventMsg, SubmissionId, TurnState, ValidationEvent, ValidationStatus};
use crate::session::{EntryBody, ToolCall};

/// Lines of a failure's output the model is shown.
const FAILING_LINES: usize = 80;
/// Files looked at for changes made by commands; past this, a command is
/// taken to have changed something.
const MOST_FILES: usize = 50_000;

/// What validates a project, and where that was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Plan {
    /// These commands, in order.
    Run {
        commands: Vec<String>,
        /// `config` or what was found (`Cargo.toml`).
        from: String,
    },
    /// Nothing fits; why.
    Nothing(String),
    /// Switched off in the config.
    Off,
}

/// The commands for the project at `root`: the config's, else a default
/// for what is found there.
pub(super) fn plan(root: &Path, config: &crate::config::ValidateConfig) -> Plan {
    if !config.enabled {
        return Plan::Off;
    }
    if let Some(commands) = &config.commands {
        let commands: Vec<String> = commands
            .iter()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect();
        return if commands.is_empty() {
            Plan::Off
        } else {
            Plan::Run {
                commands,
                from: "config `validate`".to_owned(),
            }
        };
    }
    detect(root).map_or_else(
        || {
            Plan::Nothing(
                "no Cargo.toml, go.mod, package.json with a test script, pytest tests, test_*.py files or Makefile test target at the root"
                    .to_owned(),
            )
        },
        |(commands, from)| Plan::Run {
            commands: commands.into_iter().map(str::to_owned).collect(),
            from: from.to_owned(),
        },
    )
}

/// The default commands for the project type at `root`.
fn detect(root: &Path) -> Option<(Vec<&'static str>, &'static str)> {
    let has = |name: &str| root.join(name).is_file();
    if has("Cargo.toml") {
        return Some((vec!["cargo test"], "Cargo.toml"));
    }
    if has("go.mod") {
        return Some((vec!["go build ./...", "go test ./..."], "go.mod"));
    }
    if let Ok(text) = std::fs::read_to_string(root.join("package.json"))
        && let Ok(package) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(test) = package["scripts"]["test"].as_str()
        // npm's placeholder, which only fails.
        && !test.contains("no test specified")
    {
        return Some((vec!["npm test"], "package.json"));
    }
    let python = has("pyproject.toml") || has("setup.py") || has("pytest.ini");
    if python && (root.join("tests").is_dir() || has_test_files(root)) {
        return Some((vec!["pytest -q"], "pytest tests"));
    }
    // Loose scripts with `test_*.py` beside them: the standard library's
    // runner, which needs nothing installed.
    if has_test_files(root) {
        return Some((vec!["python3 -m unittest -q"], "test_*.py files"));
    }
    let makefile = ["Makefile", "makefile", "GNUmakefile"]
        .iter()
        .find_map(|name| std::fs::read_to_string(root.join(name)).ok());
    if let Some(makefile) = makefile {
        for target in ["test", "check"] {
            let rule = format!("{target}:");
            if makefile.lines().any(|line| line.starts_with(&rule)) {
                let command = if target == "test" {
                    "make test"
                } else {
                    "make check"
                };
                return Some((vec![command], "Makefile"));
            }
        }
    }
    None
}

fn has_test_files(root: &Path) -> bool {
    std::fs::read_dir(root).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("test_") && name.ends_with(".py")
        })
    })
}

/// Whether a file the project tracks (what `.gitignore` does not hide)
/// was changed since `since`: how a turn tells that a command it ran
/// changed the code. Deleted files are not seen.
pub(super) fn changed_since(root: &Path, since: SystemTime) -> bool {
    crate::paths::refuse_blocking_ignore_files(root);
    let walk = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .filter_entry(|entry| {
            if entry.file_type().is_some_and(|kind| kind.is_dir()) {
                crate::paths::refuse_blocking_ignore_files(entry.path());
            }
            true
        })
        .build();
    for (seen, entry) in walk.filter_map(Result::ok).enumerate() {
        if seen > MOST_FILES {
            return true;
        }
        let changed = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .is_some_and(|modified| modified >= since);
        if changed {
            return true;
        }
    }
    false
}

/// A turn's validation: whether it changed files, and the attempts made.
#[derive(Debug)]
pub(super) struct Validation {
    /// When the turn started, for changes made by commands.
    started: SystemTime,
    /// A write, edit or patch worked.
    pub(super) changed: bool,
    /// A command ran (it may have changed files).
    pub(super) ran_command: bool,
    /// Validations run so far this turn.
    attempts: u32,
}

impl Validation {
    pub(super) fn new() -> Self {
        Self {
            // A second early, so a change in the turn's first second is
            // never taken for older (file systems keep coarse times).
            started: SystemTime::now() - std::time::Duration::from_secs(1),
            changed: false,
            ran_command: false,
            attempts: 0,
        }
    }
}

/// How a validation came out.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Passed, or nothing to validate: the turn is done.
    Done,
    /// Failed: the turn goes on with this note to the model.
    Retry(String),
    /// Failed on the last attempt.
    GaveUp(String),
    /// Not run: refused, or aborted.
    NotRun,
}

impl AgentState {
    /// Validates a turn that changed files; see [`Verdict`].
    pub(super) async fn validate(
        &mut self,
        id: SubmissionId,
        validation: &mut Validation,
        cancel: &Cancel,
    ) -> Verdict {
        let changed = validation.changed
            || (validation.ran_command && changed_since(self.sandbox.root(), validation.started));
        if !changed {
            return Verdict::Done;
        }
        let (commands, from) = match plan(self.sandbox.root(), &self.config.validate) {
            Plan::Off => return Verdict::Done,
            Plan::Nothing(why) => {
                if !self.said_no_validation {
                    self.said_no_validation = true;
                    self.warn(
                        id,
                        &format!("The changes were not validated: {why}. Set `validate` in offcode.jsonc to the command that checks this project"),
                    );
                }
                return Verdict::Done;
            }
            Plan::Run { commands, from } => (commands, from),
        };
        validation.attempts += 1;
        let attempt = validation.attempts;
        let attempts = self.config.validate.attempts.max(1);
        for command in commands {
            let Some((ok, summary, output)) = self
                .validation_run(id, &command, &from, attempt, cancel)
                .await
            else {
                return Verdict::NotRun;
            };
            if ok {
                continue;
            }
            let failing = failing_part(&output);
            let note = if attempt < attempts {
                format!(
                    "Validation failed: `{command}` ({summary}), attempt {attempt} of {attempts}. Fix the cause, then finish; offcode runs it again.\n```\n{failing}\n```"
                )
            } else {
                format!(
                    "Validation failed: `{command}` ({summary}), the last of {attempts} attempts.\n```\n{failing}\n```"
                )
            };
            return if attempt < attempts {
                Verdict::Retry(note)
            } else {
                Verdict::GaveUp(format!(
                    "`{command}` still fails ({summary}) after {attempts} validations"
                ))
            };
        }
        Verdict::Done
    }

    /// Runs one validation command as a `bash` call would run: through the
    /// permission rules (an ask asks) and confinement. `None` when it did
    /// not run; otherwise whether it passed, a summary and its output.
    async fn validation_run(
        &mut self,
        id: SubmissionId,
        command: &str,
        from: &str,
        attempt: u32,
        cancel: &Cancel,
    ) -> Option<(bool, String, String)> {
        let timeout = (self.config.validate.timeout_ms / 1000).clamp(1, 600);
        let arguments = json!({ "command": command, "timeout": timeout });
        let call = ToolCall {
            id: format!(
                "{}{}_{attempt}",
                super::permits::VALIDATION_ID,
                self.session.messages.len()
            ),
            name: "bash".to_owned(),
            arguments: arguments.to_string(),
        };
        let event = |status, summary: String, output: String| {
            EventMsg::Validation(ValidationEvent {
                command: command.to_owned(),
                from: from.to_owned(),
                attempt,
                status,
                summary,
                output,
            })
        };
        self.emit(
            id,
            event(ValidationStatus::Running, String::new(), String::new()),
        );
        let caller = super::permits::Caller::Validation;
        let permit = match self.permit(id, &call, arguments, caller, cancel).await {
            Ok(permit) => permit,
            Err(refusal) => {
                let why = match refusal {
                    Refusal::Denied { why } => why,
                    Refusal::Other(output) => output.shown_reason().to_owned(),
                };
                self.emit(
                    id,
                    event(ValidationStatus::NotRun, why.clone(), String::new()),
                );
                self.warn(
                    id,
                    &format!("The changes were not validated: `{command}` was not run ({why})"),
                );
                return None;
            }
        };
        // A project's check may rewrite files (formatters, snapshots).
        let before = self
            .begin_step(id, "bash", "validate", None, &permit.writes)
            .await;
        self.set_state(id, TurnState::ToolRunning);
        let late = crate::confine::after::Late::default();
        let context = self.tool_context(&permit, cancel, &late);
        let started = Instant::now();
        let handler = super::handler::Handler::BuiltIn(&self.tools);
        let output = tokio::select! {
            output = handler.run(&call, &context) => Some(output),
            () = cancel.cancelled() => None,
        };
        self.record_step(id, before, "validate", None).await;
        for text in crate::confine::after::take(&late) {
            self.warn(id, &text);
        }
        let Some(output) = output else {
            self.emit(
                id,
                event(
                    ValidationStatus::NotRun,
                    "aborted".to_owned(),
                    String::new(),
                ),
            );
            return None;
        };
        let (status, summary) = if output.ok {
            (
                ValidationStatus::Passed,
                format!("passed in {:.1} s", started.elapsed().as_secs_f64()),
            )
        } else {
            (ValidationStatus::Failed, summarize(&output.output))
        };
        let shown = if output.ok {
            String::new()
        } else {
            failing_part(&output.output)
        };
        self.emit(id, event(status, summary.clone(), shown));
        let entry = EntryBody::Validation {
            command: command.to_owned(),
            ok: output.ok,
            summary: summary.clone(),
        };
        if self.record(id, entry).is_err() {
            return None;
        }
        Some((output.ok, summary, output.output))
    }
}

/// What failed, in a few words: `2 failed`, `3 errors`, `exit code 1`.
fn summarize(output: &str) -> String {
    // cargo test, go test, pytest: the count of failed tests.
    for line in output.lines().rev() {
        // unittest: `FAILED (failures=1, errors=1)`.
        if let Some(counts) = line
            .strip_prefix("FAILED (")
            .and_then(|rest| rest.strip_suffix(')'))
        {
            return counts.replace('=', ": ");
        }
        if let Some(rest) = line
            .split("; ")
            .find(|part| part.trim_end().ends_with(" failed"))
        {
            let count = rest.trim().trim_start_matches("test result: FAILED. ");
            if count
                .split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<u32>().is_ok())
            {
                return count
                    .trim_end_matches(|c: char| !c.is_alphanumeric())
                    .to_owned();
            }
        }
        if let Some(count) = line
            .trim_matches('=')
            .trim()
            .split(", ")
            .find(|part| part.ends_with(" failed") && part.split(' ').count() == 2)
        {
            return count.to_owned();
        }
    }
    let failed = output.lines().filter(|l| l.starts_with("--- FAIL")).count();
    if failed > 0 {
        return crate::protocol::count(failed, "test") + " failed";
    }
    let errors = output
        .lines()
        .filter(|l| l.starts_with("error[") || l.starts_with("error:") || is_go_error(l))
        .filter(|l| !l.starts_with("error: could not compile") && !l.starts_with("error: aborting"))
        .count();
    if errors > 0 {
        return crate::protocol::count(errors, "error");
    }
    output
        .lines()
        .last()
        .map(|l| l.trim_matches(['[', ']']).to_owned())
        .unwrap_or_default()
}

/// A Go compiler error: `./two.go:3:31: cannot use …`.
fn is_go_error(line: &str) -> bool {
    let mut parts = line.splitn(4, ':');
    let (Some(file), Some(row), Some(column), Some(_)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    std::path::Path::new(file)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("go"))
        && row.parse::<u32>().is_ok()
        && column.parse::<u32>().is_ok()
}

/// The part of a failure's output that says what failed, first: from a
/// little before the first line that names an error or failure, then
/// the end (where totals and the exit code are), cut with a marker.
fn failing_part(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    if lines.len() <= FAILING_LINES {
        return output.trim_end().to_owned();
    }
    let marks = ["error", "FAIL", "panicked", "failed", "Error", "assert"];
    let first = lines
        .iter()
        .position(|line| marks.iter().any(|m| line.contains(m)))
        .unwrap_or(0)
        .saturating_sub(2);
    let tail = 10;
    let head_end = (first + FAILING_LINES - tail).min(lines.len());
    let mut text = String::new();
    if first > 0 {
        let _ = writeln!(text, "[… {first} lines before left out …]");
    }
    text.push_str(&lines[first..head_end].join("\n"));
    let tail_start = lines.len().saturating_sub(tail).max(head_end);
    if tail_start > head_end {
        let _ = write!(text, "\n[… {} lines left out …]\n", tail_start - head_end);
    }
    if tail_start < lines.len() {
        if tail_start == head_end {
            text.push('\n');
        }
        text.push_str(&lines[tail_start..].join("\n"));
    }
    text
}

#[cfg(test)]
mod tests;
