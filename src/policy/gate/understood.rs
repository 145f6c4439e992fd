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
        use std::os::unix::fs::PermissionsExt;
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
            if std::fs::metadata(&candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            {
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

    /// git reads the settings and hooks of the repository it runs in: the
    /// workspace's own are yours (commands cannot change them), but one
    /// nested in it (`git -C vendor/x`, a `cd` into it, `--git-dir`) came
    /// with the files. git there is dangerous when that repository names
    /// programs; it is never plain where the folder is known only at run
    /// time.
    fn git_repository(&mut self, reading: &Reading, text: &str) {
        let mut dirs = self.cwd.dirs.clone();
        let mut git_dir = None;
        for option in &reading.options {
            let value = option.value.as_ref();
            match option.name.as_str() {
                "-C" | "--git-dir" | "--work-tree" => {
                    let Some(value) = value.and_then(Arg::known) else {
                        self.danger(text, "`git` runs in a repository known only at run time");
                        return;
                    };
                    let resolved: Vec<PathBuf> = dirs
                        .iter()
                        .map(|dir| super::real_path(&dir.join(value)))
                        .collect();
                    match option.name.as_str() {
                        "-C" => dirs = resolved,
                        "--git-dir" => git_dir = Some(resolved),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        if self.cwd.unknown {
            self.danger(text, "`git` runs in a folder known only at run time");
            return;
        }
        let repositories = git_dir.unwrap_or_else(|| {
            dirs.iter()
                .filter_map(|dir| discover_repository(dir))
                .collect()
        });
        let own = super::real_path(&self.root.join(".git"));
        for repository in repositories {
            // The workspace's own repository, or one it lies in: yours.
            let holds_workspace = repository
                .parent()
                .is_some_and(|top| self.root.starts_with(top) && repository.ends_with(".git"));
            if repository == own || holds_workspace {
                continue;
            }
            if let Some(why) = crate::confine::gitdirs::runs_programs(&repository) {
                let shown = repository.strip_prefix(self.root).unwrap_or(&repository);
                self.danger(
                    text,
                    format!(
                        "`git` would run what the repository `{}` names ({why})",
                        shown.display()
                    ),
                );
            }
        }
    }

    /// What a C compiler writes when `-o` does not say: `a.out`, or with
    /// `-c`/`-S` an object or assembly file per source, in the current
    /// folder, each judged like a redirect (replacing one is dangerous).
    /// (`@FILE` is looked at for every compiler: [`Self::argument_files`].)
    fn compiler_output(&mut self, reading: &Reading, text: &str) {
        const SOURCES: &[&str] = &[
            "c", "cc", "cpp", "cxx", "c++", "C", "m", "mm", "s", "S", "i", "ii",
        ];
        let has = |names: &[&str]| {
            reading
                .options
                .iter()
                .any(|o| names.contains(&o.name.as_str()))
        };
        if has(&[
            "-o",
            "--output",
            "-E",
            "-M",
            "-MM",
            "-fsyntax-only",
            "--version",
            "-v",
            "--help",
            "-dumpversion",
            "-dumpmachine",
            "-print-search-dirs",
        ]) {
            return;
        }
        let suffix = if has(&["-c"]) {
            "o"
        } else if has(&["-S"]) {
            "s"
        } else {
            self.write_target(&Arg::literal("a.out"), text, WriteMode::Replace);
            return;
        };
        for operand in &reading.operands {
            let Some(source) = operand.known() else {
                continue;
            };
            let path = Path::new(source);
            if path
                .extension()
                .is_some_and(|x| SOURCES.iter().any(|s| x == *s))
                && let Some(stem) = path.file_stem()
            {
                let output = format!("{}.{suffix}", stem.to_string_lossy());
                self.write_target(&Arg::literal(&output), text, WriteMode::Replace);
            }
        }
    }

    /// What rustc writes when `-o`, `--out-dir` and `--emit` do not say: a
    /// program named after the crate's file (`rustc x.rs` writes `./x`),
    /// judged like a redirect.
    fn rustc_output(&mut self, reading: &Reading, text: &str) {
        let says = [
            "-o",
            "--out-dir",
            "--emit",
            "--crate-type",
            "--print",
            "-V",
            "--version",
            "-h",
            "--help",
            "--explain",
        ];
        if reading
            .options
            .iter()
            .any(|o| says.contains(&o.name.as_str()))
        {
            return;
        }
        for operand in &reading.operands {
            if let Some(source) = operand.known()
                && let Some(stem) = source.strip_suffix(".rs")
                && let Some(name) = Path::new(stem).file_name()
            {
                self.write_target(
                    &Arg::literal(&name.to_string_lossy()),
                    text,
                    WriteMode::Replace,
                );
            }
        }
    }

    /// A program whose options offcode does not parse one by one may still
    /// name the files it writes with options that say so by their name
    /// (`--log-file`, `--outputFile.json`, `--output-path`, `--cov-report
    /// xml:PATH`, `output=PATH` inside a value): each such path is judged
    /// like a redirect, so one that replaces an existing file is dangerous.
    fn free_outputs(&mut self, entry: &Entry, args: &[Arg], text: &str) {
        static PATTERNS: std::sync::LazyLock<Option<(regex::Regex, regex::Regex)>> =
            std::sync::LazyLock::new(|| {
                let option = regex::Regex::new(
                    r"^(.*[-_])?((log|output|out|report|junit|junitxml|result|results|dump|trace|profile|cov|coverage|archive|html|xml|json)[-_]?(file|path)|output|outfile|cov[-_]report)$",
                );
                let value = regex::Regex::new(
                    r"(?i)(?:^|[,;])\s*(?:output|outfile|output[-_]?file|file)=([^,;]+)",
                );
                option.ok().zip(value.ok())
            });
        let Some((output_option, output_value)) = PATTERNS.as_ref() else {
            return;
        };
        let mut index = 0;
        while index < args.len() {
            let arg = &args[index];
            index += 1;
            if arg.text == "--" {
                break;
            }
            let Some(long) = arg.text.strip_prefix("--") else {
                continue;
            };
            let (option, attached) = match long.split_once('=') {
                Some((option, value)) => (option, Some(value.to_owned())),
                None => (long, None),
            };
            if entry.effects.contains_key(&format!("--{option}")) {
                continue;
            }
            let option = option
                .split('.')
                .next()
                .unwrap_or(option)
                .to_ascii_lowercase();
            let value = match attached {
                Some(value) => Some((value, arg.dynamic)),
                None => args
                    .get(index)
                    .filter(|next| !next.text.starts_with('-'))
                    .map(|next| (next.text.clone(), next.dynamic)),
            };
            let Some((value, dynamic)) = value else {
                continue;
            };
            let mut paths = Vec::new();
            if output_option.is_match(&option) {
                // `xml:PATH` names a format and a path.
                paths.push(
                    value
                        .rsplit_once(':')
                        .map_or(value.as_str(), |(_, p)| p)
                        .to_owned(),
                );
            }
            paths.extend(
                output_value
                    .captures_iter(&value)
                    .filter_map(|c| c.get(1))
                    .map(|m| m.as_str().trim().to_owned()),
            );
            for path in paths.into_iter().filter(|p| !p.is_empty()) {
                let written = Arg {
                    text: path,
                    dynamic,
                };
                self.write_target(&written, text, WriteMode::Replace);
            }
        }
    }

    /// Notes that `name` is not plain for `why` (once per program).
    pub(super) fn runs(&mut self, name: &str, why: &str) {
        let note = format!("`{name}` {why}");
        if !self.verdict.runs.contains(&note) {
            self.verdict.runs.push(note);
        }
    }

    /// `@FILE` words, which compilers, JVMs and many tools whose options
    /// offcode does not parse one by one replace with the file's words:
    /// options offcode never sees (`-o`, `-XX:OnError=`, a wrapper). A
    /// program whose options are parsed would take such a word as an
    /// operand (a script's argument, a file).
    fn argument_files(&mut self, name: &str, args: &[Arg], text: &str) {
        for arg in args {
            // Whether or not the file is there yet: the line may write it.
            if arg.text.len() > 1 && arg.text.starts_with('@') {
                self.danger(
                    text,
                    format!(
                        "`{name}` may read more options from `{}`, which offcode does not check",
                        arg.text
                    ),
                );
            }
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
                        || self.gate.git_config.is_match(&value.to_ascii_lowercase())
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

/// The git directory git would use in `dir`: the nearest `.git` (or a
/// bare repository) at or above it.
fn discover_repository(dir: &Path) -> Option<PathBuf> {
    let mut current = dir.to_path_buf();
    loop {
        let dot_git = current.join(".git");
        if dot_git.is_dir() {
            return Some(super::real_path(&dot_git));
        }
        if dot_git.is_file() {
            let text = std::fs::read_to_string(&dot_git).unwrap_or_default();
            let target = text.trim().strip_prefix("gitdir:").unwrap_or("").trim();
            return Some(super::real_path(&current.join(target)));
        }
        if current.join("HEAD").is_file() && current.join("objects").is_dir() {
            return Some(current);
        }
        if !current.pop() {
            return None;
        }
    }
}
