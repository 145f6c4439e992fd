//! Turns SSE event data into a chat response, following the assembly rules of
//! `tests/fixtures/openai-sse/README.md`.
//!
//! Each event yields [`Piece`]s for live display; [`Assembler::finish`] gives
//! the whole response. Tool calls merge by `index`; the first non-empty id and
//! name win; argument fragments concatenate; `finish_reason` is informative.

use serde_json::Value;

use super::wire::{ChatChunk, ToolCallDelta, WireUsage};

/// Something to show as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Assistant text.
    Content(String),
    /// Reasoning text.
    Reasoning(String),
    /// A tool call got its name.
    ToolCallNamed {
        /// The call's index in the response.
        index: u32,
        /// The tool's name.
        name: String,
    },
    /// Token counts.
    Usage(WireUsage),
    /// The server reported an error in the stream.
    Error(Value),
}

impl Piece {
    /// Whether this piece is model output a user has seen (after which a
    /// failed request is no longer retried).
    pub fn is_output(&self) -> bool {
        matches!(
            self,
            Self::Content(text) | Self::Reasoning(text) if !text.is_empty()
        ) || matches!(self, Self::ToolCallNamed { .. })
    }
}

/// A tool call as assembled from its fragments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssembledCall {
    /// The index the server gave it.
    pub index: u32,
    /// Its id (may be empty if the server sent none).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Concatenated argument text.
    pub arguments: String,
}

/// A whole streamed response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assembled {
    /// Top-level id of the first chunk that had one.
    pub id: Option<String>,
    /// Top-level model of the first chunk that had one.
    pub model: Option<String>,
    /// First non-empty role.
    pub role: Option<String>,
    /// All content text.
    pub content: String,
    /// All reasoning text, if any arrived.
    pub reasoning: Option<String>,
    /// Tool calls sorted by index.
    pub tool_calls: Vec<AssembledCall>,
    /// Last non-null finish reason.
    pub finish_reason: Option<String>,
    /// Last non-null usage.
    pub usage: Option<WireUsage>,
    /// The in-band error object, verbatim.
    pub error: Option<Value>,
    /// `data: [DONE]` was received.
    pub done_marker: bool,
    /// The body ended without `[DONE]`.
    pub truncated: bool,
    /// Some event was not valid UTF-8 and was decoded lossily.
    pub invalid_utf8: bool,
}

/// A chunk that is not valid JSON of the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct MalformedChunk {
    /// What the JSON parser said.
    pub reason: String,
    /// The start of the offending data.
    pub excerpt: String,
}

/// Incremental response builder.
#[derive(Debug, Default)]
pub struct Assembler {
    response: Assembled,
}

impl Assembler {
    /// Whether `[DONE]` was seen (nothing after it matters).
    pub fn is_done(&self) -> bool {
        self.response.done_marker
    }

    /// The text received so far.
    pub fn content(&self) -> &str {
        &self.response.content
    }

    /// Handles one event's data.
    pub fn push(&mut self, data: &[u8], out: &mut Vec<Piece>) -> Result<(), MalformedChunk> {
        if data == b"[DONE]" {
            self.response.done_marker = true;
            return Ok(());
        }
        let chunk = match serde_json::from_slice::<ChatChunk>(data) {
            Ok(chunk) => chunk,
            Err(error) if std::str::from_utf8(data).is_err() => {
                self.response.invalid_utf8 = true;
                serde_json::from_str(&String::from_utf8_lossy(data))
                    .map_err(|_| malformed(&error, data))?
            }
            Err(error) => return Err(malformed(&error, data)),
        };
        self.apply(chunk, out);
        Ok(())
    }

    fn apply(&mut self, chunk: ChatChunk, out: &mut Vec<Piece>) {
        let response = &mut self.response;
        if response.id.is_none() {
            response.id = chunk.id;
        }
        if response.model.is_none() {
            response.model = chunk.model;
        }
        if let Some(error) = chunk.error {
            response.error = Some(error.clone());
            out.push(Piece::Error(error));
        }
        if let Some(usage) = chunk.usage {
            response.usage = Some(usage);
            out.push(Piece::Usage(usage));
        }
        for choice in chunk.choices {
            let delta = choice.delta;
            let response = &mut self.response;
            if response.role.is_none() && delta.role.as_deref().is_some_and(|r| !r.is_empty()) {
                response.role = delta.role;
            }
            if let Some(reasoning) = delta.reasoning.or(delta.reasoning_content)
                && !reasoning.is_empty()
            {
                response
                    .reasoning
                    .get_or_insert_with(String::new)
                    .push_str(&reasoning);
                out.push(Piece::Reasoning(reasoning));
            }
            if let Some(content) = delta.content
                && !content.is_empty()
            {
                response.content.push_str(&content);
                out.push(Piece::Content(content));
            }
            if choice.finish_reason.is_some() {
                response.finish_reason = choice.finish_reason;
            }
            for call in delta.tool_calls {
                self.merge_call(call, out);
            }
        }
    }

