//! Whether a final answer ends the task, or leaves undone what the model
//! set out to do: small local models stop half-way and still sound done.
//! What a turn owes is kept step by step ([`Owed`]); a final answer that
//! leaves something owed gets one note saying what, and a second such
//! ending makes the turn incomplete.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use crate::client::inline::unrun_call_as;
use crate::client::wire::ToolSpec;
use crate::tools::Effect;

/// What one step's calls did.
#[derive(Debug, Default)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts of one step, each read on its own"
)]
pub(super) struct Calls {
    /// Calls that ran and did not fail (refusals included: the user
    /// knows); no text.
    pub(super) ran: Vec<Noted>,
    /// Calls held back for the results of earlier ones, with the
    /// arguments as written.
    pub(super) deferred: Vec<Noted>,
    /// Calls that ran and failed, with the error.
    pub(super) failed: Vec<Noted>,
    /// Writes offcode held back (nothing written), with the error.
    /// A failure, unless the turn changed files (a small model rewriting
    /// the file it had just fixed): then the change stands.
    pub(super) held_back: Vec<Noted>,
    /// A write, edit or patch worked.
    pub(super) changed: bool,
    /// A command ran, and may have changed files.
    pub(super) ran_command: bool,
    /// What worked that changes things: files written, commands run.
    pub(super) done: Vec<super::intent::Done>,
    /// What edits that worked replaced.
    pub(super) replaced: Vec<super::intent::Replaced>,
    /// What edits that failed were to replace.
    pub(super) failed_edits: Vec<super::intent::Replaced>,
    /// The arguments of every call that worked (what it touched).
    pub(super) touched: Vec<String>,
    /// Every call that worked: the name and the arguments as written.
    pub(super) worked: Vec<(String, String)>,
    /// A change or a command was refused (by a rule or a person), or a
    /// subagent did its part (with the same check of its own).
    pub(super) excused: bool,
    /// A change or a command was refused (by a rule or a person).
    pub(super) refused: bool,
}

/// A call as the turn's bookkeeping keeps it: its name, what calls of its
/// kind do (resolved once, where it ran: a built-in, an MCP tool or
/// `task`), and a text about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Noted {
    /// The tool's name.
    pub(super) name: String,
    /// What calls of it do to the workspace.
    pub(super) effect: Effect,
    /// Its arguments as written, or its error.
    pub(super) text: String,
}

/// What a turn still owes.
#[derive(Debug, Default)]
pub(super) struct Owed {
    /// Changes and commands held back for earlier results and not made
    /// since.
    deferred: Vec<Noted>,
    /// The last call that failed and has not worked since.
    failure: Option<Noted>,
    /// The last change of files that failed, when no change and no
    /// command has worked since: nothing the task asked to change was
    /// changed after it.
    change_failed: Option<Noted>,
    /// What the turn did, in order, once each.
    pub(super) done: Vec<super::intent::Done>,
    /// What the turn's edits replaced, and where.
    pub(super) replaced: Vec<super::intent::Replaced>,
    /// The arguments of every call of the turn that worked.
    touched: Vec<String>,
    /// Every call of the turn that worked: the name and the arguments.
    worked: Vec<(String, String)>,
    /// A change or a command was refused (whoever refused it knows why
    /// nothing changed), or a subagent finished its part, which it checked
    /// the same way.
    pub(super) excused: bool,
    /// A change or a command was refused in the turn.
    pub(super) refused: bool,
}

/// A final answer that leaves the task undone: the note for the model,
/// and what it was, for the user.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Undone {
    /// The note to the model, in words it can act on.
    pub(super) note: String,
    /// What the model ended with, for a warning.
    pub(super) what: &'static str,
}

