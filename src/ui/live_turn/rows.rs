//! The live area's rows for one frame: text still arriving, queued
//! messages, the status line, and the input line or a question's answer
//! row, cut to the terminal.

use std::collections::VecDeque;

use super::ask::Question;
use super::{Edit, QUEUE_ROWS, SPINNER};
use crate::ui::render::{self, Line, Lines, Role};
use crate::ui::view::View;

/// What the live area shows besides the view: the typing, the queue, a
/// question, a note, the spinner's step and the terminal's height.
pub struct LiveParts<'a> {
    /// The input line.
    pub edit: &'a Edit,
    /// Messages typed during the turn, waiting for it to end.
    pub queued: &'a VecDeque<String>,
    /// An approval waiting for its answer.
    pub question: Option<&'a Question>,
    /// Said before the status line (aborting, leaving).
    pub note: Option<&'a str>,
    /// The spinner's step.
    pub spin: usize,
    /// The terminal's rows.
    pub height: usize,
}

/// The live rows of a frame and the cursor's row and column: a question's
/// page while it is paged, else [`live_rows`].
pub fn frame_rows(view: &View, live: &LiveParts<'_>) -> (Vec<Line>, (usize, usize)) {
    let width = view.width;
    if let Some(question) = live.question
        && let Some(mut rows) = question.page_rows(width, live.height)
    {
        rows.push(question.answer_row(width, live.height));
        let last = rows.len() - 1;
        let column = rows[last].width().min(width.saturating_sub(1));
        return (rows, (last, column));
    }
    let asking = live.question.map(|q| q.answer_row(width, live.height));
    live_rows(
        view,
        live.edit,
        live.queued,
        asking,
        live.note,
        live.spin,
        live.height,
    )
}

/// The live rows (text still arriving, queued input, the status line
/// after `note` if any, then the input line or, when `asking`, that
/// answer row) and the cursor's row and column.
///
/// They never take more than `height` rows less one: the oldest text
/// still arriving gives way first.
pub fn live_rows(
    view: &View,
    edit: &Edit,
    queued: &VecDeque<String>,
    asking: Option<Line>,
    note: Option<&str>,
    spin: usize,
    height: usize,
) -> (Vec<Line>, (usize, usize)) {
    let width = view.width;
    let shown_queue = queued.len().min(QUEUE_ROWS);
    let more = usize::from(queued.len() > QUEUE_ROWS);
    let room = height.saturating_sub(1 + 2 + shown_queue + more).max(1);
    let mut rows = view.live();
    if rows.len() > room {
        rows.drain(..rows.len() - room);
    }
    for text in queued.iter().take(shown_queue) {
        rows.push(Line::new().with(
            Role::Dim,
            render::truncate(&format!("queued: {}", text.replace('\n', "⏎")), width),
        ));
    }
    if more > 0 {
        rows.push(Line::new().with(
            Role::Dim,
            render::truncate(
                &format!("… {} more queued", queued.len() - shown_queue),
                width,
            ),
        ));
    }
    let spinner = SPINNER[spin % SPINNER.len()];
    // A note (aborting, leaving after the turn) first, then what of the
    // status line fits after it.
    let status = match note {
        Some(note) => {
            let note = Line::new().with(Role::Warning, format!("{note} · "));
            let rest = view
                .status
                .line(width.saturating_sub(note.width()), spinner);
            let mut line = note;
            line.spans.extend(rest.spans);
            render::fit(&line, width)
        }
        None => view.status.line(width, spinner),
    };
    rows.push(status);
    let (row, column) = if let Some(line) = asking {
        let column = line.width();
        (line, column)
    } else {
        edit.row(crate::ui::input::TASK, width)
    };
    rows.push(row);
    // A very short terminal: the newest rows win.
    let most = height.saturating_sub(1).max(2);
    if rows.len() > most {
        rows.drain(..rows.len() - most);
    }
    let last = rows.len() - 1;
    (rows, (last, column.min(width.saturating_sub(1))))
}
