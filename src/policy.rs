//! The permission engine: which tool calls run, which ask, which are
//! refused, and why.
//!
//! Rules are `OpenCode`'s `permission` syntax, laid in layers (the built-in
//! `policy/default.jsonc`, then each config file in precedence order, then
//! rules the user allowed for the session); the last matching rule wins. A
//! `bash` call is split by the [`gate`] into simple commands, each matched
//! on its own: all must allow for the call to run without asking, and any
//! deny denies. Output redirects are also matched as `edit` (inside the
//! root) or `external_directory` (outside). The managed policy file is
//! applied last and can only make a decision stricter, and a command in the
//! dangerous class always asks (allow once / deny) unless a rule denies it.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod file;
pub mod gate;
mod protected;
mod rule;
pub mod shell;
mod show;
mod source;
mod spelling;
mod subjects;
pub mod wildcard;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::protocol::Mandate;

pub use file::{DangerousValue, Error, PermissionValue, rules_from};
pub use gate::{Danger, ExtraFile, Gate};
pub use rule::{Action, Rule, Source};
pub use show::ShownRule;
pub use source::{Loader, PolicySource};
use subjects::{patch_paths, session_pattern};

/// The built-in default permissions.
const DEFAULT: &str = include_str!("../policy/default.jsonc");
/// Where the managed policy lives. It always applies; `OFFCODE_MANAGED_POLICY`
/// may name one more file, never replace this one.
pub const MANAGED_PATH: &str = "/etc/offcode/policy.jsonc";

/// One config layer's policy keys.
#[derive(Debug, Clone)]
pub struct Layer {
    /// The file it came from.
    pub path: PathBuf,
    /// Its `permission` value.
    pub permission: Option<Value>,
    /// Its `dangerous.extra` entries.
    pub dangerous_extra: Vec<ExtraFile>,
    /// Programs a person vouches for (`commands`; never from a project).
    pub commands: Option<Value>,
    /// A project's file the user has not trusted: its rules only tighten.
    pub untrusted: bool,
}

/// An agent profile's rules, laid over the config files' (and, for what a
/// project defined, applied only where stricter).
#[derive(Debug, Clone, Default)]
pub struct AgentRules {
    rules: Vec<Rule>,
    only_tighten: Vec<Rule>,
}

impl AgentRules {
    /// The rules of the agent `name` defined at `origin`: its
    /// `permission`, and what a project added to it (`only_tighten`).
    pub fn new(
        name: &str,
        origin: &str,
        permission: Option<&Value>,
        only_tighten: Option<&Value>,
    ) -> Result<Self, Error> {
        let source = Source::Agent {
            name: name.to_owned(),
            origin: origin.to_owned(),
        };
        let rules = |value: Option<&Value>| -> Result<Vec<Rule>, Error> {
            value.map_or(Ok(Vec::new()), |value| {
                rules_from(value, &source).map_err(|e| Error::Rule(format!("{source}: {e}")))
            })
        };
        Ok(Self {
            rules: rules(permission)?,
            only_tighten: rules(only_tighten)?,
        })
    }
}

/// The permission key a bash line also answers to when the gate judges
/// that it only reads (nothing dangerous, nothing of the project's run,
/// nothing written): `"read_only_bash": "allow"` runs such lines.
pub const READ_ONLY_BASH: &str = "read_only_bash";

/// The effective policy for one workspace.
#[derive(Debug)]
pub struct Policy {
    rules: Vec<Rule>,
    managed: Vec<Rule>,
    managed_files: Vec<PathBuf>,
    /// Rules of project files not trusted yet: they apply only where they
    /// are stricter than the rest.
    untrusted: Vec<Rule>,
    gate: Gate,
    /// What the config and managed files add to the gate, as
    /// `offcode policy show` lists it: (where, what).
    additions: Vec<(String, String)>,
    root: PathBuf,
    home: Option<String>,
    /// offcode's own config, data and state ([`Policy::with_own_files`]).
    own_files: Vec<PathBuf>,
    /// Files the workspace's repository includes into its config, and what
    /// the person's files lead to inside the workspace: found the first
    /// time a write is judged ([`Policy::is_own_config`]), not at load.
    linked: std::sync::OnceLock<protected::Linked>,
    /// How shell commands run in this session.
    shell: crate::confine::Status,
}

/// How one subject of a call was judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subject {
    /// The permission key it was matched under.
    pub permission: String,
    /// What was matched: a simple command, a path, a pattern.
    pub value: String,
    /// The outcome for this subject.
    pub action: Action,
    /// The rule that decided, as a person reads it.
    pub rule: String,
    /// Where that rule was written.
    #[serde(skip)]
    pub source: Source,
}

