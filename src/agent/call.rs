//! Running the tool calls of a step, each as the model asked: announce it, ask the
//! policy (and the user), run it so an abort always wins, report it.

use super::kind::Kind;
use std::sync::Arc;

use serde_json::Value;

use super::finish::Calls;
use super::handler::Handler;
use super::permits::Caller;
use super::state::{AgentState, Step};
use crate::cancel::Cancel;
use crate::protocol::{
    CallOutcome, EventMsg, SubmissionId, ToolCallBeginEvent, TurnState, TurnStatus,
};
use crate::session::{EntryBody, Message, Shown, ToolCall};
use crate::tools::{Effect, ToolContext, ToolOutput, parse_argument_text};

impl AgentState {
    /// Runs a step's calls in order and records each result; those from
    /// `waiting` on are held back for the results of earlier ones.
    pub(super) async fn run_calls(
        &mut self,
        id: SubmissionId,
        tool_calls: &[ToolCall],
        recovered: bool,
        waiting: Option<usize>,
        cancel: &Cancel,
    ) -> Step {
        // After an abort the remaining calls still get a result, so the
        // history stays a valid request.
        let mut calls = Calls::default();
        // Every `task` call of the step runs at once, when the first is due.
        let mut tasks: Option<std::collections::HashMap<String, ToolOutput>> = None;
        for (index, call) in tool_calls.iter().enumerate() {
            let (output, outcome) = if cancel.is_cancelled() {
                (
                    ToolOutput::error("not run: the turn was aborted"),
                    CallOutcome::Aborted,
                )
            } else if let Some(first) = waiting.filter(|&first| index >= first) {
                calls.deferred.push(self.noted(call, &call.arguments));
                (
                    self.not_yet(id, call, &tool_calls[..first]),
                    CallOutcome::Failed,
                )
            } else if self.kind(&call.name) == Kind::Task {
                if tasks.is_none() {
                    let due: Vec<&ToolCall> = tool_calls[index..]
                        .iter()
                        .filter(|c| self.kind(&c.name) == Kind::Task)
                        .collect();
                    let task = super::task::NAME;
                    let before = self.begin_step(id, task, task, None, &[]).await;
                    tasks = Some(self.run_tasks(id, &due, cancel).await);
                    self.record_step(id, before, super::task::NAME, None).await;
                }
                calls.ran.push(self.noted(call, ""));
                calls.excused = true;
                let output = tasks
                    .as_mut()
                    .and_then(|done| done.remove(&call.id))
                    .unwrap_or_else(|| ToolOutput::error("not run: the turn was aborted"));
                let outcome = output.ran();
                (output, outcome)
            } else {
                let (output, outcome) = self
                    .run_call(id, call, Caller::Model, recovered, cancel)
                    .await;
                self.tally(&mut calls, call, &output, outcome);
                (output, outcome)
            };
            let message = Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: output.output,
                is_error: !output.ok,
                shown: Some(Shown {
                    outcome,
                    summary: output.summary,
                }),
            };
            if let Err(status) = self.record(id, EntryBody::Message { message }) {
                return Step::End(status);
            }
        }
        if cancel.is_cancelled() {
            return Step::End(TurnStatus::Aborted);
        }
        Step::Continue(calls)
    }

    /// Runs every `task` call of `calls` (one step's): each is announced,
    /// checked and permitted here like any call, then its subagent is
    /// started ([`super::task::Subagents`], given only what that needs) and
    /// runs beside the others within the bound; the results by call id.
    async fn run_tasks(
        &mut self,
        id: SubmissionId,
        calls: &[&ToolCall],
        cancel: &Cancel,
    ) -> std::collections::HashMap<String, ToolOutput> {
        let subagents = self.subagents(id);
        let mut results = std::collections::HashMap::new();
        let mut started = Vec::new();
        for call in calls {
            let arguments = self.announce(id, call, false);
            let order = super::task::order(arguments.clone(), &self.agents, self.depth);
            let refusal = match order {
                Err(reason) => ToolOutput::error(reason),
                Ok(order) => match self
                    .permit(id, call, arguments, Caller::Model, cancel)
                    .await
                {
                    Err(refusal) => refusal.into_output(&call.name),
                    Ok(_) => match subagents.start(call, order, cancel) {
                        Ok(running) => {
                            started.push(running);
                            continue;
                        }
                        Err(reason) => ToolOutput::error(reason),
                    },
                },
            };
            self.ended(id, call, &refusal, CallOutcome::Refused);
            results.insert(call.id.clone(), refusal);
        }
        for (call_id, output, outcome) in super::task::Subagents::finish(started).await {
            if let Some(call) = calls.iter().find(|c| c.id == call_id) {
                self.ended(id, call, &output, outcome);
            }
            results.insert(call_id, output);
        }
        results
    }

    /// What the subagents of turn `id` are started with.
    fn subagents(&self, id: SubmissionId) -> super::task::Subagents {
        let sessions = self
            .session
            .path
            .parent()
            .unwrap_or(std::path::Path::new(""));
        super::task::Subagents {
            client: Arc::clone(&self.client),
            config: self.base_config.clone(),
            sandbox: Arc::clone(&self.sandbox),
            shell: Arc::clone(&self.shell),
            policy: self.permits.policy(),
            approver: self.permits.approver(),
            context: self.request.context().clone(),
            servers: self.servers.clone(),
            agents: self.agents.clone(),
            mcp: self.mcp.clone(),
            store: crate::session::Store::new(sessions.to_path_buf()),
            parent_session: self.session.id.clone(),
            model: self.model().to_owned(),
            turn: id,
            events: self.events.clone(),
            shared: Arc::clone(&self.shared),
            bound: super::task::Subagents::bound(&self.config),
        }
    }

    /// What one call that ran (or was refused) tells about the step.
    fn tally(&self, calls: &mut Calls, call: &ToolCall, output: &ToolOutput, outcome: CallOutcome) {
        let ran = matches!(outcome, CallOutcome::Ok | CallOutcome::Failed);
        // As the tool saw them.
        let arguments = self
            .tools
            .normalized(&call.name, &call.arguments, self.sandbox.root())
            .unwrap_or_else(|| call.arguments.clone());
        if outcome == CallOutcome::Ok {
            // A change found made already is not the turn's: nothing
            // to report, and nothing changed.
            if !output.in_place {
                calls
                    .done
                    .extend(super::intent::Done::of(&call.name, &arguments));
            }
            calls
                .replaced
                .extend(super::intent::replaced(&call.name, &arguments));
            // What it named, and what it found (a search of the
            // workspace names the files it matched).
            let found: String = output.output.chars().take(64 * 1024).collect();
            calls.touched.push(format!("{arguments}\n{found}"));
            calls
                .worked
                .push((call.name.clone(), call.arguments.clone()));
        }
        let effect = self.effect(&call.name);
        match effect {
            crate::tools::Effect::ChangesFiles => {
                calls.changed |= outcome == CallOutcome::Ok && !output.in_place;
            }
            crate::tools::Effect::RunsCommands => calls.ran_command |= ran,
            _ => {}
        }
        let refused = outcome == CallOutcome::Refused
            && matches!(
                effect,
                crate::tools::Effect::ChangesFiles | crate::tools::Effect::RunsCommands
            );
        calls.excused |= refused;
        // Only a rule's or a person's no (not offcode's own guards, such
        // as a question's turn changing no file) is a refused task.
        // Nor an agent that changes nothing (`plan`) kept to its part.
        calls.refused |= refused && output.denied && self.can_change();
        if outcome == CallOutcome::Failed && output.held_back {
            calls.held_back.push(self.noted(call, &output.output));
        } else if outcome == CallOutcome::Failed {
            calls.failed.push(self.noted(call, &output.output));
            calls
                .failed_edits
                .extend(super::intent::replaced(&call.name, &arguments));
        } else {
            calls.ran.push(self.noted(call, ""));
        }
    }

    /// Asks for approval when the policy says so, runs the tool and reports;
    /// `recovered` when the call was read from the model's text.
    pub(super) async fn run_call(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        caller: Caller,
        recovered: bool,
        cancel: &Cancel,
    ) -> (ToolOutput, CallOutcome) {
        // Brought to the schema first: the gate judges what will run.
        let normalized;
        let (arguments, kept_confined) = self.confined_first(call);
        let call = match arguments.or_else(|| {
            self.tools
                .normalized(&call.name, &call.arguments, self.sandbox.root())
        }) {
            Some(arguments) => {
                normalized = ToolCall {
                    arguments,
                    ..call.clone()
                };
                &normalized
            }
            None => call,
        };
        let arguments = self.announce(id, call, recovered);
        // offcode's own tools are never a server's.
        let gone = self
            .mcp
            .as_ref()
            .filter(|_| self.tools.get(&call.name).is_none())
            .and_then(|mcp| mcp.unavailable(&call.name));
        // A question's turn changes no file, whatever else is wrong with
        // the call: refused (not failed), so nothing is owed for it.
        if let Some(refusal) = self.refused_change(id, call) {
            self.ended(id, call, &refusal, CallOutcome::Refused);
            return (refusal, CallOutcome::Refused);
        }
        if let Some(refusal) = gone
            .map(ToolOutput::error)
            .or_else(|| self.blind_overwrite(call))
            .or_else(|| self.call_as_content(call))
            .or_else(|| self.whole_rewrite(call))
        {
            self.ended(id, call, &refusal, CallOutcome::Failed);
            return (refusal, CallOutcome::Failed);
        }
        let output = match self.permit(id, call, arguments, caller, cancel).await {
            Ok(permit) => {
                let tool = match caller {
                    Caller::Person => "shell",
                    Caller::Model | Caller::Validation => &call.name,
                };
                let before = self
                    .begin_step(id, &call.name, tool, Some(&call.id), &permit.writes)
                    .await;
                self.set_state(id, TurnState::ToolRunning);
                let late = crate::confine::after::Late::default();
                let context = self.tool_context(&permit, cancel, &late);
                // Any tool, even one stuck in a blocking call, gives way to
                // an abort; the turn never waits on it.
                let handler = match (self.kind(&call.name), &self.mcp) {
                    (Kind::Mcp { .. }, Some(mcp)) => Handler::Mcp(Arc::clone(mcp)),
                    _ => Handler::BuiltIn(&self.tools),
                };
                let (mut output, outcome) = tokio::select! {
                    output = handler.run(call, &context) => {
                        let outcome = output.ran();
                        (output, outcome)
                    }
                    () = cancel.cancelled() => {
                        (ToolOutput::error("Aborted by the user"), CallOutcome::Aborted)
                    }
                };
                // What the check after a command cut short undid.
                for text in crate::confine::after::take(&late) {
                    output.output.push('\n');
                    output.output.push_str(&text);
                }
                // Also after an abort: a killed command may have changed files.
                self.record_step(id, before, tool, Some(&call.id)).await;
                self.permits.answered(call, &output);
                let output = self.after_confined(call, output, kept_confined);
                let todos_changed = self.after_call(&call.name, &output);
                (output, todos_changed, outcome)
            }
            Err(refusal) => (refusal.into_output(&call.name), false, CallOutcome::Refused),
        };
        let (output, todos_changed, outcome) = output;
        self.ended(id, call, &output, outcome);
        if todos_changed {
            self.todos_changed(id);
        }
        (output, outcome)
    }

    /// Says a call ended, and how.
    pub(super) fn ended(
        &self,
        id: SubmissionId,
        call: &ToolCall,
        output: &ToolOutput,
        outcome: CallOutcome,
    ) {
        self.emit(
            id,
            EventMsg::ToolCallEnd(output.end_event(&call.id, &call.name, outcome)),
        );
    }

    /// Says a call starts; its arguments, parsed (or the text, when they
    /// are not JSON).
    pub(super) fn announce(&self, id: SubmissionId, call: &ToolCall, recovered: bool) -> Value {
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
        arguments
    }

    /// A `bash` call that asks to run unconfined before the same command
    /// ran confined runs confined: the flag is for what the sandbox
    /// refused (small models set it on their first try, and `--yes` then
    /// refuses the call). The call's arguments without the flag, and
    /// whether it was dropped.
    fn confined_first(&self, call: &ToolCall) -> (Option<String>, bool) {
        if call.name != "bash" {
            return (None, false);
        }
        let arguments = self
            .tools
            .normalized(&call.name, &call.arguments, self.sandbox.root())
            .unwrap_or_else(|| call.arguments.clone());
        let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(&arguments) else {
            return (None, false);
        };
        let command = object
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if object.get("unconfined") != Some(&Value::Bool(true))
            || self.ran_confined.contains(command)
        {
            return (None, false);
        }
        object.remove("unconfined");
        (Some(Value::Object(object).to_string()), true)
    }

    /// Notes a command that ran confined, and tells the model when its
    /// `unconfined` was dropped.
    fn after_confined(
        &mut self,
        call: &ToolCall,
        mut output: ToolOutput,
        dropped: bool,
    ) -> ToolOutput {
        if call.name != "bash" {
            return output;
        }
        let arguments = parse_argument_text(&call.arguments).unwrap_or_default();
        let unconfined = arguments.get("unconfined") == Some(&Value::Bool(true));
        if !unconfined && let Some(command) = arguments.get("command").and_then(Value::as_str) {
            self.ran_confined.insert(command.to_owned());
        }
        if dropped {
            output.output.push_str(
                "\n[offcode: run in the sandbox: `unconfined` is only for a command that failed there first]",
            );
        }
        output
    }

    /// What a permitted call runs with.
    pub(super) fn tool_context(
        &self,
        permit: &super::permit::Permit,
        cancel: &Cancel,
        late: &crate::confine::after::Late,
    ) -> ToolContext {
        ToolContext {
            sandbox: Arc::clone(&self.sandbox),
            cancel: cancel.clone(),
            allow_clobber: permit.clobbers,
            shell: Arc::clone(&self.shell),
            unconfined: permit.unconfined,
            running: crate::tools::Running::global(),
            late: Arc::clone(late),
            checkpoints: self
                .checkpoints
                .clone()
                .map(|shared| shared as Arc<dyn crate::tools::KeepBefore>),
        }
    }

    /// The reads of this session whose results the model has in front of
    /// it: each call's tool and arguments, where the result was not an
    /// error.
    pub(super) fn seen_reads(&self) -> Vec<(String, Value)> {
        // What the model sees: pruned and summarised results are not.
        let whole = super::compact::first_whole(self.session.compaction.as_ref());
        let messages = &self.session.messages[whole.min(self.session.messages.len())..];
        succeeded(messages)
            .filter(|call| self.effect(&call.name) == Effect::ReadsFiles)
            .filter_map(|call| {
                let arguments = parse_argument_text(&call.arguments).ok()?;
                Some((call.name.clone(), arguments))
            })
            .collect()
    }

    /// A `write` that would replace a file the model has not seen in this
    /// session, refused before anyone is asked: a small model that never
    /// read the file writes a guess or a placeholder over it. Seen means a
    /// read, write or edit of the path that succeeded, a patch or command
    /// naming it, or a user message naming it (an attached file).
    pub(super) fn blind_overwrite(&self, call: &ToolCall) -> Option<ToolOutput> {
        if call.name != "write" {
            return None;
        }
        let arguments = parse_argument_text(&call.arguments).ok()?;
        let path = arguments["path"].as_str()?;
        let target = super::intent::lexical(&self.sandbox.relative(path).ok()?);
        // Only an existing file can be lost.
        self.sandbox.open(path, rustix::fs::OFlags::RDONLY).ok()?;
        // The file as it may be written: as the call gives it, relative,
        // `./`-relative, absolute.
        let relative = target.to_string_lossy().into_owned();
        let forms = [
            path.to_owned(),
            format!("./{relative}"),
            self.sandbox
                .root()
                .join(&target)
                .to_string_lossy()
                .into_owned(),
            relative,
        ];
        let names = |text: &str| forms.iter().any(|form| mentions(text, form));
        let requested = self.session.messages.iter().any(|m| match m {
            Message::User { content } => names(content),
            _ => false,
        });
        let touched = || {
            succeeded(&self.session.messages).any(|earlier| {
                let Ok(a) = parse_argument_text(&earlier.arguments) else {
                    return false;
                };
                match earlier.name.as_str() {
                    "read" | "write" | "edit" => a["path"]
                        .as_str()
                        .and_then(|p| self.sandbox.relative(p).ok())
                        .is_some_and(|p| super::intent::lexical(&p) == target),
                    "patch" | "bash" => names(&a.to_string()),
                    _ => false,
                }
            })
        };
        let seen = requested || touched();
        (!seen).then(|| {
            let mut output = ToolOutput::error(format!(
                "Not written: `{path}` already exists and you have not read it in this session. \
                 Read it first; then change it with `edit`, or `write` its whole new content."
            ));
            "not written: the file exists and was not read first".clone_into(&mut output.summary);
            output
        })
    }

    /// A call not run because it was written before the results of
    /// `earlier` were seen: it is shown, and the model is told to call it
    /// again with what they returned.
    pub(super) fn not_yet(
        &mut self,
        id: SubmissionId,
        call: &ToolCall,
        earlier: &[ToolCall],
    ) -> ToolOutput {
        self.announce(id, call, true);
        let names: Vec<String> = earlier.iter().map(|c| format!("`{}`", c.name)).collect();
        let text = format!(
            "Held back, not run yet: this `{}` was written before the result of {} was seen; that result is above now. If this `{}` is still right, send it again unchanged, alone in your message; if not, send it with what the result shows.",
            call.name,
            names.join(", "),
            call.name
        );
        // Not "Error:": told its call failed, a small model gives up on it.
        let mut output = ToolOutput::error(&text);
        output.output = text;
        "not run yet: it may depend on the calls before it".clone_into(&mut output.summary);
        self.ended(id, call, &output, CallOutcome::Failed);
        output
    }
}

