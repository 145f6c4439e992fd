//! Request assembly: the system prompt and the conversation, in a fixed
//! order, so each request's messages start with the previous request's.
//!
//! The system message is the same for every session in every directory
//! (offcode's base prompt; in text mode the tools after it), and holds no
//! path, date, rules or random values: a server's prefix cache then serves
//! the base prompt and the tool schemas to every new session and user. What
//! belongs to the workspace (its path, the rules, instructions and the
//! skills index) opens the first user message instead.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};

use crate::client::wire::{WireFunctionCall, WireMessage, WireToolCall};
use crate::session::Message;

/// The base system prompt, the same everywhere.
const SYSTEM_PROMPT: &str = "You are offcode, a coding agent. Change the workspace only with \
your tools. Read a file before you change it or answer about it; run \
commands to check your work. When done, say briefly what you did. Reply in \
the user's language. For a task of several steps, keep a todo list with `todowrite`.";

/// The base prompt for a small model or a short context: the task, and
/// nothing that invites other work.
// No "say what you did": asked for it, a 1.5B model says it wrote a file
// instead of writing it (5 of 5 samples; 0 of 5 without). offcode's report
// says what was done.
const COMPACT_PROMPT: &str = "You are offcode, a coding agent. Do the user's task in the \
workspace with your tools. Read a file before you change it or answer about it, then make the \
change with a tool call. Reply in the user's language.";

/// The base system prompt, the same for every workspace.
pub fn system_prompt() -> &'static str {
    SYSTEM_PROMPT
}

/// The base system prompt of the compact profile ([`crate::config::Compact`]).
pub fn compact_prompt() -> &'static str {
    COMPACT_PROMPT
}

/// The workspace line of the workspace block.
fn workspace_line(root: &Path) -> String {
    format!("You work in the directory {}.", root.display())
}

/// The workspace block's opening and closing tags.
const WORKSPACE_OPEN: &str = "<workspace>\n";
const WORKSPACE_CLOSE: &str = "\n</workspace>\n\n";

/// Bytes of one rules or instructions file put in the system prompt.
pub const MAX_RULES_BYTES: usize = 32 * 1024;

/// One part of what every request carries, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// What it is: `system prompt`, `global rules`, `project rules`,
    /// `instructions`.
    pub name: &'static str,
    /// The file it came from (`built in` for offcode's own text).
    pub source: String,
    /// The text as sent.
    pub text: String,
    /// The same for every session and directory: it goes in the system
    /// message, which a server's prefix cache shares. The rest opens the
    /// first user message.
    pub shared: bool,
}

/// The system prompt in its parts, in their fixed order: the base prompt,
/// global rules (`~/.config/offcode/AGENTS.md`), project rules
/// (`AGENTS.md` at the root; they take precedence, and say so), then the
/// config's `instructions` files. Nothing else is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assembly {
    /// The parts, in order.
    pub parts: Vec<Part>,
    /// Files that were listed but could not be used, and why.
    pub warnings: Vec<String>,
}

impl Assembly {
    /// Uses the compact base prompt (`true`) or the full one; the base
    /// part's name says which (`compact prompt`), for `/context`.
    pub fn set_compact(&mut self, compact: bool) {
        let base = self
            .parts
            .iter_mut()
            .find(|p| matches!(p.name, "system prompt" | "compact prompt"));
        if let Some(base) = base {
            (base.name, base.text) = if compact {
                ("compact prompt", COMPACT_PROMPT.to_owned())
            } else {
                ("system prompt", SYSTEM_PROMPT.to_owned())
            };
        }
    }

    /// The system message: the shared parts' texts, joined.
    pub fn system_prompt(&self) -> String {
        self.joined(true)
    }

    /// The workspace block's text: the other parts' texts, joined.
    pub fn workspace(&self) -> String {
        self.joined(false)
    }

