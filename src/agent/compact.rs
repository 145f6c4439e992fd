//! Keeping requests inside the model's context: old tool outputs are left
//! out first (prune), then the older conversation is summarised by the
//! model and the summary stands in for it. The session file keeps every
//! message; a `compaction` entry says how requests shorten the history.

use std::sync::LazyLock;

use regex::Regex;

use super::budget::{ratio, scale_tokens};
use super::state::AgentState;

mod budget;
use crate::cancel::Cancel;
use crate::client::wire::{ChatRequest, WireMessage};
use crate::client::{self, Update};
use crate::context::{build_messages, estimate_tokens, text_message};
use crate::protocol::{EventMsg, SubmissionId};
use crate::session::{Compaction, EntryBody, Message};

/// Estimated tokens from which the server is asked for the context
/// length (when the config does not give it).
const ASK_LIMIT_FROM: u64 = 4_096;
/// Tool outputs kept whole when older ones are pruned.
const KEEP_TOOL_OUTPUTS: usize = 4;
/// What a pruned tool output becomes.
pub const PRUNED: &str = "[output left out to save context; run the tool again if it is needed]";
/// Characters of one message in the transcript the summariser reads.
const TRANSCRIPT_MESSAGE_CHARS: usize = 2_000;

/// What the server's context-length error told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// The model's context length.
    pub limit: Option<u64>,
    /// Tokens the request's prompt had.
    pub prompt: Option<u64>,
}

// Fixed patterns, checked by the tests below; a bad one would only make
// the numbers unknown.
static LIMIT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?:maximum context length is|context length is only) (\d+)|available context size \((\d+) tokens\)",
    )
    .ok()
});
static PROMPT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"prompt contains (?:at least )?(\d+) input tokens|request has (\d+) input tokens|You passed (\d+) input tokens|\((\d+) in the messages|(\d+) tokens in the messages|request \((\d+) tokens\) exceeds",
    )
    .ok()
});

/// Whether `error` is the server saying the request is too long for the
/// model's context (every vLLM wording), with the numbers it gave.
pub fn overflow(error: &client::Error) -> Option<Overflow> {
    let (client::Error::Status {
        status: 400,
        message,
        code,
        ..
    }
    | client::Error::InBand { message, code }) = error
    else {
        return None;
    };
    let matches = message.contains("context length")
        || message.contains("maximum context")
        || message.contains("exceeds the available context size")
        || code.as_deref() == Some("context_length_exceeded");
    if !matches {
        return None;
    }
    let number = |regex: &Option<Regex>| {
        regex.as_ref()?.captures(message).and_then(|c| {
            c.iter()
                .skip(1)
                .flatten()
                .next()
                .and_then(|m| m.as_str().parse().ok())
        })
    };
    Some(Overflow {
        limit: number(&LIMIT),
        prompt: number(&PROMPT),
    })
}

/// The first message that requests carry whole under `compaction`:
/// before it, messages are summarised away or their tool output pruned.
pub fn first_whole(compaction: Option<&Compaction>) -> usize {
    compaction.map_or(0, |c| c.keep_from.max(c.prune_before))
}

/// The history as requests carry it under `compaction`.
pub fn request_history(messages: &[Message], compaction: Option<&Compaction>) -> Vec<Message> {
    let Some(compaction) = compaction else {
        return messages.to_vec();
    };
    let start = compaction.keep_from.min(messages.len());
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() - start + 1);
    for (index, message) in messages.iter().enumerate().skip(start) {
        match message {
            Message::Tool {
                tool_call_id,
                name,
                is_error,
                shown,
                ..
            } if index < compaction.prune_before => out.push(Message::Tool {
                tool_call_id: tool_call_id.clone(),
                name: name.clone(),
                content: PRUNED.to_owned(),
                is_error: *is_error,
                shown: shown.clone(),
            }),
            other => out.push(other.clone()),
        }
    }
    if let Some(summary) = &compaction.summary {
        let text = format!(
            "[Summary of the conversation so far, written when the context filled up]\n{summary}"
        );
        // Some chat templates want turns to alternate: the summary joins
        // a following user message rather than standing before it.
        match out.first_mut() {
            Some(Message::User { content }) => *content = format!("{text}\n\n{content}"),
            _ => out.insert(0, Message::User { content: text }),
        }
    }
    out
}

