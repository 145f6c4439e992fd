use super::*;
use crate::protocol::{AssistantMessageEvent, TurnCompleteEvent};

fn view() -> View {
    View::new(
        Status {
            agent: "build".into(),
            model: "qwen3".into(),
            state: TurnState::Idle,
            used: None,
            limit: None,
            session: "s1".into(),
            retry: None,
            held: None,
            mcp_down: Vec::new(),
        },
        80,
    )
}

fn plain(lines: &[Line]) -> Vec<String> {
    lines.iter().map(Line::plain).collect()
}

fn delta(view: &mut View, text: &str) {
    view.event(&EventMsg::AssistantDelta { delta: text.into() });
}

fn message(view: &mut View, tool_calls: usize) {
    view.event(&EventMsg::AssistantMessage(AssistantMessageEvent {
        text: String::new(),
        tool_calls,
    }));
}

#[test]
fn text_before_tools_is_a_plan_and_the_last_text_the_answer() {
    let mut view = view();
    delta(&mut view, "I'll read ");
    assert!(!view.has_committed());
    assert_eq!(plain(&view.live()), ["I'll read "]);
    delta(&mut view, "the file.\nThen fix it.");
    assert_eq!(plain(&view.live()), ["I'll read the file.", "Then fix it."]);
    message(&mut view, 1);
    assert_eq!(
        plain(&view.take_committed()),
        ["PLAN I'll read the file.", "Then fix it."]
    );
    assert!(view.live().is_empty());
    delta(&mut view, "## Done\n\n- fixed `x`\n");
    message(&mut view, 0);
    assert_eq!(
        plain(&view.take_committed()),
        ["ANSWER Done", "", "• fixed x"]
    );
}

#[test]
fn a_long_block_is_let_go_as_an_answer_and_then_streams() {
    let mut view = view();
    for n in 0..=HOLD_LINES {
        delta(&mut view, &format!("line {n}\n"));
    }
    let committed = plain(&view.take_committed());
    assert_eq!(committed.len(), HOLD_LINES + 1);
    assert_eq!(committed[0], "ANSWER line 0");
    delta(&mut view, "more\n");
    assert_eq!(plain(&view.take_committed()), ["more"]);
    message(&mut view, 0);
    assert!(view.take_committed().is_empty());
}

#[test]
fn reasoning_streams_dimmed_then_folds_into_one_line() {
    let mut view = view();
    view.event(&EventMsg::ReasoningDelta {
        delta: "The user wants\na fix".into(),
    });
    assert_eq!(plain(&view.live()), ["thinking: a fix"]);
    delta(&mut view, "Fixed.");
    view.event(&EventMsg::TurnComplete(TurnCompleteEvent {
        status: TurnStatus::Done,
        last_message: None,
    }));
    assert_eq!(
        plain(&view.take_committed()),
        ["thought for 2 lines (/think shows it)", "ANSWER Fixed."]
    );
    assert_eq!(view.last_reasoning, "The user wants\na fix");
}

#[test]
fn a_compaction_is_one_quiet_line_and_updates_the_context_use() {
    let mut view = view();
    view.event(&EventMsg::Compacted(crate::protocol::CompactedEvent {
        what: "12 earlier messages summarised".into(),
        before: 30_500,
        after: 6_200,
        limit: 32_768,
    }));
    assert_eq!(
        plain(&view.take_committed()),
        ["compacted: 12 earlier messages summarised; about 30.5k → 6.2k of 32.8k tokens"]
    );
    assert_eq!(view.status.used, Some(6_200));
    assert_eq!(view.status.limit, Some(32_768), "a limit learned from it");
}

