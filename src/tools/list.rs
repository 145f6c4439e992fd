//! `list`: a directory's entries with type and size.

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

use super::walk::{builder, more_marker, relative};
use super::{BoxFuture, Error, Tool, ToolContext, ToolOutput, parse_arguments};

/// Entries listed at most.
const MAX_ENTRIES: usize = 500;

/// The `list` tool.
pub struct List;

#[derive(Deserialize)]
struct Arguments {
    #[serde(default)]
    path: Option<String>,
}

impl Tool for List {
    fn name(&self) -> &'static str {
        "list"
    }

    fn description(&self) -> &'static str {
        "List a directory's entries (dirs end in /, files show their size). Honours .gitignore."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Directory (default: the workspace root)"}}
        })
    }

    fn run<'a>(
        &'a self,
        arguments: Value,
        context: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, Error>> {
        Box::pin(async move {
            let arguments: Arguments = parse_arguments("list", arguments)?;
            let path = arguments.path.unwrap_or_else(|| ".".to_owned());
            let sandbox = &context.sandbox;
            let (mut walk, start) = builder(sandbox, &path, true)?;
            walk.max_depth(Some(1));
            let mut entries: Vec<(bool, String, String)> = Vec::new();
            for entry in walk.build().filter_map(Result::ok) {
                if entry.path() == start {
                    continue;
                }
                let shown = relative(sandbox, entry.path());
                if !sandbox.contains(&shown) {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(metadata) = entry.path().symlink_metadata() else {
                    continue;
                };
                let file_type = metadata.file_type();
                let (is_dir, text) = if file_type.is_dir() {
                    (true, format!("{name}/"))
                } else if file_type.is_symlink() {
                    let target = std::fs::read_link(entry.path()).unwrap_or_default();
                    (false, format!("{name} -> {}", target.display()))
                } else {
                    (false, format!("{name}  {}", human_size(metadata.len())))
                };
                entries.push((is_dir, name, text));
            }
            if entries.is_empty() {
                return Ok(ToolOutput::ok(
                    format!("{path} is empty"),
                    format!("{path}: empty"),
                ));
            }
            entries.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            let total = entries.len();
            let mut output = String::new();
            for (_, _, text) in entries.iter().take(MAX_ENTRIES) {
                let _ = writeln!(output, "{text}");
            }
            if total > MAX_ENTRIES {
                output.push_str(&more_marker(
                    total - MAX_ENTRIES,
                    "entries",
                    "use glob to narrow down",
                ));
            }
            Ok(ToolOutput::ok(
                output.trim_end().to_owned(),
                format!("{path}: {total} entries"),
            ))
        })
    }
}

fn human_size(bytes: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "one decimal is shown")]
    let value = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", value / 1024.0),
        _ => format!("{:.1} MB", value / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::tests::context;
    use pretty_assertions::assert_eq;

    #[tokio::test]
    async fn lists_dirs_first_honouring_gitignore() {
        let (dir, context) = context();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("a.log"), "x").unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "x".repeat(2048)).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc-link")).unwrap();
        let output = List.run(json!({}), &context).await.unwrap();
        assert_eq!(
            output.output,
            "src/\n.gitignore  14 B\nCargo.toml  2.0 KB\netc-link -> /etc"
        );
    }
}
