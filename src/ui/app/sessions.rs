//! Earlier sessions in the UI: `/sessions`, the `/resume` picker, and the
//! conversation so far shown when a session is resumed.

use super::App;
use crate::session::{Message, Summary};
use crate::ui::render::{self, Line, Lines, Role};

/// Sessions listed by `/sessions` and `/resume`.
const LISTED: usize = 20;
/// Messages of a resumed conversation shown; older ones are counted.
const TRANSCRIPT_MESSAGES: usize = 40;

impl App<'_> {
    /// The sessions saved for this directory, newest first.
    fn here(&mut self) -> Option<Vec<Summary>> {
        let cwd = self.environment.cwd.display().to_string();
        let listed = crate::startup::session_store(self.environment)
            .ok()
            .and_then(|store| store.list().ok());
        let Some(summaries) = listed else {
            self.error("Could not read the session store");
            return None;
        };
        Some(
            summaries
                .into_iter()
                // Subagents' sessions are inspected, not resumed; a run
                // that failed before any answer is not offered.
                .filter(|s| s.meta.cwd == cwd && s.meta.parent.is_none())
                .filter(|s| s.answered || s.id == self.view.status.session)
                .take(LISTED)
                .collect(),
        )
    }

    /// `/sessions`: the list, the current one starred.
    /// `/agents`: the subagents of this session, with their state.
    pub(super) fn subagents(&mut self) {
        if self.view.subagents.is_empty() {
            self.note(
                "No subagents in this session yet; the agent starts them with the `task` tool.",
            );
            return;
        }
        for row in self.view.subagents.clone() {
            let tokens = if row.tokens > 0 {
                format!(" · {} tokens", crate::protocol::format_tokens(row.tokens))
            } else {
                String::new()
            };
            self.view.commit(
                Line::new()
                    .with(Role::Code, format!("  {}  ", row.session_id))
                    .with(Role::Label, row.agent.clone())
                    .with(
                        Role::Dim,
                        format!(
                            " · {} · {}{tokens}",
                            row.state,
                            crate::protocol::count(row.steps, "step")
                        ),
                    ),
            );
        }
        self.note("`/inspect ID` shows one's whole context and transcript.");
    }

    /// `/inspect ID`: a subagent's session, whole: what it was given and
    /// everything it did.
    pub(super) fn inspect(&mut self, id: &str) {
        if id.is_empty() {
            self.error("`/inspect` takes a subagent's session id; /agents lists them");
            return;
        }
        let loaded = crate::startup::session_store(self.environment)
            .map_err(|f| f.message)
            .and_then(|store| store.load(id).map_err(|e| e.to_string()));
        let (meta, messages) = match loaded {
            Ok(loaded) => loaded,
            Err(why) => {
                self.error(format!("Could not inspect `{id}`: {why}"));
                return;
            }
        };
        let agent = self
            .view
            .subagents
            .iter()
            .find(|r| r.session_id == id)
            .map_or_else(
                || "a subagent".to_owned(),
                |r| format!("the `{}` agent", r.agent),
            );
        let parent = meta.parent.as_ref().map_or_else(
            || "not a subagent's session".to_owned(),
            |p| format!("started by call {} of session {}", p.call_id, p.session_id),
        );
        self.view.commit(
            Line::new()
                .with(Role::Label, "INSPECT ")
                .with(Role::Code, id.to_owned())
                .with(Role::Dim, format!(" · {parent}")),
        );
        let width = self.view.width;
        match given_context(&meta, self.environment) {
            Some((system, workspace, tools)) => {
                self.note(format!("Its whole context, as sent to the model ({agent}):"));
                for (label, text) in [("SYSTEM", system), ("WORKSPACE", workspace)] {
                    self.view.commit(Line::new().with(Role::Label, label));
                    for line in text.lines() {
                        self.view.commit(Line::new().with(
                            Role::Dim,
                            format!("  {}", render::truncate(line, width.saturating_sub(2))),
                        ));
                    }
                }
                self.view.commit(
                    Line::new()
                        .with(Role::Label, "TOOLS ")
                        .with(Role::Dim, tools.join(", ")),
                );
            }
            None => self.note(format!(
                "Its context: offcode's system prompt with {agent}'s prompt after it, the workspace block (path, rules), then only what follows; nothing of this session."
            )),
        }
        for message in &messages {
            let (label, text) = match message {
                crate::session::Message::User { content } => ("USER", content.clone()),
                crate::session::Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    let calls: Vec<String> = tool_calls
                        .iter()
                        .map(|c| format!("→ {} {}", c.name, c.arguments))
                        .collect();
                    (
                        "ASSISTANT",
                        [content.clone(), calls.join("\n")]
                            .join("\n")
                            .trim()
                            .to_owned(),
                    )
                }
                crate::session::Message::Tool { name, content, .. } => {
                    ("RESULT", format!("{name}: {content}"))
                }
            };
            self.view.commit(Line::new().with(Role::Label, label));
            for line in text.lines().take(12) {
                self.view.commit(Line::new().with(
                    Role::Text,
                    format!("  {}", render::truncate(line, width.saturating_sub(2))),
                ));
            }
            let more = text.lines().count().saturating_sub(12);
            if more > 0 {
                self.view.commit(Line::new().with(
                    Role::Dim,
                    format!("  … {}", crate::protocol::count(more, "more line")),
                ));
            }
        }
    }

    pub(super) fn sessions(&mut self) {
        let Some(summaries) = self.here() else {
            return;
        };
        self.list(&summaries);
        if !summaries.is_empty() {
            self.note("Continue one with `/resume N` (or `offcode --session ID`).");
        }
    }

    fn list(&mut self, summaries: &[Summary]) {
        if summaries.is_empty() {
            self.note("No saved sessions for this directory.");
            return;
        }
        let current = self.view.status.session.clone();
        let width = self.view.width;
        for (index, summary) in summaries.iter().enumerate() {
            let mark = if summary.id == current { "*" } else { " " };
            let updated: String = summary.updated.replace('T', " ").chars().take(16).collect();
            let head = format!("{mark}{:>3}  {}  {updated}  ", index + 1, summary.id);
            let room = width.saturating_sub(head.len());
            self.view.commit(
                Line::new()
                    .with(Role::Code, head)
                    .with(Role::Text, render::truncate(&summary.title, room)),
            );
        }
    }

    /// `/resume`: lists; `/resume N` (or an id) continues that session,
    /// showing the conversation so far.
    pub(super) async fn resume(&mut self, argument: &str) {
        let Some(summaries) = self.here() else {
            return;
        };
        if argument.is_empty() {
            self.list(&summaries);
            if !summaries.is_empty() {
                self.note("Pick one with `/resume N`.");
            }
            return;
        }
        let chosen = match argument.parse::<usize>() {
            Ok(n) => summaries.get(n.wrapping_sub(1)).map(|s| s.id.clone()),
            Err(_) => Some(argument.to_owned()),
        };
        let Some(id) = chosen else {
            self.error(format!(
                "There is no session {argument} here; `/resume` lists them"
            ));
            return;
        };
        if id == self.view.status.session {
            self.note("That is this session.");
            return;
        }
        self.restart(false, Some(&id)).await;
    }

    /// The conversation of a resumed session, as the live view showed it.
    pub(super) fn show_transcript(&mut self, id: &str) {
        let loaded = crate::startup::session_store(self.environment)
            .ok()
            .and_then(|store| store.load(id).ok());
        let Some((_, messages)) = loaded else {
            return;
        };
        for line in transcript(&messages, self.view.width) {
            self.view.commit(line);
        }
    }
}

