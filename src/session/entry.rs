//! What one line of a session file holds.

use serde::{Deserialize, Serialize};

use crate::protocol::{ApprovalDecision, Decider, TodoItem, TokenUsage, TurnStatus};

/// One line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Unique within the session.
    pub id: String,
    /// The entry this one follows (the tree's edge); `None` for the first.
    pub parent_id: Option<String>,
    /// UTC time, RFC 3339.
    pub ts: String,
    /// What happened.
    #[serde(flatten)]
    pub body: EntryBody,
}

/// The payload of an [`Entry`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EntryBody {
    /// The first line: what the session is.
    Session(Meta),
    /// A conversation message.
    Message {
        /// The message.
        message: Message,
    },
    /// The model was switched.
    ModelChange {
        /// The model's id.
        model: String,
    },
    /// A validation command ran.
    Validation {
        /// The command.
        command: String,
        /// Whether it passed.
        ok: bool,
        /// `passed in 3.1 s`, `2 failed`, ...
        summary: String,
    },
    /// What a subagent was given besides its task: kept so `/inspect`
    /// shows its whole context.
    Context {
        /// The system message as sent.
        system: String,
        /// The workspace block that opens the first user message.
        workspace: String,
        /// The tools offered.
        tools: Vec<String>,
    },
    /// Something happened to an MCP server: started, failed, restarting,
    /// its tools changed.
    Mcp {
        /// The server's name in the config.
        server: String,
        /// Where it stands now.
        state: crate::protocol::McpState,
        /// Why, or what it offers.
        detail: String,
    },
    /// The session's name, written by the hidden `title` agent.
    Title {
        /// The title.
        title: String,
    },
    /// The agent profile was switched.
    AgentChange {
        /// The agent's name.
        agent: String,
    },
    /// Token counts of one request.
    Usage(TokenUsage),
    /// A permission question and its answer.
    Permission {
        /// The call.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// A short form of the arguments (the command line, the path).
        #[serde(default)]
        summary: String,
        /// The call was in the dangerous class.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dangerous: bool,
        /// The answer.
        decision: ApprovalDecision,
        /// Who decided.
        by: Decider,
        /// The rule or reason behind it.
        rule: String,
        /// Rules an "allow for this session" answer added.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allowed: Vec<AllowedRule>,
    },
    /// The todo list as the agent last wrote it.
    Todo {
        /// The list.
        items: Vec<TodoItem>,
    },
    /// The context was compacted: requests from now on carry `summary`
    /// in place of the messages before `keep_from`, and tool outputs of
    /// messages before `prune_before` as a placeholder. The messages
    /// themselves stay in the file.
    Compaction(Compaction),
    /// A step that may have changed files: the workspace's checkpoints
    /// around it (the checkpoint store under the data dir keeps them).
    Checkpoint {
        /// The workspace's checkpoint before the step (a manifest's hash).
        before: String,
        /// And after it.
        after: String,
        /// What ran: a tool's name, `shell` (`!cmd`) or `validate`.
        tool: String,
        /// The tool call, when it was one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// The step was cut short (offcode killed while it ran): `after`
        /// is the workspace as the next start found it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        found_later: bool,
    },
    /// `/undo` took back the file changes of the step recorded by the
    /// `checkpoint` entry `step`.
    Undo {
        /// That entry's id.
        step: String,
        /// The files put back.
        restored: Vec<String>,
        /// The files left as they were: changed by hand since.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kept: Vec<String>,
    },
    /// The session was taken back to before turn `to_turn`: this entry's
    /// parent is the last entry before that turn, so the conversation goes
    /// on from there.
    Revert {
        /// The turn (1 is the first).
        to_turn: usize,
        /// The files put back.
        restored: Vec<String>,
        /// The files left as they were: changed by hand since.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kept: Vec<String>,
    },
    /// A small model's answer was set aside and the same asked again.
    /// This entry's parent is the entry before that answer: the answer
    /// stays in the file, off the conversation's branch, also after a
    /// crash.
    SetAside {
        /// What was wrong with it.
        why: String,
    },
    /// A turn ended.
    TurnEnd {
        /// How the turn ended.
        status: TurnStatus,
    },
    /// An error ended a turn.
    Error {
        /// The message.
        message: String,
    },
}

/// How requests shorten the history; see [`EntryBody::Compaction`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// What the left-out messages said, written by the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Index of the first message sent as it is.
    pub keep_from: usize,
    /// Tool outputs of messages before this index are left out.
    pub prune_before: usize,
}

/// A rule the user allowed for the rest of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowedRule {
    /// The permission key (`bash`, `edit`).
    pub permission: String,
    /// The pattern (`cargo test *`).
    pub pattern: String,
}

