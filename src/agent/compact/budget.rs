//! A session's context budget: the model's context length, resolved in one
//! place, and how far offcode's estimates run below the server's counts.

use super::{MAX_SCALE, ratio, scale_tokens};
use crate::agent::turn::AgentState;
use crate::client;
use crate::config::Config;
use crate::protocol::{EventMsg, ModelInfo, ModelListEvent, SubmissionId};

/// A session's context budget: the model's context length, and how far
/// offcode's estimates run below the server's counts.
#[derive(Debug)]
pub(in crate::agent) struct Budget {
    /// The model's context length, once known.
    pub(super) limit: Option<u64>,
    /// Whether the server was asked for it.
    pub(super) limit_asked: bool,
    /// The server's prompt count of the last request over offcode's
    /// estimate of it (1 until usage arrives).
    pub(super) calibration: f64,
    /// The estimate of the request in flight.
    pub(super) sent_estimate: u64,
    /// Prompt tokens of the last request, as the server counted them.
    pub(super) last_prompt: Option<u64>,
    /// The server cannot count tokens (`/tokenize` failed once).
    pub(super) tokenize_unsupported: bool,
    /// A context-length error was answered by compacting in this step.
    pub(super) overflow_retried: bool,
    /// The server's last model list.
    pub(super) listed: Option<client::Listing>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            limit: None,
            limit_asked: false,
            calibration: 1.0,
            sent_estimate: 0,
            last_prompt: None,
            tokenize_unsupported: false,
            overflow_retried: false,
            listed: None,
        }
    }
}

impl Budget {
    /// Starts over for a server and model; `known` is the context length
    /// learned earlier, if any. Another model may tokenize differently.
    pub(in crate::agent) fn adopt(&mut self, known: Option<u64>) {
        self.limit = known;
        self.limit_asked = false;
        self.calibration = 1.0;
    }

    /// A request estimated at `estimate` tokens went out.
    pub(in crate::agent) fn sent(&mut self, estimate: u64) {
        self.sent_estimate = estimate;
    }

    /// The server counted the request just sent: later estimates are
    /// corrected by how far this one was off, only ever upwards (a low
    /// count, a proxy counting uncached tokens only, must not undo a
    /// correction; [`Budget::scale`] caps it).
    pub(in crate::agent) fn counted(&mut self, prompt_tokens: u64) {
        self.last_prompt = Some(prompt_tokens);
        if prompt_tokens > 0 && self.sent_estimate > 0 {
            self.calibration = self
                .calibration
                .max(ratio(prompt_tokens, self.sent_estimate));
        }
    }

    /// Prompt tokens of the last request, as the server counted them.
    pub(in crate::agent) fn last_prompt(&self) -> Option<u64> {
        self.last_prompt
    }

    /// A step got its answer: a later overflow may be retried again.
    pub(in crate::agent) fn answered(&mut self) {
        self.overflow_retried = false;
    }

    /// A context-length error, which said the limit when `limit` is
    /// some: true when this step may compact and retry (once).
    pub(in crate::agent) fn overflowed(&mut self, limit: Option<u64>) -> bool {
        if self.overflow_retried {
            return false;
        }
        self.overflow_retried = true;
        if limit.is_some() {
            self.limit = limit;
        }
        true
    }

    /// The most a response may take (`max_tokens`): the config's, else
    /// the room compaction keeps free for the answer (a quarter of the
    /// context at most); never more than `limit` leaves after a request
    /// of `estimate` tokens, less a margin for the estimate's error. Sent
    /// with every request, so no model generates until the context is
    /// full.
    pub(in crate::agent) fn answer_room(
        &self,
        config: &Config,
        limit: Option<u64>,
        estimate: u64,
    ) -> u32 {
        let reserve = config.compaction.reserve;
        let wanted = config.max_tokens.map_or_else(
            || limit.map_or(reserve, |limit| reserve.min(limit / 4)),
            u64::from,
        );
        let room = limit.map_or(wanted, |limit| {
            let request = scale_tokens(estimate, self.scale());
            limit
                .saturating_sub(request)
                .saturating_sub(limit / 32)
                .min(wanted)
        });
        u32::try_from(room.max(1)).unwrap_or(u32::MAX)
    }

    /// The correction applied to estimates.
    pub(super) fn scale(&self) -> f64 {
        self.calibration.clamp(1.0, MAX_SCALE)
    }
}

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
