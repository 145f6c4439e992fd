//! Variables: what the line assigns, exports and reads into them. A
//! program's environment may only get harmless names; shell variables that
//! change how commands are found are never set; and data the line does not
//! spell out is noted, for the places bash evaluates values as code.

use super::{Arg, Assignment, Check};

/// Builtins whose arguments name variables, and so evaluate subscripts.
const BUILTINS_WITH_NAMES: &[&str] = &[
    "read",
    "printf",
    "unset",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "getopts",
    "mapfile",
    "readarray",
    "wait",
    "let",
    "test",
    "[",
    "eval",
    "shift",
];

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
        // A number worked out by arithmetic (`i=$((i + 1))`) holds no code.
        let arithmetic = value.text.starts_with("$((")
            && value.text.ends_with("))")
            && !value.text.contains(['[', '`'])
            && !super::holds_substitution(&value.text);
        if !arithmetic
            && (value.dynamic || value.text.contains('[') || super::holds_substitution(&value.text))
        {
            self.taint
                .get_or_insert_with(|| format!("`{name}={}`", value.text));
        }
        if FORBIDDEN_VARIABLES.contains(&name)
            || name.starts_with("BASH_FUNC_")
            || name.starts_with("LD_")
        {
            self.danger(
                &format!("{name}={}", value.text),
                format!("sets {name}, which changes how commands are found or run"),
            );
        }
        if self.gate.code_variables.iter().any(|v| v == name) {
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
            self.runs(
                &format!("{name}=…"),
                "makes builds and interpreters load or run what it names",
            );
            return;
        }
        if !safe {
            self.danger(
                &format!("{name}={}", assignment.value.text),
                format!("gives a command `{name}`, which offcode does not know to be harmless"),
            );
        }
    }

    /// Builtins that set variables from input, or take variable names and
    /// so evaluate a subscript in one (`read 'x[$(id)]'`, `test -v ...`).
    pub(super) fn variables(&mut self, name: &str, args: &[Arg], text: &str) {
        let sets_from_input = matches!(name, "read" | "mapfile" | "readarray" | "getopts")
            || (name == "printf" && args.iter().any(|a| a.text.starts_with("-v")));
        if sets_from_input {
            self.taint.get_or_insert_with(|| format!("`{name}`"));
        }
        if BUILTINS_WITH_NAMES.contains(&name)
            && args.iter().any(|a| {
                a.text.contains('[') && ["$(", "`"].iter().any(|code| a.text.contains(code))
            })
        {
            self.danger(
                text,
                format!("`{name}` evaluates a subscript that holds code"),
            );
        }
    }
}
