//! `offcode run`: one task without the terminal UI, as text or JSON lines.
//!
//! It consumes the same events as the UI. Text mode prints the final answer
//! on stdout and progress on stderr; when stdout is a terminal, answer text
//! streams as it arrives. `--json` prints every event as one JSON object per
//! line. Approval requests are answered here: yes with `--yes`, else no.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use serde_json::Value;

use crate::agent::{self, AgentSetup};
use crate::cancel::Interrupts;
use crate::cli::RunArgs;
use crate::config::Environment;
use crate::failure::{EXIT_FAILED, EXIT_INCOMPLETE, EXIT_REFUSED, EXIT_USAGE, Failure};
use crate::protocol::{
    ApprovalDecision, ApprovalRequestEvent, Event, EventMsg, Mandate, McpState, Op, TurnStatus,
};
use crate::startup::{self, Start, runtime};
// What tools, servers and the model wrote is shown with its control
// characters neutralised: an escape sequence in it must not reach the
// terminal.
use crate::stdio::read_stdin;
use crate::ui::render::{Role, one_line};

mod waiting;

use waiting::Waiting;

/// Runs one headless task; returns the exit status.
pub fn run(args: &RunArgs, environment: &Environment) -> Result<u8, Failure> {
    let prompt = read_prompt(&args.prompt)?;
    // Checked before the work, so its answer has somewhere to go.
    if let Some(file) = &args.output_last_message {
        let folder = file.parent().filter(|p| !p.as_os_str().is_empty());
        if file.is_dir() || folder.is_some_and(|folder| !folder.is_dir()) {
            return Err(Failure::message(
                format!(
                    "Invalid value for --output-last-message: `{}` is not a file in an existing folder",
                    file.display()
                ),
                EXIT_USAGE,
            ));
        }
    }
    let setup = startup::prepare(
        environment,
        &Start::from(&args.start),
        crate::protocol::Decider::Headless,
    )?;
    let runtime = runtime()?;
    let printer = Printer::new(args.json, environment);
    let last = args.output_last_message.as_deref();
    Ok(runtime.block_on(drive(setup, prompt, (args.yes, last), printer)))
}