    fn joined(&self, shared: bool) -> String {
        self.parts
            .iter()
            .filter(|p| p.shared == shared)
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// `messages` with the workspace block opening the first user message (one
/// is added when there is none), so it stays put while the conversation
/// grows and the system message stays the same everywhere.
pub fn with_workspace(mut messages: Vec<WireMessage>, workspace: &str) -> Vec<WireMessage> {
    if workspace.is_empty() {
        return messages;
    }
    let block = format!("{WORKSPACE_OPEN}{workspace}{WORKSPACE_CLOSE}");
    if let Some(first) = messages.iter_mut().find(|m| m.role == "user") {
        let text = first.content.take().unwrap_or_default();
        first.content = Some(block + &text);
    } else {
        let at = usize::from(messages.first().is_some_and(|m| m.role == "system"));
        messages.insert(at, text_message("user", block.trim_end()));
    }
    messages
}

/// The task `/init` sends: look at the project, then write (or, when it
/// `exists`, improve) `AGENTS.md` at its root. Short and concrete, so a
/// small model can follow it; the write asks like any other.
pub fn init_prompt(exists: bool) -> String {
    let mut prompt = String::from(
        "Write AGENTS.md at the root of this project: the rules a coding agent needs to work here. \
         First look: list the files, read the README and the build files you find (Cargo.toml, \
         package.json, go.mod, pyproject.toml, Makefile, CMakeLists.txt...). Then write AGENTS.md \
         with short sections: what the project is; the exact commands to build, test and lint; \
         the layout (the main folders and what they hold); the code style the files follow. \
         Only what you saw in the files; at most 60 lines.",
    );
    if exists {
        prompt.push_str(
            " AGENTS.md exists already: read it first, keep what is still true, and improve it with an edit.",
        );
    }
    prompt
}

/// A folder's rules file: `AGENTS.md`, else `CLAUDE.md` (as `OpenCode`
/// reads it), through `read`.
fn rules_file(dir: &Path, read: impl Fn(&str) -> Option<Vec<u8>>) -> Option<(PathBuf, Vec<u8>)> {
    ["AGENTS.md", "CLAUDE.md"]
        .iter()
        .find_map(|name| read(name).map(|bytes| (dir.join(name), bytes)))
}

/// The folders above `root` up to its repository's root (the nearest one
/// holding `.git`), outermost first; none when `root` is the repository
/// root or lies in no repository.
fn repository_folders(root: &Path) -> Vec<PathBuf> {
    let mut above = Vec::new();
    if root.join(".git").exists() {
        return above;
    }
    for dir in root.ancestors().skip(1).take(32) {
        above.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            // Only a repository of the person's own: a `.git` someone else
            // put in a shared folder (`/tmp/.git`) marks nothing, as git's
            // `safe.directory` would have it.
            if !own(&dir.join(".git")) {
                return Vec::new();
            }
            above.reverse();
            return above;
        }
    }
    Vec::new()
}

/// Whether `path` is the person's own (same user) and, itself, not a
/// symbolic link (a `.git` folder, or the `.git` file of a worktree).
fn own(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|meta| {
        !meta.file_type().is_symlink() && meta.uid() == rustix::process::geteuid().as_raw()
    })
}

/// A rules file above the workspace, read only when it is a regular file
/// of the person's own, never through a symbolic link (`AGENTS.md ->
/// /proc/self/environ` would put offcode's environment in the prompt).
fn read_plain(path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_file() || meta.uid() != rustix::process::geteuid().as_raw() {
        return None;
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, 1 << 20), &mut bytes).ok()?;
    Some(bytes)
}

