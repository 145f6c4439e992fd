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

use regex::Regex;
use serde::Deserialize;

use super::shell::{self, Arg, Assignment, Item, RedirectKind, SimpleCommand};
use super::wildcard;

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
}

impl Verdict {
    /// Whether the command line is in the dangerous class.
    pub fn is_dangerous(&self) -> bool {
        !self.dangers.is_empty()
    }
}

/// The built-in class (`policy/dangerous.jsonc`) and the rules config adds.
#[derive(Debug)]
pub struct Gate {
    commands: Vec<(String, String)>,
    rules: Vec<Rule>,
    interpreters: Vec<(String, Regex)>,
    awk: Regex,
    code_variables: Vec<String>,
    git_config: Regex,
    extra: Vec<Extra>,
}

#[derive(Debug)]
struct Rule {
    command: String,
    arg: Option<Regex>,
    args: Option<Regex>,
    why: String,
}

/// A rule from `dangerous.extra`.
#[derive(Debug)]
enum Extra {
    /// A wildcard over the normalised command (`terraform destroy *`).
    Pattern(String),
    /// A rule in the built-in shape.
    Rule(Rule),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassFile {
    commands: indexmap_lite::OrderedMap,
    rules: Vec<RuleFile>,
    interpreters: indexmap_lite::OrderedMap,
    awk: String,
    code_variables: Vec<String>,
    git_config: String,
}

/// A rule as written in `policy/dangerous.jsonc` or `dangerous.extra`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    /// Command name (base name; `*` and `?` allowed).
    pub command: String,
    /// Regex one argument must match.
    #[serde(default)]
    pub arg: Option<String>,
    /// Regex over all arguments joined by spaces.
    #[serde(default)]
    pub args: Option<String>,
    /// What the command does, shown to the user.
    #[serde(default)]
    pub why: Option<String>,
}

/// One entry of `dangerous.extra`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ExtraFile {
    /// A wildcard over the normalised command.
    Pattern(String),
    /// A rule with a command name and argument regexes.
    Rule(RuleFile),
}

/// `serde_json` keeps object order (`preserve_order`); read a JSON object
/// as an ordered list of string pairs.
mod indexmap_lite {
    use serde::Deserialize;
    use serde_json::{Map, Value};

    #[derive(Debug)]
    pub struct OrderedMap(pub Vec<(String, String)>);

    impl<'de> Deserialize<'de> for OrderedMap {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let map = Map::<String, Value>::deserialize(deserializer)?;
            map.into_iter()
                .map(|(key, value)| match value {
                    Value::String(text) => Ok((key, text)),
                    other => Err(serde::de::Error::custom(format!(
                        "`{key}`: expected a string, found {other}"
                    ))),
                })
                .collect::<Result<_, _>>()
                .map(OrderedMap)
        }
    }
}

const BUILT_IN: &str = include_str!("../../policy/dangerous.jsonc");

fn compile(pattern: &str, what: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| format!("bad regex in {what}: {e}"))
}

impl Rule {
    fn from_file(file: &RuleFile, what: &str) -> Result<Self, String> {
        if file.command.trim().is_empty() {
            return Err(format!("{what}: `command` must not be empty"));
        }
        Ok(Self {
            command: file.command.clone(),
            arg: file.arg.as_deref().map(|r| compile(r, what)).transpose()?,
            args: file.args.as_deref().map(|r| compile(r, what)).transpose()?,
            why: file
                .why
                .clone()
                .unwrap_or_else(|| format!("matches a dangerous rule for `{}`", file.command)),
        })
    }
}

