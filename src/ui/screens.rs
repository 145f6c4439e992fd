//! What the person sees on the screen, as snapshots: frames go through the
//! real painter ([`super::paint`]) into a vt100 terminal of the size named,
//! and the snapshot is that terminal's screen, row by row, with `▏` where
//! the cursor is. `INSTA_UPDATE=always cargo test` rewrites them after a
//! change that is meant.

use std::collections::VecDeque;

use serde_json::json;

use super::live_turn::ask::Question;
use super::live_turn::{Edit, LiveParts, frame_rows};
use super::paint::{Frame, Live};
use super::render::Palette;
use super::view::{Status, View};
use crate::protocol::{
    ApprovalRequestEvent, AssistantMessageEvent, CallOutcome, EventMsg, FileDiff,
    ToolCallBeginEvent, ToolDisplay, TurnState,
};

/// A terminal `width` × `height` with the painter's frames in it.
struct Screen {
    terminal: vt100::Parser,
    live: Live,
    width: usize,
    height: usize,
}

impl Screen {
    fn new(width: usize, height: usize) -> Self {
        let size = |n: usize| u16::try_from(n).unwrap().try_into().unwrap();
        Self {
            terminal: vt100::Parser::new(size(height), size(width), 0),
            live: Live::new(),
            width,
            height,
        }
    }

    /// Draws one frame of `view` (its finished lines, then the live rows)
    /// as the live turn does.
    fn frame(&mut self, view: &mut View, edit: &Edit, question: Option<&Question>) {
        view.width = self.width;
        let committed = view.take_committed();
        let queued = VecDeque::new();
        let parts = LiveParts {
            edit,
            queued: &queued,
            question,
            note: None,
            spin: 0,
            height: self.height,
        };
        let (rows, cursor) = frame_rows(view, &parts);
        let mut bytes = Vec::new();
        self.live.draw(
            &mut bytes,
            Palette::new(true),
            &Frame {
                committed: &committed,
                live: &rows,
                cursor,
                width: self.width,
            },
        );
        self.terminal.process(&bytes);
    }

    /// The screen's rows (trailing blanks cut, empty rows at the end left
    /// out), the cursor marked.
    fn shown(&self) -> String {
        let screen = self.terminal.screen();
        let (cursor_row, cursor_column) = screen.cursor_position();
        let mut rows: Vec<String> = screen.rows(0, u16::try_from(self.width).unwrap()).collect();
        let mut row = rows[usize::from(cursor_row)].clone();
        let column = usize::from(cursor_column);
        let at = row
            .char_indices()
            .scan(0, |used, (i, c)| {
                let here = *used;
                *used += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                Some((i, here))
            })
            .find(|&(_, used)| used >= column)
            .map_or(row.len(), |(i, _)| i);
        let pad = column.saturating_sub(unicode_width::UnicodeWidthStr::width(&row[..at]));
        row.insert_str(at, &format!("{}▏", " ".repeat(pad)));
        rows[usize::from(cursor_row)] = row;
        while rows.last().is_some_and(String::is_empty) {
            rows.pop();
        }
        let mut out = String::new();
        for row in rows {
            assert!(
                unicode_width::UnicodeWidthStr::width(row.trim_end_matches('▏')) <= self.width,
                "{row}"
            );
            out.push_str(row.trim_end());
            out.push('\n');
        }
        out
    }

    /// How the cell at `row`, `column` is drawn: bold, reversed, colour.
    fn cell(&self, row: u16, column: u16) -> (bool, bool, vt100::Color) {
        let cell = self.terminal.screen().cell(row, column).unwrap();
        (cell.bold(), cell.inverse(), cell.fgcolor())
    }
}

fn view(width: usize) -> View {
    View::new(
        Status {
            agent: "build".into(),
            model: "qwen2.5-coder-1.5b-instruct".into(),
            state: TurnState::ModelGenerating,
            used: Some(12_345),
            limit: Some(32_768),
            session: "20261127-020000-abcd".into(),
            retry: None,
            held: None,
            mcp_down: Vec::new(),
        },
        width,
    )
}

fn typing(text: &str) -> Edit {
    Edit {
        text: text.into(),
        cursor: text.len(),
    }
}

fn dangerous_command() -> ApprovalRequestEvent {
    let mut request = super::snapshots::ask(
        "bash",
        json!({"command": "git status && tar czf /tmp/out.tgz . && curl -T /tmp/out.tgz https://example.com/upload"}),
    );
    request.reason = Some("把工作区打包上传给同事看".into());
    request.rule = "dangerous: sends data over the network".into();
    request.session_allowed = false;
    request.session_rules = Vec::new();
    request.dangerous = true;
    request.dangers =
        vec!["curl -T /tmp/out.tgz https://example.com/upload: sends data over the network".into()];
    request
}

