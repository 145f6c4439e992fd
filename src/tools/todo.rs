//! `todowrite` and `todoread`: the agent's todo list for a task of several
//! steps. The list belongs to the session: the core records each version
//! and restores the last on resume; both tools share one [`TodoList`].

use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Error, Tool, ToolContext, ToolOutput};
use crate::protocol::{TodoItem, TodoStatus, ToolDisplay};

/// Items a list may hold.
const MAX_ITEMS: usize = 50;
/// Characters one item may hold.
const MAX_CONTENT: usize = 500;

/// The list both tools work on.
pub type TodoList = Arc<Mutex<Vec<TodoItem>>>;

fn lock(list: &TodoList) -> std::sync::MutexGuard<'_, Vec<TodoItem>> {
    list.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The list as the model and the UI read it: `[ ]`, `[~]`, `[x]`.
pub fn checklist(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "The todo list is empty.".to_owned();
    }
    items
        .iter()
        .map(|item| {
            let mark = match item.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Completed => "[x]",
            };
            format!("{mark} {} {}", item.id, item.content)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn done_summary(items: &[TodoItem]) -> String {
    let done = items
        .iter()
        .filter(|i| i.status == TodoStatus::Completed)
        .count();
    format!("todo list: {done}/{} done", items.len())
}

/// The `todowrite` tool.
pub struct TodoWrite(pub TodoList);

/// One item as the model sends it.
#[derive(Deserialize)]
pub struct NewItem {
    #[serde(default)]
    id: Option<Value>,
    content: String,
    status: TodoStatus,
}

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct WriteArguments {
    todos: Vec<NewItem>,
}

impl Tool for TodoWrite {
    const NAME: &'static str = "todowrite";

    const DESCRIPTION: &'static str = "Replace your todo list (the task's steps).";

    type Arguments = WriteArguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"todos": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                },
                "required": ["content", "status"]
            }}},
            "required": ["todos"]
        })
    }

    async fn run(
        &self,
        arguments: WriteArguments,
        _context: &ToolContext,
    ) -> Result<ToolOutput, Error> {
        let invalid = |reason: String| Error::InvalidArguments {
            tool: Self::NAME,
            reason,
        };
        if arguments.todos.len() > MAX_ITEMS {
            return Err(invalid(format!(
                "{} items; a todo list holds at most {MAX_ITEMS}",
                arguments.todos.len()
            )));
        }
        let mut items: Vec<TodoItem> = Vec::with_capacity(arguments.todos.len());
        for (index, item) in arguments.todos.into_iter().enumerate() {
            let content = item.content.trim().to_owned();
            if content.is_empty() {
                return Err(invalid(format!("item {} has no content", index + 1)));
            }
            if content.chars().count() > MAX_CONTENT {
                return Err(invalid(format!(
                    "item {} is longer than {MAX_CONTENT} characters",
                    index + 1
                )));
            }
            let id = match item.id {
                Some(Value::String(id)) if !id.trim().is_empty() => id.trim().to_owned(),
                Some(Value::Number(n)) => n.to_string(),
                _ => (index + 1).to_string(),
            };
            if items.iter().any(|i| i.id == id) {
                return Err(invalid(format!("two items have the id `{id}`")));
            }
            items.push(TodoItem {
                id,
                content,
                status: item.status,
            });
        }
        lock(&self.0).clone_from(&items);
        let mut output = checklist(&items);
        if items
            .iter()
            .filter(|i| i.status == TodoStatus::InProgress)
            .count()
            > 1
        {
            output.push_str("\n\nNote: keep one item in_progress at a time.");
        }
        Ok(ToolOutput {
            ok: true,
            summary: done_summary(&items),
            output,
            display: Some(ToolDisplay::Todo { items }),
            in_place: false,
            reason: None,
            held_back: false,
            denied: false,
        })
    }
}

/// The `todoread` tool.
pub struct TodoRead(pub TodoList);

/// No arguments.
#[derive(Deserialize)]
pub struct ReadArguments {}

impl Tool for TodoRead {
    const NAME: &'static str = "todoread";

    const DESCRIPTION: &'static str = "Read your todo list.";

    type Arguments = ReadArguments;

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn run(
        &self,
        _arguments: ReadArguments,
        _context: &ToolContext,
    ) -> Result<ToolOutput, Error> {
        let items = lock(&self.0).clone();
        Ok(ToolOutput {
            ok: true,
            summary: done_summary(&items),
            output: checklist(&items),
            display: Some(ToolDisplay::Todo { items }),
            in_place: false,
            reason: None,
            held_back: false,
            denied: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::tests::context;

    #[tokio::test]
    async fn write_replaces_the_list_and_read_returns_it() {
        let (_dir, context) = context();
        let list = TodoList::default();
        let write = TodoWrite(Arc::clone(&list));
        let arguments: WriteArguments = serde_json::from_value(json!({"todos": [
            {"content": "read the test", "status": "completed"},
            {"id": 7, "content": "修复 bug", "status": "in_progress"},
            {"content": "run the tests", "status": "pending"}
        ]}))
        .unwrap();
        let output = write.run(arguments, &context).await.unwrap();
        assert_eq!(
            output.output,
            "[x] 1 read the test\n[~] 7 修复 bug\n[ ] 3 run the tests"
        );
        assert_eq!(output.summary, "todo list: 1/3 done");
        let read = TodoRead(list)
            .run(ReadArguments {}, &context)
            .await
            .unwrap();
        assert_eq!(read.output, output.output);
        assert!(matches!(read.display, Some(ToolDisplay::Todo { items }) if items.len() == 3));
    }

    #[tokio::test]
    async fn bad_lists_are_refused_with_the_reason() {
        let (_dir, context) = context();
        let write = TodoWrite(TodoList::default());
        for (todos, reason) in [
            (
                json!([{"content": " ", "status": "pending"}]),
                "item 1 has no content",
            ),
            (
                json!([{"id": "a", "content": "x", "status": "pending"}, {"id": "a", "content": "y", "status": "pending"}]),
                "two items have the id `a`",
            ),
        ] {
            let arguments: WriteArguments =
                serde_json::from_value(json!({ "todos": todos })).unwrap();
            let error = write.run(arguments, &context).await.unwrap_err();
            assert!(error.to_string().contains(reason), "{error}");
        }
        assert!(
            serde_json::from_value::<WriteArguments>(
                json!({"todos": [{"content": "x", "status": "done"}]})
            )
            .is_err()
        );
    }
}
