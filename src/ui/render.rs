//! Output blocks as styled lines: tool lines, folded output, diff excerpts
//! and the approval prompt. Front ends print them into the terminal's
//! scrollback (with colour, or plain for `NO_COLOR`); nothing here touches
//! the terminal, so every block is tested as text at a fixed width.

use unicode_width::UnicodeWidthStr;

pub use super::line::{
    Line, Lines, Palette, Role, Span, clean, fit, fit_words, one_line, tail, truncate, word_wrap,
    wrap,
};

use crate::protocol::{
    CallOutcome, ContextReport, FileDiff, TodoItem, TodoStatus, ToolCallEndEvent, ToolDisplay,
};

/// `TOOL name  subject`: a call starting.
pub fn tool_begin(name: &str, subject: &str, width: usize) -> Line {
    let head = format!("TOOL {name}  ");
    let room = width.saturating_sub(head.width());
    Line::new()
        .with(Role::Label, "TOOL ")
        .with(Role::Tool, name)
        .with(Role::Text, "  ")
        .with(Role::Code, truncate(&one_line(subject), room))
}

/// A validation: `VALIDATE cargo test  (Cargo.toml)` when it starts;
/// `  ✓ passed in 3.1 s` or `  ✗ 2 failed` with the first lines of what
/// failed when it ends.
pub fn validation(event: &crate::protocol::ValidationEvent, width: usize) -> Vec<Line> {
    use crate::protocol::ValidationStatus;
    let room = width.saturating_sub(4);
    match event.status {
        ValidationStatus::Running => vec![tail(
            &Line::new()
                .with(Role::Label, "VALIDATE ")
                .with(Role::Code, event.command.clone())
                .with(Role::Dim, format!("  ({})", event.from)),
            width,
        )],
        ValidationStatus::Passed => vec![
            Line::new()
                .with(Role::Ok, "  ✓ ")
                .with(Role::Dim, truncate(&event.summary, room)),
        ],
        ValidationStatus::Failed => {
            let mut lines = vec![
                Line::new()
                    .with(Role::Error, "  ✗ ")
                    .with(
                        Role::Text,
                        truncate(&event.summary, room.saturating_sub(20)),
                    )
                    .with(Role::Dim, " · sent to the model"),
            ];
            let shown: Vec<&str> = event.output.lines().take(FOLD_LINES).collect();
            for line in &shown {
                lines.push(Line::new().with(Role::Dim, format!("    {}", truncate(line, room))));
            }
            let more = event.output.lines().count().saturating_sub(shown.len());
            if more > 0 {
                lines.push(Line::new().with(
                    Role::Dim,
                    format!("    … {}", crate::protocol::count(more, "more line")),
                ));
            }
            lines
        }
        ValidationStatus::NotRun => vec![
            Line::new()
                .with(Role::Warning, "  ⊘ not run: ")
                .with(Role::Dim, truncate(&event.summary, room.saturating_sub(12))),
        ],
    }
}

/// How many lines of a tool's output are shown before folding.
pub const FOLD_LINES: usize = 4;

