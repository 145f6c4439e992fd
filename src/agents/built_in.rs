//! The built-in agents (`build`, `plan`, `general`, `explore`, and the
//! hidden `compaction` and `title`) and the sampling they send.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{COMPACTION, Mode, Origin, Profile, TITLE};

/// Permissions of an agent that only reads: no edits, no subagents, and
/// of bash only the lines the gate judges to only read (no list of its
/// own: `git status` in a repository whose settings run a program is not
/// one of them).
pub(super) fn read_only_permission() -> Value {
    json!({
        "edit": "deny",
        "task": "deny",
        "bash": { "*": "deny" },
        crate::policy::READ_ONLY_BASH: "allow",
    })
}

/// The sampling every built-in agent sends when neither it nor the config
/// says any (temperature, top-p). Chosen by the real-model tier
/// (`release/real-model.sh`, see `docs/models.md`): a small model at its
/// server's own sampling (llama.cpp: 0.8 and 0.95) wanders off its task.
pub const DEFAULT_SAMPLING: (Option<f64>, Option<f64>) = (Some(0.2), Some(0.9));

pub(super) fn built_in() -> Vec<Profile> {
    let read_only_tools: BTreeMap<String, bool> = ["write", "edit", "patch"]
        .into_iter()
        .map(|t| (t.to_owned(), false))
        .collect();
    let profile = |name: &str, mode: Mode, description: &str, prompt: &str| Profile {
        description: description.to_owned(),
        prompt: prompt.to_owned(),
        default_sampling: DEFAULT_SAMPLING,
        ..Profile::blank(name, mode, Origin::BuiltIn)
    };
    vec![
        profile(
            "build",
            Mode::Primary,
            "The default agent: reads, changes files and runs commands to do the task.",
            "",
        ),
        Profile {
            tools: read_only_tools.clone(),
            permission: Some(read_only_permission()),
            ..profile(
                "plan",
                Mode::Primary,
                "Plans without changing anything: reads and searches, runs only plain read-only commands, and says what it would change.",
                "You are in plan mode. You cannot change files and may run only plain read-only commands. Study what the task needs, then answer with a plan: which files you would change, how, and why, in order. Do not claim to have changed anything.",
            )
        },
        profile(
            "general",
            Mode::Subagent,
            "Changes files, runs commands.",
            "You are a subagent working on one part of a larger task. Do it, then answer with what you did and found, briefly, for the agent that asked.",
        ),
        profile(
            COMPACTION,
            Mode::Hidden,
            "Writes the summary that replaces older turns when the context is compacted.",
            "You summarise a coding session so that it can go on with less context. Write, in the language of the conversation, short sections: Objective (what the user wants now), Files touched (paths and what changed), Decisions, Open risks, Next steps. Keep paths, names, commands and numbers exact. Output only the summary.",
        ),
        profile(
            TITLE,
            Mode::Hidden,
            "Names an interactive session after its first request, for `/sessions` and `offcode sessions`.",
            "Write a title for the coding task below: at most eight words, in the language of the task, naming what is to be done. Reply with the title alone: no quotes, no punctuation at the end, no explanation.",
        ),
        Profile {
            tools: read_only_tools,
            permission: Some(read_only_permission()),
            ..profile(
                "explore",
                Mode::Subagent,
                "Reads and searches; changes nothing.",
                "You are a subagent that explores code without changing it. Search and read what the question needs, then answer with what you found: paths, line numbers and the facts asked for.",
            )
        },
    ]
}
