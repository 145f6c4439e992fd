//! `glob`: files matching a pattern, newest first or by path.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::WalkState;
use serde::Deserialize;
use serde_json::{Value, json};

use super::walk::{builder, more_marker, relative};
use super::{Effect, Error, Tool, ToolContext, ToolOutput};

/// Paths returned when no limit is given, and the most a call may ask for.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

/// The `glob` tool.
pub struct Glob;

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    sort: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for Glob {
    const NAME: &'static str = "glob";

    const DESCRIPTION: &'static str = "Find files by glob (**/*.rs), newest first.";
    const SUBJECT: Option<&'static str> = Some("pattern");
    const EFFECT: Effect = Effect::ReadsFiles;
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "limit": {"type": "integer"}
            },
            "required": ["pattern"]
        })
    }

    async fn run(&self, arguments: Arguments, context: &ToolContext) -> Result<ToolOutput, Error> {
        let sandbox = std::sync::Arc::clone(&context.sandbox);
        tokio::task::spawn_blocking(move || search(&sandbox, arguments))
            .await
            .map_err(|e| Error::Rejected(format!("the search failed: {e}")))?
    }
}

/// Walks and matches (blocking: runs off the async thread).
fn search(sandbox: &crate::sandbox::Sandbox, arguments: Arguments) -> Result<ToolOutput, Error> {
    let by_path = match arguments.sort.as_deref() {
        None | Some("modified") => false,
        Some("path") => true,
        Some(other) => {
            return Err(Error::InvalidArguments {
                tool: Glob::NAME,
                reason: format!("sort must be \"modified\" or \"path\", not \"{other}\""),
            });
        }
    };
    let matcher = GlobBuilder::new(&arguments.pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| Error::InvalidArguments {
            tool: Glob::NAME,
            reason: e.to_string(),
        })?
        .compile_matcher();
    let by_name = !arguments.pattern.contains('/');
    let path = arguments.path.unwrap_or_else(|| ".".to_owned());
    let hidden = arguments.pattern.starts_with('.') || arguments.pattern.contains("/.");
    let (mut walk, start) = builder(sandbox, &path, hidden)?;
    let found: Mutex<Vec<(SystemTime, String)>> = Mutex::new(Vec::new());
    walk.threads(std::thread::available_parallelism().map_or(2, |n| n.get().min(8)));
    walk.build_parallel().run(|| {
        let (matcher, found, start) = (&matcher, &found, &start);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let hit = if by_name {
                entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| matcher.is_match(name))
            } else {
                matcher.is_match(entry.path().strip_prefix(start).unwrap_or(entry.path()))
            };
            if hit {
                let modified = if by_path {
                    None
                } else {
                    entry.metadata().ok().and_then(|m| m.modified().ok())
                };
                let item = (
                    modified.unwrap_or(SystemTime::UNIX_EPOCH),
                    relative(sandbox, entry.path()),
                );
                if let Ok(mut found) = found.lock() {
                    found.push(item);
                }
            }
            WalkState::Continue
        })
    });
    let mut found = found.into_inner().unwrap_or_default();
    if by_path {
        found.sort_by(|a, b| a.1.cmp(&b.1));
    } else {
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    }
    let limit = arguments.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let mut output = String::new();
    let mut shown = 0;
    for (_, path) in &found {
        if shown == limit {
            break;
        }
        if sandbox.contains(path) {
            let _ = writeln!(output, "{path}");
            shown += 1;
        }
    }
    if found.len() > shown {
        output.push_str(&more_marker(
            found.len() - shown,
            "files",
            "narrow the pattern or raise limit",
        ));
    }
    if found.is_empty() {
        return Ok(ToolOutput::ok(
            format!("No files match `{}` in {path}", arguments.pattern),
            format!("{}: no files", arguments.pattern),
        ));
    }
    Ok(ToolOutput::ok(
        output.trim_end().to_owned(),
        format!("{}: {} files", arguments.pattern, found.len()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::DynTool;
    use crate::tools::tests::context;
    use pretty_assertions::assert_eq;

    #[tokio::test]
    async fn matches_names_or_paths_sorted_by_path() {
        let (dir, context) = context();
        for file in [
            "src/a.rs",
            "src/deep/b.rs",
            "c.rs",
            "notes.md",
            "target/x.rs",
        ] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        let run = |pattern: &str| Glob.call(json!({"pattern": pattern, "sort": "path"}), &context);
        assert_eq!(
            run("*.rs").await.unwrap().output,
            "c.rs\nsrc/a.rs\nsrc/deep/b.rs"
        );
        assert_eq!(run("src/*.rs").await.unwrap().output, "src/a.rs");
        assert_eq!(run("**/b.rs").await.unwrap().output, "src/deep/b.rs");
        let limited = Glob
            .call(
                json!({"pattern": "*.rs", "sort": "path", "limit": 1}),
                &context,
            )
            .await
            .unwrap();
        assert_eq!(
            limited.output,
            "c.rs\n[... 2 more files not shown; narrow the pattern or raise limit]"
        );
    }
}
