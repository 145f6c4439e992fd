//! The interactive session shared by both front ends: the running core,
//! the conversation view, the `/` commands, `!command` and `@path`
//! attachments. [`super::prompt_loop`] drives it with plain lines and
//! [`super::live_turn`] with a live terminal.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::sync::Arc;
use std::time::Duration;

mod rewind;
mod sessions;

use super::complete::COMMANDS;
use super::render::{self, Line, Lines, Palette, Role};
use super::view::{Status, View};
use crate::agent::{self, AgentHandle, AgentSetup};
use crate::config::Environment;
use crate::protocol::{EventMsg, Op, TurnState};
use crate::sandbox::{Error as SandboxError, Sandbox};
use crate::tools::text::Text;

/// Bytes of one `@path` attachment sent to the model.
pub const ATTACH_BYTES: usize = 256 * 1024;

/// What a typed line asks for.
#[derive(Debug, PartialEq)]
pub enum Dispatch {
    /// Nothing more to do.
    Done,
    /// Leave.
    Quit,
    /// Send this to the core and show the turn.
    Turn(Op),
}

/// The running session and what is shown of it.
pub struct App<'a> {
    environment: &'a Environment,
    /// The core.
    pub handle: AgentHandle,
    /// The workspace, for `@path` attachments.
    sandbox: Arc<Sandbox>,
    /// The conversation as lines.
    pub view: View,
    /// Colours on or off.
    pub palette: Palette,
    /// A new session's file, removed at the end if nothing was typed.
    session_file: Option<String>,
    turns: usize,
    /// A prompt refused before it was sent, to put back in the editor.
    pub refused: Option<String>,
    /// A `/revert N` shown and waiting for `y`: the turn and its prompt.
    pending_revert: Option<(usize, String)>,
}

impl<'a> App<'a> {
    /// Starts the core and waits for it to introduce the session.
    pub async fn start(
        environment: &'a Environment,
        setup: AgentSetup,
        palette: Palette,
        width: usize,
    ) -> Self {
        let sandbox = Arc::clone(&setup.sandbox);
        let status = Status {
            agent: "build".to_owned(),
            model: setup.session.model.clone(),
            state: TurnState::Idle,
            used: None,
            limit: None,
            session: setup.session.id.clone(),
            retry: None,
            held: None,
            mcp_down: Vec::new(),
        };
        let mut app = Self {
            environment,
            handle: agent::spawn(setup),
            sandbox,
            view: View::new(status, width),
            palette,
            session_file: None,
            turns: 0,
            refused: None,
            pending_revert: None,
        };
        app.introduce().await;
        // The answer comes whenever the server gives it: the prompt does
        // not wait.
        app.handle.ops.submit(Op::ListModels);
        app
    }

    /// Reads the core's first event and shows where things come from.
    async fn introduce(&mut self) {
        while let Some(event) = self.handle.events.recv().await {
            self.view.event(&event.msg);
            if let EventMsg::SessionConfigured(configured) = &event.msg {
                self.session_file = (!configured.resumed).then(|| configured.path.clone());
                let what = if configured.resumed {
                    format!(
                        "resumed session {} ({} messages)",
                        configured.session_id, configured.restored_messages
                    )
                } else {
                    format!("session {}", configured.session_id)
                };
                self.note(format!(
                    "offcode · {} at {} · {what}",
                    configured.model, configured.base_url
                ));
                if configured.resumed {
                    self.show_transcript(&configured.session_id);
                }
                break;
            }
        }
        self.note(config_sources(self.environment));
        // Start-up warnings (an untrusted project config, no confinement)
        // come next, up to the core's first `Idle`: shown now, not with
        // the first turn.
        let startup = async {
            while let Some(event) = self.handle.events.recv().await {
                if matches!(
                    event.msg,
                    EventMsg::StateChanged {
                        state: TurnState::Idle
                    }
                ) {
                    break;
                }
                self.view.event(&event.msg);
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), startup).await;
        self.note("Type a task and press Enter; /help lists the keys and commands.");
    }

    /// A dim line of our own, wrapped between words to the width.
    pub fn note(&mut self, text: impl Into<String>) {
        let width = self.view.width;
        for line in text.into().lines() {
            for row in render::word_wrap(line, width) {
                self.view.commit(Line::new().with(Role::Dim, row));
            }
        }
    }

    /// An error of our own, worded as headless words one.
    fn error(&mut self, text: impl Into<String>) {
        self.view
            .commit(Line::new().with(Role::Error, format!("error: {}", text.into())));
    }

