//! Places in JSONC text, for errors that name a line and column where
//! the parser that found the problem could not (checks made after
//! parsing: an MCP server, an agent).

/// Where the key at `keys` (nested, outermost first) is written in a
/// config file's text, as line and column (1-based): the first match of
/// each key, quoted or bare, followed by `:`, after the one before it.
pub fn locate_key(text: &str, keys: &[&str]) -> Option<(usize, usize)> {
    let mut from = 0;
    let mut at = None;
    for key in keys {
        let found = [format!("\"{key}\""), format!("'{key}'"), (*key).to_owned()]
            .iter()
            .filter_map(|written| {
                text[from..]
                    .match_indices(written.as_str())
                    .find_map(|(i, _)| {
                        let after = text[from + i + written.len()..].trim_start();
                        after.starts_with(':').then_some(from + i)
                    })
            })
            .min()?;
        from = found + key.len();
        at = Some(found);
    }
    let at = at?;
    let line = text[..at].matches('\n').count() + 1;
    let column = text[..at].rfind('\n').map_or(at, |nl| at - nl - 1) + 1;
    Some((line, column))
}
