//! Line diffs of file changes, for the display form and the +/- counts,
//! and for `/diff` and `offcode diff` ([`unified`]).
//!
//! Only the region that differs is diffed: the common prefix and suffix are
//! skipped first (a one-line edit of a 10 MB file diffs a few lines), and a
//! huge differing region is shown as one replacement instead of running
//! the diff engine over megabytes.
//!
//! The engine is `similar`'s Myers algorithm called directly on lines
//! ([`line_ops`]): its `TextDiff` compiles every algorithm and hook it can
//! switch between at run time, about 400 KB of the static binary.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use similar::DiffOp;

use crate::protocol::FileDiff;

/// Diff text kept for display.
const MAX_DIFF_BYTES: usize = 32 * 1024;
/// Time the diff engine may take; past it the result is coarser but correct.
const DIFF_TIMEOUT: Duration = Duration::from_millis(20);
/// Differing regions larger than this are shown as one replacement.
const MAX_DIFFED_BYTES: usize = 2 * 1024 * 1024;
/// Unchanged lines shown around a change.
const CONTEXT: usize = 3;

/// Lines in `text` (a last line without a newline counts).
pub fn count_lines(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// `+A -D` for summaries.
pub fn counts(diff: &FileDiff) -> String {
    format!("+{} -{}", diff.additions, diff.deletions)
}

/// Length of the common prefix of `a` and `b`, compared a block at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let limit = a.len().min(b.len());
    let mut at = 0;
    while at + 4096 <= limit && a[at..at + 4096] == b[at..at + 4096] {
        at += 4096;
    }
    at + a[at..limit]
        .iter()
        .zip(&b[at..limit])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Start of the line holding byte `at` (0 when it is on the first line).
fn line_start(text: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', &text[..at]).map_or(0, |i| i + 1)
}

/// Moves `at` back over up to `lines` whole lines.
fn back_lines(text: &[u8], mut at: usize, lines: usize) -> usize {
    for _ in 0..lines {
        if at == 0 {
            break;
        }
        at = line_start(text, at - 1);
    }
    at
}

/// Moves `at` forward over up to `lines` whole lines.
fn forward_lines(text: &[u8], mut at: usize, lines: usize) -> usize {
    for _ in 0..lines {
        match memchr::memchr(b'\n', &text[at..]) {
            Some(i) => at += i + 1,
            None => return text.len(),
        }
    }
    at
}

/// Compares `old` and `new` (empty for a created or deleted file).
pub fn file_diff(path: &str, operation: &str, old: &str, new: &str) -> FileDiff {
    let (text, additions, deletions) = unified(
        &format!("a/{path}"),
        &format!("b/{path}"),
        old,
        new,
        Some(MAX_DIFF_BYTES),
    );
    FileDiff {
        path: path.to_owned(),
        operation: operation.to_owned(),
        additions,
        deletions,
        diff: text,
    }
}

/// The unified diff of `old` (named `from`) and `new` (named `to`), with
/// the lines added and removed; its text cut past `limit` bytes, and empty
/// when nothing differs.
pub fn unified(
    from: &str,
    to: &str,
    old: &str,
    new: &str,
    limit: Option<usize>,
) -> (String, usize, usize) {
    let limit = limit.unwrap_or(usize::MAX);
    let (a, b) = (old.as_bytes(), new.as_bytes());
    // Skip what both share, in whole lines.
    let prefix = line_start(a, common_prefix(a, b));
    let tail = common_prefix_rev(&a[prefix..], &b[prefix..]);
    let (a_end, b_end) = (a.len() - tail, b.len() - tail);
    // Snap the suffix to line starts.
    let a_end = forward_to_line_start(a, a_end);
    let b_end = b_end + (a_end - (a.len() - tail));
    let start = back_lines(a, prefix, CONTEXT);
    let (old_stop, new_stop) = (
        forward_lines(a, a_end, CONTEXT),
        forward_lines(b, b_end, CONTEXT),
    );
    let old_region = &old[start..old_stop];
    let new_region = &new[start..new_stop];
    let first_line = memchr::memchr_iter(b'\n', &a[..start]).count();
    let mut text = format!("--- {from}\n+++ {to}\n");
    let (additions, deletions) = if old_region.len() + new_region.len() > MAX_DIFFED_BYTES {
        let line = memchr::memchr_iter(b'\n', &a[..prefix]).count();
        coarse(
            &mut text,
            limit,
            line,
            &old[prefix..a_end],
            &new[prefix..b_end],
        )
    } else {
        fine(&mut text, limit, first_line, old_region, new_region)
    };
    if additions + deletions == 0 {
        text.clear();
    }
    (text, additions, deletions)
}

/// Lines added and removed going from `old` to `new`.
pub fn line_counts(old: &str, new: &str) -> (usize, usize) {
    let (_, additions, deletions) = unified("", "", old, new, Some(0));
    (additions, deletions)
}

/// The edit script from `old`'s lines to `new`'s: Myers, coarser but
/// correct past `deadline`.
fn line_ops(old: &[&str], new: &[&str], deadline: Instant) -> Vec<DiffOp> {
    use similar::algorithms::{Capture, Compact, Replace};
    // Compacted as `TextDiff` does: changes slid to read well.
    let mut hook = Compact::new(Replace::new(Capture::new()), old, new);
    let Ok(()) = similar::algorithms::myers::diff_deadline(
        &mut hook,
        old,
        0..old.len(),
        new,
        0..new.len(),
        Some(deadline),
    );
    hook.into_inner().into_inner().into_ops()
}

/// Length of the common suffix of `a` and `b`.
fn common_prefix_rev(a: &[u8], b: &[u8]) -> usize {
    let limit = a.len().min(b.len());
    let mut length = 0;
    while length + 4096 <= limit
        && a[a.len() - length - 4096..a.len() - length]
            == b[b.len() - length - 4096..b.len() - length]
    {
        length += 4096;
    }
    length
        + a[..a.len() - length]
            .iter()
            .rev()
            .zip(b[..b.len() - length].iter().rev())
            .take(limit - length)
            .take_while(|(x, y)| x == y)
            .count()
}

/// The first line start at or after `at`.
fn forward_to_line_start(text: &[u8], at: usize) -> usize {
    if at == 0 || at == text.len() || text[at - 1] == b'\n' {
        return at;
    }
    memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i + 1)
}

