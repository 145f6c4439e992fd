//! `offcode doctor`: checks the sandbox, the MCP servers, and the endpoint
//! step by step (name, connection, TLS, HTTP, models, tool calling,
//! reasoning, token counting) and prints,
//! for each problem, the exact fix. What it learns about the server is
//! cached for the next session.

use std::fmt::Write as _;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::client::{self, Client};
use crate::config::{Environment, Flags};
use crate::failure::{EXIT_FAILED, Failure};
use crate::servers::ServerCache;
use crate::startup::load_config;
use crate::stdio::out;

mod local;
mod probe;

use probe::{Fixes, probe_tools, report_reasoning, report_tools, tokenize};

/// What the checks learn, kept for the next session.
struct Memory<'a> {
    cache: ServerCache,
    base_url: &'a str,
    model: &'a str,
}

impl Memory<'_> {
    /// A cache that cannot be written only costs the next start a probe.
    fn set(&self, change: impl Fn(&mut crate::servers::Known)) {
        let _ = self.cache.update(self.base_url, self.model, change);
    }
}

/// The checks' results as they are printed.
struct Report {
    checks: usize,
    problems: usize,
}

impl Report {
    fn line(&mut self, mark: &str, text: &str) -> Result<(), Failure> {
        self.checks += 1;
        out(&format!("{mark} {text}\n"))
    }

    pub(super) fn ok(&mut self, text: &str) -> Result<(), Failure> {
        self.line("✓", text)
    }

    pub(super) fn note(&mut self, text: &str) -> Result<(), Failure> {
        self.line("·", text)
    }

    pub(super) fn problem(&mut self, text: &str, fix: &str) -> Result<(), Failure> {
        self.problems += 1;
        self.line("✗", text)?;
        out(&format!("  fix: {fix}\n"))
    }
}

fn millis(since: Instant) -> u128 {
    since.elapsed().as_millis()
}

/// The client for the endpoint; a problem reported when the connection
/// settings are wrong.
fn client(
    config: &crate::config::Config,
    environment: &Environment,
    report: &mut Report,
) -> Result<Option<crate::client::Client>, Failure> {
    match crate::startup::client(config, environment) {
        Ok(client) => Ok(Some(client)),
        Err(failure) => {
            let mut text = failure.message;
            for cause in failure.causes {
                let _ = write!(text, ": {cause}");
            }
            report.problem(
                &text,
                "fix `tls` in the config or the proxy variables (`HTTPS_PROXY`, `http_proxy`, `ALL_PROXY`, `NO_PROXY`)",
            )?;
            Ok(None)
        }
    }
}

/// The server's model list, saying what is waited for if it is slow.
fn list(
    client: &crate::client::Client,
) -> Result<Vec<crate::client::wire::ModelCard>, crate::client::Error> {
    crate::stdio::with_notice(
        NOTICE,
        format!(
            "  … waiting for the model list (GET {}/models)",
            client.base_url()
        ),
        || client.list_models(),
    )
}

fn probe_notice(model: &str) -> String {
    format!("  … waiting for `{model}` to answer a test request that offers a tool")
}

/// How long a step may be silent before doctor says what it waits for.
const NOTICE: Duration = Duration::from_secs(2);

/// The config of the model's provider, whose server is the one checked:
/// the model named, else the first provider's first (or its server's).
fn model_route(config: &crate::config::Config, environment: &Environment) -> crate::config::Config {
    let var = |name: &str| environment.var(name).map(str::to_owned);
    // A model that leads nowhere is checked on the shorthand's server,
    // which then says it is not served.
    if let Some(reference) = config.model.clone().or_else(|| config.default_reference())
        && let Ok(routed) = config.routed(&reference, &var)
    {
        return routed;
    }
    config.for_provider(config.default_provider(), &var)
}

