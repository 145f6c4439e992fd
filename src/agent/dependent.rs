//! Calls the model wrote as text all at once may guess what an earlier
//! one returns: which of them wait for the next step, with the results
//! seen.

use serde_json::Value;

use crate::session::ToolCall;
use crate::tools::{Effect, parse_argument_text};

/// Among calls the model wrote as text all at once, the first that may
/// depend on an earlier one's result, which the model could not have seen:
/// any call after a command, and a call that changes files after one that
/// read them (a write of what a read was to return). A read the model
/// already made, with its result in front of it (`seen`), hides nothing:
/// small models start a message by writing their last call again.
pub(super) fn first_dependent(
    calls: &[ToolCall],
    seen: &[(String, Value)],
    effect_of: impl Fn(&str) -> Effect,
) -> Option<usize> {
    let (mut read, mut ran) = (false, false);
    for (index, call) in calls.iter().enumerate() {
        let effect = effect_of(&call.name);
        if ran || (read && effect == Effect::ChangesFiles) {
            return Some(index);
        }
        match effect {
            Effect::RunsCommands => ran = true,
            Effect::ReadsFiles => read |= !was_seen(call, seen),
            Effect::ChangesFiles | Effect::None => {}
        }
    }
    None
}

/// Whether `call` is one of `seen` (the same tool and arguments).
fn was_seen(call: &ToolCall, seen: &[(String, Value)]) -> bool {
    parse_argument_text(&call.arguments).is_ok_and(|arguments| {
        seen.iter()
            .any(|(name, a)| *name == call.name && *a == arguments)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(names: &[&str]) -> Vec<ToolCall> {
        names
            .iter()
            .map(|name| ToolCall {
                id: String::new(),
                name: (*name).to_owned(),
                arguments: "{}".to_owned(),
            })
            .collect()
    }

    #[test]
    fn calls_written_before_an_earlier_result_was_seen_wait() {
        let first = |names: &[&str]| first_dependent(&calls(names), &[], crate::tools::effect);
        assert_eq!(first(&["read", "edit", "write"]), Some(1));
        assert_eq!(first(&["grep", "read", "patch"]), Some(2));
        assert_eq!(first(&["bash", "read"]), Some(1));
        assert_eq!(first(&["write", "bash", "todowrite"]), Some(2));
        // Independent reads, or writes that read nothing first, all run.
        assert_eq!(first(&["read", "read", "list", "glob"]), None);
        assert_eq!(first(&["todowrite", "write", "edit"]), None);
        assert_eq!(first(&["write", "bash"]), None);
    }

    #[test]
    fn a_read_already_seen_hides_no_result() {
        let mut batch = calls(&["read", "write"]);
        batch[0].arguments = "{\"path\": \"hello.txt\"}".to_owned();
        let seen = vec![("read".to_owned(), serde_json::json!({"path": "hello.txt"}))];
        assert_eq!(first_dependent(&batch, &seen, crate::tools::effect), None);
        // Another file's read still does.
        let other = vec![("read".to_owned(), serde_json::json!({"path": "other.txt"}))];
        assert_eq!(
            first_dependent(&batch, &other, crate::tools::effect),
            Some(1)
        );
    }
}
