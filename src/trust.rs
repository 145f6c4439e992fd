//! Trusted project folders.
//!
//! A project's config (`./offcode.jsonc`, `.offcode/offcode.jsonc`) comes
//! with the repository, so it may tighten the policy freely but loosen it
//! only once the user has trusted that folder. What loosens is the
//! project's `allow` rules and `sandbox.network: true`; the user trusts
//! exactly those, for that folder, and is asked again when they change.
//! The record is kept as text (not a hash), so nothing but the same
//! loosening matches it.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a project's config would loosen, and whether the user trusts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loosening {
    /// The workspace the config belongs to.
    pub root: PathBuf,
    /// The project files it comes from.
    pub files: Vec<PathBuf>,
    /// One line per loosening setting: `permission.bash["cargo test *"] = allow`.
    pub entries: Vec<String>,
    /// Whether the user trusted exactly these entries for this folder.
    pub trusted: bool,
}

impl Loosening {
    /// The text the trust record keeps.
    pub fn text(&self) -> String {
        self.entries.join("\n")
    }

    /// The warning for an untrusted loosening: what is ignored, and how
    /// to trust it.
    pub fn warning(&self) -> String {
        format!(
            "This folder's config would loosen offcode's safety settings ({}); they are ignored until \
             you trust the folder: run `offcode trust` here (or answer the question offcode \
             asks when it starts in a terminal). Its stricter rules apply.",
            self.entries.join("; ")
        )
    }
}

/// The `allow` entries of a config file's `permission` value, as lines.
pub fn allow_entries(permission: &Value) -> Vec<String> {
    let allows = |value: &Value| value.as_str() == Some("allow");
    let mut entries = Vec::new();
    match permission {
        Value::String(_) if allows(permission) => entries.push("permission = allow".to_owned()),
        Value::Object(keys) => {
            for (key, value) in keys {
                match value {
                    Value::String(_) if allows(value) => {
                        entries.push(format!("permission.{key} = allow"));
                    }
                    Value::Object(patterns) => {
                        for (pattern, action) in patterns {
                            if allows(action) {
                                entries.push(format!("permission.{key}[{pattern:?}] = allow"));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    entries
}

/// The file of trusted folders: `~/.local/share/offcode/trusted.json`.
#[derive(Debug, Clone)]
pub struct Store {
    path: Option<PathBuf>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    /// Folder → the loosening text trusted there.
    folders: BTreeMap<String, String>,
}

impl Store {
    /// The store in `data_dir` (none: nothing is trusted, nothing kept).
    pub fn in_dir(data_dir: Option<&Path>) -> Self {
        Self {
            path: data_dir.map(|dir| dir.join("trusted.json")),
        }
    }

    /// Where the record is kept.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn read(&self) -> File {
        self.path
            .as_deref()
            .map(crate::state_file::read)
            .unwrap_or_default()
    }

    /// Whether `text` is what was trusted in `root`.
    pub fn trusts(&self, root: &Path, text: &str) -> bool {
        self.read().folders.get(&key(root)).map(String::as_str) == Some(text)
    }

    /// Trusts `loosening` in its folder (replacing what was trusted there).
    pub fn trust(&self, loosening: &Loosening) -> std::io::Result<()> {
        self.change(|file| {
            file.folders.insert(key(&loosening.root), loosening.text());
        })
    }

    /// Forgets the folder; true when it was trusted.
    pub fn revoke(&self, root: &Path) -> std::io::Result<bool> {
        let was = self.read().folders.contains_key(&key(root));
        self.change(|file| {
            file.folders.remove(&key(root));
        })?;
        Ok(was)
    }

    /// Reads, changes and replaces the file whole, under a lock.
    fn change(&self, change: impl FnOnce(&mut File)) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Err(std::io::Error::other(
                "no data directory (set HOME or OFFCODE_DATA_DIR) to keep trusted folders in",
            ));
        };
        crate::state_file::change(path, change)
    }
}

fn key(root: &Path) -> String {
    root.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_allows_are_loosening_entries() {
        assert_eq!(allow_entries(&json!("allow")), ["permission = allow"]);
        assert!(allow_entries(&json!("ask")).is_empty());
        assert_eq!(
            allow_entries(&json!({
                "edit": "allow",
                "read": "deny",
                "bash": {"*": "ask", "cargo test *": "allow", "rm *": "deny"}
            })),
            // In the file's order, which decides which rule wins.
            [
                "permission.edit = allow",
                r#"permission.bash["cargo test *"] = allow"#,
            ]
        );
    }

    #[test]
    fn trust_is_per_folder_and_exact_and_can_be_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::in_dir(Some(dir.path()));
        let loosening = Loosening {
            root: "/w/one".into(),
            files: Vec::new(),
            entries: vec!["permission = allow".into()],
            trusted: false,
        };
        assert!(!store.trusts(Path::new("/w/one"), "permission = allow"));
        store.trust(&loosening).unwrap();
        assert!(store.trusts(Path::new("/w/one"), "permission = allow"));
        assert!(!store.trusts(Path::new("/w/two"), "permission = allow"));
        assert!(!store.trusts(
            Path::new("/w/one"),
            "permission = allow\nsandbox.network = true"
        ));
        assert!(store.revoke(Path::new("/w/one")).unwrap());
        assert!(!store.trusts(Path::new("/w/one"), "permission = allow"));
        assert!(!store.revoke(Path::new("/w/one")).unwrap());
    }
}
