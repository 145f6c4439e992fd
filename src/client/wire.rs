//! The OpenAI-compatible JSON shapes on the wire.
//!
//! Incoming types accept unknown keys and `null` anywhere (servers differ);
//! outgoing types omit what is unset so the request stays minimal and its
//! prefix stable.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// `POST /chat/completions` body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest<'a> {
    /// The model id.
    pub model: &'a str,
    /// The conversation.
    pub messages: &'a [WireMessage],
    /// Always true: offcode only streams.
    pub stream: bool,
    /// Asks for the usage chunk.
    pub stream_options: StreamOptions,
    /// Tool definitions, when any.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tools: &'a [ToolSpec],
    /// Only when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Only when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Only when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The model's other `options`, as they are.
    #[serde(flatten)]
    pub extra: &'a serde_json::Map<String, Value>,
}

impl<'a> ChatRequest<'a> {
    /// A streamed request with usage, sampling as `config` sets it.
    pub fn streaming(
        model: &'a str,
        messages: &'a [WireMessage],
        tools: &'a [ToolSpec],
        config: &'a crate::config::Config,
    ) -> Self {
        Self {
            model,
            messages,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tools,
            max_tokens: config.max_tokens,
            temperature: config
                .temperature
                .and_then(crate::sampling::Sampling::value),
            top_p: config.top_p.and_then(crate::sampling::Sampling::value),
            extra: &config.route.body,
        }
    }
}

/// `stream_options` of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamOptions {
    /// Ask for a final usage chunk.
    pub include_usage: bool,
}

pub use crate::tools::{FunctionSpec, ToolSpec};

/// A message as sent to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Text; `null` for an assistant message that only calls tools.
    pub content: Option<String>,
    /// Calls an assistant message made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireToolCall>,
    /// For `tool` messages: the call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// A tool call inside an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireToolCall {
    /// The call's id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name and arguments.
    pub function: WireFunctionCall,
}

/// Name and JSON argument text of a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireFunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// One streamed `chat.completion.chunk` (or an in-band error event).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatChunk {
    /// Response id.
    #[serde(default)]
    pub id: Option<String>,
    /// Served model name.
    #[serde(default)]
    pub model: Option<String>,
    /// Choices; empty in the usage chunk.
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<ChunkChoice>,
    /// Token counts (last chunk, or every chunk with continuous stats).
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// An in-band error report.
    #[serde(default)]
    pub error: Option<Value>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChunkChoice {
    /// The delta.
    #[serde(default, deserialize_with = "null_as_default")]
    pub delta: Delta,
    /// Set on the finishing chunk.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// The incremental part of a choice.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Delta {
    /// Set on the first chunk.
    #[serde(default)]
    pub role: Option<String>,
    /// Text increment.
    #[serde(default)]
    pub content: Option<String>,
    /// Reasoning increment (vLLM 0.11.1+).
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Reasoning increment (older vLLM, `DashScope`, `llama-server`).
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// Tool-call fragments.
    #[serde(default, deserialize_with = "null_as_default")]
    pub tool_calls: Vec<ToolCallDelta>,
}

/// A fragment of a tool call; every key but `index` may be missing.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolCallDelta {
    /// Which call this belongs to.
    #[serde(default)]
    pub index: Option<u32>,
    /// The call's id (first non-empty one wins).
    #[serde(default)]
    pub id: Option<String>,
    /// Name and argument fragment.
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

/// Name and argument text fragment.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct FunctionDelta {
    /// The tool's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Argument text to append.
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Token counts as the server reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct WireUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Generated tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Total.
    #[serde(default)]
    pub total_tokens: u64,
}

/// `POST /tokenize` (chat form) request.
#[derive(Debug, Serialize)]
pub struct TokenizeRequest<'a> {
    /// The model id.
    pub model: &'a str,
    /// The conversation, as a chat request would carry it.
    pub messages: &'a [WireMessage],
    /// Count the assistant's turn prefix, as a request does.
    pub add_generation_prompt: bool,
    /// Tool definitions, when any (newer vLLM builds count them).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tools: &'a [ToolSpec],
}

/// `POST /tokenize` response.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenizeResponse {
    /// Tokens in the prompt.
    pub count: u64,
    /// The model's context length.
    #[serde(default)]
    pub max_model_len: Option<u64>,
}

/// The context length `models` give for `model`.
pub fn context_length(models: &[ModelCard], model: &str) -> Option<u64> {
    models
        .iter()
        .find(|m| m.id == model)
        .and_then(ModelCard::context)
}

/// `GET /models` response.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelsResponse {
    /// The model cards.
    #[serde(default, deserialize_with = "null_as_default")]
    pub data: Vec<ModelCard>,
}

/// One served model.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ModelCard {
    /// The id to request it by.
    pub id: String,
    /// Context limit (vLLM).
    #[serde(default)]
    pub max_model_len: Option<u64>,
    /// Which server (`vllm`, `llamacpp`, ...).
    #[serde(default)]
    pub owned_by: Option<String>,
    /// llama.cpp's facts about the loaded model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ModelMeta>,
}

/// llama.cpp's `meta` of a model card.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ModelMeta {
    /// The context the server was started with (`--ctx-size`).
    #[serde(default)]
    pub n_ctx: Option<u64>,
}

impl ModelCard {
    /// The context length a request may use: vLLM's `max_model_len`, else
    /// llama.cpp's `meta.n_ctx`.
    pub fn context(&self) -> Option<u64> {
        self.max_model_len
            .or_else(|| self.meta.as_ref().and_then(|meta| meta.n_ctx))
    }

    /// Whether llama.cpp serves it (its flags differ from vLLM's).
    pub fn is_llama_cpp(&self) -> bool {
        self.owned_by.as_deref() == Some("llamacpp")
    }
}
