//! Option grammars of the commands that run other commands, so the gate
//! knows where the wrapped command starts (and refuses to guess when an
//! option is unknown).

use super::Arg;

/// Option grammar of a wrapper.
pub(super) struct Options<'a> {
    /// Short options without a value.
    pub(super) flags: &'a str,
    /// Short options with a value (attached or next word).
    pub(super) values: &'a str,
    /// Long options without a value.
    pub(super) long_flags: &'a [&'a str],
    /// Long options with a value (`--x=v` or `--x v`).
    pub(super) long_values: &'a [&'a str],
    /// `-N` (a number) is an option (nice).
    pub(super) numeric: bool,
    /// Short options whose value, if any, is attached (`xargs -i{}`).
    pub(super) optional: &'a str,
}

impl Options<'static> {
    pub(super) const NONE: Self = Self {
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
pub(super) fn wrapper_grammar(name: &str) -> Option<(Options<'static>, usize)> {
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
pub(super) fn skip_options(args: &[Arg], options: &Options<'_>) -> Result<usize, String> {
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
