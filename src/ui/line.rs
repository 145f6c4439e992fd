//! Styled screen lines: text with a meaning per span, one palette that
//! turns meanings into colours (or none, for `NO_COLOR`), and width-aware
//! cutting, wrapping and cleaning that counts wide characters as two
//! columns.

use ratatui_core::style::{Color, Modifier, Style};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// What a piece of text means; [`Role::style`] is the one palette that
/// turns a meaning into how it looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Ordinary text.
    Text,
    /// Secondary text: hints, counts, rules.
    Dim,
    /// A block label (`TOOL`, `PLAN`, `ANSWER`) and titles.
    Label,
    /// A tool's name.
    Tool,
    /// A command or path the user should read exactly.
    Code,
    /// Success.
    Ok,
    /// Failure or refusal.
    Error,
    /// Something to think about before answering.
    Warning,
    /// A diff's added line.
    Added,
    /// A diff's removed line.
    Removed,
    /// A diff's hunk header.
    Hunk,
    /// A key the user can press.
    Key,
}

impl Role {
    /// How text with this meaning is drawn (when colour is on).
    pub const fn style(self) -> Style {
        let plain = Style::new();
        match self {
            Role::Text => plain,
            Role::Dim => plain.add_modifier(Modifier::DIM),
            Role::Label | Role::Code => plain.add_modifier(Modifier::BOLD),
            Role::Tool => plain.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            Role::Ok | Role::Added => plain.fg(Color::Green),
            Role::Error => plain.fg(Color::Red).add_modifier(Modifier::BOLD),
            Role::Warning => plain.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Role::Removed => plain.fg(Color::Red),
            Role::Hunk => plain.fg(Color::Cyan),
            Role::Key => plain.add_modifier(Modifier::BOLD.union(Modifier::REVERSED)),
        }
    }
}

/// One screen line: ratatui's, with spans of owned text.
pub type Line = ratatui_core::text::Line<'static>;

/// A run of text with one style.
pub type Span = ratatui_core::text::Span<'static>;

/// How the UI builds and reads its lines: text added by meaning, and the
/// text without styles.
pub trait Lines {
    /// An empty line.
    fn new() -> Self;
    /// The line with `text` in `role` added at the end (nothing for empty
    /// text).
    #[must_use]
    fn with(self, role: Role, text: impl Into<String>) -> Self;
    /// The line's text without styles.
    fn plain(&self) -> String;
}

impl Lines for Line {
    fn new() -> Self {
        Line::default()
    }

    fn with(mut self, role: Role, text: impl Into<String>) -> Self {
        let text: String = text.into();
        if !text.is_empty() {
            self.spans.push(Span::styled(text, role.style()));
        }
        self
    }

    fn plain(&self) -> String {
        self.spans.iter().map(|s| s.content.as_ref()).collect()
    }
}

/// Whether lines are drawn in colour; off for `NO_COLOR`, when every span
/// is drawn as plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Palette {
    colour: bool,
}

impl Palette {
    /// Colour on or off.
    pub fn new(colour: bool) -> Self {
        Self { colour }
    }

    /// `style` as this palette draws it.
    pub fn style(self, style: Style) -> Style {
        if self.colour { style } else { Style::new() }
    }
}

/// Text and how it looks, `{bold cyan}text`, one span after another: what
/// the tests and snapshots compare, so a colour change shows as much as a
/// text change.
#[cfg(test)]
pub fn styled(line: &Line) -> String {
    let mut out = String::new();
    for span in &line.spans {
        let style = span.style;
        let mut words: Vec<String> = Vec::new();
        for (modifier, word) in [
            (Modifier::BOLD, "bold"),
            (Modifier::DIM, "dim"),
            (Modifier::REVERSED, "reverse"),
        ] {
            if style.add_modifier.contains(modifier) {
                words.push(word.to_owned());
            }
        }
        if let Some(colour) = style.fg {
            words.push(colour.to_string().to_lowercase());
        }
        out.push('{');
        out.push_str(&words.join(" "));
        out.push('}');
        out.push_str(&span.content);
    }
    out
}

