//! Markdown made readable a line at a time, as it streams: headings and
//! emphasis in bold, list bullets, fenced code blocks in their own style,
//! and tables in aligned columns (their rows are held until the table
//! ends). Blocks are found line by line; the text inside a line (code
//! spans, emphasis, links, escapes) is read by pulldown-cmark. Only what a
//! terminal can show well is handled; the rest stays as the model wrote it.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use ratatui_core::buffer::Buffer;
use ratatui_core::layout::{Constraint, Rect};
use ratatui_core::widgets::Widget;
use ratatui_widgets::table::{Cell, Row, Table};

use super::render::{Line, Lines, Role};

/// Remembers whether the stream is inside a fenced code block, and the
/// rows of a table it is holding.
#[derive(Debug, Default, Clone)]
pub struct Markdown {
    fence: Option<String>,
    /// Rows that may be a table: a `|` row, then (to be one) a delimiter
    /// row, then more `|` rows.
    table: Vec<String>,
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

    /// Renders one complete source line (no newline) and advances: no
    /// line while a table's rows are held, the table and the line after
    /// it when it ends.
    pub fn line(&mut self, source: &str) -> Vec<Line> {
        let trimmed = source.trim_start();
        if let Some(fence) = &self.fence {
            if trimmed.starts_with(fence.as_str()) && trimmed.trim_end() == fence {
                self.fence = None;
                return vec![Line::new().with(Role::Dim, "  └─")];
            }
            return vec![code_line(source)];
        }
        let row = trimmed.trim_end();
        if row.starts_with('|') && row.len() > 1 {
            let confirmed = self.table.len() >= 2;
            if self.table.is_empty() || confirmed || is_delimiter(row) {
                self.table.push(row.to_owned());
                return Vec::new();
            }
        }
        let mut out = self.finish();
        if row.starts_with('|') && row.len() > 1 {
            // A new candidate after rows that were not a table.
            self.table.push(row.to_owned());
            return out;
        }
        if let Some(fence) = opening_fence(trimmed) {
            let language = trimmed[fence.len()..].trim();
            self.fence = Some(fence);
            out.push(Line::new().with(Role::Dim, format!("  ┌─ {language}").trim_end()));
            return out;
        }
        out.push(self.peek(source));
        out
    }

    /// The rows held, now: a table in columns, or (not one after all)
    /// each row as a line. Called at the end of a text.
    pub fn finish(&mut self) -> Vec<Line> {
        let rows = std::mem::take(&mut self.table);
        self.held(&rows)
    }

    /// The rows held so far, as [`Markdown::finish`] would show them, for
    /// the live area.
    pub fn pending(&self) -> Vec<Line> {
        self.held(&self.table)
    }