/// The policy's answer for one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Allow, ask or deny.
    pub action: Action,
    /// Whether the call is in the dangerous class.
    pub dangerous: bool,
    /// Why it is dangerous.
    pub dangers: Vec<Danger>,
    /// Each subject matched, in order.
    pub subjects: Vec<Subject>,
    /// The rule (or dangerous reason) that decided.
    pub rule: String,
    /// Where the deciding rule was written.
    #[serde(skip)]
    pub source: Source,
    /// Who demands a person's answer whatever `--yes` or a session
    /// approval say; on the wire `managed: true` and `mandate`.
    #[serde(flatten, with = "crate::protocol::managed_wire")]
    pub mandate: Option<Mandate>,
    /// An approved run may overwrite existing files through `>`: run it
    /// without noclobber.
    pub clobbers: bool,
    /// Why a bash line that is not dangerous is not plain either: it runs
    /// the project's code, or takes options offcode does not check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// How the command would run (bash only): confined and what it may
    /// write, or unconfined and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// A person is asked to lift the confinement for this one command.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unconfined: bool,
    /// Rules "allow for this session" would add; empty when not offered.
    #[serde(skip)]
    pub session_rules: Vec<Rule>,
}

impl Policy {
    /// Builds the policy: the built-in default, then `layers` in order,
    /// then the managed file (when it exists).
    pub fn load(
        layers: &[Layer],
        managed_paths: &[PathBuf],
        root: &Path,
        home: Option<&str>,
    ) -> Result<Self, Error> {
        let default: Value = json5::from_str(DEFAULT)
            .map_err(|e| Error::Rule(format!("policy/default.jsonc is broken: {e}")))?;
        let mut rules = rules_from(&default["permission"], &Source::BuiltIn)
            .map_err(|e| Error::Rule(format!("{}: {e}", Source::BuiltIn)))?;
        let mut extra = Vec::new();
        let mut commands = Vec::new();
        let mut untrusted = Vec::new();
        for layer in layers {
            let source = Source::Config(layer.path.clone());
            let origin = source.to_string();
            if let Some(permission) = &layer.permission {
                let layer_rules = rules_from(permission, &source)
                    .map_err(|e| Error::Rule(format!("{origin}: {e}")))?;
                if layer.untrusted {
                    untrusted.extend(layer_rules);
                } else {
                    rules.extend(layer_rules);
                }
            }
            if let Some(table) = &layer.commands {
                commands.push((origin.clone(), table.clone()));
            }
            extra.push((origin, layer.dangerous_extra.clone()));
        }
        let mut managed = Vec::new();
        let mut managed_files = Vec::new();
        for path in managed_paths {
            if let Some(file) = file::read_managed(path)? {
                let origin = Source::Managed(path.clone()).to_string();
                if let Some(table) = file.commands {
                    commands.push((origin.clone(), table));
                }
                extra.push((origin, file.extra));
                managed.extend(file.rules);
                managed_files.push(path.clone());
            }
        }
        let gate = Gate::new(&extra, &commands).map_err(Error::Rule)?;
        let additions = show::additions(&extra, &commands);
        Ok(Self {
            additions,
            rules,
            managed,
            managed_files,
            untrusted,
            gate,
            // As the gate resolves paths, so prefixes compare.
            root: gate::real_path(root),
            home: home.map(str::to_owned),
            own_files: Vec::new(),
            linked: std::sync::OnceLock::new(),
            shell: crate::confine::Status::Off,
        })
    }

    /// What the config and managed files add to the gate (dangerous
    /// patterns and rules, understood programs), with where each was
    /// written.
    pub fn additions(&self) -> &[(String, String)] {
        &self.additions
    }

    /// Sets how shell commands run, which decides when bash must ask
    /// because commands would run unconfined.
    #[must_use]
    pub fn with_shell(mut self, shell: crate::confine::Status) -> Self {
        self.shell = shell;
        self
    }

    /// How shell commands run.
    pub fn shell(&self) -> &crate::confine::Status {
        &self.shell
    }

    /// The managed files in force: the system's first when it exists.
    pub fn managed_files(&self) -> &[PathBuf] {
        &self.managed_files
    }

    /// The gate's reading of a command line.
    pub fn gate(&self, command: &str) -> gate::Verdict {
        self.gate.check(command, &self.root, self.home.as_deref())
    }

    /// Decides on a call of `tool` with `arguments`; `session` holds rules
    /// the user allowed for this session.
    pub fn decide(&self, tool: &str, arguments: &Value, session: &[Rule]) -> Decision {
        self.decide_as(tool, arguments, &AgentRules::default(), session)
    }

