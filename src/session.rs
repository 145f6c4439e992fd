//! Sessions: append-only JSONL files, one entry per line, forming a tree
//! through `parent_id`.
//!
//! Every entry is written whole with one `write` call before the next step
//! starts, so killing the process loses at most the line being written; on
//! resume a partial last line is cut off and tool calls left without a result
//! get one, so the rebuilt history is always a valid request.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod branch;
mod entry;
mod manage;

pub use branch::branch;
use branch::{Rebuilt, rebuild};
pub use manage::answered;

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

pub use entry::{
    AllowedRule, Compaction, Entry, EntryBody, Message, Meta, Origin, ParentRef, Shown, ToolCall,
    now_rfc3339, parse_rfc3339,
};

/// The session file format version written by this build.
pub const FORMAT_VERSION: u32 = 1;

/// Session storage failures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file operation failed.
    #[error("Could not {action} session file `{path}`")]
    Io {
        /// What was being done (`read`, `create`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// No session has this id.
    #[error("No session `{id}` in `{dir}`")]
    NotFound {
        /// The session's id.
        id: String,
        /// Where sessions are kept.
        dir: PathBuf,
    },
    /// No session was started in this directory.
    #[error("No earlier session for `{cwd}`")]
    NoneForDirectory {
        /// The directory.
        cwd: PathBuf,
    },
    /// Another offcode process has the session open.
    #[error("Session `{id}` is in use by another offcode process")]
    InUse {
        /// The session's id.
        id: String,
    },
    /// The file does not start with a session entry.
    #[error("`{path}` is not a session file: {reason}")]
    NotASession {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// Where session files live.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// A session listed by [`Store::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Its id.
    pub id: String,
    /// Its metadata.
    pub meta: Meta,
    /// Time of the last entry.
    pub updated: String,
    /// Its title, else its first user message, shortened.
    pub title: String,
    /// Number of conversation messages.
    pub messages: usize,
    /// Whether a turn was answered ([`answered`]): `--continue` and
    /// `/resume` offer only these.
    pub answered: bool,
}

/// An open session, ready to append to.
#[derive(Debug)]
pub struct Session {
    /// The session id.
    pub id: String,
    /// The file.
    pub path: PathBuf,
    /// Metadata from the first line.
    pub meta: Meta,
    /// The active model (the latest switch, or the creation model).
    pub model: String,
    /// The active agent profile (the latest switch, or the creation one).
    pub agent: String,
    /// The conversation, rebuilt from the active branch.
    pub messages: Vec<Message>,
    /// Lines that could not be read when the session was opened.
    pub skipped_lines: usize,
    /// Rules the user allowed for the rest of this session.
    pub allowed: Vec<AllowedRule>,
    /// The agent's todo list, as last written.
    pub todos: Vec<crate::protocol::TodoItem>,
    /// How requests shorten the history, after a compaction.
    pub compaction: Option<Compaction>,
    /// Whether this is an existing session reopened.
    pub resumed: bool,
    file: File,
    last_id: Option<String>,
    count: u64,
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io {
        action,
        path,
        source,
    }
}

impl Store {
    /// Sessions under `dir` (created on first write).
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the session `id`.
    pub fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// The file of an existing session (ids never contain `/`).
    fn existing(&self, id: &str) -> Result<PathBuf, Error> {
        let path = self.path_of(id);
        if id.contains('/') || !path.is_file() {
            return Err(Error::NotFound {
                id: id.to_owned(),
                dir: self.dir.clone(),
            });
        }
        Ok(path)
    }

    /// Starts a new session.
    pub fn create(&self, cwd: &Path, model: &str, base_url: &str) -> Result<Session, Error> {
        self.create_as(cwd, model, base_url, None, None)
    }

    /// Starts a subagent's session under `parent`'s `task` call.
    pub fn create_child(
        &self,
        cwd: &Path,
        model: &str,
        base_url: &str,
        parent: ParentRef,
    ) -> Result<Session, Error> {
        self.create_as(cwd, model, base_url, Some(parent), None)
    }

    fn create_as(
        &self,
        cwd: &Path,
        model: &str,
        base_url: &str,
        parent: Option<ParentRef>,
        origin: Option<Origin>,
    ) -> Result<Session, Error> {
        crate::paths::private_dir(&self.dir).map_err(io("create the directory of", &self.dir))?;
        let stamp = now_rfc3339();
        let digits: String = stamp.chars().filter(char::is_ascii_digit).collect();
        let id = format!(
            "{}-{}-{:04x}",
            &digits[..8],
            &digits[8..14],
            crate::ids::random_u64() & 0xffff
        );
        let path = self.path_of(&id);
        let file = crate::paths::private_file()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(io("create", &path))?;
        lock(&file, &id)?;
        let meta = Meta {
            version: FORMAT_VERSION,
            session_id: id.clone(),
            cwd: cwd.display().to_string(),
            model: model.to_owned(),
            agent: crate::agents::DEFAULT.to_owned(),
            base_url: base_url.to_owned(),
            parent,
            origin,
        };
        let mut session = Session {
            id,
            path,
            meta: meta.clone(),
            model: model.to_owned(),
            agent: crate::agents::DEFAULT.to_owned(),
            messages: Vec::new(),
            skipped_lines: 0,
            allowed: Vec::new(),
            todos: Vec::new(),
            compaction: None,
            resumed: false,
            file,
            last_id: None,
            count: 0,
        };
        session.append(EntryBody::Session(meta))?;
        Ok(session)
    }

    /// Opens an existing session for appending, rebuilding its history.
    pub fn open(&self, id: &str) -> Result<Session, Error> {
        let path = self.existing(id)?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io("open", &path))?;
        lock(&file, id)?;
        let text = std::fs::read(&path).map_err(io("read", &path))?;
        // A line without its newline was cut off by a crash: drop it.
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        if complete < text.len() {
            file.set_len(complete as u64).map_err(io("repair", &path))?;
        }
        let mut entries = Vec::new();
        let mut skipped_lines = 0;
        for line in text[..complete].split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Entry>(line) {
                Ok(entry) => entries.push(entry),
                Err(_) => skipped_lines += 1,
            }
        }
        let Some(Entry {
            body: EntryBody::Session(meta),
            ..
        }) = entries.first()
        else {
            return Err(Error::NotASession {
                path,
                reason: "the first entry is not a session entry".to_owned(),
            });
        };
        let meta = meta.clone();
        let Rebuilt {
            messages,
            model,
            agent,
            allowed,
            todos,
            compaction,
        } = rebuild(&entries, &meta, None);
        let mut session = Session {
            id: id.to_owned(),
            path,
            model,
            agent,
            messages,
            skipped_lines,
            allowed,
            todos,
            compaction,
            resumed: true,
            meta,
            file,
            last_id: entries.last().map(|e| e.id.clone()),
            count: entries.len() as u64,
        };
        session.answer_dangling_calls()?;
        Ok(session)
    }

    /// A session's metadata and conversation, read without taking its lock
    /// (for inspection while another process may be writing it).
    pub fn load(&self, id: &str) -> Result<(Meta, Vec<Message>), Error> {
        let path = self.existing(id)?;
        let (meta, entries) = read_entries(&path)?;
        let messages = rebuild(&entries, &meta, None).messages;
        Ok((meta, messages))
    }

    /// A session's metadata and the entries of its active branch, read
    /// without taking its lock.
    pub fn load_branch(&self, id: &str) -> Result<(Meta, Vec<Entry>), Error> {
        let path = self.existing(id)?;
        let (meta, entries) = read_entries(&path)?;
        let branch = branch(&entries, None).into_iter().cloned().collect();
        Ok((meta, branch))
    }

    /// The most recently updated session started in `cwd` that has an
    /// answered turn (a run that failed before the model answered, a
    /// rejected prompt, leaves one that is skipped).
    pub fn latest_for(&self, cwd: &Path) -> Result<String, Error> {
        let cwd_text = cwd.display().to_string();
        let mut candidates: Vec<(std::time::SystemTime, PathBuf)> = self
            .files()?
            .into_iter()
            .map(|(path, modified)| (modified, path))
            .collect();
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        for (_, path) in candidates {
            // A subagent's session is resumed through its parent's.
            if read_meta(&path).is_none_or(|m| m.cwd != cwd_text || m.parent.is_some()) {
                continue;
            }
            if let Ok((meta, entries)) = read_entries(&path)
                && answered(&meta, &entries)
            {
                return Ok(meta.session_id);
            }
        }
        Err(Error::NoneForDirectory {
            cwd: cwd.to_path_buf(),
        })
    }

    fn files(&self) -> Result<Vec<(PathBuf, std::time::SystemTime)>, Error> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("list", &self.dir)(e)),
        };
        Ok(entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .filter_map(|e| Some((e.path(), e.metadata().ok()?.modified().ok()?)))
            .collect())
    }

    /// All sessions, most recently updated first.
    pub fn list(&self) -> Result<Vec<Summary>, Error> {
        let mut files = self.files()?;
        files.sort_by_key(|file| std::cmp::Reverse(file.1));
        let mut summaries = Vec::new();
        for (path, _) in files {
            let Ok((meta, entries)) = read_entries(&path) else {
                continue;
            };
            let messages = rebuild(&entries, &meta, None).messages;
            let answered = answered(&meta, &entries);
            // The title agent's, else the first request.
            let named = entries.iter().rev().find_map(|e| match &e.body {
                EntryBody::Title { title } => Some(title.as_str()),
                _ => None,
            });
            let title = named
                .or_else(|| {
                    messages.iter().find_map(|m| match m {
                        Message::User { content } => Some(content.as_str()),
                        _ => None,
                    })
                })
                .unwrap_or("");
            let title: String = title.split_whitespace().collect::<Vec<_>>().join(" ");
            summaries.push(Summary {
                id: meta.session_id.clone(),
                meta,
                updated: entries.last().map(|e| e.ts.clone()).unwrap_or_default(),
                title: title.chars().take(60).collect(),
                messages: messages.len(),
                answered,
            });
        }
        Ok(summaries)
    }
}

