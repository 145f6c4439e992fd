//! JSON a model wrote, repaired where the repair is unambiguous.

use std::fmt::Write as _;

use serde_json::Value;

use super::calls::object_end;

/// `text` as JSON, repaired where the repair is unambiguous: control
/// characters written raw inside strings (a TAB, a newline), a comma
/// before a closing bracket, closing brackets missing at the end, the
/// doubled braces of a template's example (`{{"name": …}}`), Python's
/// `"""` strings and `True`/`False`/`None` values, and closing brackets
/// past the end of a whole value.
pub(super) fn repaired(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    if let Some(quoted) = triple_quoted(text) {
        return repaired(&quoted);
    }
    if let Some(json) = python_literals(text) {
        return repaired(&json);
    }
    if let Some(value) = extra_closers(text) {
        return Some(value);
    }
    let undoubled;
    let text = if text.starts_with("{{") && text.ends_with("}}") {
        undoubled = undouble(text);
        &undoubled
    } else {
        text
    };
    let mut out = String::with_capacity(text.len() + 8);
    let mut open = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            match c {
                _ if escaped => {
                    escaped = false;
                    out.push(c);
                }
                '\\' => {
                    escaped = true;
                    out.push(c);
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => out.push(c),
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => open.push('}'),
            '[' => open.push(']'),
            '}' | ']' => {
                if open.pop() != Some(c) {
                    return None;
                }
                // A comma right before a closing bracket goes.
                let trimmed = out.trim_end().len();
                if out[..trimmed].ends_with(',') {
                    out.truncate(trimmed - 1);
                }
            }
            _ => {}
        }
        out.push(c);
    }
    if in_string {
        return None;
    }
    while let Some(close) = open.pop() {
        out.push(close);
    }
    serde_json::from_str(&out).ok()
}

/// Python's `"""…"""` strings, outside JSON strings, as JSON strings.
fn triple_quoted(text: &str) -> Option<String> {
    const TRIPLE: &str = "\"\"\"";
    rewritten(text, |rest, _| {
        let Some(body) = rest.strip_prefix(TRIPLE) else {
            return Some(None);
        };
        let end = body.find(TRIPLE)?;
        let string = serde_json::to_string(&body[..end]).ok()?;
        Some(Some((string, TRIPLE.len() * 2 + end)))
    })
}

/// Python's `True`, `False` and `None`, where a value stands outside JSON
/// strings (after `:`, `,` or `[`), as JSON's literals.
fn python_literals(text: &str) -> Option<String> {
    const LITERALS: [(&str, &str); 3] = [("True", "true"), ("False", "false"), ("None", "null")];
    rewritten(text, |rest, out| {
        let at_value = out.trim_end().ends_with([':', ',', '[']);
        let literal = LITERALS.iter().find(|(python, _)| {
            rest.strip_prefix(python)
                .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        });
        Some(
            literal
                .filter(|_| at_value)
                .map(|(python, json)| ((*json).to_owned(), python.len())),
        )
    })
}

/// `text` with what `replace` makes of it at points outside JSON strings:
/// given the rest of the text and what is written so far, the
/// replacement and how many bytes it stands for, nothing to replace there,
/// or (`None`) no repair at all. `None` also when nothing was replaced.
fn rewritten(
    text: &str,
    mut replace: impl FnMut(&str, &str) -> Option<Option<(String, usize)>>,
) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let (mut quotes, mut changed) = (Quotes::default(), false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !quotes.in_string
            && let Some((replacement, used)) = replace(rest, &out)?
        {
            out.push_str(&replacement);
            rest = &rest[used..];
            changed = true;
            continue;
        }
        quotes.outside(c);
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    changed.then_some(out)
}

/// Where a scan of JSON text stands: in a string or not.
#[derive(Default)]
struct Quotes {
    in_string: bool,
    escaped: bool,
}

impl Quotes {
    /// Takes in `c`; whether it stands outside every string (an opening
    /// or closing quote does not).
    fn outside(&mut self, c: char) -> bool {
        if self.in_string {
            match c {
                _ if self.escaped => self.escaped = false,
                '\\' => self.escaped = true,
                '"' => self.in_string = false,
                _ => {}
            }
            false
        } else {
            self.in_string = c == '"';
            !self.in_string
        }
    }
}

/// A whole value followed by nothing but stray closing brackets (`{…}}`,
/// a small model's extra brace): the value.
fn extra_closers(text: &str) -> Option<Value> {
    let text = text.trim();
    if !text.starts_with('{') {
        return None;
    }
    let end = object_end(text)?;
    let tail = &text[end..];
    (!tail.is_empty()
        && tail
            .chars()
            .all(|c| matches!(c, '}' | ']') || c.is_whitespace()))
    .then(|| repaired(&text[..end]))
    .flatten()
}

/// `{{` and `}}` outside strings made single.
fn undouble(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut quotes = Quotes::default();
    while let Some(c) = chars.next() {
        if quotes.outside(c) && matches!(c, '{' | '}') && chars.peek() == Some(&c) {
            chars.next();
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_values_become_json_only_where_a_value_stands() {
        assert_eq!(
            repaired(r#"{"a": True, "b": [False, None], "c": "True, False"}"#),
            Some(json!({"a": true, "b": [false, null], "c": "True, False"}))
        );
        // A word that only starts like one is left alone, so it stays invalid.
        assert_eq!(repaired(r#"{"a": Nonesuch}"#), None);
        assert_eq!(repaired(r#"{"a": Falsey}"#), None);
        // Inside a string, after a colon, it is text.
        assert_eq!(
            repaired(r#"{"command": "python3 -c 'x = 1 if y else None'", "t": False}"#),
            Some(json!({"command": "python3 -c 'x = 1 if y else None'", "t": false}))
        );
        assert_eq!(
            repaired(r#"{"a": "say: True", "b": False}"#),
            Some(json!({"a": "say: True", "b": false}))
        );
    }
}
