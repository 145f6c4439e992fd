//! A request that failed: what arrived is kept, then the fallbacks (text
//! tool calls for a server that refuses `tools`, compaction for one that
//! found the request too long) or the error, with the fix where offcode
//! knows it.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use super::finish::Calls;
use super::state::{AgentState, Step};
use super::textcalls::StepText;
use crate::cancel::Cancel;
use crate::client;
use crate::protocol::{ErrorKind, SubmissionId, TurnStatus};
use crate::session::{EntryBody, Message};

impl AgentState {
    /// A request that failed: what arrived is kept, then the fallbacks
    /// (text tool calls, compaction) or the error.
    pub(super) async fn step_failed(
        &mut self,
        id: SubmissionId,
        error: client::Error,
        mut parser: crate::client::inline::InlineParser,
        mut text: StepText,
        cancel: &Cancel,
    ) -> Step {
        // What was held back as possible markup is text after all; calls
        // in a cut response are not run.
        let emit = self.emitter(id);
        for out in parser.finish(true).0 {
            text.apply(out, &emit);
        }
        let (partial, reasoning) = (text.content, text.reasoning);
        if !partial.is_empty() || !reasoning.is_empty() {
            let message = Message::Assistant {
                content: partial,
                reasoning: (!reasoning.is_empty()).then_some(reasoning),
                tool_calls: Vec::new(),
                interrupted: true,
            };
            if let Err(status) = self.record(id, EntryBody::Message { message }) {
                return Step::End(status);
            }
        }
        if matches!(error, client::Error::Cancelled) {
            return Step::End(TurnStatus::Aborted);
        }
        if error.refuses_tools()
            && !self.request.shape().text_tools
            && self.config.tool_calls == crate::config::ToolCallMode::Auto
        {
            self.switch_to_text_tools(id);
            return Step::Continue(Calls::default());
        }
        // Too long for the model: compact and try once more.
        if let Some(overflow) = super::compact::overflow(&error)
            && self.budget.overflowed(overflow.limit)
        {
            if let Some(limit) = overflow.limit {
                self.remember(id, |known| known.max_model_len = Some(limit));
            }
            // Only the room asked for the answer was too big: the retry
            // asks for what the context leaves, with nothing compacted.
            let answer_only = match (overflow.limit, overflow.prompt) {
                (Some(limit), Some(prompt)) => {
                    prompt + self.config.compaction.reserve.min(limit / 4) <= limit
                }
                _ => false,
            };
            if answer_only || self.fit(id, cancel, true).await {
                return Step::Continue(Calls::default());
            }
        }
        let mut message = client::error_chain(&error);
        if error.is_certificate_problem() {
            message = format!(
                "{message}. The server's certificate is not trusted: {}",
                client::CERTIFICATE_FIX
            );
        } else if error.refuses_tools() {
            message = format!(
                "{message}. To fix the server, start vLLM with {}; or set `tool_calls` to `auto` or `text`",
                client::TOOL_PARSER_FLAGS
            );
        }
        self.fail(id, message, error_kind(&error));
        Step::End(TurnStatus::Failed)
    }
}

fn error_kind(error: &client::Error) -> ErrorKind {
    match error {
        client::Error::Connect { .. } | client::Error::Setup(_) => ErrorKind::Connect,
        client::Error::Status { .. } | client::Error::InBand { .. } => ErrorKind::Server,
        client::Error::Malformed { .. }
        | client::Error::Truncated
        | client::Error::TooLarge
        | client::Error::Read(_)
        | client::Error::BadResponse { .. } => ErrorKind::Stream,
        client::Error::IdleTimeout(_) => ErrorKind::Timeout,
        client::Error::Cancelled => ErrorKind::Internal,
    }
}
