//! What a headless run says while the server is silent.

use std::time::{Duration, Instant};

use crate::cadence::Cadence;
use crate::protocol::{EventMsg, TurnState};

/// Says what a run waits for when the server is silent: the model's first
/// output of a step, after 5 s and then every 15 s.
pub(super) struct Waiting {
    base_url: String,
    gives_up: Duration,
    /// While a step waits for the model.
    cadence: Cadence,
}

impl Waiting {
    pub(super) fn new(base_url: &str, gives_up: Duration) -> Self {
        Self {
            base_url: base_url.to_owned(),
            gives_up,
            cadence: Cadence::new(Duration::from_secs(5), Duration::from_secs(15)),
        }
    }

    /// Any event but the start of a step's wait ends the wait.
    pub(super) fn event(&mut self, msg: &EventMsg) {
        match msg {
            EventMsg::StateChanged {
                state: TurnState::Planning,
            } => {
                self.cadence.end();
                self.cadence.begin(Instant::now());
            }
            EventMsg::TokenUsage(_) => {}
            _ => self.cadence.end(),
        }
    }

    pub(super) fn note(&mut self) -> Option<String> {
        let now = Instant::now();
        let lasted = self.cadence.lasted(now)?;
        self.cadence.due(now).then(|| {
            format!(
                "Waiting for the model at `{}`: no output for {} s (it gives up after {} s, \
                 `timeouts.idle_ms`; Ctrl+C stops)",
                self.base_url,
                lasted.as_secs(),
                self.gives_up.as_secs()
            )
        })
    }
}
