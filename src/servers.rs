//! What offcode learned about a server and model, kept between runs so a
//! new session does not pay again for what the last one found out: the
//! context length, whether the server parses tool calls, whether the
//! model's responses open inside a think block.
//!
//! The cache lives in `<cache dir>/servers.json`, keyed by API root and
//! model. It is only a cache: a missing or unreadable file is empty, and
//! `offcode doctor` checks the server again and rewrites its entry.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How a server handles tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSupport {
    /// The server parses calls (`tools` in the request work).
    Native,
    /// It refuses `tools`: calls go through the text.
    Text,
}

/// Facts about one server and model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Known {
    /// Tool-call support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<ToolSupport>,
    /// `max_model_len` as the server reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    /// Responses open inside a think block (the template opens it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub think_open: bool,
    /// When this was last learned, in seconds since the epoch (0: before
    /// entries had a time; such an entry counts as expired).
    #[serde(default)]
    pub learned: u64,
}

/// The `cache` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CacheSettings {
    /// What a server was found to do is asked again after this many hours
    /// (0: never kept).
    pub ttl_hours: u64,
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self { ttl_hours: 24 }
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    servers: BTreeMap<String, Known>,
}

/// The cache file (or none, in tests and when there is no home).
#[derive(Debug, Clone, Default)]
pub struct ServerCache {
    path: Option<PathBuf>,
    /// How long an entry holds, in seconds (none: for ever).
    ttl: Option<u64>,
}

fn key(base_url: &str, model: &str) -> String {
    format!("{} {model}", base_url.trim_end_matches('/'))
}

impl ServerCache {
    /// The cache at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Some(path.into()),
            ttl: None,
        }
    }

    /// `servers.json` in the cache directory.
    pub fn in_dir(dir: Option<&Path>) -> Self {
        Self {
            path: dir.map(|d| d.join("servers.json")),
            ttl: None,
        }
    }

    /// Entries older than `settings.ttl_hours` count as unknown.
    #[must_use]
    pub fn with_ttl(mut self, settings: CacheSettings) -> Self {
        self.ttl = Some(settings.ttl_hours.saturating_mul(3600));
        self
    }

    fn read(&self) -> File {
        self.path
            .as_deref()
            .map(crate::state_file::read)
            .unwrap_or_default()
    }

    /// What is known about `model` at `base_url`.
    pub fn get(&self, base_url: &str, model: &str) -> Known {
        let known = self
            .read()
            .servers
            .remove(&key(base_url, model))
            .unwrap_or_default();
        match self.ttl {
            Some(ttl) if now().saturating_sub(known.learned) >= ttl => Known::default(),
            _ => known,
        }
    }

    /// Changes the entry of `model` at `base_url`. The file is replaced
    /// whole (written aside, then renamed), so a reader never sees half.
    pub fn update(
        &self,
        base_url: &str,
        model: &str,
        change: impl Fn(&mut Known),
    ) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        // Most updates change nothing: no lock, no write.
        let mut known = self.get(base_url, model);
        let before = known.clone();
        change(&mut known);
        if known == before && known.learned > 0 {
            return Ok(());
        }
        // Two offcode processes updating at once must not lose an update:
        // the file is read again under the lock, as this entry may have
        // changed since.
        crate::state_file::change(path, |file: &mut File| {
            let entry = file.servers.entry(key(base_url, model)).or_default();
            // An expired entry is learned afresh, not added to.
            if self
                .ttl
                .is_some_and(|ttl| now().saturating_sub(entry.learned) >= ttl)
            {
                *entry = Known::default();
            }
            change(entry);
            entry.learned = now();
            crate::log::line("server", &format!("{}: {entry:?}", key(base_url, model)));
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn entries_are_kept_per_server_and_model_across_instances() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ServerCache::in_dir(Some(dir.path()));
        cache
            .update("http://gpu:8000/v1/", "qwen", |k| {
                k.tool_calls = Some(ToolSupport::Text);
                k.max_model_len = Some(32_768);
            })
            .unwrap();
        let again = ServerCache::in_dir(Some(dir.path()));
        let known = again.get("http://gpu:8000/v1", "qwen");
        assert!(now() - known.learned < 60, "{known:?}");
        assert_eq!(
            known,
            Known {
                tool_calls: Some(ToolSupport::Text),
                max_model_len: Some(32_768),
                think_open: false,
                learned: known.learned,
            }
        );
        assert_eq!(again.get("http://gpu:8000/v1", "other"), Known::default());
    }

    #[test]
    fn an_entry_past_its_lifetime_is_learned_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers.json");
        let day_ago = now() - 25 * 3600;
        std::fs::write(
            &path,
            format!(r#"{{"servers": {{"http://a/v1 m": {{"max_model_len": 4096, "think_open": true, "learned": {day_ago}}}}}}}"#),
        )
        .unwrap();
        let forever = ServerCache::at(&path);
        assert_eq!(forever.get("http://a/v1", "m").max_model_len, Some(4096));
        let daily = ServerCache::at(&path).with_ttl(CacheSettings { ttl_hours: 24 });
        assert_eq!(daily.get("http://a/v1", "m"), Known::default());
        // What is learned now replaces the stale entry whole.
        daily
            .update("http://a/v1", "m", |k| k.max_model_len = Some(8192))
            .unwrap();
        let fresh = daily.get("http://a/v1", "m");
        assert_eq!((fresh.max_model_len, fresh.think_open), (Some(8192), false));
        let never = ServerCache::at(&path).with_ttl(CacheSettings { ttl_hours: 0 });
        assert_eq!(never.get("http://a/v1", "m"), Known::default());
    }

    #[test]
    fn updates_from_many_writers_at_once_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|n| {
                let cache = ServerCache::in_dir(Some(dir.path()));
                std::thread::spawn(move || {
                    for round in 0..10 {
                        cache
                            .update("http://a/v1", &format!("model-{n}"), |k| {
                                k.max_model_len = Some(round + 1);
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let cache = ServerCache::in_dir(Some(dir.path()));
        for n in 0..8 {
            assert_eq!(
                cache
                    .get("http://a/v1", &format!("model-{n}"))
                    .max_model_len,
                Some(10),
                "model-{n}"
            );
        }
    }

    #[test]
    fn a_corrupt_file_reads_as_empty_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers.json");
        std::fs::write(&path, "{not json").unwrap();
        let cache = ServerCache::at(&path);
        assert_eq!(cache.get("http://a/v1", "m"), Known::default());
        cache
            .update("http://a/v1", "m", |k| k.think_open = true)
            .unwrap();
        assert!(cache.get("http://a/v1", "m").think_open);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let mut leftovers = leftovers;
        leftovers.sort();
        assert_eq!(
            leftovers,
            vec![
                std::ffi::OsString::from("servers.json"),
                std::ffi::OsString::from("servers.json.lock")
            ]
        );
    }
}
