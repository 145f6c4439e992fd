//! The table of understood programs (`policy/commands.jsonc`) and the
//! option parser that reads a command's words under a program's grammar,
//! the way the program's own getopt (or flag package) would.

use std::collections::BTreeMap;

use regex::Regex;

use crate::policy::shell::Arg;
use serde::Deserialize;
use serde_json::{Map, Value};

const BUILT_IN: &str = include_str!("../../../policy/commands.jsonc");

/// What a program does, as far as the gate is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Reads only.
    Read,
    /// Runs the workspace's own code (build and test tools, scripts).
    Runs,
    /// Writes the paths it names.
    Writes,
    /// Runs the rest of its words as a command; checked in code.
    Wrapper,
    /// Reaches the network: never plain.
    Network,
    /// Never plain.
    Dangerous,
}

/// One program (or subcommand, or module) and its grammar.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "one field per key of the table"
)]
pub struct Entry {
    /// What it does.
    #[serde(default)]
    pub class: Option<Class>,
    /// Why it is dangerous (for `network` and `dangerous`).
    #[serde(default)]
    pub why: Option<String>,
    /// A shell builtin: not looked up on PATH.
    #[serde(default)]
    pub builtin: bool,
    #[serde(default)]
    short: String,
    #[serde(default)]
    values: String,
    #[serde(default)]
    optional: String,
    /// Short options whose value, if any, is the digits attached (`-0777`).
    #[serde(default)]
    digits: String,
    #[serde(default)]
    numeric: bool,
    #[serde(default)]
    long: Vec<String>,
    #[serde(default)]
    exact: bool,
    #[serde(default)]
    single: bool,
    /// What options do beyond reading, by option (`-o`, `--output`).
    #[serde(default)]
    pub effects: BTreeMap<String, String>,
    /// What the operands are.
    #[serde(default)]
    pub operands: Option<String>,
    #[serde(default)]
    permute: Option<bool>,
    /// Options are not parsed.
    #[serde(default)]
    pub free: bool,
    /// With `free`: short options cluster (`-iO CMD` is `-i -O CMD`).
    #[serde(default)]
    clusters: bool,
    /// Options that make the program only print information.
    #[serde(default)]
    pub info: Vec<String>,
    #[serde(default)]
    value_pattern: BTreeMap<String, String>,
    #[serde(skip)]
    patterns: Vec<(String, Regex)>,
    /// With `free`: what every option word must look like (regular
    /// expressions over the whole word) when it names no effect; a word
    /// like none is not understood. Free grammars whose options can write
    /// files or run programs (a JVM's) list the harmless ones here.
    #[serde(default)]
    options: Vec<String>,
    #[serde(skip)]
    allowed: Vec<Regex>,
    /// Allowed subcommands.
    #[serde(default)]
    pub subcommands: BTreeMap<String, Entry>,
    /// The subcommand may be left out.
    #[serde(default)]
    pub default: bool,
    /// Modules `-m NAME` may run (python).
    #[serde(default)]
    pub modules: BTreeMap<String, Entry>,
    /// Options that make written operands appends (`tee -a`).
    #[serde(default)]
    pub append: Vec<String>,
    /// One of these options must be given (`git clean -n`).
    #[serde(default)]
    pub require_one_of: Vec<String>,
    /// Lines of this program the gate must judge plain and dangerous,
    /// checked by a test (`policy/commands.jsonc`'s own examples).
    #[serde(default)]
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the examples test"))]
    pub examples: Examples,
    /// Options whose value is a count (`make -j N`): a value known only at
    /// run time (`-j$(nproc)`) is fine for them.
    #[serde(default)]
    pub counts: Vec<String>,
    /// tar's old-style first word (`tar czf x.tgz dir`).
    #[serde(default)]
    pub tar: bool,
    /// The program's script language (`sed`, `awk`): its script is read.
    #[serde(default)]
    pub script: Option<String>,
}

/// An entry's example lines, as codex's execpolicy keeps `match` and
/// `not_match` beside each rule.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(test), expect(dead_code, reason = "read by the examples test"))]
pub struct Examples {
    /// Lines the gate must not find dangerous.
    #[serde(default)]
    pub plain: Vec<String>,
    /// Lines the gate must find dangerous.
    #[serde(default)]
    pub dangerous: Vec<String>,
}