/// Cuts `text` to at most `width` columns, marking a cut with `…`.
pub fn truncate(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// The last columns of `text` that fit in `width`, marking a cut with `…`
/// at the start: a line still arriving shows its newest part.
pub fn tail(line: &Line, width: usize) -> Line {
    if line.width() <= width || width == 0 {
        return line.clone();
    }
    let mut spans: Vec<Span> = Vec::new();
    let mut room = width - 1;
    for span in line.spans.iter().rev() {
        if room == 0 {
            break;
        }
        let mut kept: Vec<char> = Vec::new();
        for c in span.content.chars().rev() {
            let w = c.width().unwrap_or(0);
            if w > room {
                room = 0;
                break;
            }
            room -= w;
            kept.push(c);
        }
        kept.reverse();
        spans.push(Span::styled(
            kept.into_iter().collect::<String>(),
            span.style,
        ));
    }
    spans.push(Span::styled("…", Role::Dim.style()));
    spans.reverse();
    Line::from(
        spans
            .into_iter()
            .filter(|s| !s.content.is_empty())
            .collect::<Vec<_>>(),
    )
}

/// Adds `text` in `style` to `line` (nothing for empty text).
fn push(line: &mut Line, style: Style, text: String) {
    if !text.is_empty() {
        line.spans.push(Span::styled(text, style));
    }
}

/// `line` cut to its first `width` columns.
pub fn fit(line: &Line, width: usize) -> Line {
    wrap(line, width).into_iter().next().unwrap_or_default()
}

/// `line` cut into screen rows of at most `width` columns; a wide
/// character never straddles two rows.
pub fn wrap(line: &Line, width: usize) -> Vec<Line> {
    let width = width.max(2);
    let mut rows = Vec::new();
    let mut row = Line::new();
    let mut used = 0;
    for span in &line.spans {
        let mut piece = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                push(&mut row, span.style, std::mem::take(&mut piece));
                rows.push(std::mem::take(&mut row));
                used = 0;
            }
            used += w;
            piece.push(c);
        }
        push(&mut row, span.style, piece);
    }
    rows.push(row);
    rows
}

/// `text` (one line) cut into rows of at most `width` columns, between
/// words where it can be; a word wider than a row is cut between
/// characters, and CJK text (which has no spaces) breaks between any two
/// of its characters.
pub fn word_wrap(text: &str, width: usize) -> Vec<String> {
    fit_words(&Line::new().with(Role::Text, text), width)
        .iter()
        .map(Line::plain)
        .collect()
}

/// A piece of a line between two places it may break: its text by role,
/// and the spaces after it (dropped where the line breaks).
#[derive(Debug, Default)]
struct Piece {
    spans: Vec<Span>,
    width: usize,
    spaces: usize,
}

impl textwrap::core::Fragment for Piece {
    #[expect(clippy::cast_precision_loss, reason = "widths are small")]
    fn width(&self) -> f64 {
        self.width as f64
    }

    #[expect(clippy::cast_precision_loss, reason = "widths are small")]
    fn whitespace_width(&self) -> f64 {
        self.spaces as f64
    }

    fn penalty_width(&self) -> f64 {
        0.0
    }
}

/// `line` in rows of at most `width` columns, broken between words (and
/// between CJK characters) by textwrap, styles kept; rows after the first
/// are indented as the line is. A line that fits is returned as it is.
pub fn fit_words(line: &Line, width: usize) -> Vec<Line> {
    let width = width.max(2);
    if line.width() <= width {
        return vec![line.clone()];
    }
    let plain = line.plain();
    let indent = plain.len() - plain.trim_start_matches(' ').len();
    let indent = if indent * 2 < width { indent } else { 0 };
    let pieces = pieces(line, width - indent);
    #[expect(clippy::cast_precision_loss, reason = "widths are small")]
    let widths = [width as f64, (width - indent) as f64];
    let rows = textwrap::wrap_algorithms::wrap_first_fit(&pieces, &widths);
    rows.iter()
        .enumerate()
        .map(|(index, row)| {
            let mut out = Line::new();
            if index > 0 && indent > 0 {
                out = out.with(Role::Text, " ".repeat(indent));
            }
            for (at, piece) in row.iter().enumerate() {
                for span in &piece.spans {
                    push(&mut out, span.style, span.content.to_string());
                }
                if at + 1 < row.len() && piece.spaces > 0 {
                    let style = piece.spans.last().map_or(Style::new(), |s| s.style);
                    push(&mut out, style, " ".repeat(piece.spaces));
                }
            }
            out
        })
        .collect()
}

