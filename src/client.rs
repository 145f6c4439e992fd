//! The OpenAI-compatible HTTP client: streaming chat completions with
//! retries, an idle timeout and prompt cancellation, plus `GET /models`.
//!
//! It owns no conversation state and never prints; callers receive
//! [`Update`]s through a callback.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod assemble;
mod error;
pub mod http;
pub mod inline;
pub mod net;
pub mod sse;
pub mod wire;

use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use assemble::{Assembled, AssembledCall, Piece};
pub use error::{CERTIFICATE_FIX, Error, TOOL_PARSER_FLAGS};
use http::{Activity, Job, WorkerMsg};
use wire::{ChatRequest, ModelCard, ModelsResponse};

use crate::cancel::Cancel;
use crate::config::{Config, RetryConfig};
use crate::protocol::RetryEvent;

/// The longest wait for a short, non-streamed answer (`/models`,
/// `/tokenize`).
const SHORT_REQUEST: Duration = Duration::from_mins(1);

/// Something the caller should know while a request runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// Streamed output.
    Piece(Piece),
    /// The request failed and will be sent again.
    Retry(RetryEvent),
}

/// The clients of a session, one per endpoint used so far: switching
/// back to a provider reuses its connections.
#[derive(Debug, Default)]
pub struct Pool {
    clients: Mutex<Vec<Arc<Client>>>,
}

impl Pool {
    /// A pool that starts with `client`.
    pub fn with(client: Arc<Client>) -> Self {
        Self {
            clients: Mutex::new(vec![client]),
        }
    }

    /// The client for the endpoint `config` routes to (its URL, key,
    /// headers), made on first use.
    pub fn get(&self, config: &Config) -> Result<Arc<Client>, Error> {
        let mut clients = match self.clients.lock() {
            Ok(clients) => clients,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(client) = clients.iter().find(|c| c.serves(config)) {
            return Ok(Arc::clone(client));
        }
        let client = Arc::new(Client::new(config)?);
        clients.push(Arc::clone(&client));
        Ok(client)
    }
}

/// A client for one endpoint.
#[derive(Debug)]
pub struct Client {
    base_url: String,
    api_key: Option<String>,
    /// The provider's and model's `headers`.
    headers: Vec<(String, String)>,
    retry: RetryConfig,
    idle_timeout: Duration,
    connect_timeout: Duration,
    network: net::Network,
    agent: Mutex<ureq::Agent>,
}

fn new_agent(network: &net::Network, connect_timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(connect_timeout))
        .user_agent(format!("offcode/{}", env!("CARGO_PKG_VERSION")))
        .tls_config(network.tls.clone())
        .proxy(network.proxy.clone())
        .build()
        .new_agent()
}

impl Client {
    /// A client for the configured endpoint, with TLS and proxy settings
    /// from the config and the process environment.
    pub fn new(config: &Config) -> Result<Self, Error> {
        Self::with_env(config, &crate::config::process_var)
    }

    /// A client whose proxy and certificate settings read `var` for the
    /// environment.
    pub fn with_env(config: &Config, var: &dyn Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let connect_timeout = Duration::from_millis(config.timeouts.connect_ms);
        let network = net::Network::for_config(config, var)?;
        Ok(Self {
            base_url: config.base_url.trim_end_matches('/').to_owned(),
            api_key: config.api_key.clone(),
            headers: config.route.headers.clone(),
            retry: config.retry.clone(),
            idle_timeout: Duration::from_millis(config.timeouts.idle_ms),
            connect_timeout,
            agent: Mutex::new(new_agent(&network, connect_timeout)),
            network,
        })
    }

    /// The proxy requests go through, credentials hidden.
    pub fn proxy(&self) -> Option<&str> {
        self.network.proxy_shown.as_deref()
    }

    /// The API root requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether this client is the one `config` describes: the same URL,
    /// key, headers and idle timeout.
    pub fn serves(&self, config: &Config) -> bool {
        self.base_url == config.base_url.trim_end_matches('/')
            && self.api_key == config.api_key
            && self.headers == config.route.headers
            && self.idle_timeout == Duration::from_millis(config.timeouts.idle_ms)
    }