/// `messages` as the live view showed them at `width`: each prompt as
/// typed, each answer under its label with its Markdown drawn, each tool
/// call's line and how it ended. The oldest beyond [`TRANSCRIPT_MESSAGES`]
/// are counted.
pub fn transcript(messages: &[Message], width: usize) -> Vec<Line> {
    use crate::protocol::{
        AssistantMessageEvent, CallOutcome, EventMsg, ToolCallBeginEvent, ToolCallEndEvent,
    };
    let skipped = messages.len().saturating_sub(TRANSCRIPT_MESSAGES);
    let mut lines = vec![Line::new().with(Role::Dim, "── the conversation so far ──")];
    if skipped > 0 {
        lines.push(Line::new().with(Role::Dim, format!("… {skipped} earlier messages")));
    }
    // The live view itself, fed the events the turns sent.
    let mut view = crate::ui::view::View::new(crate::ui::view::Status::default(), width);
    let mut calls: Vec<crate::session::ToolCall> = Vec::new();
    for message in &messages[skipped..] {
        match message {
            Message::User { .. } => {
                // offcode's notes to the model were never shown as prompts.
                let Some(typed) = message.typed() else {
                    continue;
                };
                lines.extend(view.take_committed());
                for (index, line) in typed.trim().lines().enumerate() {
                    let lead = if index == 0 { "> " } else { "  " };
                    lines.push(
                        Line::new()
                            .with(Role::Text, lead)
                            .with(Role::Text, render::truncate(line, width.saturating_sub(2))),
                    );
                }
                view.event(&EventMsg::TurnStarted {
                    text: typed.to_owned(),
                });
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                view.event(&EventMsg::AssistantDelta {
                    delta: content.clone(),
                });
                view.event(&EventMsg::AssistantMessage(AssistantMessageEvent {
                    text: content.clone(),
                    tool_calls: tool_calls.len(),
                }));
                calls.clone_from(tool_calls);
            }
            Message::Tool {
                tool_call_id,
                name,
                content,
                is_error,
                shown,
            } => {
                // Each call starts when it runs, as it did live.
                if let Some(call) = calls.iter().find(|c| &c.id == tool_call_id) {
                    let arguments = serde_json::from_str(&call.arguments).unwrap_or_default();
                    view.event(&EventMsg::ToolCallBegin(ToolCallBeginEvent {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        arguments,
                        recovered: false,
                    }));
                }
                // Written before offcode kept how a call ended: a
                // failure's first line.
                let (outcome, summary) = match shown {
                    Some(shown) => (shown.outcome, shown.summary.clone()),
                    None if *is_error => (
                        CallOutcome::Failed,
                        content.lines().next().unwrap_or_default().to_owned(),
                    ),
                    None => continue,
                };
                view.event(&EventMsg::ToolCallEnd(ToolCallEndEvent {
                    call_id: tool_call_id.clone(),
                    name: name.clone(),
                    outcome,
                    reason: (!outcome.ok()).then(|| summary.clone()),
                    summary,
                    output: content.clone(),
                    display: None,
                }));
            }
        }
    }
    view.event(&EventMsg::TurnComplete(
        crate::protocol::TurnCompleteEvent {
            status: crate::protocol::TurnStatus::Done,
            last_message: None,
        },
    ));
    lines.extend(view.take_committed());
    lines.push(Line::new().with(Role::Dim, "── continued below ──"));
    lines
}

