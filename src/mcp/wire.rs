//! The MCP messages offcode sends and reads, as types: the JSON-RPC 2.0
//! envelope (requests, notifications, answers) and the results offcode
//! uses (`initialize`, `tools/list`, `tools/call`). What a server sends is
//! read leniently: a field of the wrong kind is as if absent, one bad tool
//! in a list is skipped, and only a line that is no JSON object at all is
//! garbage.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A request offcode sends.
#[derive(Debug, Serialize)]
pub struct Request<'a> {
    /// Always `2.0`.
    pub jsonrpc: &'static str,
    /// Its id, echoed in the answer.
    pub id: u64,
    /// The method.
    pub method: &'a str,
    /// Its params.
    pub params: Value,
}

/// A notification offcode sends (no answer comes).
#[derive(Debug, Serialize)]
pub struct Notice<'a> {
    /// Always `2.0`.
    pub jsonrpc: &'static str,
    /// The method.
    pub method: &'a str,
    /// Its params.
    pub params: Value,
}

/// offcode's answer to a request of the server's.
#[derive(Debug, Serialize)]
pub struct Reply {
    /// Always `2.0`.
    pub jsonrpc: &'static str,
    /// The server's id, as it sent it.
    pub id: Value,
    /// The result, when offcode does what was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why not, otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// Its code.
    #[serde(default, deserialize_with = "lenient")]
    pub code: i64,
    /// What went wrong.
    #[serde(default, deserialize_with = "lenient")]
    pub message: String,
}

/// A line from the server, sorted.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// The server asks offcode something.
    Request {
        /// Its id, for the answer.
        id: Value,
        /// The method.
        method: String,
    },
    /// The server says something; no answer is wanted.
    Notification {
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// The answer to one of offcode's requests.
    Answer {
        /// The request's id (`None`: not a number offcode could have sent).
        id: Option<u64>,
        /// Its result, or the error the server gave.
        result: Result<Value, ErrorObject>,
    },
}

/// The fields any message may have.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

impl Incoming {
    /// Sorts one line; `None` when it is not a JSON-RPC message.
    pub fn parse(line: &[u8]) -> Option<Self> {
        let envelope: Envelope = match serde_json::from_slice::<Value>(line).ok()? {
            object @ Value::Object(_) => serde_json::from_value(object).ok()?,
            _ => return None,
        };
        let id = envelope.id.filter(|id| !id.is_null());
        Some(match (envelope.method, id) {
            (Some(method), Some(id)) => Self::Request { id, method },
            (Some(method), None) => Self::Notification {
                method,
                params: envelope.params.unwrap_or(Value::Null),
            },
            (None, Some(id)) => Self::Answer {
                id: id.as_u64(),
                result: match (envelope.result, envelope.error) {
                    (_, Some(error)) => Err(serde_json::from_value(error).unwrap_or(ErrorObject {
                        code: 0,
                        message: String::new(),
                    })),
                    (Some(result), None) => Ok(result),
                    (None, None) => Err(ErrorObject {
                        code: 0,
                        message: "an answer with neither a result nor an error".to_owned(),
                    }),
                },
            },
            (None, None) => return None,
        })
    }
}

/// What `initialize` answers, as far as offcode reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The MCP version the server speaks.
    #[serde(default, deserialize_with = "lenient")]
    pub protocol_version: String,
}

/// One page of `tools/list`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsPage {
    /// The tools on this page; one that is not a tool is skipped.
    #[serde(deserialize_with = "each_or_skip")]
    pub tools: Vec<ToolEntry>,
    /// Where the next page starts; absent on the last.
    #[serde(default, deserialize_with = "lenient")]
    pub next_cursor: Option<String>,
}

/// A tool as a server lists it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEntry {
    /// Its name on the server.
    pub name: String,
    /// What it does.
    #[serde(default, deserialize_with = "lenient")]
    pub description: String,
    /// The JSON schema of its arguments (an object when given).
    #[serde(default, deserialize_with = "lenient")]
    pub input_schema: Option<serde_json::Map<String, Value>>,
    /// Hints about what it does.
    #[serde(default, deserialize_with = "lenient")]
    pub annotations: Annotations,
}

/// A tool's hints (only the one offcode uses).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The tool changes nothing.
    #[serde(default, deserialize_with = "lenient")]
    pub read_only_hint: bool,
}

