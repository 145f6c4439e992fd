//! Line diffs of file changes, for the display form and the counts.

use similar::{ChangeTag, TextDiff};

use crate::protocol::FileDiff;

/// Diff text kept for display.
const MAX_DIFF_BYTES: usize = 32 * 1024;

/// Compares `old` and `new` (empty for a created or deleted file).
pub fn file_diff(path: &str, operation: &str, old: &str, new: &str) -> FileDiff {
    let diff = TextDiff::from_lines(old, new);
    let (mut additions, mut deletions) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => additions += 1,
            ChangeTag::Delete => deletions += 1,
            ChangeTag::Equal => {}
        }
    }
    let mut text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    if text.len() > MAX_DIFF_BYTES {
        let mut cut = MAX_DIFF_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[... diff truncated ...]\n");
    }
    FileDiff {
        path: path.to_owned(),
        operation: operation.to_owned(),
        additions,
        deletions,
        diff: text,
    }
}

/// `+A -D` for summaries.
pub fn counts(diff: &FileDiff) -> String {
    format!("+{} -{}", diff.additions, diff.deletions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn counts_and_unified_text() {
        let diff = file_diff("a.txt", "updated", "one\ntwo\n", "one\nthree\nfour\n");
        assert_eq!((diff.additions, diff.deletions), (2, 1));
        assert_eq!(
            diff.diff,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n-two\n+three\n+four\n"
        );
    }
}
