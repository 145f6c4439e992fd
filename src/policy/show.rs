//! The effective policy as `offcode policy show` prints it: every rule
//! in the order it is laid, with its source and layer, and what the files
//! add to the gate.

use serde::Serialize;
use serde_json::Value;

use super::{Action, AgentRules, ExtraFile, Policy, Rule, Source};

/// One rule as `offcode policy show` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShownRule {
    /// The permission key.
    pub permission: String,
    /// The pattern.
    pub pattern: String,
    /// What it says.
    pub action: Action,
    /// Where it was written.
    pub source: String,
    /// Its key in that file.
    pub key: String,
    /// `built_in`, `config`, `untrusted_project` (applies only where
    /// stricter), `managed` (applied last; its questions need a person) or
    /// `agent`.
    pub layer: &'static str,
}

impl ShownRule {
    fn of(rule: &Rule, layer: &'static str) -> Self {
        Self {
            permission: rule.permission.clone(),
            pattern: rule.pattern.clone(),
            action: rule.action,
            source: rule.source.to_string(),
            key: rule.key.clone(),
            layer,
        }
    }
}

impl AgentRules {
    /// Its rules as `offcode policy show` lists them.
    pub fn shown(&self) -> Vec<ShownRule> {
        self.rules
            .iter()
            .map(|r| ShownRule::of(r, "agent"))
            .chain(
                self.only_tighten
                    .iter()
                    .map(|r| ShownRule::of(r, "untrusted_project")),
            )
            .collect()
    }
}

impl Policy {
    /// Every rule, in the order they are laid: the built-in defaults and
    /// the config files (the last match wins), the untrusted project's
    /// (only where stricter), then the managed files'.
    pub fn shown(&self) -> Vec<ShownRule> {
        let laid = self.rules.iter().map(|rule| {
            let layer = if rule.source == Source::BuiltIn {
                "built_in"
            } else {
                "config"
            };
            ShownRule::of(rule, layer)
        });
        laid.chain(
            self.untrusted
                .iter()
                .map(|r| ShownRule::of(r, "untrusted_project")),
        )
        .chain(self.managed.iter().map(|r| ShownRule::of(r, "managed")))
        .collect()
    }
}

/// What the config and managed files add to the gate, as (where, what):
/// dangerous patterns and rules, and understood programs.
pub(super) fn additions(
    extra: &[(String, Vec<ExtraFile>)],
    commands: &[(String, Value)],
) -> Vec<(String, String)> {
    let mut additions = Vec::new();
    for (origin, entries) in extra {
        for entry in entries {
            let what = match entry {
                ExtraFile::Pattern(pattern) => format!("dangerous: `{pattern}`"),
                ExtraFile::Rule(rule) => format!("dangerous: `{}` (a rule)", rule.command),
            };
            additions.push((origin.clone(), what));
        }
    }
    for (origin, table) in commands {
        let names: Vec<&str> = table
            .as_object()
            .map(|programs| programs.keys().map(String::as_str).collect())
            .unwrap_or_default();
        additions.push((
            origin.clone(),
            format!("understood programs: {}", names.join(", ")),
        ));
    }
    additions
}
