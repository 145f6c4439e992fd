//! The one place that owns the terminal: every byte the UI writes to it
//! is made here, from ratatui lines, with crossterm's commands.
//!
//! Finished lines are written into the normal scrollback, and the live
//! rows below them (text still arriving, queued input, the input line, a
//! question, the status line) are drawn by ratatui into a [`Buffer`] and
//! redrawn in place from it, in one synchronized write per frame. Writing
//! history as lines, not cells, is what lets the terminal reflow it when
//! it is resized, as codex-rs's inline UI does.
//!
//! Live rows are cut to the terminal width, so the painter always knows
//! how many rows it drew. After a resize, a terminal that reflows (tmux,
//! VTE, kitty, iTerm2...) may have wrapped them; the painter counts the
//! rows as rewrapped at the new width before it clears them.

use std::io::Write;

use crossterm::Command;
use crossterm::cursor::{Hide, MoveToColumn, MoveUp, Show};
use crossterm::style::{PrintStyledContent, ResetColor, SetStyle, StyledContent};
use crossterm::terminal::{BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate};
use ratatui_core::buffer::Buffer;
use ratatui_core::layout::Rect;
use ratatui_core::style::{Color, Modifier, Style};
use ratatui_crossterm::IntoCrossterm;
use unicode_width::UnicodeWidthStr;

use super::line::{Line, Palette, Role};

/// Appends `command`'s bytes to `buffer`.
fn queue(buffer: &mut String, command: impl Command) {
    let _ = command.write_ansi(buffer);
}

/// `line` as terminal text in `palette`: the form reedline's prompt and
/// printer take, and the one scrollback lines are written in.
pub fn line(palette: Palette, line: &Line) -> String {
    let mut out = String::new();
    for span in &line.spans {
        let style = palette.style(line.style.patch(span.style));
        if style == Style::new() {
            out.push_str(&span.content);
        } else {
            let styled = StyledContent::new(style.into_crossterm(), span.content.as_ref());
            queue(&mut out, PrintStyledContent(styled));
        }
    }
    out
}

/// What starts text drawn in `role` and what ends it, in `palette`: for
/// writers that stream text in one style (headless progress on stderr).
/// Both are empty when colour is off.
pub fn role_codes(palette: Palette, role: Role) -> (String, String) {
    let style = palette.style(role.style());
    if style == Style::new() {
        return (String::new(), String::new());
    }
    let (mut start, mut end) = (String::new(), String::new());
    queue(&mut start, SetStyle(style.into_crossterm()));
    queue(&mut end, ResetColor);
    (start, end)
}

/// The live rows drawn by ratatui: one buffer row per line, cut to
/// `width` columns (a wide character that would straddle the edge is left
/// out). This buffer is the screen the person sees below the scrollback;
/// the snapshot tests read it.
pub fn screen(rows: &[Line], width: usize) -> Buffer {
    let width = u16::try_from(width.max(1)).unwrap_or(u16::MAX);
    let height = u16::try_from(rows.len()).unwrap_or(u16::MAX);
    let mut buffer = Buffer::empty(Rect::new(0, 0, width, height));
    for (y, row) in (0..height).zip(rows) {
        buffer.set_line(0, y, row, width);
    }
    buffer
}

/// Row `y` of `buffer` as a line: its cells in runs of one style, the
/// blank cells at its end left out.
pub fn row(buffer: &Buffer, y: u16) -> Line {
    let mut spans: Vec<(Style, String)> = Vec::new();
    let mut x = 0;
    while x < buffer.area.width {
        let cell = &buffer[(x, y)];
        let symbol = cell.symbol();
        let style = drawn(cell.style());
        match spans.last_mut() {
            Some((last, text)) if *last == style => text.push_str(symbol),
            _ => spans.push((style, symbol.to_owned())),
        }
        x += u16::try_from(symbol.width().max(1)).unwrap_or(1);
    }
    // Blank cells at the end are not drawn (they would make a reflowing
    // terminal wrap the row when it narrows).
    while let Some((style, text)) = spans.last_mut() {
        if *style != Style::new() {
            break;
        }
        let kept = text.trim_end_matches(' ').len();
        text.truncate(kept);
        if !text.is_empty() {
            break;
        }
        spans.pop();
    }
    Line::from(
        spans
            .into_iter()
            .map(|(style, text)| ratatui_core::text::Span::styled(text, style))
            .collect::<Vec<_>>(),
    )
}

