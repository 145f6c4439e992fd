//! `edit`: replace an exact string in a file.

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

use super::write::{preview_write, write_file};
use super::{Effect, Error, Tool, ToolContext, ToolOutput};
use crate::protocol::ToolDisplay;

/// The `edit` tool.
pub struct Edit;

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

impl Tool for Edit {
    const NAME: &'static str = "edit";

    const DESCRIPTION: &'static str =
        "Replace exact old_string with new_string in a file (once, unless replace_all).";
    const SUBJECT: Option<&'static str> = Some("path");
    const EFFECT: Effect = Effect::ChangesFiles;
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            },
            "required": ["path", "old_string", "new_string"]
        })
    }

    async fn run(&self, arguments: Arguments, context: &ToolContext) -> Result<ToolOutput, Error> {
        let bytes = context.sandbox.read(&arguments.path)?;
        let text =
            super::text::changeable("edit", &arguments.path, bytes).map_err(Error::Rejected)?;
        match replace(&text, &arguments) {
            Ok(updated) => write_file(&context.sandbox, &arguments.path, &updated, Some(&text)),
            Err(error) => in_place(&text, &arguments).ok_or(error),
        }
    }

    fn preview(
        &self,
        arguments: &Arguments,
        context: &ToolContext,
    ) -> Option<Result<ToolDisplay, Error>> {
        Some(
            context
                .sandbox
                .read(&arguments.path)
                .map_err(Error::from)
                .and_then(|bytes| {
                    let text = super::text::changeable("edit", &arguments.path, bytes)
                        .map_err(Error::Rejected)?;
                    let updated = replace(&text, arguments).or_else(|error| {
                        // Nothing to show: the file stays as it is.
                        in_place(&text, arguments)
                            .map(|_| text.clone())
                            .ok_or(error)
                    })?;
                    preview_write(&context.sandbox, &arguments.path, &updated, Some(&text))
                }),
        )
    }
}

/// The file's text with the replacement made, or why it cannot be made.
fn replace(text: &str, arguments: &Arguments) -> Result<String, Error> {
    let path = &arguments.path;
    if arguments.old_string.is_empty() {
        return Err(Error::Rejected(format!(
            "old_string is empty; to create `{path}` use write"
        )));
    }
    if arguments.old_string == arguments.new_string {
        return Err(Error::Rejected(
            "old_string and new_string are the same: new_string is the text as it should read after the change".to_owned(),
        ));
    }
    if super::read::numbered_as_read(&arguments.new_string)
        && !super::read::numbered_as_read(&arguments.old_string)
    {
        return Err(Error::Rejected(format!(
            "`{path}` was not changed: in new_string, {}",
            super::read::NUMBERED_AS_READ
        )));
    }
    // A CRLF file and LF arguments (what models send): match and write CRLF.
    let crlf = text.contains("\r\n") && !arguments.old_string.contains("\r\n");
    let convert = |s: &str| {
        if crlf {
            s.replace('\n', "\r\n")
        } else {
            s.to_owned()
        }
    };
    let (old, new) = (
        convert(&arguments.old_string),
        convert(&arguments.new_string),
    );
    let starts: Vec<usize> = text.match_indices(&old).map(|(at, _)| at).collect();
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    match starts.len() {
        0 => Err(Error::Rejected(not_found_message(
            text,
            &arguments.old_string,
            path,
        ))),
        1 => Ok(text.replacen(&old, &new, 1)),
        count if arguments.replace_all => {
            let _ = count;
            Ok(text.replace(&old, &new))
        }
        count => {
            let lines: Vec<String> = starts.iter().map(|&at| line_of(at).to_string()).collect();
            Err(Error::Rejected(format!(
                "old_string matches {count} places in `{path}` (lines {}). To change every one, send the same call with \"replace_all\": true; to change one, make old_string longer (more of its line) so it matches once",
                lines.join(", ")
            )))
        }
    }
}

/// The result of an edit whose change is in the file already: `old_string`
/// is not there, and `new_string` is. A small model sends the edit it made
/// again; that is no failure to report, and no reason to try another
/// change. It changes nothing either: a task is not done by it. (An edit of
/// a text into itself stays a failure: the 1.5B model sent `add` as both,
/// and said it had added `sub`.)
fn in_place(text: &str, arguments: &Arguments) -> Option<ToolOutput> {
    /// Characters of `new_string` below which finding it proves nothing.
    const MIN_NEW: usize = 3;
    let (old, new) = (&arguments.old_string, arguments.new_string.trim());
    if new.chars().count() < MIN_NEW || old == &arguments.new_string || text.contains(old.as_str())
    {
        return None;
    }
    let crlf = text.contains("\r\n");
    let found = if crlf {
        new.replace('\n', "\r\n")
    } else {
        new.to_owned()
    };
    let at = text.find(&found)?;
    let line = text[..at].matches('\n').count() + 1;
    let path = &arguments.path;
    let output = ToolOutput::ok(
        format!(
            "`{path}` already has new_string (line {line}), and not old_string: the change is made. Nothing was written."
        ),
        format!("{path}: already so"),
    );
    Some(ToolOutput {
        in_place: true,
        ..output
    })
}