impl Owed {
    /// Takes in a step's calls.
    pub(super) fn after_step(&mut self, mut calls: Calls) {
        // An edit made again after it worked fails (its old text is gone):
        // the change was made, nothing failed.
        let made = |edit: &super::intent::Replaced| {
            self.replaced.contains(edit) || calls.replaced.contains(edit)
        };
        if !calls.failed_edits.is_empty() && calls.failed_edits.iter().all(made) {
            calls.failed.retain(|noted| noted.name != "edit");
        }
        // A small model's write refused after the turn changed files (a
        // rewrite of the file it had just fixed): the change stands.
        if self.done.is_empty() && !calls.changed {
            calls.failed.append(&mut calls.held_back);
        }
        self.excused |= calls.excused;
        self.refused |= calls.refused;
        self.worked.extend(calls.worked);
        self.replaced.extend(calls.replaced);
        self.touched.extend(calls.touched);
        for done in &calls.done {
            if !self.done.contains(done) {
                self.done.push(done.clone());
            }
        }
        // A failed call is made good by the same call (or any change, for
        // a change) working since.
        if self
            .failure
            .as_ref()
            .is_some_and(|failed| calls.ran.iter().any(|ran| same_kind(ran, failed)))
        {
            self.failure = None;
        }
        if let Some(last) = calls.failed.last() {
            self.failure = Some(last.clone());
        }
        if let Some(change) = calls
            .failed
            .iter()
            .rev()
            .find(|noted| noted.effect == Effect::ChangesFiles)
        {
            self.change_failed = Some(change.clone());
        }
        // A change that worked, or a command that ran (it may have made
        // the change), makes it good.
        if calls.changed || calls.ran_command {
            self.change_failed = None;
        }
        // A held-back change or command is made good by a later call that
        // does the same kind of thing, with the results seen; anything else
        // leaves it owed. One the same as a call that worked (a small model
        // writes the same command twice in a step) is made already.
        self.deferred
            .retain(|owed| !calls.ran.iter().any(|ran| ran.effect == owed.effect));
        let worked = &self.worked;
        self.deferred
            .extend(calls.deferred.into_iter().filter(|held| {
                matches!(held.effect, Effect::ChangesFiles | Effect::RunsCommands)
                    && !worked
                        .iter()
                        .any(|done| same_call(done, (&held.name, &held.text)))
            }));
    }

    /// Whether a call of the turn that worked named the file `name` (a
    /// read, a search, a command).
    pub(super) fn touched(&self, name: &str) -> bool {
        self.touched
            .iter()
            .any(|arguments| arguments.contains(name))
    }

    /// Whether a call of one of `tools` worked in the turn.
    pub(super) fn worked(&self, tools: &[&str]) -> bool {
        self.worked
            .iter()
            .any(|(name, _)| tools.contains(&name.as_str()))
    }

    /// Whether the turn changed the file `name` (by its path's end).
    pub(super) fn changed_path(&self, name: &str) -> bool {
        self.done.iter().any(|done| match done {
            super::intent::Done::Changed(path) => {
                path == name || path.ends_with(&format!("/{name}"))
            }
            super::intent::Done::Ran(command) => command.contains(name),
        })
    }