impl AgentState {
    /// Tokens the next request would carry, estimated.
    pub(super) fn request_estimate(&self, compaction: Option<&Compaction>) -> u64 {
        let history = request_history(&self.session.messages, compaction);
        estimate_request(&self.request.messages(&history), self.request.specs())
    }

    /// Why `text`, a new message, cannot be sent at all: alone with the
    /// system prompt and tool descriptions it leaves less than the reserve
    /// free. Compaction cannot help such a message, so it is refused
    /// before it is recorded, saying by how much and what helps.
    pub(super) async fn too_big(&mut self, text: &str) -> Option<String> {
        let scale = self.budget.scale();
        let tokens = scale_tokens(estimate_tokens(text), scale);
        if self.config.context_limit.is_none() && tokens < ASK_LIMIT_FROM {
            return None;
        }
        let limit = self.context_limit().await?;
        let reserve = self.config.compaction.reserve.min(limit / 4);
        let base = scale_tokens(
            estimate_request(&self.request.messages(&[]), self.request.specs()),
            scale,
        );
        let room = limit.saturating_sub(reserve).saturating_sub(base);
        if tokens <= room {
            return None;
        }
        let over = tokens - room;
        Some(format!(
            "This message is too big for the model: about {tokens} tokens ({} KB), and a \
             message can take at most about {room} (the context holds {limit}; the system \
             prompt and tool descriptions take {base} and {reserve} stay free for the answer), \
             so it is {over} tokens too big. Nothing was sent. Attach or paste only the part \
             that matters, or name the file and let the model read the parts it needs with \
             its tools.",
            text.len().div_ceil(1024)
        ))
    }

    /// Compacts when the next request would not leave the reserve free
    /// (or always, when `force`). Returns false when the request still
    /// cannot fit.
    pub(super) async fn fit(&mut self, id: SubmissionId, cancel: &Cancel, force: bool) -> bool {
        let current = self.session.compaction.clone();
        // The estimate, corrected by how far the server's count of the
        // last request was above it (never below: an estimate that runs
        // high only compacts early).
        let raw = self.request_estimate(current.as_ref());
        let mut scale = self.budget.scale();
        let mut before = scale_tokens(raw, scale);
        // Small requests fit any model worth coding with; the server is
        // asked for its limit only once the conversation grows.
        if !force && self.config.context_limit.is_none() && before < ASK_LIMIT_FROM {
            return true;
        }
        let Some(limit) = self.context_limit().await else {
            return true;
        };
        // A reserve too big for a small model leaves it a quarter.
        let reserve = self.config.compaction.reserve.min(limit / 4);
        let budget = limit.saturating_sub(reserve);
        // Near the budget an estimate is not enough: the server counts,
        // and later estimates are scaled by how far off this one was.
        if before >= budget / 2
            && let Some(exact) = self.exact_count(current.as_ref()).await
        {
            scale = ratio(exact, raw);
            before = exact;
        }
        if !force && (before <= budget || !self.config.compaction.auto) {
            return true;
        }
        let mut next = current.clone().unwrap_or_default();
        // First, old tool outputs.
        if self.config.compaction.prune {
            let tools: Vec<usize> = self
                .session
                .messages
                .iter()
                .enumerate()
                .filter(|(_, m)| matches!(m, Message::Tool { .. }))
                .map(|(i, _)| i)
                .collect();
            if tools.len() > KEEP_TOOL_OUTPUTS {
                next.prune_before = next
                    .prune_before
                    .max(tools[tools.len() - KEEP_TOOL_OUTPUTS]);
            }
            if !force && self.scaled_estimate(&next, scale) <= budget {
                let after = self.scaled_estimate(&next, scale);
                return self.record_compaction(
                    id,
                    next,
                    (before, after, limit),
                    "old tool outputs left out",
                );
            }
        }
        // Then the older conversation, summarised. The rooms are in
        // estimated tokens, so they shrink by the scale.
        let Some(cut) = self.cut_point(&next, scale_tokens(budget / 3, 1.0 / scale)) else {
            return self.scaled_estimate(&next, scale) <= budget;
        };
        let transcript = self.transcript(&next, cut, scale_tokens(budget / 2, 1.0 / scale));
        let Some(summary) = self.summarise(id, transcript, cancel).await else {
            return false;
        };
        let messages = cut - next.keep_from;
        // The todo list lives in the calls being summarised: it comes
        // along whole.
        let todos = self.tools.todos();
        next.summary = Some(if todos.is_empty() {
            summary
        } else {
            format!(
                "{summary}\n\nYour todo list:\n{}",
                crate::tools::todo::checklist(&todos)
            )
        });
        next.keep_from = cut;
        next.prune_before = next.prune_before.max(cut);
        let after = self.scaled_estimate(&next, scale);
        let done = if messages == 1 {
            "1 earlier message summarised".to_owned()
        } else {
            format!("{messages} earlier messages summarised")
        };
        let recorded = self.record_compaction(id, next.clone(), (before, after, limit), &done);
        // When only the correction says it does not fit, the request goes
        // out: the server's own count (and the overflow retry) decides.
        recorded && (after <= budget || self.request_estimate(Some(&next)) <= budget)
    }

