//! The model a session starts with when none is named.

use crate::client::Client;
use crate::config::Environment;
use crate::failure::{EXIT_FAILED, Failure};

/// The model when none is named: the first provider's first configured
/// model; else the first model the shorthand's server (or, with only
/// providers configured, the first provider's) lists.
pub(super) fn default_model(
    config: &crate::config::Config,
    environment: &Environment,
) -> Result<String, Failure> {
    if let Some(reference) = config.default_reference() {
        return Ok(reference);
    }
    let provider = config.default_provider();
    let var = |name: &str| environment.var(name).map(str::to_owned);
    let endpoint = super::client(&config.for_provider(provider, &var), environment)?;
    let model = first_served_model(&endpoint)?;
    Ok(match provider {
        Some(provider) => format!("{provider}/{model}"),
        None => model,
    })
}

fn first_served_model(client: &Client) -> Result<String, Failure> {
    // A server slow to answer: say what is waited for.
    let models = crate::stdio::with_notice(
        std::time::Duration::from_secs(2),
        format!(
            "Asking `{}` which models it serves (no `model` is configured)…",
            client.base_url()
        ),
        || client.list_models(),
    );
    let models = models.map_err(|e| Failure::from_client(&e, client.base_url()))?;
    models.into_iter().next().map(|m| m.id).ok_or_else(|| {
        Failure::message(
            format!("The server at `{}` lists no models", client.base_url()),
            EXIT_FAILED,
        )
        .with_hint("Set `model` in the config or pass `--model`")
    })
}