    /// What `text`, a final answer, leaves undone, if anything.
    /// `withheld`: tools that exist but are not the agent's.
    pub(super) fn undone(
        &self,
        text: &str,
        tools: &[ToolSpec],
        withheld: &[String],
    ) -> Option<Undone> {
        if let Some(note) = unrun_call_as(text, tools, withheld) {
            return Some(Undone {
                note,
                what: "a call it wrote but did not send in a form offcode can run",
            });
        }
        if let Some(Noted {
            name: first,
            text: arguments,
            ..
        }) = self.deferred.first()
        {
            // The call as written: a small model told only to call it again
            // says it did.
            let arguments: serde_json::Value = serde_json::from_str(arguments)
                .unwrap_or_else(|_| serde_json::Value::String(arguments.clone()));
            let call = serde_json::json!({"name": first, "arguments": arguments});
            return Some(Undone {
                note: format!(
                    "The task is not done: your `{first}` call was not run (it was written before the results it needs were seen) and you have not made it since. Send it now, with what the results above show; if it is right as it was, send it again unchanged, alone in your message:\n{call}"
                ),
                what: "a change or command it held back and never made",
            });
        }
        if let Some(Noted {
            name, text: error, ..
        }) = &self.failure
            && text.trim().is_empty()
        {
            let error = first_line(error);
            return Some(Undone {
                note: format!(
                    "The task is not done: your `{name}` call failed ({error}) and has not worked since, and you ended without a word. Fix the call and make it again, or say why the task cannot be done."
                ),
                what: "no word after a call that failed",
            });
        }
        // A small model reports the change its failed call was to make;
        // the file is as it was.
        if let Some(Noted {
            name, text: error, ..
        }) = &self.change_failed
        {
            let error = first_line(error);
            return Some(Undone {
                note: format!(
                    "The task is not done: your `{name}` call failed ({error}) and no change has worked since, so the files are as they were. Read what you change first if you need to, then make the call again with what is really there; if the task cannot be done, say why."
                ),
                what: "a change that failed and was not made since",
            });
        }
        if !tools.is_empty() && promised(text) {
            return Some(Undone {
                note: "You said what you will do next but made no call, so nothing was done. Make the call now; if the task is already done, say what was done.".to_owned(),
                what: "a promise to act and no call",
            });
        }
        // "The result is:" and nothing after: the answer was never given.
        let last = text.trim_end();
        if last.ends_with([':', '：']) {
            let line = first_line(last.lines().last().unwrap_or_default().trim());
            return Some(Undone {
                note: format!(
                    "Your answer stops at \"{line}\" and says nothing after it. Write the answer itself, with what the results above show."
                ),
                what: "an answer that stops before it says anything",
            });
        }
        None
    }
}

/// A task that asked for a change (`task`, the prompt), ending with no
/// file changed. The task is repeated: a small model told only that
/// nothing changed answers that no file was named.
pub(super) fn nothing_changed(task: &str) -> Undone {
    let task = first_line(task);
    Undone {
        note: format!("Nothing has changed yet, so the task is not done. Do it now: {task}"),
        what: "no file changed, though the task asks for a change",
    }
}

/// An error's first line, cut to 300 characters, for a note.
fn first_line(error: &str) -> String {
    error
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect()
}

/// Whether two calls are the same: one tool, arguments equal as JSON
/// (or as text, when not JSON).
fn same_call((name, arguments): &(String, String), other: (&String, &String)) -> bool {
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).ok();
    name == other.0
        && (arguments == other.1
            || json(arguments).is_some_and(|value| json(other.1) == Some(value)))
}

/// Whether `done` makes good `owed`: the same tool, or any change of
/// files for a change.
fn same_kind(done: &Noted, owed: &Noted) -> bool {
    done.name == owed.name
        || (done.effect == Effect::ChangesFiles && owed.effect == Effect::ChangesFiles)
}

