//! The process environment as configuration input, and the XDG locations
//! derived from it.
//!
//! Loading never reads `std::env` directly: `main` captures an [`Environment`]
//! once and tests build their own, so no test mutates the process environment.

use std::collections::HashMap;
use std::path::PathBuf;

/// Environment variables and the working directory that configuration reads.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// Variables by name.
    pub vars: HashMap<String, String>,
    /// The startup directory (the workspace root).
    pub cwd: PathBuf,
}

impl Environment {
    /// Captures the real process environment. Without `HOME` (a service
    /// account's unit, `env -i`), the home is the password database's
    /// (`getpwuid_r`: `/etc/passwd`, and NSS with glibc).
    pub fn capture() -> std::io::Result<Self> {
        let mut vars: HashMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        if vars.get("HOME").is_none_or(String::is_empty)
            && let Some(home) = std::env::home_dir()
                .filter(|h| h.is_absolute())
                .and_then(|h| h.into_os_string().into_string().ok())
        {
            vars.insert("HOME".to_owned(), home);
        }
        Ok(Self {
            vars,
            cwd: std::env::current_dir()?,
        })
    }

    /// A variable's value; empty values count as unset.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }

    /// `$XDG_<kind>_HOME` if absolute, else `$HOME/<fallback>`, plus `offcode`.
    fn xdg(&self, variable: &str, fallback: &str) -> Option<PathBuf> {
        let base = self
            .var(variable)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| self.home().map(|h| h.join(fallback)))?;
        Some(base.join("offcode"))
    }

    /// `~/.config/offcode`: global config, rules and skills.
    pub fn config_dir(&self) -> Option<PathBuf> {
        self.xdg("XDG_CONFIG_HOME", ".config")
    }

    /// `~/.local/share/offcode` (or `$OFFCODE_DATA_DIR`): sessions, history.
    pub fn data_dir(&self) -> Option<PathBuf> {
        self.var("OFFCODE_DATA_DIR")
            .map(PathBuf::from)
            .or_else(|| self.xdg("XDG_DATA_HOME", ".local/share"))
    }

    /// Everything of offcode's that decides what it does or keeps what it
    /// did: the config, data, state and cache directories and a config
    /// file named by `$OFFCODE_CONFIG`. Commands may change none of them.
    pub fn own_files(&self) -> Vec<PathBuf> {
        let state = self.state_dir();
        [
            self.config_dir(),
            self.data_dir(),
            state,
            self.cache_dir(),
            self.var("OFFCODE_CONFIG").map(PathBuf::from),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// `~/.local/state/offcode` (or `$XDG_STATE_HOME/offcode`): the log.
    pub fn state_dir(&self) -> Option<PathBuf> {
        self.var("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| self.home().map(|h| h.join(".local/state")))
            .map(|base| base.join("offcode"))
    }

    /// `~/.cache/offcode` (or `$OFFCODE_CACHE_DIR`): disposable caches.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        self.var("OFFCODE_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| self.xdg("XDG_CACHE_HOME", ".cache"))
    }
}

/// A variable of offcode's own environment, for what reads it after
/// start-up (a provider's `env` key when the model is switched).
pub fn process_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment {
            vars: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: PathBuf::from("/work"),
        }
    }

    #[test]
    fn xdg_variables_win_over_home_and_relative_ones_are_ignored() {
        let e = env(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/x"),
            ("XDG_DATA_HOME", "rel"),
        ]);
        assert_eq!(e.config_dir(), Some(PathBuf::from("/x/offcode")));
        assert_eq!(e.data_dir(), Some(PathBuf::from("/h/.local/share/offcode")));
        assert_eq!(e.cache_dir(), Some(PathBuf::from("/h/.cache/offcode")));
    }

    #[test]
    fn offcode_overrides_win_over_xdg() {
        let e = env(&[
            ("HOME", "/h"),
            ("OFFCODE_DATA_DIR", "/d"),
            ("OFFCODE_CACHE_DIR", "/c"),
            ("XDG_CACHE_HOME", "/x"),
        ]);
        assert_eq!(e.data_dir(), Some(PathBuf::from("/d")));
        assert_eq!(e.cache_dir(), Some(PathBuf::from("/c")));
    }

    #[test]
    fn no_home_means_no_dirs() {
        assert_eq!(env(&[]).config_dir(), None);
    }
}
