//! `{env:NAME}` and `{file:path}` in a config file's text, as `OpenCode`
//! reads them: anywhere in the file but its comments, replaced before the
//! file is parsed. Inside a string the value is escaped as string content,
//! so a file with quotes or new lines stays one string; outside one it is
//! put in as it is (`"max_tokens": {env:MAX_TOKENS}`).
//!
//! A variable that is not set, or a file that cannot be read, is an error
//! naming the place, where `OpenCode` would put in nothing. A project's
//! file may not read variables at all, and only files inside the
//! workspace: what it reads would reach the prompt, the model and what the
//! model writes.

use std::path::{Path, PathBuf};

use super::layer::FileProblem;

/// What a file may read.
pub struct Reach<'a> {
    /// The file's folder: relative `{file:...}` paths start there.
    pub folder: &'a Path,
    /// The home folder, for `~/`.
    pub home: Option<&'a Path>,
    /// Environment variables.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// For a project's file: the workspace, the only place it may read,
    /// and no variables.
    pub project_root: Option<&'a Path>,
}

/// The text with every substitution made.
pub fn substitute(text: &str, reach: &Reach<'_>) -> Result<String, FileProblem> {
    if !text.contains("{env:") && !text.contains("{file:") {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut state = State::Code;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let at = text.len() - rest.len();
        if state.substitutes()
            && let Some((token, kind, argument)) = token(rest)
        {
            let value = resolve(kind, argument, reach).map_err(|message| {
                let (line, column) = position(text, at);
                FileProblem {
                    line: Some(line),
                    column: Some(column),
                    message,
                }
            })?;
            if matches!(state, State::String(_)) {
                // As string content: quotes, backslashes and new lines escaped.
                let quoted = serde_json::to_string(&value).unwrap_or_default();
                out.push_str(&quoted[1..quoted.len() - 1]);
            } else {
                out.push_str(&value);
            }
            rest = &rest[token.len()..];
            continue;
        }
        state = state.after(c, rest[c.len_utf8()..].chars().next());
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

/// Where the reader is in the JSONC text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    /// In a string opened by this quote.
    String(char),
    /// The character after a backslash in a string.
    Escaped(char),
    LineComment,
    BlockComment,
    /// The `/` of a `*/` closing a block comment is next.
    BlockEnd,
}

impl State {
    const fn substitutes(self) -> bool {
        matches!(self, Self::Code | Self::String(_))
    }

    /// The state after `c`, with `next` the character that follows it.
    fn after(self, c: char, next: Option<char>) -> Self {
        match (self, c) {
            (Self::Code, '"' | '\'') => Self::String(c),
            (Self::Code, '/') if next == Some('/') => Self::LineComment,
            (Self::Code, '/') if next == Some('*') => Self::BlockComment,
            (Self::String(quote), '\\') => Self::Escaped(quote),
            (Self::String(quote), c) if c == quote => Self::Code,
            (Self::Escaped(quote), _) => Self::String(quote),
            (Self::LineComment, '\n') | (Self::BlockEnd, _) => Self::Code,
            (Self::BlockComment, '*') if next == Some('/') => Self::BlockEnd,
            (state, _) => state,
        }
    }
}

/// How deep `{` and `[` may nest: a parser that recurses must not meet a
/// file that overflows its stack.
pub const DEEPEST: usize = 64;

/// Where `text` first nests deeper than [`DEEPEST`], as line and column.
pub fn too_deep(text: &str) -> Option<(usize, usize)> {
    let mut state = State::Code;
    let mut depth = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if state == State::Code {
            match c {
                '{' | '[' => {
                    depth += 1;
                    if depth > DEEPEST {
                        return Some(position(text, at));
                    }
                }
                '}' | ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        state = state.after(c, chars.peek().map(|(_, next)| *next));
    }
    None
}

/// `{env:NAME}` or `{file:path}` at the start of `text`: the whole token,
/// its kind and its argument.
fn token(text: &str) -> Option<(&str, &str, &str)> {
    let kind = if text.starts_with("{env:") {
        "env"
    } else if text.starts_with("{file:") {
        "file"
    } else {
        return None;
    };
    let end = text.find('}')?;
    let argument = &text[kind.len() + 2..end];
    (!argument.contains('\n')).then(|| (&text[..=end], kind, argument))
}

fn resolve(kind: &str, argument: &str, reach: &Reach<'_>) -> Result<String, String> {
    let argument = argument.trim();
    if kind == "env" {
        if reach.project_root.is_some() {
            return Err(format!(
                "`{{env:{argument}}}`: a project's config may not read environment variables (they would reach the prompt and the model); set it in your global config or the file named by OFFCODE_CONFIG"
            ));
        }
        return (reach.var)(argument)
            .ok_or_else(|| format!("`{{env:{argument}}}`: the variable `{argument}` is not set"));
    }
    let path = match (argument.strip_prefix("~/"), reach.home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => reach.folder.join(argument),
    };
    if let Some(root) = reach.project_root {
        let inside = std::fs::canonicalize(&path)
            .ok()
            .zip(std::fs::canonicalize(root).ok())
            .is_some_and(|(path, root)| path.starts_with(root));
        if !inside {
            return Err(format!(
                "`{{file:{argument}}}`: a project's config may only read files inside the workspace"
            ));
        }
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "`{{file:{argument}}}`: could not read `{}`: {e}",
            shown(&path)
        )
    })?;
    Ok(text.trim_end_matches('\n').to_owned())
}