/// Assembles the system prompt for the workspace `sandbox`, with global
/// rules from `config_dir` and the config's `instructions` (paths or
/// globs inside the workspace).
pub fn assemble(
    sandbox: &crate::sandbox::Sandbox,
    config_dir: Option<&Path>,
    instructions: &[String],
) -> Assembly {
    let mut assembly = Assembly::default();
    assembly.parts.push(Part {
        name: "system prompt",
        source: "built in".to_owned(),
        text: system_prompt().to_owned(),
        shared: true,
    });
    assembly.parts.push(Part {
        name: "workspace",
        source: sandbox.root().display().to_string(),
        text: workspace_line(sandbox.root()),
        shared: false,
    });
    // `~/.config/offcode/AGENTS.md`, else Claude Code's global file (as
    // OpenCode reads it).
    let global = config_dir.map(|dir| {
        let own = dir.join("AGENTS.md");
        let claude = std::env::home_dir().map(|home| home.join(".claude/CLAUDE.md"));
        match claude {
            Some(claude) if !own.exists() && claude.is_file() => claude,
            _ => own,
        }
    });
    if let Some(path) = global {
        match std::fs::read(&path) {
            Ok(bytes) => {
                let source = path.display().to_string();
                let text = cut(&bytes);
                assembly.parts.push(Part {
                    name: "global rules",
                    text: format!("Global rules (from {source}):\n{text}"),
                    source,
                    shared: false,
                });
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => assembly
                .warnings
                .push(format!("`{}` was not read: {error}", path.display())),
        }
    }
    // The repository's rules from its root down to the start folder, as
    // Codex reads them: the nearest last, so it wins.
    for dir in repository_folders(sandbox.root()) {
        let Some((path, bytes)) = rules_file(&dir, |name| read_plain(&dir.join(name))) else {
            continue;
        };
        let source = path.display().to_string();
        assembly.parts.push(Part {
            name: "repository rules",
            text: format!(
                "Repository rules (from {source}, a folder above this one):\n{}",
                cut(&bytes)
            ),
            source,
            shared: false,
        });
    }
    if let Some((path, bytes)) = rules_file(Path::new(""), |name| sandbox.read(name).ok()) {
        let name = path.display().to_string();
        assembly.parts.push(Part {
            name: "project rules",
            text: format!(
                "Project rules (from {name}; where they differ from the global rules, \
                 these take precedence):\n{}",
                cut(&bytes)
            ),
            source: name,
            shared: false,
        });
    }
    for path in instruction_files(sandbox.root(), instructions, &mut assembly.warnings) {
        match sandbox.read(&path) {
            Ok(bytes) => assembly.parts.push(Part {
                name: "instructions",
                text: format!("Instructions (from {path}):\n{}", cut(&bytes)),
                source: path,
                shared: false,
            }),
            Err(error) => assembly
                .warnings
                .push(format!("instructions `{path}` were not read: {error}")),
        }
    }
    assembly
}

impl Assembly {
    /// Adds the skills index (after the rules and instructions) and the
    /// discovery's warnings.
    pub fn add_skills(&mut self, skills: &[crate::skills::Skill], warnings: Vec<String>) {
        self.warnings.extend(warnings);
        if !skills.is_empty() {
            self.parts.push(Part {
                name: "skills index",
                source: match skills.len() {
                    1 => "1 skill".to_owned(),
                    n => format!("{n} skills"),
                },
                text: crate::skills::index(skills),
                shared: false,
            });
        }
    }
}

/// The file's text, cut to [`MAX_RULES_BYTES`] with a marker.
fn cut(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.len() <= MAX_RULES_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_RULES_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[cut at {} KiB]", &text[..end], MAX_RULES_BYTES / 1024)
}

/// The files `patterns` name, relative to `root`, in order, each once. A
/// pattern with `*`, `?` or `[` is a glob matched against every file
/// below the root (honouring `.gitignore`); anything else is a path.
fn instruction_files(root: &Path, patterns: &[String], warnings: &mut Vec<String>) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for pattern in patterns {
        if !pattern.contains(['*', '?', '[']) {
            if !files.contains(pattern) {
                files.push(pattern.clone());
            }
            continue;
        }
        let glob = match globset::Glob::new(pattern) {
            Ok(glob) => glob.compile_matcher(),
            Err(error) => {
                warnings.push(format!("instructions pattern `{pattern}`: {error}"));
                continue;
            }
        };
        crate::paths::refuse_blocking_ignore_files(root);
        let mut matched: Vec<String> = ignore::WalkBuilder::new(root)
            .filter_entry(|entry| {
                if entry.file_type().is_some_and(|kind| kind.is_dir()) {
                    crate::paths::refuse_blocking_ignore_files(entry.path());
                }
                true
            })
            .build()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .filter_map(|entry| {
                let relative = entry.path().strip_prefix(root).ok()?.to_str()?.to_owned();
                glob.is_match(&relative).then_some(relative)
            })
            .collect();
        matched.sort();
        if matched.is_empty() {
            warnings.push(format!("instructions pattern `{pattern}` matches no file"));
        }
        for file in matched {
            if !files.contains(&file) {
                files.push(file);
            }
        }
    }
    files
}

