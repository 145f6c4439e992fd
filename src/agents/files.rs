//! Agent files: Markdown with YAML frontmatter, from a global folder and
//! from the project's `.offcode/agents/` (read through the sandbox).

use std::path::{Path, PathBuf};

use super::{Definition, Error};
use crate::sandbox::Sandbox;

/// Bytes of one agent file read.
const MAX_FILE_BYTES: usize = 64 * 1024;

/// A Markdown agent file: YAML frontmatter between `---` lines, then the
/// prompt. Errors point at the line and column in the file.
pub(super) fn parse_file(
    path: &Path,
    name: &str,
    text: &str,
) -> Result<(Definition, String), Error> {
    let fail = |line: Option<usize>, column: Option<usize>, message: String| Error {
        name: name.to_owned(),
        path: path.to_path_buf(),
        line,
        column,
        message,
    };
    let text = text.trim_start_matches('\u{feff}');
    let (front, body) = match text.strip_prefix("---") {
        Some(rest) if rest.starts_with(['\n', '\r']) => {
            let rest = rest.trim_start_matches('\r');
            let rest = rest.strip_prefix('\n').unwrap_or(rest);
            let end = rest
                .match_indices("---")
                .map(|(at, _)| at)
                .find(|at| *at == 0 || rest[..*at].ends_with('\n'))
                .ok_or_else(|| {
                    fail(
                        Some(1),
                        None,
                        "the frontmatter opened by `---` is never closed by another `---` line"
                            .to_owned(),
                    )
                })?;
            let after = &rest[end + 3..];
            (&rest[..end], after.split_once('\n').map_or("", |(_, b)| b))
        }
        _ => ("", text),
    };
    let mut definition = if front.trim().is_empty() {
        Definition::default()
    } else {
        serde_yaml_ng::from_str::<Definition>(front).map_err(|e| {
            // The frontmatter starts on the file's second line.
            let at = e.location();
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or_default();
            fail(
                at.as_ref().map(|l| l.line() + 1),
                at.as_ref().map(serde_yaml_ng::Location::column),
                message.to_owned(),
            )
        })?
    };
    let name = definition.name.take().unwrap_or_else(|| name.to_owned());
    let body = body.trim();
    if definition.prompt.is_none() && !body.is_empty() {
        definition.prompt = Some(body.to_owned());
    }
    Ok((definition, name))
}

/// The `*.md` files of a global agents folder, sorted by name.
pub(super) fn global_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| is_markdown(p))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(&path).ok()?;
            Some((path, cut(&bytes)))
        })
        .collect()
}

/// The project's agent files, read through the sandbox: `OpenCode`'s
/// `.opencode/agent/*.md` and `.opencode/agents/*.md`, then offcode's
/// `.offcode/agents/*.md` (laid last, so they win).
pub(super) fn project_files(sandbox: &Sandbox) -> Vec<(PathBuf, String)> {
    [".opencode/agent", ".opencode/agents", ".offcode/agents"]
        .iter()
        .flat_map(|dir| project_dir(sandbox, dir))
        .collect()
}

/// The global agent folders: `OpenCode`'s (`~/.config/opencode/agent`
/// and `agents`, beside `config_dir`), then offcode's `agents`.
pub(super) fn global_dirs(config_dir: &Path) -> Vec<PathBuf> {
    let opencode = config_dir.with_file_name("opencode");
    vec![
        opencode.join("agent"),
        opencode.join("agents"),
        config_dir.join("agents"),
    ]
}

fn project_dir(sandbox: &Sandbox, dir: &str) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(sandbox.root().join(dir)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_markdown(Path::new(n)))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let relative = format!("{dir}/{name}");
            let bytes = sandbox.read(&relative).ok()?;
            Some((PathBuf::from(relative), cut(&bytes)))
        })
        .collect()
}

fn is_markdown(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"))
}

fn cut(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FILE_BYTES)]).into_owned()
}
