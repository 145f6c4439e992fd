//! What a command reads or writes that its operands do not say: the
//! repository whose settings git reads, the default outputs of compilers,
//! the output options of grammars offcode does not parse one by one, and
//! argument files that hold more options.

use std::path::{Path, PathBuf};

use super::table::{Entry, Reading};
use super::understood::WriteMode;
use super::{Arg, Check};

impl Check<'_> {
    /// git reads the settings and hooks of the repository it runs in: the
    /// workspace's own are yours (commands cannot change them), but one
    /// nested in it (`git -C vendor/x`, a `cd` into it, `--git-dir`) came
    /// with the files. git there is dangerous when that repository names
    /// programs; it is never plain where the folder is known only at run
    /// time.
    pub(super) fn git_repository(&mut self, reading: &Reading, text: &str) {
        let mut dirs = self.cwd.dirs.clone();
        let mut git_dir = None;
        for option in &reading.options {
            let value = option.value.as_ref();
            match option.name.as_str() {
                "-C" | "--git-dir" | "--work-tree" => {
                    let Some(value) = value.and_then(Arg::known) else {
                        self.danger(text, "`git` runs in a repository known only at run time");
                        return;
                    };
                    let resolved: Vec<PathBuf> = dirs
                        .iter()
                        .map(|dir| super::real_path(&dir.join(value)))
                        .collect();
                    match option.name.as_str() {
                        "-C" => dirs = resolved,
                        "--git-dir" => git_dir = Some(resolved),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        if self.cwd.unknown {
            self.danger(text, "`git` runs in a folder known only at run time");
            return;
        }
        // Elsewhere than the workspace's own repository after the line wrote
        // files: it may have written the settings git would read there.
        let elsewhere = git_dir.is_some() || dirs != [self.root.to_path_buf()];
        if elsewhere && self.written_at.is_some_and(|at| at < self.count) {
            self.danger(
                text,
                "`git` reads a repository's settings after this line wrote files: it could read what the line wrote",
            );
            return;
        }
        let repositories = git_dir.unwrap_or_else(|| {
            dirs.iter()
                .filter_map(|dir| discover_repository(dir))
                .collect()
        });
        let own = super::real_path(&self.root.join(".git"));
        for repository in repositories {
            // The workspace's own repository, or one it lies in: yours.
            let holds_workspace = repository
                .parent()
                .is_some_and(|top| self.root.starts_with(top) && repository.ends_with(".git"));
            if repository == own || holds_workspace {
                continue;
            }
            if let Some(why) = crate::confine::gitdirs::runs_programs(&repository) {
                let shown = repository.strip_prefix(self.root).unwrap_or(&repository);
                self.danger(
                    text,
                    format!(
                        "`git` would run what the repository `{}` names ({why})",
                        shown.display()
                    ),
                );
            }
        }
    }

    /// What a C compiler writes when `-o` does not say: `a.out`, or with
    /// `-c`/`-S` an object or assembly file per source, in the current
    /// folder, each judged like a redirect (replacing one is dangerous).
    /// (`@FILE` is looked at for every compiler: [`Self::argument_files`].)
    pub(super) fn compiler_output(&mut self, reading: &Reading, text: &str) {
        const SOURCES: &[&str] = &[
            "c", "cc", "cpp", "cxx", "c++", "C", "m", "mm", "s", "S", "i", "ii",
        ];
        let has = |names: &[&str]| {
            reading
                .options
                .iter()
                .any(|o| names.contains(&o.name.as_str()))
        };
        // `-MD`/`-MMD` write a dependency file beside the object, named
        // after `-o` when given, else after each source, unless `-MF` names it.
        if has(&["-MD", "-MMD"]) && !has(&["-MF"]) {
            let output = reading
                .options
                .iter()
                .find(|o| o.name == "-o" || o.name == "--output")
                .and_then(|o| o.value.as_ref());
            let named: Vec<String> = match output {
                Some(output) => vec![output.text.clone()],
                None => reading
                    .operands
                    .iter()
                    .filter_map(Arg::known)
                    .filter(|s| {
                        Path::new(s)
                            .extension()
                            .is_some_and(|x| SOURCES.iter().any(|k| x == *k))
                    })
                    .filter_map(|s| {
                        Path::new(s)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                    })
                    .collect(),
            };
            for name in named {
                let dependency = Path::new(&name).with_extension("d");
                self.write_target(
                    &Arg::literal(&dependency.to_string_lossy()),
                    text,
                    WriteMode::Replace,
                );
            }
        }
        if has(&[
            "-o",
            "--output",
            "-E",
            "-M",
            "-MM",
            "-fsyntax-only",
            "--version",
            "-v",
            "--help",
            "-dumpversion",
            "-dumpmachine",
            "-print-search-dirs",
        ]) {
            return;
        }
        let suffix = if has(&["-c"]) {
            "o"
        } else if has(&["-S"]) {
            "s"
        } else {
            self.write_target(&Arg::literal("a.out"), text, WriteMode::Replace);
            return;
        };
        for operand in &reading.operands {
            let Some(source) = operand.known() else {
                continue;
            };
            let path = Path::new(source);
            if path
                .extension()
                .is_some_and(|x| SOURCES.iter().any(|s| x == *s))
                && let Some(stem) = path.file_stem()
            {
                let output = format!("{}.{suffix}", stem.to_string_lossy());
                self.write_target(&Arg::literal(&output), text, WriteMode::Replace);
            }
        }
    }

    /// What rustc writes when `-o`, `--out-dir` and `--emit` do not say: a
    /// program named after the crate's file (`rustc x.rs` writes `./x`),
    /// judged like a redirect.
    pub(super) fn rustc_output(&mut self, reading: &Reading, text: &str) {
        let says = [
            "-o",
            "--out-dir",
            "--emit",
            "--crate-type",
            "--print",
            "-V",
            "--version",
            "-h",
            "--help",
            "--explain",
        ];
        if reading
            .options
            .iter()
            .any(|o| says.contains(&o.name.as_str()))
        {
            return;
        }
        for operand in &reading.operands {
            if let Some(source) = operand.known()
                && let Some(stem) = source.strip_suffix(".rs")
                && let Some(name) = Path::new(stem).file_name()
            {
                self.write_target(
                    &Arg::literal(&name.to_string_lossy()),
                    text,
                    WriteMode::Replace,
                );
            }
        }
    }

    /// A program whose options offcode does not parse one by one may still
    /// name the files it writes with options that say so by their name
    /// (`--log-file`, `--outputFile.json`, `--output-path`, `--cov-report
    /// xml:PATH`, `output=PATH` inside a value): each such path is judged
    /// like a redirect, so one that replaces an existing file is dangerous.
    pub(super) fn free_outputs(&mut self, entry: &Entry, args: &[Arg], text: &str) {
        static PATTERNS: std::sync::LazyLock<Option<(regex::Regex, regex::Regex)>> =
            std::sync::LazyLock::new(|| {
                let option = regex::Regex::new(
                    r"^(.*[-_])?((log|output|out|report|junit|junitxml|result|results|dump|trace|profile|cov|coverage|archive|html|xml|json)[-_]?(file|path)|output|outfile|cov[-_]report)$",
                );
                let value = regex::Regex::new(
                    r"(?i)(?:^|[,;])\s*(?:output|outfile|output[-_]?file|file)=([^,;]+)",
                );
                option.ok().zip(value.ok())
            });
        let Some((output_option, output_value)) = PATTERNS.as_ref() else {
            return;
        };
        let mut index = 0;
        while index < args.len() {
            let arg = &args[index];
            index += 1;
            if arg.text == "--" {
                break;
            }
            let Some(long) = arg.text.strip_prefix("--") else {
                continue;
            };
            let (option, attached) = match long.split_once('=') {
                Some((option, value)) => (option, Some(value.to_owned())),
                None => (long, None),
            };
            if entry.effects.contains_key(&format!("--{option}")) {
                continue;
            }
            let option = option
                .split('.')
                .next()
                .unwrap_or(option)
                .to_ascii_lowercase();
            let value = match attached {
                Some(value) => Some((value, arg.dynamic)),
                None => args
                    .get(index)
                    .filter(|next| !next.text.starts_with('-'))
                    .map(|next| (next.text.clone(), next.dynamic)),
            };
            let Some((value, dynamic)) = value else {
                continue;
            };
            let mut paths = Vec::new();
            if output_option.is_match(&option) {
                // `xml:PATH` names a format and a path.
                paths.push(
                    value
                        .rsplit_once(':')
                        .map_or(value.as_str(), |(_, p)| p)
                        .to_owned(),
                );
            }
            paths.extend(
                output_value
                    .captures_iter(&value)
                    .filter_map(|c| c.get(1))
                    .map(|m| m.as_str().trim().to_owned()),
            );
            for path in paths.into_iter().filter(|p| !p.is_empty()) {
                let written = Arg {
                    text: path,
                    dynamic,
                };
                self.write_target(&written, text, WriteMode::Replace);
            }
        }
    }

    /// `@FILE` words, which compilers, JVMs and many tools whose options
    /// offcode does not parse one by one replace with the file's words:
    /// options offcode never sees (`-o`, `-XX:OnError=`, a wrapper). A
    /// program whose options are parsed would take such a word as an
    /// operand (a script's argument, a file).
    pub(super) fn argument_files(&mut self, name: &str, args: &[Arg], text: &str) {
        for arg in args {
            // Whether or not the file is there yet: the line may write it.
            if arg.text.len() > 1 && arg.text.starts_with('@') {
                self.danger(
                    text,
                    format!(
                        "`{name}` may read more options from `{}`, which offcode does not check",
                        arg.text
                    ),
                );
            }
        }
    }
}

/// The git directory git would use in `dir`: the nearest `.git` (or a
/// bare repository) at or above it.
fn discover_repository(dir: &Path) -> Option<PathBuf> {
    let mut current = dir.to_path_buf();
    loop {
        let dot_git = current.join(".git");
        if dot_git.is_dir() {
            return Some(super::real_path(&dot_git));
        }
        if dot_git.is_file() {
            let text = std::fs::read_to_string(&dot_git).unwrap_or_default();
            let target = text.trim().strip_prefix("gitdir:").unwrap_or("").trim();
            return Some(super::real_path(&current.join(target)));
        }
        if current.join("HEAD").is_file() && current.join("objects").is_dir() {
            return Some(current);
        }
        if !current.pop() {
            return None;
        }
    }
}
