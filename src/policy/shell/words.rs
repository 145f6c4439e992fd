//! Words as bash reads them before expansion: unquoted text, double
//! quotes and `$'...'`.

use super::Arg;

/// Unquoted text: backslashes escape the next character, a backslash-newline
/// disappears, glob characters and brace lists make the word dynamic, and a
/// leading `~` or `~/` is the home directory.
pub(super) fn decode_unquoted(
    text: &str,
    first: bool,
    home: Option<&str>,
    out: &mut Arg,
    brace: &mut bool,
) {
    let mut rest = text;
    if first && (rest == "~" || rest.starts_with("~/")) {
        match home {
            Some(home) => {
                out.text.push_str(home);
                rest = &rest[1..];
            }
            None => out.dynamic = true,
        }
    } else if first && rest.starts_with('~') {
        out.dynamic = true; // ~user, ~+, ~-
    }
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.text.push(next),
            },
            '*' | '?' | '[' | '$' | '`' => {
                out.dynamic = true;
                out.text.push(c);
            }
            '{' => {
                *brace = true;
                out.text.push(c);
            }
            ',' | '.' if *brace => {
                out.dynamic = true;
                out.text.push(c);
            }
            _ => out.text.push(c),
        }
    }
}

/// Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and
/// a newline.
pub(super) fn decode_double_quoted(text: &str, out: &mut Arg) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    out.text.push(chars.next().unwrap_or('\\'));
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.text.push('\\'),
            }
        } else {
            if c == '$' || c == '`' {
                out.dynamic = true;
            }
            out.text.push(c);
        }
    }
}

/// Decodes `$'...'` as bash does; `None` for a form it cannot be sure of.
pub(super) fn decode_ansi_c(text: &str) -> Option<String> {
    let body = text.strip_prefix("$'")?.strip_suffix('\'')?;
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = chars.next()?;
        match escaped {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(escaped),
            '0'..='7' => {
                let mut value = escaped.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value & 0xff)?);
            }
            'x' | 'u' | 'U' => {
                let max = match escaped {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value = 0_u32;
                let mut count = 0;
                while count < max {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(digit) => {
                            value = value * 16 + digit;
                            chars.next();
                            count += 1;
                        }
                        None => break,
                    }
                }
                if count == 0 {
                    out.push('\\');
                    out.push(escaped);
                } else {
                    out.push(char::from_u32(value)?);
                }
            }
            'c' => {
                let control = chars.next()?;
                out.push(char::from_u32(
                    u32::from(control.to_ascii_uppercase()) ^ 0x40,
                )?);
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Some(out)
}