/// What a request with `assembly`, the tool `specs` and `history` carries,
/// part by part, with estimated tokens.
pub fn report(
    assembly: &Assembly,
    specs: &[crate::client::wire::ToolSpec],
    history: &[Message],
    session: &str,
    limit: Option<u64>,
    last_prompt: Option<u64>,
) -> crate::protocol::ContextReport {
    use crate::protocol::ContextPart;
    let mut parts: Vec<ContextPart> = assembly
        .parts
        .iter()
        .map(|part| ContextPart {
            name: part.name.to_owned(),
            source: part.source.clone(),
            tokens: estimate_tokens(&part.text),
        })
        .collect();
    let schemas = serde_json::to_string(specs).unwrap_or_default();
    parts.push(ContextPart {
        name: "tool schemas".to_owned(),
        source: format!("{} tools", specs.len()),
        tokens: estimate_tokens(&schemas),
    });
    let wire: Vec<WireMessage> = history.iter().map(wire_message).collect();
    parts.push(ContextPart {
        name: "history".to_owned(),
        source: format!("session {session}, {} messages", history.len()),
        tokens: if wire.is_empty() {
            0
        } else {
            estimate_tokens(&serde_json::to_string(&wire).unwrap_or_default())
        },
    });
    crate::protocol::ContextReport {
        total: parts.iter().map(|p| p.tokens).sum(),
        parts,
        limit,
        last_prompt,
    }
}

/// The model's context length, in the one order every part of offcode
/// uses: the config's `context_limit` wins, then what the session learned
/// from the server (an overflow error, `/tokenize`, an earlier run), then
/// what the server lists (`max_model_len`, or llama.cpp's `/props`), asked
/// only when nothing before it knows.
pub fn context_limit(
    configured: Option<u64>,
    learned: Option<u64>,
    listed: impl FnOnce() -> Option<u64>,
) -> Option<u64> {
    configured.or(learned).or_else(listed)
}

/// Tokens in `text`, estimated when the server cannot count them: an
/// ASCII character is a quarter of a token, any other character (CJK,
/// accents, symbols) a whole one.
pub fn estimate_tokens(text: &str) -> u64 {
    let ascii = text.bytes().filter(u8::is_ascii).count();
    let other = text.chars().filter(|c| !c.is_ascii()).count();
    u64::try_from(ascii.div_ceil(4) + other).unwrap_or(u64::MAX)
}

/// The request messages: the system prompt, then the conversation.
/// Reasoning is never sent back.
pub fn build_messages(system: &str, history: &[Message]) -> Vec<WireMessage> {
    let mut messages = Vec::with_capacity(history.len() + 1);
    messages.push(text_message("system", system));
    messages.extend(history.iter().map(wire_message));
    messages
}

/// The request's messages for a model that reads its tools from the
/// prompt: calls are written back as `<tool_call>` blocks and results as
/// `<tool_response>` blocks in a user message, so any chat template takes
/// them; messages of the same role in a row are joined.
pub fn build_text_messages(system: &str, history: &[Message]) -> Vec<WireMessage> {
    use std::fmt::Write as _;
    let mut messages: Vec<WireMessage> = Vec::with_capacity(history.len() + 1);
    messages.push(text_message("system", system));
    for message in history {
        let (role, text) = match message {
            Message::User { content } => ("user", content.clone()),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let mut text = content.clone();
                for call in tool_calls {
                    let arguments = serde_json::from_str::<serde_json::Value>(&call.arguments)
                        .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
                    let block = serde_json::json!({"name": call.name, "arguments": arguments});
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    let _ = write!(text, "<tool_call>\n{block}\n</tool_call>");
                }
                ("assistant", text)
            }
            Message::Tool { content, .. } => (
                "user",
                format!("<tool_response>\n{content}\n</tool_response>"),
            ),
        };
        match messages.last_mut() {
            Some(last) if last.role == role && role != "system" => {
                let joined = last.content.get_or_insert_with(String::new);
                joined.push_str(if role == "user" { "\n" } else { "\n\n" });
                joined.push_str(&text);
            }
            _ => messages.push(text_message(role, &text)),
        }
    }
    messages
}

/// A message of plain text in `role`.
pub fn text_message(role: &str, content: &str) -> WireMessage {
    WireMessage {
        role: role.to_owned(),
        content: Some(content.to_owned()),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn wire_message(message: &Message) -> WireMessage {
    match message {
        Message::User { content } => text_message("user", content),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => WireMessage {
            role: "assistant".to_owned(),
            content: (!content.is_empty() || tool_calls.is_empty()).then(|| content.clone()),
            tool_calls: tool_calls
                .iter()
                .map(|call| WireToolCall {
                    id: call.id.clone(),
                    kind: "function".to_owned(),
                    function: WireFunctionCall {
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    },
                })
                .collect(),
            tool_call_id: None,
        },
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => WireMessage {
            role: "tool".to_owned(),
            content: Some(content.clone()),
            tool_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.clone()),
        },
    }
}

#[cfg(test)]
mod tests;