/// Every readable entry of a session file, and its metadata.
fn read_entries(path: &Path) -> Result<(Meta, Vec<Entry>), Error> {
    let text = std::fs::read_to_string(path).map_err(io("read", path))?;
    let entries: Vec<Entry> = text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    match entries.first() {
        Some(Entry {
            body: EntryBody::Session(meta),
            ..
        }) => Ok((meta.clone(), entries)),
        _ => Err(Error::NotASession {
            path: path.to_path_buf(),
            reason: "the first entry is not a session entry".to_owned(),
        }),
    }
}

/// Takes the session's lock for as long as the file stays open, so two
/// processes never append to one session. A process this one (or any
/// other) is starting holds a copy of every descriptor from its fork to
/// its `exec`: a lock just let go can still be held for that moment, so
/// the lock is tried again for half a second before the session is said
/// to be in use.
fn lock(file: &File, id: &str) -> Result<(), Error> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
    loop {
        match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(_) => return Err(Error::InUse { id: id.to_owned() }),
        }
    }
}

fn read_meta(path: &Path) -> Option<Meta> {
    let mut first = String::new();
    BufReader::new(File::open(path).ok()?)
        .read_line(&mut first)
        .ok()?;
    match serde_json::from_str::<Entry>(&first).ok()?.body {
        EntryBody::Session(meta) => Some(meta),
        _ => None,
    }
}