/// A call's result: a summary line, then for a failure the first lines of
/// the message, for a command the first and last lines of its output (the
/// rest counted, with the `/expand NUMBER` that shows it whole), for a
/// change its diff excerpt. `number` is the call's in the session.
pub fn tool_end(end: &ToolCallEndEvent, width: usize, number: usize) -> Vec<Line> {
    let room = width.saturating_sub(4);
    let expand = |more: String| format!("{more} · /expand {number}");
    let (mark, role) = end_mark(end.outcome);
    let head = || {
        Line::new()
            .with(role, mark)
            .with(Role::Text, truncate(&one_line(&end.summary), room))
    };
    match &end.display {
        // A command that ran, whatever its exit: its output's ends.
        Some(ToolDisplay::Command { output, .. }) => {
            let mut lines = vec![head()];
            for line in head_and_tail(output.trim_end(), OUTPUT_ENDS) {
                let (role, line) = match line.strip_prefix('…') {
                    Some(_) => (Role::Dim, expand(line)),
                    None => (Role::Text, line),
                };
                lines.push(
                    Line::new()
                        .with(Role::Dim, "    ")
                        .with(role, truncate(&line, room)),
                );
            }
            lines
        }
        _ if end.outcome.ok() => {
            let mut lines = vec![head()];
            if let Some(ToolDisplay::Diff { files }) = &end.display {
                for file in files {
                    lines.extend(diff_excerpt(file, FOLD_LINES, width));
                }
            }
            lines
        }
        // A failure's reason, wrapped, not cut: it is what the model was
        // told (less the words meant for the model alone), and the person
        // should read it whole.
        _ => {
            let text = end.reason.as_deref().unwrap_or(&end.output);
            let mut lines = Vec::new();
            for (index, line) in fold(text, FOLD_LINES).into_iter().enumerate() {
                let (lead, role, line) = if index == 0 {
                    (mark, role, line)
                } else if line.starts_with('…') {
                    ("    ", Role::Dim, expand(line))
                } else {
                    ("    ", Role::Dim, line)
                };
                for (row, text) in word_wrap(&line, room).into_iter().enumerate() {
                    let lead = if row == 0 { lead } else { "    " };
                    lines.push(Line::new().with(role, lead).with(role, text));
                }
            }
            lines
        }
    }
}

/// The mark a call's end is shown with, and its colour.
pub fn end_mark(outcome: CallOutcome) -> (&'static str, Role) {
    match outcome {
        CallOutcome::Ok => ("  ✓ ", Role::Ok),
        CallOutcome::Refused => ("  ⊘ ", Role::Warning),
        CallOutcome::Failed | CallOutcome::Aborted => ("  ✗ ", Role::Error),
    }
}

/// Lines of a command's output shown from its start and from its end.
pub const OUTPUT_ENDS: usize = 3;

/// The first and last `keep` lines of `text`, with a count of those
/// between (`… N more lines`) when there are any.
pub fn head_and_tail(text: &str, keep: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= keep * 2 + 1 {
        return lines.iter().map(|l| one_line(l)).collect();
    }
    let more = lines.len() - keep * 2;
    let mut out: Vec<String> = lines[..keep].iter().map(|l| one_line(l)).collect();
    out.push(format!("… {more} more lines"));
    out.extend(lines[lines.len() - keep..].iter().map(|l| one_line(l)));
    out
}

/// The first `keep` lines of `text`, and a count of the rest.
pub fn fold(text: &str, keep: usize) -> Vec<String> {
    let lines: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    let mut out: Vec<String> = lines.iter().take(keep).map(|l| one_line(l)).collect();
    if lines.len() > keep {
        let more = lines.len() - keep;
        out.push(format!(
            "… {more} more line{}",
            if more == 1 { "" } else { "s" }
        ));
    }
    out
}

/// `path  updated  +3 -1`, then up to `keep` changed lines of the diff.
pub fn diff_excerpt(file: &FileDiff, keep: usize, width: usize) -> Vec<Line> {
    let mut lines = vec![
        Line::new()
            .with(Role::Text, "    ")
            .with(
                Role::Code,
                truncate(&one_line(&file.path), width.saturating_sub(24)),
            )
            .with(Role::Dim, format!("  {}  ", file.operation))
            .with(Role::Added, format!("+{}", file.additions))
            .with(Role::Text, " ")
            .with(Role::Removed, format!("-{}", file.deletions)),
    ];
    let body: Vec<&str> = file
        .diff
        .lines()
        .filter(|l| !l.starts_with("+++") && !l.starts_with("---"))
        .filter(|l| l.starts_with('+') || l.starts_with('-') || l.starts_with("@@"))
        .collect();
    let room = width.saturating_sub(4);
    for line in body.iter().take(keep) {
        let role = match line.as_bytes().first() {
            Some(b'+') => Role::Added,
            Some(b'-') => Role::Removed,
            _ => Role::Hunk,
        };
        lines.push(
            Line::new()
                .with(Role::Text, "    ")
                .with(role, truncate(&one_line(line), room)),
        );
    }
    if body.len() > keep {
        lines.push(Line::new().with(
            Role::Dim,
            format!(
                "    … {}",
                crate::protocol::count(body.len() - keep, "more changed line")
            ),
        ));
    }
    lines
}

