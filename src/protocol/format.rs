//! Numbers as people read them, shared by every front end.

/// `n` and `noun`, plural unless `n` is 1: `1 line`, `15 lines`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `512 B`, `1.2 KB`, `3.0 MB`.
pub fn format_size(bytes: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "one decimal is shown")]
    let value = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", value / 1024.0),
        _ => format!("{:.1} MB", value / 1_048_576.0),
    }
}

/// `950`, `1.2k`, `32.8k`, `128k`.
pub fn format_tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..100_000 => {
            let tenths = (n + 50) / 100;
            format!("{}.{}k", tenths / 10, tenths % 10)
        }
        _ => format!("{}k", (n + 500) / 1_000),
    }
}