    fn held(&self, rows: &[String]) -> Vec<Line> {
        if rows.len() >= 2 && is_delimiter(&rows[1]) {
            table(rows)
        } else {
            rows.iter().map(|row| self.peek(row)).collect()
        }
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
        // `1. ` and `1) `: the number kept, the rest read inline.
        let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
        if (1..=9).contains(&digits)
            && (trimmed[digits..].starts_with(". ") || trimmed[digits..].starts_with(") "))
        {
            let marker = &trimmed[..digits + 2];
            return inline(
                Line::new().with(Role::Dim, format!("{indent}{marker}")),
                &trimmed[digits + 2..],
            );
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

/// `text` read as Markdown inline content by pulldown-cmark, after `line`:
/// code spans as code, strong text bold, struck text dim, a link's text
/// followed by its address (dim) when they differ; markers and escapes
/// are gone. What it reads as no text at all (a link definition) stays as
/// written.
fn inline(mut line: Line, text: &str) -> Line {
    let start = line.spans.len();
    let mut roles = vec![Role::Text];
    let mut open_link: Option<(String, usize)> = None;
    // Block syntax was handled line by line: a leading `#`, `>`, `-` or
    // `1.` here is text, so it is escaped before parsing.
    let escaped;
    let marker = text.starts_with(['#', '>'])
        || (text.starts_with(['-', '+', '*']) && text[1..].starts_with(' '));
    let source = if marker {
        escaped = format!("\\{text}");
        escaped.as_str()
    } else {
        text
    };
    for event in Parser::new_ext(source, Options::ENABLE_STRIKETHROUGH) {
        let role = *roles.last().unwrap_or(&Role::Text);
        match event {
            Event::Text(piece) | Event::Html(piece) | Event::InlineHtml(piece) => {
                line = line.with(role, piece.as_ref());
            }
            Event::Code(code) => line = line.with(Role::Code, code.as_ref()),
            Event::SoftBreak | Event::HardBreak => line = line.with(role, " "),
            Event::Start(Tag::Strong) => roles.push(Role::Label),
            Event::Start(Tag::Strikethrough) => roles.push(Role::Dim),
            Event::Start(Tag::Emphasis) => roles.push(role),
            Event::End(TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Emphasis) => {
                roles.pop();
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                open_link = Some((dest_url.into_string(), line.spans.len()));
            }
            Event::End(TagEnd::Link) => {
                if let Some((url, from)) = open_link.take() {
                    let shown: String = line.spans[from..]
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    if shown != url && !url.is_empty() {
                        line = line.with(Role::Dim, format!(" ({url})"));
                    }
                }
            }
            _ => {}
        }
    }
    if line.spans[start..].iter().all(|s| s.content.is_empty()) && !text.trim().is_empty() {
        line = line.with(Role::Text, text);
    } else {
        // A paragraph loses its trailing spaces; a line still arriving
        // keeps them, so the next word does not join this one.
        line = line.with(Role::Text, &text[text.trim_end().len()..]);
    }
    merge(line)
}

/// Whether `row` is a table's delimiter row: `|---|:--:|`.
fn is_delimiter(row: &str) -> bool {
    let cells = cells(row);
    !cells.is_empty()
        && cells.iter().all(|cell| {
            let cell = cell.trim_matches(':');
            !cell.is_empty() && cell.bytes().all(|b| b == b'-')
        })
}

/// A row's cells, trimmed, without the outer pipes.
fn cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').unwrap_or(row);
    row.split('|').map(|cell| cell.trim().to_owned()).collect()
}

/// `rows` (a header, the delimiter, the body) in aligned columns: the
/// header bold, a rule under it, cells read inline.
fn table(rows: &[String]) -> Vec<Line> {
    let right: Vec<bool> = cells(&rows[1])
        .iter()
        .map(|c| c.ends_with(':') && !c.starts_with(':'))
        .collect();
    let grid: Vec<Vec<Line>> = rows
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != 1)
        .map(|(_, row)| {
            cells(row)
                .iter()
                .map(|cell| inline(Line::new(), cell))
                .collect()
        })
        .collect();
    let columns = grid.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            grid.iter()
                .filter_map(|row| row.get(c))
                .map(Line::width)
                .max()
                .unwrap_or(0)
        })
        .collect();
    // ratatui's table lays the columns out, one row at a time (a buffer
    // as wide as the table and one row high, however long the table is).
    let total = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    let constraints: Vec<Constraint> = widths
        .iter()
        .map(|w| Constraint::Length(u16::try_from(*w).unwrap_or(u16::MAX)))
        .collect();
    let area = Rect::new(0, 0, u16::try_from(total).unwrap_or(u16::MAX), 1);
    let mut out = Vec::new();
    for (index, row) in grid.into_iter().enumerate() {
        let cells = row.into_iter().enumerate().map(|(c, mut cell)| {
            if index == 0 {
                for span in &mut cell.spans {
                    span.style = Role::Label.style();
                }
            }
            if right.get(c).copied().unwrap_or(false) {
                cell = cell.right_aligned();
            }
            Cell::from(cell)
        });
        let mut buffer = Buffer::empty(area);
        Table::new([Row::new(cells)], constraints.clone())
            .column_spacing(2)
            .render(area, &mut buffer);
        out.push(merge(super::paint::row(&buffer, 0)));
        if index == 0 {
            out.push(Line::new().with(Role::Dim, "─".repeat(total)));
        }
    }
    out
}