#[test]
fn text_found_to_be_reasoning_folds_or_is_marked() {
    // Still held: it folds like reasoning and never shows as an answer.
    let mut view = view();
    delta(&mut view, "Hmm, the user\nwants a fix\n");
    view.event(&EventMsg::ReasoningRecovered {
        text: "Hmm, the user\nwants a fix\n".into(),
    });
    delta(&mut view, "Fixed.");
    message(&mut view, 0);
    assert_eq!(
        plain(&view.take_committed()),
        ["thought for 2 lines (/think shows it)", "ANSWER Fixed."]
    );
    // Already written out (more than the held lines): marked, and the
    // answer gets its own label.
    let mut view = self::tests::view();
    let long = "a step of reasoning\n".repeat(12);
    delta(&mut view, &long);
    view.event(&EventMsg::ReasoningRecovered { text: long.clone() });
    delta(&mut view, "Fixed.");
    message(&mut view, 0);
    let lines = plain(&view.take_committed());
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "(the text above was the model's reasoning)",
            "ANSWER Fixed."
        ]
    );
    assert_eq!(view.last_reasoning, long);
}

#[test]
fn a_warning_during_a_plan_follows_it_and_keeps_its_label() {
    let mut view = view();
    delta(&mut view, "Let me check.");
    view.event(&EventMsg::Warning {
        message: "The server sent text that is not valid UTF-8\nsecond line".into(),
    });
    assert!(!view.has_committed());
    message(&mut view, 1);
    assert_eq!(
        plain(&view.take_committed()),
        [
            "PLAN Let me check.",
            "warning: The server sent text that is not valid UTF-8",
            "second line"
        ]
    );
    // Control characters from the model never reach the terminal.
    delta(&mut view, "col\tumn \x1b[2Jx\r\n");
    message(&mut view, 0);
    assert_eq!(plain(&view.take_committed()), ["ANSWER col    umn ·[2Jx"]);
}

#[test]
fn a_failing_bang_command_shows_its_output() {
    let mut view = view();
    view.event(&EventMsg::TurnStarted {
        text: "!make".into(),
    });
    let output = (1..=25).fold(String::new(), |mut out, n| {
        out.push_str("error ");
        out.push_str(&n.to_string());
        out.push('\n');
        out
    });
    view.event(&EventMsg::ToolCallEnd(command_end("shell_0", &output, 2)));
    let lines = plain(&view.take_committed());
    assert_eq!(lines[0], "  ✗ exit code: 2, 25 lines of output");
    assert_eq!(lines[1], "    error 1");
    assert_eq!(lines[20], "    error 20");
    assert_eq!(lines[21], "    … 5 more lines");
}

#[test]
fn an_abort_keeps_the_partial_text_and_says_so() {
    let mut view = view();
    delta(&mut view, "Half a sen");
    view.event(&EventMsg::TurnComplete(TurnCompleteEvent {
        status: TurnStatus::Aborted,
        last_message: None,
    }));
    assert_eq!(
        plain(&view.take_committed()),
        ["ANSWER Half a sen", "Aborted; what arrived so far is kept."]
    );
}

#[test]
fn a_retry_counts_down_in_the_status_line_until_output_comes() {
    let mut view = view();
    view.event(&EventMsg::Retry(crate::protocol::RetryEvent {
        attempt: 1,
        max_retries: 3,
        delay_ms: 1_500,
        reason: "HTTP 503".into(),
    }));
    assert_eq!(
        view.status.line(80, "").plain(),
        "build · qwen3 · retry 1/3 in 2 s (Esc cancels) · s1"
    );
    assert_eq!(
        plain(&view.take_committed()),
        ["retry 1/3 in 1.5 s: HTTP 503"]
    );
    view.event(&EventMsg::StateChanged {
        state: TurnState::ModelGenerating,
    });
    assert_eq!(
        view.status.line(80, "").plain(),
        "build · qwen3 · generating · s1"
    );
}