impl Gate {
    /// The built-in class plus `extra` rules from config, each list with
    /// the file it came from (for messages).
    pub fn new(extra: &[(String, Vec<ExtraFile>)]) -> Result<Self, String> {
        let file: ClassFile = json5::from_str(BUILT_IN)
            .map_err(|e| format!("policy/dangerous.jsonc is broken: {e}"))?;
        let rules = file
            .rules
            .iter()
            .map(|rule| Rule::from_file(rule, "policy/dangerous.jsonc"))
            .collect::<Result<_, _>>()?;
        let interpreters = file
            .interpreters
            .0
            .iter()
            .map(|(name, regex)| Ok((name.clone(), compile(regex, "interpreters")?)))
            .collect::<Result<_, String>>()?;
        let extra = extra
            .iter()
            .flat_map(|(origin, entries)| {
                entries.iter().enumerate().map(move |(index, entry)| {
                    let what = format!("{origin} dangerous.extra[{index}]");
                    match entry {
                        ExtraFile::Pattern(pattern) if pattern.trim().is_empty() => {
                            Err(format!("{what} must not be empty"))
                        }
                        ExtraFile::Pattern(pattern) => Ok(Extra::Pattern(pattern.clone())),
                        ExtraFile::Rule(rule) => Rule::from_file(rule, &what).map(Extra::Rule),
                    }
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            commands: file.commands.0,
            rules,
            interpreters,
            awk: compile(&file.awk, "awk")?,
            code_variables: file.code_variables,
            git_config: compile(&file.git_config, "git_config")?,
            extra,
        })
    }

    /// Reads `command` as bash would run it in `cwd`.
    pub fn check(&self, command: &str, cwd: &Path, home: Option<&str>) -> Verdict {
        let mut check = Check {
            gate: self,
            home,
            cwd: Cwd {
                dirs: vec![cwd.to_path_buf()],
                unknown: false,
            },
            verdict: Verdict::default(),
            count: 0,
        };
        check.script(command, 0);
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
    cwd: Cwd,
    verdict: Verdict,
    count: usize,
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

/// Option grammar of a wrapper.
struct Options<'a> {
    /// Short options without a value.
    flags: &'a str,
    /// Short options with a value (attached or next word).
    values: &'a str,
    /// Long options without a value.
    long_flags: &'a [&'a str],
    /// Long options with a value (`--x=v` or `--x v`).
    long_values: &'a [&'a str],
    /// `-N` (a number) is an option (nice).
    numeric: bool,
    /// Short options whose value, if any, is attached (`xargs -i{}`).
    optional: &'a str,
}

impl Options<'static> {
    const NONE: Self = Self {
        flags: "",
        values: "",
        long_flags: &[],
        long_values: &[],
        numeric: false,
        optional: "",
    };
}

/// Commands that run the rest of their words as a command: their option
/// grammar, and how many operands (a duration, a CPU mask, a directory)
/// come before the command.
#[expect(clippy::too_many_lines, reason = "one table entry per wrapper")]
fn wrapper_grammar(name: &str) -> Option<(Options<'static>, usize)> {
    let none = Options::NONE;
    let grammar = match name {
        "sudo" => (
            Options {
                flags: "AbEHiKklnPSsv",
                values: "CDghpRTUu",
                long_flags: &[
                    "askpass",
                    "background",
                    "preserve-env",
                    "set-home",
                    "login",
                    "non-interactive",
                    "stdin",
                    "shell",
                    "reset-timestamp",
                ],
                long_values: &[
                    "close-from",
                    "chdir",
                    "group",
                    "host",
                    "prompt",
                    "chroot",
                    "command-timeout",
                    "other-user",
                    "user",
                    "preserve-env",
                ],
                numeric: false,
                optional: "",
            },
            0,
        ),
        "doas" => (
            Options {
                flags: "ns",
                values: "uC",
                ..none
            },
            0,
        ),
        "pkexec" => (
            Options {
                long_flags: &["disable-internal-agent", "keep-cwd"],
                long_values: &["user"],
                ..none
            },
            0,
        ),
        "timeout" => (
            Options {
                flags: "v",
                values: "sk",
                long_flags: &["preserve-status", "foreground", "verbose"],
                long_values: &["signal", "kill-after"],
                numeric: false,
                optional: "",
            },
            1,
        ),
        "nice" => (
            Options {
                values: "n",
                long_values: &["adjustment"],
                numeric: true,
                ..none
            },
            0,
        ),
        "setsid" => (
            Options {
                flags: "cfw",
                long_flags: &["ctty", "fork", "wait"],
                ..none
            },
            0,
        ),
        "stdbuf" => (
            Options {
                values: "ioe",
                long_values: &["input", "output", "error"],
                ..none
            },
            0,
        ),
        "ionice" => (
            Options {
                flags: "t",
                values: "cn",
                long_flags: &["ignore"],
                long_values: &["class", "classdata"],
                numeric: false,
                optional: "",
            },
            0,
        ),
        "taskset" => (
            Options {
                flags: "ac",
                long_flags: &["all-tasks", "cpu-list"],
                ..none
            },
            1,
        ),
        "time" => (
            Options {
                flags: "pqv",
                values: "f",
                long_flags: &["portability", "quiet", "verbose"],
                long_values: &["format"],
                numeric: false,
                optional: "",
            },
            0,
        ),
        "chroot" => (
            Options {
                long_flags: &["skip-chdir"],
                long_values: &["userspec", "groups"],
                ..none
            },
            1,
        ),
        "exec" => (
            Options {
                flags: "cl",
                values: "a",
                ..none
            },
            0,
        ),
        _ => return None,
    };
    Some(grammar)
}

