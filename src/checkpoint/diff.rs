//! What the agent changed, as a person reads it: `/diff` and `offcode
//! diff`, from the checkpoints of a session's steps (no git needed).

use std::fmt::Write as _;

use super::Error;
use super::manifest::{Entry, Kind};
use super::rewind::{Spanned, Turn, UNCERTAIN, from_turn, line_counts, same, shown, span};

/// What the agent changed since turn `since` (1: the whole session), as a
/// unified diff of each file from before its first change to what the
/// agent's last change left; a file changed by hand since is marked.
pub fn diff_since(
    checkpoints: &mut super::Checkpoints,
    turns: &[Turn],
    since: usize,
) -> Result<(Vec<String>, String), Error> {
    let (steps, now) = from_turn(checkpoints, turns, since)?;
    let store = checkpoints.store();
    let mut summary = Vec::new();
    let mut text = String::new();
    for (path, spanned) in span(store, &steps)? {
        let Spanned {
            first,
            last,
            uncertain,
        } = spanned;
        if same(first.as_ref(), last.as_ref()) {
            continue;
        }
        let name = shown(&path);
        let hand = if !same(now.get(&path), last.as_ref()) {
            "  (changed by hand since)"
        } else if uncertain {
            UNCERTAIN
        } else {
            ""
        };
        let content = |entry: &Option<Entry>| -> Result<Option<Vec<u8>>, Error> {
            match entry {
                Some(e) if e.kind == Kind::File => store.get(&e.hash).map(Some),
                _ => Ok(None),
            }
        };
        let (old, new) = (content(&first)?, content(&last)?);
        let text_of = |bytes: &Option<Vec<u8>>| {
            bytes
                .as_deref()
                .map_or(Some(""), |b| std::str::from_utf8(b).ok())
                .map(str::to_owned)
        };
        let mark = match (&first, &last) {
            (None, _) => "added   ",
            (_, None) => "deleted ",
            _ => "modified",
        };
        match (text_of(&old), text_of(&new)) {
            (Some(old), Some(new))
                if first.as_ref().is_none_or(|e| e.kind == Kind::File)
                    && last.as_ref().is_none_or(|e| e.kind == Kind::File) =>
            {
                let (added, removed) =
                    line_counts(old.as_bytes(), new.as_bytes()).unwrap_or((0, 0));
                summary.push(format!("{mark} {name}  +{added} -{removed}{hand}"));
                let a = if first.is_some() {
                    format!("a/{name}")
                } else {
                    "/dev/null".to_owned()
                };
                let b = if last.is_some() {
                    format!("b/{name}")
                } else {
                    "/dev/null".to_owned()
                };
                text.push_str(&crate::tools::diff::unified(&a, &b, &old, &new, None).0);
            }
            _ => {
                summary.push(format!("{mark} {name}  (not text){hand}"));
                let _ = writeln!(text, "Binary or special file {name} differs");
            }
        }
    }
    Ok((summary, text))
}
