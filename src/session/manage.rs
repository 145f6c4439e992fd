//! Sessions as a person manages them: forked at a turn, started from a
//! summary, deleted, pruned by age, exported as Markdown; and which ones
//! `--continue` and `/resume` offer (those with an answered turn).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use super::{Entry, EntryBody, Error, Message, Origin, Session, Store, branch, io, read_entries};

/// Whether `--continue` and `/resume` offer a session: it holds an answer
/// from the model, or was forked or summarised from one that did, or was
/// cut short (killed) rather than failed. A run the server refused or
/// could not be reached for, with no answer, is not offered.
pub fn answered(meta: &super::Meta, entries: &[Entry]) -> bool {
    let mut asked = false;
    let mut failed = false;
    for entry in entries {
        match &entry.body {
            EntryBody::Message {
                message: Message::Assistant { .. },
            } => return true,
            EntryBody::Message {
                message: Message::User { .. },
            } => asked = true,
            EntryBody::TurnEnd { status } => {
                failed |= *status != crate::protocol::TurnStatus::Done;
            }
            EntryBody::Error { .. } => failed = true,
            _ => {}
        }
    }
    meta.origin.is_some() || asked && !failed
}

impl Store {
    /// A new session holding the active branch of `id` up to entry `upto`
    /// (none: all of it): its conversation, model, agent, allowed rules and
    /// checkpoints. `before_turn` is recorded in its origin.
    pub fn fork(
        &self,
        id: &str,
        upto: Option<&str>,
        before_turn: Option<usize>,
    ) -> Result<Session, Error> {
        let path = self.existing(id)?;
        let (meta, entries) = read_entries(&path)?;
        let branch: Vec<Entry> = branch(&entries, upto.or(entries.last().map(|e| e.id.as_str())))
            .into_iter()
            .cloned()
            .collect();
        let origin = Origin {
            session_id: id.to_owned(),
            how: "fork".to_owned(),
            before_turn,
        };
        let mut session = self.create_as(
            Path::new(&meta.cwd),
            &meta.model,
            &meta.base_url,
            None,
            Some(origin),
        )?;
        // Entry ids are the file's own: an undo's step is renumbered.
        let mut renamed: HashMap<String, String> = HashMap::new();
        for entry in branch {
            let mut body = match entry.body {
                EntryBody::Session(_) => continue,
                body => body,
            };
            if let EntryBody::Undo { step, .. } = &mut body {
                match renamed.get(step.as_str()) {
                    Some(new) => new.clone_into(step),
                    None => continue,
                }
            }
            session.append(body)?;
            if let Some(new) = session.last_id.clone() {
                renamed.insert(entry.id, new);
            }
        }
        Ok(session)
    }

    /// A new session whose first message is `summary` of the session `id`.
    pub fn from_summary(&self, id: &str, summary: &str) -> Result<Session, Error> {
        let path = self.existing(id)?;
        let (meta, entries) = read_entries(&path)?;
        let rebuilt = super::rebuild(&entries, &meta, None);
        let origin = Origin {
            session_id: id.to_owned(),
            how: "summary".to_owned(),
            before_turn: None,
        };
        let mut session = self.create_as(
            Path::new(&meta.cwd),
            &rebuilt.model,
            &meta.base_url,
            None,
            Some(origin),
        )?;
        if rebuilt.agent != session.agent {
            session.append(EntryBody::AgentChange {
                agent: rebuilt.agent,
            })?;
        }
        session.append(EntryBody::Message {
            message: Message::User {
                content: format!(
                    "This session goes on from an earlier one ({id}). What was done there, summarised:\n\n{summary}"
                ),
            },
        })?;
        Ok(session)
    }

    /// Whether another offcode (or another open of it in this one) has
    /// the session `id` open.
    pub fn in_use(&self, id: &str) -> bool {
        let Ok(path) = self.existing(id) else {
            return false;
        };
        let Ok(file) = std::fs::File::open(&path) else {
            return false;
        };
        let taken = rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared);
        taken.is_err()
    }

    /// Deletes the session `id` and its subagents' sessions; refused while
    /// another offcode has it open.
    pub fn delete(&self, id: &str) -> Result<Vec<String>, Error> {
        let path = self.existing(id)?;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io("open", &path))?;
        super::lock(&file, id)?;
        let mut gone = vec![id.to_owned()];
        for (child, _) in self.files()? {
            if let Some(meta) = super::read_meta(&child)
                && meta.parent.as_ref().is_some_and(|p| p.session_id == id)
                && std::fs::remove_file(&child).is_ok()
            {
                gone.push(meta.session_id);
            }
        }
        std::fs::remove_file(&path).map_err(io("delete", &path))?;
        Ok(gone)
    }

    /// Deletes the sessions (of `cwd`, or all) last changed more than
    /// `days` ago, skipping any in use; returns their ids.
    pub fn prune(&self, cwd: Option<&Path>, days: u64) -> Result<Vec<String>, Error> {
        let cutoff = std::time::SystemTime::now()
            .checked_sub(std::time::Duration::from_secs(days.saturating_mul(86_400)))
            .unwrap_or(std::time::UNIX_EPOCH);
        let cwd = cwd.map(|c| c.display().to_string());
        let mut gone = Vec::new();
        for (path, modified) in self.files()? {
            let Some(meta) = super::read_meta(&path) else {
                continue;
            };
            let here = cwd.as_ref().is_none_or(|c| *c == meta.cwd);
            if modified < cutoff
                && here
                && meta.parent.is_none()
                && let Ok(deleted) = self.delete(&meta.session_id)
            {
                gone.extend(deleted);
            }
        }
        Ok(gone)
    }

    /// The session `id` as Markdown: its prompts, answers, tool calls and
    /// their results, whole.
    pub fn export(&self, id: &str) -> Result<String, Error> {
        let path = self.existing(id)?;
        let (meta, entries) = read_entries(&path)?;
        let messages = super::rebuild(&entries, &meta, None).messages;
        let mut out = format!(
            "# offcode session {id}\n\n- Directory: `{}`\n- Model: `{}`\n- Started: {}\n",
            meta.cwd,
            meta.model,
            entries.first().map_or("", |e| e.ts.as_str())
        );
        if let Some(origin) = &meta.origin {
            let _ = writeln!(
                out,
                "- From: {} of session `{}`",
                origin.how, origin.session_id
            );
        }
        for message in &messages {
            match message {
                Message::User { content } => {
                    let _ = write!(out, "\n## User\n\n{}\n", content.trim_end());
                }
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    out.push_str("\n## Assistant\n\n");
                    if !content.trim().is_empty() {
                        let _ = writeln!(out, "{}", content.trim_end());
                    }
                    for call in tool_calls {
                        let arguments = serde_json::from_str::<serde_json::Value>(&call.arguments)
                            .ok()
                            .and_then(|v| serde_json::to_string_pretty(&v).ok())
                            .unwrap_or_else(|| call.arguments.clone());
                        let _ = write!(
                            out,
                            "\n**Tool call** `{}`\n\n{}",
                            call.name,
                            fenced("json", &arguments)
                        );
                    }
                }
                Message::Tool {
                    name,
                    content,
                    is_error,
                    ..
                } => {
                    let what = if *is_error { "failed" } else { "result" };
                    let _ = write!(out, "\n**Tool {what}** `{name}`\n\n{}", fenced("", content));
                }
            }
        }
        Ok(out)
    }
}

/// `text` in a code fence longer than any run of backticks inside it.
fn fenced(language: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{language}\n{}\n{fence}\n", text.trim_end())
}
