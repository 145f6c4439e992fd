//! The dangerous class as data: the built-in `policy/dangerous.jsonc` and
//! the `dangerous.extra` rules config adds; the built-in part read once per
//! process, when the first command is judged.

use regex::Regex;
use serde::Deserialize;

/// The built-in class (`policy/dangerous.jsonc`) and the rules config adds.
#[derive(Debug)]
pub struct Gate {
    pub(super) extra: Vec<Extra>,
    pub(super) table: super::table::Table,
}

/// The built-in class, read and compiled once per process, the first time
/// a command is judged (not on the way to the first request).
#[derive(Debug)]
pub(super) struct BuiltIn {
    pub(super) commands: Vec<(String, String)>,
    pub(super) rules: Vec<Rule>,
    pub(super) code_variables: Vec<String>,
    pub(super) git_config: Regex,
}

impl BuiltIn {
    fn read() -> Result<Self, String> {
        let file: ClassFile = json5::from_str(BUILT_IN)
            .map_err(|e| format!("policy/dangerous.jsonc is broken: {e}"))?;
        let rules = file
            .rules
            .iter()
            .map(|rule| Rule::from_file(rule, "policy/dangerous.jsonc"))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            commands: file.commands.0,
            rules,
            code_variables: file.code_variables,
            git_config: compile(&file.git_config, "git_config")?,
        })
    }
}

impl Gate {
    /// The built-in class. Should it not read (a test keeps it readable),
    /// every program is dangerous, with the reason: the gate fails closed.
    pub(super) fn class() -> &'static BuiltIn {
        static CLASS: std::sync::LazyLock<BuiltIn> = std::sync::LazyLock::new(|| {
            BuiltIn::read().unwrap_or_else(|error| BuiltIn {
                commands: vec![("*".to_owned(), format!("cannot be judged: {error}"))],
                rules: Vec::new(),
                code_variables: Vec::new(),
                git_config: Regex::new(".").unwrap_or_else(|_| unreachable!()),
            })
        });
        &CLASS
    }
}

#[derive(Debug)]
pub(super) struct Rule {
    pub(super) command: String,
    pub(super) arg: Option<Regex>,
    pub(super) args: Option<Regex>,
    pub(super) why: String,
}

/// A rule from `dangerous.extra`.
#[derive(Debug)]
pub(super) enum Extra {
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

const BUILT_IN: &str = include_str!("../../../policy/dangerous.jsonc");

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
    /// the file it came from (for messages), and the table of understood
    /// programs with the `commands` a person vouched for.
    pub fn new(
        extra: &[(String, Vec<ExtraFile>)],
        commands: &[(String, serde_json::Value)],
    ) -> Result<Self, String> {
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
            extra,
            table: super::table::Table::load(commands)?,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_built_in_class_reads() {
        // Read lazily and failing closed, a broken file would make every
        // command ask; this says so at once instead.
        let class = super::BuiltIn::read().unwrap();
        assert!(class.rules.len() > 10 && !class.commands.is_empty());
    }
}
