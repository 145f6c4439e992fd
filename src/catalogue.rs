//! The models every endpoint offers, as `/models`, `offcode models` and
//! `offcode config` show them: each provider's configured models first,
//! then what its server lists (through its `whitelist` and `blacklist`),
//! grouped by provider, each under the name it is switched to with.

use std::sync::Arc;

use crate::client::{Client, Listing, Pool};
use crate::config::Config;
use crate::protocol::{ModelInfo, ProviderInfo};

/// One endpoint's answer to `GET /models`.
pub struct Listed {
    /// The provider's key; `None` for the shorthand (`base_url`).
    pub provider: Option<String>,
    /// Its API root.
    pub base_url: String,
    /// What it said.
    pub listing: Listing,
}

/// One endpoint to ask, with its client (or why none could be made).
pub struct Endpoint {
    /// The provider's key; `None` for the shorthand.
    pub provider: Option<String>,
    /// Its API root.
    pub base_url: String,
    /// Its client.
    pub client: Result<Arc<Client>, String>,
}

/// The endpoints `config` names and a client for each (a client that
/// cannot be made is reported with its endpoint).
pub fn endpoints(config: &Config, pool: &Pool, shorthand_in_use: bool) -> Vec<Endpoint> {
    config
        .endpoints(shorthand_in_use)
        .into_iter()
        .map(|provider| {
            let routed = config.for_provider(provider.as_deref(), &crate::config::process_var);
            let client = pool
                .get(&routed)
                .map_err(|e| crate::client::error_chain(&e));
            Endpoint {
                provider,
                base_url: routed.base_url,
                client,
            }
        })
        .collect()
}

/// Asks every endpoint for its models, at once.
pub async fn fetch(endpoints: Vec<Endpoint>) -> Vec<Listed> {
    let asks: Vec<_> = endpoints
        .into_iter()
        .map(
            |Endpoint {
                 provider,
                 base_url,
                 client,
             }| {
                tokio::spawn(async move {
                    let listing = match client {
                        Ok(client) => client.fetch_listing().await,
                        Err(why) => Listing {
                            models: Err(crate::client::Error::Setup(why)),
                            props: None,
                        },
                    };
                    Listed {
                        provider,
                        base_url,
                        listing,
                    }
                })
            },
        )
        .collect();
    let mut listed = Vec::with_capacity(asks.len());
    for ask in asks {
        if let Ok(answer) = ask.await {
            listed.push(answer);
        }
    }
    listed
}

/// Every model of `listed`, grouped by endpoint in `config`'s order,
/// and each endpoint with why it did not answer.
pub fn models(config: &Config, listed: &[Listed]) -> (Vec<ModelInfo>, Vec<ProviderInfo>) {
    let mut models = Vec::new();
    let mut providers = Vec::new();
    for entry in listed {
        let served = entry.listing.models.as_ref().ok();
        let error = entry
            .listing
            .models
            .as_ref()
            .err()
            .map(|e| crate::client::error_chain(e));
        let Some(key) = &entry.provider else {
            models.extend(served.into_iter().flatten().map(|card| ModelInfo {
                id: card.id.clone(),
                provider: None,
                name: None,
                context: card.context().or(entry.listing.props),
            }));
            providers.push(ProviderInfo {
                key: None,
                label: entry.base_url.clone(),
                base_url: entry.base_url.clone(),
                error,
            });
            continue;
        };
        let Some(provider) = config.provider.get(key) else {
            continue;
        };
        let context_of = |id: &str| {
            served
                .and_then(|cards| cards.iter().find(|c| c.id == id))
                .and_then(crate::client::wire::ModelCard::context)
                .or(entry.listing.props)
        };
        let mut named = Vec::new();
        for (name, model) in &provider.models {
            let id = model.id.as_deref().unwrap_or(name);
            named.push(id.to_owned());
            models.push(ModelInfo {
                id: format!("{key}/{name}"),
                provider: Some(key.clone()),
                name: model.name.clone(),
                context: model.limit.context.or_else(|| context_of(id)),
            });
        }
        let listed_too = served.into_iter().flatten().filter(|card| {
            !named.contains(&card.id)
                && (provider.whitelist.is_empty() || provider.whitelist.contains(&card.id))
                && !provider.blacklist.contains(&card.id)
        });
        models.extend(listed_too.map(|card| ModelInfo {
            id: format!("{key}/{}", card.id),
            provider: Some(key.clone()),
            name: None,
            context: card.context().or(entry.listing.props),
        }));
        providers.push(ProviderInfo {
            key: Some(key.clone()),
            label: provider.name.clone().unwrap_or_else(|| key.clone()),
            base_url: entry.base_url.clone(),
            error,
        });
    }
    (models, providers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::wire::ModelCard;
    use serde_json::json;

    fn card(id: &str, context: u64) -> ModelCard {
        serde_json::from_value(json!({"id": id, "max_model_len": context})).unwrap()
    }

    #[test]
    fn configured_models_come_first_then_what_the_server_lists_through_its_filters() {
        let config: Config = serde_json::from_value(json!({
            "provider": {"gpu": {
                "name": "GPU box",
                "options": {"baseURL": "http://gpu1:8000/v1"},
                "blacklist": ["hidden"],
                "models": {"coder": {"id": "Qwen/Coder", "name": "Qwen Coder"}}
            }}
        }))
        .unwrap();
        let listed = [
            Listed {
                provider: None,
                base_url: "http://local/v1".into(),
                listing: Listing {
                    models: Ok(vec![card("small", 4096)]),
                    props: None,
                },
            },
            Listed {
                provider: Some("gpu".into()),
                base_url: "http://gpu1:8000/v1".into(),
                listing: Listing {
                    models: Ok(vec![
                        card("Qwen/Coder", 65536),
                        card("hidden", 1),
                        card("other", 8192),
                    ]),
                    props: None,
                },
            },
        ];
        let (models, providers) = models(&config, &listed);
        let ids: Vec<(&str, Option<u64>)> =
            models.iter().map(|m| (m.id.as_str(), m.context)).collect();
        assert_eq!(
            ids,
            [
                ("small", Some(4096)),
                ("gpu/coder", Some(65536)),
                ("gpu/other", Some(8192))
            ]
        );
        assert_eq!(models[1].name.as_deref(), Some("Qwen Coder"));
        assert_eq!(providers[1].label, "GPU box");
        assert!(providers.iter().all(|p| p.error.is_none()));
    }
}