/// The table: program name to entry.
///
/// Read lazily: the built-in table is parsed the first time a command is
/// judged (not on the way to the first request), and each program's entry
/// is resolved and its patterns compiled the first time that program is
/// looked up. Entries a config adds are checked whole when it loads, so a
/// mistake in them is reported at start, naming the entry.
#[derive(Debug, Default)]
pub struct Table {
    /// Entries from config (origin, table), later ones winning.
    extra: Vec<(String, Value)>,
    /// The merged raw table and each entry, compiled when first asked for.
    programs: std::sync::OnceLock<Programs>,
}

/// The merged table as read, and the entries compiled so far.
#[derive(Debug)]
struct Programs {
    raw: Map<String, Value>,
    /// `None` inside: the entry does not compile (a built-in one cannot:
    /// the examples test compiles them all).
    compiled: BTreeMap<String, std::sync::OnceLock<Option<Entry>>>,
}

/// The built-in table, parsed once per process.
fn built_in() -> Result<&'static Map<String, Value>, String> {
    static PARSED: std::sync::LazyLock<Result<Map<String, Value>, String>> =
        std::sync::LazyLock::new(|| match json5::from_str(BUILT_IN) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err("policy/commands.jsonc must be an object".to_owned()),
            Err(e) => Err(format!("policy/commands.jsonc is broken: {e}")),
        });
    PARSED.as_ref().map_err(Clone::clone)
}

impl Table {
    /// The built-in table plus `extra` tables (name, source), later ones
    /// adding to or replacing earlier entries. The extra entries are
    /// checked now; the built-in ones when first used.
    pub fn load(extra: &[(String, Value)]) -> Result<Self, String> {
        let table = Self {
            extra: extra.to_vec(),
            programs: std::sync::OnceLock::new(),
        };
        if !extra.is_empty() {
            let raw = merged(extra)?;
            for (_, added) in extra {
                if let Value::Object(map) = added {
                    for name in map.keys() {
                        compile_entry(name, &raw)?;
                    }
                }
            }
        }
        Ok(table)
    }

    fn programs(&self) -> &Programs {
        self.programs.get_or_init(|| {
            // The extra tables were checked at load; the built-in one by
            // tests. Should either fail here, no program is understood,
            // and every command asks.
            let raw = merged(&self.extra).unwrap_or_default();
            let compiled = raw
                .keys()
                .map(|name| (name.clone(), std::sync::OnceLock::new()))
                .collect();
            Programs { raw, compiled }
        })
    }

    /// Every program's entry (not the `@` grammars), by name.
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the examples test"))]
    pub fn programs_with_entries(&self) -> impl Iterator<Item = (&str, &Entry)> {
        let programs = self.programs();
        programs
            .compiled
            .keys()
            .filter(|name| !name.starts_with('@'))
            .filter_map(|name| Some((name.as_str(), self.get(name)?)))
    }

    /// The entry for a program name (`@` entries are grammars, not names).
    pub fn get(&self, name: &str) -> Option<&Entry> {
        if name.starts_with('@') {
            return None;
        }
        let programs = self.programs();
        programs
            .compiled
            .get(name)?
            .get_or_init(|| compile_entry(name, &programs.raw).ok())
            .as_ref()
    }
}

/// The built-in table with `extra` tables' entries added over it.
fn merged(extra: &[(String, Value)]) -> Result<Map<String, Value>, String> {
    let mut raw = built_in()?.clone();
    for (origin, table) in extra {
        let Value::Object(map) = table else {
            return Err(format!("{origin}: `commands` must be an object"));
        };
        for (name, entry) in map {
            raw.insert(name.clone(), entry.clone());
        }
    }
    Ok(raw)
}

/// The entry `name` of `raw`, its `like`s resolved and its patterns
/// compiled.
fn compile_entry(name: &str, raw: &Map<String, Value>) -> Result<Entry, String> {
    let value = raw
        .get(name)
        .ok_or_else(|| format!("commands entry `{name}` is missing"))?;
    let resolved = resolve(value, raw, 0).map_err(|e| format!("commands entry `{name}`: {e}"))?;
    let mut entry: Entry =
        serde_json::from_value(resolved).map_err(|e| format!("commands entry `{name}`: {e}"))?;
    entry
        .compile()
        .map_err(|e| format!("commands entry `{name}`: {e}"))?;
    Ok(entry)
}

