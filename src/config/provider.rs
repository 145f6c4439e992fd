//! Several endpoints in OpenCode's `provider` shape, and where a model
//! named in the config, on the command line or with `/models` leads.
//!
//! `"model": "gpu/qwen3-coder"` names provider `gpu` and its model
//! `qwen3-coder`; a name whose first part is no provider (`Qwen/Qwen3`,
//! `qwen3`) is a model of the one-provider shorthand (`base_url`,
//! `api_key`). A model's `limit` and `options` feed the request: the
//! context budget, `max_tokens`, sampling, and other body keys.
#![allow(
    clippy::doc_markdown,
    reason = "the fields' docs are the schema's descriptions, shown to people in their editor"
)]

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize, de};
use serde_json::{Map, Value};

use super::Config;
use crate::sampling::Sampling;

/// One server, as OpenCode's config describes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// Shown in `/models` and `offcode models`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The API root (models.dev's key); `options.baseURL` wins.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "http_url")]
    #[schemars(with = "Option<String>")]
    pub api: Option<String>,
    /// Variables that may hold the API key: the first one set is sent
    /// when `options.apiKey` is not given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// OpenCode's AI SDK package. offcode speaks the OpenAI-compatible
    /// API to every provider; this key is accepted and ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub npm: Option<String>,
    /// OpenCode's provider id; ignored (the key names the provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only these of the server's models are listed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub whitelist: Vec<String>,
    /// These of the server's models are not listed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blacklist: Vec<String>,
    /// How to reach the server.
    pub options: ProviderOptions,
    /// Models of this server, by the name used in `provider/model`.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub models: IndexMap<String, ModelConfig>,
}

impl ProviderConfig {
    /// Its key: `options.apiKey`, else the first of its `env` variables
    /// that is set.
    pub fn key(&self, var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        self.options
            .api_key
            .clone()
            .or_else(|| self.env.iter().find_map(|name| var(name)))
    }
}

/// A provider's `options`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderOptions {
    /// The OpenAI-compatible API root, e.g. `http://gpu1:8000/v1`.
    #[serde(
        rename = "baseURL",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "http_url"
    )]
    #[schemars(with = "Option<String>")]
    pub base_url: Option<String>,
    /// Sent as `Authorization: Bearer`.
    #[serde(rename = "apiKey", skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Headers sent with every request to this server.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// The longest wait for the server's next bytes, in milliseconds
    /// (offcode's `timeouts.idle_ms` for this server); `false`, none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Timeout>,
    /// OpenCode's prompt-cache key; ignored (vLLM caches prefixes by
    /// itself).
    #[serde(rename = "setCacheKey", skip_serializing_if = "Option::is_none")]
    pub set_cache_key: Option<bool>,
}

/// `"timeout": 600000` or `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Timeout {
    /// Milliseconds.
    Millis(u64),
    /// `false`: no limit.
    Off(bool),
}

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Bool(false) => Ok(Self::Off(false)),
            Value::Number(n) if n.as_u64().is_some_and(|n| n > 0) => {
                Ok(Self::Millis(n.as_u64().unwrap_or(1)))
            }
            other => Err(de::Error::custom(format!(
                "expected milliseconds (at least 1) or false, not {other}"
            ))),
        }
    }
}

/// One model of a provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// The id sent to the server, when it differs from the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Shown in `/models`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The model's context and output lengths.
    pub limit: ModelLimit,
    /// Sent with each request: `temperature` and `top_p` as offcode's
    /// sampling (an agent's own setting still wins), any other key as is
    /// in the request body (vLLM reads `top_k`, `min_p`,
    /// `chat_template_kwargs`...).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Value>,
    /// Headers sent with requests for this model.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// models.dev's description of a model: accepted and ignored.
    #[serde(skip_serializing)]
    pub family: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub release_date: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub last_updated: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub attachment: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub reasoning: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub temperature: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub tool_call: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub knowledge: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub open_weights: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub cost: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub modalities: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub experimental: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub status: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub variants: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub interleaved: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub provider: Option<Value>,
    #[doc = "models.dev; ignored."]
    #[serde(skip_serializing)]
    pub structured_output: Option<Value>,
}

/// A model's lengths, in tokens.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct ModelLimit {
    /// The context length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
    /// The longest answer: `max_tokens` for this model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<u32>,
    /// The longest input; read, not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
}

/// What a project's `provider` key may not do: name variables that hold a
/// key (`env`: what it reads would go to the server it names), or take
/// the name of a provider your own config defines (its key would go to
/// the project's URL). Errors carry the place in `text`.
pub fn check_project(
    layer: &Map<String, Value>,
    before: &Map<String, Value>,
    text: &str,
) -> Result<(), (Option<(usize, usize)>, String)> {
    let Some(Value::Object(providers)) = layer.get("provider") else {
        return Ok(());
    };
    for (name, provider) in providers {
        if provider.get("env").is_some() {
            return Err((
                crate::jsonc::locate_key(text, &["provider", name, "env"]),
                format!(
                    "provider `{name}`: a project's config may not name variables for its key (`env`); set the key in your global config"
                ),
            ));
        }
        if before.get("provider").and_then(|p| p.get(name)).is_some() {
            return Err((
                crate::jsonc::locate_key(text, &["provider", name]),
                format!(
                    "provider `{name}` is defined in your own config; a project's config may not change it (its key would go where the project says): give the project's another name"
                ),
            ));
        }
    }
    Ok(())
}