impl Session {
    /// Appends one entry as one whole line.
    pub fn append(&mut self, body: EntryBody) -> Result<(), Error> {
        let id = (self.count + 1).to_string();
        let entry = Entry {
            id: id.clone(),
            parent_id: self.last_id.clone(),
            ts: now_rfc3339(),
            body,
        };
        let mut line = serde_json::to_vec(&entry).map_err(|e| Error::Io {
            action: "encode an entry for",
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(io("write", &self.path))?;
        self.count += 1;
        self.last_id = Some(id);
        match entry.body {
            EntryBody::Message { message } => self.messages.push(message),
            EntryBody::ModelChange { model } => self.model = model,
            EntryBody::AgentChange { agent } => self.agent = agent,
            EntryBody::Permission { allowed, .. } => self.allowed.extend(allowed),
            EntryBody::Todo { items } => self.todos = items,
            EntryBody::Compaction(compaction) => self.compaction = Some(compaction),
            _ => {}
        }
        Ok(())
    }

    /// The entries of the active branch, first to last.
    pub fn branch(&self) -> Result<Vec<Entry>, Error> {
        let (_, entries) = read_entries(&self.path)?;
        Ok(branch(&entries, self.last_id.as_deref())
            .into_iter()
            .cloned()
            .collect())
    }

    /// The id of the active branch's last entry.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Makes the entry `parent` (none: the start) the end of the active
    /// branch: the conversation, model, agent and rules are rebuilt as they
    /// were there, and the next entry appended follows it. Nothing in the
    /// file is removed.
    pub fn rewind_to(&mut self, parent: Option<&str>) -> Result<(), Error> {
        let (meta, entries) = read_entries(&self.path)?;
        let parent = parent.map_or_else(
            || entries.first().map(|e| e.id.clone()),
            |p| Some(p.to_owned()),
        );
        let rebuilt = rebuild(&entries, &meta, parent.as_deref());
        self.messages = rebuilt.messages;
        self.model = rebuilt.model;
        self.agent = rebuilt.agent;
        self.allowed = rebuilt.allowed;
        self.todos = rebuilt.todos;
        self.compaction = rebuilt.compaction;
        self.last_id = parent;
        Ok(())
    }

    /// Flushes the file to disk (at the end of a turn).
    pub fn sync(&self) -> Result<(), Error> {
        self.file.sync_data().map_err(io("sync", &self.path))
    }

    /// Gives every tool call of the last assistant message a result, so the
    /// history is a valid request after a crash in the middle of a step.
    fn answer_dangling_calls(&mut self) -> Result<(), Error> {
        let Some(position) = self
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
        else {
            return Ok(());
        };
        let Message::Assistant { tool_calls, .. } = &self.messages[position] else {
            return Ok(());
        };
        let answered: Vec<&str> = self.messages[position..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let missing: Vec<ToolCall> = tool_calls
            .iter()
            .filter(|call| !answered.contains(&call.id.as_str()))
            .cloned()
            .collect();
        for call in missing {
            self.append(EntryBody::Message {
                message: Message::Tool {
                    tool_call_id: call.id,
                    name: call.name,
                    content: "Error: offcode stopped before this call's result was recorded: it may not have run, or may have run in part (look before you rely on it)".to_owned(),
                    is_error: true,
                    shown: Some(Shown {
                        outcome: crate::protocol::CallOutcome::Failed,
                        summary: "offcode stopped before this call's result was recorded"
                            .to_owned(),
                    }),
                },
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
