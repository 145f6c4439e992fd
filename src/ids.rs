//! Random numbers for ids, temporary names and retry jitter: distinct
//! between calls and processes, not for secrets.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// A number in `[0, 1)` that differs between calls and processes; good
/// enough for jitter and ids, not for secrets.
pub fn random_unit() -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "53 bits are exact in f64")]
    let unit = (random_u64() >> 11) as f64 / (1u64 << 53) as f64;
    unit
}

/// 64 bits that differ between calls and processes (std's per-instance
/// random hasher keys mixed with the clock); not for secrets.
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}
