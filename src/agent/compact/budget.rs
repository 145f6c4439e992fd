//! The core's side of the context budget: asking the server for the
//! context length, and what fits.

use crate::agent::state::AgentState;
use crate::client;
use crate::protocol::{EventMsg, ModelInfo, ModelListEvent, SubmissionId};

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
            let found = client.fetch_context_length(self.model().to_owned()).await;
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
            listed.context_length(self.model())
        })
    }

    /// Asks the server for its models in the background; the runner
    /// takes the answer ([`AgentState::model_list`]) in between ops.
    pub(in crate::agent) fn list_models(&self, id: SubmissionId) {
        let client = std::sync::Arc::clone(&self.client);
        let listed = self.listed.clone();
        tokio::spawn(async move {
            let _ = listed.send((id, client.fetch_listing().await));
        });
    }

    /// The server's answer to a model list: kept for the context length,
    /// and told with the active model's length.
    pub(in crate::agent) fn model_list(&mut self, id: SubmissionId, listing: client::Listing) {
        let (models, error) = match &listing.models {
            Ok(models) => (
                models
                    .iter()
                    .map(|m| ModelInfo {
                        id: m.id.clone(),
                        context: m.context(),
                    })
                    .collect(),
                None,
            ),
            Err(error) => (Vec::new(), Some(client::error_chain(error))),
        };
        if error.is_none() {
            self.budget.listed = Some(listing);
        }
        let limit = self.known_limit();
        self.emit(
            id,
            EventMsg::ModelList(ModelListEvent {
                models,
                error,
                limit,
            }),
        );
    }
}