/// A cell's style as the lines it came from had it: a buffer's cells
/// start with the terminal's own colours (`Reset`), which is no style.
fn drawn(style: Style) -> Style {
    let own = |colour: Option<Color>| colour.filter(|c| *c != Color::Reset);
    Style {
        fg: own(style.fg),
        bg: own(style.bg),
        add_modifier: style.add_modifier,
        sub_modifier: Modifier::empty(),
    }
}

/// Clears the screen and its scrollback (`/new`, `/clear`).
pub fn clear_screen(out: &mut impl Write) {
    let mut buffer = String::new();
    queue(&mut buffer, crossterm::cursor::MoveTo(0, 0));
    queue(&mut buffer, Clear(ClearType::All));
    queue(&mut buffer, Clear(ClearType::Purge));
    let _ = out.write_all(buffer.as_bytes());
    let _ = out.flush();
}

/// What a crash leaves the terminal in: synchronized output ended,
/// bracketed paste off, the cursor shown, styles reset, a fresh line.
pub fn restore(out: &mut impl Write) {
    let mut buffer = String::new();
    queue(&mut buffer, EndSynchronizedUpdate);
    queue(&mut buffer, crossterm::event::DisableBracketedPaste);
    queue(&mut buffer, Show);
    queue(&mut buffer, ResetColor);
    buffer.push_str("\r\n");
    let _ = out.write_all(buffer.as_bytes());
}

/// Text for the editor's printer that writes `lines` over the row above
/// (the status line it drew, which it draws again below them).
pub fn over_the_row_above(palette: Palette, lines: &[Line]) -> String {
    let mut buffer = String::new();
    queue(&mut buffer, MoveUp(1));
    queue(&mut buffer, MoveToColumn(0));
    queue(&mut buffer, Clear(ClearType::CurrentLine));
    let painted: Vec<String> = lines.iter().map(|l| line(palette, l)).collect();
    buffer.push_str(&painted.join("\n"));
    buffer
}

/// The terminal's view of the live rows, kept between frames.
#[derive(Debug, Default)]
pub struct Live {
    /// Widths of the rows drawn by the last frame.
    rows: Vec<usize>,
    /// The row (index into `rows`) and column the cursor was left at.
    cursor: (usize, usize),
}

/// One frame: lines to add to the scrollback, then the live rows and
/// where the cursor goes among them.
pub struct Frame<'a> {
    /// Finished lines, written once.
    pub committed: &'a [Line],
    /// Rows redrawn every frame; each at most the terminal width.
    pub live: &'a [Line],
    /// Row and column of the cursor among the live rows.
    pub cursor: (usize, usize),
    /// The terminal's width in columns.
    pub width: usize,
}

impl Live {
    /// Nothing drawn yet; the cursor is at the start of an empty line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Draws `frame` over the last one.
    pub fn draw(&mut self, out: &mut impl Write, palette: Palette, frame: &Frame<'_>) {
        let mut buffer = String::with_capacity(1024);
        // Synchronized output: the terminal shows the frame whole.
        queue(&mut buffer, BeginSynchronizedUpdate);
        queue(&mut buffer, Hide);
        self.clear_into(&mut buffer);
        for committed in frame.committed {
            buffer.push_str(&line(palette, committed));
            buffer.push_str("\r\n");
        }
        self.rows.clear();
        let screen = screen(frame.live, frame.width);
        for y in 0..screen.area.height {
            if y > 0 {
                buffer.push_str("\r\n");
            }
            let drawn = row(&screen, y);
            buffer.push_str(&line(palette, &drawn));
            self.rows.push(drawn.width());
        }
        let last = self.rows.len().saturating_sub(1);
        let (row, column) = frame.cursor;
        let row = row.min(last);
        if last > row {
            queue(
                &mut buffer,
                MoveUp(u16::try_from(last - row).unwrap_or(u16::MAX)),
            );
        }
        queue(
            &mut buffer,
            MoveToColumn(u16::try_from(column).unwrap_or(u16::MAX)),
        );
        self.cursor = (row, column);
        queue(&mut buffer, Show);
        queue(&mut buffer, EndSynchronizedUpdate);
        let _ = out.write_all(buffer.as_bytes());
        let _ = out.flush();
    }

    /// Removes the live rows; the cursor ends where they began.
    pub fn clear(&mut self, out: &mut impl Write) {
        let mut buffer = String::new();
        self.clear_into(&mut buffer);
        self.rows.clear();
        self.cursor = (0, 0);
        let _ = out.write_all(buffer.as_bytes());
        let _ = out.flush();
    }