    fn scaled_estimate(&self, compaction: &Compaction, scale: f64) -> u64 {
        scale_tokens(self.request_estimate(Some(compaction)), scale)
    }

    /// The server's count of the next request under `compaction` (and its
    /// context length, when still unknown); `None` when it cannot count.
    async fn exact_count(&mut self, compaction: Option<&Compaction>) -> Option<u64> {
        if self.budget.tokenize_unsupported {
            return None;
        }
        let history = request_history(&self.session.messages, compaction);
        let messages = self.request.messages(&history);
        let client = std::sync::Arc::clone(&self.client);
        let specs = self.request.specs().to_vec();
        let counted = client
            .count_tokens(self.model_id().to_owned(), messages, specs)
            .await;
        let Ok(Some(response)) = counted else {
            self.budget.tokenize_unsupported = true;
            return None;
        };
        if self.config.context_limit.is_none()
            && let Some(limit) = response.max_model_len
        {
            self.budget.limit = Some(limit);
        }
        Some(response.count)
    }

    /// The first message to keep whole: a step's start (a user or an
    /// assistant message, never a tool result), after the current start,
    /// with what follows it under `room` tokens; the last step at least.
    fn cut_point(&self, current: &Compaction, room: u64) -> Option<usize> {
        let messages = &self.session.messages;
        let starts: Vec<usize> = (current.keep_from + 1..messages.len())
            .filter(|&i| !matches!(messages[i], Message::Tool { .. }))
            .collect();
        let last = *starts.last()?;
        let fits = |i: usize| {
            let tail = build_messages("", &request_history(&messages[i..], None));
            estimate_tokens(&serde_json::to_string(&tail).unwrap_or_default()) <= room
        };
        Some(starts.iter().copied().find(|&i| fits(i)).unwrap_or(last))
    }