/// `--output-last-message`: the model's last message written to `file`
/// whole (beside it first, then renamed over it).
fn write_last_message(file: &std::path::Path, text: &str) -> std::io::Result<()> {
    let aside = file.with_file_name(format!(
        ".{}.offcode-{}.tmp",
        file.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let written = std::fs::write(&aside, format!("{}\n", text.trim_end()))
        .and_then(|()| std::fs::rename(&aside, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    written
}

fn read_prompt(argument: &str) -> Result<String, Failure> {
    let prompt = if argument == "-" {
        read_stdin()?
    } else {
        argument.to_owned()
    };
    if prompt.trim().is_empty() {
        return Err(Failure::message("The prompt is empty", EXIT_USAGE)
            .with_hint("Pass the task as an argument, or `-` to read it from standard input"));
    }
    Ok(prompt)
}

async fn drive(
    setup: AgentSetup,
    prompt: String,
    (yes, last): (bool, Option<&std::path::Path>),
    mut printer: Printer,
) -> u8 {
    let mut waiting = Waiting::new(
        setup.client.base_url(),
        Duration::from_millis(setup.config.timeouts.idle_ms),
    );
    let mut handle = agent::spawn(setup);
    handle.ops.submit(Op::UserTurn { text: prompt });
    let mut interrupted = false;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut interrupts = Interrupts::listen();
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if let Some(note) = waiting.note() {
                    printer.note(&note);
                }
            }
            event = handle.events.recv() => {
                let Some(event) = event else { return EXIT_FAILED };
                waiting.event(&event.msg);
                if let EventMsg::ApprovalRequest(request) = &event.msg {
                    let (decision, reason) = headless_answer(request, yes);
                    handle.ops.submit(Op::Approve { call_id: request.call_id.clone(), decision, reason });
                }
                printer.print(&event);
                if let EventMsg::TurnComplete(complete) = &event.msg {
                    if let (Some(file), Some(text)) = (last, &complete.last_message)
                        && let Err(error) = write_last_message(file, text)
                    {
                        printer.note(&format!(
                            "Could not write the last message to `{}`: {error}",
                            file.display()
                        ));
                    }
                    handle.ops.submit(Op::Shutdown);
                    handle.stop_servers().await;
                    return match complete.status {
                        TurnStatus::Done => 0,
                        TurnStatus::Failed | TurnStatus::Aborted => EXIT_FAILED,
                        TurnStatus::Incomplete => EXIT_INCOMPLETE,
                        TurnStatus::Refused => EXIT_REFUSED,
                    };
                }
            }
            signal = interrupts.next() => {
                if signal.is_none() || interrupted {
                    handle.stop_servers().await;
                    return EXIT_FAILED;
                }
                interrupted = true;
                printer.note("Interrupting… (Ctrl+C again to quit at once)");
                handle.ops.submit(Op::Interrupt);
            }
        }
    }
}

/// With no person to ask: `--yes` approves ordinary asks; dangerous calls
/// and questions the managed policy demands are always refused.
fn headless_answer(
    request: &ApprovalRequestEvent,
    yes: bool,
) -> (ApprovalDecision, Option<String>) {
    let refusal = if request.dangerous {
        format!(
            "it is dangerous ({}) and a headless run never approves dangerous commands, even with --yes",
            request.dangers.join("; ")
        )
    } else if request.mandate == Some(Mandate::ManagedPolicy) {
        format!(
            "the managed policy requires a person's approval ({}); --yes does not give it",
            request.rule
        )
    } else if request.mandate.is_some() {
        format!(
            "it needs a person's answer ({}); --yes does not give it",
            request.rule
        )
    } else if !yes {
        format!(
            "it needs approval ({}) and this headless run was started without --yes",
            request.rule
        )
    } else {
        return (ApprovalDecision::AllowOnce, None);
    };
    (ApprovalDecision::Deny, Some(refusal))
}

/// Codes that start text in a style on stderr, and `reset` that ends
/// it; all empty when colour is off. The painter makes them, from the
/// UI's palette.
#[derive(Clone)]
struct Style {
    dim: String,
    cyan: String,
    green: String,
    red: String,
    yellow: String,
    reset: String,
}

impl Style {
    /// `✓` in green for a call that worked, `✗` in red for one that did not.
    fn mark(&self, ok: bool) -> (&'static str, &str) {
        if ok {
            ("✓", &self.green)
        } else {
            ("✗", &self.red)
        }
    }

    fn new(enabled: bool) -> Self {
        let palette = crate::ui::render::Palette::new(enabled);
        let start = |role| crate::ui::paint::role_codes(palette, role).0;
        Self {
            dim: start(Role::Dim),
            cyan: start(Role::Tool),
            green: start(Role::Ok),
            red: start(Role::Error),
            yellow: start(Role::Warning),
            reset: crate::ui::paint::role_codes(palette, Role::Dim).1,
        }
    }
}

/// Writes events out, as JSON lines or as text. Write errors (a closed
/// pipe) are ignored so the run still finishes and is saved.
enum Printer {
    Json { session_id: String },
    Text(TextPrinter),
}

impl Printer {
    fn new(json: bool, environment: &Environment) -> Self {
        if json {
            return Self::Json {
                session_id: String::new(),
            };
        }
        let stderr_tty = std::io::stderr().is_terminal();
        let colour = stderr_tty
            && environment.var("NO_COLOR").is_none()
            && environment.var("OFFCODE_NO_COLOR").is_none();
        Self::Text(TextPrinter {
            live: std::io::stdout().is_terminal(),
            show_reasoning: stderr_tty,
            in_reasoning: false,
            pending: String::new(),
            style: Style::new(colour),
        })
    }

    fn note(&self, text: &str) {
        let style = match self {
            Self::Json { .. } => Style::new(false),
            Self::Text(text) => text.style.clone(),
        };
        let _ = writeln!(std::io::stderr(), "{}{text}{}", style.dim, style.reset);
    }

    fn print(&mut self, event: &Event) {
        match self {
            Self::Json { session_id } => {
                if let EventMsg::SessionConfigured(configured) = &event.msg {
                    session_id.clone_from(&configured.session_id);
                }
                let Ok(Value::Object(mut object)) = serde_json::to_value(event) else {
                    return;
                };
                object.insert("session_id".to_owned(), Value::String(session_id.clone()));
                let mut stdout = std::io::stdout().lock();
                let _ = serde_json::to_writer(&mut stdout, &object);
                let _ = stdout.write_all(b"\n");
                let _ = stdout.flush();
            }
            Self::Text(printer) => printer.print(&event.msg),
        }
    }
}

/// Text mode: the answer on stdout, progress on stderr.
struct TextPrinter {
    /// Stream answer text live to stdout (it is a terminal).
    live: bool,
    /// Show reasoning (stderr is a terminal).
    show_reasoning: bool,
    /// Reasoning is being printed.
    in_reasoning: bool,
    /// Text of the current step, when not streamed live.
    pending: String,
    style: Style,
}

impl TextPrinter {
    /// `→ validate cargo test (Cargo.toml)`, then `✓ passed in 3.1 s` or
    /// `✗ 2 failed` with the start of what failed.
    fn validation(&mut self, event: &crate::protocol::ValidationEvent) {
        use crate::protocol::ValidationStatus;
        let s = self.style.clone();
        let line = match event.status {
            ValidationStatus::Running => format!(
                "{}→ validate{} {} {}({}){}",
                s.cyan, s.reset, event.command, s.dim, event.from, s.reset
            ),
            ValidationStatus::Passed => format!("  {}✓{} {}", s.green, s.reset, event.summary),
            ValidationStatus::Failed => {
                let mut text = format!(
                    "  {}✗{} {} (attempt {}; sent to the model)",
                    s.red, s.reset, event.summary, event.attempt
                );
                for line in event.output.lines().take(8) {
                    let _ = write!(text, "\n    {}{line}{}", s.dim, s.reset);
                }
                text
            }
            ValidationStatus::NotRun => {
                format!("  {}⊘ not run:{} {}", s.yellow, s.reset, event.summary)
            }
        };
        self.progress(&line);
    }

    /// A subagent's calls and problems, indented under its `task` line.
    fn subagent(&mut self, sub: &crate::protocol::SubagentEvent) {
        let s = self.style.clone();
        let line = match sub.event.as_ref() {
            EventMsg::ToolCallBegin(call) => format!(
                "  │ {}{}{} {}→ {}{} {}",
                s.dim,
                sub.agent,
                s.reset,
                s.cyan,
                call.name,
                s.reset,
                describe_arguments(&call.name, &call.arguments)
            ),
            EventMsg::ToolCallEnd(end) => {
                let (mark, colour) = s.mark(end.outcome.ok());
                format!("  │   {colour}{mark}{} {}", s.reset, one_line(&end.summary))
            }
            EventMsg::Warning { message } | EventMsg::Error { message, .. } => {
                format!("  │ {}{}: {message}{}", s.yellow, sub.agent, s.reset)
            }
            _ => return,
        };
        self.progress(&line);
    }

    fn mcp(&mut self, event: &crate::protocol::McpStatusEvent) {
        let s = self.style.clone();
        let colour = match event.state {
            McpState::Failed | McpState::Restarting => s.yellow,
            _ => s.dim,
        };
        let detail = if event.detail.is_empty() {
            String::new()
        } else {
            format!(": {}", one_line(&event.detail))
        };
        self.progress(&format!(
            "{colour}MCP server `{}` {}{detail}{}",
            event.server,
            event.state.words(),
            s.reset
        ));
    }

    fn progress(&mut self, line: &str) {
        self.end_reasoning();
        let _ = writeln!(std::io::stderr(), "{line}");
    }

    fn end_reasoning(&mut self) {
        if self.in_reasoning {
            self.in_reasoning = false;
            let _ = writeln!(std::io::stderr(), "{}", self.style.reset);
        }
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one arm per event, most of them one line"
    )]
    fn print(&mut self, msg: &EventMsg) {
        let s = self.style.clone();
        match msg {
            EventMsg::SessionConfigured(c) => {
                let resumed = if c.resumed { " (resumed)" } else { "" };
                self.progress(&format!(
                    "{}offcode · {} · {} · session {}{resumed}{}",
                    s.dim, c.agent, c.model, c.session_id, s.reset
                ));
            }
            EventMsg::ReasoningDelta { delta } => self.reasoning(delta),
            EventMsg::Compacted(compacted) => {
                self.progress(&format!("{}{}{}", s.dim, compacted.describe(), s.reset));
            }
            EventMsg::ReasoningRecovered { text } => {
                if self.live {
                    self.progress(&format!(
                        "{}(the text above was the model's reasoning){}",
                        s.dim, s.reset
                    ));
                } else {
                    self.pending.clear();
                    self.reasoning(text);
                }
            }
            EventMsg::AssistantDelta { delta } => self.answer_delta(delta),
            EventMsg::AssistantMessage(message) => self.step_end(message),
            EventMsg::ToolCallBegin(call) => self.progress(&format!(
                "{}→ {}{}{} {}",
                s.cyan,
                call.name,
                s.reset,
                if call.recovered { " (from text)" } else { "" },
                describe_arguments(&call.name, &call.arguments)
            )),
            EventMsg::ToolCallEnd(end) => {
                let (mark, colour) = s.mark(end.outcome.ok());
                self.progress(&format!(
                    "  {colour}{mark}{} {}",
                    s.reset,
                    one_line(&end.summary)
                ));
            }
            EventMsg::PermissionDecision(decision) => {
                let verb = match decision.decision {
                    ApprovalDecision::AllowOnce | ApprovalDecision::AllowSession => "approved",
                    ApprovalDecision::Deny => "denied",
                };
                self.progress(&format!(
                    "  {}{verb}: {} ({}){}",
                    s.dim, decision.tool, decision.rule, s.reset
                ));
            }
            EventMsg::Retry(retry) => self.progress(&format!(
                "{}Retrying in {:.1} s (attempt {}/{}): {}{}",
                s.yellow,
                std::time::Duration::from_millis(retry.delay_ms).as_secs_f64(),
                retry.attempt,
                retry.max_retries,
                retry.reason,
                s.reset
            )),
            EventMsg::ModelChanged { model, .. } => {
                self.progress(&format!("{}model: {model}{}", s.dim, s.reset));
            }
            EventMsg::Validation(event) => self.validation(event),
            EventMsg::Subagent(sub) => self.subagent(sub),
            EventMsg::Mcp(event) => self.mcp(event),
            EventMsg::AgentChanged { agent, model } => {
                self.progress(&format!("{}agent: {agent} · {model}{}", s.dim, s.reset));
            }
            EventMsg::TodoUpdated { items } => {
                for line in crate::tools::todo::checklist(items).lines() {
                    self.progress(&format!("  {}{line}{}", s.dim, s.reset));
                }
            }
            EventMsg::HeldText { bytes, secs } => self.progress(&format!(
                "{}The model is writing what may be a tool call: {} in {secs} s so far \
                 (shown or run when it ends; Ctrl+C stops){}",
                s.dim,
                crate::protocol::format_size(*bytes as u64),
                s.reset
            )),
            EventMsg::Warning { message } => {
                self.progress(&format!("{}warning:{} {message}", s.yellow, s.reset));
            }
            EventMsg::Error { message, .. } => {
                self.flush_partial();
                self.progress(&format!("{}error:{} {message}", s.red, s.reset));
            }
            EventMsg::TurnComplete(complete) => {
                self.turn_end(complete.status, complete.last_message.as_deref());
            }
            EventMsg::TurnStarted { .. }
            | EventMsg::StateChanged { .. }
            | EventMsg::ApprovalRequest(_)
            | EventMsg::ContextReport(_)
            | EventMsg::Rewind(_)
            | EventMsg::Turns { .. }
            | EventMsg::Summary { .. }
            | EventMsg::ModelList(_)
            | EventMsg::AgentList { .. }
            | EventMsg::McpList { .. }
            | EventMsg::TokenUsage(_) => {}
        }
    }

    fn reasoning(&mut self, delta: &str) {
        if !self.show_reasoning {
            return;
        }
        let mut err = std::io::stderr().lock();
        if !self.in_reasoning {
            self.in_reasoning = true;
            let _ = write!(err, "{}", self.style.dim);
        }
        let _ = write!(err, "{delta}");
    }

    fn answer_delta(&mut self, delta: &str) {
        self.end_reasoning();
        if self.live {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(delta.as_bytes());
            let _ = out.flush();
        } else {
            self.pending.push_str(delta);
        }
    }

    fn step_end(&mut self, message: &crate::protocol::AssistantMessageEvent) {
        self.end_reasoning();
        if self.live && !message.text.is_empty() && !message.text.ends_with('\n') {
            let _ = writeln!(std::io::stdout());
        }
        if message.tool_calls == 0 && !self.live && !self.pending.ends_with('\n') {
            // One answer to a line: a turn that ends undone shows each.
            self.pending.push('\n');
        }
        if message.tool_calls > 0 {
            // Text before tool calls is progress, not the answer.
            let plan = std::mem::take(&mut self.pending);
            if !self.live && !plan.trim().is_empty() {
                let _ = writeln!(std::io::stderr(), "{}", plan.trim_end());
            }
        }
    }

    fn turn_end(&mut self, status: TurnStatus, last_message: Option<&str>) {
        self.end_reasoning();
        match status {
            TurnStatus::Done => self.answer(last_message),
            TurnStatus::Failed => self.flush_partial(),
            TurnStatus::Incomplete => {
                self.flush_partial();
                self.progress(&format!(
                    "{}Not done: the model ended without doing what the task needed; the warning above says what (exit {EXIT_INCOMPLETE}){}",
                    self.style.yellow, self.style.reset
                ));
            }
            TurnStatus::Refused => {
                // The model's words still go to stdout: they may say why.
                self.answer(last_message);
                self.progress(&format!(
                    "{}Not done: a call the work needed was refused (a rule, the managed policy or a person) and nothing else changed a file or ran (exit {EXIT_REFUSED}){}",
                    self.style.yellow, self.style.reset
                ));
            }
            TurnStatus::Aborted => {
                self.flush_partial();
                self.progress(&format!(
                    "{}Interrupted; the partial answer is saved in the session{}",
                    self.style.dim, self.style.reset
                ));
            }
        }
    }

    /// The final answer on stdout, when it was not streamed there: not one
    /// the model was told to redo, or that was set aside (the warnings
    /// said so).
    fn answer(&mut self, last_message: Option<&str>) {
        let pending = std::mem::take(&mut self.pending);
        if self.live {
            return;
        }
        let text = last_message.map_or(pending, str::to_owned);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.trim_end().as_bytes());
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }

    /// Shows text that will not become an answer (the turn failed) on
    /// stderr, so it is seen but stdout stays clean.
    fn flush_partial(&mut self) {
        let partial = std::mem::take(&mut self.pending);
        if !partial.trim().is_empty() {
            self.progress(partial.trim_end());
        }
    }
}

/// A one-line view of a call's arguments.
fn describe_arguments(tool: &str, arguments: &Value) -> String {
    let text =
        crate::tools::subject(tool, arguments).map_or_else(|| arguments.to_string(), str::to_owned);
    let line = text.lines().next().unwrap_or_default();
    let mut shown: String = one_line(line).chars().take(100).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    shown
}
