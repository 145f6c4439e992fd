//! `patch`: apply a unified diff to one or more files, all or nothing.
//!
//! Hunks are located by their context, nearest to the stated line first, so
//! wrong line numbers (common in model-written diffs) are tolerated. A hunk
//! that matches nowhere rejects the whole patch with the hunk, the lines it
//! expected and what the file has there; nothing is changed. (diffy applies
//! patches too, but reports only "hunk N failed", which a model cannot act
//! on.)

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

use super::diff::file_diff;
use super::{Effect, Error, Tool, ToolContext, ToolOutput};
use crate::protocol::ToolDisplay;
use crate::sandbox::{self, Sandbox};

/// The `patch` tool.
pub struct Patch;

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    patch: String,
}

impl Tool for Patch {
    const NAME: &'static str = "patch";

    const DESCRIPTION: &'static str = "Apply a unified diff to files, all or nothing.";
    const EFFECT: Effect = Effect::ChangesFiles;
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"patch": {"type": "string"}},
            "required": ["patch"]
        })
    }

    async fn run(&self, arguments: Arguments, context: &ToolContext) -> Result<ToolOutput, Error> {
        let files = parse(&arguments.patch).map_err(Error::Rejected)?;
        apply_all(&context.sandbox, &files)
    }

    fn preview(
        &self,
        arguments: &Arguments,
        context: &ToolContext,
    ) -> Option<Result<ToolDisplay, Error>> {
        Some(
            parse(&arguments.patch)
                .map_err(Error::Rejected)
                .and_then(|files| plan(&context.sandbox, &files))
                .map(|plan| ToolDisplay::Diff {
                    files: plan.diffs(),
                }),
        )
    }
}

/// One file's part of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FilePatch {
    /// `None` for `/dev/null` (a new file).
    old_path: Option<String>,
    /// `None` for `/dev/null` (a deleted file).
    new_path: Option<String>,
    hunks: Vec<Hunk>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    header: String,
    /// 1-based line the hunk says it starts at (0 when unknown).
    old_start: usize,
    /// (' ' | '-' | '+', text without the newline)
    lines: Vec<(char, String)>,
    /// `\\ No newline at end of file` after an old-side line.
    old_no_newline: bool,
    /// `\\ No newline at end of file` after a new-side line.
    new_no_newline: bool,
}

impl Hunk {
    fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|(kind, _)| *kind != '+')
            .map(|(_, text)| text.as_str())
            .collect()
    }

    fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|(kind, _)| *kind != '-')
            .map(|(_, text)| text.as_str())
            .collect()
    }
}

fn header_path(line: &str) -> Option<String> {
    let path = line.split('\t').next().unwrap_or("").trim_end();
    if path == "/dev/null" {
        return None;
    }
    let path = path
        .strip_prefix("a/")
        .or_else(|| path.strip_prefix("b/"))
        .unwrap_or(path);
    Some(path.to_owned())
}

