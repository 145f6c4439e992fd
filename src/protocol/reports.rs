//! What the core reports about the context and the served models:
//! `/context` and `offcode context`, and the model list.

use serde::{Deserialize, Serialize};

/// What a request carries, part by part (`/context`, `offcode context`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextReport {
    /// Each part with its source and (estimated) tokens, in request order.
    pub parts: Vec<ContextPart>,
    /// The sum of the parts.
    pub total: u64,
    /// The model's context length, when known.
    pub limit: Option<u64>,
    /// Prompt tokens of the last request as the server counted them.
    pub last_prompt: Option<u64>,
}

/// One part of a [`ContextReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPart {
    /// What it is (`system prompt`, `project rules`, `tool schemas`, `history`).
    pub name: String,
    /// Where it came from (a file, `built in`, the session).
    pub source: String,
    /// Tokens, estimated.
    pub tokens: u64,
}

/// Payload of [`EventMsg::ModelList`](super::EventMsg::ModelList).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelListEvent {
    /// The served models; empty when the server did not answer.
    pub models: Vec<ModelInfo>,
    /// Why the server did not list them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The active model's context length: the config's, else the
    /// server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// Every endpoint asked, with why it did not answer; empty when the
    /// one-provider shorthand is all there is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<ProviderInfo>,
}

/// One endpoint of a [`ModelListEvent`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderInfo {
    /// The provider's key; `None` for the shorthand (`base_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Its `name`, else its key, else `base_url`.
    pub label: String,
    /// Its API root.
    pub base_url: String,
    /// Why it did not list its models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One served model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// What to switch to it with: `provider/model`, or the server's id
    /// for the shorthand's.
    pub id: String,
    /// The provider serving it; `None` for the shorthand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The name the config gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its context length, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
}
