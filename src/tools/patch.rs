//! `patch`: apply a unified diff to one or more files, all or nothing.
//!
//! Hunks are located by their context, nearest to the stated line first, so
//! wrong line numbers (common in model-written diffs) are tolerated. A hunk
//! that matches nowhere rejects the whole patch with the hunk, the lines it
//! expected and what the file has there; nothing is changed. (diffy applies
//! patches too, but reports only "hunk N failed", which a model cannot act
//! on.)

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

use super::diff::file_diff;
use super::{BoxFuture, Error, Tool, ToolContext, ToolOutput, parse_arguments};
use crate::protocol::{FileDiff, ToolDisplay};
use crate::sandbox::{self, Sandbox};

/// The `patch` tool.
pub struct Patch;

#[derive(Deserialize)]
struct Arguments {
    patch: String,
}

impl Tool for Patch {
    fn name(&self) -> &'static str {
        "patch"
    }

    fn description(&self) -> &'static str {
        "Apply a unified diff (---/+++ headers, @@ hunks with context) to one or more files. Use /dev/null to create or delete a file. All or nothing."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"patch": {"type": "string", "description": "The unified diff"}},
            "required": ["patch"]
        })
    }

    fn run<'a>(
        &'a self,
        arguments: Value,
        context: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, Error>> {
        Box::pin(async move {
            let arguments: Arguments = parse_arguments("patch", arguments)?;
            let files = parse(&arguments.patch).map_err(Error::Rejected)?;
            apply_all(&context.sandbox, &files)
        })
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
    /// The new side ends without a newline.
    no_newline_at_end: bool,
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

/// Parses a unified diff into per-file patches.
fn parse(text: &str) -> Result<Vec<FilePatch>, String> {
    let mut files: Vec<FilePatch> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(old) = line.strip_prefix("--- ") {
            let Some(new) = lines.next().and_then(|l| l.strip_prefix("+++ ")) else {
                return Err(format!("`{line}` is not followed by a `+++ ` line"));
            };
            files.push(FilePatch {
                old_path: header_path(old),
                new_path: header_path(new),
                hunks: Vec::new(),
            });
        } else if line.starts_with("@@") {
            let Some(file) = files.last_mut() else {
                return Err(format!(
                    "hunk `{line}` comes before any `---`/`+++` file header"
                ));
            };
            let mut hunk = Hunk {
                header: line.to_owned(),
                old_start: hunk_start(line),
                lines: Vec::new(),
                no_newline_at_end: false,
            };
            while let Some(next) = lines.peek() {
                let (kind, rest) = match next.chars().next() {
                    Some(kind @ (' ' | '-' | '+')) if !next.starts_with("--- ") => {
                        (kind, &next[1..])
                    }
                    Some('\\') => {
                        // "\ No newline at end of file" after a new-side line.
                        hunk.no_newline_at_end =
                            hunk.lines.last().is_some_and(|(kind, _)| *kind != '-');
                        lines.next();
                        continue;
                    }
                    // Some models drop the space of empty context lines.
                    None => (' ', ""),
                    _ => break,
                };
                hunk.lines.push((kind, rest.to_owned()));
                lines.next();
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

/// The new content of one file, or the rejection message.
fn apply_hunks(original: &str, hunks: &[Hunk], path: &str) -> Result<String, String> {
    let crlf = original.contains("\r\n");
    let mut no_newline = !original.is_empty() && !original.ends_with('\n');
    let mut lines: Vec<String> = original
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
        .collect();
    let mut floor = 0;
    let mut offset: isize = 0;
    for (number, hunk) in hunks.iter().enumerate() {
        let expected = hunk.old_lines();
        let replacement = hunk.new_lines();
        let hint = (hunk.old_start.max(1) - 1).saturating_add_signed(offset);
        let current: Vec<&str> = lines.iter().map(String::as_str).collect();
        let Some(at) = locate(&current, &expected, hint, floor) else {
            return Err(rejection(path, number + 1, hunk, &current, hint, &expected));
        };
        let end = at + expected.len();
        let reaches_end = end == lines.len();
        lines.splice(at..end, replacement.iter().map(|s| (*s).to_owned()));
        offset += replacement.len().cast_signed() - expected.len().cast_signed();
        floor = at + replacement.len();
        // Models rarely write "\ No newline at end of file": keep the file's
        // own ending unless the hunk says so.
        if reaches_end && hunk.no_newline_at_end {
            no_newline = true;
        }
    }
    let newline = if crlf { "\r\n" } else { "\n" };
    let mut text = lines.join(newline);
    if !lines.is_empty() && !no_newline {
        text.push_str(newline);
    }
    Ok(text)
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

enum Change {
    Write {
        path: String,
        content: String,
        diff: FileDiff,
    },
    Remove {
        path: String,
        diff: FileDiff,
    },
}

fn read_text(sandbox: &Sandbox, path: &str) -> Result<String, Error> {
    String::from_utf8(sandbox.read(path)?)
        .map_err(|_| Error::Rejected(format!("`{path}` is not UTF-8 text")))
}

fn plan(sandbox: &Sandbox, file: &FilePatch) -> Result<Vec<Change>, Error> {
    let mut changes = Vec::new();
    match (&file.old_path, &file.new_path) {
        (None, Some(path)) => {
            match sandbox.read(path) {
                Err(sandbox::Error::NotFound { .. }) => {}
                Ok(_) => {
                    return Err(Error::Rejected(format!(
                        "`{path}` already exists; the patch creates it from /dev/null"
                    )));
                }
                Err(error) => return Err(error.into()),
            }
            let content = apply_hunks("", &file.hunks, path).map_err(Error::Rejected)?;
            let diff = file_diff(path, "created", "", &content);
            changes.push(Change::Write {
                path: path.clone(),
                content,
                diff,
            });
        }
        (Some(path), None) => {
            let old = read_text(sandbox, path)?;
            let rest = apply_hunks(&old, &file.hunks, path).map_err(Error::Rejected)?;
            if !rest.trim().is_empty() {
                return Err(Error::Rejected(format!(
                    "the patch deletes `{path}` but does not remove all of its lines"
                )));
            }
            changes.push(Change::Remove {
                path: path.clone(),
                diff: file_diff(path, "deleted", &old, ""),
            });
        }
        (Some(old_path), Some(new_path)) => {
            let old = read_text(sandbox, old_path)?;
            let content = apply_hunks(&old, &file.hunks, old_path).map_err(Error::Rejected)?;
            let diff = file_diff(new_path, "updated", &old, &content);
            changes.push(Change::Write {
                path: new_path.clone(),
                content,
                diff,
            });
            if old_path != new_path {
                changes.push(Change::Remove {
                    path: old_path.clone(),
                    diff: file_diff(old_path, "deleted", &old, ""),
                });
            }
        }
        (None, None) => return Err(Error::Rejected("a file patch names no file".to_owned())),
    }
    Ok(changes)
}

fn apply_all(sandbox: &Sandbox, files: &[FilePatch]) -> Result<ToolOutput, Error> {
    // Everything is computed and checked before anything is written.
    let mut changes = Vec::new();
    for file in files {
        changes.extend(plan(sandbox, file)?);
    }
    let mut diffs = Vec::new();
    let mut report = String::new();
    for change in changes {
        let diff = match change {
            Change::Write {
                path,
                content,
                diff,
            } => {
                sandbox.write(&path, content.as_bytes())?;
                diff
            }
            Change::Remove { path, diff } => {
                sandbox.remove(&path)?;
                diff
            }
        };
        let _ = writeln!(
            report,
            "{} {} (+{} -{})",
            diff.operation, diff.path, diff.additions, diff.deletions
        );
        diffs.push(diff);
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
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn hunks(patch: &str) -> Vec<Hunk> {
        parse(patch).unwrap().remove(0).hunks
    }

    #[test]
    fn applies_with_wrong_line_numbers() {
        let original = "a\nb\nc\nd\ne\n";
        let patch = "--- a/f\n+++ b/f\n@@ -40,3 +40,3 @@\n c\n-d\n+D\n e\n";
        assert_eq!(
            apply_hunks(original, &hunks(patch), "f").unwrap(),
            "a\nb\nc\nD\ne\n"
        );
    }

    #[test]
    fn keeps_crlf_and_missing_final_newline() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n";
        assert_eq!(
            apply_hunks("one\r\ntwo\r\n", &hunks(patch), "f").unwrap(),
            "one\r\n2\r\n"
        );
        assert_eq!(
            apply_hunks("one\ntwo", &hunks(patch), "f").unwrap(),
            "one\n2"
        );
    }

    #[test]
    fn rejection_shows_expected_and_actual_lines() {
        let patch = "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n b\n-x\n+y\n";
        let error = apply_hunks("a\nb\nc\n", &hunks(patch), "f").unwrap_err();
        assert_eq!(
            error,
            "hunk 1 of `f` does not match the file; nothing was changed.\nHunk: @@ -2,2 +2,2 @@\nExpected these lines:\n  |b\n  |x\nThe file has at line 2:\n  |b\n  |c\nRead the file again and send a patch against its current text."
        );
    }

    #[test]
    fn parses_new_deleted_and_several_files() {
        let files = parse(
            "diff --git a/x b/x\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
        )
        .unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(
            (files[0].old_path.clone(), files[0].new_path.clone()),
            (None, Some("new.txt".into()))
        );
        assert_eq!(
            (files[1].old_path.clone(), files[1].new_path.clone()),
            (Some("old.txt".into()), None)
        );
        assert_eq!(
            apply_hunks("", &files[0].hunks, "new.txt").unwrap(),
            "one\ntwo\n"
        );
    }

    #[test]
    fn text_without_headers_is_explained() {
        assert!(
            parse("just some text")
                .unwrap_err()
                .starts_with("no file headers found")
        );
    }
}
