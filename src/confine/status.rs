//! What the kernel offers for confinement, and how commands will run, as
//! told to people.

use std::path::{Path, PathBuf};

use landlock::{ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr};
use serde::Serialize;

use super::{SandboxConfig, SandboxMode};

/// What the kernel offers, probed without confining the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Landlock file-system rules work.
    pub landlock: bool,
    /// Landlock's TCP rules work (ABI 4).
    pub landlock_network: bool,
}

impl Support {
    /// Probes by creating (not applying) rulesets.
    pub fn probe() -> Self {
        let creates = |ruleset: Result<Ruleset, landlock::RulesetError>| {
            ruleset.and_then(Ruleset::create).is_ok()
        };
        Self {
            landlock: creates(
                Ruleset::default()
                    .set_compatibility(CompatLevel::HardRequirement)
                    .handle_access(AccessFs::from_all(ABI::V1)),
            ),
            landlock_network: creates(
                Ruleset::default()
                    .set_compatibility(CompatLevel::HardRequirement)
                    .handle_access(AccessNet::from_all(ABI::V4)),
            ),
        }
    }
}

/// How shell commands run in a session, as told to people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Status {
    /// Confined by the kernel.
    Confined {
        /// The network is open (config).
        network: bool,
        /// Where commands may write.
        writable: Vec<PathBuf>,
    },
    /// The config turned confinement off.
    Off,
    /// The kernel cannot confine commands; each one asks.
    Unavailable {
        /// What is missing.
        reason: String,
    },
}

impl Status {
    /// How commands in `root` would run under `config` on this kernel.
    pub fn of(root: &Path, config: &SandboxConfig, home: Option<&str>) -> Self {
        if config.mode == SandboxMode::Off {
            return Self::Off;
        }
        if !Support::probe().landlock {
            return Self::Unavailable {
                reason: "this kernel has no Landlock".to_owned(),
            };
        }
        let mut writable = vec![root.to_path_buf()];
        writable.extend(
            config
                .writable
                .iter()
                .map(|dir| crate::paths::expand_home(dir, home)),
        );
        Self::Confined {
            network: config.network,
            writable,
        }
    }

    /// One line saying how a command will run.
    pub fn describe(&self) -> String {
        match self {
            Self::Confined { network, writable } => format!(
                "confined: writes only beneath {} and a private temp dir; {}",
                writable
                    .iter()
                    .map(|p| format!("`{}`", p.display()))
                    .collect::<Vec<_>>()
                    .join(", "),
                if *network {
                    "the network is open (config `sandbox.network`)"
                } else {
                    "no network"
                }
            ),
            Self::Off => {
                "UNCONFINED (config `\"sandbox\": \"off\"`): may write anywhere you can and reach the network".to_owned()
            }
            Self::Unavailable { reason } => format!(
                "UNCONFINED ({reason}): may write anywhere you can and reach the network"
            ),
        }
    }
}