fn shown(path: &Path) -> String {
    PathBuf::from(path).display().to_string()
}

/// The 1-based line and column of byte `at` in `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before, |newline| &before[newline + 1..])
        .chars()
        .count()
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(text: &str, project: bool) -> Result<String, FileProblem> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("prompt.txt"), "Be \"brief\".\nReally.\n").unwrap();
        let var = |name: &str| (name == "GPU_KEY").then(|| "s3cret".to_owned());
        let reach = Reach {
            folder: dir.path(),
            home: None,
            var: &var,
            project_root: project.then_some(dir.path()),
        };
        substitute(text, &reach)
    }

    #[test]
    fn values_are_put_in_strings_escaped_and_elsewhere_as_they_are() {
        let text = "{\n  // {env:NOT_SET} in a comment stays\n  \"apiKey\": \"{env:GPU_KEY}\",\n  \"prompt\": \"{file:./prompt.txt}\",\n  /* {file:nope} */ \"n\": {env:GPU_KEY}\n}";
        let done = with(text, false).unwrap();
        assert!(done.contains("\"apiKey\": \"s3cret\""), "{done}");
        assert!(
            done.contains(r#""prompt": "Be \"brief\".\nReally.""#),
            "{done}"
        );
        assert!(
            done.contains("// {env:NOT_SET} in a comment stays"),
            "{done}"
        );
        assert!(done.contains("/* {file:nope} */ \"n\": s3cret"), "{done}");
        let value: serde_json::Value = json5::from_str(&done.replace("s3cret\n", "1\n")).unwrap();
        assert_eq!(value["prompt"], "Be \"brief\".\nReally.");
    }

    #[test]
    fn a_missing_variable_or_file_is_named_with_its_place() {
        let problem = with(
            "{\n  \"a\": 1,\n    \"apiKey\": \"{env:MISSING}\"\n}",
            false,
        )
        .unwrap_err();
        assert_eq!((problem.line, problem.column), (Some(3), Some(16)));
        assert!(
            problem.message.contains("`MISSING` is not set"),
            "{}",
            problem.message
        );
        let problem = with("{ \"prompt\": \"{file:gone.txt}\" }", false).unwrap_err();
        assert_eq!((problem.line, problem.column), (Some(1), Some(14)));
        assert!(
            problem.message.contains("could not read"),
            "{}",
            problem.message
        );
    }

    #[test]
    fn a_project_reads_no_variables_and_no_file_outside_the_workspace() {
        let problem = with("{ \"apiKey\": \"{env:GPU_KEY}\" }", true).unwrap_err();
        assert!(
            problem
                .message
                .contains("may not read environment variables"),
            "{}",
            problem.message
        );
        let problem = with("{ \"prompt\": \"{file:/etc/hostname}\" }", true).unwrap_err();
        assert!(
            problem.message.contains("inside the workspace"),
            "{}",
            problem.message
        );
        let problem = with(
            "{ \"prompt\": \"{file:../../../../../../etc/hostname}\" }",
            true,
        )
        .unwrap_err();
        assert!(
            problem.message.contains("inside the workspace"),
            "{}",
            problem.message
        );
        assert!(
            with("{ \"prompt\": \"{file:prompt.txt}\" }", true)
                .unwrap()
                .contains("brief")
        );
    }
}
