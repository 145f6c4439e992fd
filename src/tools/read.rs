//! `read`: a text file's lines with line numbers.

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

use super::text::Text;
use super::{Effect, Error, Tool, ToolContext, ToolOutput};

/// Lines returned when no `limit` is given.
const DEFAULT_LIMIT: usize = 2000;
/// Bytes of file text returned at most.
const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// Lines longer than this are cut.
const MAX_LINE_CHARS: usize = 2000;

/// The `read` tool.
pub struct Read;

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl Tool for Read {
    const NAME: &'static str = "read";

    const DESCRIPTION: &'static str = "Read a file as numbered lines (offset: first line, limit).";
    const SUBJECT: Option<&'static str> = Some("path");
    const EFFECT: Effect = Effect::ReadsFiles;
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer"},
                "limit": {"type": "integer"}
            },
            "required": ["path"]
        })
    }

    async fn run(&self, arguments: Arguments, context: &ToolContext) -> Result<ToolOutput, Error> {
        let bytes = context.sandbox.read(&arguments.path)?;
        let (text, encoding) = match super::text::decode(&bytes) {
            Text::Binary => return Err(Error::Binary(arguments.path)),
            Text::Utf8(text) => (text, None),
            Text::Decoded { text, encoding } => (text, Some(encoding)),
        };
        // A short file is read to its end whatever `limit` says: small
        // models ask for one line of a four-line file and guess the rest.
        let offset = arguments.offset.unwrap_or(1).max(1);
        let limit = if text.lines().count() <= SHORT_FILE_LINES {
            DEFAULT_LIMIT
        } else {
            arguments.limit.unwrap_or(DEFAULT_LIMIT).max(1)
        };
        let mut output = number_lines(&text, offset, limit, &arguments.path);
        if let Some(encoding) = encoding {
            // Said to the model and to the user: the text is decoded, and
            // changing the file would re-encode it.
            output.output = format!(
                "[`{}` is {encoding} text, not UTF-8; shown decoded. edit, patch and write \
                 would re-encode it as UTF-8, so do not change it unless the user asks]\n{}",
                arguments.path, output.output
            );
            let _ = write!(output.summary, " ({encoding}, not UTF-8)");
        }
        Ok(output)
    }
}

/// Lines up to which a file is read to its end, whatever `limit` says.
const SHORT_FILE_LINES: usize = 50;

/// Lines `offset..offset+limit` of `text`, numbered, within the byte budget,
/// with a marker saying how to read on when anything was left out.
fn number_lines(text: &str, offset: usize, limit: usize, path: &str) -> ToolOutput {
    let total = text.lines().count();
    if total == 0 {
        return ToolOutput::ok(format!("({path} is empty)"), format!("{path}: empty"));
    }
    if offset > total {
        return ToolOutput::error(format!(
            "offset {offset} is past the end of `{path}`, which has {total} lines"
        ));
    }
    let mut output = String::new();
    let mut last = offset - 1;
    for (number, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
        let cut = if shown.len() < line.len() {
            " [line cut]"
        } else {
            ""
        };
        let entry = format!("{:>6}\t{shown}{cut}\n", number + 1);
        if output.len() + entry.len() > MAX_OUTPUT_BYTES && last >= offset {
            break;
        }
        output.push_str(&entry);
        last = number + 1;
    }
    if last < total {
        let _ = writeln!(
            output,
            "[... {}: file has {total} lines; read on with offset={}]",
            crate::protocol::count(total - last, "more line"),
            last + 1
        );
    }
    ToolOutput::ok(output, format!("{path}: lines {offset}-{last} of {total}"))
}

/// Whether every line of `text` starts with a line number the way `read`
/// shows it (right-aligned in six columns, then a TAB), numbered one after
/// another: lines copied from a read, numbers and all. A file's own
/// numbered lines (a TSV's id column) are not padded so.
pub fn numbered_as_read(text: &str) -> bool {
    let mut expected = None;
    let mut lines = 0;
    for line in text.lines() {
        let Some((number, _)) = line.split_once('\t') else {
            return false;
        };
        let digits = number.trim_start_matches(' ');
        let width_ok = number.len() == 6 || (number.len() > 6 && digits.len() == number.len());
        let Ok(value) = digits.parse::<usize>() else {
            return false;
        };
        if !width_ok || digits.is_empty() || expected.is_some_and(|e| e != value) {
            return false;
        }
        expected = Some(value + 1);
        lines += 1;
    }
    lines > 0
}

/// What to tell a model that wrote `read`'s line numbers into a file.
pub const NUMBERED_AS_READ: &str = "every line starts with a line number and a TAB, as `read` shows lines; they are not part of the file, so leave them out";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::DynTool;
    use pretty_assertions::assert_eq;

    #[test]
    fn numbers_lines_and_marks_the_rest() {
        let output = number_lines("a\nb\r\nc\n", 2, 1, "f");
        assert_eq!(
            output,
            ToolOutput::ok(
                "     2\tb\n[... 1 more line: file has 3 lines; read on with offset=3]\n",
                "f: lines 2-2 of 3"
            )
        );
    }

    #[test]
    fn cjk_text_is_exact() {
        let output = number_lines("你好，世界\n", 1, 10, "中文.txt");
        assert_eq!(output.output, "     1\t你好，世界\n");
    }

    #[tokio::test]
    async fn a_short_file_is_read_to_its_end_whatever_limit_is_asked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            "{\n  \"name\": \"api\",\n  \"port\": 7341\n}\n",
        )
        .unwrap();
        let mut many = String::new();
        for n in 1..=60 {
            let _ = writeln!(many, "line {n}");
        }
        std::fs::write(dir.path().join("long.txt"), many).unwrap();
        let (_dir, mut context) = crate::tools::tests::context();
        context.sandbox = std::sync::Arc::new(crate::sandbox::Sandbox::new(dir.path()).unwrap());
        let read = |args: serde_json::Value| Read.call(args, &context);
        let short = read(serde_json::json!({"path": "config.json", "offset": 1, "limit": 1}))
            .await
            .unwrap();
        assert!(short.output.contains("\"port\": 7341"), "{}", short.output);
        let long = read(serde_json::json!({"path": "long.txt", "offset": 2, "limit": 1}))
            .await
            .unwrap();
        assert!(
            long.output.starts_with("     2\tline 2\n[..."),
            "{}",
            long.output
        );
    }

    #[test]
    fn offset_past_end_is_an_error() {
        assert!(!number_lines("a\n", 5, 1, "f").ok);
    }

    #[test]
    fn byte_budget_cuts_with_a_marker() {
        let text = "x".repeat(1000) + "\n";
        let output = number_lines(&text.repeat(200), 1, 2000, "big");
        assert!(output.output.len() <= MAX_OUTPUT_BYTES + 200);
        assert!(
            output.output.ends_with("read on with offset=51]\n"),
            "{}",
            &output.output[output.output.len() - 80..]
        );
    }

    #[test]
    fn lines_copied_from_a_read_are_told_from_a_files_own_numbers() {
        assert!(numbered_as_read("     1\thello world\n"));
        assert!(numbered_as_read("    41\tfn main() {\n    42\t}\n"));
        assert!(numbered_as_read("1000000\tx\n1000001\ty"));
        // Not one after another, not padded as read pads, or not all lines.
        assert!(!numbered_as_read("     1\ta\n     3\tb\n"));
        assert!(!numbered_as_read("1\tapple\n2\tpear\n"));
        assert!(!numbered_as_read("     1\ta\nplain\n"));
        assert!(!numbered_as_read(""));
        assert!(!numbered_as_read("HELLO WORLD\n"));
    }
}
