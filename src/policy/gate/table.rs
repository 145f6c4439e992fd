//! The table of understood programs (`policy/commands.jsonc`) and the
//! option parser that reads a command's words under a program's grammar,
//! the way the program's own getopt (or flag package) would.

use std::collections::BTreeMap;

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Arg;

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
    /// Options that make the program only print information.
    #[serde(default)]
    pub info: Vec<String>,
    #[serde(default)]
    value_pattern: BTreeMap<String, String>,
    #[serde(skip)]
    patterns: Vec<(String, Regex)>,
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
    /// tar's old-style first word (`tar czf x.tgz dir`).
    #[serde(default)]
    pub tar: bool,
    /// The program's script language (`sed`, `awk`): its script is read.
    #[serde(default)]
    pub script: Option<String>,
}

/// The table: program name to entry.
#[derive(Debug, Default)]
pub struct Table {
    programs: BTreeMap<String, Entry>,
}

impl Table {
    /// The built-in table plus `extra` tables (name, source), later ones
    /// adding to or replacing earlier entries.
    pub fn load(extra: &[(String, Value)]) -> Result<Self, String> {
        let built_in: Value = json5::from_str(BUILT_IN)
            .map_err(|e| format!("policy/commands.jsonc is broken: {e}"))?;
        let Value::Object(mut raw) = built_in else {
            return Err("policy/commands.jsonc must be an object".to_owned());
        };
        for (origin, table) in extra {
            let Value::Object(map) = table else {
                return Err(format!("{origin}: `commands` must be an object"));
            };
            for (name, entry) in map {
                raw.insert(name.clone(), entry.clone());
            }
        }
        let mut programs = BTreeMap::new();
        for (name, value) in &raw {
            let resolved =
                resolve(value, &raw, 0).map_err(|e| format!("commands entry `{name}`: {e}"))?;
            let mut entry: Entry = serde_json::from_value(resolved)
                .map_err(|e| format!("commands entry `{name}`: {e}"))?;
            entry
                .compile()
                .map_err(|e| format!("commands entry `{name}`: {e}"))?;
            programs.insert(name.clone(), entry);
        }
        Ok(Self { programs })
    }

    /// The entry for a program name (`@` entries are grammars, not names).
    pub fn get(&self, name: &str) -> Option<&Entry> {
        if name.starts_with('@') {
            return None;
        }
        self.programs.get(name)
    }
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

/// One option as parsed: its canonical spelling (`-o`, `--output`) and
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The option.
    pub name: String,
    /// Its value, if it took one.
    pub value: Option<Arg>,
}

/// A command's words read under a grammar.
#[derive(Debug, Default)]
pub struct Reading {
    /// Options in order.
    pub options: Vec<Parsed>,
    /// Operands in order.
    pub operands: Vec<Arg>,
    /// Words after a script operand or a subcommand (not parsed here).
    pub rest: Vec<Arg>,
    /// The subcommand or `-m` module chosen, with its name.
    pub sub: Option<String>,
}

