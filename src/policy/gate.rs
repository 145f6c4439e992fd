//! The dangerous-command gate: which simple commands of a command line are
//! in the dangerous class, and what every simple command is (for the
//! permission rules).
//!
//! Built on [`shell`]: every command is unwrapped (`sudo`, `env`, `timeout`,
//! `xargs`, `find -exec`, ...), code strings (`bash -c`, `eval`, `ssh host
//! CMD`, ...) are parsed and checked in turn, and output redirects are
//! resolved against every directory the command line may have `cd`'d into.
//! Anything the gate cannot be sure of counts as dangerous.

use std::path::{Path, PathBuf};

use super::shell::{self, Arg, Assignment, Item, RedirectKind, SimpleCommand};
use super::wildcard;
pub use crate::paths::real_path;

mod arithmetic;
mod class;
mod commands;
mod implicit;
mod operands;
mod options;
mod scripts;
mod table;
mod understood;
mod variables;

#[cfg(test)]
mod matrix;

use class::{Extra, Rule};
pub use class::{ExtraFile, Gate, RuleFile};

/// How deep code strings may nest (`bash -c "eval '...'"`).
const MAX_DEPTH: usize = 8;

/// Why a command is dangerous.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Danger {
    /// The simple command (or redirect) that is dangerous.
    pub command: String,
    /// What it does.
    pub why: String,
}

/// A file a command line writes through a redirect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The target as written.
    pub target: String,
    /// Absolute paths it may resolve to (one per possible directory).
    pub paths: Vec<PathBuf>,
}

/// The gate's reading of one command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Every simple command found, normalised (`/bin/rm -rf x` is `rm -rf
    /// x`), outer wrappers and inner commands alike.
    pub commands: Vec<String>,
    /// Why it is dangerous; empty when it is not.
    pub dangers: Vec<Danger>,
    /// Files written through output redirects.
    pub writes: Vec<Write>,
    /// A `>` is among the dangers (onto an existing file, or a target not
    /// known until run time): once approved, the line must run without
    /// noclobber.
    pub clobbers: bool,
    /// Why the line, though not dangerous, is not plain: programs that run
    /// the project's code (build tools, test runners, scripts, git in a
    /// repository whose settings name programs) or whose options offcode
    /// does not check one by one. Each says so in the question.
    pub runs: Vec<String>,
    /// A program that changes files or the repository (`touch`, `git
    /// commit`) is on the line.
    pub changes: bool,
}

impl Verdict {
    /// Whether the line only reads: nothing dangerous, nothing of the
    /// project's run, nothing written or changed. The read-only agents
    /// (`plan`, `explore`) run such lines, and only such lines.
    pub fn reads_only(&self) -> bool {
        self.dangers.is_empty() && self.runs.is_empty() && self.writes.is_empty() && !self.changes
    }
}

impl Gate {
    /// Reads `command` as bash would run it in `cwd`.
    pub fn check(&self, command: &str, cwd: &Path, home: Option<&str>) -> Verdict {
        let path = std::env::var("PATH").ok();
        let mut check = Check {
            gate: self,
            home,
            root: cwd,
            path,
            cwd: Cwd {
                dirs: vec![cwd.to_path_buf()],
                unknown: false,
            },
            verdict: Verdict::default(),
            count: 0,
            functions: Vec::new(),
            arithmetic: Vec::new(),
            numbers: std::collections::HashMap::new(),
            values: Vec::new(),
            integers: Vec::new(),
            written_at: None,
            links: Vec::new(),
        };
        check.script(command, 0);
        check.judge_arithmetic();
        check.verdict
    }
}

/// Directories the command line may be in at a point.
#[derive(Debug, Clone)]
struct Cwd {
    dirs: Vec<PathBuf>,
    /// A `cd` went somewhere only known at run time.
    unknown: bool,
}

struct Check<'a> {
    gate: &'a Gate,
    home: Option<&'a str>,
    /// The workspace root.
    root: &'a Path,
    /// `PATH` as commands will see it.
    path: Option<String>,
    cwd: Cwd,
    verdict: Verdict,
    count: usize,
    /// Functions the command line defines: calls to them are not plain.
    functions: Vec<String>,
    /// Every place the line evaluates arithmetic, judged once the whole
    /// line is read ([`Check::judge_arithmetic`]).
    arithmetic: Vec<shell::Arithmetic>,
    /// Each variable the line sets, and whether every value it gives it
    /// is a number.
    numbers: std::collections::HashMap<String, bool>,
    /// Every value the line assigns, by name: arithmetic for a variable
    /// declared `-i`.
    values: Vec<(String, arithmetic::Given)>,
    /// Variables the line declares integers (`declare -i n`).
    integers: Vec<String>,
    /// The count of commands seen when the line first wrote content to a
    /// file: workspace code run after that may be what it wrote.
    written_at: Option<usize>,
    /// Links the line makes (`ln`, `cp -s`): a later write through one
    /// writes whatever it points at.
    links: Vec<PathBuf>,
}