#[test]
fn text_held_as_a_possible_call_shows_in_the_status_line_until_it_is_shown() {
    let mut view = view();
    view.event(&EventMsg::StateChanged {
        state: TurnState::ModelGenerating,
    });
    view.event(&EventMsg::HeldText {
        bytes: 2_300,
        secs: 12,
    });
    assert_eq!(
        view.status.line(80, "").plain(),
        "build · qwen3 · writing a call? 2.2 KB held · s1"
    );
    assert!(view.take_committed().is_empty(), "the status line only");
    delta(&mut view, "It was text after all.");
    assert_eq!(
        view.status.line(80, "").plain(),
        "build · qwen3 · generating · s1"
    );
}

#[test]
fn the_status_line_fits_and_drops_the_session_first() {
    let mut status = view().status;
    status.state = TurnState::ModelGenerating;
    status.used = Some(1_234);
    status.limit = Some(32_768);
    assert_eq!(
        status.line(80, "⠋").plain(),
        "⠋ build · qwen3 · generating · 1.2k/32.8k (3%) · s1"
    );
    status.session = "20261123-114611-abcdef".into();
    let narrow = status.line(50, "");
    assert_eq!(
        narrow.plain(),
        "build · qwen3 · generating · 1.2k/32.8k (3%)"
    );
    // Narrower, whole fields go: the context, then the model, then the
    // agent; never a field cut half-way.
    let line = |status: &Status, width| status.line(width, "").plain();
    assert_eq!(line(&status, 40), "build · qwen3 · generating");
    assert_eq!(line(&status, 24), "build · generating");
    assert_eq!(line(&status, 12), "generating");
    status.model = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf".into();
    status.mcp_down = vec!["git".into()];
    assert_eq!(line(&status, 40), "build · generating · MCP down: git");
    assert_eq!(tokens(128_000), "128k");
    assert_eq!(tokens(999), "999");
}

#[test]
fn expand_shows_a_calls_whole_output_by_its_number() {
    let mut view = view();
    assert!(view.expand(None).unwrap_err().contains("No tool has run"));
    for (n, output) in ["first output", "a\nb\nc\nd\ne\nf\ng\nh\n"]
        .iter()
        .enumerate()
    {
        view.event(&EventMsg::ToolCallEnd(command_end(
            &format!("c{n}"),
            output,
            0,
        )));
    }
    let shown = plain(&view.take_committed());
    assert!(
        shown.contains(&"    … 2 more lines · /expand 2".to_owned()),
        "{shown:?}"
    );
    view.expand(None).unwrap();
    let whole = plain(&view.take_committed());
    assert_eq!(whole[0], "OUTPUT 2 bash");
    assert_eq!(
        whole[1..9],
        [
            "    a", "    b", "    c", "    d", "    e", "    f", "    g", "    h"
        ]
    );
    view.expand(Some(1)).unwrap();
    assert_eq!(
        plain(&view.take_committed()),
        ["OUTPUT 1 bash", "    first output", "    [exit code: 0]"]
    );
    assert!(view.expand(Some(3)).unwrap_err().contains("calls 1 to 2"));
}

#[test]
fn a_notice_after_ctrl_c_joins_the_status_line_instead_of_replacing_it() {
    let mut status = view().status;
    status.used = Some(1_234);
    status.limit = Some(32_768);
    let notice = "Ctrl+C again leaves";
    assert_eq!(
        status.line_with_notice(100, notice).plain(),
        "build · qwen3 · ready · 1.2k/32.8k (3%) · s1 · Ctrl+C again leaves"
    );
    // Narrow, the status gives up fields down to its state; the notice
    // stays whole (a 40-column terminal gives the line 39).
    assert_eq!(
        status.line_with_notice(39, notice).plain(),
        "build · ready · Ctrl+C again leaves"
    );
    assert_eq!(
        status.line_with_notice(24, notice).plain(),
        "Ctrl+C again leaves"
    );
}