/// What a subagent was given besides its task (its session's `context`
/// entry): the system message, the workspace block, the tools.
fn given_context(
    meta: &crate::session::Meta,
    environment: &crate::config::Environment,
) -> Option<(String, String, Vec<String>)> {
    let store = crate::startup::session_store(environment).ok()?;
    let text = std::fs::read_to_string(store.path_of(&meta.session_id)).ok()?;
    text.lines().find_map(|line| {
        let entry: crate::session::Entry = serde_json::from_str(line).ok()?;
        match entry.body {
            crate::session::EntryBody::Context {
                system,
                workspace,
                tools,
            } => Some((system, workspace, tools)),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::ToolCall;

    #[test]
    fn a_resumed_conversation_is_shown_as_the_live_view_showed_it() {
        use crate::protocol::{AssistantMessageEvent, CallOutcome, EventMsg, ToolCallBeginEvent};
        let answer = "It is **offcode**:\n\n- tools\n- tests";
        let refused = crate::tools::ToolOutput::refused(
            "Permission denied: `bash` was not run (the user declined).",
            "Do not try to get around this.",
        );
        let messages = recorded(answer, &refused);
        let replay: Vec<String> = transcript(&messages, 80).iter().map(Line::plain).collect();
        assert_eq!(
            replay,
            [
                "── the conversation so far ──",
                "> read README.md",
                "  and summarise it",
                "PLAN Let me read it.",
                "TOOL read  README.md",
                "  ✓ README.md: 1 line",
                "TOOL bash  make",
                "  ⊘ Permission denied: `bash` was not run (the user declined).",
                "ANSWER It is offcode:",
                "",
                "• tools",
                "• tests",
                "── continued below ──",
            ]
        );
        // The live view, fed the events of the same turn, drew the same
        // lines (the prompt is the editor's, not the view's).
        let mut live = crate::ui::view::View::new(crate::ui::view::Status::default(), 80);
        let step = |text: &str, calls| {
            [
                EventMsg::AssistantDelta { delta: text.into() },
                EventMsg::AssistantMessage(AssistantMessageEvent {
                    text: text.into(),
                    tool_calls: calls,
                }),
            ]
        };
        let begin = |id: &str, name: &str, arguments| {
            EventMsg::ToolCallBegin(ToolCallBeginEvent {
                call_id: id.into(),
                name: name.into(),
                arguments,
                recovered: false,
            })
        };
        let read = crate::tools::ToolOutput::ok("1\t# offcode", "README.md: 1 line");
        let mut events = vec![EventMsg::TurnStarted {
            text: "read README.md\nand summarise it".into(),
        }];
        events.extend(step("Let me read it.", 2));
        events.push(begin(
            "c1",
            "read",
            serde_json::json!({"path": "README.md"}),
        ));
        events.push(end("c1", "read", CallOutcome::Ok, &read));
        events.push(begin("c2", "bash", serde_json::json!({"command": "make"})));
        events.push(end("c2", "bash", CallOutcome::Refused, &refused));
        events.extend(step(answer, 0));
        for event in &events {
            live.event(event);
        }
        let live: Vec<String> = live.take_committed().iter().map(Line::plain).collect();
        assert_eq!(replay[3..replay.len() - 1], live[..]);
    }

    /// The session's messages of a turn: a read that worked, a command
    /// refused, an offcode note, and `answer`.
    fn recorded(answer: &str, refused: &crate::tools::ToolOutput) -> Vec<Message> {
        use crate::protocol::CallOutcome;
        use crate::session::Shown;
        vec![
            Message::User {
                content: "read README.md\nand summarise it".into(),
            },
            Message::Assistant {
                content: "Let me read it.".into(),
                reasoning: None,
                tool_calls: vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: r#"{"path": "README.md"}"#.into(),
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "bash".into(),
                        arguments: r#"{"command": "make"}"#.into(),
                    },
                ],
                interrupted: false,
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                name: "read".into(),
                content: "1\t# offcode".into(),
                is_error: false,
                shown: Some(Shown {
                    outcome: CallOutcome::Ok,
                    summary: "README.md: 1 line".into(),
                }),
            },
            Message::Tool {
                tool_call_id: "c2".into(),
                name: "bash".into(),
                content: refused.output.clone(),
                is_error: true,
                shown: Some(Shown {
                    outcome: CallOutcome::Refused,
                    summary: refused.summary.clone(),
                }),
            },
            Message::offcode_note("You ended without an answer."),
            Message::Assistant {
                content: answer.into(),
                reasoning: None,
                tool_calls: Vec::new(),
                interrupted: false,
            },
        ]
    }

    /// The end of a call with `result`, as the core sends it.
    fn end(
        id: &str,
        name: &str,
        outcome: crate::protocol::CallOutcome,
        result: &crate::tools::ToolOutput,
    ) -> crate::protocol::EventMsg {
        crate::protocol::EventMsg::ToolCallEnd(result.end_event(id, name, outcome))
    }

    #[test]
    fn a_session_written_before_ends_were_kept_shows_its_failures() {
        let messages = vec![Message::Tool {
            tool_call_id: "c2".into(),
            name: "bash".into(),
            content: "Error: it broke\nmore".into(),
            is_error: true,
            shown: None,
        }];
        let replay: Vec<String> = transcript(&messages, 80).iter().map(Line::plain).collect();
        assert_eq!(replay[1], "  ✗ Error: it broke");
    }
}