    /// Writes finished lines to standard output (no live area).
    pub fn print_committed(&mut self) {
        let lines = self.view.take_committed();
        if lines.is_empty() {
            return;
        }
        let mut out = std::io::stdout().lock();
        for line in &lines {
            let _ = writeln!(out, "{}", super::paint::line(self.palette, line));
        }
        let _ = out.flush();
    }

    /// The status line for the prompt, or `hint` in its place.
    pub fn status_line(&self, hint: Option<&'static str>) -> super::input::StatusLine {
        let status = self.view.status.clone();
        let palette = self.palette;
        Box::new(move |width| {
            let line = match hint {
                Some(hint) => status.line_with_notice(width.saturating_sub(1), hint),
                None => status.line(width.saturating_sub(1), ""),
            };
            super::paint::line(palette, &line)
        })
    }

    /// Takes in what the core said between turns (a model list).
    pub fn take_events(&mut self) {
        while let Ok(event) = self.handle.events.try_recv() {
            self.view.event(&event.msg);
        }
    }

    /// Counts a turn (the session is worth keeping).
    pub fn turn_started(&mut self) {
        self.turns += 1;
    }

    /// What `text` asks for; commands run here.
    pub async fn dispatch(&mut self, text: &str) -> Dispatch {
        if let Some(answer) = self.confirm_revert(text) {
            return answer;
        }
        let trimmed = text.trim();
        if let Some(command) = trimmed.strip_prefix('!') {
            let command = command.trim();
            if command.is_empty() {
                self.error("`!` needs a command, like `!ls`");
                return Dispatch::Done;
            }
            return Dispatch::Turn(Op::Shell {
                command: command.to_owned(),
            });
        }
        if !trimmed.starts_with('/') {
            if trimmed.is_empty() {
                return Dispatch::Done;
            }
            return match self.attach(text) {
                Ok(text) => Dispatch::Turn(Op::UserTurn { text }),
                Err(message) => {
                    self.error(message);
                    self.refused = Some(text.to_owned());
                    Dispatch::Done
                }
            };
        }
        let (name, argument) = trimmed
            .split_once(char::is_whitespace)
            .map_or((trimmed, ""), |(n, a)| (n, a.trim()));
        match name {
            "/quit" | "/exit" => return Dispatch::Quit,
            "/help" => self.help(),
            "/models" => return self.models_command(argument).await,
            "/context" => return Dispatch::Turn(Op::Context),
            "/mcp" => return Dispatch::Turn(Op::ListMcp),
            "/agent" if argument.is_empty() => return Dispatch::Turn(Op::ListAgents),
            "/agents" => self.subagents(),
            "/inspect" => self.inspect(argument),
            "/agent" => {
                return Dispatch::Turn(Op::SetAgent {
                    name: Some(argument.to_owned()),
                });
            }
            "/todo" => self.todo(),
            "/expand" => {
                let number = if argument.is_empty() {
                    Ok(None)
                } else {
                    argument.parse::<usize>().map(Some).map_err(|_| {
                        format!(
                            "`/expand` takes a call's number, like `/expand 3`, not `{argument}`"
                        )
                    })
                };
                if let Err(message) = number.and_then(|n| self.view.expand(n)) {
                    self.error(message);
                }
            }
            "/compact" => return Dispatch::Turn(Op::Compact),
            "/init" => {
                let exists = self.sandbox.root().join("AGENTS.md").exists();
                return Dispatch::Turn(Op::UserTurn {
                    text: crate::context::init_prompt(exists),
                });
            }
            "/undo" => return Dispatch::Turn(Op::Undo),
            "/revert" => return self.revert_command(argument),
            "/diff" => return self.diff_command(argument),
            "/fork" => self.fork_command(argument).await,
            "/summarize" | "/summarise" => return Dispatch::Turn(Op::Summarize),
            "/think" => self.think(),
            "/sessions" => self.sessions(),
            "/new" => self.restart(false, None).await,
            "/clear" => self.restart(true, None).await,
            "/resume" => self.resume(argument).await,
            _ => self.error(format!("Unknown command `{name}`; /help lists them")),
        }
        Dispatch::Done
    }