/// What every request's body holds already.
const RESERVED_BODY_KEYS: &[&str] = &["model", "messages", "stream", "stream_options", "tools"];

pub use crate::protocol::REQUEST_FIELDS;

fn http_url<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let text = String::deserialize(deserializer)?;
    super::check_url(&text).map_err(de::Error::custom)?;
    Ok(Some(text))
}

/// Where requests for one model go, and what they carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Route {
    /// The provider's key; `None` for the one-provider shorthand.
    pub provider: Option<String>,
    /// The model id sent to the server.
    pub model: String,
    /// Headers for every request, the provider's then the model's.
    pub headers: Vec<(String, String)>,
    /// Keys of the model's `options` sent as they are in the body.
    pub body: Map<String, Value>,
}

impl Config {
    /// The provider a reference names: `gpu/qwen` is `gpu`'s `qwen` when
    /// `gpu` is configured.
    pub fn split_reference<'a>(&self, reference: &'a str) -> Option<(&'a str, &'a str)> {
        let (provider, model) = reference.split_once('/')?;
        (self.provider.contains_key(provider) && !model.is_empty()).then_some((provider, model))
    }

    /// This config with what `reference` leads to: the provider's URL,
    /// key, headers and timeout, the model's lengths and options.
    /// Sampling set by the model wins over the config's top-level one.
    /// A reference that leads nowhere (`Config::unroutable`) is an
    /// error, for every caller alike.
    pub fn routed(
        &self,
        reference: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        if let Some(why) = self.unroutable(reference) {
            return Err(why);
        }
        let Some((name, model)) = self.split_reference(reference) else {
            let mut config = self.clone();
            config.route = Route {
                provider: None,
                model: reference.to_owned(),
                ..Route::default()
            };
            return Ok(config);
        };
        let mut config = self.for_provider(Some(name), var);
        model.clone_into(&mut config.route.model);
        let Some(entry) = self.provider[name].models.get(model) else {
            return Ok(config);
        };
        if let Some(id) = &entry.id {
            config.route.model.clone_from(id);
        }
        config
            .route
            .headers
            .extend(entry.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(context) = entry.limit.context {
            config.context_limit = Some(context);
        }
        if let Some(output) = entry.limit.output {
            config.max_tokens = Some(output);
        }
        for (key, value) in &entry.options {
            match (key.as_str(), value.as_f64()) {
                ("temperature", Some(v)) => config.temperature = Some(Sampling::Value(v)),
                ("top_p" | "topP", Some(v)) => config.top_p = Some(Sampling::Value(v)),
                ("max_tokens" | "maxTokens", Some(_)) => {
                    config.max_tokens = value.as_u64().and_then(|n| u32::try_from(n).ok());
                }
                _ if REQUEST_FIELDS.contains(&key.as_str()) => {}
                _ => {
                    config.route.body.insert(key.clone(), value.clone());
                }
            }
        }
        Ok(config)
    }

    /// This config with provider `name`'s endpoint (`None`: the
    /// shorthand's): its URL, key, headers and timeout.
    #[must_use]
    pub fn for_provider(&self, name: Option<&str>, var: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut config = self.clone();
        config.route = Route::default();
        let Some(provider) = name.and_then(|name| self.provider.get(name)) else {
            return config;
        };
        config.route.provider = name.map(str::to_owned);
        if let Some(url) = provider.options.base_url.as_ref().or(provider.api.as_ref()) {
            config.base_url = super::normalise_base_url(url);
        }
        config.api_key = provider.key(var);
        match provider.options.timeout {
            Some(Timeout::Millis(ms)) => config.timeouts.idle_ms = ms,
            Some(Timeout::Off(_)) => config.timeouts.idle_ms = u64::MAX / 4,
            None => {}
        }
        config.route.headers = provider
            .options
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        config
    }

    /// The endpoints `/models` asks: every provider, and the shorthand's
    /// when no provider is configured, its URL was set, or the model in
    /// use is its.
    pub fn endpoints(&self, shorthand_in_use: bool) -> Vec<Option<String>> {
        let mut endpoints = Vec::new();
        if self.provider.is_empty() || self.base_url_set || shorthand_in_use {
            endpoints.push(None);
        }
        endpoints.extend(self.provider.keys().cloned().map(Some));
        endpoints
    }

    /// Checks what only the merged config can tell: every provider has a
    /// URL, and no model option sets what offcode sends itself.
    pub fn check_providers(&self) -> Result<(), String> {
        for (name, provider) in &self.provider {
            if provider.options.base_url.is_none() && provider.api.is_none() {
                return Err(format!(
                    "provider `{name}` has no `options.baseURL`: set the server's API root, e.g. \"http://gpu1:8000/v1\""
                ));
            }
            for (model, entry) in &provider.models {
                for key in entry.options.keys() {
                    if RESERVED_BODY_KEYS.contains(&key.as_str()) {
                        return Err(format!(
                            "`provider.{name}.models.{model}.options.{key}` is what offcode sends itself; remove it"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Why `reference` leads nowhere: it names no configured provider,
    /// and with only providers configured (no `base_url`) there is no
    /// server for other names (the built-in default URL is not one the
    /// person chose).
    fn unroutable(&self, reference: &str) -> Option<String> {
        if self.provider.is_empty()
            || self.base_url_set
            || self.split_reference(reference).is_some()
        {
            return None;
        }
        let names: Vec<&str> = self.provider.keys().map(String::as_str).collect();
        Some(format!(
            "`{reference}` names no configured provider ({}), and no `base_url` is set for other models",
            names.join(", ")
        ))
    }

    /// Every configured model as `provider/model`, in the config's order.
    pub fn configured_models(&self) -> Vec<String> {
        self.provider
            .iter()
            .flat_map(|(name, p)| p.models.keys().map(move |m| format!("{name}/{m}")))
            .collect()
    }

    /// The provider whose server is asked for a model when none is named
    /// or configured: the first, unless `base_url` was set (then the
    /// shorthand's server is).
    pub fn default_provider(&self) -> Option<&str> {
        self.provider
            .keys()
            .next()
            .filter(|_| !self.base_url_set)
            .map(String::as_str)
    }

    /// The model used when none is named: the first provider's first
    /// model; `None` when that provider lists none (its server says).
    pub fn default_reference(&self) -> Option<String> {
        let (name, provider) = self.provider.first()?;
        provider.models.keys().next().map(|m| format!("{name}/{m}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(value: Value) -> Config {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_provider_model_leads_to_its_server_with_its_lengths_and_options() {
        let config = config(json!({
            "base_url": "http://local:8000/v1",
            "temperature": 0.7,
            "provider": {"gpu": {
                "options": {"baseURL": "http://gpu1:8000/v1", "apiKey": "k1",
                            "headers": {"X-Team": "a"}, "timeout": 9000},
                "models": {"coder": {"id": "Qwen/Qwen3-Coder", "limit": {"context": 65536, "output": 8192},
                                     "options": {"temperature": 0.2, "top_k": 20}}}
            }}
        }));
        let routed = config.routed("gpu/coder", &|_| None).unwrap();
        assert_eq!(routed.base_url, "http://gpu1:8000/v1");
        assert_eq!(routed.api_key.as_deref(), Some("k1"));
        assert_eq!(routed.context_limit, Some(65536));
        assert_eq!(routed.max_tokens, Some(8192));
        assert_eq!(routed.temperature, Some(Sampling::Value(0.2)));
        assert_eq!(routed.timeouts.idle_ms, 9000);
        assert_eq!(routed.route.model, "Qwen/Qwen3-Coder");
        assert_eq!(routed.route.provider.as_deref(), Some("gpu"));
        assert_eq!(
            routed.route.headers,
            [("X-Team".to_owned(), "a".to_owned())]
        );
        assert_eq!(Value::Object(routed.route.body), json!({"top_k": 20}));
    }

    #[test]
    fn a_name_whose_first_part_is_no_provider_is_the_shorthand_servers() {
        let mut config = config(json!({
            "base_url": "http://local:8000/v1", "api_key": "main",
            "provider": {"gpu": {"options": {"baseURL": "http://gpu1:8000/v1"}}}
        }));
        // As the loader marks a `base_url` a file sets.
        config.base_url_set = true;
        let routed = config.routed("Qwen/Qwen3-Coder", &|_| None).unwrap();
        assert_eq!(routed.base_url, "http://local:8000/v1");
        assert_eq!(routed.api_key.as_deref(), Some("main"));
        assert_eq!(routed.route.model, "Qwen/Qwen3-Coder");
        assert_eq!(routed.route.provider, None);
        // A model the provider does not list is still its server's.
        let routed = config.routed("gpu/other", &|_| None).unwrap();
        assert_eq!(routed.base_url, "http://gpu1:8000/v1");
        assert_eq!(routed.route.model, "other");
        assert_eq!(
            routed.api_key, None,
            "the shorthand's key is not sent elsewhere"
        );
    }

    #[test]
    fn the_key_comes_from_the_first_variable_set() {
        let config = config(json!({
            "provider": {"gpu": {"env": ["NOPE", "GPU_KEY"], "api": "http://gpu1:8000"}}
        }));
        let routed = config
            .routed("gpu/m", &|name| {
                (name == "GPU_KEY").then(|| "s3".to_owned())
            })
            .unwrap();
        assert_eq!(routed.api_key.as_deref(), Some("s3"));
        assert_eq!(routed.base_url, "http://gpu1:8000/v1");
    }

    #[test]
    fn the_first_configured_model_is_the_default() {
        let config = config(json!({"provider": {
            "b": {"models": {"y": {}, "x": {}}},
            "a": {"models": {"z": {}}}
        }}));
        assert_eq!(config.default_reference().as_deref(), Some("b/y"));
        assert_eq!(config.configured_models(), ["b/y", "b/x", "a/z"]);
    }
}
