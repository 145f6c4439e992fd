//! Earlier sessions in the UI: `/sessions`, the `/resume` picker, and the
//! conversation so far shown when a session is resumed.

use super::App;
use crate::session::{Message, Summary};
use crate::ui::render::{self, Line, Role};

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

    /// The conversation of a resumed session, compact: prompts, answers
    /// and tool lines.
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

/// `messages` as a compact transcript at `width`: each prompt's first
/// line, each tool call's line (a failed one marked), each answer's first
/// lines; the oldest beyond [`TRANSCRIPT_MESSAGES`] counted.
pub fn transcript(messages: &[Message], width: usize) -> Vec<Line> {
    let skipped = messages.len().saturating_sub(TRANSCRIPT_MESSAGES);
    let mut lines = vec![Line::new().with(Role::Dim, "── the conversation so far ──")];
    if skipped > 0 {
        lines.push(Line::new().with(Role::Dim, format!("… {skipped} earlier messages")));
    }
    let first_lines = |text: &str, keep: usize| {
        let all: Vec<&str> = text.trim().lines().collect();
        let mut shown: Vec<String> = all.iter().take(keep).map(|l| render::one_line(l)).collect();
        match all.len().saturating_sub(keep) {
            0 => {}
            1 => shown.push("… 1 more line".to_owned()),
            more => shown.push(format!("… {more} more lines")),
        }
        shown
    };
    for message in &messages[skipped..] {
        match message {
            Message::User { content } => {
                for (index, line) in first_lines(content, 1).into_iter().enumerate() {
                    let lead = if index == 0 { "> " } else { "  " };
                    lines.push(
                        Line::new()
                            .with(Role::Label, lead)
                            .with(Role::Text, render::truncate(&line, width.saturating_sub(2))),
                    );
                }
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                for line in first_lines(content, 2) {
                    lines.push(Line::new().with(Role::Dim, render::truncate(&line, width)));
                }
                for call in tool_calls {
                    let arguments = serde_json::from_str(&call.arguments).unwrap_or_default();
                    let subject = crate::tools::subject(&call.name, &arguments).unwrap_or("");
                    lines.push(render::tool_begin(&call.name, subject, width));
                }
            }
            Message::Tool {
                content, is_error, ..
            } if *is_error => {
                let first = content.lines().next().unwrap_or("");
                let first = first.strip_prefix("Error: ").unwrap_or(first);
                lines.push(
                    Line::new()
                        .with(Role::Error, "  ✗ ")
                        .with(Role::Dim, render::truncate(first, width.saturating_sub(4))),
                );
            }
            Message::Tool { .. } => {}
        }
    }
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
    fn a_transcript_is_compact_prompts_tools_and_answers() {
        let messages = vec![
            Message::User {
                content: "read README.md\nand summarise it".into(),
            },
            Message::Assistant {
                content: "Let me read it.".into(),
                reasoning: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: r#"{"path": "README.md"}"#.into(),
                }],
                interrupted: false,
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                name: "read".into(),
                content: "1\t# offcode".into(),
                is_error: false,
            },
            Message::Tool {
                tool_call_id: "c2".into(),
                name: "bash".into(),
                content: "Error: Permission denied: `bash` was not run".into(),
                is_error: true,
            },
            Message::Assistant {
                content: "It is about offcode.\nIt has tools.\nAnd tests.".into(),
                reasoning: None,
                tool_calls: Vec::new(),
                interrupted: false,
            },
        ];
        let text: Vec<String> = transcript(&messages, 80).iter().map(Line::plain).collect();
        assert_eq!(
            text,
            [
                "── the conversation so far ──",
                "> read README.md",
                "  … 1 more line",
                "Let me read it.",
                "TOOL read  README.md",
                "  ✗ Permission denied: `bash` was not run",
                "It is about offcode.",
                "It has tools.",
                "… 1 more line",
                "── continued below ──",
            ]
        );
    }
}