#[test]
fn the_status_line_and_context_agree() {
    let mut view = view();
    view.status.limit = Some(32_768);
    view.event(&EventMsg::TokenUsage(crate::protocol::TokenUsage {
        prompt_tokens: 900,
        completion_tokens: 100,
        total_tokens: 1_000,
    }));
    view.event(&EventMsg::ContextReport(crate::protocol::ContextReport {
        parts: Vec::new(),
        total: 1_234,
        limit: Some(32_768),
        last_prompt: Some(900),
    }));
    let report = plain(&view.take_committed());
    assert!(
        report[0].starts_with("CONTEXT 1.2k of 32.8k tokens"),
        "{report:?}"
    );
    assert!(view.status.line(80, "").plain().contains("1.2k/32.8k"));
}

fn child(view: &mut View, id: &str, event: EventMsg) {
    view.event(&EventMsg::Subagent(crate::protocol::SubagentEvent {
        call_id: format!("task_{id}"),
        child_session_id: id.into(),
        agent: "explore".into(),
        event: Box::new(event),
    }));
}

fn child_call(view: &mut View, id: &str, n: usize, ok: bool) {
    child(
        view,
        id,
        EventMsg::ToolCallBegin(crate::protocol::ToolCallBeginEvent {
            call_id: format!("c{n}"),
            name: "read".into(),
            arguments: serde_json::json!({"path": format!("f{n}.rs")}),
            recovered: false,
        }),
    );
    child(
        view,
        id,
        EventMsg::ToolCallEnd(crate::protocol::ToolCallEndEvent {
            call_id: format!("c{n}"),
            name: "read".into(),
            outcome: if ok {
                crate::protocol::CallOutcome::Ok
            } else {
                crate::protocol::CallOutcome::Failed
            },
            summary: if ok {
                format!("f{n}.rs: lines 1-3 of 3")
            } else {
                format!("no such file: f{n}.rs")
            },
            output: String::new(),
            display: None,
            reason: None,
        }),
    );
}

#[test]
fn a_subagent_works_live_under_its_task_and_folds_to_one_line_when_done() {
    let mut view = view();
    for n in 1..=3 {
        child_call(&mut view, "child-1", n, n != 2);
    }
    // Nothing of the child is in the scrollback while it works; its
    // latest lines are live.
    assert!(!view.has_committed());
    assert_eq!(
        plain(&view.live()),
        [
            "  │ explore read  f2.rs",
            "  │   ✗ no such file: f2.rs",
            "  │ explore read  f3.rs",
            "  │   ✓ f3.rs: lines 1-3 of 3",
        ]
    );
    child(
        &mut view,
        "child-1",
        EventMsg::TurnComplete(TurnCompleteEvent {
            status: crate::protocol::TurnStatus::Done,
            last_message: Some("found it".into()),
        }),
    );
    assert!(view.live().is_empty(), "{:?}", plain(&view.live()));
    assert_eq!(
        plain(&view.take_committed()),
        ["  └ explore done · 0 steps · 3 calls, 1 failed · child-1"]
    );
    assert_eq!(view.subagents[0].state, "done");
    assert!(!view.subagent_running());
}

#[test]
fn a_subagent_that_fails_keeps_its_last_line_above_the_summary() {
    let mut view = view();
    child_call(&mut view, "child-2", 1, true);
    child(
        &mut view,
        "child-2",
        EventMsg::Error {
            message: "the server closed the stream".into(),
            kind: crate::protocol::ErrorKind::Stream,
        },
    );
    child(
        &mut view,
        "child-2",
        EventMsg::TurnComplete(TurnCompleteEvent {
            status: crate::protocol::TurnStatus::Failed,
            last_message: None,
        }),
    );
    assert_eq!(
        plain(&view.take_committed()),
        [
            "  │ the server closed the stream",
            "  └ explore failed · 0 steps · 1 call · child-2",
        ]
    );
}

/// The end of a `bash` call that printed `output` and exited with `code`,
/// as the core sends it.
fn command_end(id: &str, output: &str, code: i32) -> crate::protocol::ToolCallEndEvent {
    let result = crate::tools::ToolOutput::command(
        output.to_owned(),
        crate::protocol::CommandEnd::Exited { code },
    );
    result.end_event(id, "bash", result.ran())
}
