//! Variables: what the line assigns, exports and reads into them. A
//! program's environment may only get harmless names; shell variables that
//! change how commands are found are never set; and data the line does not
//! spell out is noted, for the places bash evaluates values as code.

use super::{Arg, Assignment, Check};

/// Shell variables no plain line sets: they change where `cd` goes, which
/// files globs see, or what bash runs.
const FORBIDDEN_VARIABLES: &[&str] = &[
    "CDPATH",
    "GLOBIGNORE",
    "BASH_XTRACEFD",
    "BASH_LOADABLES_PATH",
    "BASH_COMPAT",
    "HISTFILE",
    "FUNCNEST",
    "EXECIGNORE",
    "TMOUT",
    "HOME",
    "OLDPWD",
    "PWD",
    "TMPDIR",
];

/// Variables a command may be given in its environment (`X=1 cmd`,
/// `env X=1 cmd`, `export X=1`): ones no program runs as code.
const SAFE_ENVIRONMENT: &[&str] = &[
    "CI",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "TERM",
    "COLUMNS",
    "LINES",
    "LANG",
    "LANGUAGE",
    "TZ",
    "DEBUG",
    "VERBOSE",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_TEST_THREADS",
    "RUST_MIN_STACK",
    "CARGO_TERM_COLOR",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "CARGO_PROFILE_RELEASE_DEBUG",
    "NODE_ENV",
    "NODE_NO_WARNINGS",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONWARNINGS",
    "GOOS",
    "GOARCH",
    "CGO_ENABLED",
    "GO111MODULE",
    "GOPROXY",
    "TEST_VERBOSE",
    "JOBS",
];

/// Variables that make builds and interpreters load or run what they name
/// (flags a compiler passes on, where Python imports from, which compiler
/// a build runs). The programs that read them run the project's code
/// anyway, so giving them is not dangerous; the line is not plain either.
const BUILD_ENVIRONMENT: &[&str] = &[
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_ENCODED_RUSTFLAGS",
    "PYTHONPATH",
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "GOFLAGS",
    "GOPATH",
    "GOCACHE",
    "GOTOOLCHAIN",
];

impl Check<'_> {
    pub(super) fn assignment(&mut self, assignment: &Assignment) {
        let name = assignment.name.as_str();
        let value = &assignment.value;
        if value.text.contains('\0') {
            self.danger(&format!("{name}=…"), "a value holds a NUL byte");
        }
        self.gives(name, super::arithmetic::numeric(value));
        self.values.push((
            name.to_owned(),
            super::arithmetic::Given::Value(value.clone()),
        ));
        if FORBIDDEN_VARIABLES.contains(&name)
            || name.starts_with("BASH_FUNC_")
            || name.starts_with("LD_")
        {
            self.danger(
                &format!("{name}={}", value.text),
                format!("sets {name}, which changes how commands are found or run"),
            );
        }
        if super::Gate::class()
            .code_variables
            .iter()
            .any(|v| v == name)
        {
            self.danger(
                &format!("{name}={}", assignment.value.text),
                format!("sets {name}, which changes what programs run"),
            );
        }
    }

    /// A variable put into a command's environment must be one no program
    /// runs as code (`PAGER=cat` is fine, `PAGER=sh` is not).
    pub(super) fn exported(&mut self, assignment: &Assignment) {
        let name = assignment.name.as_str();
        let value = assignment.value.known();
        let safe = SAFE_ENVIRONMENT.contains(&name)
            || name.starts_with("LC_")
            || (matches!(name, "PAGER" | "GIT_PAGER" | "MANPAGER")
                && matches!(value, Some("cat" | "")));
        if BUILD_ENVIRONMENT.contains(&name) {
            if let Some(why) = build_value_danger(name, &assignment.value) {
                self.danger(&format!("{name}={}", assignment.value.text), why);
            } else {
                self.runs(
                    &format!("{name}=…"),
                    "makes builds and interpreters load or run what it names",
                );
            }
            return;
        }
        if !safe {
            self.danger(
                &format!("{name}={}", assignment.value.text),
                format!("gives a command `{name}`, which offcode does not know to be harmless"),
            );
        }
    }

    /// A variable the line sets by name, however (`for NAME`, `read NAME`,
    /// `printf -v NAME`, `mapfile NAME`, `getopts OPTS NAME`): one that
    /// changes how commands are found or run is never set, and neither is
    /// one named only at run time.
    pub(super) fn sets_variable(&mut self, variable: &Arg, text: &str) {
        self.sets_variable_to(variable, text, false);
    }

    /// [`Self::sets_variable`], to numbers only when `number` (`for i in 1
    /// 2 3`).
    pub(super) fn sets_variable_to(&mut self, variable: &Arg, text: &str, number: bool) {
        let Some(name) = variable.known() else {
            self.danger(text, "sets a variable named only at run time");
            return;
        };
        self.gives(name, number);
        if !number {
            // A value the line does not spell out: code, to a `-i` variable.
            self.values.push((
                name.to_owned(),
                super::arithmetic::Given::Unspelled(text.to_owned()),
            ));
        }
        let name = name.split('[').next().unwrap_or(name);
        if FORBIDDEN_VARIABLES.contains(&name)
            || name.starts_with("BASH_FUNC_")
            || name.starts_with("LD_")
            || super::Gate::class()
                .code_variables
                .iter()
                .any(|v| v == name)
        {
            self.danger(
                text,
                format!("sets {name}, which changes how commands are found or run"),
            );
        }
    }

    /// The names `read`, `mapfile`, `getopts` and `printf -v` set.
    fn named_by(name: &str, args: &[Arg]) -> Vec<Arg> {
        let mut named = Vec::new();
        let values = match name {
            "read" => "adinNptu",
            "mapfile" | "readarray" => "dnOsuCc",
            "getopts" => "",
            "printf" => "v",
            _ => return named,
        };
        let mut index = 0;
        while index < args.len() {
            let word = &args[index].text;
            index += 1;
            if word == "--" || !word.starts_with('-') || word.len() < 2 {
                if word != "--" {
                    index -= 1;
                }
                break;
            }
            // The last letter of a cluster may take a value.
            let Some(last) = word.chars().last().filter(|c| values.contains(*c)) else {
                continue;
            };
            let attached = &word[word.find(last).map_or(word.len(), |at| at + 1)..];
            let value = if attached.is_empty() {
                index += 1;
                args.get(index - 1).cloned()
            } else {
                Some(Arg {
                    text: attached.to_owned(),
                    dynamic: args[index - 1].dynamic,
                })
            };
            if matches!(last, 'v' | 'a')
                && let Some(value) = value
            {
                named.push(value);
            }
        }
        let rest = &args[index.min(args.len())..];
        match name {
            "read" => named.extend(rest.iter().cloned()),
            "mapfile" | "readarray" => named.extend(rest.last().cloned()),
            "getopts" => named.extend(rest.get(1).cloned()),
            _ => {}
        }
        named
    }

    /// Builtins that set variables by name, or take variable names and so
    /// evaluate a subscript in one (`read 'x[$(id)]'`, `test -v ...`).
    pub(super) fn variables(&mut self, name: &str, args: &[Arg], text: &str) {
        for variable in Self::named_by(name, args) {
            self.sets_variable(&variable, text);
            self.name_operand(&variable, text);
        }
        let operands: Vec<&Arg> = match name {
            "declare" | "typeset" | "local" | "readonly" | "export" | "unset" => args
                .iter()
                .filter(|arg| arg.dynamic || !arg.text.starts_with(['-', '+']))
                .collect(),
            // `test -v NAME`, `[ -v NAME ]`; `wait -p NAME`.
            "test" | "[" | "wait" => {
                let flag = if name == "wait" { "-p" } else { "-v" };
                args.windows(2)
                    .filter(|pair| pair[0].text == flag)
                    .map(|pair| &pair[1])
                    .collect()
            }
            "let" => {
                self.let_builtin(args, text);
                Vec::new()
            }
            _ => Vec::new(),
        };
        for operand in operands {
            self.name_operand(operand, text);
        }
    }
}

