//! A session's context budget: the model's context length, resolved in one
//! place, and how far offcode's estimates run below the server's counts.

use crate::client;
use crate::config::Config;

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

/// The largest correction of the estimate that usage may apply (code and
/// JSON run about 1.4 times the estimate; more is a suspect count).
pub(super) const MAX_SCALE: f64 = 2.0;

/// `exact / estimate`, for scaling later estimates.
#[allow(
    clippy::cast_precision_loss,
    reason = "token counts are far below 2^52"
)]
pub(super) fn ratio(exact: u64, estimate: u64) -> f64 {
    exact as f64 / estimate.max(1) as f64
}

/// `tokens` scaled by `scale`.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "token counts are far below 2^52 and the scale is positive"
)]
pub(super) fn scale_tokens(tokens: u64, scale: f64) -> u64 {
    (tokens as f64 * scale).round() as u64
}
