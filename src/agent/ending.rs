//! How a turn's final answers are judged: what the turn still owes
//! ([`Owed`]), whether a task that asked for a change made one and left
//! the files it names, and the report added to a final answer that does
//! not say what was done.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use super::finish::{Owed, Undone};
use super::intent;
use super::turn::AgentState;
use super::validate::Validation;
use crate::protocol::{EventMsg, SubmissionId};

/// Bytes of a named file searched for text the turn replaced elsewhere.
const MAX_SEARCHED: u64 = 1024 * 1024;

/// The judgement of a final answer.
pub(super) enum Judged {
    /// The task is done, for validation to check.
    Done,
    /// Tell the model this, and let it go on.
    Tell(String),
    /// It ended undone again (said to the user): the turn is incomplete.
    Undone,
}

/// What a prompt asks for, as far as its end is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asks {
    /// A change of files.
    Change,
    /// Something about the files it names: they are read (or searched)
    /// before it is answered.
    About,
    /// Anything else.
    Other,
}

/// What one turn's final answers are judged against.
pub(super) struct Ending {
    /// What the turn still owes, step by step.
    pub(super) owed: Owed,
    /// What the prompt asks for.
    asks: Asks,
    /// The prompt's start, for notes and the report's language.
    prompt: String,
    /// Steps that had changed files when the turn began.
    changing_at_start: u64,
    /// Files the prompt names that did not exist when the turn began: a
    /// change it asked for leaves them there (`write … to out.txt`).
    missing: Vec<String>,
    /// Files the prompt names that existed.
    named: Vec<String>,
    /// The model was told once what is undone; a second time ends the
    /// turn incomplete.
    told: bool,
    /// The model was pointed once at a named file its edit left alone
    /// (which counts as its one telling).
    nudged: bool,
}

impl AgentState {
    /// The judge of a turn that starts with `prompt`.
    pub(super) fn ending(&self, prompt: &str) -> Ending {
        let asks_change = intent::asks_for_change(prompt) && self.can_change();
        let root = self.sandbox.root();
        // A file attached with `@path` is in the prompt: read already.
        let (missing, named): (Vec<String>, Vec<String>) = intent::named_files(prompt)
            .into_iter()
            .filter(|name| !prompt.contains(&format!("<file path=\"{name}\"")))
            .partition(|name| !root.join(name).exists());
        let asks = if asks_change {
            Asks::Change
        } else if !named.is_empty() && !self.request.tools().is_empty() {
            Asks::About
        } else {
            Asks::Other
        };
        Ending {
            owed: Owed::default(),
            asks,
            prompt: prompt.chars().take(200).collect(),
            changing_at_start: self.changing_steps,
            missing,
            named,
            told: false,
            nudged: false,
        }
    }

    /// Judges `text`, a final answer.
    pub(super) fn judge(
        &mut self,
        id: SubmissionId,
        ending: &mut Ending,
        text: &str,
        validation: &Validation,
    ) -> Judged {
        let withheld = self.withheld_tools();
        // What the model was told to send alone held for one response.
        self.request.set_meant(Vec::new());
        // What the checkpoints saw; without them, a command that ran may
        // have changed files.
        let changed = if self.checkpoints.is_some() {
            self.changing_steps > ending.changing_at_start
        } else {
            validation.changed || validation.ran_command
        };
        let asked = ending.asks == Asks::Change && !ending.owed.excused;
        let root = self.sandbox.root().to_owned();
        let undone = ending
            .owed
            .undone(text, self.request.tools(), &withheld)
            .or_else(|| (asked && !changed).then(|| super::finish::nothing_changed(&ending.prompt)))
            .or_else(|| {
                let absent: Vec<&String> = ending
                    .missing
                    .iter()
                    .filter(|name| !root.join(name).exists())
                    .collect();
                (asked && !absent.is_empty()).then(|| still_missing(&absent))
            })
            .or_else(|| {
                let unread: Vec<&String> = ending
                    .named
                    .iter()
                    .filter(|name| !ending.owed.touched(name))
                    .collect();
                (ending.asks == Asks::About && !unread.is_empty()).then(|| answered_unread(&unread))
            })
            .or_else(|| {
                // Pointed at once, the file still holds what was replaced.
                (asked && ending.nudged)
                    .then(|| left_alone(&root, &ending.named, &ending.owed))
                    .flatten()
                    .map(|_| Undone {
                        note: String::new(),
                        what: "a file the task names still holding what it replaced elsewhere",
                    })
            });
        if let Some(undone) = undone {
            let what = undone.what;
            // Told once what went wrong, the model tries again; twice, the
            // turn says it did not do what it said.
            if ending.told {
                self.warn(
                    id,
                    &format!("The task is not done: the model ended again with {what}"),
                );
                return Judged::Undone;
            }
            ending.told = true;
            // A call among words, told to be sent alone: written again,
            // it is meant, whatever words come with it.
            if let Some(call) = crate::client::inline::example_call(text, self.request.tools()) {
                self.request.set_meant(vec![call]);
            }
            self.warn(
                id,
                &format!("The model ended with {what}; offcode told it what is wrong and lets it try again"),
            );
            return Judged::Tell(undone.note);
        }
        if asked
            && !ending.nudged
            && let Some(note) = left_alone(&root, &ending.named, &ending.owed)
        {
            // One telling a turn: ending so again, it is undone.
            (ending.nudged, ending.told) = (true, true);
            self.warn(
                id,
                "The model left a file the task names with text it replaced elsewhere; offcode pointed it out",
            );
            return Judged::Tell(note);
        }
        Judged::Done
    }

