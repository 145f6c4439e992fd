//! `write`: create or replace a file, atomically, inside the workspace.

use serde::Deserialize;
use serde_json::{Value, json};

use super::diff::{count_lines, counts, file_diff};
use super::{Effect, Error, Tool, ToolContext, ToolOutput};
use crate::protocol::ToolDisplay;
use crate::sandbox::{self, Sandbox, Written};

/// The `write` tool.
pub struct Write;

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    path: String,
    content: String,
}

impl Tool for Write {
    const NAME: &'static str = "write";

    const DESCRIPTION: &'static str = "Create or overwrite a file.";
    const SUBJECT: Option<&'static str> = Some("path");
    const EFFECT: Effect = Effect::ChangesFiles;
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            },
            "required": ["path", "content"]
        })
    }

    async fn run(&self, arguments: Arguments, context: &ToolContext) -> Result<ToolOutput, Error> {
        if super::read::numbered_as_read(&arguments.content) {
            return Err(Error::Rejected(format!(
                "Nothing was written to `{}`: in the content, {}",
                arguments.path,
                super::read::NUMBERED_AS_READ
            )));
        }
        write_file(&context.sandbox, &arguments.path, &arguments.content, None)
    }

    fn preview(
        &self,
        arguments: &Arguments,
        context: &ToolContext,
    ) -> Option<Result<ToolDisplay, Error>> {
        Some(preview_write(
            &context.sandbox,
            &arguments.path,
            &arguments.content,
            None,
        ))
    }
}

/// The diff `write_file` would make, without writing.
pub fn preview_write(
    sandbox: &Sandbox,
    path: &str,
    content: &str,
    known_old: Option<&str>,
) -> Result<ToolDisplay, Error> {
    let old = match known_old {
        Some(old) => Some(old.to_owned()),
        None => current(sandbox, path)?,
    };
    let diff = match old.as_deref() {
        Some(old) if old == content => file_diff(path, "unchanged", "", ""),
        Some(old) => file_diff(path, "updated", old, content),
        None => file_diff(path, "created", "", content),
    };
    Ok(ToolDisplay::Diff { files: vec![diff] })
}

/// The file's text, `None` when it does not exist.
fn current(sandbox: &Sandbox, path: &str) -> Result<Option<String>, Error> {
    match sandbox.read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(sandbox::Error::NotFound { .. }) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Writes `content` to `path` and describes the change (shared by `write`
/// and `edit`). `known_old` is the current content when the caller has read
/// it already.
pub fn write_file(
    sandbox: &Sandbox,
    path: &str,
    content: &str,
    known_old: Option<&str>,
) -> Result<ToolOutput, Error> {
    let read_old;
    let old = if let Some(old) = known_old {
        Some(old)
    } else {
        read_old = current(sandbox, path)?;
        read_old.as_deref()
    };
    if old == Some(content) {
        return Ok(ToolOutput::ok(
            format!("{path} is unchanged (the content was already the same)"),
            format!("{path}: unchanged"),
        )
        .with_display(ToolDisplay::Diff {
            files: vec![file_diff(path, "unchanged", "", "")],
        }));
    }
    let operation = match sandbox.write(path, content.as_bytes())? {
        Written::Created => "created",
        Written::Replaced => "updated",
    };
    let diff = file_diff(path, operation, old.unwrap_or(""), content);
    let lines = count_lines(content);
    Ok(ToolOutput::ok(
        format!(
            "{operation} {path} ({}, {})",
            crate::protocol::count(lines, "line"),
            counts(&diff)
        ),
        format!("{path}: {operation}, {}", counts(&diff)),
    )
    .with_display(ToolDisplay::Diff { files: vec![diff] }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::DynTool;
    use crate::tools::tests::context;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::PermissionsExt;

    #[tokio::test]
    async fn creates_updates_and_keeps_mode() {
        let (dir, context) = context();
        let run =
            |content: &str| Write.call(json!({"path": "sub/a.sh", "content": content}), &context);
        assert_eq!(
            run("x\n").await.unwrap().summary,
            "sub/a.sh: created, +1 -0"
        );
        let file = dir.path().join("sub/a.sh");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        let updated = run("x\ny\n").await.unwrap();
        assert_eq!(updated.summary, "sub/a.sh: updated, +1 -0");
        let Some(ToolDisplay::Diff { files }) = updated.display else {
            panic!("a diff")
        };
        assert_eq!(
            files[0].diff,
            "--- a/sub/a.sh\n+++ b/sub/a.sh\n@@ -1 +1,2 @@\n x\n+y\n"
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
        let (dir, context) = context();
        let error = Write
            .call(json!({"path": "../evil", "content": "x"}), &context)
            .await
            .unwrap_err();
        assert!(
            error.to_string().starts_with("outside_workspace"),
            "{error}"
        );
        assert!(!dir.path().parent().unwrap().join("evil").exists());
    }
}