    /// The terminal is now `width` columns wide: rows wider than that were
    /// rewrapped by a reflowing terminal, and are counted so.
    pub fn resized(&mut self, width: usize) {
        let width = width.max(1);
        let (row, column) = self.cursor;
        let mut rows = Vec::new();
        let mut cursor_row = 0;
        for (index, &w) in self.rows.iter().enumerate() {
            let count = w.div_ceil(width).max(1);
            if index == row {
                cursor_row = rows.len() + (column / width).min(count - 1);
            }
            rows.extend(std::iter::repeat_n(width, count));
        }
        self.rows = rows;
        self.cursor = (cursor_row, column % width);
    }

    /// Moves to the first live row and clears from there down.
    fn clear_into(&self, buffer: &mut String) {
        let (row, _) = self.cursor;
        queue(buffer, MoveToColumn(0));
        if row > 0 {
            queue(buffer, MoveUp(u16::try_from(row).unwrap_or(u16::MAX)));
        }
        queue(buffer, Clear(ClearType::FromCursorDown));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::line::{Lines, Role};

    /// A 40×8 terminal that has read `bytes`.
    fn terminal(bytes: &[u8]) -> vt100::Parser {
        let mut parser = vt100::Parser::new(8.try_into().unwrap(), 40.try_into().unwrap(), 0);
        parser.process(bytes);
        parser
    }

    fn rows(parser: &vt100::Parser) -> Vec<String> {
        parser.screen().rows(0, 40).collect()
    }

    #[test]
    fn a_frame_writes_finished_lines_once_and_redraws_the_live_rows() {
        let mut live = Live::new();
        let mut out = Vec::new();
        let input = Line::new().with(Role::Text, "> 你好");
        let committed = [Line::new().with(Role::Text, "TOOL read")];
        let first = [Line::new().with(Role::Dim, "working"), input.clone()];
        live.draw(
            &mut out,
            Palette::new(false),
            &Frame {
                committed: &committed,
                live: &first,
                cursor: (1, 6),
                width: 40,
            },
        );
        let second = [Line::new().with(Role::Dim, "done"), input];
        live.draw(
            &mut out,
            Palette::new(false),
            &Frame {
                committed: &[],
                live: &second,
                cursor: (1, 2),
                width: 40,
            },
        );
        let screen = terminal(&out);
        assert_eq!(rows(&screen)[..4], ["TOOL read", "done", "> 你好", ""]);
        assert_eq!(screen.screen().cursor_position(), (2, 2));
        // Whole frames: each write is one synchronized update.
        let text = String::from_utf8_lossy(&out);
        assert_eq!(text.matches("\x1b[?2026h").count(), 2, "{text:?}");
        assert_eq!(text.matches("TOOL read").count(), 1);
    }

    #[test]
    fn live_rows_are_cut_at_the_width_and_a_wide_character_never_straddles_it() {
        let mut live = Live::new();
        let mut out = Vec::new();
        let long = Line::new().with(Role::Text, format!("{}你好", "x".repeat(39)));
        live.draw(
            &mut out,
            Palette::new(false),
            &Frame {
                committed: &[],
                live: &[long, Line::new().with(Role::Text, "> ")],
                cursor: (1, 2),
                width: 40,
            },
        );
        let screen = terminal(&out);
        assert_eq!(
            rows(&screen)[..2],
            ["x".repeat(39), "> ".trim_end().to_owned()]
        );
        assert_eq!(screen.screen().cursor_position(), (1, 2));
    }

    #[test]
    fn after_narrowing_wrapped_rows_are_counted() {
        let mut live = Live::new();
        let mut out = Vec::new();
        let wide = Line::new().with(Role::Text, "x".repeat(90));
        let input = Line::new().with(Role::Text, "> ");
        live.draw(
            &mut out,
            Palette::new(false),
            &Frame {
                committed: &[],
                live: &[wide.clone(), wide, input],
                cursor: (2, 2),
                width: 100,
            },
        );
        live.resized(60);
        out.clear();
        live.clear(&mut out);
        // Two 90-column rows became four 60-column ones above the cursor.
        assert_eq!(String::from_utf8_lossy(&out), "\x1b[1G\x1b[4A\x1b[J");
    }

    #[test]
    fn colour_follows_the_role_and_no_colour_is_plain() {
        let line = Line::new().with(Role::Error, "bad").with(Role::Text, " ok");
        let screen = terminal(super::line(Palette::new(true), &line).as_bytes());
        let bad = screen.screen().cell(0, 0).unwrap();
        assert!(bad.bold());
        assert_eq!(bad.fgcolor(), vt100::Color::Idx(1));
        let ok = screen.screen().cell(0, 4).unwrap();
        assert!(!ok.bold());
        assert_eq!(ok.fgcolor(), vt100::Color::Default);
        assert_eq!(super::line(Palette::new(false), &line), "bad ok");
    }
}
