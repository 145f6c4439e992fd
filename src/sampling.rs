//! A sampling setting as configs and agents write it: a number, or
//! `"server"` for none sent, so the server's own setting applies.

use serde::{Deserialize, Serialize};

/// A sampling setting: a value to send, or `"server"`: send none, so the
/// server's own setting applies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Sampling {
    /// This value.
    Value(f64),
    /// Whatever the server does.
    Server(ServerWord),
}

/// The word `"server"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerWord {
    /// `"server"`.
    Server,
}

impl Sampling {
    /// The value to send, if any.
    pub fn value(self) -> Option<f64> {
        match self {
            Self::Value(value) => Some(value),
            Self::Server(_) => None,
        }
    }
}
