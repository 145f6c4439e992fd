//! The core's side of the context budget: asking the server for the
//! context length, and what fits.

use crate::agent::state::AgentState;
use crate::client;
use crate::protocol::{EventMsg, ModelListEvent, SubmissionId};

impl AgentState {
    /// The model's context length, asking the server once when nothing
    /// else tells it.
    pub(in crate::agent) async fn context_limit(&mut self) -> Option<u64> {
        if let Some(limit) = self.known_limit() {
            return Some(limit);
        }
        if !self.budget.limit_asked {
            self.budget.limit_asked = true;
            let client = std::sync::Arc::clone(&self.client);
            let found = client
                .fetch_context_length(self.model_id().to_owned())
                .await;
            self.budget.limit = found;
            if let Some(limit) = found {
                self.remember(0, |known| known.max_model_len = Some(limit));
            }
        }
        self.budget.limit
    }

    /// The model's context length without asking the server: the one
    /// place it is resolved. The config's wins; then what the server said
    /// (an overflow error, `/tokenize`, an earlier run), then its model
    /// list.
    pub(in crate::agent) fn known_limit(&self) -> Option<u64> {
        crate::context::context_limit(self.config.context_limit, self.budget.limit, || {
            let listed = self.budget.listed.as_ref()?;
            listed.context_length(self.model_id())
        })
    }

    /// Asks every endpoint for its models in the background; the runner
    /// takes the answers ([`AgentState::model_list`]) in between ops.
    pub(in crate::agent) fn list_models(&self, id: SubmissionId) {
        let endpoints = crate::catalogue::endpoints(
            &self.base_config,
            &self.clients,
            self.config.route.provider.is_none(),
        );
        let listed = self.listed.clone();
        tokio::spawn(async move {
            let _ = listed.send((id, crate::catalogue::fetch(endpoints).await));
        });
    }

    /// The endpoints' answers: the active provider's kept for the context
    /// length, and told with the active model's length.
    pub(in crate::agent) fn model_list(
        &mut self,
        id: SubmissionId,
        listed: Vec<crate::catalogue::Listed>,
    ) {
        let (models, providers) = crate::catalogue::models(&self.base_config, &listed);
        let current = self.config.route.provider.clone();
        let active = listed.into_iter().find(|l| l.provider == current);
        let error = match active {
            Some(active) => match &active.listing.models {
                Ok(_) => {
                    self.budget.listed = Some(active.listing);
                    None
                }
                Err(error) => Some(client::error_chain(error)),
            },
            None => Some("its provider was not asked".to_owned()),
        };
        let limit = self.known_limit();
        // One endpoint needs no grouping.
        let providers = if providers.len() > 1 || current.is_some() {
            providers
        } else {
            Vec::new()
        };
        self.emit(
            id,
            EventMsg::ModelList(ModelListEvent {
                models,
                error,
                limit,
                providers,
            }),
        );
    }
}
