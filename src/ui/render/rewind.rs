//! What `/undo`, `/revert` and `/diff` did or would do, and the turns the
//! `/revert` picker offers.

use unicode_width::UnicodeWidthStr;

use super::{Line, Lines, Role, one_line, truncate, word_wrap};
use crate::protocol::{RewindKind, RewindReport, TurnRow};

/// Diff lines shown in the scrollback; the rest is counted.
const DIFF_LINES: usize = 400;

/// A rewind report: a head, one line per file, what failed, and for a diff
/// the unified diff coloured.
pub fn rewind(report: &RewindReport, width: usize) -> Vec<Line> {
    let head = match (report.kind, report.turn) {
        (RewindKind::Undo, _) => "UNDO".to_owned(),
        (RewindKind::Preview, Some(n)) => format!("REVERT to before turn {n}?"),
        (RewindKind::Revert, Some(n)) => format!("REVERTED to before turn {n}"),
        (RewindKind::Diff, Some(n)) if n > 1 => format!("DIFF since turn {n}"),
        (RewindKind::Diff, _) => "DIFF of this session".to_owned(),
        (_, None) => "REVERT".to_owned(),
    };
    let mut lines = vec![Line::new().with(Role::Label, head)];
    // Whole, wrapped under themselves: a kept file's reason matters.
    let room = width.saturating_sub(4).max(10);
    for row in &report.lines {
        let role = if row.starts_with("kept") {
            Role::Warning
        } else {
            Role::Code
        };
        for (index, part) in word_wrap(&one_line(row), room).into_iter().enumerate() {
            let lead = if index == 0 { "  " } else { "    " };
            lines.push(Line::new().with(role, format!("{lead}{part}")));
        }
    }
    for failed in &report.failed {
        for (index, part) in word_wrap(&one_line(failed), room).into_iter().enumerate() {
            let lead = if index == 0 { "  ✗ " } else { "    " };
            lines.push(Line::new().with(Role::Error, lead).with(Role::Text, part));
        }
    }
    let diff: Vec<&str> = report.diff.lines().collect();
    for row in diff.iter().take(DIFF_LINES) {
        let role = if row.starts_with("+++") || row.starts_with("---") {
            Role::Label
        } else if row.starts_with('+') {
            Role::Added
        } else if row.starts_with('-') {
            Role::Removed
        } else if row.starts_with("@@") {
            Role::Hunk
        } else {
            Role::Dim
        };
        lines.push(Line::new().with(role, truncate(&one_line(row), width)));
    }
    if diff.len() > DIFF_LINES {
        lines.push(Line::new().with(
            Role::Dim,
            format!(
                "… {} more diff lines (`offcode diff` prints it whole)",
                diff.len() - DIFF_LINES
            ),
        ));
    }
    let note = match report.kind {
        _ if !report.note.is_empty() => report.note.clone(),
        RewindKind::Preview if report.lines.is_empty() => {
            "No files to put back; the conversation would go back. y reverts, anything else keeps it."
                .to_owned()
        }
        RewindKind::Preview => {
            "y reverts the files and the conversation; anything else keeps everything.".to_owned()
        }
        RewindKind::Revert => {
            "The conversation goes on from before that turn; its prompt is in the editor.".to_owned()
        }
        _ => String::new(),
    };
    for row in word_wrap(&note, width.saturating_sub(2).max(10))
        .into_iter()
        .filter(|row| !row.trim().is_empty())
    {
        lines.push(Line::new().with(Role::Dim, format!("  {row}")));
    }
    lines
}

/// The turns, numbered, newest last, with how many steps changed files.
pub fn turns(turns: &[TurnRow], width: usize) -> Vec<Line> {
    if turns.is_empty() {
        return vec![Line::new().with(Role::Dim, "No turns in this session yet.")];
    }
    let mut lines = vec![Line::new().with(Role::Label, "TURNS")];
    for turn in turns {
        let head = format!("{:>4}  ", turn.number);
        let tail = match turn.steps {
            0 => String::new(),
            n => format!("  · {}", crate::protocol::count(n, "change")),
        };
        let room = width.saturating_sub(head.width() + tail.width());
        lines.push(
            Line::new()
                .with(Role::Code, head)
                .with(Role::Text, truncate(&one_line(&turn.prompt), room))
                .with(Role::Dim, tail),
        );
    }
    let footer = "`/revert N` shows what going back to before turn N puts back.";
    for row in word_wrap(footer, width.max(10)) {
        lines.push(Line::new().with(Role::Dim, row));
    }
    lines
}
