//! Markdown made readable a line at a time, as it streams: headings and
//! emphasis in bold, list bullets, inline code and fenced code blocks in
//! their own style. Only what a terminal can show well is handled; the
//! rest stays as the model wrote it.

use super::render::{Line, Role};

/// Remembers whether the stream is inside a fenced code block.
#[derive(Debug, Default, Clone)]
pub struct Markdown {
    fence: Option<String>,
}

impl Markdown {
    /// A renderer at the start of a text.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the last line left a code block open.
    pub fn in_code(&self) -> bool {
        self.fence.is_some()
    }

    /// Renders one complete source line (no newline) and advances.
    pub fn line(&mut self, source: &str) -> Line {
        let trimmed = source.trim_start();
        if let Some(fence) = &self.fence {
            if trimmed.starts_with(fence.as_str()) && trimmed.trim_end() == fence {
                self.fence = None;
                return Line::new().with(Role::Dim, "  └─");
            }
            return code_line(source);
        }
        if let Some(fence) = opening_fence(trimmed) {
            let language = trimmed[fence.len()..].trim();
            self.fence = Some(fence);
            return Line::new().with(Role::Dim, format!("  ┌─ {language}").trim_end());
        }
        self.peek(source)
    }

    /// Renders a line that is still arriving, without advancing.
    pub fn peek(&self, source: &str) -> Line {
        if self.fence.is_some() {
            return code_line(source);
        }
        let trimmed = source.trim_start();
        let indent = &source[..source.len() - trimmed.len()];
        let hashes = trimmed.bytes().take_while(|&b| b == b'#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            return Line::new().with(Role::Label, trimmed[hashes..].trim());
        }
        if let Some(rest) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
            .or_else(|| trimmed.strip_prefix("+ "))
        {
            let rest = rest
                .strip_prefix("[ ] ")
                .map(|r| ("☐ ", r))
                .or_else(|| rest.strip_prefix("[x] ").map(|r| ("☑ ", r)));
            return match rest {
                Some((mark, text)) => {
                    inline(Line::new().with(Role::Dim, format!("{indent}{mark}")), text)
                }
                None => inline(
                    Line::new().with(Role::Dim, format!("{indent}• ")),
                    &trimmed[2..],
                ),
            };
        }
        if let Some(rest) = trimmed
            .strip_prefix("> ")
            .or(trimmed.strip_prefix('>').filter(|r| r.is_empty()))
        {
            return Line::new().with(Role::Dim, format!("{indent}│ {rest}"));
        }
        if is_rule(trimmed) {
            return Line::new().with(Role::Dim, "────────");
        }
        inline(Line::new().with(Role::Text, indent), trimmed)
    }
}

fn opening_fence(trimmed: &str) -> Option<String> {
    for mark in ['`', '~'] {
        let count = trimmed.chars().take_while(|&c| c == mark).count();
        if count >= 3 {
            let fence: String = std::iter::repeat_n(mark, count).collect();
            // A backtick fence's info string has no backticks.
            if mark == '~' || !trimmed[count..].contains('`') {
                return Some(fence);
            }
        }
    }
    None
}

fn is_rule(trimmed: &str) -> bool {
    let text = trimmed.trim_end();
    text.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|&c| text.chars().all(|t| t == c || t == ' ') && text.contains(c))
}

fn code_line(source: &str) -> Line {
    Line::new()
        .with(Role::Dim, "  │ ")
        .with(Role::Code, source.replace('\t', "    "))
}

/// `text` with `code`, **bold** and __bold__ spans styled, after `line`.
fn inline(mut line: Line, text: &str) -> Line {
    let mut rest = text;
    while !rest.is_empty() {
        let next = rest.find(['`', '*', '_']).unwrap_or(rest.len());
        line = line.with(Role::Text, &rest[..next]);
        rest = &rest[next..];
        if rest.is_empty() {
            break;
        }
        let (mark, role) = if rest.starts_with('`') {
            ("`", Role::Code)
        } else if rest.starts_with("**") {
            ("**", Role::Label)
        } else if rest.starts_with("__") {
            ("__", Role::Label)
        } else {
            let len = rest.chars().next().map_or(1, char::len_utf8);
            line = line.with(Role::Text, &rest[..len]);
            rest = &rest[len..];
            continue;
        };
        match rest[mark.len()..].find(mark) {
            Some(end) if end > 0 => {
                line = line.with(role, &rest[mark.len()..mark.len() + end]);
                rest = &rest[mark.len() * 2 + end..];
            }
            _ => {
                line = line.with(Role::Text, mark);
                rest = &rest[mark.len()..];
            }
        }
    }
    merge(line)
}

/// Joins neighbouring spans of the same role.
fn merge(line: Line) -> Line {
    let mut out = Line::new();
    for span in line.0 {
        match out.0.last_mut() {
            Some(last) if last.role == span.role => last.text.push_str(&span.text),
            _ => out.0.push(span),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::render::Span;

    fn roles(line: &Line) -> Vec<(Role, &str)> {
        line.0.iter().map(|s| (s.role, s.text.as_str())).collect()
    }

    #[test]
    fn headings_lists_and_inline_spans() {
        let mut md = Markdown::new();
        assert_eq!(roles(&md.line("## Plan")), [(Role::Label, "Plan")]);
        assert_eq!(
            roles(&md.line("- run `cargo test` **first**")),
            [
                (Role::Dim, "• "),
                (Role::Text, "run "),
                (Role::Code, "cargo test"),
                (Role::Text, " "),
                (Role::Label, "first"),
            ]
        );
        assert_eq!(md.line("  * 嵌套").plain(), "  • 嵌套");
        assert_eq!(md.line("- [x] done").plain(), "☑ done");
        assert_eq!(md.line("snake_case_name").plain(), "snake_case_name");
        assert_eq!(md.line("2 * 3 * 4").plain(), "2 * 3 * 4");
        assert_eq!(md.line("> quoted").plain(), "│ quoted");
        assert_eq!(md.line("---").plain(), "────────");
    }

    #[test]
    fn fenced_code_is_kept_verbatim_until_it_closes() {
        let mut md = Markdown::new();
        assert_eq!(md.line("```rust").plain(), "  ┌─ rust");
        assert!(md.in_code());
        let code = md.line("# not a heading **x**");
        assert_eq!(
            code.0,
            vec![
                Span {
                    role: Role::Dim,
                    text: "  │ ".into()
                },
                Span {
                    role: Role::Code,
                    text: "# not a heading **x**".into()
                }
            ]
        );
        // A partial line inside the block is code too, and peeking does
        // not close it.
        assert_eq!(md.peek("``").plain(), "  │ ``");
        assert_eq!(md.line("```").plain(), "  └─");
        assert!(!md.in_code());
        assert_eq!(md.line("# Heading").plain(), "Heading");
    }
}