/// Why a build variable's value is dangerous, judged as its option forms
/// are: a compiler variable names a compiler, flags name no program to
/// run (a linker, a plugin, a wrapper, a tool to exec), and a value known
/// only at run time is fine only for paths.
fn build_value_danger(name: &str, value: &Arg) -> Option<String> {
    const PATHS: &[&str] = &[
        "PYTHONPATH",
        "CARGO_TARGET_DIR",
        "GOPATH",
        "GOCACHE",
        "GOTOOLCHAIN",
    ];
    if PATHS.contains(&name) {
        return None;
    }
    // `RUSTFLAGS="$RUSTFLAGS -D warnings"` adds to what the variable held
    // (the person's own setting): the words added are judged.
    let extended = value
        .text
        .replace(&format!("${{{name}}}"), "")
        .replace(&format!("${name}"), "")
        .replace(['"', '\''], "");
    let text = if let Some(text) = value.known() {
        text
    } else if extended.contains(['$', '`', '\\']) {
        return Some(format!(
            "gives `{name}` a value known only at run time, which may name a program"
        ));
    } else {
        &extended
    };
    let names_a_program = |denied: &[&str]| {
        text.split(|c: char| c.is_whitespace() || c == ',')
            .any(|token| {
                denied
                    .iter()
                    .any(|d| token.starts_with(d) || token.contains(&format!("{d}=")))
            })
    };
    let program = match name {
        "CC" | "CXX" => !regex_is(
            r"^(gcc|g\+\+|cc|c\+\+|clang|clang\+\+|tcc|musl-gcc)(-[0-9.]+)?$",
            text,
        ),
        "RUSTFLAGS" | "RUSTDOCFLAGS" | "CARGO_ENCODED_RUSTFLAGS" => [
            "linker",
            "link-arg",
            "-Z",
            "plugin",
            "codegen-backend",
            "llvm-args",
            "dlltool",
            "profile-",
            "remark",
        ]
        .iter()
        .any(|d| text.contains(d)),
        "GOFLAGS" => [
            "toolexec",
            "-exec",
            "extld",
            "-ldflags",
            "-gcflags",
            "-asmflags",
            "-overlay",
        ]
        .iter()
        .any(|d| text.contains(d)),
        _ => names_a_program(&[
            "-B",
            "-wrapper",
            "-fplugin",
            "-fpass-plugin",
            "-fuse-ld",
            "--ld-path",
            "-Xclang",
            "-mllvm",
            "-specs",
            "--specs",
            "@",
            "-plugin",
            "--plugin",
        ]),
    };
    program.then(|| format!("`{name}` names a program or plugin a build would run"))
}

fn regex_is(pattern: &str, text: &str) -> bool {
    regex::Regex::new(pattern).is_ok_and(|regex| regex.is_match(text))
}
