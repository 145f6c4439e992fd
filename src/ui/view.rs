//! What the conversation looks like, built from the core's events and
//! independent of any terminal: finished lines for the scrollback, and the
//! live part (text still arriving, reasoning, the status line) that a
//! terminal front end redraws in place.
//!
//! Assistant text is labelled `PLAN` when tool calls follow it and `ANSWER`
//! when it ends the turn. The label is only known when the model's step
//! ends, so a text block's lines are held in the live area until then; a
//! block longer than [`HOLD_LINES`] is let go early, as an `ANSWER` (long
//! texts before tool calls are rare).

use super::markdown::Markdown;
pub use side::{SubagentRow, mcp_list};
pub use status::Status;

use super::render::{self, Line, Lines, Role};
use crate::protocol::{EventMsg, ToolCallEndEvent, ToolDisplay, TurnState, TurnStatus};

/// Lines of assistant text held back until their label is known.
pub const HOLD_LINES: usize = 8;

pub use crate::protocol::format_tokens as tokens;

/// The conversation as lines.
#[derive(Debug)]
pub struct View {
    /// The status line's content.
    pub status: Status,
    /// A `/summarize` summary the app has not started a session from yet.
    pub summary: Option<String>,
    /// Terminal columns.
    pub width: usize,
    committed: Vec<Line>,
    markdown: Markdown,
    /// Text of the current block after its last finished line.
    partial: String,
    /// Finished lines of the current block not yet labelled.
    held: Vec<String>,
    /// Whether the current block has its label.
    labelled: bool,
    /// Reasoning of the current step, while it streams.
    reasoning: Option<String>,
    /// The last step's whole reasoning, for `/think`.
    pub last_reasoning: String,
    /// Calls whose diff was shown in an approval prompt.
    previewed: Vec<String>,
    /// Each call's tool and whole output, in order, for `/expand`.
    outputs: Vec<(String, String)>,
    /// Lines are fitted to the width between words when taken (on a
    /// terminal; piped output keeps its lines whole).
    pub fit: bool,
    /// The turn is the user's `!command`: its output is shown.
    shell: bool,
    /// Warnings waiting for the text block they are about to end.
    deferred: Vec<Line>,
    /// The agent's todo list, as last shown.
    pub todos: Vec<crate::protocol::TodoItem>,
    /// The server's models, as last listed.
    pub models: Option<Vec<crate::protocol::ModelInfo>>,
    /// The endpoints of that list, when there are providers.
    pub providers: Vec<crate::protocol::ProviderInfo>,
    /// The subagents of this session, in the order they started.
    pub subagents: Vec<SubagentRow>,
}

/// `message` (any number of lines, any characters) as lines in `role`.
fn message_lines(role: Role, message: &str, width: usize) -> Vec<Line> {
    render::clean(message)
        .lines()
        .flat_map(|line| render::word_wrap(line, width))
        .map(|row| Line::new().with(role, row))
        .collect()
}

/// Lines of a `!command`'s output shown before folding.
pub const SHELL_LINES: usize = 20;

impl View {
    /// An empty conversation.
    pub fn new(status: Status, width: usize) -> Self {
        Self {
            status,
            summary: None,
            width,
            committed: Vec::new(),
            markdown: Markdown::new(),
            partial: String::new(),
            held: Vec::new(),
            labelled: false,
            reasoning: None,
            last_reasoning: String::new(),
            previewed: Vec::new(),
            outputs: Vec::new(),
            fit: false,
            shell: false,
            deferred: Vec::new(),
            todos: Vec::new(),
            subagents: Vec::new(),
            models: None,
            providers: Vec::new(),
        }
    }

    /// Adds a finished line of its own (a command's output, a notice).
    pub fn commit(&mut self, line: Line) {
        self.committed.push(line);
    }

    /// Finished lines since the last call.
    pub fn take_committed(&mut self) -> Vec<Line> {
        let lines = std::mem::take(&mut self.committed);
        if !self.fit {
            return lines;
        }
        // A terminal would break a long line anywhere; between words reads.
        lines
            .iter()
            .flat_map(|line| render::fit_words(line, self.width))
            .collect()
    }

    /// Whether anything is waiting to be written.
    pub fn has_committed(&self) -> bool {
        !self.committed.is_empty()
    }

    fn configured(&mut self, configured: &crate::protocol::SessionConfiguredEvent) {
        self.todos.clone_from(&configured.todos);
        self.status.session.clone_from(&configured.session_id);
        self.status.model.clone_from(&configured.model);
        if !configured.agent.is_empty() {
            self.status.agent.clone_from(&configured.agent);
        }
    }

