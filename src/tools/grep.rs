//! `grep`: regex search over the workspace with grep-searcher, walking in
//! parallel like ripgrep; every file is opened through the sandbox.

use std::fmt::Write as _;
use std::fs::File;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use globset::GlobBuilder;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use rustix::fs::OFlags;
use serde::Deserialize;
use serde_json::{Value, json};

use super::walk::{builder, relative};
use super::{Effect, Error, Tool, ToolContext, ToolOutput};
use crate::sandbox::Sandbox;

const DEFAULT_MATCHES: usize = 100;
const MAX_MATCHES: usize = 1000;
const MAX_CONTEXT: usize = 10;
/// Characters of a line shown.
const MAX_LINE_CHARS: usize = 300;

/// The `grep` tool.
pub struct Grep;

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    include: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    context: Option<usize>,
    #[serde(default)]
    max_results: Option<usize>,
    #[serde(default)]
    hidden: bool,
}

impl Tool for Grep {
    const NAME: &'static str = "grep";

    const DESCRIPTION: &'static str = "Search files for a regex.";
    const SUBJECT: Option<&'static str> = Some("pattern");
    const EFFECT: Effect = Effect::ReadsFiles;
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "include": {"type": "string", "description": "File glob, e.g. *.rs"},
                "case_insensitive": {"type": "boolean"},
                "context": {"type": "integer"}
            },
            "required": ["pattern"]
        })
    }

    async fn run(&self, arguments: Arguments, context: &ToolContext) -> Result<ToolOutput, Error> {
        let sandbox = std::sync::Arc::clone(&context.sandbox);
        tokio::task::spawn_blocking(move || search(&sandbox, &arguments))
            .await
            .map_err(|e| Error::Rejected(format!("the search failed: {e}")))?
    }
}

/// One file's matched and context lines: (line number, is a match, text).
type FileHits = (String, Vec<(u64, bool, String)>);

fn search(sandbox: &Sandbox, arguments: &Arguments) -> Result<ToolOutput, Error> {
    let invalid = |reason: String| Error::InvalidArguments {
        tool: Grep::NAME,
        reason,
    };
    let regex = RegexMatcherBuilder::new()
        .case_insensitive(arguments.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&arguments.pattern)
        .map_err(|e| invalid(e.to_string()))?;
    let include = match &arguments.include {
        Some(glob) => Some(
            GlobBuilder::new(glob)
                .literal_separator(glob.contains('/'))
                .build()
                .map_err(|e| invalid(e.to_string()))?
                .compile_matcher(),
        ),
        None => None,
    };
    let context_lines = arguments.context.unwrap_or(0).min(MAX_CONTEXT);
    let limit = arguments
        .max_results
        .unwrap_or(DEFAULT_MATCHES)
        .clamp(1, MAX_MATCHES);
    let path = arguments.path.clone().unwrap_or_else(|| ".".to_owned());
    let (mut walk, start) = builder(sandbox, &path, arguments.hidden)?;
    walk.threads(std::thread::available_parallelism().map_or(2, |n| n.get().min(8)));
    let match_count = AtomicUsize::new(0);
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    walk.build_parallel().run(|| {
        let regex = regex.clone();
        let include = include.clone();
        let (match_count, hits, start) = (&match_count, &hits, &start);
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context_lines)
            .after_context(context_lines)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if match_count.load(Ordering::Relaxed) >= limit {
                return WalkState::Quit;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            // A file named as the path is searched whatever `include` says
            // (a small model adds `"include": "*.rs"` to a search of a log).
            if let Some(include) = include.as_ref().filter(|_| entry.depth() > 0) {
                let candidate = entry.path().strip_prefix(start).unwrap_or(entry.path());
                let by_name = entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| include.is_match(n));
                if !by_name && !include.is_match(candidate) {
                    return WalkState::Continue;
                }
            }
            let shown = relative(sandbox, entry.path());
            let Ok((fd, _)) = sandbox.open_file(&shown, OFlags::NOFOLLOW) else {
                return WalkState::Continue;
            };
            let mut sink = Collect {
                lines: Vec::new(),
                matched: match_count,
                limit,
            };
            if searcher
                .search_file(&regex, &File::from(fd), &mut sink)
                .is_ok()
                && !sink.lines.is_empty()
                && let Ok(mut hits) = hits.lock()
            {
                hits.push((shown, sink.lines));
            }
            WalkState::Continue
        })
    });
    let mut hits = hits.into_inner().unwrap_or_default();
    hits.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(format_hits(
        &arguments.pattern,
        &hits,
        limit,
        context_lines > 0,
    ))
}

