//! How a turn's final answers are judged: what the turn still owes
//! ([`Owed`]), whether a task that asked for a change made one and left
//! the files it names, and the report added to a final answer that does
//! not say what was done.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use super::finish::{Owed, Undone};
use super::intent;
use super::leftover::{left_alone, same_edit, still_holding};
use super::state::AgentState;
use super::validate::Validation;
use crate::protocol::{EventMsg, SubmissionId, TurnStatus};

/// Answers set aside in a turn before the model is told what is wrong
/// (compact profile only).
const AGAIN: u32 = 2;

/// The judgement of a final answer.
pub(super) enum Judged {
    /// The task is done, for validation to check.
    Done,
    /// Tell the model this, and let it go on.
    Tell(String),
    /// Set the answer aside and ask the same again (a small model follows
    /// no note about its last answer, but a second sample may be right):
    /// what was wrong with it.
    Again(String),
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
    /// Answers set aside, each asked again.
    again: u32,
    /// The prompt says to use a command, and `bash` is offered.
    command: bool,
    /// Code names the prompt asks for that no file it names held when the
    /// turn began (compact profile).
    new_names: Vec<String>,
}

impl AgentState {
    /// The judge of a turn that starts with `prompt`.
    pub(super) fn ending(&mut self, prompt: &str) -> Ending {
        self.changed_span = None;
        let asks_change = intent::asks_for_change(prompt) && self.can_change();
        let root = self.sandbox.root();
        // A file attached with `@path` is in the prompt: read already. One
        // the policy keeps from the model is not owed a read.
        let (missing, named): (Vec<String>, Vec<String>) = intent::named_files(prompt)
            .into_iter()
            .filter(|name| !prompt.contains(&format!("<file path=\"{name}\"")))
            .filter(|name| {
                !self
                    .permits
                    .denies("read", &serde_json::json!({ "path": name }))
            })
            .partition(|name| !root.join(name).exists());
        let asks = if asks_change {
            Asks::Change
        } else if !named.is_empty() && !self.request.tools().is_empty() {
            Asks::About
        } else {
            Asks::Other
        };
        let command = super::grounded::asks_for_command(prompt)
            && self
                .request
                .tools()
                .iter()
                .any(|tool| tool.function.name == "bash");
        let new_names = if asks == Asks::Change && self.compact() {
            super::grounded::new_names(root, prompt, &named)
        } else {
            Vec::new()
        };
        Ending {
            command,
            new_names,
            owed: Owed::default(),
            asks,
            prompt: prompt.chars().take(200).collect(),
            changing_at_start: self.changing_steps,
            missing,
            named,
            told: false,
            nudged: false,
            again: 0,
        }
    }

    /// Whether a refusal stopped the work: a call that would change files
    /// or run a command was refused in the turn, and no file changed and
    /// no command ran.
    pub(super) fn refused_work(&self, ending: &Ending, validation: &Validation) -> bool {
        // The checkpoints are read only for a turn with a refusal.
        ending.owed.refused && !validation.ran_command && !self.changed(ending, validation)
    }