    fn tool_begin(&mut self, call: &crate::protocol::ToolCallBeginEvent) {
        let width = self.width;
        self.end_reasoning();
        self.end_block("PLAN");
        let subject = crate::tools::subject(&call.name, &call.arguments).unwrap_or("");
        if call.recovered {
            // Read from the model's text: the server did not parse it.
            const MARK: &str = " (from text)";
            let line = render::tool_begin(&call.name, subject, width.saturating_sub(MARK.len()));
            self.commit(line.with(Role::Dim, MARK));
        } else {
            self.commit(render::tool_begin(&call.name, subject, width));
        }
    }

    /// Takes in one event from the core.
    pub fn event(&mut self, msg: &EventMsg) {
        let width = self.width;
        match msg {
            EventMsg::SessionConfigured(configured) => self.configured(configured),
            EventMsg::AgentChanged { .. }
            | EventMsg::AgentList { .. }
            | EventMsg::Validation(_)
            | EventMsg::Mcp(_)
            | EventMsg::McpList { .. }
            | EventMsg::Subagent(_) => {
                self.agent_event(msg);
            }
            EventMsg::TurnStarted { text } => {
                self.shell = text.starts_with('!');
                self.previewed.clear();
                self.markdown = Markdown::new();
                self.status.state = TurnState::Planning;
            }
            EventMsg::StateChanged { state } => {
                self.status.state = *state;
                self.status.retry = None;
                self.status.held = None;
            }
            EventMsg::HeldText { bytes, .. } => self.status.held = Some(*bytes),
            EventMsg::ReasoningDelta { delta } => {
                self.reasoning
                    .get_or_insert_with(String::new)
                    .push_str(&render::clean(delta));
            }
            EventMsg::ReasoningRecovered { text } => self.recovered_reasoning(text),
            EventMsg::Compacted(compacted) => {
                self.status.used = Some(compacted.after);
                self.status.limit.get_or_insert(compacted.limit);
                self.end_reasoning();
                // After a cut stream it follows the partial text.
                let lines = message_lines(Role::Dim, &compacted.describe(), width);
                self.after_text(lines);
            }
            EventMsg::AssistantDelta { delta } => {
                // What was held may have turned out to be text.
                self.status.held = None;
                self.end_reasoning();
                self.text(&render::clean(delta));
            }
            EventMsg::AssistantMessage(message) => {
                self.end_reasoning();
                self.end_block(if message.tool_calls > 0 {
                    "PLAN"
                } else {
                    "ANSWER"
                });
            }
            EventMsg::ToolCallBegin(call) => self.tool_begin(call),
            EventMsg::ToolCallEnd(end) => self.tool_end(end),
            EventMsg::ApprovalRequest(request) => {
                if request.preview.is_some() {
                    self.previewed.push(request.call_id.clone());
                }
                self.end_reasoning();
                self.end_block("PLAN");
                self.committed.extend(render::approval(request, width));
            }
            EventMsg::TokenUsage(usage) => {
                self.status.used = Some(usage.prompt_tokens + usage.completion_tokens);
            }
            EventMsg::Retry(retry) => self.retry(retry),
            EventMsg::Rewind(report) => {
                self.committed.extend(render::rewind(report, width));
            }
            EventMsg::Turns { turns } => self.committed.extend(render::turns(turns, width)),
            // The app starts the new session with it, after the turn.
            EventMsg::Summary { text } => self.summary = Some(text.clone()),
            EventMsg::ContextReport(report) => {
                // The status line shows what /context just counted, so the
                // two never disagree side by side.
                self.status.used = Some(report.total);
                self.committed.extend(render::context_report(report, width));
            }
            EventMsg::TodoUpdated { items } => {
                self.todos.clone_from(items);
                self.committed.extend(render::todo(items, width));
            }
            EventMsg::ModelChanged { model, limit } => {
                self.status.model.clone_from(model);
                self.status.limit = *limit;
                self.commit(Line::new().with(Role::Dim, format!("model: {model}")));
            }
            EventMsg::ModelList(list) => self.model_list(list, true),
            EventMsg::Warning { message } => self.warning(message),
            EventMsg::Error { message, .. } => self.error(message),
            EventMsg::TurnComplete(complete) => {
                self.status.retry = None;
                self.end_reasoning();
                self.end_block("ANSWER");
                let note = ended_note(complete.status);
                if !note.is_empty() {
                    self.commit(Line::new().with(Role::Warning, note));
                }
                self.status.state = TurnState::Idle;
            }
            EventMsg::PermissionDecision(_) => {}
        }
    }