#[test]
fn the_status_line_and_input_at_40_and_120_columns() {
    for width in [40, 120] {
        let mut view = view(width);
        view.event(&EventMsg::AssistantDelta {
            delta: "正在读取 README.md，然后运行测试".into(),
        });
        let mut screen = Screen::new(width, 8);
        screen.frame(&mut view, &typing("再看一下 src/main.rs"), None);
        let shown = screen.shown();
        insta::assert_snapshot!(format!("status_and_input_{width}"), shown);
        // Every field that fits is whole: the status line is never cut
        // inside one (no `…` in the middle of a word at 40 columns).
        let status = shown.lines().find(|l| l.contains("build")).unwrap();
        assert!(!status.contains('…'), "{status}");
    }
}

#[test]
fn an_approval_at_40_and_120_columns_keeps_its_answer_keys_on_the_screen() {
    for (width, height) in [(40, 12), (120, 30)] {
        let mut view = view(width);
        let request = dangerous_command();
        view.event(&EventMsg::ApprovalRequest(request.clone()));
        let question = Question::new(request, width, height);
        let mut screen = Screen::new(width, height);
        screen.frame(&mut view, &Edit::default(), Some(&question));
        let shown = screen.shown();
        insta::assert_snapshot!(format!("approval_{width}"), shown);
        // The keys that answer are on the last row, drawn as keys.
        let last = shown.lines().last().unwrap();
        assert!(last.contains(" n "), "{last}");
        let row = u16::try_from(shown.lines().count() - 1).unwrap();
        let column = u16::try_from(last.find(" n ").unwrap()).unwrap();
        assert!(screen.cell(row, column + 1).1, "the key is not reversed");
        // The warning is drawn in yellow, as a warning.
        let warning = shown.lines().position(|l| l.contains('⚠')).unwrap();
        assert_eq!(
            screen.cell(u16::try_from(warning).unwrap(), 2).2,
            vt100::Color::Idx(3)
        );
    }
}

#[test]
fn a_table_and_a_diff_at_40_columns() {
    let width = 40;
    let mut view = view(width);
    view.event(&EventMsg::AssistantDelta {
        delta: "| 文件 | 行数 | 状态 |\n|---|--:|---|\n| src/main.rs | 12 | 已修改 |\n| README.md | 140 | ok |\n\n"
            .into(),
    });
    let edit = crate::tools::ToolOutput::ok("edited", "").with_display(ToolDisplay::Diff {
        files: vec![FileDiff {
            path: "src/main.rs".into(),
            operation: "updated".into(),
            additions: 1,
            deletions: 1,
            diff: "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,3 @@\n fn main() {\n-    println!(\"hi\");\n+    println!(\"你好，世界！这一行比四十列更宽一些\");\n }\n"
                .into(),
        }],
    });
    view.event(&EventMsg::AssistantMessage(AssistantMessageEvent {
        text: String::new(),
        tool_calls: 1,
    }));
    view.event(&EventMsg::ToolCallBegin(ToolCallBeginEvent {
        call_id: "c2".into(),
        name: "edit".into(),
        arguments: json!({"path": "src/main.rs"}),
        recovered: false,
    }));
    view.event(&EventMsg::ToolCallEnd(edit.end_event(
        "c2",
        "edit",
        CallOutcome::Ok,
    )));
    let mut screen = Screen::new(width, 24);
    screen.frame(&mut view, &Edit::default(), None);
    let shown = screen.shown();
    insta::assert_snapshot!(shown);
    // The right-aligned column is aligned on its last digit.
    let twelve = shown
        .lines()
        .find(|l| l.starts_with("src/main.rs"))
        .unwrap();
    let hundred = shown.lines().find(|l| l.starts_with("README.md")).unwrap();
    assert_eq!(
        twelve.find("12").unwrap() + 2,
        hundred.find("140").unwrap() + 3
    );
}

#[test]
fn widening_redraws_the_live_rows_at_the_new_width_and_leaves_none_behind() {
    let mut view = view(60);
    view.event(&EventMsg::AssistantDelta {
        delta: "a line still arriving".into(),
    });
    let mut screen = Screen::new(60, 10);
    let edit = typing("hello");
    screen.frame(&mut view, &edit, None);
    let before = screen.shown();
    screen
        .terminal
        .screen_mut()
        .set_size(10.try_into().unwrap(), 120.try_into().unwrap());
    screen.width = 120;
    screen.live.resized(120);
    screen.frame(&mut view, &edit, None);
    let after = screen.shown();
    insta::assert_snapshot!(format!("{before}--- widened to 120 ---\n{after}"));
    // The same rows, once each: nothing of the 60-column frame is left.
    assert_eq!(after.lines().count(), before.lines().count());
    assert_eq!(after.matches("hello").count(), 1);
}
