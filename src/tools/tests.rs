//! The registry: calls, arguments, previews and what the tools are.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn what_the_tools_are_is_known_by_name_as_the_registry_knows_it() {
    let skills = vec![crate::skills::Skill {
        name: "s".into(),
        description: "d".into(),
        source: "s/SKILL.md".into(),
        body: "b".into(),
    }];
    let registry = Registry::default().with_skills(skills);
    let names = registry.names();
    assert_eq!(names.len(), BUILT_IN.len());
    for name in names {
        assert_eq!(registry.changes_files(name), changes_files(name), "{name}");
    }
    let changing: Vec<_> = BUILT_IN
        .iter()
        .filter(|k| k.effect == Effect::ChangesFiles)
        .map(|k| k.name)
        .collect();
    assert_eq!(changing, ["write", "edit", "patch"]);
    assert_eq!(subject("bash", &json!({"command": "ls"})), Some("ls"));
    assert_eq!(subject("patch", &json!({"path": "decoy"})), None);
    assert!(!changes_files("mcp_tool"));
}

pub(super) fn context() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let context = ToolContext {
        sandbox: Arc::new(Sandbox::new(dir.path()).unwrap()),
        cancel: Cancel::default(),
        allow_clobber: false,
        shell: std::sync::Arc::new(crate::confine::Shell::unconfined(
            crate::confine::Status::Off,
        )),
        unconfined: false,
        running: Arc::default(),
        late: std::sync::Arc::default(),
        checkpoints: None,
    };
    (dir, context)
}

/// (path, operation, +, -) of each file a preview shows.
fn shown(display: Option<ToolDisplay>) -> Vec<(String, String, usize, usize)> {
    match display {
        Some(ToolDisplay::Diff { files }) => files
            .into_iter()
            .map(|f| (f.path, f.operation, f.additions, f.deletions))
            .collect(),
        Some(ToolDisplay::Todo { .. } | ToolDisplay::Command { .. }) | None => Vec::new(),
    }
}

fn entry(
    path: &str,
    operation: &str,
    added: usize,
    removed: usize,
) -> (String, String, usize, usize) {
    (path.to_owned(), operation.to_owned(), added, removed)
}

#[tokio::test]
async fn previews_show_the_change_and_change_nothing() {
    let (dir, context) = context();
    let registry = Registry::default();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let preview = |name: &str, arguments: Value| {
        shown(registry.preview(name, &arguments.to_string(), &context))
    };
    assert_eq!(
        preview("write", json!({"path": "new/b.txt", "content": "x\ny\n"})),
        vec![entry("new/b.txt", "created", 2, 0)]
    );
    assert_eq!(
        preview("write", json!({"path": "a.txt", "content": "one\n"})),
        vec![entry("a.txt", "updated", 0, 1)]
    );
    assert_eq!(
        preview(
            "edit",
            json!({"path": "a.txt", "old_string": "two", "new_string": "2\n3"})
        ),
        vec![entry("a.txt", "updated", 2, 1)]
    );
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+zwei\n--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+c\n";
    assert_eq!(
        preview("patch", json!({ "patch": patch })),
        vec![
            entry("a.txt", "updated", 1, 1),
            entry("c.txt", "created", 1, 0)
        ]
    );
    // A call that would fail, and tools that change no files, show none.
    assert!(
        preview(
            "edit",
            json!({"path": "a.txt", "old_string": "nine", "new_string": "9"})
        )
        .is_empty()
    );
    assert!(preview("bash", json!({"command": "ls"})).is_empty());
    assert!(preview("write", json!({"path": "../out.txt", "content": ""})).is_empty());
    // Nothing was written.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(!dir.path().join("new").exists() && !dir.path().join("c.txt").exists());
}

#[tokio::test]
async fn unknown_tool_and_bad_json_are_results_for_the_model() {
    let (_dir, context) = context();
    let registry = Registry::default();
    assert_eq!(
        registry.call("rm_rf", "{}", &context).await,
        ToolOutput::error(
            "There is no `rm_rf` tool, so nothing was run. The tools are: read, write, edit, patch, list, grep, glob, bash, todowrite, todoread."
        )
    );
    // A made-up name points at the tool meant.
    assert!(
        registry
            .call("rename", "{}", &context)
            .await
            .output
            .contains("There is no `rename` tool, so nothing was run. Did you mean `edit`?")
    );
    let output = registry.call("read", "{\"path\": ", &context).await;
    assert!(!output.ok);
    assert!(
        output
            .output
            .starts_with("Error: The arguments for `read` are not valid JSON"),
        "{output:?}"
    );
    let output = registry.call("read", "{}", &context).await;
    assert_eq!(
        output.output,
        "Error: Invalid arguments for `read`: missing field `path`"
    );
}

#[test]
fn every_schema_is_an_object_schema() {
    for spec in Registry::default().specs() {
        assert_eq!(
            spec.function.parameters["type"], "object",
            "{}",
            spec.function.name
        );
    }
}

#[tokio::test]
async fn lines_copied_with_reads_numbers_are_not_written() {
    let (dir, context) = context();
    let registry = Registry::default();
    std::fs::write(dir.path().join("hello.txt"), "hello world\n").unwrap();
    let read = registry
        .call("read", &json!({"path": "hello.txt"}).to_string(), &context)
        .await;
    // What a small model did: the read's output, upper-cased, as content.
    let copied = read.output.to_uppercase();
    let output = registry
        .call(
            "write",
            &json!({"path": "out.txt", "content": copied}).to_string(),
            &context,
        )
        .await;
    assert!(!output.ok);
    assert!(
        output
            .output
            .contains("every line starts with a line number and a TAB, as `read` shows lines"),
        "{output:?}"
    );
    assert!(!dir.path().join("out.txt").exists());
    // Nor put in by an edit, and an old_string with them says why it is
    // not found.
    let output = registry
        .call(
            "edit",
            &json!({"path": "hello.txt", "old_string": "hello world", "new_string": copied})
                .to_string(),
            &context,
        )
        .await;
    assert!(
        output.output.contains("in new_string, every line starts"),
        "{output:?}"
    );
    let output = registry
        .call(
            "edit",
            &json!({"path": "hello.txt", "old_string": read.output, "new_string": "HELLO"})
                .to_string(),
            &context,
        )
        .await;
    assert!(
        output
            .output
            .contains("not found in `hello.txt`: in old_string, every line starts"),
        "{output:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hello world\n"
    );
    // A file's own numbered lines are written.
    let output = registry
        .call(
            "write",
            &json!({"path": "ids.tsv", "content": "1\tapple\n2\tpear\n"}).to_string(),
            &context,
        )
        .await;
    assert!(output.ok, "{output:?}");
}