    /// Whether a file changed in the turn, as the checkpoints saw it;
    /// without them, a command that ran may have changed files.
    fn changed(&self, ending: &Ending, validation: &Validation) -> bool {
        if self.checkpoints.is_some() {
            self.changing_steps > ending.changing_at_start && !self.put_back()
        } else {
            validation.changed || validation.ran_command
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
        let changed = self.changed(ending, validation);
        let asked = ending.asks == Asks::Change && !ending.owed.excused;
        let root = self.sandbox.root().to_owned();
        let undone = self.unfinished(ending, text, validation, changed, &withheld);
        if let Some(undone) = undone {
            let what = undone.what;
            if let Some(again) = self.again(id, ending, what) {
                return again;
            }
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
            let what = "a file the task names still holding what it replaced elsewhere";
            if let Some(again) = self.again(id, ending, what) {
                return again;
            }
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

    /// What a final answer `text` leaves undone, if anything: what the
    /// turn owes, what the task asked and the files show. `changed`: a
    /// file changed in the turn (or its change was there already).
    fn unfinished(
        &self,
        ending: &Ending,
        text: &str,
        validation: &Validation,
        changed: bool,
        withheld: &[String],
    ) -> Option<Undone> {
        let asked = ending.asks == Asks::Change && !ending.owed.excused;
        let root = self.sandbox.root();
        ending
            .owed
            .undone(text, self.request.tools(), withheld)
            .or_else(|| {
                (self.compact() && self.echoes(text)).then(|| Undone {
                    note: format!(
                        "Your answer only repeats text you were given, so it answers nothing. Answer the task now: {}",
                        ending.prompt
                    ),
                    what: "an answer that only repeats the task or offcode's words",
                })
            })
            .or_else(|| {
                // "3" written for 6 lines, and no command run to count them.
                // `grep` counts too: its count is a command's, made by offcode.
                let counted = validation.ran_command || ending.owed.worked(&["grep", "glob"]);
                (ending.command && !counted && !ending.owed.excused).then(|| Undone {
                    note: "The task says to use a command, and none has run. Run it now with `bash`, and use what it prints.".to_owned(),
                    what: "no command run, though the task asks for one",
                })
            })
            .or_else(|| (asked && !changed).then(|| super::finish::nothing_changed(&ending.prompt)))
            .or_else(|| {
                // "sub has been added", and no file has `sub`. Each file
                // read once, and only when the task asked for a change.
                let absent = (asked && !ending.new_names.is_empty()).then(|| {
                    let changed = ending.owed.done.iter().filter_map(|done| match done {
                        intent::Done::Changed(path) => Some(path),
                        intent::Done::Ran(_) => None,
                    });
                    let texts: Vec<String> = ending
                        .named
                        .iter()
                        .chain(&ending.missing)
                        .chain(changed)
                        .filter_map(|file| std::fs::read_to_string(root.join(file)).ok())
                        .collect();
                    ending
                        .new_names
                        .iter()
                        .find(|name| !texts.iter().any(|text| text.contains(name.as_str())))
                });
                absent.flatten().map(|name| Undone {
                    note: format!(
                        "The task asks for `{name}`, and no file has it yet, so the change it asks for is not made. Make it now: {}",
                        ending.prompt
                    ),
                    what: "a name the task asks for in no file",
                })
            })
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
                // A question answered with nothing (the 1.5B model, its
                // edits of the file it was asked about refused).
                // Not when files changed: the work is its own answer.
                (ending.asks != Asks::Change && !changed && text.trim().is_empty()).then(|| {
                    Undone {
                        note: format!(
                            "You gave no answer. Answer the task in words: {}",
                            ending.prompt
                        ),
                        what: "no answer",
                    }
                })
            })
            .or_else(|| {
                // A small model's answer that says nothing the file says
                // about what was asked ("the port number from it").
                let about = ending.asks == Asks::About && self.compact();
                about
                    .then(|| super::grounded::ungrounded(root, &ending.prompt, &ending.named, text))
                    .flatten()
                    .map(|(name, number, line)| Undone {
                        note: format!(
                            "Your answer does not say what `{name}` says. Its line {number} reads: {line}\nAnswer the question from it: {}",
                            ending.prompt
                        ),
                        what: "an answer that does not say what the file says",
                    })
            })
            .or_else(|| {
                // Pointed at once, the file still holds what was replaced.
                (asked && ending.nudged)
                    .then(|| left_alone(root, &ending.named, &ending.owed))
                    .flatten()
                    .map(|_| Undone {
                        note: String::new(),
                        what: "a file the task names still holding what it replaced elsewhere",
                    })
            })
    }

    /// Whether the turn's changes left every file as it was before them
    /// (the checkpoints' content, not their times): the 0.5B model made
    /// its edit, then edited the new text back to the old.
    fn put_back(&self) -> bool {
        let (Some(shared), Some((first, last))) = (&self.checkpoints, &self.changed_span) else {
            return false;
        };
        let same = shared.with(|checkpoints| {
            let load = |id: &str| {
                let bytes = checkpoints.store().get(id).ok()?;
                crate::checkpoint::Manifest::parse(&bytes)
            };
            match (load(first), load(last)) {
                (Some(before), Some(after)) => {
                    crate::checkpoint::manifest::diff(&before, &after).is_empty()
                }
                _ => false,
            }
        });
        matches!(same, Ok((true, _)))
    }

    /// Whether a final answer only repeats what the model was given: the
    /// system prompt, the task, offcode's notes.
    fn echoes(&self, answer: &str) -> bool {
        let system = self.request.system();
        let mut given = vec![system.as_ref()];
        given.extend(
            self.session
                .messages
                .iter()
                .filter_map(|message| match message {
                    crate::session::Message::User { content } => Some(content.as_str()),
                    _ => None,
                }),
        );
        super::grounded::echoed(answer, &given)
    }

    /// What a step's calls tell validation and the turn's end, and the
    /// progress note after them.
    pub(super) fn after_calls(
        &mut self,
        id: SubmissionId,
        ending: &mut Ending,
        validation: &mut Validation,
        calls: super::finish::Calls,
    ) -> Result<(), TurnStatus> {
        validation.changed |= calls.changed;
        validation.ran_command |= calls.ran_command;
        // A change worked, and nothing waits or failed.
        let clean = calls.changed
            && calls.deferred.is_empty()
            && calls.failed.is_empty()
            && calls.held_back.is_empty();
        ending.owed.after_step(calls);
        match self.progress(ending, clean) {
            Some(note) => self.tell_model(id, &note),
            None => Ok(()),
        }
    }

    /// A note after a step of a compact profile's change task in which a
    /// change worked: what the task still lacks that offcode can see (a
    /// file it names not there yet, a named file still holding what was
    /// replaced elsewhere), or else that it may be done. A small model
    /// cannot tell when a task is done: left alone, it goes on writing
    /// over the files it just fixed.
    // In English whatever the prompt's language: measured so, on Chinese
    // tasks too (15 of 15 samples did the right next thing).
    pub(super) fn progress(&self, ending: &Ending, clean: bool) -> Option<String> {
        if !clean || ending.asks != Asks::Change || !self.compact() {
            return None;
        }
        if self.put_back() {
            return Some(
                "The files are back as they were before this task: nothing is changed now."
                    .to_owned(),
            );
        }
        let root = self.sandbox.root();
        if let Some(name) = ending.missing.iter().find(|name| !root.join(name).exists()) {
            return Some(format!("`{name}` does not exist yet."));
        }
        if let Some((name, edit, times)) = still_holding(root, &ending.named, &ending.owed) {
            // With the call: a small model sends the same edit without
            // `replace_all`, and it fails on the second place.
            let old = edit.old.trim();
            let call = same_edit(name, &edit, times);
            return Some(if times == 1 {
                format!("`{name}` still has `{old}`:\n{call}")
            } else {
                format!("`{name}` still has `{old}` ({times} times):\n{call}")
            });
        }
        Some("If the task is done now, reply in one sentence, with no tool call.".to_owned())
    }

    /// `Again` while a compact profile's turn may still set answers aside,
    /// before anything was told.
    fn again(&mut self, id: SubmissionId, ending: &mut Ending, what: &str) -> Option<Judged> {
        if ending.told || ending.again >= AGAIN || !self.compact() {
            return None;
        }
        ending.again += 1;
        self.warn(
            id,
            &format!("The model ended with {what}; offcode set the answer aside and asks again"),
        );
        Some(Judged::Again(what.to_owned()))
    }

    /// Takes the last reply back out of the conversation: the session
    /// goes on from the entry before it (the reply stays in the file, on
    /// a branch of its own), and the next request is sampled hotter.
    pub(super) fn set_aside(&mut self, id: SubmissionId, why: String) -> Result<(), TurnStatus> {
        let parent = self.reply_parent.take();
        self.session.rewind_to(parent.as_deref()).map_err(|error| {
            self.emit(
                id,
                EventMsg::Error {
                    message: crate::client::error_chain(&error),
                    kind: crate::protocol::ErrorKind::Session,
                },
            );
            TurnStatus::Failed
        })?;
        // On file at once: a run killed before its next entry resumes
        // without the answer.
        self.record(id, crate::session::EntryBody::SetAside { why })?;
        self.request.ask_again();
        Ok(())
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