/// `offcode doctor`: 0 when healthy, 1 when a problem was found.
pub fn run(model: Option<&str>, environment: &Environment) -> Result<u8, Failure> {
    let flags = Flags {
        model: model.map(str::to_owned),
    };
    let loaded = load_config(environment, &flags)?;
    let routed = model_route(&loaded.config, environment);
    let config = &routed;
    let mut report = Report {
        checks: 0,
        problems: 0,
    };
    match &config.route.provider {
        Some(provider) => out(&format!(
            "offcode doctor: {} (provider `{provider}`)\n",
            config.base_url
        ))?,
        None => out(&format!("offcode doctor: {}\n", config.base_url))?,
    }
    local::sandbox(environment, config, &mut report)?;
    local::mcp_servers(environment, config, &mut report)?;
    let Some(client) = client(config, environment, &mut report)? else {
        return Ok(finish(&report));
    };
    if config.tls.insecure_skip_verify && config.base_url.starts_with("https") {
        report.problem(
            "certificate checks are off (`tls.insecure_skip_verify`)",
            "set `tls.ca_file` to the server's CA certificate (PEM) and remove `insecure_skip_verify`",
        )?;
    }
    if !reach(config, &client, &mut report)? {
        return Ok(finish(&report));
    }
    let started = Instant::now();
    let models = match list(&client) {
        Ok(models) => models,
        Err(error) => {
            let (text, fix) = http_problem(&error, client.base_url());
            report.problem(&text, &fix)?;
            return Ok(finish(&report));
        }
    };
    list_models(config, &models, started, &mut report)?;
    let chosen = Some(config.route.model.clone())
        .filter(|id| !id.is_empty())
        .or_else(|| models.first().map(|m| m.id.clone()));
    let Some(model) = chosen else {
        report.problem(
            "the server lists no models",
            "start vLLM with a model (`vllm serve MODEL`), or check `base_url`",
        )?;
        return Ok(finish(&report));
    };
    let Some(card) = models.iter().find(|m| m.id == model) else {
        let served: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        // OpenCode's `provider/model` with no such provider here.
        let fix = match model.split_once('/') {
            Some((provider, rest)) if config.route.provider.is_none() && served.contains(&rest) => {
                format!(
                    "`{provider}` is no configured provider, so `{model}` went to `base_url` as it is: define `{provider}` under `provider` (docs/providers.md), or set `model` to `{rest}`"
                )
            }
            _ => format!(
                "set `model` to one of those (config or `--model`), or start vLLM with `--served-model-name {model}`"
            ),
        };
        report.problem(
            &format!(
                "the model `{model}` is not served here (served: {})",
                served.join(", ")
            ),
            &fix,
        )?;
        return Ok(finish(&report));
    };
    report.ok(&format!("model `{model}` is served"))?;
    let remember = Memory {
        cache: ServerCache::in_dir(environment.cache_dir().as_deref()),
        base_url: &config.base_url,
        model: &model,
    };
    let context = report_context(config, card, &client, &remember, &mut report)?;
    report_compact(config, &model, context, &mut report)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
    let probe = crate::stdio::with_notice(NOTICE, probe_notice(&model), || {
        runtime.block_on(probe_tools(&client, config, &model))
    });
    let fixes = Fixes {
        llama_cpp: card.is_llama_cpp(),
    };
    report_tools(&probe, &mut report, &remember, fixes)?;
    report_reasoning(&probe, &mut report, &remember, fixes)?;
    tokenize(&client, &model, &mut report, fixes)?;
    Ok(finish(&report))
}

/// The model's context length and where it comes from; the server's is
/// kept for the next session.
fn report_context(
    config: &crate::config::Config,
    card: &crate::client::wire::ModelCard,
    client: &Client,
    remember: &Memory<'_>,
    report: &mut Report,
) -> Result<Option<u64>, Failure> {
    if let Some(limit) = config.context_limit {
        report.ok(&format!(
            "context {limit} tokens (`context_limit` in the config)"
        ))?;
        return Ok(Some(limit));
    }
    let found = card.context().or_else(|| client.props_context());
    match found {
        Some(limit) => {
            if card.context().is_none() {
                report.ok(&format!("context {limit} tokens (from /props)"))?;
            }
            remember.set(|known| known.max_model_len = Some(limit));
        }
        None => report.note(
            "the server does not say its context length: set `context_limit` in the config",
        )?,
    }
    Ok(found)
}

/// Which prompt and tool set a session with `model` gets, and why.
fn report_compact(
    config: &crate::config::Config,
    model: &str,
    context: Option<u64>,
    report: &mut Report,
) -> Result<(), Failure> {
    let (compact, why) = crate::agents::compact_choice(config.compact.forced(), model, context);
    report.note(&if compact {
        format!("prompt and tools: compact ({why}): no `task`, `patch` or todo tools; set `\"compact\": \"off\"` for all")
    } else {
        format!("prompt and tools: full ({why}); `\"compact\": \"on\"` gives a small model fewer tools and a shorter prompt")
    })
}