    /// What the summariser reads: the old summary and the messages from
    /// the current start to `cut`, each cut short, the whole kept under
    /// `room` tokens (the newest part wins).
    pub(super) fn transcript(&self, current: &Compaction, cut: usize, room: u64) -> String {
        let mut lines: Vec<String> = Vec::new();
        for message in &self.session.messages[current.keep_from..cut] {
            let (role, text) = match message {
                Message::User { content } => ("user", content.clone()),
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    let calls: Vec<String> = tool_calls
                        .iter()
                        .map(|c| format!("[calls {} {}]", c.name, c.arguments))
                        .collect();
                    ("assistant", format!("{content} {}", calls.join(" ")))
                }
                Message::Tool { name, content, .. } => ("tool", format!("{name}: {content}")),
            };
            let text: String = text.chars().take(TRANSCRIPT_MESSAGE_CHARS).collect();
            lines.push(format!("{role}: {}", text.trim()));
        }
        let mut kept: Vec<String> = Vec::new();
        let mut used = 0;
        for line in lines.into_iter().rev() {
            used += estimate_tokens(&line);
            if used > room {
                break;
            }
            kept.push(line);
        }
        kept.reverse();
        let mut text = String::new();
        if let Some(summary) = &current.summary {
            text.push_str("Earlier summary:\n");
            text.push_str(summary);
            text.push_str("\n\n");
        }
        text.push_str("Conversation:\n");
        text.push_str(&kept.join("\n"));
        text
    }

    /// Asks the model for a summary (no tools); `None` after an error,
    /// which is reported.
    pub(super) async fn summarise(
        &mut self,
        id: SubmissionId,
        transcript: String,
        cancel: &Cancel,
    ) -> Option<String> {
        // The hidden `compaction` agent: its prompt, and its model and
        // sampling when a config gives them.
        let summariser = self.agents.get(crate::agents::COMPACTION).cloned();
        let prompt = summariser.as_ref().map_or("", |p| p.prompt.as_str());
        let messages = vec![
            text_message("system", prompt),
            text_message("user", &transcript),
        ];
        // The compaction agent's model, else `small_model`, else the
        // session's.
        let reference = summariser
            .as_ref()
            .and_then(|p| p.model.clone())
            .or_else(|| self.base_config.small_model.clone())
            .unwrap_or_else(|| self.model().to_owned());
        let (config, client) = match self.hidden_route(&reference, summariser.as_ref()) {
            Ok(route) => route,
            Err(why) => {
                self.warn(id, &format!("Compaction failed: {why}"));
                return None;
            }
        };
        let mut request = ChatRequest::streaming(&config.route.model, &messages, &[], &config);
        request.max_tokens =
            Some(u32::try_from(self.config.compaction.reserve / 2).unwrap_or(2_048));
        let emit = self.emitter(id);
        let result = client
            .stream_chat(&request, cancel, &mut |update| {
                if let Update::Retry(retry) = update {
                    emit(EventMsg::Retry(retry));
                }
            })
            .await;
        match result {
            Ok(response) if !response.content.trim().is_empty() => {
                Some(response.content.trim().to_owned())
            }
            Ok(_) => {
                self.warn(id, "Compaction failed: the model returned an empty summary");
                None
            }
            Err(error) => {
                self.warn(
                    id,
                    &format!("Compaction failed: {}", client::error_chain(&error)),
                );
                None
            }
        }
    }

    /// Records `compaction` and tells what it did; `sizes` are the
    /// request's tokens before and after, and the limit.
    fn record_compaction(
        &mut self,
        id: SubmissionId,
        compaction: Compaction,
        sizes: (u64, u64, u64),
        what: &str,
    ) -> bool {
        let (before, after, limit) = sizes;
        if self
            .session
            .append(EntryBody::Compaction(compaction))
            .is_err()
        {
            self.warn(id, "Compaction could not be recorded in the session");
            return false;
        }
        self.emit(
            id,
            crate::protocol::EventMsg::Compacted(crate::protocol::CompactedEvent {
                what: what.to_owned(),
                before,
                after,
                limit,
            }),
        );
        true
    }
}

/// Estimated tokens of a request: its messages and tool schemas as sent.
pub(super) fn estimate_request(
    messages: &[WireMessage],
    specs: &[crate::client::wire::ToolSpec],
) -> u64 {
    estimate_tokens(&serde_json::to_string(messages).unwrap_or_default())
        + estimate_tokens(&serde_json::to_string(specs).unwrap_or_default())
}

#[cfg(test)]
mod tests;