    fn agent(&self) -> ureq::Agent {
        match self.agent.lock() {
            Ok(agent) => agent.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Closes every connection in flight (the server sees the disconnect)
    /// and starts a fresh connection pool for later requests.
    fn drop_connections(&self) {
        let fresh = new_agent(&self.network, self.connect_timeout);
        let old = match self.agent.lock() {
            Ok(mut agent) => std::mem::replace(&mut *agent, fresh),
            Err(poisoned) => std::mem::replace(&mut *poisoned.into_inner(), fresh),
        };
        old.shutdown();
    }

    /// Streams a chat completion, retrying transient failures that happen
    /// before any output was delivered.
    pub async fn stream_chat(
        &self,
        request: &ChatRequest<'_>,
        cancel: &Cancel,
        on_update: &mut (dyn FnMut(Update) + Send),
    ) -> Result<Assembled, Error> {
        let body: std::sync::Arc<[u8]> = serde_json::to_vec(request)
            .map_err(|e| Error::BadResponse {
                what: "the request".to_owned(),
                reason: e.to_string(),
            })?
            .into();
        let mut attempt = 0;
        loop {
            let mut produced_output = false;
            let result = self
                .attempt(std::sync::Arc::clone(&body), cancel, &mut |piece| {
                    produced_output |= piece.is_output();
                    on_update(Update::Piece(piece));
                })
                .await;
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            if produced_output || !error.is_retryable() || attempt >= self.retry.max_retries {
                return Err(error);
            }
            attempt += 1;
            let delay = self.backoff(attempt, error.retry_after());
            on_update(Update::Retry(RetryEvent {
                attempt,
                max_retries: self.retry.max_retries,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                reason: error_chain(&error),
            }));
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = cancel.cancelled() => return Err(Error::Cancelled),
            }
        }
    }

    async fn attempt(
        &self,
        body: std::sync::Arc<[u8]>,
        cancel: &Cancel,
        on_piece: &mut (dyn FnMut(Piece) + Send),
    ) -> Result<Assembled, Error> {
        let activity = Activity::default();
        let job = Job {
            agent: self.agent(),
            url: format!("{}/chat/completions", self.base_url),
            api_key: self.api_key.clone(),
            headers: self.headers.clone(),
            body,
        };
        let mut receiver = http::spawn(job, activity.clone());
        let tick = (self.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let mut ticker = tokio::time::interval(tick);
        loop {
            tokio::select! {
                message = receiver.recv() => match message {
                    Some(WorkerMsg::Pieces(pieces)) => pieces.into_iter().for_each(&mut *on_piece),
                    Some(WorkerMsg::Finished(result)) => return *result,
                    None => return Err(Error::BadResponse {
                        what: "the request".to_owned(),
                        reason: "the thread reading the response stopped unexpectedly".to_owned(),
                    }),
                },
                () = cancel.cancelled() => {
                    self.drop_connections();
                    return Err(Error::Cancelled);
                }
                _ = ticker.tick() => {
                    if activity.idle() > self.idle_timeout {
                        self.drop_connections();
                        return Err(Error::IdleTimeout(self.idle_timeout));
                    }
                }
            }
        }
    }

    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait;
        }
        let base = self
            .retry
            .initial_delay_ms
            .saturating_mul(1 << (attempt - 1).min(20))
            .min(self.retry.max_delay_ms);
        // Up to ±20 % jitter so clients that failed together retry apart.
        let jitter = (crate::ids::random_unit() - 0.5) * 0.4;
        #[expect(clippy::cast_precision_loss, reason = "delays are far below 2^52 ms")]
        let millis = base as f64 * (1.0 + jitter);
        Duration::from_secs_f64(millis.max(0.0) / 1000.0)
    }

    /// `GET /models`: the served models with their context lengths.
    pub fn list_models(&self) -> Result<Vec<ModelCard>, Error> {
        let url = format!("{}/models", self.base_url);
        let response = self
            .short(self.agent().get(&url))
            .call()
            .map_err(|source| Error::Connect {
                url: url.clone(),
                source,
            })?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .with_config()
            .limit(16 << 20)
            .read_to_string()
            .map_err(|e| Error::Read(std::io::Error::other(e)))?;
        if !(200..300).contains(&status) {
            let (message, code) = error::parse_error_body(&body);
            return Err(Error::Status {
                status,
                message,
                code,
                retry_after: None,
            });
        }
        let models: ModelsResponse =
            serde_json::from_str(&body).map_err(|e| Error::BadResponse {
                what: format!("`GET {url}`"),
                reason: e.to_string(),
            })?;
        Ok(models.data)
    }
}

/// What the server says about its models: the list, and llama.cpp's
/// context size when the list gives none.
#[derive(Debug)]
pub struct Listing {
    /// `GET /models`.
    pub models: Result<Vec<ModelCard>, Error>,
    /// llama.cpp's `/props` context size, asked only when no model in
    /// the list has a length.
    pub props: Option<u64>,
}

impl Listing {
    /// The context length the server gives for `model`: its card's, else
    /// the server-wide one.
    pub fn context_length(&self, model: &str) -> Option<u64> {
        let models = self.models.as_ref().ok()?;
        wire::context_length(models, model).or(self.props)
    }
}

/// The calls the core makes, run off the runtime's thread so a slow server
/// never blocks it; front ends and commands that talk to the server once
/// use the blocking forms.
impl Client {
    /// [`Client::listing`], off the runtime's thread.
    pub async fn fetch_listing(self: Arc<Self>) -> Listing {
        tokio::task::spawn_blocking(move || self.listing())
            .await
            .unwrap_or_else(|e| Listing {
                models: Err(Error::Read(std::io::Error::other(e.to_string()))),
                props: None,
            })
    }

