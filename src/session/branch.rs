//! The active branch of a session: the entries from the last one back to
//! the first through `parent_id`, and what they add up to.

use super::{AllowedRule, Message};
use super::{Compaction, Entry, EntryBody, Meta};

/// The entries of the branch that ends at `last` (none: the file's last
/// entry), first to last.
pub fn branch<'a>(entries: &'a [Entry], last: Option<&str>) -> Vec<&'a Entry> {
    let by_id: std::collections::HashMap<&str, &Entry> =
        entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut branch = Vec::new();
    let mut cursor = match last {
        Some(id) => by_id.get(id).copied(),
        None => entries.last(),
    };
    while let Some(entry) = cursor {
        branch.push(entry);
        if branch.len() > entries.len() {
            break; // a cycle in a hand-edited file
        }
        cursor = entry
            .parent_id
            .as_deref()
            .and_then(|p| by_id.get(p).copied());
    }
    branch.reverse();
    branch
}

/// What the active branch of a session adds up to.
pub(super) struct Rebuilt {
    pub(super) messages: Vec<Message>,
    pub(super) model: String,
    pub(super) agent: String,
    pub(super) allowed: Vec<AllowedRule>,
    pub(super) todos: Vec<crate::protocol::TodoItem>,
    pub(super) compaction: Option<Compaction>,
}

/// What the branch ending at entry `last` (none: the file's last entry)
/// adds up to.
pub(super) fn rebuild(entries: &[Entry], meta: &Meta, last: Option<&str>) -> Rebuilt {
    let branch = branch(entries, last);
    let mut rebuilt = Rebuilt {
        messages: Vec::new(),
        model: meta.model.clone(),
        agent: meta.agent.clone(),
        allowed: Vec::new(),
        todos: Vec::new(),
        compaction: None,
    };
    for entry in branch {
        match &entry.body {
            EntryBody::Message { message } => rebuilt.messages.push(message.clone()),
            EntryBody::ModelChange { model: next } => rebuilt.model.clone_from(next),
            EntryBody::AgentChange { agent } => rebuilt.agent.clone_from(agent),
            EntryBody::Permission { allowed: more, .. } => {
                rebuilt.allowed.extend(more.iter().cloned());
            }
            EntryBody::Todo { items } => rebuilt.todos.clone_from(items),
            EntryBody::Compaction(compaction) => rebuilt.compaction = Some(compaction.clone()),
            _ => {}
        }
    }
    rebuilt
}
