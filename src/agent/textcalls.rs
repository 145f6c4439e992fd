//! The agent's side of servers that do not parse tool calls or reasoning:
//! switching a session to text tool calls and back, and
//! applying what [`InlineParser`] finds in the streamed text.

use std::time::{Duration, Instant};

use crate::cadence::Cadence;
use crate::client::inline::{InlineParser, Out};
use crate::client::{self, AssembledCall};
use crate::config::ToolCallMode;
use crate::protocol::{EventMsg, SubmissionId};
use crate::servers::ToolSupport;

use super::state::AgentState;

/// A step's streamed text, split by the inline parser.
#[derive(Debug, Default)]
pub(super) struct StepText {
    /// What the user sees as the answer (and the session keeps).
    pub(super) content: String,
    /// Reasoning, from the server's field and from think tags.
    pub(super) reasoning: String,
}

impl StepText {
    /// Applies one parser result, telling the front end.
    pub(super) fn apply(&mut self, out: Out, emit: &dyn Fn(EventMsg)) {
        match out {
            // An empty piece (a role chunk, a held-back tag) says nothing.
            Out::Content(delta) if delta.is_empty() => {}
            Out::Content(delta) => {
                self.content.push_str(&delta);
                emit(EventMsg::AssistantDelta { delta });
            }
            Out::Reasoning(delta) => self.reason(delta, emit),
            Out::WasReasoning(text) => {
                self.content.clear();
                self.reasoning.push_str(&text);
                emit(EventMsg::ReasoningRecovered { text });
            }
            Out::WasContent(text) => {
                if self.reasoning.ends_with(&text) {
                    self.reasoning.truncate(self.reasoning.len() - text.len());
                }
            }
        }
    }

    /// Reasoning from the server's own field.
    pub(super) fn reason(&mut self, delta: String, emit: &dyn Fn(EventMsg)) {
        if delta.is_empty() {
            return;
        }
        self.reasoning.push_str(&delta);
        emit(EventMsg::ReasoningDelta { delta });
    }
}

/// Says now and then that the model is writing text held back as a
/// possible call ([`EventMsg::HeldText`]): a small model writing a long
/// unfinished call would otherwise look like a hang.
#[derive(Debug)]
pub(super) struct HeldNotice {
    /// When the step's request went out.
    started: Instant,
    /// Said after 10 s of held text, then every 10 s.
    cadence: Cadence,
}

impl HeldNotice {
    pub(super) fn new() -> Self {
        Self {
            started: Instant::now(),
            cadence: Cadence::new(Duration::from_secs(10), Duration::from_secs(10)),
        }
    }

    /// The event to send, if one is due, with `bytes` held now.
    pub(super) fn check(&mut self, bytes: usize) -> Option<EventMsg> {
        self.check_at(bytes, Instant::now())
    }

    fn check_at(&mut self, bytes: usize, now: Instant) -> Option<EventMsg> {
        if bytes == 0 {
            self.cadence.end();
            return None;
        }
        self.cadence.begin(now);
        self.cadence.due(now).then(|| EventMsg::HeldText {
            bytes,
            secs: now.saturating_duration_since(self.started).as_secs(),
        })
    }
}

impl AgentState {
    /// Takes in what is known about the server and model: from the config,
    /// else from the cache of earlier runs.
    pub(super) fn adopt_server_facts(&mut self, id: SubmissionId) {
        let known = self.servers.get(&self.config.base_url, self.model_id());
        self.request.set_think_open(known.think_open);
        self.budget.adopt(known.max_model_len);
        let text = match self.config.tool_calls {
            ToolCallMode::Text => true,
            ToolCallMode::Native => false,
            ToolCallMode::Auto => known.tool_calls == Some(ToolSupport::Text),
        };
        if text && self.config.tool_calls == ToolCallMode::Auto && !self.request.tools().is_empty()
        {
            self.warn(
                id,
                "This server did not parse tool calls last time, so tools are described in the prompt and calls read from the text (`offcode doctor` checks again)",
            );
        }
        self.request.set_text_tools(text);
    }

    /// The server refused `tools`: the session goes on with text calls,
    /// and the next start knows.
    pub(super) fn switch_to_text_tools(&mut self, id: SubmissionId) {
        self.request.set_text_tools(true);
        self.warn(
            id,
            &format!(
                "The server cannot parse tool calls; offcode describes the tools in the prompt and reads calls from the model's text. To fix the server, start vLLM with {}",
                client::TOOL_PARSER_FLAGS
            ),
        );
        self.remember(id, |known| known.tool_calls = Some(ToolSupport::Text));
    }

    /// Records a fact about the server for later runs; a cache that cannot
    /// be written costs only a warning.
    pub(super) fn remember(&self, id: SubmissionId, change: impl Fn(&mut crate::servers::Known)) {
        if let Err(error) = self
            .servers
            .update(&self.config.base_url, self.model_id(), change)
        {
            self.warn(id, &format!("Could not update the server cache: {error}"));
        }
    }

    /// The end of a response: held text is decided, the calls read from
    /// the text are taken when the server sent none of its own, and a
    /// model found to open its responses inside reasoning is remembered.
    /// True when the calls were read from the text.
    pub(super) fn finish_text(
        &mut self,
        id: SubmissionId,
        parser: &mut InlineParser,
        text: &mut StepText,
        response: &mut client::Assembled,
    ) -> bool {
        let emit = self.emitter(id);
        let (outs, calls) = parser.finish(response.finish_reason.as_deref() == Some("length"));
        for out in outs {
            text.apply(out, &emit);
        }
        let recovered = response.tool_calls.is_empty() && !calls.is_empty();
        if recovered {
            response.tool_calls = calls
                .into_iter()
                .zip(0..)
                .map(|(call, index)| AssembledCall {
                    index,
                    id: String::new(),
                    name: call.name,
                    arguments: call.arguments,
                })
                .collect();
        }
        response.content = std::mem::take(&mut text.content);
        let reasoning = std::mem::take(&mut text.reasoning);
        response.reasoning = (!reasoning.is_empty()).then_some(reasoning);
        let think_open = self.request.shape().think_open;
        if parser.saw_lone_close() && !think_open {
            self.request.set_think_open(true);
            self.remember(id, |known| known.think_open = true);
        } else if think_open && !parser.saw_reasoning() {
            // Presumed reasoning that never closed: thinking is off now.
            self.request.set_think_open(false);
            self.remember(id, |known| known.think_open = false);
        }
        recovered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_text_is_said_after_a_while_and_then_now_and_then() {
        let mut notice = HeldNotice::new();
        let t0 = notice.started;
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(notice.check_at(300, at(1)), None, "held for a moment");
        assert_eq!(notice.check_at(900, at(10)), None, "9 s held");
        assert_eq!(
            notice.check_at(1200, at(11)),
            Some(EventMsg::HeldText {
                bytes: 1200,
                secs: 11
            })
        );
        assert_eq!(notice.check_at(1500, at(20)), None, "said 9 s ago");
        assert_eq!(
            notice.check_at(2000, at(21)),
            Some(EventMsg::HeldText {
                bytes: 2000,
                secs: 21
            })
        );
        // Shown: nothing held, nothing to say; held again, a new wait.
        assert_eq!(notice.check_at(0, at(40)), None);
        assert_eq!(notice.check_at(10, at(41)), None);
    }
}
