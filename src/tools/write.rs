//! `write`: create or replace a file, atomically.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{BoxFuture, Error, Tool, ToolContext, ToolOutput, parse_arguments};
use crate::sandbox;

/// The `write` tool.
pub struct Write;

#[derive(Deserialize)]
struct Arguments {
    path: String,
    content: String,
}

impl Tool for Write {
    fn name(&self) -> &'static str {
        "write"
    }

    fn description(&self) -> &'static str {
        "Create or overwrite a file with the given content. Parent directories are created."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace"},
                "content": {"type": "string", "description": "The complete new content"}
            },
            "required": ["path", "content"]
        })
    }

    fn run<'a>(
        &'a self,
        arguments: Value,
        context: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, Error>> {
        Box::pin(async move {
            let arguments: Arguments = parse_arguments("write", arguments)?;
            let path = sandbox::resolve(&context.root, &arguments.path)?;
            let io = |action: &'static str| {
                let shown = arguments.path.clone();
                move |source| Error::Io {
                    action,
                    path: shown,
                    source,
                }
            };
            let previous = match std::fs::read(&path) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(io("read")(e)),
            };
            let lines = arguments.content.lines().count();
            let operation = match &previous {
                Some(old) if old == arguments.content.as_bytes() => {
                    return Ok(ToolOutput::ok(
                        format!("{} is unchanged", arguments.path),
                        format!("{}: unchanged", arguments.path),
                    ));
                }
                Some(_) => "updated",
                None => "created",
            };
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io("create the parent of"))?;
            }
            write_atomically(&path, arguments.content.as_bytes()).map_err(io("write"))?;
            Ok(ToolOutput::ok(
                format!("{operation} {} ({lines} lines)", arguments.path),
                format!("{}: {operation}, {lines} lines", arguments.path),
            ))
        })
    }
}

/// Writes through a temporary file in the same directory and renames it over
/// `path`, keeping an existing file's permissions: a crash leaves either the
/// old or the new content, never a mix.
pub fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let directory = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let temporary = directory.join(format!(
        ".{name}.offcode-{}-{:x}",
        std::process::id(),
        crate::client::random_u64() & 0xffff_ffff
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(content)?;
        if let Ok(metadata) = std::fs::metadata(path) {
            file.set_permissions(std::fs::Permissions::from_mode(
                metadata.permissions().mode(),
            ))?;
        }
        file.sync_data()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::Cancel;
    use pretty_assertions::assert_eq;

    #[tokio::test]
    async fn creates_updates_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let context = ToolContext {
            root: dir.path().to_path_buf(),
            cancel: Cancel::default(),
        };
        let run =
            |content: &str| Write.run(json!({"path": "sub/a.sh", "content": content}), &context);
        assert_eq!(
            run("x\n").await.unwrap().summary,
            "sub/a.sh: created, 1 lines"
        );
        let file = dir.path().join("sub/a.sh");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            run("x\ny\n").await.unwrap().summary,
            "sub/a.sh: updated, 2 lines"
        );
        assert_eq!(run("x\ny\n").await.unwrap().summary, "sub/a.sh: unchanged");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "x\ny\n");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("sub")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary files remain");
    }

    #[tokio::test]
    async fn escaping_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let context = ToolContext {
            root: dir.path().join("root"),
            cancel: Cancel::default(),
        };
        let error = Write
            .run(json!({"path": "../evil", "content": "x"}), &context)
            .await
            .unwrap_err();
        assert!(
            error.to_string().starts_with("outside_workspace"),
            "{error}"
        );
        assert!(!dir.path().join("evil").exists());
    }
}
