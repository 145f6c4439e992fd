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
}

fn key(base_url: &str, model: &str) -> String {
    format!("{} {model}", base_url.trim_end_matches('/'))
}

impl ServerCache {
    /// The cache at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Some(path.into()),
        }
    }

    /// `servers.json` in the cache directory.
    pub fn in_dir(dir: Option<&Path>) -> Self {
        Self {
            path: dir.map(|d| d.join("servers.json")),
        }
    }

    fn read(&self) -> File {
        self.path
            .as_deref()
            .map(crate::state_file::read)
            .unwrap_or_default()
    }

    /// What is known about `model` at `base_url`.
    pub fn get(&self, base_url: &str, model: &str) -> Known {
        self.read()
            .servers
            .remove(&key(base_url, model))
            .unwrap_or_default()
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
        if known == before {
            return Ok(());
        }
        // Two offcode processes updating at once must not lose an update:
        // the file is read again under the lock, as this entry may have
        // changed since.
        crate::state_file::change(path, |file: &mut File| {
            change(file.servers.entry(key(base_url, model)).or_default());
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
        assert_eq!(
            again.get("http://gpu:8000/v1", "qwen"),
            Known {
                tool_calls: Some(ToolSupport::Text),
                max_model_len: Some(32_768),
                think_open: false,
            }
        );
        assert_eq!(again.get("http://gpu:8000/v1", "other"), Known::default());
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