mod approval;
mod models;
mod rewind;

pub use approval::{PROMPT_DIFF_LINES, approval, exact};
pub use models::models;
pub use rewind::{rewind, turns};

/// What a request carries, part by part, with the total against the
/// model's limit.
pub fn context_report(report: &ContextReport, width: usize) -> Vec<Line> {
    let count = |n: u64| crate::protocol::format_tokens(n);
    let total = match report.limit {
        Some(limit) if limit > 0 => format!(
            "{} of {} tokens ({}%), estimated",
            count(report.total),
            count(limit),
            report.total.saturating_mul(100) / limit
        ),
        _ => format!("{} tokens, estimated", count(report.total)),
    };
    let mut lines = vec![
        Line::new()
            .with(Role::Label, "CONTEXT ")
            .with(Role::Text, total),
    ];
    let name_width = report
        .parts
        .iter()
        .map(|p| p.name.width())
        .max()
        .unwrap_or(0);
    for part in &report.parts {
        let number = format!("{:>6}", count(part.tokens));
        let lead = format!("  {:<name_width$}  ", part.name);
        let room = width.saturating_sub(lead.width() + number.width() + 2);
        let source = truncate(&one_line(&part.source), room);
        let pad = room.saturating_sub(source.width());
        lines.push(
            Line::new()
                .with(Role::Text, lead)
                .with(Role::Dim, format!("{source}{}  ", " ".repeat(pad)))
                .with(Role::Code, number),
        );
    }
    if let Some(prompt) = report.last_prompt {
        lines.push(Line::new().with(
            Role::Dim,
            format!(
                "  the last request: {} prompt tokens, counted by the server",
                count(prompt)
            ),
        ));
    }
    lines
}

/// `/agent`: each agent with its mode, where it comes from and what it
/// is for; the one in use marked.
pub fn agent_list(agents: &[crate::protocol::AgentSummary], width: usize) -> Vec<Line> {
    let mut lines = vec![Line::new().with(Role::Label, "AGENTS ").with(
        Role::Dim,
        "Shift+Tab or /agent NAME switches; subagents are started by the task tool",
    )];
    for agent in agents {
        let (mark, role) = if agent.active {
            ("  ● ", Role::Ok)
        } else {
            ("    ", Role::Dim)
        };
        lines.extend(wrap(
            &Line::new()
                .with(role, mark)
                .with(Role::Label, agent.name.clone())
                .with(Role::Dim, format!(" ({}, {})", agent.mode, agent.origin)),
            width,
        ));
        if !agent.description.is_empty() {
            let room = width.saturating_sub(6).max(10);
            for row in textwrap::wrap(&one_line(&agent.description), room) {
                lines.push(Line::new().with(Role::Dim, format!("      {row}")));
            }
        }
    }
    lines
}