    /// A final answer that does not say what the turn did, with offcode's
    /// report of it after, shown as the answer's end.
    pub(super) fn reported(&self, id: SubmissionId, text: String, ending: &Ending) -> String {
        if ending.asks != Asks::Change {
            return text;
        }
        // Paths as the workspace has them, not as the model wrote them.
        let root = format!("{}/", self.sandbox.root().display());
        let done: Vec<intent::Done> = ending
            .owed
            .done
            .iter()
            .map(|done| match done {
                intent::Done::Changed(path) => {
                    intent::Done::Changed(path.strip_prefix(&root).unwrap_or(path).to_owned())
                }
                ran @ intent::Done::Ran(_) => ran.clone(),
            })
            .collect();
        let Some(report) = intent::report(&text, &done, &ending.prompt) else {
            return text;
        };
        let delta = if text.trim().is_empty() {
            report
        } else {
            format!("\n\n{report}")
        };
        self.emit(
            id,
            EventMsg::AssistantDelta {
                delta: delta.clone(),
            },
        );
        self.emit(
            id,
            EventMsg::AssistantMessage(crate::protocol::AssistantMessageEvent {
                text: delta.clone(),
                tool_calls: 0,
            }),
        );
        text.trim_end().to_owned() + &delta
    }
}

/// A question about files answered without reading them.
fn answered_unread(unread: &[&String]) -> Undone {
    let names: Vec<String> = unread.iter().map(|n| format!("`{n}`")).collect();
    Undone {
        note: format!(
            "You answered without reading {}, which the question is about, so the answer may be wrong. Read it with a tool call now, then answer from what it says.",
            names.join(", ")
        ),
        what: "an answer about a file it never read",
    }
}

/// Files a change task named, still not there.
fn still_missing(absent: &[&String]) -> Undone {
    let names: Vec<String> = absent.iter().map(|n| format!("`{n}`")).collect();
    Undone {
        note: format!(
            "The task is not done: it names {}, which does not exist yet. Make it now: reply with only the tool call (write, or bash) that does it. If the task cannot be done, say why.",
            names.join(", ")
        ),
        what: "a file the task names still missing",
    }
}

/// A note when a file the task names, which the turn did not change,
/// still holds text an edit of the turn replaced in another file: a
/// rename across files done in one of them.
fn left_alone(root: &std::path::Path, named: &[String], owed: &Owed) -> Option<String> {
    for name in named {
        if owed.changed_path(name) {
            continue;
        }
        let path = root.join(name);
        let small = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_SEARCHED);
        let Some(content) = small.then(|| std::fs::read_to_string(&path).ok()).flatten() else {
            continue;
        };
        if let Some(edit) = owed
            .replaced
            .iter()
            .find(|r| r.old.trim().chars().count() >= 3 && content.contains(&r.old))
        {
            // The same edit there, for the model to send or not.
            let call = serde_json::json!({"name": "edit", "arguments": {
                "path": name,
                "old_string": edit.old,
                "new_string": edit.new,
                "replace_all": content.matches(&edit.old).count() > 1,
            }});
            return Some(format!(
                "`{name}`, which the task names, still has `{}`, which you replaced in `{}`. If the task asks for the change there too, make it now, for example with this call alone in your message:\n{call}\nIf not, say so.",
                edit.old.trim(),
                edit.path
            ));
        }
    }
    None
}