/// `line` cut where it may break: after the spaces that end a word,
/// around each wide (CJK) character, and inside a word wider than `room`.
fn pieces(line: &Line, room: usize) -> Vec<Piece> {
    let mut done = Vec::new();
    let mut piece = Piece::default();
    // Whether the last character taken was wide: a line may break after it.
    let mut after_wide = false;
    for span in &line.spans {
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            // Spaces end a word, except those that start the line.
            if c == ' ' && (piece.width > 0 || !done.is_empty()) {
                piece.spaces += 1;
                continue;
            }
            let breaks = piece.spaces > 0
                || (piece.width > 0 && (w > 1 || after_wide || piece.width + w > room));
            if breaks {
                done.push(std::mem::take(&mut piece));
            }
            match piece.spans.last_mut() {
                Some(last) if last.style == span.style => last.content.to_mut().push(c),
                _ => piece.spans.push(Span::styled(c.to_string(), span.style)),
            }
            piece.width += w;
            after_wide = w > 1;
        }
    }
    done.push(piece);
    done.retain(|p| p.width > 0 || p.spaces > 0);
    done
}

/// `text` safe to write to a terminal, newlines kept: a tab becomes four
/// spaces, a carriage return goes, and any other control character (an
/// escape sequence's ESC included) shows as `·`. Text from the model, the
/// tools or a paste passes through this before it is measured or shown.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {}
            c if c.is_control() => out.push('·'),
            c => out.push(c),
        }
    }
    out
}

/// `text` with control characters made visible, on one line.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => '⏎',
            '\t' => ' ',
            c if c.is_control() => '·',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_wrap_breaks_between_words_and_inside_long_ones() {
        assert_eq!(
            word_wrap("start vLLM with `--enable-auto-tool-choice` now", 20),
            ["start vLLM with", "`--enable-auto-tool-", "choice` now"]
        );
        assert_eq!(
            word_wrap("服务器不能解析工具调用", 10),
            ["服务器不能", "解析工具调", "用"]
        );
        assert_eq!(word_wrap("short", 80), ["short"]);
    }

    #[test]
    fn fitting_keeps_styles_indents_and_breaks_cjk_between_characters() {
        let line = Line::new().with(Role::Code, "  /expand   ").with(
            Role::Text,
            "a tool call's whole output: /expand N (Ctrl+O: the last)",
        );
        let rows = fit_words(&line, 40);
        let text: Vec<String> = rows.iter().map(Line::plain).collect();
        assert_eq!(
            text,
            [
                "  /expand   a tool call's whole output:",
                "  /expand N (Ctrl+O: the last)",
            ]
        );
        assert_eq!(rows[0].spans[0].style, Role::Code.style());
        assert_eq!(rows[1].spans.last().unwrap().style, Role::Text.style());
        assert_eq!(
            word_wrap("请读取 README.md 并把第一行写入一个新的文件", 20),
            ["请读取 README.md 并", "把第一行写入一个新的", "文件"]
        );
        let fits = Line::new().with(Role::Dim, "short");
        assert_eq!(fit_words(&fits, 40), vec![fits]);
    }

    #[test]
    fn truncation_counts_wide_characters() {
        assert_eq!(truncate("你好世界", 5), "你好…");
        assert_eq!(truncate("你好", 4), "你好");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