/// Where options end, or the option that is not understood.
fn skip_options(args: &[Arg], options: &Options<'_>) -> Result<usize, String> {
    let mut index = 0;
    while index < args.len() {
        let Some(text) = args[index].known() else {
            return Err(args[index].text.clone());
        };
        if text == "--" {
            return Ok(index + 1);
        }
        if !text.starts_with('-') || text == "-" {
            return Ok(index);
        }
        if let Some(long) = text.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            if options.long_flags.contains(&name) && !long.contains('=') {
                index += 1;
            } else if options.long_values.contains(&name) {
                index += if long.contains('=') { 1 } else { 2 };
            } else {
                return Err(text.to_owned());
            }
            continue;
        }
        if options.numeric && text[1..].bytes().all(|b| b.is_ascii_digit()) {
            index += 1;
            continue;
        }
        let cluster = &text[1..];
        let mut consumed = 1;
        for (at, c) in cluster.char_indices() {
            if options.flags.contains(c) {
                continue;
            }
            if options.values.contains(c) {
                if at + c.len_utf8() == cluster.len() {
                    consumed = 2;
                }
                break;
            }
            if options.optional.contains(c) {
                break;
            }
            return Err(text.to_owned());
        }
        index += consumed;
    }
    Ok(index)
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
            }
        }
    }

    fn assignment(&mut self, assignment: &Assignment) {
        let name = assignment.name.as_str();
        if self.gate.code_variables.iter().any(|v| v == name) {
            self.danger(
                &format!("{name}={}", assignment.value.text),
                format!("sets {name}, which changes what programs run"),
            );
        }
    }

    fn redirect(&mut self, redirect: &shell::Redirect) {
        let shown = format!("{} {}", redirect.operator, redirect.target.text);
        if redirect.kind == RedirectKind::Other {
            return;
        }
        let Some(target) = redirect.target.known() else {
            self.danger(&shown, "writes to a file named only at run time");
            return;
        };
        if is_stream(target) {
            return;
        }
        let paths = self.resolve(target);
        let overwrites = matches!(
            redirect.kind,
            RedirectKind::Overwrite | RedirectKind::Clobber
        );
        if overwrites {
            self.target_must_be_new(&shown, target, &paths, "overwrites an existing file");
        }
        self.verdict.writes.push(Write {
            target: target.to_owned(),
            paths,
        });
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
        if name.is_empty() {
            self.danger(&text, "the command name is empty");
            return;
        }
        self.class_rules(&name, &argv[1..], &text);
        self.special(&name, &argv[1..], &text, depth);
    }

    /// Rules from `policy/dangerous.jsonc` and `dangerous.extra`.
    fn class_rules(&mut self, name: &str, args: &[Arg], text: &str) {
        let gate = self.gate;
        for (pattern, why) in &gate.commands {
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
        for rule in &gate.rules {
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
        for (pattern, inline) in &gate.interpreters {
            if wildcard::matches(pattern, name) {
                self.interpreter(name, &args, inline, text);
            }
        }
        if matches!(name, "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk") {
            if args.iter().any(|arg| arg.dynamic) {
                self.danger(text, "an awk program known only at run time");
            } else if args.iter().any(|arg| gate.awk.is_match(&arg.text)) {
                self.danger(text, "the awk program runs commands or writes files");
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

    fn interpreter(&mut self, name: &str, args: &[Arg], inline: &Regex, text: &str) {
        if args
            .iter()
            .any(|arg| arg.dynamic && arg.text.starts_with('-'))
        {
            self.danger(text, format!("`{name}` options known only at run time"));
            return;
        }
        if args
            .iter()
            .any(|arg| inline.is_match(&arg.text) && arg.text.starts_with('-'))
            || (name == "deno" && args.first().is_some_and(|arg| inline.is_match(&arg.text)))
        {
            self.danger(text, format!("`{name}` runs inline code"));
            return;
        }
        let informational = args.iter().all(|arg| {
            matches!(
                arg.text.as_str(),
                "--version" | "-V" | "-v" | "--help" | "-h" | "-VV"
            )
        }) && !args.is_empty();
        // Options that take the next word as their value.
        let valued: &[&str] = match name {
            n if n.starts_with("python") || n.starts_with("pypy") => {
                &["-W", "-X", "--check-hash-based-pycs"]
            }
            "node" | "nodejs" => &["-r", "--require", "--import", "--loader"],
            _ => &[],
        };
        let mut index = 0;
        let mut has_program = false;
        while index < args.len() {
            let text = args[index].text.as_str();
            if text == "-" {
                break;
            }
            if text == "-m" || text.starts_with("-m") && name.starts_with("py") {
                has_program = true; // a module
                break;
            }
            if !text.starts_with('-') {
                has_program = true;
                break;
            }
            index += if valued.contains(&text) { 2 } else { 1 };
        }
        if !has_program && !informational {
            self.danger(
                text,
                format!("`{name}` would read its program from standard input"),
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
                        || self.gate.git_config.is_match(&value.to_ascii_lowercase())
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

    /// Wrappers, code strings, `cd`, and commands that write named files.
    fn special(&mut self, name: &str, args: &[Arg], text: &str, depth: usize) {
        if let Some((options, positional)) = wrapper_grammar(name) {
            self.wrapper_after(args, &options, positional, text, depth);
            return;
        }
        match name {
            "cd" | "pushd" | "popd" => self.change_directory(name, args),
            "env" => self.env(args, text, depth),
            "nohup" | "builtin" | "busybox" | "toybox" => self.argv(args, depth),
            "command" => {
                let lookup = args
                    .iter()
                    .take_while(|a| a.text.starts_with('-'))
                    .any(|a| a.text.contains('v') || a.text.contains('V'));
                if !lookup {
                    let options = Options {
                        flags: "p",
                        ..Options::NONE
                    };
                    self.wrapper_after(args, &options, 0, text, depth);
                }
            }
            "xargs" => self.xargs(args, text, depth),
            "find" => self.find(args, depth),
            "watch" => self.watch(args, text, depth),
            "flock" => self.flock(args, text, depth),
            "eval" => self.code(args, text, depth),
            "trap" => {
                // `trap [-lp] [--] CODE SIGNAL...`: the first operand is code.
                let code = args
                    .iter()
                    .skip_while(|a| a.text.starts_with('-') && a.text != "--" && !a.dynamic)
                    .find(|a| a.text != "--");
                if let Some(code) = code {
                    self.code(std::slice::from_ref(code), text, depth);
                }
            }
            "mapfile" | "readarray" => self.callback(args, text, depth),
            "source" | "." if args.first().is_none_or(|arg| arg.dynamic) => {
                self.danger(text, "sources a file named only at run time");
            }
            "su" | "runuser" => self.su(args, text, depth),
            "ssh" => self.ssh(args, text, depth),
            "tee" => self.tee(args, text),
            "cp" | "install" => self.copy(name, args, text),
            "ln" if args.iter().any(|a| {
                a.text == "--force"
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.contains('f'))
            }) =>
            {
                self.copy(name, args, text);
            }
            _ if SHELLS.contains(&name) => self.shell(name, args, text, depth),
            _ => {}
        }
    }

    /// A wrapper with `positional` operands (a duration, a mask, a
    /// directory) between its options and the command.
    fn wrapper_after(
        &mut self,
        args: &[Arg],
        options: &Options<'_>,
        positional: usize,
        text: &str,
        depth: usize,
    ) {
        match skip_options(args, options) {
            Ok(start) => {
                let start = (start + positional).min(args.len());
                self.argv(&args[start..], depth);
            }
            Err(option) => self.danger(
                text,
                format!("unknown wrapper option `{option}`: cannot tell what it runs"),
            ),
        }
    }

    fn env(&mut self, args: &[Arg], text: &str, depth: usize) {
        if args.iter().any(|a| {
            a.text == "-S"
                || a.text.starts_with("--split-string")
                || (a.text.starts_with("-S") && !a.text.starts_with("--"))
        }) {
            self.danger(
                text,
                "env -S splits a string into a command offcode does not check",
            );
            return;
        }
        let options = Options {
            flags: "i0v",
            values: "uC",
            long_flags: &["ignore-environment", "null", "debug"],
            long_values: &["unset", "chdir"],
            numeric: false,
            optional: "",
        };
        let mut index = match skip_options(args, &options) {
            Ok(index) => index,
            Err(option) => {
                self.danger(
                    text,
                    format!("unknown env option `{option}`: cannot tell what it runs"),
                );
                return;
            }
        };
        while let Some(arg) = args.get(index) {
            match arg.text.split_once('=') {
                Some((name, value))
                    if !name.is_empty() && !name.contains('/') && !arg.text.starts_with('-') =>
                {
                    self.assignment(&Assignment {
                        name: name.to_owned(),
                        value: Arg {
                            text: value.to_owned(),
                            dynamic: arg.dynamic,
                        },
                    });
                    index += 1;
                }
                _ => break,
            }
        }
        self.argv(&args[index..], depth);
    }

    fn shell(&mut self, name: &str, args: &[Arg], text: &str, depth: usize) {
        let mut code = false;
        let mut index = 0;
        while index < args.len() {
            let arg = &args[index];
            let Some(word) = arg.known() else {
                if code {
                    break; // the code string itself: checked below
                }
                self.danger(text, format!("`{name}` options known only at run time"));
                return;
            };
            if word == "--" || word == "-" {
                index += 1;
                break;
            }
            if let Some(long) = word.strip_prefix("--") {
                index += if matches!(long, "rcfile" | "init-file") {
                    2
                } else {
                    1
                };
                continue;
            }
            if (word.starts_with('-') || word.starts_with('+')) && word.len() > 1 {
                let cluster = &word[1..];
                if cluster.contains('s') {
                    self.danger(
                        text,
                        format!("`{name} -s` reads commands from standard input"),
                    );
                    return;
                }
                code |= cluster.contains('c');
                index += if cluster.contains('o') || cluster.contains('O') {
                    2
                } else {
                    1
                };
                continue;
            }
            break;
        }
        match (code, args.get(index)) {
            (true, Some(source)) => self.code(std::slice::from_ref(source), text, depth),
            (true, None) => self.danger(text, format!("`{name} -c` without a command")),
            (false, Some(_)) => {} // a script file: its contents are not checked
            (false, None) => self.danger(
                text,
                format!("`{name}` would read commands from standard input"),
            ),
        }
    }

    /// Checks words joined by spaces as a new command line.
    fn code(&mut self, words: &[Arg], text: &str, depth: usize) {
        if words.iter().any(|w| w.dynamic) {
            self.danger(text, "runs code known only at run time");
            return;
        }
        let source = text_of(words);
        let saved = self.cwd.clone();
        self.script(&source, depth + 1);
        // A `cd` inside the code string may have moved the outer line too
        // (`eval cd /x`): keep both.
        let inner = std::mem::replace(&mut self.cwd, saved);
        self.cwd.unknown |= inner.unknown;
        for dir in inner.dirs {
            if !self.cwd.dirs.contains(&dir) {
                self.cwd.dirs.push(dir);
            }
        }
    }

    /// `mapfile -C CODE`: the callback is run as code.
    fn callback(&mut self, args: &[Arg], text: &str, depth: usize) {
        for (index, arg) in args.iter().enumerate() {
            if arg.dynamic && arg.text.starts_with('-') {
                self.danger(text, "an option known only at run time");
            } else if let Some(attached) = arg.text.strip_prefix("-C") {
                let code = if attached.is_empty() {
                    args.get(index + 1).cloned()
                } else {
                    Some(Arg {
                        text: attached.to_owned(),
                        dynamic: arg.dynamic,
                    })
                };
                match code {
                    Some(code) => self.code(std::slice::from_ref(&code), text, depth),
                    None => self.danger(text, "-C without its callback"),
                }
            }
        }
    }

    fn change_directory(&mut self, name: &str, args: &[Arg]) {
        let operands: Vec<&Arg> = args
            .iter()
            .filter(|a| !(a.known().is_some_and(|t| t.starts_with('-') && t.len() > 1)))
            .collect();
        let target = match (name, operands.first()) {
            ("popd", _) => None,
            (_, None) => self.home.map(str::to_owned),
            (_, Some(arg)) => arg.known().filter(|t| *t != "-").map(str::to_owned),
        };
        match target {
            Some(target) => {
                let fresh: Vec<PathBuf> = self.resolve(&target);
                for dir in fresh {
                    if !self.cwd.dirs.contains(&dir) {
                        self.cwd.dirs.push(dir);
                    }
                }
            }
            None => self.cwd.unknown = true,
        }
    }

    fn xargs(&mut self, args: &[Arg], text: &str, depth: usize) {
        let options = Options {
            flags: "0oprtx",
            values: "adEILnPs",
            long_flags: &[
                "null",
                "open-tty",
                "interactive",
                "no-run-if-empty",
                "verbose",
                "exit",
                "show-limits",
                "replace",
                "max-lines",
            ],
            long_values: &[
                "arg-file",
                "delimiter",
                "eof",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
                "replace",
                "max-lines",
            ],
            numeric: false,
            optional: "eil",
        };
        let start = match skip_options(args, &options) {
            Ok(start) => start,
            Err(option) => {
                self.danger(
                    text,
                    format!("unknown xargs option `{option}`: cannot tell what it runs"),
                );
                return;
            }
        };
        let mut inner: Vec<Arg> = args[start..].to_vec();
        if inner.is_empty() {
            inner.push(Arg::literal("echo"));
        }
        // The arguments read from standard input.
        inner.push(Arg {
            text: "<input>".to_owned(),
            dynamic: true,
        });
        self.argv(&inner, depth);
    }

    fn find(&mut self, args: &[Arg], depth: usize) {
        let mut index = 0;
        while index < args.len() {
            if matches!(
                args[index].text.as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir"
            ) {
                let start = index + 1;
                let mut end = start;
                while end < args.len() && !matches!(args[end].text.as_str(), ";" | "+") {
                    end += 1;
                }
                let inner: Vec<Arg> = args[start..end]
                    .iter()
                    .map(|arg| {
                        if arg.text.contains("{}") {
                            Arg {
                                text: arg.text.clone(),
                                dynamic: true,
                            }
                        } else {
                            arg.clone()
                        }
                    })
                    .collect();
                self.argv(&inner, depth);
                index = end + 1;
            } else {
                index += 1;
            }
        }
    }

    fn watch(&mut self, args: &[Arg], text: &str, depth: usize) {
        let options = Options {
            flags: "bcCdegprtwx",
            values: "nq",
            long_flags: &[
                "beep",
                "color",
                "no-color",
                "differences",
                "errexit",
                "chgexit",
                "precise",
                "no-rerun",
                "no-title",
                "no-wrap",
                "exec",
            ],
            long_values: &["interval", "equexit"],
            numeric: false,
            optional: "",
        };
        match skip_options(args, &options) {
            Ok(start) => {
                let exec = args[..start].iter().any(|a| {
                    a.text == "--exec"
                        || (a.text.starts_with('-')
                            && !a.text.starts_with("--")
                            && a.text.contains('x'))
                });
                if exec {
                    self.argv(&args[start..], depth);
                } else if start < args.len() {
                    self.code(&args[start..], text, depth);
                }
            }
            Err(option) => self.danger(
                text,
                format!("unknown watch option `{option}`: cannot tell what it runs"),
            ),
        }
    }

    fn flock(&mut self, args: &[Arg], text: &str, depth: usize) {
        if let Some(at) = args
            .iter()
            .position(|a| a.text == "-c" || a.text == "--command")
        {
            match args.get(at + 1) {
                Some(code) => self.code(std::slice::from_ref(code), text, depth),
                None => self.danger(text, "flock -c without a command"),
            }
            return;
        }
        let options = Options {
            flags: "snxuoFe",
            values: "wE",
            long_flags: &[
                "shared",
                "nonblock",
                "exclusive",
                "unlock",
                "close",
                "no-fork",
                "verbose",
            ],
            long_values: &["timeout", "conflict-exit-code"],
            numeric: false,
            optional: "",
        };
        self.wrapper_after(args, &options, 1, text, depth);
    }

    fn su(&mut self, args: &[Arg], text: &str, depth: usize) {
        let code = args.iter().position(|a| {
            a.text == "-c" || a.text == "--command" || a.text.starts_with("--command=")
        });
        match code {
            Some(at) if args[at].text.starts_with("--command=") => {
                let value = Arg {
                    text: args[at].text["--command=".len()..].to_owned(),
                    dynamic: args[at].dynamic,
                };
                self.code(std::slice::from_ref(&value), text, depth);
            }
            Some(at) => match args.get(at + 1) {
                Some(code) => self.code(std::slice::from_ref(code), text, depth),
                None => self.danger(text, "su -c without a command"),
            },
            None => self.danger(text, "starts a shell as another user"),
        }
    }

    fn ssh(&mut self, args: &[Arg], text: &str, depth: usize) {
        let options = Options {
            flags: "46AaCfGgKkMNnqsTtVvXxYy",
            values: "BbcDEeFIiJLlmOoPpQRSWw",
            long_flags: &[],
            long_values: &[],
            numeric: false,
            optional: "",
        };
        match skip_options(args, &options) {
            Ok(host) if host + 1 < args.len() => self.code(&args[host + 1..], text, depth),
            Ok(_) => self.danger(
                text,
                "a remote shell that reads commands from standard input",
            ),
            Err(option) => self.danger(
                text,
                format!("unknown ssh option `{option}`: cannot tell what it runs"),
            ),
        }
    }

    fn tee(&mut self, args: &[Arg], text: &str) {
        if args.iter().any(|a| {
            a.text == "--append"
                || (a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('a'))
        }) {
            return;
        }
        for arg in args
            .iter()
            .filter(|a| !a.text.starts_with('-') || a.text == "-")
        {
            self.file_target(arg, text, "tee overwrites an existing file");
        }
    }

    fn file_target(&mut self, arg: &Arg, text: &str, why: &str) {
        match arg.known() {
            None => self.danger(text, "writes to a file named only at run time"),
            Some(target) if is_stream(target) => {}
            Some(target) => {
                let paths = self.resolve(target);
                self.target_must_be_new(text, target, &paths, why);
            }
        }
    }

    /// `cp`, `install`, `ln -f`: the destination must not exist (or, for a
    /// directory, hold none of the sources' names).
    fn copy(&mut self, name: &str, args: &[Arg], text: &str) {
        let mut operands = Vec::new();
        let mut directory: Option<&Arg> = None;
        let mut index = 0;
        let mut options_end = false;
        while index < args.len() {
            let arg = &args[index];
            if !options_end && arg.text == "--" {
                options_end = true;
            } else if !options_end && (arg.text == "-t" || arg.text == "--target-directory") {
                directory = args.get(index + 1);
                index += 1;
            } else if !options_end && arg.text.starts_with("--target-directory=") {
                return self.danger(
                    text,
                    format!("{name} into a directory given as an option value"),
                );
            } else if !options_end
                && arg.text.starts_with('-')
                && arg.text.len() > 1
                && !arg.dynamic
            {
                // option; `-S SUFFIX`, `-m MODE`, `-o OWNER`, `-g GROUP` take a value
                if matches!(arg.text.as_str(), "-S" | "-m" | "-o" | "-g") {
                    index += 1;
                }
            } else {
                operands.push(arg);
            }
            index += 1;
        }
        let (destination, sources): (&Arg, Vec<&Arg>) = match directory {
            Some(dir) => (dir, operands),
            None => match operands.split_last() {
                Some((last, rest)) if !rest.is_empty() => (last, rest.to_vec()),
                _ => return,
            },
        };
        let why = format!("{name} replaces an existing file");
        let Some(target) = destination.known() else {
            return self.danger(text, "writes to a file named only at run time");
        };
        if is_stream(target) {
            return;
        }
        let paths = self.resolve(target);
        if paths.iter().any(|p| p.is_dir()) {
            for source in sources {
                let Some(source) = source.known() else {
                    return self.danger(
                        text,
                        "copies a file named only at run time into a directory",
                    );
                };
                let leaf = basename(source.trim_end_matches('/')).to_owned();
                let inside: Vec<PathBuf> = paths.iter().map(|p| p.join(&leaf)).collect();
                self.target_must_be_new(text, target, &inside, &why);
            }
        } else {
            self.target_must_be_new(text, target, &paths, &why);
        }
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
/// `path` as the kernel would reach it: `.` and `..` applied in order and
/// every symlink along the existing part followed (a final dangling
/// symlink is kept as it is, so it still counts as existing).
fn real_path(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
        }
    }
    out
}

fn exists_as_file(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Ok(meta) => !meta.file_type().is_char_device(),
        Err(_) => std::fs::symlink_metadata(path).is_ok(),
    }
}