/// `value` with every `"like": "@name"` replaced by that entry's keys
/// (its own keys win), in nested subcommands and modules too.
fn resolve(value: &Value, raw: &Map<String, Value>, depth: usize) -> Result<Value, String> {
    if depth > 8 {
        return Err("`like` nests too deeply".to_owned());
    }
    let Value::Object(map) = value else {
        return Err("an entry must be an object".to_owned());
    };
    let mut out = match map.get("like") {
        Some(Value::String(parent)) => match raw.get(parent) {
            Some(base) => match resolve(base, raw, depth + 1)? {
                Value::Object(base) => base,
                _ => Map::new(),
            },
            None => {
                return Err(format!(
                    "`like` names `{parent}`, which is not in the table"
                ));
            }
        },
        Some(_) => return Err("`like` must be a string".to_owned()),
        None => Map::new(),
    };
    for (key, value) in map {
        if key == "like" {
            continue;
        }
        let value = match key.as_str() {
            "subcommands" | "modules" => match value {
                Value::Object(children) => Value::Object(
                    children
                        .iter()
                        .map(|(k, v)| Ok((k.clone(), resolve(v, raw, depth + 1)?)))
                        .collect::<Result<_, String>>()?,
                ),
                _ => return Err(format!("`{key}` must be an object")),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Ok(Value::Object(out))
}

impl Entry {
    /// tar's old-style first word as tar reads it: `cvfI A B rest` is
    /// `-c -v -f A -I B rest`, each letter that takes a value taking the
    /// next word in turn (not the rest of the cluster, as `-fI` would).
    pub fn old_style(&self, args: &[Arg]) -> Option<Vec<Arg>> {
        let (first, rest) = args.split_first()?;
        let cluster = first.known()?;
        if !self.tar || cluster.starts_with('-') || cluster.is_empty() {
            return None;
        }
        let mut words = rest.iter();
        let mut out = Vec::new();
        for letter in cluster.chars() {
            out.push(Arg::literal(&format!("-{letter}")));
            if self.values.contains(letter)
                && let Some(value) = words.next()
            {
                out.push(value.clone());
            }
        }
        out.extend(words.cloned());
        Some(out)
    }

    /// Whether a free grammar's option word is allowed: it names an
    /// effect, the grammar lists no `options`, or one of them matches.
    pub fn allows(&self, name: &str, word: &str) -> bool {
        self.allowed.is_empty()
            || self.effects.contains_key(name)
            || self.allowed.iter().any(|regex| regex.is_match(word))
    }

    fn compile(&mut self) -> Result<(), String> {
        for pattern in &self.options {
            let regex = Regex::new(&format!("^(?:{pattern})$"))
                .map_err(|e| format!("bad options pattern: {e}"))?;
            self.allowed.push(regex);
        }
        for (option, pattern) in &self.value_pattern {
            let regex = Regex::new(pattern).map_err(|e| format!("bad value_pattern: {e}"))?;
            self.patterns.push((option.clone(), regex));
        }
        for child in self
            .subcommands
            .values_mut()
            .chain(self.modules.values_mut())
        {
            child.compile()?;
        }
        Ok(())
    }

    /// The class, `read` when not given.
    pub fn class(&self) -> Class {
        self.class.unwrap_or(Class::Read)
    }

    /// Whether an option value or operand known only at run time could do
    /// harm here (the program has options that write or run).
    pub fn has_effects(&self) -> bool {
        !self.effects.is_empty() || !self.subcommands.is_empty() || !self.modules.is_empty()
    }

    /// The pattern an option's value must match, if any.
    pub fn pattern(&self, option: &str) -> Option<&Regex> {
        self.patterns
            .iter()
            .find(|(name, _)| name == option)
            .map(|(_, regex)| regex)
    }

    fn effect_takes_value(&self, option: &str) -> bool {
        self.effects.get(option).is_some_and(|effect| {
            matches!(
                effect.as_str(),
                "writes" | "runs" | "archive" | "git-config" | "value" | "last"
            )
        })
    }

    /// The subcommand or module entry a reading chose.
    pub fn child(&self, sub: &str) -> Option<&Entry> {
        match sub.strip_prefix("-m ") {
            Some(module) => self.modules.get(module),
            None => self.subcommands.get(sub),
        }
    }
}

mod parse;
pub use parse::Reading;

#[cfg(test)]
mod tests;