impl Entry {
    fn compile(&mut self) -> Result<(), String> {
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
                "writes" | "runs" | "archive" | "git-config"
            )
        })
    }

    /// Reads `args` under this grammar; `Err` names what is not understood.
    pub fn read(&self, args: &[Arg]) -> Result<Reading, String> {
        let mut reading = Reading::default();
        let permute = self.permute.unwrap_or(true);
        let mut ended = false;
        let mut index = 0;
        while index < args.len() {
            let arg = &args[index];
            index += 1;
            if ended || !may_be_option(arg) {
                if reading.operands.is_empty()
                    && !ended
                    && let Some(found) = self.dispatch(arg, args, index, &mut reading)?
                {
                    return Ok(found);
                }
                reading.operands.push(arg.clone());
                if self.operands.as_deref() == Some("script") {
                    reading.rest = args[index..].to_vec();
                    return Ok(reading);
                }
                ended |= !permute;
                continue;
            }
            let Some(text) = arg.known().filter(|t| t.starts_with('-')) else {
                if self.has_effects() {
                    return Err(format!(
                        "`{}` is known only at run time and could turn out to be an option",
                        arg.text
                    ));
                }
                reading.operands.push(arg.clone());
                continue;
            };
            if text == "--" {
                ended = true;
                continue;
            }
            if self.free {
                self.free_option(text, args, &mut index, &mut reading);
                continue;
            }
            let before = reading.options.len();
            if self.single || text.starts_with("--") {
                self.long_option(text, args, &mut index, &mut reading)?;
            } else {
                self.short_cluster(text, args, &mut index, &mut reading)?;
            }
            // `python -m MODULE ...`: the module reads the rest.
            if let Some(option) = reading.options.get(before..).and_then(|new| {
                new.iter()
                    .find(|o| o.name == "-m" && !self.modules.is_empty())
            }) {
                let module = option.value.clone();
                return self.module(module.as_ref(), &args[index..], reading);
            }
        }
        if !self.subcommands.is_empty() && reading.sub.is_none() && !self.default {
            // `git` alone prints its help.
            if !reading.operands.is_empty() {
                return Err("no subcommand offcode understands".to_owned());
            }
        }
        Ok(reading)
    }

    /// A subcommand in first-operand position; `Ok(None)` when there are
    /// no subcommands.
    fn dispatch(
        &self,
        arg: &Arg,
        args: &[Arg],
        index: usize,
        reading: &mut Reading,
    ) -> Result<Option<Reading>, String> {
        if self.subcommands.is_empty() {
            return Ok(None);
        }
        let Some(name) = arg.known() else {
            return Err(format!(
                "a subcommand known only at run time (`{}`)",
                arg.text
            ));
        };
        if !self.subcommands.contains_key(name) {
            if self.default {
                return Ok(None);
            }
            return Err(format!(
                "`{name}` is not a subcommand offcode understands (an alias or an extension could run anything)"
            ));
        }
        let mut found = std::mem::take(reading);
        found.sub = Some(name.to_owned());
        found.rest = args[index..].to_vec();
        Ok(Some(found))
    }

    fn module(
        &self,
        module: Option<&Arg>,
        rest: &[Arg],
        mut reading: Reading,
    ) -> Result<Reading, String> {
        let Some(name) = module.and_then(Arg::known) else {
            return Err("`-m` without a module named literally".to_owned());
        };
        if !self.modules.contains_key(name) {
            return Err(format!(
                "the module `{name}` is not one offcode understands"
            ));
        }
        reading.sub = Some(format!("-m {name}"));
        reading.rest = rest.to_vec();
        Ok(reading)
    }

    /// The subcommand or module entry a reading chose.
    pub fn child(&self, sub: &str) -> Option<&Entry> {
        match sub.strip_prefix("-m ") {
            Some(module) => self.modules.get(module),
            None => self.subcommands.get(sub),
        }
    }

    /// `-x`, `--xyz`, `-xyz` (single-dash long) with a value from `=` or
    /// the next word.
    fn long_option(
        &self,
        text: &str,
        args: &[Arg],
        index: &mut usize,
        reading: &mut Reading,
    ) -> Result<(), String> {
        let body = text.strip_prefix("--").unwrap_or(&text[1..]);
        let (name, attached) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };
        let spelled = |n: &str| {
            if self.single {
                format!("-{n}")
            } else {
                format!("--{n}")
            }
        };
        let candidates: Vec<(String, Arity)> = self
            .long
            .iter()
            .map(|l| long_arity(l))
            .chain(self.effects.keys().filter_map(|key| {
                let bare = key
                    .strip_prefix("--")
                    .or_else(|| self.single.then(|| key.strip_prefix('-')).flatten())?;
                let arity = if self.effect_takes_value(key) {
                    Arity::Required
                } else {
                    Arity::Flag
                };
                Some((bare.to_owned(), arity))
            }))
            .collect();
        let exact: Vec<&(String, Arity)> = candidates.iter().filter(|(n, _)| n == name).collect();
        let matched = if let Some(found) = exact.first() {
            (*found).clone()
        } else if self.exact || self.single {
            return Err(format!("unknown option `{}`", spelled(name)));
        } else {
            let mut prefixed: Vec<&(String, Arity)> = candidates
                .iter()
                .filter(|(n, _)| n.starts_with(name))
                .collect();
            prefixed.dedup_by(|a, b| a.0 == b.0);
            match prefixed.as_slice() {
                [one] => (*one).clone(),
                [] => return Err(format!("unknown option `{}`", spelled(name))),
                _ => return Err(format!("ambiguous option `{}`", spelled(name))),
            }
        };
        let (full, arity) = matched;
        let value = match (arity, attached) {
            (Arity::Flag, Some(_)) if !self.single => {
                return Err(format!("`{}` takes no value", spelled(&full)));
            }
            (Arity::Flag | Arity::Optional, attached) => attached.map(Arg::literal),
            (Arity::Required, Some(value)) => Some(Arg {
                text: value.to_owned(),
                dynamic: false,
            }),
            (Arity::Required, None) => {
                let next = args
                    .get(*index)
                    .cloned()
                    .ok_or_else(|| format!("`{}` needs a value", spelled(&full)))?;
                *index += 1;
                Some(next)
            }
        };
        reading.options.push(Parsed {
            name: spelled(&full),
            value,
        });
        Ok(())
    }

    /// `-abc`, `-ovalue`, `-o value`, `-20` (numeric), as getopt reads them.
    fn short_cluster(
        &self,
        text: &str,
        args: &[Arg],
        index: &mut usize,
        reading: &mut Reading,
    ) -> Result<(), String> {
        let cluster = &text[1..];
        if self.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            reading.options.push(Parsed {
                name: "-N".to_owned(),
                value: Some(Arg::literal(cluster)),
            });
            return Ok(());
        }
        for (at, c) in cluster.char_indices() {
            let name = format!("-{c}");
            let rest = &cluster[at + c.len_utf8()..];
            let takes_value = self.values.contains(c) || self.effect_takes_value(&name);
            if takes_value {
                let value = if rest.is_empty() {
                    let next = args
                        .get(*index)
                        .cloned()
                        .ok_or_else(|| format!("`{name}` needs a value"))?;
                    *index += 1;
                    next
                } else {
                    Arg::literal(rest)
                };
                reading.options.push(Parsed {
                    name,
                    value: Some(value),
                });
                return Ok(());
            }
            if self.digits.contains(c) {
                // Octal digits, or `x` and hex digits (`-0777`, `-0x1F`).
                let digits: String = match rest.strip_prefix('x') {
                    Some(hex) => std::iter::once('x')
                        .chain(hex.chars().take_while(char::is_ascii_hexdigit))
                        .collect(),
                    None => rest
                        .chars()
                        .take_while(|c| ('0'..='7').contains(c))
                        .collect(),
                };
                let after = &rest[digits.len()..];
                reading.options.push(Parsed {
                    name,
                    value: (!digits.is_empty()).then(|| Arg::literal(&digits)),
                });
                if after.is_empty() {
                    return Ok(());
                }
                return self.short_cluster(&format!("-{after}"), args, index, reading);
            }
            if self.optional.contains(c) {
                reading.options.push(Parsed {
                    name,
                    value: (!rest.is_empty()).then(|| Arg::literal(rest)),
                });
                return Ok(());
            }
            if self.short.contains(c) || self.effects.contains_key(&name) {
                reading.options.push(Parsed { name, value: None });
                continue;
            }
            return Err(format!("unknown option `{name}`"));
        }
        Ok(())
    }

    /// Options not parsed: only effects are looked for, by prefix, so an
    /// abbreviation of `--output` still counts as `--output`.
    fn free_option(&self, text: &str, args: &[Arg], index: &mut usize, reading: &mut Reading) {
        let (name, attached) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (text, None),
        };
        for key in self.effects.keys() {
            let long_prefix = name.starts_with("--") && name.len() > 3 && key.starts_with(name);
            let attached_short =
                !key.starts_with("--") && text.starts_with(key.as_str()) && text != key.as_str();
            if name == key || long_prefix || attached_short {
                let value = if attached_short && attached.is_none() {
                    Some(Arg::literal(&text[key.len()..]))
                } else if let Some(value) = attached {
                    Some(Arg::literal(value))
                } else if self.effect_takes_value(key) {
                    let next = args.get(*index).cloned();
                    *index += usize::from(next.is_some());
                    next
                } else {
                    None
                };
                reading.options.push(Parsed {
                    name: key.clone(),
                    value,
                });
                return;
            }
        }
        reading.options.push(Parsed {
            name: name.to_owned(),
            value: attached.map(Arg::literal),
        });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arity {
    Flag,
    Optional,
    Required,
}