    fn help(&mut self) {
        // Descriptions wrap under themselves, not under the names.
        let room = self.view.width.saturating_sub(13).max(10);
        for (name, about) in COMMANDS {
            for (index, row) in render::word_wrap(about, room).into_iter().enumerate() {
                let lead = if index == 0 {
                    format!("  {name:<10} ")
                } else {
                    " ".repeat(13)
                };
                self.view
                    .commit(Line::new().with(Role::Code, lead).with(Role::Text, row));
            }
        }
        for line in [
            "  !CMD      run a shell command (same checks as the agent's)",
            "  @PATH     attach a workspace file (Tab completes)",
            "Keys: Enter sends · Alt+Enter or Ctrl+J new line · Up/Down history",
            "      Tab completes · Shift+Tab switches the agent (build, plan, …)",
            "      Esc or Ctrl+C stops the agent",
            "      Ctrl+C twice or Ctrl+D leaves",
            "      while the agent works, Enter queues the text for later",
            "Approvals: y allow once · n (or Esc) deny · a allow for this session",
            "           t deny and tell the model why (type, then Enter)",
        ] {
            self.view.commit(Line::new().with(Role::Text, line));
        }
    }

    async fn models_command(&mut self, argument: &str) -> Dispatch {
        let fetched = self.list_models().await;
        if argument.is_empty() {
            let current = self.view.status.model.clone();
            let (Ok(()), Some(models)) = (&fetched, self.view.models.clone()) else {
                let why = fetched.err().unwrap_or_default();
                self.error(format!("Could not list the models: {why}"));
                return Dispatch::Done;
            };
            let lines = render::models(&models, &self.view.providers, &current, self.view.width);
            for line in lines {
                self.view.commit(line);
            }
            self.note("Switch with /models ID.");
            return Dispatch::Done;
        }
        if let Some(models) = &self.view.models
            && !models.iter().any(|m| m.id == argument)
        {
            self.error(format!(
                "No server serves `{argument}`; /models lists what they do"
            ));
            return Dispatch::Done;
        }
        Dispatch::Turn(Op::SetModel {
            model: argument.to_owned(),
        })
    }

    /// Asks the core for the server's models and waits for the answer;
    /// what else arrives meanwhile is shown. A server that does not
    /// answer leaves the last list and says why.
    async fn list_models(&mut self) -> Result<(), String> {
        let asked = self.handle.ops.submit(Op::ListModels);
        while let Some(event) = self.handle.events.recv().await {
            match &event.msg {
                EventMsg::ModelList(list) if event.id == asked => {
                    self.view.model_list(list, false);
                    return list.error.clone().map_or(Ok(()), Err);
                }
                msg => self.view.event(msg),
            }
        }
        Err("the core stopped".to_owned())
    }

    fn todo(&mut self) {
        if self.view.todos.is_empty() {
            self.note("No todo list yet; the agent keeps one for tasks of several steps.");
            return;
        }
        let lines = render::todo(&self.view.todos, self.view.width);
        for line in lines {
            self.view.commit(line);
        }
    }

    fn think(&mut self) {
        if self.view.last_reasoning.trim().is_empty() {
            self.note("No reasoning yet in this session.");
            return;
        }
        let reasoning = self.view.last_reasoning.clone();
        for line in reasoning.trim().lines() {
            self.note(line.to_owned());
        }
    }

    /// `/new`, `/clear` and `/resume`: the core starts over with a new
    /// session, or with `session`.
    async fn restart(&mut self, clear: bool, session: Option<&str>) {
        let model = self.view.status.model.clone();
        let start = crate::startup::Start {
            model: Some(model),
            session: session.map(str::to_owned),
            resume_latest: false,
            // A resumed session goes on with its own agent.
            agent: session.is_none().then(|| self.view.status.agent.clone()),
            fork: None,
            prompt: None,
        };
        let prepared =
            crate::startup::prepare(self.environment, &start, crate::protocol::Decider::User);
        let setup = match prepared {
            Ok(setup) => setup,
            Err(failure) => {
                let what = if session.is_some() {
                    "resume the session"
                } else {
                    "start a new session"
                };
                self.error(format!("Could not {what}: {}", failure.message));
                return;
            }
        };
        self.stop().await;
        if clear {
            super::paint::clear_screen(&mut std::io::stdout().lock());
        }
        self.handle = agent::spawn(setup);
        self.turns = 0;
        self.view.status.used = None;
        self.view.last_reasoning.clear();
        self.introduce().await;
    }

