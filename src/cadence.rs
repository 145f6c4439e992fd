//! Saying something now and then while a wait lasts: first after a while,
//! then every so often, never in between.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

/// When a note about a lasting wait is due.
#[derive(Debug, Clone, Copy)]
pub struct Cadence {
    /// How long the wait lasts before the first note.
    first: Duration,
    /// How long between notes after that.
    every: Duration,
    /// Since when the wait lasts, if it does.
    since: Option<Instant>,
    /// When the last note was given.
    said: Option<Instant>,
}

impl Cadence {
    /// The first note after `first` of waiting, then one every `every`.
    pub const fn new(first: Duration, every: Duration) -> Self {
        Self {
            first,
            every,
            since: None,
            said: None,
        }
    }

    /// The wait begins at `now`, unless it already lasts.
    pub fn begin(&mut self, now: Instant) {
        self.since.get_or_insert(now);
    }

    /// The wait is over: the next one starts from scratch.
    pub fn end(&mut self) {
        self.since = None;
        self.said = None;
    }

    /// How long the wait has lasted, when one does.
    pub fn lasted(&self, now: Instant) -> Option<Duration> {
        self.since.map(|since| now.saturating_duration_since(since))
    }

    /// Whether a note is due at `now`; if so, it counts as given.
    pub fn due(&mut self, now: Instant) -> bool {
        let Some(since) = self.since else {
            return false;
        };
        let due = match self.said {
            Some(said) => now.saturating_duration_since(said) >= self.every,
            None => now.saturating_duration_since(since) >= self.first,
        };
        if due {
            self.said = Some(now);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_comes_after_the_first_wait_then_every_so_often() {
        let mut cadence = Cadence::new(Duration::from_secs(5), Duration::from_secs(10));
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert!(!cadence.due(at(9)), "no wait yet");
        cadence.begin(at(0));
        cadence.begin(at(3));
        assert!(!cadence.due(at(4)));
        assert!(cadence.due(at(5)), "counted from the first begin");
        assert!(!cadence.due(at(6)));
        assert!(!cadence.due(at(14)));
        assert!(cadence.due(at(15)));
        assert_eq!(cadence.lasted(at(15)), Some(Duration::from_secs(15)));
        cadence.end();
        assert_eq!(cadence.lasted(at(16)), None);
        assert!(!cadence.due(at(30)));
        cadence.begin(at(30));
        assert!(cadence.due(at(35)), "a new wait starts from scratch");
    }
}
