//! The status line: the agent, the model, what the core is doing, the
//! context used, servers down and the session, fitted to a width by
//! dropping whole fields.

use unicode_width::UnicodeWidthStr;

use super::render::{self, Line, Lines, Role};
use super::tokens;
use crate::protocol::TurnState;

/// What the status line shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The agent profile.
    pub agent: String,
    /// The model requests go to.
    pub model: String,
    /// What the core is doing.
    pub state: TurnState,
    /// Tokens in the context after the last request.
    pub used: Option<u64>,
    /// The model's context length, when the server says.
    pub limit: Option<u64>,
    /// The session id.
    pub session: String,
    /// A retry's time, number and allowed number, while one is waited for.
    pub retry: Option<(std::time::Instant, u32, u32)>,
    /// Bytes the model has written that are held as a possible call.
    pub held: Option<usize>,
    /// MCP servers that are failed or restarting.
    pub mcp_down: Vec<String>,
}

impl Default for Status {
    /// Nothing known yet, no turn running.
    fn default() -> Self {
        Self {
            agent: String::new(),
            model: String::new(),
            state: crate::protocol::TurnState::Idle,
            used: None,
            limit: None,
            session: String::new(),
            retry: None,
            held: None,
            mcp_down: Vec::new(),
        }
    }
}

impl Status {
    /// The status line at `width` columns; `spinner` marks work going on.
    pub fn line(&self, width: usize, spinner: &str) -> Line {
        let countdown;
        let state = match self.state {
            _ if self.retry.is_some() => {
                let (at, attempt, most) = self.retry.unwrap_or((std::time::Instant::now(), 0, 0));
                let left = at.saturating_duration_since(std::time::Instant::now());
                countdown = format!(
                    "retry {attempt}/{most} in {} s (Esc cancels)",
                    left.as_secs() + 1
                );
                countdown.as_str()
            }
            TurnState::Idle | TurnState::Done | TurnState::Error => "ready",
            TurnState::Planning => "waiting for the model",
            TurnState::ModelGenerating if self.held.is_some() => {
                countdown = format!(
                    "writing a call? {} held",
                    crate::protocol::format_size(self.held.unwrap_or(0) as u64)
                );
                countdown.as_str()
            }
            TurnState::ModelGenerating => "generating",
            TurnState::ToolRunning => "running tool",
            TurnState::AwaitingPermission => "awaiting approval",
        };
        // Each field with the order it goes in when the line is too narrow
        // (0 stays): whole fields go, none is cut half-way (at 40 columns
        // the context was cut to `32.8k…`).
        let mut fields: Vec<(u8, String)> = vec![
            (1, self.agent.clone()),
            (3, self.model.clone()),
            (0, state.to_owned()),
        ];
        if let Some(context) = self.context() {
            fields.push((4, context));
        }
        if !self.mcp_down.is_empty() {
            fields.push((2, format!("MCP down: {}", self.mcp_down.join(", "))));
        }
        fields.push((5, self.session.clone()));
        let lead = if spinner.is_empty() {
            String::new()
        } else {
            format!("{spinner} ")
        };
        loop {
            let parts: Vec<&str> = fields.iter().map(|(_, text)| text.as_str()).collect();
            let text = format!("{lead}{}", parts.join(" · "));
            let last = fields
                .iter()
                .enumerate()
                .filter(|(_, (rank, _))| *rank > 0)
                .max_by_key(|(_, (rank, _))| *rank)
                .map(|(at, _)| at);
            match last {
                Some(at) if text.width() > width => {
                    fields.remove(at);
                }
                _ => return Line::new().with(Role::Dim, render::truncate(&text, width)),
            }
        }
    }

    /// The line with `notice` (what a key just did) after it: the notice
    /// stays whole, and the status gives up its fields to make room, down
    /// to its state; only a notice wider than the line is cut.
    pub fn line_with_notice(&self, width: usize, notice: &str) -> Line {
        let notice = render::truncate(notice, width);
        let room = width.saturating_sub(notice.width() + 3);
        let status = self.line(room, "");
        if room < "ready".len() || status.plain().is_empty() {
            return Line::new().with(Role::Warning, notice);
        }
        status.with(Role::Dim, " · ").with(Role::Warning, notice)
    }

    /// `1.2k/32.8k (4%)`, or `1.2k` when the limit is unknown.
    pub fn context(&self) -> Option<String> {
        let used = self.used?;
        Some(match self.limit {
            Some(limit) if limit > 0 => format!(
                "{}/{} ({}%)",
                tokens(used),
                tokens(limit),
                used.saturating_mul(100) / limit
            ),
            _ => format!("{} tokens", tokens(used)),
        })
    }
}
