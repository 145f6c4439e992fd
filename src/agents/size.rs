//! Which prompt and tool set a model gets: the compact profile for a
//! small model (by the size its name states) or a short context.

/// Tools the compact profile leaves out (unless an agent switches one on
/// by name): subagents, the todo list (offcode keeps it) and diffs, which
/// small models get wrong.
pub const LEFT_OUT_WHEN_COMPACT: [&str; 4] = ["task", "todowrite", "todoread", "patch"];

/// Parameters (in billions) up to which a model counts as small.
const SMALL_PARAMETERS: f64 = 4.0;
/// A context (in tokens) up to which the compact profile is used.
const SHORT_CONTEXT: u64 = 8_192;

/// The sizes a model's name states: a number right before a `b` or `B`,
/// neither joined to other letters or digits (`1.5b`, `-32B-`, not `a3b`
/// or `b16`).
fn sizes(model: &str) -> impl Iterator<Item = f64> + '_ {
    let bytes = model.as_bytes();
    let word = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_alphanumeric);
    (0..bytes.len()).filter_map(move |start| {
        let starts_number = bytes[start].is_ascii_digit()
            && (start == 0 || !(word(start - 1) || bytes[start - 1] == b'.'));
        if !starts_number {
            return None;
        }
        let end = start
            + model[start..]
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(model.len() - start);
        let unit = bytes
            .get(end)
            .is_some_and(|b| b.eq_ignore_ascii_case(&b'b'));
        (unit && !word(end + 1))
            .then(|| model[start..end].parse::<f64>().ok())
            .flatten()
    })
}

/// Whether the compact profile is used, and why, in words for `doctor`:
/// `forced` is the config's `compact` (`on`/`off`), `None` for `auto`.
pub fn compact_choice(forced: Option<bool>, model: &str, context: Option<u64>) -> (bool, String) {
    if let Some(on) = forced {
        let word = if on { "on" } else { "off" };
        return (on, format!("`compact: {word}` in the config"));
    }
    if sizes(model)
        .reduce(f64::max)
        .is_some_and(|b| b <= SMALL_PARAMETERS)
    {
        return (true, format!("a small model: `{model}`"));
    }
    if let Some(context) = context.filter(|c| *c <= SHORT_CONTEXT) {
        return (true, format!("a short context: {context} tokens"));
    }
    (false, "not a small model or a short context".to_owned())
}