/// The agent's todo list as a checklist (`[ ]` pending, `[~]` in
/// progress, `[x]` done), with a count of what is done.
pub fn todo(items: &[TodoItem], width: usize) -> Vec<Line> {
    let done = items
        .iter()
        .filter(|item| item.status == TodoStatus::Completed)
        .count();
    let mut lines = vec![
        Line::new()
            .with(Role::Label, "TODO ")
            .with(Role::Dim, format!("{done}/{} done", items.len())),
    ];
    let room = width.saturating_sub(6);
    for item in items {
        let (mark, mark_role, text_role) = match item.status {
            TodoStatus::Pending => ("  [ ] ", Role::Dim, Role::Text),
            TodoStatus::InProgress => ("  [~] ", Role::Warning, Role::Label),
            TodoStatus::Completed => ("  [x] ", Role::Ok, Role::Dim),
        };
        lines.push(
            Line::new()
                .with(mark_role, mark)
                .with(text_role, truncate(&one_line(&item.content), room)),
        );
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ApprovalRequestEvent, FileDiff};

    /// Lines as the user sees them: plain, then with colour codes shown
    /// as `{role}` markers so a snapshot records the styling too.
    pub(super) fn screen(lines: &[Line]) -> String {
        let mut out = String::new();
        for line in lines {
            assert!(line.width() <= 80, "wider than 80: {}", line.plain());
            out.push_str(&line.plain());
            out.push('\n');
        }
        out
    }

    pub(super) fn styled(lines: &[Line]) -> String {
        lines
            .iter()
            .map(crate::ui::line::styled)
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(super) fn request(tool: &str, arguments: serde_json::Value) -> ApprovalRequestEvent {
        ApprovalRequestEvent {
            call_id: "c1".into(),
            tool: tool.into(),
            arguments,
            reason: None,
            rule: r#"built-in policy/default.jsonc permission.bash["*"]"#.into(),
            session_allowed: true,
            session_rules: vec!["bash `cargo test *`".into()],
            dangerous: false,
            dangers: Vec::new(),
            notes: Vec::new(),
            mandate: None,
            confinement: None,
            unconfined: false,
            runs_unconfined: false,
            preview: None,
            agent: None,
        }
    }

    pub(super) fn diff() -> FileDiff {
        FileDiff {
            path: "src/main.rs".into(),
            operation: "updated".into(),
            additions: 2,
            deletions: 1,
            diff: "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,4 @@\n fn main() {\n-    let x = 41;\n+    let x = 42;\n+    println!(\"{x}\");\n }\n".into(),
        }
    }

    #[test]
    fn todo_checklist_marks_each_state_and_counts_what_is_done() {
        let item = |status, content: &str| TodoItem {
            id: String::new(),
            content: content.into(),
            status,
        };
        let items = [
            item(TodoStatus::Completed, "read the failing test"),
            item(TodoStatus::InProgress, "修复 parser 的边界条件"),
            item(TodoStatus::Pending, &"a very long item ".repeat(8)),
        ];
        let lines = todo(&items, 80);
        assert_eq!(
            screen(&lines),
            "TODO 1/3 done\n  \
             [x] read the failing test\n  \
             [~] 修复 parser 的边界条件\n  \
             [ ] a very long item a very long item a very long item a very long item a ver…\n"
        );
        assert_eq!(
            styled(&lines[1..3]),
            "{green}  [x] {dim}read the failing test\n{bold yellow}  [~] {bold}修复 parser 的边界条件"
        );
    }

    #[test]
    fn a_validation_shows_its_command_then_how_it_came_out() {
        use crate::protocol::{ValidationEvent, ValidationStatus};
        let event = |status, summary: &str, output: &str| ValidationEvent {
            command: "cargo test".into(),
            from: "Cargo.toml".into(),
            attempt: 1,
            status,
            summary: summary.into(),
            output: output.into(),
        };
        let plain = |lines: Vec<Line>| lines.iter().map(Line::plain).collect::<Vec<_>>();
        assert_eq!(
            plain(validation(&event(ValidationStatus::Running, "", ""), 80)),
            ["VALIDATE cargo test  (Cargo.toml)"]
        );
        assert_eq!(
            plain(validation(
                &event(ValidationStatus::Passed, "passed in 2.5 s", ""),
                80
            )),
            ["  ✓ passed in 2.5 s"]
        );
        let output = "error[E0308]: mismatched types\n --> src/lib.rs:2:5\n  |\n2 |     \"two\"\n  |     ^^^^^ expected `i32`\n[exit code: 101]";
        assert_eq!(
            plain(validation(
                &event(ValidationStatus::Failed, "1 error", output),
                80
            )),
            [
                "  ✗ 1 error · sent to the model",
                "    error[E0308]: mismatched types",
                "     --> src/lib.rs:2:5",
                "      |",
                "    2 |     \"two\"",
                "    … 2 more lines",
            ]
        );
        assert_eq!(
            plain(validation(
                &event(ValidationStatus::NotRun, "the user declined", ""),
                80
            )),
            ["  ⊘ not run: the user declined"]
        );
    }

    #[test]
    fn tool_lines_fold_long_output_and_fit_80_columns() {
        let long = "x".repeat(200);
        assert_eq!(
            tool_begin("bash", &format!("echo {long}"), 80).width(),
            80,
            "cut to the width"
        );
        assert_eq!(
            tool_begin("read", "src/主要.rs", 80).plain(),
            "TOOL read  src/主要.rs"
        );
        let failed = ToolCallEndEvent {
            call_id: "c".into(),
            name: "bash".into(),
            outcome: crate::protocol::CallOutcome::Failed,
            summary: String::new(),
            output: "Error: line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n".into(),
            display: None,
            reason: Some("line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n".into()),
        };
        assert_eq!(
            screen(&tool_end(&failed, 80, 1)),
            "  ✗ line 1\n    line 2\n    line 3\n    line 4\n    … 2 more lines · /expand 1\n"
        );
        // A command: the first and last lines of its output, worked or
        // not, from what the command printed (not the model's text).
        let output: String = (1..=15).fold(String::new(), |text, n| text + &format!("out {n}\n"));
        let command = |code| {
            let result = crate::tools::ToolOutput::command(
                output.clone(),
                crate::protocol::CommandEnd::Exited { code },
            );
            result.end_event("c", "bash", result.ran())
        };
        assert_eq!(
            screen(&tool_end(&command(0), 80, 4)),
            "  ✓ exit code: 0, 15 lines of output\n    out 1\n    out 2\n    out 3\n    \
             … 9 more lines · /expand 4\n    out 13\n    out 14\n    out 15\n"
        );
        assert_eq!(
            screen(&tool_end(&command(2), 80, 5)),
            "  ✗ exit code: 2, 15 lines of output\n    out 1\n    out 2\n    out 3\n    \
             … 9 more lines · /expand 5\n    out 13\n    out 14\n    out 15\n"
        );
        let denied = ToolCallEndEvent {
            outcome: crate::protocol::CallOutcome::Refused,
            output: "Error: Permission denied: `bash` was not run (the user declined). Do not try to get around this.".into(),
            reason: Some("Permission denied: `bash` was not run (the user declined).".into()),
            ..failed.clone()
        };
        let lines = tool_end(&denied, 80, 2);
        assert_eq!(lines[0].spans[0].style, Role::Warning.style());
        assert!(lines[0].plain().starts_with("  ⊘ Permission denied"));
        // The words meant for the model alone are not the person's.
        assert!(!screen(&lines).contains("Do not try"), "{}", screen(&lines));
        // The outcome decides, not the wording: a command that failed
        // printing the same words is a failure.
        let lookalike = ToolCallEndEvent {
            output: denied.output.clone(),
            reason: denied.reason.clone(),
            ..failed.clone()
        };
        let lines = tool_end(&lookalike, 80, 2);
        assert_eq!(lines[0].spans[0].style, Role::Error.style());
        assert!(lines[0].plain().starts_with("  ✗ Permission denied"));
        // What the model was told is shown whole, wrapped, at any width.
        let narrow: String = tool_end(&denied, 30, 2)
            .iter()
            .map(|l| l.plain().trim().to_owned() + " ")
            .collect();
        assert!(
            narrow.contains("`bash` was not run (the user declined)"),
            "{narrow}"
        );
        assert!(!narrow.contains('…'), "{narrow}");
        let written = ToolCallEndEvent {
            outcome: crate::protocol::CallOutcome::Ok,
            summary: "src/main.rs: updated, +2 -1".into(),
            output: String::new(),
            display: Some(ToolDisplay::Diff {
                files: vec![diff()],
            }),
            ..failed
        };
        assert_eq!(
            screen(&tool_end(&written, 80, 3)),
            "  ✓ src/main.rs: updated, +2 -1\n    \
             src/main.rs  updated  +2 -1\n    \
             @@ -1,3 +1,4 @@\n    \
             -    let x = 41;\n    \
             +    let x = 42;\n    \
             +    println!(\"{x}\");\n"
        );
    }
}