fn format_hits(pattern: &str, hits: &[FileHits], limit: usize, with_context: bool) -> ToolOutput {
    let files = hits.len();
    let mut output = String::new();
    let mut shown = 0;
    let mut total = 0;
    for (path, lines) in hits {
        let mut previous: Option<u64> = None;
        for (number, is_match, text) in lines {
            if *is_match {
                total += 1;
                if shown == limit {
                    continue;
                }
                shown += 1;
            } else if shown == limit {
                continue;
            }
            if with_context && previous.is_some_and(|p| p + 1 < *number) {
                output.push_str("--\n");
            }
            let separator = if *is_match { ':' } else { '-' };
            let _ = writeln!(output, "{path}{separator}{number}{separator}{text}");
            previous = Some(*number);
        }
    }
    if total == 0 {
        return ToolOutput::ok(
            format!("No matches for `{pattern}`"),
            format!("{pattern}: no matches"),
        );
    }
    if total >= limit {
        let _ = write!(
            output,
            "[... stopped at {limit} matches; more may exist: narrow the pattern or path, or raise max_results]"
        );
    } else {
        // Counted for the model, first: a small one cannot count the
        // lines, and reads a count after them less often (1.5B: 6 of 6
        // wrote the count given first; 1 of 6 wrote a count given last,
        // and that one wrong).
        output.insert_str(
            0,
            &format!(
                "{} in {}:\n",
                crate::protocol::count(shown, "matching line"),
                crate::protocol::count(files, "file")
            ),
        );
    }
    ToolOutput::ok(
        output.trim_end().to_owned(),
        format!("{pattern}: {shown} matches in {files} files"),
    )
}

/// Collects matched and context lines up to the shared limit.
struct Collect<'a> {
    lines: Vec<(u64, bool, String)>,
    matched: &'a AtomicUsize,
    limit: usize,
}

fn shorten(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() > MAX_LINE_CHARS {
        let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        format!("{cut}…")
    } else {
        text.to_owned()
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let count = self.matched.fetch_add(1, Ordering::Relaxed) + 1;
        self.lines.push((
            found.line_number().unwrap_or(0),
            true,
            shorten(found.bytes()),
        ));
        Ok(count < self.limit)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.lines.push((
            context.line_number().unwrap_or(0),
            false,
            shorten(context.bytes()),
        ));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::DynTool;
    use crate::tools::tests::context;
    use pretty_assertions::assert_eq;

    #[tokio::test]
    async fn finds_matches_with_context_and_filters() {
        let (dir, context) = context();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/a.rs"),
            "fn main() {\n    let 变量 = 1;\n}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.md"), "LET it be\n").unwrap();
        std::fs::write(dir.path().join("bin.dat"), b"let\0binary").unwrap();
        std::fs::write(dir.path().join(".hidden"), "let hidden\n").unwrap();
        let run = |args: Value| Grep.call(args, &context);
        assert_eq!(
            run(json!({"pattern": "let"})).await.unwrap().output,
            "1 matching line in 1 file:\nsrc/a.rs:2:    let 变量 = 1;"
        );
        assert_eq!(
            run(json!({"pattern": "let", "case_insensitive": true, "include": "*.md"}))
                .await
                .unwrap()
                .output,
            "1 matching line in 1 file:\nnotes.md:1:LET it be"
        );
        // A file named as the path is searched whatever `include` says.
        assert_eq!(
            run(json!({"pattern": "LET", "path": "notes.md", "include": "*.rs"}))
                .await
                .unwrap()
                .output,
            "1 matching line in 1 file:\nnotes.md:1:LET it be"
        );
        // Context lines are not counted.
        assert_eq!(
            run(json!({"pattern": "变量", "context": 1}))
                .await
                .unwrap()
                .output,
            "1 matching line in 1 file:\nsrc/a.rs-1-fn main() {\nsrc/a.rs:2:    let 变量 = 1;\nsrc/a.rs-3-}"
        );
        let error = run(json!({"pattern": "("})).await.unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("Invalid arguments for `grep`"),
            "{error}"
        );
    }
}