/// The calls in `messages` whose result was not an error.
fn succeeded(messages: &[Message]) -> impl Iterator<Item = &ToolCall> {
    let ok: std::collections::HashSet<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                is_error: false,
                ..
            } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .filter(move |call| ok.contains(call.id.as_str()))
}

/// Whether `text` names `path` as a whole: not as part of a longer word
/// or path (`a` is not named by "a bug", nor `lib.rs` by `mylib.rs`).
fn mentions(text: &str, path: &str) -> bool {
    if path.is_empty() {
        return false;
    }
    let part = |c: char| c.is_alphanumeric() || "._-/~".contains(c);
    text.match_indices(path).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + path.len()..].chars().next();
        // A sentence's full stop after the path still ends it.
        let after_ends = match after {
            Some('.') => text[at + path.len() + 1..]
                .chars()
                .next()
                .is_none_or(|c| !part(c)),
            Some(c) => !part(c),
            None => true,
        };
        before.is_none_or(|c| !part(c)) && after_ends
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_named_only_as_a_whole() {
        assert!(mentions("please fix src/lib.rs.", "src/lib.rs"));
        assert!(mentions("`notes.txt` is stale", "notes.txt"));
        assert!(mentions("notes.txt", "notes.txt"));
        assert!(!mentions("fix the bug", "b"));
        assert!(!mentions("see mylib.rs", "lib.rs"));
        assert!(!mentions("see src/lib.rs", "lib.rs"));
        assert!(!mentions("lib.rs.bak", "lib.rs"));
        assert!(mentions("cat ./a.txt && echo", "./a.txt"));
        assert!(!mentions("", "a"));
    }
}