/// Appends `line` with its sign, marking a missing final newline.
fn push_line(text: &mut String, sign: char, line: &str) {
    text.push(sign);
    text.push_str(line);
    if !line.ends_with('\n') {
        text.push_str("\n\\ No newline at end of file\n");
    }
}

/// Diffs the (small) regions with the diff engine; line numbers start
/// after `first_line`.
fn fine(
    text: &mut String,
    limit: usize,
    first_line: usize,
    old: &str,
    new: &str,
) -> (usize, usize) {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = line_ops(&old_lines, &new_lines, Instant::now() + DIFF_TIMEOUT);
    let (mut additions, mut deletions) = (0, 0);
    for op in &ops {
        additions += op.new_range().len() * usize::from(!matches!(op, DiffOp::Equal { .. }));
        deletions += op.old_range().len() * usize::from(!matches!(op, DiffOp::Equal { .. }));
    }
    'groups: for group in similar::group_diff_ops(ops, CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let _ = writeln!(
            text,
            "@@ -{} +{} @@",
            range(first_line + old_range.start, old_range.len()),
            range(first_line + new_range.start, new_range.len())
        );
        // Myers may give an insertion before the deletion beside it: each
        // run of changes is shown as its removed lines, then its added.
        let mut lines = Vec::new();
        let mut added = Vec::new();
        for op in &group {
            if let DiffOp::Equal { .. } = op {
                lines.append(&mut added);
                lines.extend(op.old_range().map(|i| (' ', old_lines[i])));
            } else {
                lines.extend(op.old_range().map(|i| ('-', old_lines[i])));
                added.extend(op.new_range().map(|i| ('+', new_lines[i])));
            }
        }
        lines.append(&mut added);
        for (sign, line) in lines {
            if text.len() > limit {
                text.push_str("[... diff truncated ...]\n");
                break 'groups;
            }
            push_line(text, sign, line);
        }
    }
    (additions, deletions)
}