    fn merge_call(&mut self, delta: ToolCallDelta, out: &mut Vec<Piece>) {
        let calls = &mut self.response.tool_calls;
        let function = delta.function.unwrap_or_default();
        let id = delta.id.filter(|id| !id.is_empty());
        let name = function.name.filter(|name| !name.is_empty());
        let position = match delta.index {
            Some(index) => calls.iter().position(|c| c.index == index),
            None => None,
        };
        // A fragment with a new (or no) index but neither id nor name belongs
        // to the latest call (SGLang numbered its first fragment differently).
        let position = position.or_else(|| {
            (id.is_none() && name.is_none() && !calls.is_empty()).then(|| calls.len() - 1)
        });
        let position = position.unwrap_or_else(|| {
            let index = delta
                .index
                .unwrap_or_else(|| calls.iter().map(|c| c.index + 1).max().unwrap_or(0));
            calls.push(AssembledCall {
                index,
                ..AssembledCall::default()
            });
            calls.len() - 1
        });
        let call = &mut calls[position];
        if call.id.is_empty()
            && let Some(id) = id
        {
            call.id = id;
        }
        if call.name.is_empty()
            && let Some(name) = name
        {
            call.name.clone_from(&name);
            out.push(Piece::ToolCallNamed {
                index: call.index,
                name,
            });
        }
        if let Some(arguments) = function.arguments {
            call.arguments.push_str(&arguments);
        }
    }

    /// The whole response; `truncated` is set when `[DONE]` never came.
    pub fn finish(mut self) -> Assembled {
        self.response.truncated = !self.response.done_marker;
        self.response.tool_calls.sort_by_key(|call| call.index);
        self.response
    }
}

fn malformed(error: &serde_json::Error, data: &[u8]) -> MalformedChunk {
    let text = String::from_utf8_lossy(data);
    let excerpt: String = text.chars().take(120).collect();
    let excerpt = if excerpt.len() < text.len() {
        format!("{excerpt}…")
    } else {
        excerpt
    };
    MalformedChunk {
        reason: error.to_string(),
        excerpt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn assemble(events: &[&str]) -> Assembled {
        let mut assembler = Assembler::default();
        for event in events {
            assembler.push(event.as_bytes(), &mut Vec::new()).unwrap();
        }
        assembler.finish()
    }

    #[test]
    fn empty_ids_and_functions_never_reset_a_call() {
        let response = assemble(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"","type":"function","function":{}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":null,"function":{"name":"","arguments":"th\":1}"}}]}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            response.tool_calls,
            vec![AssembledCall {
                index: 0,
                id: "call_1".into(),
                name: "read".into(),
                arguments: r#"{"path":1}"#.into(),
            }]
        );
    }

    #[test]
    fn nameless_fragment_with_new_index_joins_latest_call() {
        let response = assemble(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":3,"id":"0","function":{"name":"bash"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
        ]);
        assert_eq!(response.tool_calls.len(), 1);
        assert_eq!(response.tool_calls[0].arguments, "{}");
        assert!(response.truncated);
    }

    #[test]
    fn malformed_chunk_is_reported_with_excerpt() {
        let mut assembler = Assembler::default();
        let error = assembler
            .push(b"{\"choices\": [oops", &mut Vec::new())
            .unwrap_err();
        assert_eq!(error.excerpt, "{\"choices\": [oops");
    }

    #[test]
    fn invalid_utf8_is_decoded_lossily_and_flagged() {
        let mut assembler = Assembler::default();
        let mut pieces = Vec::new();
        assembler
            .push(
                b"{\"choices\":[{\"delta\":{\"content\":\"a\xffb\"}}]}",
                &mut pieces,
            )
            .unwrap();
        assert_eq!(pieces, vec![Piece::Content("a\u{fffd}b".into())]);
        assert!(assembler.finish().invalid_utf8);
    }
}
