//! `cargo bench --bench ui`: the interactive UI's own cost per event, from
//! the core's event to the bytes written to the terminal (targets: a
//! keystroke on screen under 16 ms; a 1000 tokens/s stream drawn with
//! under one core, here even when every token gets its own frame; an
//! approval prompt on screen under 150 ms after its event). The terminal
//! emulator's own drawing is not counted.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::cast_precision_loss,
    reason = "a benchmark reports on stdout"
)]

#[path = "support.rs"]
mod bench_support;

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use offcode::protocol::{ApprovalRequestEvent, EventMsg, FileDiff, ToolDisplay, TurnState};
use offcode::ui::live_turn::{Edit, live_rows};
use offcode::ui::paint::{Frame, Live};
use offcode::ui::render::{Line, Lines, Palette, Role};
use offcode::ui::view::{Status, View};

fn view() -> View {
    View::new(
        Status {
            agent: "build".into(),
            model: "qwen3-coder-30b".into(),
            state: TurnState::ModelGenerating,
            used: Some(12_345),
            limit: Some(32_768),
            session: "20261123-120000-abcd".into(),
            retry: None,
            held: None,
            mcp_down: Vec::new(),
        },
        80,
    )
}

/// One frame as the live loop draws it, into `sink`.
fn frame(view: &mut View, live: &mut Live, edit: &Edit, asking: Option<Line>, sink: &mut Vec<u8>) {
    let committed = view.take_committed();
    let (rows, cursor) = live_rows(view, edit, &VecDeque::new(), asking, None, 3, 24);
    live.draw(
        sink,
        Palette::new(true),
        &Frame {
            committed: &committed,
            live: &rows,
            cursor,
            width: 80,
        },
    );
}

use bench_support::median;

fn main() {
    // A long markdown answer, as word-sized deltas (about a token each).
    let mut text = String::new();
    for n in 0..400 {
        let _ = write!(
            text,
            "## Part {n}\n- item with `code` and **bold** 中文字符也在这里\n```rust\nlet x = {n};\n```\nPlain words that keep coming in a long answer line number {n}.\n"
        );
    }
    let deltas: Vec<String> = text
        .split_inclusive([' ', '\n'])
        .map(str::to_owned)
        .collect();
    let mut view = view();
    let mut live = Live::new();
    let edit = Edit::default();
    let mut sink = Vec::with_capacity(1 << 20);
    let start = Instant::now();
    for delta in &deltas {
        view.event(&EventMsg::AssistantDelta {
            delta: delta.clone(),
        });
        frame(&mut view, &mut live, &edit, None, &mut sink);
        sink.clear();
    }
    let took = start.elapsed();
    let per_token = took / u32::try_from(deltas.len()).unwrap();
    println!(
        "stream: {} deltas, a frame each: {per_token:?} per token; at 1000 tokens/s that is {:.1}% of one core",
        deltas.len(),
        per_token.as_secs_f64() * 1000.0 * 100.0
    );

    // A keystroke: edit, lay out, draw, with text arriving above.
    let mut edit = Edit::default();
    let mut samples = Vec::new();
    for n in 0..2_000 {
        let key = if n % 10 == 9 {
            KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
        } else {
            KeyEvent::new(KeyCode::Char('字'), KeyModifiers::NONE)
        };
        let start = Instant::now();
        edit.key(&key);
        frame(&mut view, &mut live, &edit, None, &mut sink);
        samples.push(start.elapsed());
        sink.clear();
    }
    println!(
        "keystroke to bytes on the terminal: median {:?}, max {:?}",
        median(samples.clone()),
        samples.iter().max().unwrap()
    );

    // An approval prompt with a diff preview.
    let mut diff = String::new();
    for n in 0..200 {
        let _ = writeln!(diff, "+line {n}");
    }
    let request = ApprovalRequestEvent {
        call_id: "c1".into(),
        tool: "write".into(),
        arguments: serde_json::json!({"path": "src/lib.rs", "content": "..."}),
        reason: None,
        rule: "built-in policy/default.jsonc permission.edit".into(),
        session_allowed: true,
        session_rules: Vec::new(),
        dangerous: false,
        dangers: Vec::new(),
        notes: Vec::new(),
        mandate: None,
        confinement: None,
        unconfined: false,
        runs_unconfined: false,
        preview: Some(ToolDisplay::Diff {
            files: vec![FileDiff {
                path: "src/lib.rs".into(),
                operation: "created".into(),
                additions: 200,
                deletions: 0,
                diff: format!("--- /dev/null\n+++ b/src/lib.rs\n@@ -0,0 +1,200 @@\n{diff}"),
            }],
        }),
        agent: None,
    };
    let mut samples = Vec::new();
    for _ in 0..500 {
        let start = Instant::now();
        view.event(&EventMsg::ApprovalRequest(request.clone()));
        frame(
            &mut view,
            &mut live,
            &edit,
            Some(Line::new().with(Role::Key, " y ")),
            &mut sink,
        );
        samples.push(start.elapsed());
        sink.clear();
    }
    println!(
        "approval event to prompt bytes: median {:?}, max {:?}",
        median(samples.clone()),
        samples.iter().max().unwrap()
    );
}