    /// Decides as [`Policy::decide`], with an agent profile's rules laid
    /// over the config files'.
    pub fn decide_as(
        &self,
        tool: &str,
        arguments: &Value,
        agent: &AgentRules,
        session: &[Rule],
    ) -> Decision {
        let found = self.subjects(tool, arguments);
        let judged: Vec<Subject> = found
            .subjects
            .iter()
            .map(|subject| self.judge(subject, agent, session))
            .collect();
        let deciding = judged
            .iter()
            .find(|s| s.action == Action::Deny)
            .or_else(|| judged.iter().find(|s| s.action == Action::Ask))
            .or_else(|| judged.last());
        let mut action = deciding.map_or(Action::Ask, |s| s.action);
        let mut rule = deciding.map_or_else(String::new, |s| s.rule.clone());
        let source = deciding.map_or(Source::Unmatched, |s| s.source.clone());
        let dangerous = !found.dangers.is_empty();
        if dangerous && action != Action::Deny {
            action = Action::Ask;
            rule = format!(
                "dangerous: {}",
                found
                    .dangers
                    .iter()
                    .map(|d| d.why.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        let mut mandate = matches!(source, Source::Managed(_)).then_some(Mandate::ManagedPolicy);
        let (confinement, unconfined) = self.confinement(tool, arguments);
        // Lifting the sandbox, or a kernel that cannot confine, makes bash
        // a question no rule, session or `--yes` answers.
        let forced = match (&self.shell, unconfined) {
            _ if tool != "bash" || action == Action::Deny => None,
            (_, true) => Some((
                Mandate::Unconfined,
                "asks to run outside the sandbox".to_owned(),
            )),
            (crate::confine::Status::Unavailable { reason }, false) => Some((
                Mandate::NoConfinement,
                format!("commands cannot be confined ({reason}), so each one asks"),
            )),
            _ => None,
        };
        if let Some((why_mandated, why)) = forced {
            action = Action::Ask;
            mandate = Some(why_mandated);
            rule = if dangerous {
                format!("{why}; {rule}")
            } else {
                why
            };
        }
        let session_rules = if action == Action::Ask && !dangerous && mandate.is_none() {
            judged
                .iter()
                .filter(|s| s.action == Action::Ask)
                .map(|s| {
                    let pattern = if s.permission == "bash" {
                        session_pattern(&s.value)
                    } else {
                        "*".to_owned()
                    };
                    Rule::for_session(s.permission.clone(), pattern)
                })
                .collect()
        } else {
            Vec::new()
        };
        Decision {
            action,
            dangerous,
            dangers: found.dangers,
            subjects: judged,
            rule,
            source,
            mandate,
            clobbers: found.clobbers,
            runs: found.runs,
            confinement,
            unconfined,
            session_rules,
        }
    }

    /// How a bash call would run, and whether it asks to run unconfined.
    fn confinement(&self, tool: &str, arguments: &Value) -> (Option<String>, bool) {
        if tool != "bash" {
            return (None, false);
        }
        let lift = arguments.get("unconfined").and_then(Value::as_bool) == Some(true)
            && matches!(self.shell, crate::confine::Status::Confined { .. });
        let how = if lift {
            "UNCONFINED for this command only, if you approve: it may write anywhere you can and reach the network".to_owned()
        } else {
            self.shell.describe()
        };
        (Some(how), lift)
    }

    /// What a call is matched on: each simple command and redirect of a
    /// command line, each path of a write, the pattern of a search.
    fn subjects(&self, tool: &str, arguments: &Value) -> Found {
        let mut found = Found::default();
        let text_arg = |name: &str| {
            arguments
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        match tool {
            "bash" => {
                let command = text_arg("command").unwrap_or_default();
                let verdict = self.gate(&command);
                // A line the gate judges to only read also answers to
                // `read_only_bash`: what the read-only agents allow.
                let keys: &[&str] = if verdict.reads_only() {
                    &["bash", READ_ONLY_BASH]
                } else {
                    &["bash"]
                };
                for simple in verdict.commands {
                    found.push(keys, simple, true);
                }
                found.runs = verdict.runs;
                for write in verdict.writes {
                    if write.paths.iter().any(|p| self.is_own_config(p)) {
                        found
                            .dangers
                            .push(protected::own_config_danger(&write.target));
                    }
                    let inside = write.paths.iter().all(|p| p.starts_with(&self.root));
                    let value = write.paths.first().map_or(write.target.clone(), |p| {
                        p.strip_prefix(&self.root)
                            .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
                    });
                    let key = if inside { "edit" } else { "external_directory" };
                    found.push(&[key], value, false);
                }
                if found.subjects.is_empty() {
                    found.push(&["bash"], command, true);
                }
                found.clobbers = verdict.clobbers;
                found.dangers.extend(verdict.dangers);
            }
            tool if crate::tools::changes_files(tool) => {
                // The file the call's subject names; a patch, which has
                // none, names its files inside.
                let paths = match crate::tools::subject_key(tool) {
                    Some(key) => vec![text_arg(key).unwrap_or_default()],
                    None => patch_paths(&text_arg("patch").unwrap_or_default()),
                };
                for path in paths {
                    if self.is_own_config(&self.root.join(&path)) {
                        found.dangers.push(protected::own_config_danger(&path));
                    }
                    for spelling in spelling::spellings(&self.root, &path) {
                        found.push(&["edit", tool], spelling, false);
                    }
                }
                if found.subjects.is_empty() {
                    found.push(&["edit", tool], String::new(), false);
                }
            }
            "read" | "list" => {
                let path = text_arg("path").unwrap_or_else(|| ".".to_owned());
                for spelling in spelling::spellings(&self.root, &path) {
                    found.push(&[tool], spelling, false);
                }
            }
            "grep" | "glob" => {
                found.push(&[tool], text_arg("pattern").unwrap_or_default(), false);
                // A search of one file reads it: `read` rules on it apply.
                if let Some(path) = text_arg("path") {
                    for spelling in spelling::spellings(&self.root, &path) {
                        found.push(&["read"], spelling, false);
                    }
                }
            }
            "skill" | "task" => found.push(
                &[tool],
                text_arg("name")
                    .or_else(|| text_arg("agent"))
                    .unwrap_or_default(),
                false,
            ),
            "doom_loop" => found.push(
                &[tool],
                arguments.as_str().unwrap_or_default().to_owned(),
                false,
            ),
            _ => found.push(&[tool], String::new(), false),
        }
        found
    }

    /// The rule that decides one subject: the last matching layered rule
    /// (a session rule may turn an ask into an allow), then the managed
    /// file when it is stricter.
    fn judge(&self, subject: &Pending, agent: &AgentRules, session: &[Rule]) -> Subject {
        let matching = |rules: &[Rule]| -> Option<Rule> {
            rules
                .iter()
                .rev()
                .find(|rule| {
                    subject
                        .keys
                        .iter()
                        .any(|key| wildcard::matches(&rule.permission, key))
                        && if subject.command {
                            wildcard::matches_command(&rule.pattern, &subject.value)
                        } else {
                            wildcard::matches(&rule.pattern, &subject.value)
                        }
                })
                .cloned()
        };
        let mut layered = matching(&agent.rules).or_else(|| matching(&self.rules));
        // What a project wrote, unless trusted, only tightens.
        for stricter in [matching(&self.untrusted), matching(&agent.only_tighten)] {
            if let Some(rule) = stricter
                && rule.action > layered.as_ref().map_or(Action::Ask, |rule| rule.action)
            {
                layered = Some(rule);
            }
        }
        let from_session = matching(session);
        let mut chosen = match (layered, from_session) {
            (Some(rule), Some(session_rule)) if rule.action == Action::Ask => session_rule,
            (Some(rule), _) | (None, Some(rule)) => rule,
            (None, None) => Rule {
                permission: "*".to_owned(),
                pattern: "*".to_owned(),
                action: Action::Ask,
                source: Source::Unmatched,
                key: String::new(),
            },
        };
        // The managed file only tightens; on a tie its rule is the one
        // reported, so the decision is known to be mandatory.
        if let Some(managed) = matching(&self.managed)
            && managed.action >= chosen.action
            && managed.action != Action::Allow
        {
            chosen = managed;
        }
        Subject {
            permission: subject.keys[0].clone(),
            value: subject.value.clone(),
            action: chosen.action,
            rule: chosen.origin(),
            source: chosen.source,
        }
    }
}

/// A subject before it is judged.
struct Pending {
    /// Permission keys it answers to (`edit` and `write` for a write).
    keys: Vec<String>,
    value: String,
    /// Matched as a command line (a trailing ` *` is optional).
    command: bool,
}

/// What a call is matched on, and what the gate found.
#[derive(Default)]
struct Found {
    subjects: Vec<Pending>,
    dangers: Vec<Danger>,
    clobbers: bool,
    runs: Vec<String>,
}

impl Found {
    fn push(&mut self, keys: &[&str], value: String, command: bool) {
        self.subjects.push(Pending {
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            value,
            command,
        });
    }
}