    /// Takes in the server's model list: the models and the status line's
    /// context length; a server that did not answer keeps the last list
    /// and, with `warn`, says so.
    pub fn model_list(&mut self, list: &crate::protocol::ModelListEvent, warn: bool) {
        self.status.limit = list.limit;
        match &list.error {
            None => {
                self.models = Some(list.models.clone());
                self.providers.clone_from(&list.providers);
            }
            Some(error) if warn => self.warning(&format!(
                "The server did not list its models ({error}); requests will fail until it \
                 answers. Set `base_url` in ~/.config/offcode/offcode.jsonc or OFFCODE_BASE_URL."
            )),
            Some(_) => {}
        }
    }

    /// The live part: reasoning or text still arriving, at `width`.
    pub fn live(&self) -> Vec<Line> {
        let width = self.width;
        // Subagents at work, under their `task` lines.
        let mut lines: Vec<Line> = self
            .subagent_lines()
            .map(|line| render::fit(line, width))
            .collect();
        if let Some(reasoning) = &self.reasoning {
            let last = reasoning.trim_end().lines().last().unwrap_or("");
            let line = Line::new()
                .with(Role::Dim, "thinking: ")
                .with(Role::Dim, last.trim());
            lines.push(render::tail(&line, width));
        }
        let mut markdown = self.markdown.clone();
        for held in &self.held {
            for line in markdown.line(held) {
                lines.extend(render::wrap(&line, width));
            }
        }
        // A table's rows so far, in columns.
        for line in markdown.pending() {
            lines.extend(render::wrap(&line, width));
        }
        if !self.partial.is_empty() {
            lines.push(render::tail(&markdown.peek(&self.partial), width));
        }
        lines
    }

    fn retry(&mut self, retry: &crate::protocol::RetryEvent) {
        let width = self.width;
        self.status.retry = Some((
            std::time::Instant::now() + std::time::Duration::from_millis(retry.delay_ms),
            retry.attempt,
            retry.max_retries,
        ));
        self.end_block("PLAN");
        self.commit(Line::new().with(
            Role::Warning,
            render::truncate(
                &format!(
                    "retry {}/{} in {:.1} s: {}",
                    retry.attempt,
                    retry.max_retries,
                    std::time::Duration::from_millis(retry.delay_ms).as_secs_f64(),
                    render::one_line(&retry.reason)
                ),
                width,
            ),
        ));
    }

    fn tool_end(&mut self, end: &ToolCallEndEvent) {
        let width = self.width;
        self.outputs.push((end.name.clone(), end.output.clone()));
        if self.shell
            && let Some(ToolDisplay::Command { output, .. }) = &end.display
        {
            // The user's own command: its output, failed or not.
            let (mark, role) = if end.outcome.ok() {
                ("  ✓ ", Role::Ok)
            } else {
                ("  ✗ ", Role::Error)
            };
            self.commit(Line::new().with(role, mark).with(
                Role::Text,
                render::truncate(&render::one_line(&end.summary), width.saturating_sub(4)),
            ));
            for line in render::fold(output.trim_end(), SHELL_LINES) {
                self.commit(
                    Line::new()
                        .with(Role::Dim, "    ")
                        .with(Role::Text, render::truncate(&line, width.saturating_sub(4))),
                );
            }
        } else if self.previewed.contains(&end.call_id) {
            // The diff was in the question; the summary is enough.
            let mut end = end.clone();
            end.display = None;
            self.committed
                .extend(render::tool_end(&end, width, self.outputs.len()));
        } else {
            self.committed
                .extend(render::tool_end(end, width, self.outputs.len()));
        }
    }

    /// The whole output of call `number` (1 is the session's first; none:
    /// the last), as `/expand` shows it.
    pub fn expand(&mut self, number: Option<usize>) -> Result<(), String> {
        let count = self.outputs.len();
        let number = number.unwrap_or(count);
        let Some((name, output)) = number.checked_sub(1).and_then(|i| self.outputs.get(i)) else {
            return Err(if count == 0 {
                "No tool has run in this session yet".to_owned()
            } else {
                format!("There is no call {number}: calls 1 to {count} have run")
            });
        };
        let width = self.width;
        let mut lines = vec![
            Line::new()
                .with(Role::Label, format!("OUTPUT {number} "))
                .with(Role::Tool, name.clone()),
        ];
        for line in render::clean(output).lines() {
            for row in render::wrap(&Line::new().with(Role::Text, line), width.saturating_sub(4)) {
                let mut shown = Line::new().with(Role::Dim, "    ");
                shown.spans.extend(row.spans);
                lines.push(shown);
            }
        }
        self.committed.extend(lines);
        Ok(())
    }

