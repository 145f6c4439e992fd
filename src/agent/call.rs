//! Running one tool call the model asked for: announce it, ask the
//! policy (and the user), run it so an abort always wins, report it.

use std::sync::Arc;

use serde_json::Value;

use super::turn::AgentState;
use crate::cancel::Cancel;
use crate::protocol::{
    CallOutcome, EventMsg, SubmissionId, ToolCallBeginEvent, ToolCallEndEvent, TurnState,
};
use crate::session::ToolCall;
use crate::tools::{ToolContext, ToolOutput, parse_argument_text};

impl AgentState {
    /// Asks for approval when the policy says so, runs the tool and reports;
    /// `recovered` when the call was read from the model's text.
    pub(super) async fn run_call(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        recovered: bool,
        cancel: &Cancel,
    ) -> ToolOutput {
        let arguments = parse_argument_text(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        self.emit(
            id,
            EventMsg::ToolCallBegin(ToolCallBeginEvent {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: arguments.clone(),
                recovered,
            }),
        );
        let output = match self.permit(id, call, arguments, cancel).await {
            Ok(permit) => {
                self.set_state(id, TurnState::ToolRunning);
                let context = ToolContext {
                    sandbox: Arc::clone(&self.sandbox),
                    cancel: cancel.clone(),
                    allow_clobber: permit.clobbers,
                    shell: Arc::clone(&self.shell),
                    unconfined: permit.unconfined,
                };
                // Any tool, even one stuck in a blocking call, gives way to
                // an abort; the turn never waits on it.
                let (output, outcome) = tokio::select! {
                    output = self.tools.call(&call.name, &call.arguments, &context) => {
                        let outcome = if output.ok { CallOutcome::Ok } else { CallOutcome::Failed };
                        (output, outcome)
                    }
                    () = cancel.cancelled() => {
                        (ToolOutput::error("Aborted by the user"), CallOutcome::Aborted)
                    }
                };
                let (output, todos_changed) = self.after_call(&call.name, output);
                (output, todos_changed, outcome)
            }
            Err(refusal) => (refusal, false, CallOutcome::Refused),
        };
        let (output, todos_changed, outcome) = output;
        self.emit(
            id,
            EventMsg::ToolCallEnd(ToolCallEndEvent {
                call_id: call.id.clone(),
                name: call.name.clone(),
                outcome,
                summary: output.summary.clone(),
                output: output.output.clone(),
                display: output.display.clone(),
            }),
        );
        if todos_changed {
            self.todos_changed(id);
        }
        output
    }
}
