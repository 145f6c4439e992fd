//! What particular commands do beyond their name: wrappers that run the
//! rest of their words, code strings, `cd`, and commands that write the
//! files they name.

use super::options::{Options, skip_options, wrapper_grammar};
use std::path::PathBuf;

use super::{Arg, Assignment, Check, SHELLS, text_of};

impl Check<'_> {
    /// Wrappers, code strings, `cd`, and commands that write named files.
    pub(super) fn special(&mut self, name: &str, args: &[Arg], text: &str, depth: usize) {
        if let Some((options, positional)) = wrapper_grammar(name) {
            self.wrapper_after(args, &options, positional, text, depth);
            return;
        }
        match name {
            "cd" | "pushd" | "popd" => self.change_directory(name, args),
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                self.declaration(name, args, text);
            }
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
        if args[..skip_options(args, &options).unwrap_or(0)]
            .iter()
            .any(|a| {
                a.text.starts_with("--ch")
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.contains('C'))
            })
        {
            self.danger(
                text,
                "env -C runs the command in another directory, where offcode cannot follow its paths",
            );
            return;
        }
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
                    let assignment = Assignment {
                        name: name.to_owned(),
                        value: Arg {
                            text: value.to_owned(),
                            dynamic: arg.dynamic,
                        },
                    };
                    self.assignment(&assignment);
                    self.exported(&assignment);
                    index += 1;
                }
                _ => break,
            }
        }
        self.argv(&args[index..], depth);
    }

    /// `export X=1`, `declare -x X`, `declare -i n=...`: exported names
    /// must be harmless in a program's environment, and `-i` evaluates
    /// values as arithmetic.
    fn declaration(&mut self, name: &str, args: &[Arg], text: &str) {
        let mut exported = name == "export";
        let mut integer = false;
        for arg in args {
            if arg.dynamic {
                self.danger(text, format!("`{name}` of a name known only at run time"));
                return;
            }
            let word = arg.text.as_str();
            if let Some(flags) = word.strip_prefix('-').or_else(|| word.strip_prefix('+')) {
                if !flags.chars().all(|c| "aAfFgiIlnprtux".contains(c)) {
                    self.danger(text, format!("unknown `{name}` option `{word}`"));
                    return;
                }
                exported |= flags.contains('x');
                integer |= flags.contains('i') && word.starts_with('-');
                if flags.contains('n') && name != "export" {
                    self.danger(
                        text,
                        format!("`{name} -n` makes a name stand for another, which bash evaluates with its subscript"),
                    );
                }
                continue;
            }
            if integer {
                // Every value this line gives it is arithmetic.
                let variable = word.split_once('=').map_or(word, |(variable, _)| variable);
                self.integers
                    .push(variable.trim_end_matches('+').to_owned());
            }
            if exported {
                let (variable, value) = word.split_once('=').unwrap_or((word, ""));
                let literal = !value.contains(['$', '`', '"', '\'', '\\']);
                self.exported(&Assignment {
                    name: variable.to_owned(),
                    value: Arg {
                        text: value.to_owned(),
                        dynamic: !literal,
                    },
                });
            }
        }
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
        if args[..start]
            .iter()
            .any(|a| a.text.starts_with("--process-slot-var"))
        {
            self.danger(
                text,
                "xargs --process-slot-var sets a variable it names in the command's environment",
            );
            return;
        }
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
}
