//! The bottom of the terminal while the agent works: finished lines are
//! written above it into the normal scrollback, and the live rows (text
//! still arriving, queued input, the input line and the status line) are
//! redrawn in place below them, in one write per frame.
//!
//! Live rows are cut to the terminal width, so the renderer always knows
//! how many rows it drew. After a resize, a terminal that reflows (tmux,
//! VTE, kitty, iTerm2...) may have wrapped them; the renderer counts the
//! rows as rewrapped at the new width before it clears them.

use std::fmt::Write as _;
use std::io::Write;

use super::render::{Line, Palette};

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
        buffer.push_str("\x1b[?2026h\x1b[?25l");
        self.clear_into(&mut buffer);
        for line in frame.committed {
            buffer.push_str(&palette.paint(line));
            buffer.push_str("\r\n");
        }
        self.rows.clear();
        for (index, line) in frame.live.iter().enumerate() {
            if index > 0 {
                buffer.push_str("\r\n");
            }
            buffer.push_str(&palette.paint(line));
            self.rows.push(line.width());
        }
        let last = self.rows.len().saturating_sub(1);
        let (row, column) = frame.cursor;
        let row = row.min(last);
        if last > row {
            let _ = write!(buffer, "\x1b[{}A", last - row);
        }
        buffer.push('\r');
        if column > 0 {
            let _ = write!(buffer, "\x1b[{column}C");
        }
        self.cursor = (row, column);
        buffer.push_str("\x1b[?25h\x1b[?2026l");
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
        buffer.push('\r');
        if row > 0 {
            let _ = write!(buffer, "\x1b[{row}A");
        }
        buffer.push_str("\x1b[J");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::render::Role;

    fn text(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    #[test]
    fn a_frame_writes_finished_lines_once_and_redraws_the_live_rows() {
        let mut live = Live::new();
        let mut out = Vec::new();
        let status = Line::new().with(Role::Dim, "status");
        let input = Line::new().with(Role::Text, "> 你好");
        let committed = [Line::new().with(Role::Text, "TOOL read")];
        live.draw(
            &mut out,
            Palette::new(false),
            &Frame {
                committed: &committed,
                live: &[status.clone(), input.clone()],
                cursor: (1, 6),
            },
        );
        let first = text(&out);
        assert!(
            first.contains("\r\x1b[JTOOL read\r\nstatus\r\n> 你好\r\x1b[6C"),
            "{first:?}"
        );
        out.clear();
        live.draw(
            &mut out,
            Palette::new(false),
            &Frame {
                committed: &[],
                live: &[status, input],
                cursor: (1, 2),
            },
        );
        // Back up one row (to the status line), clear, redraw.
        let second = text(&out);
        assert!(
            second.contains("\r\x1b[1A\x1b[Jstatus\r\n> 你好\r\x1b[2C"),
            "{second:?}"
        );
        assert!(!second.contains("TOOL"));
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
            },
        );
        live.resized(60);
        out.clear();
        live.clear(&mut out);
        // Two 90-column rows became four 60-column ones above the cursor.
        assert_eq!(text(&out), "\r\x1b[4A\x1b[J");
    }
}