/// Whether a short answer ends by saying what the model will do now, as
/// if a call were to follow ("Now I'll write the file.", "接下来我将写入文件：").
/// Offers and sign-offs ("Let me know if ...") are not promises.
fn promised(text: &str) -> bool {
    /// Lines of an answer that is only a promise; a longer one is a report.
    const MAX_LINES: usize = 4;
    const ENGLISH: [&str; 10] = [
        "i'll ",
        "i will ",
        "let me ",
        "let's ",
        "i'm going to ",
        "i am going to ",
        // Stalls: nothing follows them but the end of the turn.
        "please wait",
        "one moment",
        "just a moment",
        "hold on",
    ];
    const LEADS: [&str; 7] = ["okay", "ok", "now", "next", "then", "first", "so"];
    const CHINESE: [&str; 9] = [
        "我将",
        "我会",
        "我来",
        "让我",
        "我要",
        "我现在",
        "请稍等",
        "稍等",
        "请稍候",
    ];
    const CHINESE_LEADS: [&str; 6] = ["好的", "现在", "接下来", "下面", "首先", "然后"];
    let text = text.trim();
    if text.is_empty() || text.lines().count() > MAX_LINES {
        return false;
    }
    let Some(last) = text.lines().last().map(str::trim) else {
        return false;
    };
    let ends_as_intent = [':', '：', '.', '。', '…']
        .iter()
        .any(|c| last.ends_with(*c));
    if !ends_as_intent {
        return false;
    }
    // Its last sentence.
    let body = last.trim_end_matches([':', '：', '.', '。', '…']);
    let last = [". ", "! ", "? ", "。", "！", "？"]
        .iter()
        .filter_map(|end| body.rfind(end).map(|at| at + end.len()))
        .max()
        .map_or(body, |start| body[start..].trim());
    let lower = last.to_lowercase().replace('\u{2019}', "'");
    let mut rest = lower.trim_start_matches(|c: char| !c.is_alphanumeric());
    for lead in LEADS {
        if let Some(after) = rest.strip_prefix(lead)
            && after.starts_with([',', ' '])
        {
            rest = after.trim_start_matches([',', ' ']);
        }
    }
    let sign_off = ["know", "happy", "glad", "if you", "help"]
        .iter()
        .any(|w| rest.contains(w));
    if ENGLISH.iter().any(|p| rest.starts_with(p)) && !sign_off {
        return true;
    }
    let mut rest = last;
    for lead in CHINESE_LEADS {
        if let Some(after) = rest.strip_prefix(lead) {
            rest = after.trim_start_matches(['，', ',', ' ']);
        }
    }
    CHINESE.iter().any(|p| rest.starts_with(p)) && !rest.contains("如果") && !rest.contains("帮")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built-in's call as the bookkeeping keeps it.
    fn noted(name: &str, text: &str) -> Noted {
        Noted {
            name: name.to_owned(),
            effect: crate::tools::effect(name),
            text: text.to_owned(),
        }
    }

    #[test]
    fn a_promise_to_act_is_told_from_a_report_or_a_sign_off() {
        for promise in [
            "Now I'll write the file.",
            "I have read hello.txt.\nNext, I will write it in upper case to out.txt:",
            "Let me write the upper-case text to out.txt.",
            "I have read it. Now I'll write HI to out.txt.",
            "Okay, let's run the tests now…",
            "接下来我将把内容写入 out.txt。",
            "我来修改 greet.py：",
            "现在，让我运行测试。",
            "好的，我现在写入文件。",
            "OK, now I will run the tests.",
            "Please wait while I process your request.",
            "One moment…",
            "请稍等，我正在查找端口。",
        ] {
            assert!(promised(promise), "{promise}");
        }
        for done in [
            "",
            "I wrote HELLO WORLD to out.txt.",
            "Done. Let me know if you need anything else.",
            "I'll be happy to help with anything else.",
            "The port is 7341.",
            "Let me explain: the loop never ends because i is never incremented",
            "已把 HELLO WORLD 写入 out.txt。",
            "如果还需要修改，我会帮你。",
            "1. Read the file.\n2. Upper-case it.\n3. Write it.\n4. Check it.\nI'll do that now.",
        ] {
            assert!(!promised(done), "{done}");
        }
    }

    #[test]
    fn what_is_owed_is_made_good_only_by_the_same_kind_of_call() {
        let mut owed = Owed::default();
        owed.after_step(Calls {
            ran: vec![noted("read", "")],
            deferred: vec![noted("write", "{}"), noted("todowrite", "{}")],
            ..Calls::default()
        });
        // The todo list held back is not owed; the write is.
        assert_eq!(owed.deferred, [noted("write", "{}")]);
        owed.after_step(Calls {
            ran: vec![noted("todowrite", ""), noted("grep", "")],
            ..Calls::default()
        });
        assert_eq!(owed.deferred, [noted("write", "{}")]);
        owed.after_step(Calls {
            ran: vec![noted("edit", "")],
            ..Calls::default()
        });
        assert!(owed.deferred.is_empty());
        // A command held back that is the same as one that worked (the
        // 0.5B model's `echo` written twice in a step) is not owed; one
        // with other arguments is.
        let echo = |text: &str| {
            (
                "bash".to_owned(),
                format!("{{\"command\": \"echo {text}\"}}"),
            )
        };
        owed.after_step(Calls {
            ran: vec![noted("bash", "")],
            worked: vec![echo("Goodbye")],
            deferred: vec![
                noted("bash", r#"{"command":"echo Goodbye"}"#),
                noted("bash", &echo("Hello").1),
            ],
            ..Calls::default()
        });
        assert_eq!(owed.deferred, [noted("bash", &echo("Hello").1)]);
        owed.after_step(Calls {
            ran: vec![noted("bash", "")],
            ..Calls::default()
        });
        // A failure, made good by the same call working.
        owed.after_step(Calls {
            failed: vec![noted("read", "Error: not found")],
            ..Calls::default()
        });
        let undone = owed.undone("", &[], &[]).expect("owed");
        assert_eq!(undone.what, "no word after a call that failed");
        assert!(owed.undone("The file does not exist.", &[], &[]).is_none());
        owed.after_step(Calls {
            ran: vec![noted("read", "")],
            ..Calls::default()
        });
        assert!(owed.undone("", &[], &[]).is_none());
    }

    #[test]
    fn an_edit_made_again_after_it_worked_is_no_failure() {
        // The 1.5B model's edit of greet.py, sent three times: the first
        // worked, the others found no "Hello" left.
        let edit = super::super::intent::Replaced {
            old: "Hello".into(),
            new: "Goodbye".into(),
            path: "greet.py".into(),
        };
        let mut owed = Owed::default();
        owed.after_step(Calls {
            ran: vec![noted("edit", "")],
            changed: true,
            replaced: vec![edit.clone()],
            ..Calls::default()
        });
        for _ in 0..2 {
            owed.after_step(Calls {
                failed: vec![noted("edit", "Error: old_string was not found")],
                failed_edits: vec![edit.clone()],
                ..Calls::default()
            });
        }
        assert!(owed.undone("", &[], &[]).is_none());
        // Another edit failing is a failure.
        owed.after_step(Calls {
            failed: vec![noted("edit", "Error: old_string was not found")],
            failed_edits: vec![super::super::intent::Replaced {
                old: "Bye".into(),
                ..edit
            }],
            ..Calls::default()
        });
        assert!(owed.undone("Done.", &[], &[]).is_some());
    }

    #[test]
    fn an_answer_that_stops_at_a_colon_is_undone() {
        let owed = Owed::default();
        for stopped in ["I used grep. The result is:\n\n", "端口是："] {
            let undone = owed.undone(stopped, &[], &[]).expect(stopped);
            assert_eq!(undone.what, "an answer that stops before it says anything");
        }
        assert!(
            owed.undone("The result is: 7341.", &[], &[]).is_none()
                && owed.undone("Files:\n- a.py", &[], &[]).is_none()
        );
    }

    #[test]
    fn a_change_that_failed_is_owed_until_a_change_or_a_command_works() {
        let failed_edit = || Calls {
            failed: vec![noted("edit", "Error: old_string was not found")],
            ..Calls::default()
        };
        let mut owed = Owed::default();
        owed.after_step(failed_edit());
        // Reading, or a report of the change, does not make it good.
        owed.after_step(Calls {
            ran: vec![noted("read", "")],
            ..Calls::default()
        });
        let undone = owed
            .undone("I replaced print('hello') with print('hi').", &[], &[])
            .expect("owed");
        assert_eq!(undone.what, "a change that failed and was not made since");
        assert!(
            undone
                .note
                .contains("`edit` call failed (Error: old_string was not found)")
        );
        owed.after_step(Calls {
            ran: vec![noted("edit", "")],
            changed: true,
            ..Calls::default()
        });
        assert!(owed.undone("Done.", &[], &[]).is_none());
        // A command that ran may have made it.
        owed.after_step(failed_edit());
        owed.after_step(Calls {
            ran: vec![noted("bash", "")],
            ran_command: true,
            ..Calls::default()
        });
        assert!(owed.undone("Done with sed.", &[], &[]).is_none());
        // Other calls failing do not make a change owed.
        let mut owed = Owed::default();
        owed.after_step(Calls {
            failed: vec![noted("read", "Error: not found")],
            ..Calls::default()
        });
        assert!(owed.undone("There is no such file.", &[], &[]).is_none());
    }
}
