//! The turn state machine: `planning -> model_generating ->
//! awaiting_permission -> tool_running -> ... -> done | error`.
//!
//! One model request is a step; a turn takes steps until the model answers
//! without tool calls, the step limit is hit, an error occurs or the user
//! aborts. Every message is in the session before the next step starts.

use tokio::sync::mpsc;

use super::ending::Judged;
use super::mcp::mcp_changed;
use super::repeat::Repetition;
use super::state::{AgentState, Step};
use super::textcalls::{HeldNotice, StepText};
use super::validate::{Validation, Verdict};
use super::{Queued, lock};

use crate::cancel::Cancel;
use crate::client::wire::ChatRequest;
use crate::client::{self, Piece, Update};
use crate::protocol::{
    AssistantMessageEvent, ErrorKind, EventMsg, Op, SessionConfiguredEvent, SubmissionId,
    TokenUsage, TurnCompleteEvent, TurnState, TurnStatus,
};
use crate::session::{EntryBody, Message, ToolCall};

impl AgentState {
    pub(super) async fn run(
        mut self,
        mut queue: mpsc::UnboundedReceiver<Queued>,
        mut listed: mpsc::UnboundedReceiver<(SubmissionId, Vec<crate::catalogue::Listed>)>,
    ) {
        self.emit(
            0,
            EventMsg::SessionConfigured(SessionConfiguredEvent {
                session_id: self.session.id.clone(),
                path: self.session.path.display().to_string(),
                model: self.model().to_owned(),
                agent: self.agent.name.clone(),
                base_url: self.client.base_url().to_owned(),
                resumed: self.session.resumed,
                restored_messages: self.session.messages.len(),
                todos: self.session.todos.clone(),
            }),
        );
        self.startup_warnings();
        // In the background, after the front end knows the session: no
        // server delays its prompt.
        if let Some(mcp) = self.mcp.as_ref().filter(|_| self.depth == 0) {
            mcp.start();
        }
        // The start-up is told: a front end shows what came before this
        // (the warnings) with the session's introduction.
        self.set_state(0, TurnState::Idle);
        let mut titles = self.titles.receiver();
        loop {
            let (id, op, cancel) = tokio::select! {
                next = queue.recv() => match next {
                    Some(next) => next,
                    None => break,
                },
                Some((id, listing)) = listed.recv() => {
                    self.model_list(id, listing);
                    continue;
                }
                Some(title) = titles.recv() => {
                    self.record_title(title);
                    continue;
                }
                () = mcp_changed(self.mcp.as_ref(), self.depth) => {
                    self.mcp_news(0);
                    continue;
                }
            };
            match op {
                Op::UserTurn { text } => self.run_turn(id, text, &cancel).await,
                Op::Shell { command } => self.run_shell(id, command, &cancel).await,
                Op::SetAgent { name } => self.set_agent(id, name),
                Op::ListAgents => self.list_agents(id),
                Op::ListMcp => self.list_mcp(id),
                Op::SetModel { model } => self.set_model(id, model),
                Op::Compact => {
                    self.emit(
                        id,
                        EventMsg::TurnStarted {
                            text: "/compact".to_owned(),
                        },
                    );
                    let status = if self.fit(id, &cancel, true).await {
                        TurnStatus::Done
                    } else if cancel.is_cancelled() {
                        TurnStatus::Aborted
                    } else {
                        TurnStatus::Failed
                    };
                    self.end_turn(id, status, None, &cancel);
                }
                Op::ListModels => self.list_models(id),
                Op::Context => self.report_context(id).await,
                Op::Undo => self.undo(id),
                Op::Revert { turn, apply } => self.revert(id, turn, apply),
                Op::Diff { since } => self.diff(id, since),
                Op::Turns => self.list_turns(id),
                Op::Summarize => self.summary(id, &cancel).await,
                Op::Shutdown => break,
                // The router answers these itself.
                Op::Interrupt | Op::InterruptSubagents | Op::Approve { .. } => {}
            }
        }
    }

    async fn run_turn(&mut self, id: SubmissionId, text: String, cancel: &Cancel) {
        self.emit(id, EventMsg::TurnStarted { text: text.clone() });
        // A user message breaks a run of identical calls.
        self.permits.break_repeats();
        let (status, last_message) = self.turn(id, text, cancel).await;
        self.end_turn(id, status, last_message, cancel);
        self.ask_title();
    }

