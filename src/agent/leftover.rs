//! What a rename made in one file left in the others a task names: the
//! one name an edit changed, the named files that still hold it, and the
//! same edit as a call the model can send there.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use super::finish::Owed;
use super::intent;

/// Bytes of a named file searched for text the turn replaced elsewhere.
const MAX_SEARCHED: u64 = 1024 * 1024;

/// A note when a file the task names, which the turn did not change,
/// still holds text an edit of the turn replaced in another file: a
/// rename across files done in one of them.
pub(super) fn left_alone(root: &std::path::Path, named: &[String], owed: &Owed) -> Option<String> {
    let (name, edit, times) = still_holding(root, named, owed)?;
    // The same edit there, for the model to send or not.
    let call = same_edit(name, &edit, times);
    Some(format!(
        "`{name}`, which the task names, still has `{}`, which you replaced in `{}`. If the task asks for the change there too, make it now, for example with this call alone in your message:\n{call}\nIf not, say so.",
        edit.old.trim(),
        edit.path
    ))
}

/// `edit` made again in `name`, which holds its text `times` times, as a
/// call the model can send.
pub(super) fn same_edit(name: &str, edit: &intent::Replaced, times: usize) -> serde_json::Value {
    serde_json::json!({"name": "edit", "arguments": {
        "path": name,
        "old_string": edit.old,
        "new_string": edit.new,
        "replace_all": times > 1,
    }})
}

/// The rename an edit made, the only change worth making in the other
/// files a task names too: one name for another (no spaces in either), or
/// one name changed in a longer text (`def compute_total(prices):` made
/// `def total_price(prices):` is `compute_total` made `total_price`). The
/// 1.5B model's `add` replaced by a whole `def add(a, b): …` line is none:
/// made in the test file, as a note once offered, it broke it. Nor is a
/// literal changed (`False` to `True`, `1` to `2`).
fn rename(edit: &intent::Replaced) -> Option<intent::Replaced> {
    let (old, new) = (edit.old.trim(), edit.new.trim());
    let word = |text: &str| !text.is_empty() && !text.contains(char::is_whitespace);
    if word(old) && word(new) {
        return (old.chars().count() >= 3).then(|| edit.clone());
    }
    let (before, after) = (pieces(old), pieces(new));
    if before.len() != after.len() {
        return None;
    }
    let mut differ = before.iter().zip(&after).filter(|(a, b)| a != b);
    let (from, to) = differ.next()?;
    let name = |piece: &str| {
        piece.chars().count() >= 3
            && piece.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && !["true", "false", "none", "null", "nil"].contains(&piece.to_lowercase().as_str())
    };
    (differ.next().is_none() && name(from) && name(to)).then(|| intent::Replaced {
        old: (*from).to_owned(),
        new: (*to).to_owned(),
        path: edit.path.clone(),
    })
}

/// `text` cut into names (letters, digits, `_`) and single other characters.
fn pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        let in_name = c.is_alphanumeric() || c == '_';
        match (in_name, start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                pieces.push(&text[from..at]);
                start = None;
            }
            _ => {}
        }
        if !in_name {
            pieces.push(&text[at..at + c.len_utf8()]);
        }
    }
    if let Some(from) = start {
        pieces.push(&text[from..]);
    }
    pieces
}

/// A file the task names, not changed by the turn, that still holds text
/// an edit of the turn replaced elsewhere: the file, the edit, and how
/// many times it holds the text.
pub(super) fn still_holding<'a>(
    root: &std::path::Path,
    named: &'a [String],
    owed: &Owed,
) -> Option<(&'a String, intent::Replaced, usize)> {
    for name in named {
        if owed.changed_path(name) {
            continue;
        }
        let Some(content) = super::grounded::small_text(&root.join(name), MAX_SEARCHED) else {
            continue;
        };
        if let Some(edit) = owed
            .replaced
            .iter()
            .filter_map(rename)
            .find(|r| content.contains(&r.old))
        {
            let times = content.matches(&edit.old).count();
            return Some((name, edit, times));
        }
    }
    None
}
