//! Arithmetic is code: bash evaluates a variable an expression reads as
//! an expression in turn, so `x='a[$(rm f)]'; echo "${@:x}"` runs `rm f`.
//! An expression is plain only when each operand is a literal number or a
//! variable this line sets to numbers alone (`i=0`, `i=$((i + 1))`,
//! `for ((i = 0; ...))`); judged once every assignment of the line is known,
//! wherever it stands (a function body, a later command).

use super::shell::{self, Arithmetic, Reading};
use super::{Arg, Check};

/// Variables bash sets itself, to values a line can choose (`$_` is the
/// last word of the previous command) or that are not numbers.
fn set_by_bash(name: &str) -> bool {
    matches!(
        name,
        "_" | "REPLY" | "OPTARG" | "MAPFILE" | "COPROC" | "DIRSTACK" | "GROUPS" | "FUNCNAME"
    ) || ["BASH", "COMP_", "READLINE_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Variables bash keeps as numbers whatever is assigned to them.
const NUMBERS_BY_BASH: &[&str] = &[
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "LINENO",
    "EPOCHSECONDS",
    "BASHPID",
    "PPID",
    "UID",
    "EUID",
    "SHLVL",
    "BASH_SUBSHELL",
    "OPTIND",
    "HISTCMD",
    "PIPESTATUS",
    "COLUMNS",
    "LINES",
];

/// What the line gives a variable by name, as arithmetic would read it if
/// the variable is an integer (`declare -i`, `RANDOM`).
pub(super) enum Given {
    /// A value the line writes (`n=3`, `n=$x`).
    Value(Arg),
    /// A value from data the line does not spell out, set by this text
    /// (`read n`, `for n in ...`).
    Unspelled(String),
}

/// Variables whose every assignment bash evaluates as arithmetic, as if
/// declared `-i` (found by the differential test, bash 5.2).
pub(super) const INTEGERS_BY_BASH: &[&str] = &["RANDOM", "SRANDOM", "OPTIND", "HISTCMD"];

/// Whether a value is a number once bash has read it: a literal integer
/// (`5`, `-3`, `0x1f`, `16#ff`), or one arithmetic expansion (`$((...))`,
/// whose result is a number; what it reads is judged where it stands).
pub(super) fn numeric(value: &Arg) -> bool {
    if let Some(text) = value.known() {
        let digits = text.trim().trim_start_matches(['-', '+']);
        return !digits.is_empty()
            && digits.starts_with(|c: char| c.is_ascii_digit())
            && digits
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '#' || c == '@' || c == '_');
    }
    single_arithmetic(&value.text)
}

/// Whether `text` is exactly one `$((...))`.
fn single_arithmetic(text: &str) -> bool {
    let Some(inner) = text.strip_prefix('$') else {
        return false;
    };
    let mut depth = 0usize;
    for (at, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                let Some(less) = depth.checked_sub(1) else {
                    return false;
                };
                depth = less;
                if depth == 0 {
                    return at + 1 == inner.len() && inner.starts_with("((");
                }
            }
            _ if depth == 0 => return false,
            _ => {}
        }
    }
    false
}

impl Check<'_> {
    /// Notes a place the line evaluates arithmetic; the names it assigns
    /// get numbers.
    pub(super) fn arithmetic(&mut self, arithmetic: Arithmetic) {
        for name in &arithmetic.reading.assigns {
            self.numbers.entry(name.clone()).or_insert(true);
        }
        self.arithmetic.push(arithmetic);
    }

    /// Notes what the line gives `name`: a number or something else.
    pub(super) fn gives(&mut self, name: &str, number: bool) {
        let base = name.split('[').next().unwrap_or(name);
        // An element set (`a[1]=x`) makes `$((a))` read element 0: the
        // array is not a plain number.
        let number = number && base.len() == name.len();
        *self.numbers.entry(base.to_owned()).or_insert(number) &= number;
    }

    /// A name operand of a builtin (`read a[i]`, `unset 'a[i]'`, `declare
    /// a[i]=1`, `[[ -v a[i] ]]`): its subscript is arithmetic; a name known
    /// only at run time may hold any.
    pub(super) fn name_operand(&mut self, word: &Arg, text: &str) {
        let Some(known) = word.known() else {
            self.arithmetic.push(Arithmetic {
                construct: shell::short(text),
                reading: Reading {
                    code: Some(format!("the name `{}`, known only at run time", word.text)),
                    ..Reading::default()
                },
            });
            return;
        };
        if let Some(reading) = shell::name_operand(known) {
            self.arithmetic(Arithmetic {
                construct: shell::short(known),
                reading,
            });
        }
    }

    /// `let EXPR...`: each word is arithmetic, evaluated once expanded.
    pub(super) fn let_builtin(&mut self, args: &[Arg], text: &str) {
        for arg in args {
            let reading = match arg.known() {
                Some(expression) => shell::expression(expression),
                None => shell::comparison_operand(&arg.text),
            };
            self.arithmetic(Arithmetic {
                construct: shell::short(text),
                reading,
            });
        }
    }

    /// Judges every arithmetic place of the line, now that all its
    /// assignments are known.
    pub(super) fn judge_arithmetic(&mut self) {
        for (name, given) in std::mem::take(&mut self.values) {
            if !self.integers.contains(&name) && !INTEGERS_BY_BASH.contains(&name.as_str()) {
                continue;
            }
            let arithmetic = match given {
                Given::Value(value) => Arithmetic {
                    construct: shell::short(&format!("{name}={}", value.text)),
                    reading: match value.known() {
                        Some(text) => shell::expression(text),
                        None => shell::comparison_operand(&value.text),
                    },
                },
                Given::Unspelled(by) => Arithmetic {
                    construct: shell::short(&by),
                    reading: Reading {
                        code: Some(format!("a value of `{name}` the line does not spell out")),
                        ..Reading::default()
                    },
                },
            };
            self.arithmetic(arithmetic);
        }
        for arithmetic in std::mem::take(&mut self.arithmetic) {
            let construct = &arithmetic.construct;
            if let Some(why) = &arithmetic.reading.code {
                self.danger(
                    construct,
                    format!("bash evaluates `{construct}` as arithmetic, which runs code; it holds {why}"),
                );
                continue;
            }
            let unknown = arithmetic.reading.reads.iter().find(|name| {
                !NUMBERS_BY_BASH.contains(&name.as_str())
                    && (set_by_bash(name) || self.numbers.get(*name) != Some(&true))
            });
            if let Some(name) = unknown {
                self.danger(
                    construct,
                    format!(
                        "bash evaluates `{construct}` as arithmetic, which reads `{name}` and runs any code in its value; the line does not set `{name}` to a number"
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_literal_integers_or_one_arithmetic_expansion() {
        for value in ["5", "-3", "0x1f", "16#ff"] {
            assert!(numeric(&Arg::literal(value)), "{value}");
        }
        for value in ["", "x", "a[1]", "1.5", "-"] {
            assert!(!numeric(&Arg::literal(value)), "{value}");
        }
        let dynamic = |text: &str| Arg {
            text: text.to_owned(),
            dynamic: true,
        };
        assert!(numeric(&dynamic("$((i + 1))")));
        assert!(numeric(&dynamic("$(( (i) ))")));
        assert!(!numeric(&dynamic("$((1))x$((2))")));
        assert!(!numeric(&dynamic("$(id)")));
        assert!(!numeric(&dynamic("$x")));
    }
}
