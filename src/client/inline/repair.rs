//! JSON a model wrote, repaired where the repair is unambiguous.

use std::fmt::Write as _;

use serde_json::Value;

use super::calls::object_end;

/// `text` as JSON, repaired where the repair is unambiguous: control
/// characters written raw inside strings (a TAB, a newline), a comma
/// before a closing bracket, closing brackets missing at the end, the
/// doubled braces of a template's example (`{{"name": …}}`), Python's
/// `"""` strings, and closing brackets past the end of a whole value.
pub(super) fn repaired(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    if let Some(quoted) = triple_quoted(text) {
        return repaired(&quoted);
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
    let mut out = String::with_capacity(text.len() + 16);
    let (mut quotes, mut changed) = (Quotes::default(), false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !quotes.in_string && rest.starts_with(TRIPLE) {
            let body = &rest[TRIPLE.len()..];
            let end = body.find(TRIPLE)?;
            out.push_str(&serde_json::to_string(&body[..end]).ok()?);
            rest = &body[end + TRIPLE.len()..];
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