/// Joins neighbouring spans of the same role.
fn merge(line: Line) -> Line {
    let mut out = Line::new();
    for span in line.spans.into_iter().filter(|s| !s.content.is_empty()) {
        match out.spans.last_mut() {
            Some(last) if last.style == span.style => last.content.to_mut().push_str(&span.content),
            _ => out.spans.push(span),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui_core::style::Style;

    /// The one line `source` renders to.
    fn one(md: &mut Markdown, source: &str) -> Line {
        let mut lines = md.line(source);
        assert_eq!(lines.len(), 1, "{source}: {lines:?}");
        lines.remove(0)
    }

    fn roles(line: &Line) -> Vec<(Style, &str)> {
        line.spans
            .iter()
            .map(|s| (s.style, s.content.as_ref()))
            .collect()
    }

    #[test]
    fn headings_lists_and_inline_spans() {
        let mut md = Markdown::new();
        assert_eq!(
            roles(&one(&mut md, "## Plan")),
            [(Role::Label.style(), "Plan")]
        );
        assert_eq!(
            roles(&one(&mut md, "- run `cargo test` **first**")),
            [
                (Role::Dim.style(), "• "),
                (Role::Text.style(), "run "),
                (Role::Code.style(), "cargo test"),
                (Role::Text.style(), " "),
                (Role::Label.style(), "first"),
            ]
        );
        assert_eq!(one(&mut md, "  * 嵌套").plain(), "  • 嵌套");
        assert_eq!(one(&mut md, "- [x] done").plain(), "☑ done");
        assert_eq!(one(&mut md, "snake_case_name").plain(), "snake_case_name");
        assert_eq!(one(&mut md, "2 * 3 * 4").plain(), "2 * 3 * 4");
        assert_eq!(one(&mut md, "> quoted").plain(), "│ quoted");
        assert_eq!(one(&mut md, "---").plain(), "────────");
    }

    #[test]
    fn fenced_code_is_kept_verbatim_until_it_closes() {
        let mut md = Markdown::new();
        assert_eq!(one(&mut md, "```rust").plain(), "  ┌─ rust");
        assert!(md.in_code());
        let code = one(&mut md, "# not a heading **x**");
        assert_eq!(
            roles(&code),
            [
                (Role::Dim.style(), "  │ "),
                (Role::Code.style(), "# not a heading **x**")
            ]
        );
        // A partial line inside the block is code too, and peeking does
        // not close it.
        assert_eq!(md.peek("``").plain(), "  │ ``");
        assert_eq!(one(&mut md, "```").plain(), "  └─");
        assert!(!md.in_code());
        assert_eq!(one(&mut md, "# Heading").plain(), "Heading");
    }

    #[test]
    fn code_spans_links_escapes_and_numbered_lists_read_as_markdown() {
        let mut md = Markdown::new();
        assert_eq!(
            roles(&one(
                &mut md,
                "use ``a `tick` inside`` and \\*not emphasis\\*"
            )),
            [
                (Role::Text.style(), "use "),
                (Role::Code.style(), "a `tick` inside"),
                (Role::Text.style(), " and *not emphasis*"),
            ]
        );
        assert_eq!(
            roles(&one(
                &mut md,
                "see [the docs](https://docs.rs/x) or ~~old~~"
            )),
            [
                (Role::Text.style(), "see the docs"),
                (Role::Dim.style(), " (https://docs.rs/x)"),
                (Role::Text.style(), " or "),
                (Role::Dim.style(), "old"),
            ]
        );
        assert_eq!(
            roles(&one(&mut md, "2. run **all** tests")),
            [
                (Role::Dim.style(), "2. "),
                (Role::Text.style(), "run "),
                (Role::Label.style(), "all"),
                (Role::Text.style(), " tests"),
            ]
        );
        // A link definition reads as nothing: it stays as written.
        assert_eq!(
            one(&mut md, "[1]: https://x.example").plain(),
            "[1]: https://x.example"
        );
    }

    #[test]
    fn a_table_is_held_then_shown_in_columns() {
        let mut md = Markdown::new();
        assert!(md.line("| tool | 作用 | calls |").is_empty());
        assert!(md.line("|------|------|------:|").is_empty());
        assert!(md.line("| `read` | 读取文件 | 12 |").is_empty());
        // While it is held, the live area sees it in columns already.
        assert_eq!(md.pending().len(), 3);
        let lines = md.line("| grep | search | 3 |");
        assert!(lines.is_empty());
        let shown: Vec<String> = md
            .line("After the table.")
            .iter()
            .map(Line::plain)
            .collect();
        assert_eq!(
            shown,
            [
                "tool  作用      calls",
                "─────────────────────",
                "read  读取文件     12",
                "grep  search        3",
                "After the table.",
            ]
        );
        // A `|` line that no delimiter follows is text after all.
        let mut md = Markdown::new();
        assert!(md.line("| not a table").is_empty());
        let shown: Vec<String> = md.line("next").iter().map(Line::plain).collect();
        assert_eq!(shown, ["| not a table", "next"]);
        // A table at the very end comes out with finish().
        let mut md = Markdown::new();
        md.line("| a | b |");
        md.line("|---|---|");
        assert_eq!(md.finish().len(), 2);
    }
}