    fn text(&mut self, delta: &str) {
        self.partial.push_str(delta);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            let line = line.trim_end_matches(['\n', '\r']).to_owned();
            if self.labelled {
                for rendered in self.markdown.line(&line) {
                    self.commit(rendered);
                }
            } else {
                self.held.push(line);
                if self.held.len() > HOLD_LINES {
                    self.release("ANSWER");
                }
            }
        }
    }

    /// Writes the held lines under `label`.
    fn release(&mut self, label: &str) {
        let held = std::mem::take(&mut self.held);
        // Blank lines before the text are not worth a line each.
        let mut lines = held.iter().skip_while(|l| l.trim().is_empty());
        if !self.labelled
            && let Some(first) = lines.next()
        {
            // The label goes on the first rendered line (alone when the
            // first line starts a table, which comes later).
            let mut rendered = self.markdown.line(first).into_iter();
            let mut line = Line::new().with(Role::Label, format!("{label} "));
            if let Some(first) = rendered.next() {
                line.spans.extend(first.spans);
            }
            self.commit(line);
            for rest in rendered {
                self.commit(rest);
            }
            self.labelled = true;
        }
        for line in lines {
            for rendered in self.markdown.line(line) {
                self.commit(rendered);
            }
        }
    }

    /// The step's text ended: what is left goes out under `label`.
    fn end_block(&mut self, label: &str) {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.held.push(rest);
        }
        // Trailing blank lines are dropped.
        while self.held.last().is_some_and(|l| l.trim().is_empty()) {
            self.held.pop();
        }
        self.release(label);
        // A table that was still being held ends with the text.
        for line in self.markdown.finish() {
            self.commit(line);
        }
        self.labelled = false;
        self.markdown = Markdown::new();
        let deferred = std::mem::take(&mut self.deferred);
        self.committed.extend(deferred);
    }

    /// An error ends what was arriving; worded as headless words it.
    fn error(&mut self, message: &str) {
        self.end_reasoning();
        self.end_block("ANSWER");
        let lines = message_lines(Role::Error, &format!("error: {message}"), self.width);
        self.committed.extend(lines);
    }

    /// A warning about the step's text (cut short, bad UTF-8) comes
    /// before the step ends; it follows the text.
    fn warning(&mut self, message: &str) {
        // As headless prints it, so both read the same.
        let lines = message_lines(Role::Warning, &format!("warning: {message}"), self.width);
        self.after_text(lines);
    }

    /// Lines that must follow the step's text still arriving.
    fn after_text(&mut self, lines: Vec<Line>) {
        if self.held.is_empty() && self.partial.is_empty() {
            self.committed.extend(lines);
        } else {
            self.deferred.extend(lines);
        }
    }

    /// The step's text so far was reasoning: held text folds like
    /// reasoning; text already written out is marked as such.
    fn recovered_reasoning(&mut self, text: &str) {
        self.held.clear();
        self.partial.clear();
        if self.labelled {
            self.labelled = false;
            self.markdown = Markdown::new();
            self.commit(Line::new().with(Role::Dim, "(the text above was the model's reasoning)"));
            text.clone_into(&mut self.last_reasoning);
        } else {
            self.reasoning = Some(render::clean(text));
            self.end_reasoning();
        }
    }

    /// Reasoning ended: it folds into one line; `/think` shows it whole.
    fn end_reasoning(&mut self) {
        if let Some(reasoning) = self.reasoning.take() {
            let lines = reasoning.trim().lines().count();
            if lines > 0 {
                self.commit(Line::new().with(
                    Role::Dim,
                    format!(
                        "thought for {lines} line{} (/think shows it)",
                        if lines == 1 { "" } else { "s" }
                    ),
                ));
            }
            self.last_reasoning = reasoning;
        }
    }
}

mod side;
mod status;

/// What the end of a turn says besides its answer: an abort, a refusal.
fn ended_note(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Aborted => "Aborted; what arrived so far is kept.",
        TurnStatus::Refused => {
            "Not done: a call the work needed was refused, and nothing else changed a file or ran."
        }
        TurnStatus::Done | TurnStatus::Failed | TurnStatus::Incomplete => "",
    }
}

#[cfg(test)]
mod tests;