/// Says the string is missing, and where a whitespace-insensitive match of
/// its first line is, if anywhere.
fn not_found_message(text: &str, old: &str, path: &str) -> String {
    let mut message = format!("old_string was not found in `{path}`");
    if super::read::numbered_as_read(old) {
        let _ = write!(
            message,
            ": in old_string, {}",
            super::read::NUMBERED_AS_READ
        );
        return message;
    }
    let first = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let near: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !first.is_empty() && line.trim() == first)
        .map(|(number, _)| number + 1)
        .take(5)
        .collect();
    if near.is_empty() {
        message.push_str("; read the file to see its current text");
    } else {
        let lines: Vec<String> = near.iter().map(ToString::to_string).collect();
        let _ = write!(
            message,
            "; a line matching its first line apart from whitespace is at line {}: check indentation and the following lines",
            lines.join(", ")
        );
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::DynTool;
    use crate::tools::tests::context;
    use pretty_assertions::assert_eq;

    fn arguments(old: &str, new: &str, replace_all: bool) -> Arguments {
        Arguments {
            path: "f.rs".into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all,
        }
    }

    #[test]
    fn unique_match_is_replaced_and_duplicates_are_reported_with_lines() {
        let text = "a\nfoo\nb\nfoo\n";
        assert_eq!(
            replace(text, &arguments("b\n", "c\n", false)).unwrap(),
            "a\nfoo\nc\nfoo\n"
        );
        let error = replace(text, &arguments("foo", "bar", false)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "old_string matches 2 places in `f.rs` (lines 2, 4). To change every one, send the same call with \"replace_all\": true; to change one, make old_string longer (more of its line) so it matches once"
        );
        assert_eq!(
            replace(text, &arguments("foo", "bar", true)).unwrap(),
            "a\nbar\nb\nbar\n"
        );
    }

    #[test]
    fn crlf_files_keep_their_line_endings() {
        let text = "one\r\ntwo\r\nthree\r\n";
        assert_eq!(
            replace(text, &arguments("two\nthree", "2\n3", false)).unwrap(),
            "one\r\n2\r\n3\r\n"
        );
    }

    #[test]
    fn missing_string_points_at_a_whitespace_near_miss() {
        let error = replace(
            "fn a() {\n    let x = 1;\n}\n",
            &arguments("let x = 1;\n  }", "", false),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "old_string was not found in `f.rs`; a line matching its first line apart from whitespace is at line 2: check indentation and the following lines"
        );
    }

    #[tokio::test]
    async fn edits_a_file_through_the_tool() {
        let (dir, context) = context();
        std::fs::write(dir.path().join("f.rs"), "let a = 1;\n").unwrap();
        let output = Edit
            .call(
                json!({"path": "f.rs", "old_string": "1", "new_string": "2"}),
                &context,
            )
            .await
            .unwrap();
        assert_eq!(output.summary, "f.rs: updated, +1 -1");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
            "let a = 2;\n"
        );
    }

    #[tokio::test]
    async fn an_edit_whose_change_is_there_already_is_no_failure() {
        // The 0.5B model's edits after out.txt already read HELLO WORLD.
        let (dir, context) = context();
        let file = dir.path().join("out.txt");
        std::fs::write(&file, "HELLO WORLD\n").unwrap();
        let modified = || std::fs::metadata(&file).unwrap().modified().unwrap();
        let before = modified();
        for (old, new) in [("hello", "HELLO WORLD"), ("hello world", "HELLO WORLD")] {
            let output = Edit
                .call(
                    json!({"path": "out.txt", "old_string": old, "new_string": new}),
                    &context,
                )
                .await
                .unwrap();
            assert!(output.ok && output.in_place, "{old} -> {new}: {output:?}");
            assert_eq!(
                output.output,
                "`out.txt` already has new_string (line 1), and not old_string: the change is made. Nothing was written."
            );
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "HELLO WORLD\n");
        assert_eq!(modified(), before);
        // Neither old nor new there, a new text too short to tell, the old
        // text there more than once, or a text edited into itself: failures
        // as before.
        for (old, new) in [
            ("bye", "BYE NOW"),
            ("hello", "LD"),
            ("O", "WORLD"),
            ("HELLO WORLD", "HELLO WORLD"),
        ] {
            let error = Edit
                .call(
                    json!({"path": "out.txt", "old_string": old, "new_string": new}),
                    &context,
                )
                .await
                .unwrap_err();
            assert!(error.to_string().contains("old_string"), "{old}: {error}");
        }
    }
}
