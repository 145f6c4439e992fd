//! Which tool calls need a human's yes.
//!
//! This first rule set is fixed: reading and searching run freely; tools
//! that change files or run commands (`write`, `edit`, `patch`, `bash`) ask.
//! The permission engine and the dangerous-command gate (issue 4) replace it
//! with configurable, layered rules.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// The outcome of checking a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user; the text names the rule.
    Ask { rule: String },
}

/// Decides whether `tool` may run without asking.
pub fn decide(tool: &str) -> Decision {
    match tool {
        "write" | "edit" | "patch" | "bash" => Decision::Ask {
            rule: format!("`{tool}` asks for approval by default"),
        },
        _ => Decision::Allow,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_run_and_changes_ask() {
        for tool in ["read", "list", "grep", "glob"] {
            assert_eq!(decide(tool), Decision::Allow, "{tool}");
        }
        assert!(matches!(decide("edit"), Decision::Ask { .. }));
        assert!(matches!(decide("patch"), Decision::Ask { .. }));
        assert!(matches!(decide("write"), Decision::Ask { .. }));
        assert!(matches!(decide("bash"), Decision::Ask { .. }));
    }
}