/// The models the server lists, with their context lengths.
fn list_models(
    config: &crate::config::Config,
    models: &[crate::client::wire::ModelCard],
    started: Instant,
    report: &mut Report,
) -> Result<(), Failure> {
    let tls = match (
        config.base_url.starts_with("https"),
        config.tls.insecure_skip_verify,
    ) {
        (false, _) => "",
        (true, false) => ", TLS verified",
        (true, true) => ", TLS not verified",
    };
    report.ok(&format!(
        "GET /models answered in {} ms{tls}",
        millis(started)
    ))?;
    let mut listing = String::new();
    let width = models.iter().map(|m| m.id.len()).max().unwrap_or(0);
    for card in models {
        let context = card
            .context()
            .map_or_else(|| "context unknown".to_owned(), |n| format!("context {n}"));
        let _ = writeln!(listing, "    {:width$}  {context}", card.id);
    }
    out(&listing)
}

fn finish(report: &Report) -> u8 {
    let text = match report.problems {
        0 => "No problems found.\n".to_owned(),
        1 => "1 problem found.\n".to_owned(),
        n => format!("{n} problems found.\n"),
    };
    let _ = out(&text);
    u8::from(report.problems > 0)
}

/// Name resolution and the TCP connection (skipped through a proxy, which
/// resolves and connects itself). False when the server cannot be reached.
fn reach(
    config: &crate::config::Config,
    client: &Client,
    report: &mut Report,
) -> Result<bool, Failure> {
    if let Some(proxy) = client.proxy() {
        report.note(&format!("requests go through the proxy {proxy}"))?;
        return Ok(true);
    }
    let Some((host, port)) = crate::client::net::host_port(&config.base_url) else {
        report.problem(
            &format!("`base_url` `{}` has no host", config.base_url),
            "set `base_url` to the server's API root, e.g. `http://gpu1:8000/v1`",
        )?;
        return Ok(false);
    };
    let started = Instant::now();
    let addresses: Vec<_> = match (host.as_str(), port).to_socket_addrs() {
        Ok(addresses) => addresses.collect(),
        Err(error) => {
            report.problem(
                &format!("cannot resolve the host `{host}`: {error}"),
                "check the host name in `base_url`, or add it to /etc/hosts on this machine",
            )?;
            return Ok(false);
        }
    };
    let Some(first) = addresses.first() else {
        report.problem(
            &format!("the host `{host}` has no address"),
            "check the host name in `base_url`",
        )?;
        return Ok(false);
    };
    if host.parse::<std::net::IpAddr>().is_err() {
        report.ok(&format!(
            "{host} resolves to {} ({} ms)",
            first.ip(),
            millis(started)
        ))?;
    }
    let started = Instant::now();
    let timeout = Duration::from_millis(config.timeouts.connect_ms);
    // `localhost` is often ::1 first while the server listens on IPv4.
    let mut failure = None;
    let connected =
        addresses.iter().find(
            |address| match TcpStream::connect_timeout(address, timeout) {
                Ok(_) => true,
                Err(error) => {
                    failure.get_or_insert(error);
                    false
                }
            },
        );
    match (connected, failure) {
        (Some(address), _) => {
            report.ok(&format!("connected to {address} in {} ms", millis(started)))?;
        }
        (None, error) => {
            let error = error.map_or_else(|| "no address".to_owned(), |e| e.to_string());
            report.problem(
                &format!("cannot connect to {first}: {error}"),
                &format!(
                    "start the server (e.g. `vllm serve MODEL --host 0.0.0.0 --port {port}`), or check the port in `base_url` and the firewall"
                ),
            )?;
            return Ok(false);
        }
    }
    Ok(true)
}

/// A failed `GET /models`, said plainly, with its fix.
fn http_problem(error: &client::Error, base_url: &str) -> (String, String) {
    let text = client::error_chain(error);
    let fix = match error {
        client::Error::Connect { .. } if error.is_certificate_problem() => {
            client::CERTIFICATE_FIX.to_owned()
        }
        client::Error::Status {
            status: 401 | 403, ..
        } => "set the API key with `OFFCODE_API_KEY` (or `api_key` in the config); for vLLM it is the `--api-key` it was started with".to_owned(),
        client::Error::Status { status: 404, .. } => format!(
            "`base_url` must be the API root, usually ending in `/v1` (now `{base_url}`)"
        ),
        _ => "check that `base_url` points at an OpenAI-compatible server (vLLM, llama.cpp, LiteLLM...)".to_owned(),
    };
    (text, fix)
}
