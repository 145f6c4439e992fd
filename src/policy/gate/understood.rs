//! Understood, or it asks: a simple command is plain only when its
//! program is in the table, is the one PATH finds outside the workspace,
//! and every word parses under its grammar with no effect that writes an
//! existing file, runs a string or reaches the network.

use std::path::{Path, PathBuf};

use super::table::{Class, Entry, Reading};
use super::{Arg, Check, is_stream};

/// Files that are standard input or a descriptor: a program read from one
/// is code handed over in the command line's own input.
fn names_a_descriptor(text: &str) -> bool {
    let text = text.trim_end_matches('/');
    matches!(
        text,
        "/dev/stdin" | "/dev/fd" | "/proc/self/fd" | "/dev/tty"
    ) || text.starts_with("/dev/fd/")
        || text.starts_with("/proc/self/fd/")
        || text.starts_with("/proc/thread-self/fd/")
        || (text.starts_with("/proc/") && text.contains("/fd/"))
}

/// `name` and the words after it, as one command text.
fn join(name: &str, args: &[Arg]) -> String {
    std::iter::once(name)
        .chain(args.iter().map(|a| a.text.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// How a command writes a path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteMode {
    /// Creates or replaces it: dangerous when something is there.
    Replace,
    /// Appends to it.
    Append,
    /// Creates it empty (`touch`, `mkdir`), never replacing content.
    Create,
}

impl Check<'_> {
    /// Checks that `name` (written as `word`) with `args` is understood;
    /// records a danger when it is not. Returns git's normalised command
    /// (global options dropped) when it differs from the words.
    pub(super) fn understood(
        &mut self,
        word: &str,
        name: &str,
        args: &[Arg],
        text: &str,
    ) -> Option<String> {
        if self.functions.iter().any(|f| f == name) {
            // Its body was checked where the line defines it. A call is
            // that body, unless the line changed folder since (the body's
            // paths would mean others) or the name is also a program (if
            // the definition did not run, the program would).
            let moved = self.cwd.unknown || self.cwd.dirs != [self.root.to_path_buf()];
            let program = self.gate.table.get(name).is_some() || self.path_lookup(name).is_some();
            if moved {
                self.danger(
                    text,
                    format!(
                        "`{name}` is a function defined in this command line, called after a `cd`"
                    ),
                );
                return None;
            }
            if !program {
                return None;
            }
        }
        for arg in args {
            if arg.text.contains('\0') {
                self.danger(text, "a word holds a NUL byte, which bash cuts short");
                return None;
            }
            let value = arg
                .known()
                .map(|t| t.split_once('=').map_or(t, |(_, value)| value));
            if arg.known().is_some_and(names_a_descriptor)
                || value.is_some_and(|v| names_a_descriptor(v) || self.links_to_a_descriptor(v))
            {
                self.danger(
                    text,
                    format!(
                        "`{}` is standard input or a descriptor read as a file",
                        arg.text
                    ),
                );
                return None;
            }
        }
        let gate = self.gate;
        let Some(entry) = gate.table.get(name) else {
            self.danger(
                text,
                format!(
                    "`{name}` is not a program offcode understands (a person can vouch for it in `commands` of the global config)"
                ),
            );
            return None;
        };
        if !entry.builtin
            && !matches!(entry.class(), Class::Network | Class::Dangerous)
            && let Err(why) = self.located(word, name)
        {
            self.danger(text, why);
            return None;
        }
        // `make -f -`, `sed -f -`: a program file that is standard input.
        if (entry.class == Some(Class::Runs) || entry.script.is_some())
            && (args.windows(2).any(|pair| {
                let option = pair[0].text.as_str();
                let file_option =
                    (option.starts_with('-') && !option.starts_with("--") && option.ends_with('f'))
                        || matches!(option, "--file" | "--makefile" | "--source" | "--exec");
                file_option && pair[1].text == "-"
            }) || args
                .iter()
                .any(|a| a.text == "-f-" || a.text.starts_with("--") && a.text.ends_with("=-")))
        {
            self.danger(
                text,
                format!("`{name}` would read a program file from standard input"),
            );
            return None;
        }
        // `make -f <(printf ...)`: a program read from another command's
        // output is code the line hands over.
        if (entry.class == Some(Class::Runs) || entry.script.is_some())
            && args
                .iter()
                .any(|a| a.dynamic && (a.text.contains("<(") || a.text.contains(">(")))
        {
            self.danger(
                text,
                format!(
                    "`{name}` reads a file that is another command's output, which may be code"
                ),
            );
            return None;
        }
        self.entry(name, entry, args, text)
    }

    /// Whether `path` is a symlink (in a chain of at most 8) that ends at
    /// standard input or a descriptor: `node s.js <<< CODE` with `s.js`
    /// pointing at `/dev/stdin` runs the here-string.
    fn links_to_a_descriptor(&self, path: &str) -> bool {
        let mut current = self.cwd.dirs[0].join(path);
        for _ in 0..8 {
            let Ok(target) = std::fs::read_link(&current) else {
                return false;
            };
            let next = current.parent().unwrap_or(Path::new("/")).join(target);
            if names_a_descriptor(&next.to_string_lossy()) {
                return true;
            }
            current = next;
        }
        true
    }

    /// Where `word` runs from: it must be the program PATH finds for
    /// `name`, and that must lie outside the workspace.
    fn located(&mut self, word: &str, name: &str) -> Result<(), String> {
        let Some(found) = self.path_lookup(name) else {
            // Not installed: the command fails, unless something the line
            // writes first appears in a PATH directory it may write to.
            return match self.writable_path_dir() {
                Some(dir) => Err(format!(
                    "`{name}` is not installed, and PATH includes `{dir}` inside the workspace, where the line could create it"
                )),
                None => Ok(()),
            };
        };
        if self.cwd.dirs.iter().any(|dir| found.starts_with(dir)) || found.starts_with(self.root) {
            return Err(format!(
                "`{name}` would run `{}`, a program inside the workspace",
                found.display()
            ));
        }
        if word.contains('/') {
            let real = super::real_path(&self.cwd.dirs[0].join(word));
            if real != found {
                return Err(format!(
                    "`{word}` is not the `{name}` found on PATH (`{}`)",
                    found.display()
                ));
            }
        }
        Ok(())
    }

    /// A PATH directory inside the workspace (or relative), if any.
    fn writable_path_dir(&self) -> Option<String> {
        let path = self.path.as_deref()?;
        path.split(':')
            .find(|dir| {
                !Path::new(dir).is_absolute()
                    || super::real_path(Path::new(dir)).starts_with(self.root)
            })
            .map(str::to_owned)
    }

    /// The real path of the first `name` on PATH, as bash would find it.
    /// A PATH directory inside the workspace before it counts as the hit:
    /// the line could put a program of that name there first.
    fn path_lookup(&self, name: &str) -> Option<PathBuf> {
        let path = self.path.as_deref()?;
        for dir in path.split(':') {
            // An empty or relative entry is looked up from wherever the
            // command runs: inside the workspace.
            let dir = if dir.is_empty() { "." } else { dir };
            let base = if Path::new(dir).is_absolute() {
                PathBuf::from(dir)
            } else {
                self.cwd.dirs[0].join(dir)
            };
            let candidate = base.join(name);
            if super::real_path(&base).starts_with(self.root) {
                return Some(super::real_path(&candidate));
            }
            if crate::paths::runnable(&candidate) {
                return Some(super::real_path(&candidate));
            }
        }
        None
    }

    /// Applies one entry to `args`: its class, grammar, effects and
    /// operands, then its subcommand or module.
    fn entry(&mut self, name: &str, entry: &Entry, args: &[Arg], text: &str) -> Option<String> {
        if entry.class == Some(Class::Runs)
            && let Some(at) = self.written_at
            && at < self.count
        {
            self.danger(
                text,
                format!("`{name}` runs workspace code after this line wrote a file: it could run what the line wrote"),
            );
        }
        match entry.class() {
            Class::Network | Class::Dangerous => {
                let why = entry
                    .why
                    .clone()
                    .unwrap_or_else(|| "is never plain".to_owned());
                let program = name.split(' ').next().unwrap_or(name);
                if why.starts_with(program) {
                    self.danger(text, why);
                } else {
                    self.danger(text, format!("`{name}` {why}"));
                }
                // `git push` stays visible to rules as `git push ...`.
                return name.contains(' ').then(|| join(name, args));
            }
            Class::Wrapper => return None,
            Class::Writes => self.verdict.changes = true,
            Class::Read | Class::Runs => {}
        }
        if entry.free && !entry.builtin {
            self.runs(name, "takes options offcode does not check one by one");
        }
        let args = entry.old_style(args).unwrap_or_else(|| args.to_vec());
        if entry.free || entry.operands.as_deref() == Some("compiler") {
            self.argument_files(name, &args, text);
        }
        if entry.free && !entry.builtin {
            self.free_outputs(entry, &args, text);
        }
        let reading = match entry.read(&args) {
            Ok(reading) => reading,
            Err(why) => {
                self.danger(text, format!("`{name}`: {why}"));
                return None;
            }
        };
        if name == "git" {
            self.git_repository(&reading, text);
        }
        // A shell's `-c CODE` is walked like the outer line: what it runs
        // is judged there, not as the project's code.
        let walked = reading.options.iter().any(|option| {
            option.value.is_some() && entry.effects.get(&option.name).is_some_and(|e| e == "code")
        });
        if entry.class() == Class::Runs && !walked {
            self.runs(name, "runs the project's code");
        }
        self.effects(name, entry, &reading, text);
        if let Some(language) = &entry.script {
            self.script_language(name, language, &reading, text);
        } else {
            self.operands(name, entry, &reading, text);
        }
        if let Some(required) = (!entry.require_one_of.is_empty()).then_some(&entry.require_one_of)
            && !reading.options.iter().any(|o| required.contains(&o.name))
        {
            self.danger(
                text,
                format!("`{name}` without {} is not plain", required.join(" or ")),
            );
        }
        let sub = reading.sub.as_deref()?;
        let child = entry.child(sub)?;
        let child_name = format!("{name} {sub}");
        // git's global options dropped, so managed rules see `git push ...`.
        self.entry(&child_name, child, &reading.rest, text)
            .or_else(|| Some(join(&child_name, &reading.rest)))
    }

    /// Notes that `name` is not plain for `why` (once per program).
    pub(super) fn runs(&mut self, name: &str, why: &str) {
        let note = format!("`{name}` {why}");
        if !self.verdict.runs.contains(&note) {
            self.verdict.runs.push(note);
        }
    }

    fn effects(&mut self, name: &str, entry: &Entry, reading: &Reading, text: &str) {
        let creating = reading.options.iter().any(|o| {
            entry
                .effects
                .get(&o.name)
                .is_some_and(|e| e == "archive-write")
        });
        for option in &reading.options {
            if let Some(pattern) = entry.pattern(&option.name)
                && let Some(value) = &option.value
                && (value.dynamic || !pattern.is_match(&value.text))
            {
                self.danger(
                    text,
                    format!(
                        "`{name} {}` is given `{}`, not a plain name",
                        option.name, value.text
                    ),
                );
            }
            let Some(effect) = entry.effects.get(&option.name) else {
                continue;
            };
            match effect.as_str() {
                "writes" => self.option_writes(option.value.as_ref(), text),
                "archive" if creating => self.option_writes(option.value.as_ref(), text),
                // `bash -c CODE`: the code is walked like the outer line.
                "archive" | "archive-write" | "value" | "code" | "last" => {}
                "runs" => self.danger(
                    text,
                    format!(
                        "`{name} {}` runs a program or code given on the command line",
                        option.name
                    ),
                ),
                "git-config" => {
                    let value = option.value.as_ref().map_or("", |v| v.text.as_str());
                    if option.value.as_ref().is_some_and(|v| v.dynamic)
                        || super::Gate::class()
                            .git_config
                            .is_match(&value.to_ascii_lowercase())
                    {
                        self.danger(text, format!("git -c {value} runs a program"));
                    }
                }
                other => {
                    let why = other.strip_prefix("dangerous: ").unwrap_or(other);
                    let program = name.split(' ').next().unwrap_or(name);
                    if why.starts_with(program) {
                        self.danger(text, why.to_owned());
                    } else {
                        self.danger(text, format!("`{name} {}` {why}", option.name));
                    }
                }
            }
        }
    }

    fn option_writes(&mut self, value: Option<&Arg>, text: &str) {
        match value {
            Some(value) => self.write_target(value, text, WriteMode::Replace),
            None => self.danger(text, "writes to a file it does not name"),
        }
    }

    fn operands(&mut self, name: &str, entry: &Entry, reading: &Reading, text: &str) {
        let info = reading.options.iter().any(|o| entry.info.contains(&o.name));
        match entry.operands.as_deref().unwrap_or("read") {
            "writes" => {
                let appends = reading
                    .options
                    .iter()
                    .any(|o| entry.append.contains(&o.name));
                for operand in &reading.operands {
                    self.write_target(
                        operand,
                        text,
                        if appends {
                            WriteMode::Append
                        } else {
                            WriteMode::Replace
                        },
                    );
                }
            }
            "creates" => {
                for operand in &reading.operands {
                    self.write_target(operand, text, WriteMode::Create);
                }
            }
            "output2" => {
                if let Some(output) = reading.operands.get(1) {
                    self.write_target(output, text, WriteMode::Replace);
                } else if reading.operands.first().is_some_and(|o| o.dynamic) {
                    // `uniq {a,victim}.txt`: one word may be both.
                    self.danger(text, "writes to a file named only at run time");
                }
            }
            "dest" => self.dest_operands(name, reading, text),
            "script" => match reading.operands.first() {
                Some(script) if script.known().is_some_and(|s| s != "-") => {}
                Some(script) if script.text == "-" => self.danger(
                    text,
                    format!("`{name}` would read its program from standard input"),
                ),
                Some(script) => self.danger(
                    text,
                    format!(
                        "`{name}` runs a program named `{}`, not a file",
                        script.text
                    ),
                ),
                // The program came with an option (`-c CODE`, `-e CODE`),
                // which is judged as such.
                None if info || reading.sub.is_some() || program_in_option(entry, reading) => {}
                None => self.danger(
                    text,
                    format!("`{name}` would read its program from standard input"),
                ),
            },
            "make" => self.make_operands(&reading.operands, text),
            // xxd's second operand is its output; its options' values are
            // not parsed, so any second word may be one.
            "xxd" => {
                if reading.operands.len() > 1 {
                    self.danger(text, "`xxd` with two operands writes the second");
                }
            }
            // After `--`, libtest's own options: `--logfile` writes.
            "cargo" => {
                if reading.operands.iter().any(|o| {
                    o.text == "--logfile"
                        || o.text.starts_with("--logfile=")
                        || o.text.starts_with("--print-config")
                }) {
                    self.danger(text, "the test binary's `--logfile` writes a file it names");
                }
            }
            "date" => {
                if reading.operands.iter().any(|o| !o.text.starts_with('+')) {
                    self.danger(text, "`date` with a date sets the system clock");
                }
            }
            "git-checkout" => self.checkout_operands(reading, text),
            // `git symbolic-ref NAME` reads; with a second operand it sets.
            "git-read-one" => {
                if reading.operands.len() > 1 {
                    self.danger(text, format!("`{name}` with two operands sets a ref"));
                }
            }
            "git-config" => {
                if reading.operands.len() > 1 {
                    self.danger(text, "git config changes git's configuration");
                }
            }
            "compiler" => self.compiler_output(reading, text),
            "rustc" => self.rustc_output(reading, text),
            "read" | "any" => {}
            other => {
                // `kill -l 9` names a signal; it sends none.
                if !reading.operands.is_empty() && !info {
                    let why = other.strip_prefix("dangerous: ").unwrap_or(other);
                    self.danger(text, format!("`{name}` {why}"));
                }
            }
        }
    }

    /// A path a command writes, judged like a redirect target: matched as
    /// `edit` or `external_directory`, and dangerous when `replaces` and
    /// something is there already.
    pub(super) fn write_target(&mut self, arg: &Arg, text: &str, mode: WriteMode) {
        match arg.known() {
            None => self.danger(text, "writes to a file named only at run time"),
            Some(target) if is_stream(target) => {}
            Some(target) => {
                let paths = self.resolve(target);
                if self.through_link(&paths) {
                    self.danger(text, "writes through a link this line made");
                }
                if mode == WriteMode::Replace {
                    self.target_must_be_new(text, target, &paths, "replaces an existing file");
                }
                if mode != WriteMode::Create {
                    self.written_at.get_or_insert(self.count);
                }
                self.verdict.writes.push(super::Write {
                    target: target.to_owned(),
                    paths,
                });
            }
        }
    }
}

/// Whether an option handed the program its code (`python3 -c CODE`).
fn program_in_option(entry: &Entry, reading: &Reading) -> bool {
    reading.options.iter().any(|option| {
        option.value.is_some()
            && entry.effects.get(&option.name).is_some_and(|effect| {
                effect == "runs" || effect == "code" || effect.contains("inline code")
            })
    })
}