fn long_arity(spec: &str) -> (String, Arity) {
    if let Some(name) = spec.strip_suffix("=?") {
        (name.to_owned(), Arity::Optional)
    } else if let Some(name) = spec.strip_suffix('=') {
        (name.to_owned(), Arity::Required)
    } else {
        (spec.to_owned(), Arity::Flag)
    }
}

/// Whether a word is read as an option: a literal `-x`, or a word known
/// only at run time that could expand to one (`$x`, `"$x"`, a glob that
/// may match a file named `-rf`). `-` alone is an operand.
fn may_be_option(arg: &Arg) -> bool {
    if arg.dynamic {
        let text = arg.text.trim_start_matches(['"', '\'']);
        return text.starts_with(['-', '$', '`', '*', '?', '[', '{', '<']) && text != "{}";
    }
    arg.text.starts_with('-') && arg.text != "-"
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn words(text: &str) -> Vec<Arg> {
        text.split(' ').map(Arg::literal).collect()
    }

    /// The options a program's words parse to, as `name=value` strings.
    fn options(program: &str, text: &str) -> Result<Vec<String>, String> {
        let table = Table::load(&[]).unwrap();
        let reading = table.get(program).unwrap().read(&words(text))?;
        Ok(reading
            .options
            .iter()
            .map(|o| match &o.value {
                Some(v) => format!("{}={}", o.name, v.text),
                None => o.name.clone(),
            })
            .collect())
    }

    #[test]
    fn long_options_take_unique_prefixes_as_getopt_long_does() {
        assert_eq!(
            options("sed", "--in s/a/b/ f"),
            Ok(vec!["--in-place".to_owned()])
        );
        assert_eq!(
            options("sort", "--out=x f"),
            Ok(vec!["--output=x".to_owned()])
        );
        assert_eq!(
            options("ls", "--h"),
            Err("ambiguous option `--h`".to_owned())
        );
        assert_eq!(
            options("cargo", "--rel"),
            Err("unknown option `--rel`".to_owned()),
            "cargo (clap) takes no abbreviations"
        );
    }

    #[test]
    fn short_clusters_attach_values_and_stop_at_them() {
        assert_eq!(
            options("sort", "-rno out f"),
            Ok(vec!["-r".to_owned(), "-n".to_owned(), "-o=out".to_owned()])
        );
        assert_eq!(options("sort", "-oout f"), Ok(vec!["-o=out".to_owned()]));
        assert_eq!(options("head", "-20 f"), Ok(vec!["-N=20".to_owned()]));
        assert_eq!(
            options("ls", "-la -Q"),
            Ok(["-l", "-a", "-Q"].iter().map(|s| (*s).to_owned()).collect())
        );
        assert_eq!(options("ls", "-y"), Err("unknown option `-y`".to_owned()));
    }

    #[test]
    fn perl_dash_zero_takes_only_digits() {
        assert_eq!(
            options("perl", "-0e x"),
            Ok(vec!["-0".to_owned(), "-e=x".to_owned()])
        );
        assert_eq!(
            options("perl", "-0777 -n x.pl"),
            Ok(vec!["-0=777".to_owned(), "-n".to_owned()])
        );
    }

    #[test]
    fn double_dash_and_script_operands_end_the_options() {
        assert_eq!(options("sort", "-- -o f"), Ok(Vec::new()));
        let table = Table::load(&[]).unwrap();
        let reading = table
            .get("python3")
            .unwrap()
            .read(&words("-u s.py -c x"))
            .unwrap();
        assert_eq!(reading.operands, vec![Arg::literal("s.py")]);
        assert_eq!(reading.rest, words("-c x"));
    }

    #[test]
    fn an_unknown_word_that_could_be_an_option_is_refused_where_options_matter() {
        let table = Table::load(&[]).unwrap();
        let dynamic = Arg {
            text: "$x".to_owned(),
            dynamic: true,
        };
        assert!(
            table
                .get("sort")
                .unwrap()
                .read(std::slice::from_ref(&dynamic))
                .is_err()
        );
        assert!(table.get("cat").unwrap().read(&[dynamic]).is_ok());
    }

    #[test]
    fn free_grammars_still_find_effects_by_prefix() {
        let table = Table::load(&[]).unwrap();
        let git = table.get("git").unwrap();
        let reading = git.read(&words("log --out=x")).unwrap();
        let log = git.child(reading.sub.as_deref().unwrap()).unwrap();
        let options = log.read(&reading.rest).unwrap().options;
        assert_eq!(options[0].name, "--output");
        assert_eq!(
            git.read(&words("-C . frobnicate")).unwrap_err(),
            "`frobnicate` is not a subcommand offcode understands (an alias or an extension could run anything)"
        );
    }

    #[test]
    fn a_vouched_entry_extends_the_table_and_bad_ones_are_named() {
        let extra = serde_json::json!({ "mytool": { "class": "read", "short": "v" } });
        let table = Table::load(&[("global".to_owned(), extra)]).unwrap();
        assert!(table.get("mytool").unwrap().read(&words("-v")).is_ok());
        let broken = serde_json::json!({ "bad": { "class": "read", "colour": true } });
        let error = Table::load(&[("global".to_owned(), broken)]).unwrap_err();
        assert!(error.contains("commands entry `bad`"), "{error}");
        assert!(error.contains("colour"), "{error}");
    }
}