/// Shows a huge differing region as one replacement of all its lines.
fn coarse(text: &mut String, limit: usize, line: usize, old: &str, new: &str) -> (usize, usize) {
    let (deletions, additions) = (count_lines(old), count_lines(new));
    let _ = writeln!(
        text,
        "@@ -{} +{} @@",
        range(line, deletions),
        range(line, additions)
    );
    for (sign, side) in [('-', old), ('+', new)] {
        for line in side.split_inclusive('\n') {
            if text.len() > limit {
                text.push_str("[... diff truncated ...]\n");
                return (additions, deletions);
            }
            push_line(text, sign, line);
        }
    }
    (additions, deletions)
}

/// A unified-diff range: `start,count` with 1-based start (0 when empty).
fn range(start: usize, count: usize) -> String {
    match count {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{count}", start + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn numbered(prefix: &str, lines: std::ops::Range<usize>) -> String {
        lines.fold(String::new(), |mut text, i| {
            let _ = writeln!(text, "{prefix} {i}");
            text
        })
    }

    #[test]
    fn counts_and_unified_text() {
        let diff = file_diff("a.txt", "updated", "one\ntwo\n", "one\nthree\nfour\n");
        assert_eq!((diff.additions, diff.deletions), (2, 1));
        assert_eq!(
            diff.diff,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n-two\n+three\n+four\n"
        );
    }

    #[test]
    fn one_line_change_in_a_long_file_has_absolute_line_numbers() {
        let old = numbered("line", 1..1001);
        let new = old.replace("line 500\n", "LINE 500\n");
        let diff = file_diff("f", "updated", &old, &new);
        assert_eq!((diff.additions, diff.deletions), (1, 1));
        assert_eq!(
            diff.diff,
            "--- a/f\n+++ b/f\n@@ -497,7 +497,7 @@\n line 497\n line 498\n line 499\n-line 500\n+LINE 500\n line 501\n line 502\n line 503\n"
        );
    }

    #[test]
    fn created_deleted_and_unchanged() {
        let created = file_diff("n", "created", "", "a\nb");
        assert_eq!((created.additions, created.deletions), (2, 0));
        assert_eq!(
            created.diff,
            "--- a/n\n+++ b/n\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
        );
        let deleted = file_diff("n", "deleted", "a\n", "");
        assert_eq!((deleted.additions, deleted.deletions), (0, 1));
        assert_eq!(file_diff("n", "unchanged", "a\n", "a\n").diff, "");
        assert_eq!(count_lines(""), 0);
    }

    #[test]
    fn huge_rewrites_are_cut_and_counted() {
        let old = numbered("old", 0..200_000);
        let new = numbered("new", 0..200_000);
        let diff = file_diff("big", "updated", &old, &new);
        assert_eq!((diff.additions, diff.deletions), (200_000, 200_000));
        assert!(
            diff.diff.len() < MAX_DIFF_BYTES + 100,
            "{}",
            diff.diff.len()
        );
        assert!(
            diff.diff
                .starts_with("--- a/big\n+++ b/big\n@@ -1,200000 +1,200000 @@\n-old 0\n")
        );
        assert!(diff.diff.ends_with("[... diff truncated ...]\n"));
    }

    #[test]
    fn change_at_the_very_end_without_newline() {
        let diff = file_diff("f", "updated", "a\nb", "a\nc");
        assert_eq!(
            diff.diff,
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
    }
}
