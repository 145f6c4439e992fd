//! Operands with a meaning beyond a file to read: the destination of
//! `cp`/`install`/`ln`, sed scripts and awk programs, `make VAR=value`,
//! and `git checkout`'s paths.

use std::path::PathBuf;

use super::table::Reading;
use super::understood::WriteMode;
use super::{Arg, Check, basename, is_stream};

impl Check<'_> {
    /// sed's script and awk's program, from `-e` or the first operand,
    /// read for what they write or run.
    pub(super) fn script_language(
        &mut self,
        name: &str,
        language: &str,
        reading: &Reading,
        text: &str,
    ) {
        let inline = ["-e", "--expression", "--source"];
        let files = ["-f", "--file", "-i", "--include"];
        let mut programs: Vec<&Arg> = reading
            .options
            .iter()
            .filter(|o| inline.contains(&o.name.as_str()))
            .filter_map(|o| o.value.as_ref())
            .collect();
        let program_files: Vec<&Arg> = reading
            .options
            .iter()
            .filter(|o| files.contains(&o.name.as_str()))
            .filter_map(|o| o.value.as_ref())
            .collect();
        let mut read_files = Vec::new();
        for file in &program_files {
            match self.program_file(file) {
                Ok(source) => read_files.push(source),
                Err(why) => self.danger(text, format!("`{name}`: {why}")),
            }
        }
        let from_file = !program_files.is_empty();
        if programs.is_empty() && !from_file {
            let Some(program) = reading.operands.first() else {
                self.danger(text, format!("`{name}` without a program"));
                return;
            };
            programs.push(program);
        }
        let inline: Vec<Option<String>> = programs
            .iter()
            .map(|program| program.known().map(str::to_owned))
            .chain(read_files.into_iter().map(Some))
            .collect();
        for program in inline {
            let Some(source) = program.as_deref() else {
                self.danger(text, format!("a `{name}` program known only at run time"));
                continue;
            };
            let read = if language == "sed" {
                super::scripts::sed(source).map(|effects| effects.writes)
            } else {
                super::scripts::awk(source).map(|()| Vec::new())
            };
            match read {
                Ok(writes) => {
                    for file in writes {
                        self.write_target(&Arg::literal(&file), text, WriteMode::Replace);
                    }
                }
                Err(why) => self.danger(text, why),
            }
        }
    }
    /// The text of a program file (`sed -f FILE`, `awk -f FILE`), read
    /// now to be judged like a program given inline; why it cannot be.
    fn program_file(&self, file: &Arg) -> Result<String, String> {
        const MAX: u64 = 64 * 1024;
        let Some(name) = file.known() else {
            return Err("reads its program from a file named only at run time".to_owned());
        };
        if self.cwd.unknown && !name.starts_with('/') {
            return Err(format!(
                "reads its program from `{name}` after a `cd` known only at run time"
            ));
        }
        let paths = self.resolve(name);
        if self
            .verdict
            .writes
            .iter()
            .any(|write| write.paths.iter().any(|p| paths.contains(p)))
        {
            return Err(format!(
                "reads its program from `{name}`, which this line writes"
            ));
        }
        let mut texts = paths.iter().map(|path| {
            let meta = std::fs::metadata(path)
                .map_err(|e| format!("cannot read its program file `{name}`: {e}"))?;
            if !meta.is_file() || meta.len() > MAX {
                return Err(format!(
                    "its program file `{name}` is not a file of at most 64 KiB"
                ));
            }
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read its program file `{name}`: {e}"))
        });
        let first = texts
            .next()
            .unwrap_or_else(|| Err(format!("cannot find its program file `{name}`")))?;
        // After a `cd` the file may be one of several: all must read alike.
        for other in texts {
            if other? != first {
                return Err(format!(
                    "its program file `{name}` differs between the folders the line may be in"
                ));
            }
        }
        Ok(first)
    }

    /// `cp`, `install`, `ln`: the destination (last operand, or `-t DIR`)
    /// is written; the parsed words go back to the copy check.
    pub(super) fn dest_operands(&mut self, name: &str, reading: &Reading, text: &str) {
        // `install -d DIR...` creates directories, and sets the mode and
        // owner of ones that exist.
        if reading
            .options
            .iter()
            .any(|o| o.name == "-d" || o.name == "--directory")
        {
            for operand in &reading.operands {
                if operand.dynamic
                    || self
                        .resolve(&operand.text)
                        .iter()
                        .any(|p| std::fs::symlink_metadata(p).is_ok())
                {
                    self.danger(
                        text,
                        format!("`{name} -d` changes the mode of an existing directory"),
                    );
                }
            }
            return;
        }
        let mut words: Vec<Arg> = Vec::new();
        for option in &reading.options {
            match (option.name.as_str(), &option.value) {
                ("--target-directory", Some(value)) => {
                    words.push(Arg::literal("-t"));
                    words.push(value.clone());
                }
                (long, Some(value)) if long.starts_with("--") => {
                    words.push(Arg {
                        text: format!("{long}={}", value.text),
                        dynamic: value.dynamic,
                    });
                }
                (short, value) => {
                    words.push(Arg::literal(short));
                    words.extend(value.iter().cloned());
                }
            }
        }
        words.push(Arg::literal("--"));
        words.extend(reading.operands.iter().cloned());
        self.copy(name, &words, text);
    }
    /// `make VAR=value`: a value becomes part of the commands the Makefile
    /// runs, so only plain words are plain.
    pub(super) fn make_operands(&mut self, operands: &[Arg], text: &str) {
        for operand in operands {
            let Some((variable, value)) = operand.text.split_once('=') else {
                continue;
            };
            // Any variable can name a program a rule runs (`CC=rm`,
            // `COMPILE.c=rm`), so only numbers are plain (`V=1`).
            let plain = !operand.dynamic
                && !variable.is_empty()
                && !value.is_empty()
                && value.chars().all(|c| c.is_ascii_digit());
            if !plain {
                self.danger(
                    text,
                    format!(
                        "`make {}` puts text into the commands make runs",
                        operand.text
                    ),
                );
            }
        }
    }
    /// `git checkout BRANCH` is plain; `git checkout [--] PATH` overwrites
    /// the file with the committed version.
    pub(super) fn checkout_operands(&mut self, reading: &Reading, text: &str) {
        let new_branch = reading.options.iter().any(|o| o.name == "-b");
        let paths: Vec<&Arg> = reading
            .operands
            .iter()
            .skip(usize::from(new_branch))
            .filter(|operand| {
                operand.dynamic
                    || operand.text == "--"
                    || operand.text == "."
                    || self
                        .resolve(&operand.text)
                        .iter()
                        .any(|p| std::fs::symlink_metadata(p).is_ok())
            })
            .collect();
        let too_many = reading.operands.len() > 1 + usize::from(new_branch);
        if !paths.is_empty() || too_many {
            self.danger(text, "git checkout of a path discards its local changes");
        }
    }
    /// `cp`, `install`, `ln -f`: the destination must not exist (or, for a
    /// directory, hold none of the sources' names).
    pub(super) fn copy(&mut self, name: &str, args: &[Arg], text: &str) {
        let mut operands = Vec::new();
        let mut directory: Option<&Arg> = None;
        let mut index = 0;
        let mut options_end = false;
        let (mut no_target, mut parents, mut links) = (false, false, name == "ln");
        while index < args.len() {
            let arg = &args[index];
            let cluster =
                (!options_end && arg.text.starts_with('-') && !arg.text.starts_with("--"))
                    .then_some(arg.text.as_str());
            no_target |= cluster.is_some_and(|c| c.contains('T'))
                || (!options_end && arg.text.starts_with("--no-t"));
            parents |= !options_end && arg.text.starts_with("--pa");
            links |= name == "cp"
                && (cluster.is_some_and(|c| c.contains(['s', 'l']))
                    || (!options_end
                        && (arg.text.starts_with("--sy") || arg.text.starts_with("--li"))));
            if !options_end && arg.text == "--" {
                options_end = true;
            } else if !options_end && (arg.text == "-t" || arg.text == "--target-directory") {
                directory = args.get(index + 1);
                index += 1;
            } else if !options_end && arg.text.starts_with("--target-directory=") {
                return self.danger(
                    text,
                    format!("{name} into a directory given as an option value"),
                );
            } else if !options_end
                && arg.text.starts_with('-')
                && arg.text.len() > 1
                && !arg.dynamic
            {
                // option; `-S SUFFIX`, `-m MODE`, `-o OWNER`, `-g GROUP` take a value
                if matches!(arg.text.as_str(), "-S" | "-m" | "-o" | "-g") {
                    index += 1;
                }
            } else {
                operands.push(arg);
            }
            index += 1;
        }
        let (destination, sources) = match split_destination(directory, operands) {
            Ok(Some(split)) => split,
            Ok(None) => return,
            Err(why) => return self.danger(text, why),
        };
        let why = format!("{name} replaces an existing file");
        let Some(target) = destination.known() else {
            return self.danger(text, "writes to a file named only at run time");
        };
        if is_stream(target) {
            return;
        }
        let paths = self.resolve(target);
        if no_target && paths.iter().any(|p| std::fs::symlink_metadata(p).is_ok()) {
            return self.danger(
                text,
                format!("{name} -T writes into `{target}`, which exists, replacing what is there"),
            );
        }
        if self.through_link(&paths) {
            return self.danger(text, format!("{name} writes through a link this line made"));
        }
        let mut written = paths.clone();
        if parents {
            // `cp --parents a/b dir` writes `dir/a/b`.
            written.clear();
            for source in &sources {
                let Some(source) = source.known() else {
                    return self.danger(text, "copies a file named only at run time");
                };
                let inside: Vec<PathBuf> = paths.iter().map(|p| p.join(source)).collect();
                self.target_must_be_new(text, target, &inside, &why);
                written.extend(inside);
            }
        } else if paths.iter().any(|p| p.is_dir()) {
            written.clear();
            for source in sources {
                let Some(source) = source.known() else {
                    return self.danger(
                        text,
                        "copies a file named only at run time into a directory",
                    );
                };
                let leaf = basename(source.trim_end_matches('/')).to_owned();
                let inside: Vec<PathBuf> = paths.iter().map(|p| p.join(&leaf)).collect();
                self.target_must_be_new(text, target, &inside, &why);
                written.extend(inside);
            }
        } else {
            self.target_must_be_new(text, target, &paths, &why);
        }
        if links {
            self.links.extend(written);
        }
        self.verdict.writes.push(super::Write {
            target: target.to_owned(),
            paths,
        });
        self.written_at.get_or_insert(self.count);
    }
}

/// A copy's destination (`-t DIR`, else the last operand) and sources;
/// `None` with a single operand (the program fails), `Err` when one word
/// expands to several (`{a,victim}.txt`, a glob, `"$@"`, what xargs or
/// `find -exec {} +` appends): the last of them is a destination nobody
/// named.
fn split_destination<'a>(
    directory: Option<&'a Arg>,
    operands: Vec<&'a Arg>,
) -> Result<Option<(&'a Arg, Vec<&'a Arg>)>, &'static str> {
    if let Some(dir) = directory {
        return Ok(Some((dir, operands)));
    }
    match operands.split_last() {
        Some((last, rest)) if !rest.is_empty() => Ok(Some((*last, rest.to_vec()))),
        _ if operands.iter().any(|o| o.dynamic) => Err("writes to a file named only at run time"),
        _ => Ok(None),
    }
}