    /// Stops the core; a new session nobody typed into is removed.
    pub async fn stop(&mut self) {
        self.handle.stop_servers().await;
        self.handle.ops.submit(Op::Shutdown);
        while self.handle.events.recv().await.is_some() {}
        if let (0, Some(path)) = (self.turns, self.session_file.take()) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// `text` with each `@path` (inside the workspace) followed by the
    /// file's content.
    pub fn attach(&mut self, text: &str) -> Result<String, String> {
        let mut attached = String::new();
        let mut seen = Vec::new();
        for word in text.split_whitespace() {
            let Some(path) = word.strip_prefix('@') else {
                continue;
            };
            let path = path.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '，', '。']);
            if path.is_empty() || seen.contains(&path) {
                continue;
            }
            seen.push(path);
            let file = match self.sandbox.open_file(path, rustix::fs::OFlags::empty()) {
                Ok((fd, _)) => std::fs::File::from(fd),
                // `@alice`, `@types/node`, `@src/`: words, not attachments.
                Err(
                    SandboxError::NotFound { .. }
                    | SandboxError::NotADirectory { .. }
                    | SandboxError::IsADirectory { .. }
                    | SandboxError::Invalid { .. },
                ) => continue,
                Err(error) => return Err(format!("Cannot attach `@{path}`: {error}")),
            };
            let mut content = Vec::new();
            let limit = u64::try_from(ATTACH_BYTES).unwrap_or(u64::MAX) + 1;
            std::io::Read::take(file, limit)
                .read_to_end(&mut content)
                .map_err(|e| format!("Cannot attach `@{path}`: {e}"))?;
            let truncated = content.len() > ATTACH_BYTES;
            content.truncate(ATTACH_BYTES);
            if truncated {
                // A character cut in two at the limit is not worth a U+FFFD.
                let keep = match std::str::from_utf8(&content) {
                    Err(error) if error.error_len().is_none() => error.valid_up_to(),
                    _ => content.len(),
                };
                content.truncate(keep);
            }
            let (content, encoding) = match crate::tools::text::decode(&content) {
                Text::Binary => {
                    return Err(format!(
                        "Cannot attach `@{path}`: it is a binary file (the model reads text)"
                    ));
                }
                Text::Utf8(text) => (text, String::new()),
                Text::Decoded { text, encoding } => {
                    self.note(format!(
                        "`@{path}` is {encoding} text, not UTF-8: attached decoded"
                    ));
                    (text, format!(" encoding=\"{encoding}\""))
                }
            };
            let note = if truncated {
                "\n[attachment truncated]"
            } else {
                ""
            };
            let _ = write!(
                attached,
                "\n\n<file path=\"{path}\"{encoding}>\n{content}{note}\n</file>"
            );
        }
        Ok(format!("{}{attached}", text.trim_end()))
    }
}

/// `config: ~/.config/offcode/offcode.jsonc, ./offcode.jsonc` or that none
/// was found.
fn config_sources(environment: &Environment) -> String {
    let loaded: Vec<String> = crate::config::candidate_files(environment)
        .into_iter()
        .filter(|path| path.is_file())
        .map(|path| {
            crate::config::Loaded::describe_file(
                &crate::config::ConfigFile { path, loaded: true },
                &environment.cwd,
            )
        })
        .collect();
    if loaded.is_empty() {
        "config: no files (defaults and environment); `offcode config` shows every value".to_owned()
    } else {
        format!("config: {}", loaded.join(", "))
    }
}

/// Waits up to `limit` for the core's answer to a quick op (a model
/// switch, a context report), showing what arrives.
pub async fn settle(app: &mut App<'_>, asked: crate::protocol::SubmissionId, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, app.handle.events.recv()).await {
        app.view.event(&event.msg);
        if answers_quick_op(&event.msg) && event.id == asked {
            break;
        }
    }
}

/// Whether `msg` is the core's answer to a quick op (or its refusal), which
/// ends the wait for it. One left out made its op wait the whole limit:
/// `/mcp` froze the prompt for 5 s every time.
fn answers_quick_op(msg: &EventMsg) -> bool {
    matches!(
        msg,
        EventMsg::ModelChanged { .. }
            | EventMsg::AgentChanged { .. }
            | EventMsg::AgentList { .. }
            | EventMsg::McpList { .. }
            | EventMsg::ContextReport(_)
            | EventMsg::Rewind(_)
            | EventMsg::Turns { .. }
            | EventMsg::Warning { .. }
            | EventMsg::Error { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mcp_list_ends_the_wait_for_its_op_and_news_do_not() {
        assert!(answers_quick_op(&EventMsg::McpList {
            servers: Vec::new()
        }));
        assert!(!answers_quick_op(&EventMsg::AssistantDelta {
            delta: String::new()
        }));
    }
}