/// Session metadata (first line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// File format version.
    pub version: u32,
    /// The session id.
    pub session_id: String,
    /// The workspace directory.
    pub cwd: String,
    /// The model at creation.
    pub model: String,
    /// The agent profile.
    pub agent: String,
    /// The endpoint at creation.
    pub base_url: String,
    /// For a subagent's session: the session and the `task` call that
    /// started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentRef>,
    /// For a session forked from another, or started from its summary:
    /// which, and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// Where a forked or summarised session came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The session's id.
    pub session_id: String,
    /// `fork` or `summary`.
    pub how: String,
    /// For a fork: the turn it was taken before (none: after the last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_turn: Option<usize>,
}

/// Where a subagent's session hangs in its parent's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentRef {
    /// The parent session's id.
    pub session_id: String,
    /// The parent's `task` call.
    pub call_id: String,
}

/// A conversation message as stored and replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user typed.
    User {
        /// The text.
        content: String,
    },
    /// A model step.
    Assistant {
        /// The text.
        content: String,
        /// Reasoning that came with it, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        /// The tools it called.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The step was cut short by an abort or an error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
    },
    /// A tool's result.
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// The text.
        content: String,
        /// The tool failed or was refused.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// How the call ended as the person saw it, so that a replay shows
        /// it the same way; absent in sessions written before it was kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shown: Option<Shown>,
    },
}

/// How a tool call's end was shown: its mark and its line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// How it ended.
    pub outcome: crate::protocol::CallOutcome,
    /// Its one line (for a failure, the first line of its reason).
    pub summary: String,
}

/// How a message offcode itself sent the model starts: it is stored as a
/// user message (the model reads it as one) but was never typed.
const NOTE_PREFIX: &str = "(offcode) ";

impl Message {
    /// A message from offcode to the model (what went wrong, what to do).
    pub fn offcode_note(text: &str) -> Self {
        Self::User {
            content: format!("{NOTE_PREFIX}{text}"),
        }
    }

    /// What the user typed: a user message that is not an offcode note.
    pub fn typed(&self) -> Option<&str> {
        match self {
            Self::User { content } if !content.starts_with(NOTE_PREFIX) => Some(content),
            _ => None,
        }
    }
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Its id, echoed in the result.
    pub id: String,
    /// The tool.
    pub name: String,
    /// JSON argument text, as the model sent it.
    pub arguments: String,
}

/// UTC time as RFC 3339 with milliseconds, from the system clock.
pub fn now_rfc3339() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format_rfc3339(since.as_secs(), since.subsec_millis())
}

/// The time `format_rfc3339` wrote (`YYYY-MM-DDTHH:MM:SS[.mmm]Z`); none
/// for any other text.
pub fn parse_rfc3339(text: &str) -> Option<std::time::SystemTime> {
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let bytes = text.as_bytes();
    let shape = bytes.len() >= 20
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && bytes[16] == b':'
        && bytes.last() == Some(&b'Z');
    if !shape {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let millis = match &text[19..text.len() - 1] {
        "" => 0,
        fraction => number(20..text.len() - 1).filter(|_| fraction.len() == 4)?,
    };
    // Days from the civil date (Howard Hinnant's method, inverted).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_index = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    let since = std::time::Duration::from_secs(u64::try_from(seconds).ok()?)
        + std::time::Duration::from_millis(u64::try_from(millis).ok()?);
    Some(std::time::UNIX_EPOCH + since)
}

/// Formats seconds since the epoch (days-to-civil, Howard Hinnant's method).
pub fn format_rfc3339(seconds: u64, millis: u32) -> String {
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    let rest = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(
            format_rfc3339(1_795_340_009, 999),
            "2026-11-22T09:33:29.999Z"
        );
    }

    #[test]
    fn reads_back_what_it_writes_and_nothing_else() {
        let at = |seconds: u64, millis: u64| {
            Some(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_secs(seconds)
                    + std::time::Duration::from_millis(millis),
            )
        };
        for (seconds, millis) in [
            (0, 0),
            (951_782_400, 5),
            (1_795_340_009, 999),
            (4_102_444_799, 1),
        ] {
            let text = format_rfc3339(seconds, u32::try_from(millis).unwrap());
            assert_eq!(parse_rfc3339(&text), at(seconds, millis), "{text}");
        }
        assert_eq!(parse_rfc3339("2026-11-22T09:33:29Z"), at(1_795_340_009, 0));
        for bad in [
            "",
            "t",
            "2026-11-22 09:33:29Z",
            "2026-11-22T09:33:29.99Z",
            "2026-1a-22T09:33:29Z",
            "+026-11-22T09:33:29Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn message_lines_are_compact_and_round_trip() {
        let entry = Entry {
            id: "3".into(),
            parent_id: Some("2".into()),
            ts: "t".into(),
            body: EntryBody::Message {
                message: Message::Assistant {
                    content: "hi".into(),
                    reasoning: None,
                    tool_calls: vec![],
                    interrupted: false,
                },
            },
        };
        let line = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            line,
            r#"{"id":"3","parent_id":"2","ts":"t","type":"message","message":{"role":"assistant","content":"hi"}}"#
        );
        assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), entry);
    }
}
