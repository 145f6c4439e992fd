//! One permission rule: what it says ([`Action`]), what it matches, and
//! where it was written ([`Source`]), which is how a decision knows its
//! provenance without reading text.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a rule says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Run without asking.
    Allow,
    /// Ask a person.
    Ask,
    /// Refuse.
    Deny,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        })
    }
}

impl Action {
    /// `allow`, `ask` or `deny`.
    pub(super) fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "ask" => Some(Self::Ask),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// One `permission` rule and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The permission key (`bash`, `edit`, `mymcp_*`, `*`).
    pub permission: String,
    /// The pattern the call's subject must match.
    pub pattern: String,
    /// What the rule says.
    pub action: Action,
    /// Where it was written.
    pub source: Source,
    /// The key in that file (`permission.bash["git *"]`), for messages.
    pub key: String,
}

/// Where a rule was written; the decision's provenance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in defaults, `policy/default.jsonc`.
    BuiltIn,
    /// A config file.
    Config(PathBuf),
    /// A managed policy file: it only tightens, and its questions need a
    /// person.
    Managed(PathBuf),
    /// An agent profile: its name and where it was defined.
    Agent {
        /// The agent.
        name: String,
        /// Where it was defined (`built in`, a file).
        origin: String,
    },
    /// The user allowed it for this session.
    Session,
    /// No rule matched; the fallback asks.
    Unmatched,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("built-in policy/default.jsonc"),
            Self::Config(path) => write!(f, "{}", path.display()),
            Self::Managed(path) => write!(f, "managed {}", path.display()),
            Self::Agent { name, origin } => write!(f, "agent `{name}` ({origin})"),
            Self::Session => f.write_str("allowed for this session"),
            Self::Unmatched => f.write_str("no rule matched"),
        }
    }
}

impl Rule {
    /// A rule the user allowed for this session.
    pub fn for_session(permission: impl Into<String>, pattern: impl Into<String>) -> Self {
        Self {
            permission: permission.into(),
            pattern: pattern.into(),
            action: Action::Allow,
            source: Source::Session,
            key: String::new(),
        }
    }

    /// Where it was written, for messages: the file and the key.
    pub fn origin(&self) -> String {
        if self.key.is_empty() {
            self.source.to_string()
        } else {
            format!("{} {}", self.source, self.key)
        }
    }

    /// The rule as a person reads it: ``bash `git status *` ``, or
    /// `every edit call` for a bare `*`.
    pub fn describe(&self) -> String {
        if self.pattern == "*" {
            format!("every {} call", self.permission)
        } else {
            format!("{} `{}`", self.permission, self.pattern)
        }
    }
}