    pub(super) fn end_turn(
        &mut self,
        id: SubmissionId,
        status: TurnStatus,
        last_message: Option<String>,
        cancel: &Cancel,
    ) {
        lock(&self.shared.cancels).retain(|c| !c.is_cancelled() && !c.same_as(cancel));
        if status == TurnStatus::Done {
            self.finish_automatic_todo(id);
        }
        let _ = self.record(id, EntryBody::TurnEnd { status });
        if let Err(error) = self.session.sync() {
            self.emit(
                id,
                EventMsg::Warning {
                    message: client::error_chain(&error),
                },
            );
        }
        let state = match status {
            TurnStatus::Done => TurnState::Done,
            TurnStatus::Failed
            | TurnStatus::Aborted
            | TurnStatus::Incomplete
            | TurnStatus::Refused => TurnState::Error,
        };
        self.set_state(id, state);
        self.emit(
            id,
            EventMsg::TurnComplete(TurnCompleteEvent {
                status,
                last_message,
            }),
        );
    }

    async fn turn(
        &mut self,
        id: SubmissionId,
        text: String,
        cancel: &Cancel,
    ) -> (TurnStatus, Option<String>) {
        if cancel.is_cancelled() {
            return (TurnStatus::Aborted, None);
        }
        if let Some(message) = self.too_big(&text).await {
            self.fail(id, message, ErrorKind::TooBig);
            return (TurnStatus::Failed, None);
        }
        let mut ending = self.ending(&text);
        let question = self.compact() && super::intent::only_asks(&text);
        self.permits.new_turn(question);
        let user = EntryBody::Message {
            message: Message::User {
                content: text.clone(),
            },
        };
        if let Err(status) = self.record(id, user) {
            return (status, None);
        }
        match self.read_named(id, &text, cancel).await {
            Ok(Some(calls)) => ending.owed.after_step(calls),
            Ok(None) => {}
            Err(status) => return (status, None),
        }
        let mut validation = Validation::new();
        for _ in 0..self.config.max_steps {
            match self.step(id, cancel).await {
                Step::Final(text) => {
                    let note = match self.judge(id, &mut ending, &text, &validation) {
                        Judged::Tell(note) => note,
                        Judged::Again(why) => {
                            if let Err(status) = self.set_aside(id, why) {
                                return (status, None);
                            }
                            continue;
                        }
                        Judged::Undone => return (TurnStatus::Incomplete, Some(text)),
                        Judged::Done => match self.validate(id, &mut validation, cancel).await {
                            Verdict::NotRun if cancel.is_cancelled() => {
                                return (TurnStatus::Aborted, Some(text));
                            }
                            // Refused: the user knows it was not checked.
                            Verdict::Done | Verdict::NotRun => {
                                let refused = self.refused_work(&ending, &validation);
                                let text = self.reported(id, text, &ending);
                                let status = if refused {
                                    TurnStatus::Refused
                                } else {
                                    TurnStatus::Done
                                };
                                return (status, Some(text));
                            }
                            Verdict::GaveUp(why) => {
                                self.warn(id, &format!("The task is not done: {why}"));
                                return (TurnStatus::Incomplete, Some(text));
                            }
                            Verdict::Retry(note) => {
                                if let Err(status) = self.tell_model(id, &note) {
                                    return (status, None);
                                }
                                continue;
                            }
                        },
                    };
                    if let Err(status) = self.tell_model(id, &note) {
                        return (status, None);
                    }
                }
                Step::Continue(calls) => {
                    if let Err(status) = self.after_calls(id, &mut ending, &mut validation, calls) {
                        return (status, None);
                    }
                }
                Step::End(status) => return (status, None),
            }
        }
        let message = format!(
            "Stopped after {} model requests in one turn (`max_steps`); send another message to continue",
            self.config.max_steps
        );
        self.fail(id, message, ErrorKind::StepLimit);
        (TurnStatus::Failed, None)
    }

