//! Reading a command's words under an entry's grammar, the way the
//! program's own getopt (or flag package) would: clusters, attached
//! values, unique long prefixes, `--`, subcommands and `-m` modules.

use super::Entry;
use crate::policy::gate::Arg;

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
                if let Some(option) = self.dynamic_value(arg) {
                    reading.options.push(option);
                    continue;
                }
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
                let name = reading.options.last().map_or("", |o| o.name.as_str());
                if !self.allows(name, text) {
                    return Err(format!(
                        "`{text}` is not an option offcode knows to be harmless"
                    ));
                }
                // `java -jar FILE ARGS`: the rest is the program's.
                if self.effects.get(name).is_some_and(|e| e == "last") {
                    reading.operands.extend(args[index..].iter().cloned());
                    return Ok(reading);
                }
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

    /// A word known only at run time whose literal start names an option
    /// whose value is a count (`-j$(nproc)`, `--jobs="$n"`, the table's
    /// `counts`): that option, with the rest as its value. Any other
    /// option's value may be a path or a program, so stays not understood.
    fn dynamic_value(&self, arg: &Arg) -> Option<Parsed> {
        if self.free || self.counts.is_empty() {
            return None;
        }
        let end = arg
            .text
            .find(['$', '`', '"', '\'', '\\', '*', '?', '[', '{', '~'])
            .unwrap_or(arg.text.len());
        let (prefix, rest) = arg.text.split_at(end);
        if rest.is_empty() {
            return None;
        }
        let value = Some(Arg {
            text: rest.to_owned(),
            dynamic: true,
        });
        if let Some(name) = prefix.strip_prefix("--").and_then(|p| p.strip_suffix('=')) {
            let takes = self.long.iter().any(|spec| {
                let (long, arity) = long_arity(spec);
                long == name && arity != Arity::Flag
            });
            let name = format!("--{name}");
            return (takes && self.counts.contains(&name)).then_some(Parsed { name, value });
        }
        let mut letters = prefix.strip_prefix('-')?.chars();
        let letter = letters.next()?;
        let name = format!("-{letter}");
        let counts = self.counts.contains(&name);
        (letters.next().is_none() && !self.single && self.values.contains(letter) && counts)
            .then_some(Parsed { name, value })
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
            (Arity::Required, None) => Some(
                take_next(args, index)
                    .ok_or_else(|| format!("`{}` needs a value", spelled(&full)))?,
            ),
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
                    take_next(args, index).ok_or_else(|| format!("`{name}` needs a value"))?
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

    /// Options not parsed: only effects are looked for. A long option by
    /// prefix, so an abbreviation of `--output` still counts as
    /// `--output`; a short one as a whole word or with what it takes
    /// attached ([`attaches`]), so `-Wall` is not `-Wa`.
    fn free_option(&self, text: &str, args: &[Arg], index: &mut usize, reading: &mut Reading) {
        let (name, attached) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (text, None),
        };
        for key in self.effects.keys() {
            let long_prefix = name.starts_with("--") && name.len() > 3 && key.starts_with(name);
            let clustered = self.clusters
                && !text.starts_with("--")
                && key.len() == 2
                && !key.starts_with("--")
                && text[1..].contains(&key[1..]);
            if clustered && !text.starts_with(key.as_str()) {
                // `-iO'cmd'`: the option is inside a cluster; its value is
                // whatever follows it.
                let at = text[1..].find(&key[1..]).map_or(0, |at| at + 2);
                let value = if at < text.len() {
                    Some(Arg::literal(&text[at..]))
                } else {
                    take_next(args, index)
                };
                reading.options.push(Parsed {
                    name: key.clone(),
                    value,
                });
                return;
            }
            let attached_short = !key.starts_with("--")
                && text.len() > key.len()
                && text.starts_with(key.as_str())
                && attaches(key, &text[key.len()..]);
            if name == key || long_prefix || attached_short {
                // `-DNAME=value`: all that follows a short option is its
                // value, `=` included.
                let value = if attached_short {
                    Some(Arg::literal(&text[key.len()..]))
                } else if let Some(value) = attached {
                    Some(Arg::literal(value))
                } else if self.effect_takes_value(key) {
                    take_next(args, index)
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

/// Whether `rest` follows the single-dash option `key` in one word as its
/// value: anything after a one-letter option (`-ofile`, `-Bdir`) or gcc's
/// `-MF`-like ones; after a longer one, only a value it spells with `=`,
/// `,`, `-` or `:` (`-Wa,-o,x`, `-fdump-tree-all`, `-specs=f`,
/// `-Xplugin:name`): `-Wall` is a warning, not the assembler's `-Wa`.
fn attaches(key: &str, rest: &str) -> bool {
    let letters = key.len() - 1;
    letters == 1
        || (letters == 2 && key.chars().last().is_some_and(|c| c.is_ascii_uppercase()))
        || rest.starts_with(['=', ',', '-', ':'])
}

/// The next word, as an option's value, and moves past it.
fn take_next(args: &[Arg], index: &mut usize) -> Option<Arg> {
    let next = args.get(*index).cloned();
    *index += usize::from(next.is_some());
    next
}
