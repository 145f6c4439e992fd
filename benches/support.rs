//! Timing helpers shared by the benchmarks (`#[path]`-included by each).
#![allow(dead_code, reason = "each benchmark uses what it needs")]

use std::time::{Duration, Instant};

/// The middle sample.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The median time of `runs` calls of `f`.
pub fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}
