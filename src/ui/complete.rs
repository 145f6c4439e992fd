//! Tab completion in the editor: `/` commands at the start of the prompt,
//! and `@path` anywhere, for files and directories inside the workspace.

use std::path::PathBuf;

use reedline::{Completer, CompletionResult, Span, Suggestion};

/// The commands, with what each does (also the `/help` text).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/help", "keys and commands"),
    ("/models", "list the served models; /models ID switches"),
    (
        "/agent",
        "list the agents; /agent NAME switches (also Shift+Tab)",
    ),
    ("/agents", "the subagents started in this session"),
    (
        "/inspect",
        "a subagent's whole context and transcript: /inspect ID",
    ),
    ("/context", "how full the model's context is"),
    ("/mcp", "the MCP servers, their state and tools"),
    ("/compact", "summarise the older conversation now"),
    (
        "/init",
        "have the agent write AGENTS.md, the project's rules, from what it finds",
    ),
    (
        "/undo",
        "take back the file changes of the agent's last step",
    ),
    (
        "/revert",
        "go back to before a turn, files and conversation: /revert lists, /revert N",
    ),
    (
        "/diff",
        "what the agent changed in the files: /diff, /diff N (since turn N)",
    ),
    (
        "/fork",
        "continue in a copy of this session: /fork, /fork N (before turn N)",
    ),
    (
        "/summarize",
        "start a new session from a summary of this one",
    ),
    ("/todo", "the agent's todo list"),
    ("/think", "the last reasoning, in full"),
    (
        "/expand",
        "a tool call's whole output: /expand N (Ctrl+O: the last)",
    ),
    ("/sessions", "sessions in this directory"),
    (
        "/resume",
        "continue an earlier session: /resume lists, /resume N picks",
    ),
    ("/new", "start a new session"),
    ("/clear", "clear the screen and start a new session"),
    ("/quit", "leave (also /exit, Ctrl+D)"),
];

/// Entries offered for one `@path` completion.
const MAX_PATHS: usize = 200;

/// Completes against the workspace at `root`.
#[derive(Debug, Clone)]
pub struct Completions {
    root: PathBuf,
}

impl Completions {
    /// Completion for the workspace at `root`.
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// `(start, replacement, description)` for the word before `pos`.
    pub fn suggest(&self, line: &str, pos: usize) -> Vec<(usize, String, Option<String>)> {
        let pos = pos.min(line.len());
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = &before[start..];
        if start == 0 && word.starts_with('/') && !word.contains(' ') {
            return COMMANDS
                .iter()
                .filter(|(name, _)| name.starts_with(word))
                .map(|(name, about)| (0, (*name).to_owned(), Some((*about).to_owned())))
                .collect();
        }
        let Some(path) = word.strip_prefix('@') else {
            return Vec::new();
        };
        self.paths(path)
            .into_iter()
            .map(|p| (start, format!("@{p}"), None))
            .collect()
    }

    /// `line` with the word at its end completed as far as the choices
    /// agree, as Tab does in the editor before it shows a menu: a lone
    /// choice whole (a space after it unless it is a folder), several
    /// their common beginning. `None` when Tab would add nothing.
    pub fn unambiguous(&self, line: &str) -> Option<String> {
        let found = self.suggest(line, line.len());
        let (start, first, _) = found.first()?;
        let value = if found.len() == 1 {
            if first.ends_with('/') {
                first.clone()
            } else {
                format!("{first} ")
            }
        } else {
            found.iter().fold(first.clone(), |common, (_, value, _)| {
                common
                    .chars()
                    .zip(value.chars())
                    .take_while(|(a, b)| a == b)
                    .map(|(a, _)| a)
                    .collect()
            })
        };
        let completed = format!("{}{value}", &line[..*start]);
        (completed.len() > line.len()).then_some(completed)
    }

    /// Workspace entries starting with `typed`: `dir/` for directories.
    fn paths(&self, typed: &str) -> Vec<String> {
        // Only relative paths below the root, never upwards.
        if typed.starts_with('/') || typed.split('/').any(|part| part == "..") {
            return Vec::new();
        }
        let (directory, prefix) = typed.rsplit_once('/').unwrap_or(("", typed));
        // A symlink may lead out of the workspace; its names stay there.
        let inside = std::fs::canonicalize(self.root.join(directory))
            .ok()
            .zip(std::fs::canonicalize(&self.root).ok())
            .is_some_and(|(dir, root)| dir.starts_with(root));
        if !inside {
            return Vec::new();
        }
        let Ok(entries) = std::fs::read_dir(self.root.join(directory)) else {
            return Vec::new();
        };
        let mut found: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.'))
                {
                    return None;
                }
                let is_dir = entry.file_type().ok()?.is_dir();
                let lead = if directory.is_empty() {
                    String::new()
                } else {
                    format!("{directory}/")
                };
                Some(format!("{lead}{name}{}", if is_dir { "/" } else { "" }))
            })
            .take(MAX_PATHS)
            .collect();
        found.sort();
        found
    }
}

impl Completer for Completions {
    fn complete(&mut self, line: &str, pos: usize) -> CompletionResult {
        let suggestions: Vec<Suggestion> = self
            .suggest(line, pos)
            .into_iter()
            .map(|(start, value, description)| Suggestion {
                append_whitespace: !value.ends_with('/'),
                value,
                description,
                span: Span::new(start, pos.min(line.len())),
                ..Suggestion::default()
            })
            .collect();
        CompletionResult::fresh(suggestions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(found: Vec<(usize, String, Option<String>)>) -> Vec<String> {
        found.into_iter().map(|(_, v, _)| v).collect()
    }

    #[test]
    fn commands_at_the_start_and_paths_after_an_at() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/ui")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("说明.md"), "").unwrap();
        std::fs::write(dir.path().join(".env"), "").unwrap();
        let completions = Completions::new(dir.path().to_owned());
        assert_eq!(values(completions.suggest("/mo", 3)), ["/models"]);
        assert!(completions.suggest("say /mo", 7).is_empty());
        assert_eq!(values(completions.suggest("fix @s", 6)), ["@src/"]);
        let found = completions.suggest("fix @src/", 9);
        assert_eq!(found[0].0, 4);
        assert_eq!(values(found), ["@src/main.rs", "@src/ui/"]);
        assert_eq!(
            values(completions.suggest("看 @说", "看 @说".len())),
            ["@说明.md"]
        );
        // Hidden files only when asked for; never outside the root.
        assert!(!values(completions.suggest("@", 1)).contains(&"@.env".to_owned()));
        assert_eq!(values(completions.suggest("@.e", 3)), ["@.env"]);
        assert!(completions.suggest("@../", 4).is_empty());
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        assert_eq!(values(completions.suggest("@et", 3)), ["@etc"]);
        assert!(completions.suggest("@etc/", 5).is_empty());
        assert!(completions.suggest("@/etc/", 6).is_empty());
    }
}