/// What `tools/call` answers.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    /// The content items; one that is not an object is skipped.
    #[serde(default, deserialize_with = "each_or_skip")]
    pub content: Vec<Content>,
    /// Structured output, used when there is no content.
    #[serde(default)]
    pub structured_content: Option<Value>,
    /// The tool reports an error.
    #[serde(default, deserialize_with = "lenient")]
    pub is_error: bool,
}

/// One content item: text, an image or audio, a resource or a link to one.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    /// `text`, `image`, `audio`, `resource`, `resource_link`, or other.
    #[serde(default, rename = "type", deserialize_with = "lenient")]
    pub kind: String,
    /// A text item's text.
    #[serde(default, deserialize_with = "lenient")]
    pub text: String,
    /// Base64 data of an image or audio.
    #[serde(default, deserialize_with = "lenient")]
    pub data: String,
    /// The media type.
    #[serde(default, deserialize_with = "lenient")]
    pub mime_type: String,
    /// A link's URI.
    #[serde(default, deserialize_with = "lenient")]
    pub uri: String,
    /// A link's name.
    #[serde(default, deserialize_with = "lenient")]
    pub name: String,
    /// An embedded resource.
    #[serde(default, deserialize_with = "lenient")]
    pub resource: Resource,
}

/// An embedded resource.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    #[serde(default, deserialize_with = "lenient")]
    pub uri: String,
    /// Its media type.
    #[serde(default, deserialize_with = "lenient")]
    pub mime_type: String,
    /// Its text, when it is text.
    #[serde(default, deserialize_with = "lenient")]
    pub text: Option<String>,
    /// Its base64 data, when it is not.
    #[serde(default, deserialize_with = "lenient")]
    pub blob: Option<String>,
}

/// A field of the wrong kind reads as its default: servers vary, and one
/// odd field should not cost the whole message.
fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

/// A list whose items that do not fit are skipped.
fn each_or_skip<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let items = Vec::<Value>::deserialize(deserializer)?;
    Ok(items
        .into_iter()
        .filter_map(|item| serde_json::from_value(item).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: &Value) -> Option<Incoming> {
        Incoming::parse(value.to_string().as_bytes())
    }

    #[test]
    fn lines_are_sorted_into_requests_notifications_and_answers() {
        assert_eq!(
            parse(&json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})),
            Some(Incoming::Request {
                id: json!("srv-1"),
                method: "ping".into()
            })
        );
        assert_eq!(
            parse(&json!({"jsonrpc": "2.0", "id": null, "method": "notifications/x"})),
            Some(Incoming::Notification {
                method: "notifications/x".into(),
                params: Value::Null
            })
        );
        assert_eq!(
            parse(&json!({"id": 7, "result": {"ok": 1}})),
            Some(Incoming::Answer {
                id: Some(7),
                result: Ok(json!({"ok": 1}))
            })
        );
        // An error without a code or with a message of the wrong kind is
        // still an error.
        assert_eq!(
            parse(&json!({"id": 8, "error": {"message": 5}})),
            Some(Incoming::Answer {
                id: Some(8),
                result: Err(ErrorObject {
                    code: 0,
                    message: String::new()
                })
            })
        );
        assert_eq!(
            parse(&json!({"id": "x", "result": 1})),
            Some(Incoming::Answer {
                id: None,
                result: Ok(json!(1))
            })
        );
        for garbage in [json!([1, 2]), json!("text"), json!({"jsonrpc": "2.0"})] {
            assert_eq!(parse(&garbage), None, "{garbage}");
        }
        assert_eq!(Incoming::parse(b"this is not json {"), None);
    }

    #[test]
    fn a_tool_list_keeps_the_tools_it_can_read() {
        let page: ToolsPage = serde_json::from_value(json!({
            "tools": [
                {"name": "a", "description": 3, "inputSchema": "no",
                 "annotations": {"readOnlyHint": true}},
                {"description": "no name"},
                {"name": "b", "inputSchema": {"type": "object"}}
            ],
            "nextCursor": 42
        }))
        .unwrap();
        let names: Vec<&str> = page.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(page.tools[0].annotations.read_only_hint);
        assert_eq!(page.tools[0].description, "");
        assert_eq!(page.tools[0].input_schema, None);
        assert!(page.tools[1].input_schema.is_some());
        assert_eq!(page.next_cursor, None);
        // Without `tools` it is no page.
        assert!(serde_json::from_value::<ToolsPage>(json!({"nextCursor": "x"})).is_err());
    }
}