fn text_of(argv: &[Arg]) -> String {
    argv.iter()
        .map(|arg| arg.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn basename(text: &str) -> &str {
    text.rsplit('/').next().unwrap_or(text)
}

const SHELLS: &[&str] = &[
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish", "csh",
    "tcsh",
];

impl Check<'_> {
    fn danger(&mut self, command: &str, why: impl Into<String>) {
        let danger = Danger {
            command: command.to_owned(),
            why: why.into(),
        };
        if !self.verdict.dangers.contains(&danger) {
            self.verdict.dangers.push(danger);
        }
    }

    /// Parses and checks a whole command line or code string.
    fn script(&mut self, source: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.danger(source, "code strings are nested too deeply to check");
            return;
        }
        let items = match shell::parse(source, self.home) {
            Ok(items) => items,
            Err(problem) => {
                self.danger(source, format!("cannot be checked: {}", problem.0));
                return;
            }
        };
        for item in items {
            match item {
                Item::Command(command) => self.simple(&command, depth),
                Item::Redirect(redirect) => self.redirect(&redirect),
                Item::Assignment(assignment) => self.assignment(&assignment),
                Item::Function(name) => self.functions.push(name),
                Item::Late { construct, why } => self.danger(&construct, why),
                Item::Arithmetic(arithmetic) => self.arithmetic(arithmetic),
                Item::Sets(name) => self.sets_variable(&Arg::literal(&name), source),
                Item::Counts(name) => self.sets_variable_to(&Arg::literal(&name), source, true),
            }
        }
    }

    fn redirect(&mut self, redirect: &shell::Redirect) {
        let shown = format!("{} {}", redirect.operator, redirect.target.text);
        if redirect.target.text.contains('\0') {
            self.danger(&shown, "the target holds a NUL byte");
        }
        if redirect
            .target
            .known()
            .is_some_and(|t| t.starts_with("/dev/tcp/") || t.starts_with("/dev/udp/"))
        {
            self.danger(&shown, "bash opens a network connection for this redirect");
            return;
        }
        if redirect.kind == RedirectKind::Other {
            return;
        }
        let overwrites = matches!(
            redirect.kind,
            RedirectKind::Overwrite | RedirectKind::Clobber
        );
        let before = self.verdict.dangers.len();
        match redirect.target.known() {
            None => self.danger(&shown, "writes to a file named only at run time"),
            Some(target) if is_stream(target) => {}
            Some(target) => {
                let paths = self.resolve(target);
                if self.through_link(&paths) {
                    self.danger(&shown, "writes through a link this line made");
                }
                if overwrites {
                    self.target_must_be_new(&shown, target, &paths, "overwrites an existing file");
                }
                self.verdict.writes.push(Write {
                    target: target.to_owned(),
                    paths,
                });
                self.written_at.get_or_insert(self.count);
            }
        }
        // A person who approves this `>` approves what it may overwrite.
        self.verdict.clobbers |= overwrites && self.verdict.dangers.len() > before;
    }

    /// Where `target` may be, given every directory the line may be in.
    fn resolve(&self, target: &str) -> Vec<PathBuf> {
        if target.starts_with('/') {
            return vec![real_path(Path::new(target))];
        }
        self.cwd
            .dirs
            .iter()
            .map(|dir| real_path(&dir.join(target)))
            .collect()
    }

    /// Whether one of `paths` is a link this line made earlier.
    fn through_link(&self, paths: &[PathBuf]) -> bool {
        paths.iter().any(|path| self.links.contains(path))
    }

    fn target_must_be_new(&mut self, shown: &str, target: &str, paths: &[PathBuf], why: &str) {
        if self.cwd.unknown && !target.starts_with('/') {
            self.danger(
                shown,
                "writes to a relative path after a `cd` to a directory known only at run time",
            );
            return;
        }
        if paths.iter().any(|path| exists_as_file(path)) {
            self.danger(shown, why);
        }
    }

    fn simple(&mut self, command: &SimpleCommand, depth: usize) {
        for assignment in &command.assignments {
            self.assignment(assignment);
            if !command.argv.is_empty() {
                self.exported(assignment);
            }
        }
        self.argv(&command.argv, depth);
    }

    /// Checks one command given as words (after any wrapper was removed).
    fn argv(&mut self, argv: &[Arg], depth: usize) {
        let Some(first) = argv.first() else {
            return;
        };
        self.count += 1;
        if self.count > shell::MAX_COMMANDS {
            if self.count == shell::MAX_COMMANDS + 1 {
                self.danger("…", "too many commands to check");
            }
            return;
        }
        let Some(path) = first.known() else {
            let text = text_of(argv);
            self.verdict.commands.push(text.clone());
            self.danger(&text, "the command name is only known at run time");
            return;
        };
        let name = basename(path).to_owned();
        let mut normalised = Vec::with_capacity(argv.len());
        normalised.push(Arg::literal(&name));
        normalised.extend_from_slice(&argv[1..]);
        let text = text_of(&normalised);
        self.verdict.commands.push(text.clone());
        let at = self.verdict.commands.len() - 1;
        if name.is_empty() {
            self.danger(&text, "the command name is empty");
            return;
        }
        self.variables(&name, &argv[1..], &text);
        let before = self.verdict.dangers.len();
        self.class_rules(&name, &argv[1..], &text);
        self.special(&name, &argv[1..], &text, depth);
        let known = self.verdict.dangers.len();
        // Also for a command already found dangerous, so rules match the
        // normalised form (`git -C . push --force` is `git push --force`);
        // its reasons then stay the specific ones found first.
        if let Some(git) = self.understood(path, &name, &argv[1..], &text) {
            self.verdict.commands[at] = git;
        }
        if known > before {
            self.verdict.dangers.truncate(known);
        }
    }

    /// Rules from `policy/dangerous.jsonc` and `dangerous.extra`.
    fn class_rules(&mut self, name: &str, args: &[Arg], text: &str) {
        let gate = self.gate;
        for (pattern, why) in &Gate::class().commands {
            if wildcard::matches(pattern, name) {
                self.danger(text, format!("`{name}` {why}"));
            }
        }
        let args = if name == "git" {
            match self.git_args(args, text) {
                Some(rest) => rest,
                None => return,
            }
        } else {
            args.to_vec()
        };
        for rule in &Gate::class().rules {
            self.rule(rule, name, &args, text);
        }
        for extra in &gate.extra {
            match extra {
                Extra::Rule(rule) => self.rule(rule, name, &args, text),
                Extra::Pattern(pattern) => {
                    if wildcard::matches_command(pattern, text) {
                        self.danger(
                            text,
                            format!("matches the configured dangerous pattern `{pattern}`"),
                        );
                    }
                }
            }
        }
    }

    fn rule(&mut self, rule: &Rule, name: &str, args: &[Arg], text: &str) {
        if !wildcard::matches(&rule.command, name) {
            return;
        }
        let joined = text_of(args);
        let conditional = rule.arg.is_some() || rule.args.is_some();
        let matched = rule
            .arg
            .as_ref()
            .is_some_and(|regex| args.iter().any(|arg| regex.is_match(&arg.text)))
            || rule
                .args
                .as_ref()
                .is_some_and(|regex| regex.is_match(&joined));
        if !conditional || matched {
            self.danger(text, rule.why.clone());
        } else if args.iter().any(|arg| arg.dynamic) {
            self.danger(
                text,
                format!("{} (an argument is only known at run time)", rule.why),
            );
        }
    }

    /// git's arguments after its global options, checking `-c` values.
    fn git_args(&mut self, args: &[Arg], text: &str) -> Option<Vec<Arg>> {
        let mut index = 0;
        while index < args.len() {
            let Some(word) = args[index].known() else {
                self.danger(text, "a git option known only at run time");
                return None;
            };
            match word {
                "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
                | "--super-prefix" => {
                    index += 2;
                }
                "-c" => {
                    let value = args.get(index + 1).map_or("", |arg| arg.text.as_str());
                    if args.get(index + 1).is_some_and(|arg| arg.dynamic)
                        || Gate::class()
                            .git_config
                            .is_match(&value.to_ascii_lowercase())
                    {
                        self.danger(text, format!("git -c {value} runs a program"));
                    }
                    index += 2;
                }
                "-p"
                | "-P"
                | "--paginate"
                | "--no-pager"
                | "--bare"
                | "--no-replace-objects"
                | "--literal-pathspecs"
                | "--glob-pathspecs"
                | "--noglob-pathspecs"
                | "--icase-pathspecs"
                | "--no-optional-locks"
                | "--no-advice"
                | "--version"
                | "--help"
                | "--html-path"
                | "--man-path"
                | "--info-path" => index += 1,
                other if other.starts_with("--config-env") => {
                    self.danger(
                        text,
                        "git --config-env sets configuration from the environment",
                    );
                    index += if other.contains('=') { 1 } else { 2 };
                }
                other
                    if other.starts_with("--git-dir=")
                        || other.starts_with("--work-tree=")
                        || other.starts_with("--namespace=")
                        || other.starts_with("--exec-path") =>
                {
                    index += 1;
                }
                other if other.starts_with('-') => {
                    self.danger(text, format!("unknown git option `{other}`"));
                    return None;
                }
                _ => break,
            }
        }
        Some(args.get(index..).unwrap_or(&[]).to_vec())
    }
}

/// Targets bash treats as the process's own streams.
fn is_stream(target: &str) -> bool {
    matches!(
        target,
        "/dev/stdout" | "/dev/stderr" | "/dev/stdin" | "/dev/null" | "/dev/tty"
    ) || target
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
}

/// A target counts as existing when anything but a character device is
/// there, including a dangling symlink (noclobber would refuse it too).
fn exists_as_file(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Ok(meta) => !meta.file_type().is_char_device(),
        Err(_) => std::fs::symlink_metadata(path).is_ok(),
    }
}

#[cfg(test)]
mod tests;