    async fn step(&mut self, id: SubmissionId, cancel: &Cancel) -> Step {
        self.set_state(id, TurnState::Planning);
        self.mcp_step(id).await;
        if !self.fit(id, cancel, false).await {
            if cancel.is_cancelled() {
                return Step::End(TurnStatus::Aborted);
            }
            self.fail(
                id,
                "The conversation does not fit in the model's context, even compacted; start a new session (/new) or raise `context_limit`".to_owned(),
                ErrorKind::Server,
            );
            return Step::End(TurnStatus::Failed);
        }
        let history = super::compact::request_history(
            &self.session.messages,
            self.session.compaction.as_ref(),
        );
        // Known without asking: a server that rejects the answer's room
        // says its length, and the retry asks for less.
        let limit = self.known_limit();
        let messages = self.request.messages(&history);
        let model = self.model_id().to_owned();
        let hot = self.request.take_hotter();
        let specs = self.request.specs();
        let estimate = super::compact::estimate_request(&messages, specs);
        let mut request = ChatRequest::streaming(&model, &messages, specs, &self.config);
        request.max_tokens = Some(self.budget.answer_room(&self.config, limit, estimate));
        request.temperature = super::request::heated(request.temperature, hot);
        self.budget.sent(estimate);
        let mut parser = self.request.inline_parser();
        let mut text = StepText::default();
        let mut generating = false;
        let emit = self.emitter(id);
        // A model caught in a loop is stopped alone, not the turn.
        let stop = cancel.child();
        let mut repetition = Repetition::default();
        let mut held = HeldNotice::new();
        let mut raw = String::new();
        let mut looped = None;
        let result = self
            .client
            .stream_chat(&request, &stop, &mut |update| match update {
                Update::Piece(piece) => {
                    if !generating && piece.is_output() {
                        generating = true;
                        emit(EventMsg::StateChanged {
                            state: TurnState::ModelGenerating,
                        });
                    }
                    match piece {
                        Piece::Content(delta) => {
                            if looped.is_none() {
                                raw.push_str(&delta);
                                looped = repetition.push(&delta);
                                if looped.is_some() {
                                    stop.cancel();
                                }
                            }
                            for out in parser.push(&delta) {
                                text.apply(out, &emit);
                            }
                            if let Some(notice) = held.check(parser.unshown()) {
                                emit(notice);
                            }
                        }
                        Piece::Reasoning(delta) => text.reason(delta, &emit),
                        Piece::ToolCallNamed { .. } | Piece::Usage(_) | Piece::Error(_) => {}
                    }
                }
                Update::Retry(retry) => emit(EventMsg::Retry(retry)),
            })
            .await;
        // Stopped for a loop (or ended just as it was found).
        if let Some(found) = looped
            && !cancel.is_cancelled()
            && matches!(result, Ok(_) | Err(client::Error::Cancelled))
        {
            self.budget.answered();
            return self
                .stopped_loop(id, &raw, found, text.reasoning, cancel)
                .await;
        }
        match result {
            Ok(mut response) => {
                self.budget.answered();
                let recovered = self.finish_text(id, &mut parser, &mut text, &mut response);
                self.finish_step(id, response, recovered, cancel).await
            }
            Err(error) => self.step_failed(id, error, parser, text, cancel).await,
        }
    }

    pub(super) async fn finish_step(
        &mut self,
        id: SubmissionId,
        response: client::Assembled,
        recovered: bool,
        cancel: &Cancel,
    ) -> Step {
        self.reply_parent = self.session.last_id().map(str::to_owned);
        if let Some(usage) = response.usage {
            let usage = TokenUsage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                total_tokens: usage.total_tokens,
            };
            self.budget.counted(usage.prompt_tokens);
            self.emit(id, EventMsg::TokenUsage(usage));
            if let Err(status) = self.record(id, EntryBody::Usage(usage)) {
                return Step::End(status);
            }
        }
        if response.invalid_utf8 {
            self.warn(id, "The server sent text that is not valid UTF-8; it was shown with replacement characters");
        }
        if response.finish_reason.as_deref() == Some("length") {
            self.warn(id, "The model stopped at its output limit (`max_tokens` or the context length); the answer may be cut short");
        }
        let base = self.session.messages.len();
        let mut tool_calls: Vec<ToolCall> = Vec::new();
        for (position, call) in response.tool_calls.into_iter().enumerate() {
            let duplicate = tool_calls.iter().any(|c| c.id == call.id);
            let id = if call.id.is_empty() || duplicate {
                format!("call_{base}_{position}")
            } else {
                call.id
            };
            tool_calls.push(ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            });
        }
        let message = Message::Assistant {
            content: response.content.clone(),
            reasoning: response.reasoning,
            tool_calls: tool_calls.clone(),
            interrupted: false,
        };
        if let Err(status) = self.record(id, EntryBody::Message { message }) {
            return Step::End(status);
        }
        self.emit(
            id,
            EventMsg::AssistantMessage(AssistantMessageEvent {
                text: response.content.clone(),
                tool_calls: tool_calls.len(),
            }),
        );
        if tool_calls.is_empty() {
            return Step::Final(response.content);
        }
        // Calls written as text all at once may guess what an earlier one
        // returns: those run next step, with the results seen.
        if recovered {
            self.request.wrote_call_as_text();
        }
        let waiting = if recovered {
            super::dependent::first_dependent(&tool_calls, &self.seen_reads(), |name| {
                self.effect(name)
            })
        } else {
            None
        };
        self.run_calls(id, &tool_calls, recovered, waiting, cancel)
            .await
    }
}
