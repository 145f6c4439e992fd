//! The editor's prompt: the status line above the prompt text, painted
//! for the terminal's width and painted again when it widens.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use reedline::{Prompt, PromptEditMode, PromptHistorySearch};

/// Paints the status line for a terminal width; empty for none.
pub type StatusLine = Box<dyn Fn(usize) -> String + Send>;

/// The status line the editor shows: how to paint it, and as painted for
/// the widest terminal it was shown at.
#[derive(Default)]
pub struct Shown {
    line: Option<StatusLine>,
    width: usize,
    painted: String,
}

impl Shown {
    /// Shows `line`, painted for `width` columns.
    pub(super) fn show(&mut self, line: StatusLine, width: usize) {
        self.painted = line(width);
        self.width = width;
        self.line = Some(line);
    }

    /// Paints it again for a terminal widened to `width` columns (after a
    /// widening the status line was left as narrow as it was drawn).
    /// Never for a narrower one: a reflowing terminal rewraps the line,
    /// and the editor, which measures the prompt it drew, then finds it
    /// where it is.
    fn widen(&mut self, width: usize) {
        if width > self.width
            && let Some(line) = &self.line
        {
            self.painted = line(width);
            self.width = width;
        }
    }
}

/// The terminal's width, or 80 when it cannot be told.
pub(super) fn terminal_width() -> usize {
    crossterm::terminal::size().map_or(80, |(columns, _)| usize::from(columns))
}

/// The status line (if any) above the prompt text.
pub(super) struct Dynamic {
    /// Shared with `Input::set_status`.
    pub(super) status: Arc<Mutex<Shown>>,
    pub(super) prompt: &'static str,
}

impl Dynamic {
    pub(super) fn new(status: StatusLine, prompt: &'static str, shared: Arc<Mutex<Shown>>) -> Self {
        shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .show(status, terminal_width());
        Self {
            status: shared,
            prompt,
        }
    }
}

impl Prompt for Dynamic {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        let mut shown = self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shown.widen(terminal_width());
        if shown.painted.is_empty() {
            Cow::Borrowed(self.prompt)
        } else {
            Cow::Owned(format!("{}\n{}", shown.painted, self.prompt))
        }
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", search.term))
    }

    fn get_prompt_color(&self) -> reedline::Color {
        reedline::Color::Default
    }

    fn get_indicator_color(&self) -> reedline::Color {
        reedline::Color::Default
    }
}