fn hunk_start(header: &str) -> usize {
    header
        .strip_prefix("@@ -")
        .and_then(|rest| rest.split([',', ' ']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Whether `lines[at]` starts a file header (`--- ` followed by `+++ `).
fn is_header(lines: &[&str], at: usize) -> bool {
    lines[at].starts_with("--- ") && lines.get(at + 1).is_some_and(|l| l.starts_with("+++ "))
}

/// Parses a unified diff into per-file patches.
fn parse(text: &str) -> Result<Vec<FilePatch>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut files: Vec<FilePatch> = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        if is_header(&lines, at) {
            files.push(FilePatch {
                old_path: header_path(&line[4..]),
                new_path: header_path(&lines[at + 1][4..]),
                hunks: Vec::new(),
            });
            at += 2;
            continue;
        }
        if line.starts_with("--- ") {
            return Err(format!("`{line}` is not followed by a `+++ ` line"));
        }
        at += 1;
        if !line.starts_with("@@") {
            continue;
        }
        let Some(file) = files.last_mut() else {
            return Err(format!(
                "hunk `{line}` comes before any `---`/`+++` file header"
            ));
        };
        let mut hunk = Hunk {
            header: line.to_owned(),
            old_start: hunk_start(line),
            lines: Vec::new(),
            old_no_newline: false,
            new_no_newline: false,
        };
        while at < lines.len() && !is_header(&lines, at) {
            let next = lines[at];
            let (kind, rest) = match next.chars().next() {
                Some(kind @ (' ' | '-' | '+')) => (kind, &next[1..]),
                Some('\\') => {
                    match hunk.lines.last().map(|(kind, _)| *kind) {
                        Some('-') => hunk.old_no_newline = true,
                        Some('+') => hunk.new_no_newline = true,
                        _ => {
                            hunk.old_no_newline = true;
                            hunk.new_no_newline = true;
                        }
                    }
                    at += 1;
                    continue;
                }
                // Some models drop the space of empty context lines.
                None => (' ', ""),
                _ => break,
            };
            hunk.lines.push((kind, rest.to_owned()));
            at += 1;
        }
        // A trailing blank line is the diff's end, not context.
        while hunk
            .lines
            .last()
            .is_some_and(|(k, t)| *k == ' ' && t.is_empty())
        {
            hunk.lines.pop();
        }
        file.hunks.push(hunk);
    }
    if files.is_empty() {
        return Err("no file headers found: a patch needs `--- a/PATH` and `+++ b/PATH` lines before its `@@` hunks".to_owned());
    }
    if let Some(file) = files
        .iter()
        .find(|f| f.old_path.is_none() && f.new_path.is_none())
    {
        return Err(format!(
            "a file has `/dev/null` on both sides ({} hunks)",
            file.hunks.len()
        ));
    }
    Ok(files)
}

/// A line without its ending.
fn bare(line: &str) -> &str {
    line.strip_suffix('\n')
        .map_or(line, |l| l.strip_suffix('\r').unwrap_or(l))
}

/// The new content of one file, or the rejection message. Each line keeps
/// its own ending; added lines get the file's usual one.
fn apply_hunks(original: &str, hunks: &[Hunk], path: &str) -> Result<String, String> {
    let mut lines: Vec<String> = original.split_inclusive('\n').map(str::to_owned).collect();
    let crlf_lines = lines.iter().filter(|l| l.ends_with("\r\n")).count();
    let newline = if crlf_lines * 2 > lines.len() {
        "\r\n"
    } else {
        "\n"
    };
    let mut floor = 0;
    let mut offset: isize = 0;
    for (number, hunk) in hunks.iter().enumerate() {
        let expected = hunk.old_lines();
        let replacement = hunk.new_lines();
        // An insertion without old lines goes after line `old_start`.
        let stated = if expected.is_empty() {
            hunk.old_start
        } else {
            hunk.old_start.max(1) - 1
        };
        let hint = stated.saturating_add_signed(offset);
        let current: Vec<&str> = lines.iter().map(|l| bare(l)).collect();
        let Some(at) = locate(&current, &expected, hint, floor) else {
            return Err(rejection(path, number + 1, hunk, &current, hint, &expected));
        };
        let end = at + expected.len();
        let reaches_end = end == lines.len();
        let new_lines: Vec<String> = replacement
            .iter()
            .enumerate()
            .map(|(i, text)| {
                // Keep the ending of the line this one replaces, if any.
                let ending = lines
                    .get(at + i)
                    .filter(|_| at + i < end)
                    .map_or(newline, |old| &old[bare(old).len()..]);
                let ending = if ending.is_empty() { newline } else { ending };
                format!("{text}{ending}")
            })
            .collect();
        lines.splice(at..end, new_lines);
        offset += replacement.len().cast_signed() - expected.len().cast_signed();
        floor = at + replacement.len();
        if reaches_end && let Some(last) = lines.last_mut() {
            if hunk.new_no_newline {
                last.truncate(bare(last).len());
            } else if hunk.old_no_newline && bare(last).len() == last.len() {
                last.push_str(newline);
            }
        }
    }
    // A file that had no final newline keeps it that way unless a hunk
    // reaching the end said otherwise (handled above).
    if !original.is_empty()
        && !original.ends_with('\n')
        && !hunks.iter().any(|h| h.old_no_newline || h.new_no_newline)
        && let Some(last) = lines.last_mut()
    {
        last.truncate(bare(last).len());
    }
    Ok(lines.concat())
}

/// Where `expected` occurs at or after `floor`, nearest to `hint`: exact
/// first, then ignoring trailing whitespace.
fn locate(lines: &[&str], expected: &[&str], hint: usize, floor: usize) -> Option<usize> {
    if expected.is_empty() {
        return Some(hint.clamp(floor, lines.len()));
    }
    let last_start = lines.len().checked_sub(expected.len())?;
    if floor > last_start {
        return None;
    }
    let matches_at = |at: usize, loose: bool| {
        expected.iter().enumerate().all(|(i, want)| {
            let have = lines[at + i];
            if loose {
                have.trim_end() == want.trim_end()
            } else {
                have == *want
            }
        })
    };
    let hint = hint.clamp(floor, last_start);
    for loose in [false, true] {
        for distance in 0..=last_start.max(hint) {
            let below = hint.checked_sub(distance).filter(|at| *at >= floor);
            let above = Some(hint + distance).filter(|at| *at <= last_start);
            if below.is_none() && above.is_none() {
                break;
            }
            if let Some(at) = below.filter(|at| matches_at(*at, loose)) {
                return Some(at);
            }
            if let Some(at) = above.filter(|at| matches_at(*at, loose)) {
                return Some(at);
            }
        }
    }
    None
}

fn rejection(
    path: &str,
    number: usize,
    hunk: &Hunk,
    lines: &[&str],
    hint: usize,
    expected: &[&str],
) -> String {
    let mut message = format!(
        "hunk {number} of `{path}` does not match the file; nothing was changed.\nHunk: {}\nExpected these lines:\n",
        hunk.header
    );
    for line in expected {
        let _ = writeln!(message, "  |{line}");
    }
    let start = hint.min(lines.len());
    let end = (start + expected.len().max(1)).min(lines.len());
    let _ = writeln!(message, "The file has at line {}:", start + 1);
    if start == end {
        message.push_str("  (end of file)\n");
    }
    for line in &lines[start..end] {
        let _ = writeln!(message, "  |{line}");
    }
    message.push_str("Read the file again and send a patch against its current text.");
    message
}

/// The patch's view of the files it touches: their content as earlier
/// sections left it (`None`: absent), and the original for the diff.
#[derive(Default)]
struct Plan {
    files: BTreeMap<String, (Option<String>, Option<String>)>,
}

impl Plan {
    /// The current content of `path` (`None` when it does not exist).
    fn current(&mut self, sandbox: &Sandbox, path: &str) -> Result<Option<String>, Error> {
        if let Some((_, current)) = self.files.get(path) {
            return Ok(current.clone());
        }
        let original = match sandbox.read(path) {
            Ok(bytes) => {
                Some(super::text::changeable("patch", path, bytes).map_err(Error::Rejected)?)
            }
            Err(sandbox::Error::NotFound { .. }) => None,
            Err(error) => return Err(error.into()),
        };
        self.files
            .insert(path.to_owned(), (original.clone(), original.clone()));
        Ok(original)
    }

    fn set(&mut self, path: &str, content: Option<String>) {
        if let Some(entry) = self.files.get_mut(path) {
            entry.1 = content;
        }
    }

    fn apply(&mut self, sandbox: &Sandbox, file: &FilePatch) -> Result<(), Error> {
        match (&file.old_path, &file.new_path) {
            (None, Some(path)) => {
                if self.current(sandbox, path)?.is_some() {
                    return Err(Error::Rejected(format!(
                        "`{path}` already exists; the patch creates it from /dev/null"
                    )));
                }
                let content = apply_hunks("", &file.hunks, path).map_err(Error::Rejected)?;
                self.set(path, Some(content));
            }
            (Some(path), None) => {
                let old = self.existing(sandbox, path)?;
                let rest = apply_hunks(&old, &file.hunks, path).map_err(Error::Rejected)?;
                if !rest.trim().is_empty() {
                    return Err(Error::Rejected(format!(
                        "the patch deletes `{path}` but does not remove all of its lines"
                    )));
                }
                self.set(path, None);
            }
            (Some(old_path), Some(new_path)) => {
                let old = self.existing(sandbox, old_path)?;
                let content = apply_hunks(&old, &file.hunks, old_path).map_err(Error::Rejected)?;
                if old_path != new_path {
                    if self.current(sandbox, new_path)?.is_some() {
                        return Err(Error::Rejected(format!(
                            "cannot rename `{old_path}` to `{new_path}`: it exists"
                        )));
                    }
                    self.set(old_path, None);
                }
                self.set(new_path, Some(content));
            }
            (None, None) => return Err(Error::Rejected("a file patch names no file".to_owned())),
        }
        Ok(())
    }

    fn existing(&mut self, sandbox: &Sandbox, path: &str) -> Result<String, Error> {
        self.current(sandbox, path)?
            .ok_or_else(|| Error::Rejected(format!("`{path}` does not exist")))
    }
}

/// Every section applied in memory, in order, before anything is written;
/// a later section sees what earlier ones did.
fn plan(sandbox: &Sandbox, files: &[FilePatch]) -> Result<Plan, Error> {
    let mut plan = Plan::default();
    for file in files {
        plan.apply(sandbox, file)?;
    }
    Ok(plan)
}

impl Plan {
    /// The files whose content changes, with their original and new text.
    fn changed(&self) -> impl Iterator<Item = (&String, &Option<String>, &Option<String>)> {
        self.files
            .iter()
            .filter(|(_, (original, current))| original != current)
            .map(|(path, (original, current))| (path, original, current))
    }

    fn diffs(&self) -> Vec<crate::protocol::FileDiff> {
        self.changed()
            .filter_map(|(path, original, current)| match (original, current) {
                (None, Some(new)) => Some(file_diff(path, "created", "", new)),
                (Some(old), None) => Some(file_diff(path, "deleted", old, "")),
                (Some(old), Some(new)) => Some(file_diff(path, "updated", old, new)),
                (None, None) => None,
            })
            .collect()
    }
}

fn apply_all(sandbox: &Sandbox, files: &[FilePatch]) -> Result<ToolOutput, Error> {
    let plan = plan(sandbox, files)?;
    let diffs = plan.diffs();
    let mut report = String::new();
    for (path, _, current) in plan.changed() {
        match current {
            Some(content) => {
                sandbox.write(path, content.as_bytes())?;
            }
            None => sandbox.remove(path)?,
        }
    }
    for diff in &diffs {
        let _ = writeln!(
            report,
            "{} {} (+{} -{})",
            diff.operation, diff.path, diff.additions, diff.deletions
        );
    }
    let summary = match diffs.as_slice() {
        [one] => format!(
            "{}: {}, +{} -{}",
            one.path, one.operation, one.additions, one.deletions
        ),
        many => format!("{} files changed", many.len()),
    };
    Ok(ToolOutput::ok(report.trim_end().to_owned(), summary)
        .with_display(ToolDisplay::Diff { files: diffs }))
}

#[cfg(test)]
mod tests;