    /// [`Client::context_length`] of `model`, off the runtime's thread.
    pub async fn fetch_context_length(self: Arc<Self>, model: String) -> Option<u64> {
        tokio::task::spawn_blocking(move || self.context_length(Some(&model)))
            .await
            .ok()
            .flatten()
    }

    /// [`Client::tokenize`], off the runtime's thread.
    pub async fn count_tokens(
        self: Arc<Self>,
        model: String,
        messages: Vec<wire::WireMessage>,
        tools: Vec<wire::ToolSpec>,
    ) -> Result<Option<wire::TokenizeResponse>, Error> {
        tokio::task::spawn_blocking(move || self.tokenize(&model, &messages, &tools))
            .await
            .unwrap_or_else(|e| Err(Error::Read(std::io::Error::other(e.to_string()))))
    }
}

impl Client {
    /// The model list, and llama.cpp's context size when it gives none.
    pub fn listing(&self) -> Listing {
        let models = self.list_models();
        let no_lengths = models
            .as_ref()
            .is_ok_and(|models| models.iter().all(|m| m.context().is_none()));
        let props = if no_lengths {
            self.props_context()
        } else {
            None
        };
        Listing { models, props }
    }

    /// The context length a request to `model` may use: `max_model_len`
    /// from `GET /models` (vLLM, `SGLang`), else llama.cpp's `GET /props`
    /// (`default_generation_settings.n_ctx`, per slot), else `None`.
    pub fn context_length(&self, model: Option<&str>) -> Option<u64> {
        let listed = self.list_models().ok().and_then(|models| {
            models
                .iter()
                .find(|m| model.is_none_or(|name| m.id == name))
                .and_then(ModelCard::context)
        });
        listed.or_else(|| self.props_context())
    }

    /// The server root (the API root without `/v1`), where vLLM serves
    /// `/tokenize` and llama.cpp `/props`.
    fn root(&self) -> &str {
        self.base_url.strip_suffix("/v1").unwrap_or(&self.base_url)
    }

    /// A short, non-streamed request: authorised, and with a deadline so
    /// a server that accepts the connection and never answers cannot hang
    /// a command.
    fn short<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        // Per phase, so a timeout says which one: the connection has its
        // own (`timeouts.connect_ms`, on the agent).
        let wait = Some(self.idle_timeout.min(SHORT_REQUEST));
        let request = request
            .config()
            .timeout_send_request(wait)
            .timeout_recv_response(wait)
            .timeout_recv_body(wait)
            .build();
        let request = self.headers.iter().fold(request, |request, (name, value)| {
            request.header(name, value)
        });
        match &self.api_key {
            Some(key) => request.header("authorization", format!("Bearer {key}")),
            None => request,
        }
    }

    /// llama.cpp's `GET {server root}/props` context size, if it answers.
    pub fn props_context(&self) -> Option<u64> {
        let url = format!("{}/props", self.root());
        let response = self.short(self.agent().get(&url)).call().ok()?;
        if !response.status().is_success() {
            return None;
        }
        let text = response
            .into_body()
            .with_config()
            .limit(16 << 20)
            .read_to_string()
            .ok()?;
        let props: serde_json::Value = serde_json::from_str(&text).ok()?;
        props["default_generation_settings"]["n_ctx"]
            .as_u64()
            .filter(|n| *n > 0)
    }

    /// llama.cpp's `POST {server root}/tokenize` of plain `text`
    /// (`{"content": …}` → `{"tokens": […]}`): how many tokens it is.
    pub fn tokenize_text(&self, text: &str) -> Option<usize> {
        let url = format!("{}/tokenize", self.root());
        let body = serde_json::json!({ "content": text }).to_string();
        let response = self
            .short(self.agent().post(&url))
            .header("content-type", "application/json")
            .send(body.as_bytes())
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let text = response
            .into_body()
            .with_config()
            .limit(16 << 20)
            .read_to_string()
            .ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        value["tokens"].as_array().map(Vec::len)
    }

    /// `POST {server root}/tokenize`: the exact prompt size of `messages`
    /// (with `tools`) and the context length. `Ok(None)` when the server
    /// has no such route or does not take this form.
    pub fn tokenize(
        &self,
        model: &str,
        messages: &[wire::WireMessage],
        tools: &[wire::ToolSpec],
    ) -> Result<Option<wire::TokenizeResponse>, Error> {
        let url = format!("{}/tokenize", self.root());
        let body = serde_json::to_vec(&wire::TokenizeRequest {
            model,
            messages,
            add_generation_prompt: true,
            tools,
        })
        .map_err(|e| Error::BadResponse {
            what: "the tokenize request".to_owned(),
            reason: e.to_string(),
        })?;
        let request = self
            .short(self.agent().post(&url))
            .header("content-type", "application/json");
        let response = request.send(&body[..]).map_err(|source| Error::Connect {
            url: url.clone(),
            source,
        })?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Ok(None);
        }
        let text = response
            .into_body()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| Error::Read(std::io::Error::other(e)))?;
        Ok(serde_json::from_str(&text).ok())
    }
}

/// An error and its causes on one line, for retry notices.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
