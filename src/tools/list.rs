//! `list`: a directory's entries with type and size.

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, Dir, FileType, OFlags, readlinkat, statat};

use super::walk::more_marker;
use super::{Effect, Error, Tool, ToolContext, ToolOutput};
use crate::sandbox::Sandbox;

/// Entries listed at most.
const MAX_ENTRIES: usize = 500;

/// The `list` tool.
pub struct List;

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    #[serde(default)]
    path: Option<String>,
}

impl Tool for List {
    const NAME: &'static str = "list";

    const DESCRIPTION: &'static str = "List a folder's entries.";
    const SUBJECT: Option<&'static str> = Some("path");
    const EFFECT: Effect = Effect::ReadsFiles;
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string"}}
        })
    }

    async fn run(&self, arguments: Arguments, context: &ToolContext) -> Result<ToolOutput, Error> {
        let path = arguments.path.unwrap_or_else(|| ".".to_owned());
        let mut entries = read_entries(&context.sandbox, &path)?;
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
    }
}

/// `(is a directory, name, line)` for each entry not ignored. The directory
/// is read through the descriptor the sandbox opened, so what is listed is
/// the directory that was checked, even if its path is swapped meanwhile.
fn read_entries(sandbox: &Sandbox, path: &str) -> Result<Vec<(bool, String, String)>, Error> {
    let directory = sandbox.open(path, OFlags::RDONLY | OFlags::DIRECTORY)?;
    let ignores = ignore_rules(sandbox, path)?;
    let absolute = sandbox.root().join(sandbox.relative(path)?);
    let io = |source: rustix::io::Errno| Error::Io {
        action: "list",
        path: path.to_owned(),
        source: source.into(),
    };
    let mut entries = Vec::new();
    for entry in Dir::read_from(&directory).map_err(io)? {
        let entry = entry.map_err(io)?;
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." || raw == b".git" {
            continue;
        }
        let name = String::from_utf8_lossy(raw).into_owned();
        let Ok(stat) = statat(&directory, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue; // removed meanwhile
        };
        let kind = FileType::from_raw_mode(stat.st_mode);
        let is_dir = kind == FileType::Directory;
        if is_ignored(&ignores, &absolute.join(&name), is_dir) {
            continue;
        }
        let text = match kind {
            FileType::Directory => format!("{name}/"),
            FileType::Symlink => {
                let target = readlinkat(&directory, entry.file_name(), Vec::new()).map_err(io)?;
                format!("{name} -> {}", target.to_string_lossy())
            }
            _ => format!(
                "{name}  {}",
                crate::protocol::format_size(u64::try_from(stat.st_size).unwrap_or(0))
            ),
        };
        entries.push((is_dir, name, text));
    }
    Ok(entries)
}

/// `.gitignore` and `.ignore` rules of the root and every directory down to
/// `path`, deepest last.
fn ignore_rules(sandbox: &Sandbox, path: &str) -> Result<Vec<Gitignore>, Error> {
    let relative = sandbox.relative(path)?;
    let mut directory = std::path::PathBuf::new();
    let mut levels = vec![directory.clone()];
    for component in relative.components() {
        if let std::path::Component::Normal(part) = component {
            directory.push(part);
            levels.push(directory.clone());
        }
    }
    let mut rules = Vec::new();
    for level in levels {
        let mut builder = GitignoreBuilder::new(sandbox.root().join(&level));
        let mut any = false;
        for file in [".gitignore", ".ignore"] {
            let candidate = level.join(file);
            if let Ok(bytes) = sandbox.read(&candidate.to_string_lossy()) {
                for line in String::from_utf8_lossy(&bytes).lines() {
                    any |= builder
                        .add_line(Some(sandbox.root().join(&candidate)), line)
                        .is_ok();
                }
            }
        }
        if any && let Ok(matcher) = builder.build() {
            rules.push(matcher);
        }
    }
    Ok(rules)
}

fn is_ignored(rules: &[Gitignore], path: &std::path::Path, is_dir: bool) -> bool {
    for rules in rules.iter().rev() {
        match rules.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::DynTool;
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
        let output = List.call(json!({}), &context).await.unwrap();
        assert_eq!(
            output.output,
            "src/\n.gitignore  14 B\nCargo.toml  2.0 KB\netc-link -> /etc"
        );
    }
}
