//! A git config as git reads it (`git config --list -z`, or where git
//! cannot be run, only plain lines), judged against the short list of
//! settings known to run nothing, and written back.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Settings that make git run nothing, by `section.key`; `*` stands for a
/// subsection (a remote's or a branch's name). Everything else is taken
/// out of a config a command wrote: the list of keys that run programs
/// is long and grows with each git release, this one does not need to.
const HARMLESS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.whitespace",
    "core.compression",
    "core.abbrev",
    "core.checkstat",
    "core.trustctime",
    "core.untrackedcache",
    "core.preloadindex",
    "core.sharedrepository",
    "extensions.objectformat",
    "extensions.refstorage",
    "extensions.worktreeconfig",
    "extensions.noop",
    "extensions.preciousobjects",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.mirror",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "branch.*.description",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "submodule.*.path",
    "submodule.*.shallow",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "gc.auto",
];

/// One config setting as git reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Setting {
    /// `section.subsection.name`, section and name in lower case.
    pub(super) key: String,
    pub(super) value: Option<String>,
}

/// Whether `key` is one of [`HARMLESS`].
pub(super) fn harmless(key: &str) -> bool {
    let (section, rest) = key.split_once('.').unwrap_or((key, ""));
    let (subsection, name) = match rest.rsplit_once('.') {
        Some((subsection, name)) => (Some(subsection), name),
        None => (None, rest),
    };
    let pattern = match subsection {
        Some(_) => format!("{section}.*.{name}"),
        None => format!("{section}.{name}"),
    };
    HARMLESS.contains(&pattern.as_str())
}

/// The settings of a config file as git reads them (`git config --file F
/// --list -z`, includes not followed: `include.path` is itself a key); where
/// git cannot be run, as [`read_plain`] reads them.
pub(super) fn read_config(path: &Path) -> Result<Vec<Setting>, String> {
    // A FIFO would hang git (and this check) on open; a link may lead
    // anywhere. Neither is read: the caller treats it as unreadable.
    if std::fs::symlink_metadata(path).is_ok_and(|meta| !meta.is_file()) {
        return Err("is not a plain file (git would follow or wait on it)".to_owned());
    }
    let plain = || {
        read_plain(&String::from_utf8_lossy(
            &read_plain_file(path).unwrap_or_default(),
        ))
    };
    let Some(git) = git_program() else {
        return plain();
    };
    let Ok(path) = std::path::absolute(path) else {
        return plain();
    };
    // From `/`: git looks for a repository where it starts, and one in the
    // workspace may hold what makes git wait (a FIFO as `.git/HEAD`).
    let child = std::process::Command::new(git)
        .args(["config", "--no-includes", "--list", "-z", "--file"])
        .arg(&path)
        .current_dir("/")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", "/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(child) = child else {
        return plain();
    };
    match within(child, GIT_TIMEOUT) {
        Some(output) if output.status.success() => Ok(output
            .stdout
            .split(|byte| *byte == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let entry = String::from_utf8_lossy(entry);
                match entry.split_once('\n') {
                    Some((key, value)) => Setting {
                        key: key.to_owned(),
                        value: Some(value.to_owned()),
                    },
                    None => Setting {
                        key: entry.into_owned(),
                        value: None,
                    },
                }
            })
            .collect()),
        Some(_) => Err("is not a config git can read".to_owned()),
        None => Err("is a config git did not finish reading".to_owned()),
    }
}

/// How long git is given to read one config file.
const GIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// `child`'s output, or `None` (and it killed) when it has not ended
/// within `limit`: no file a command left can make the check wait.
fn within(child: std::process::Child, limit: std::time::Duration) -> Option<std::process::Output> {
    let pid = rustix::process::Pid::from_child(&child);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    if let Ok(output) = receiver.recv_timeout(limit) {
        return output.ok();
    }
    // The thread reaps it.
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    None
}

/// How much of a file git reads for its settings or a pointer is read.
const PLAIN_LIMIT: u64 = 1024 * 1024;

/// The start of the plain file at `path` (never a FIFO or device, never
/// through a symlink, never waiting); `None` when it is not one.
pub(super) fn read_plain_file(path: &Path) -> Option<Vec<u8>> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Read as _;
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    if !rustix::fs::fstat(&fd)
        .is_ok_and(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode).is_file())
    {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(PLAIN_LIMIT)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// The git offcode itself runs to read a config: the system's, or the
/// first on `PATH` in an absolute folder outside the workspace (offcode's
/// working directory). offcode runs unconfined, so a `git` the workspace
/// could put on `PATH` (`.`, `node_modules/.bin`) is never it.
fn git_program() -> Option<&'static Path> {
    static GIT: std::sync::LazyLock<Option<PathBuf>> = std::sync::LazyLock::new(|| {
        let workspace = std::env::current_dir().ok();
        let system = ["/usr/bin", "/bin", "/usr/local/bin"].map(PathBuf::from);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let on_path = std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .filter(|dir| workspace.as_ref().is_none_or(|w| !dir.starts_with(w)));
        system
            .into_iter()
            .chain(on_path)
            .map(|dir| dir.join("git"))
            .find(|git| crate::paths::runnable(git))
    });
    GIT.as_deref()
}

/// Reads a config without git: only `[section]` and `[section "sub"]`
/// headers on lines of their own and `key = value` lines with plain
/// values; anything else (a setting on its header's line, a continuation,
/// quotes, escapes) is refused, since git might read it otherwise.
pub(super) fn read_plain(text: &str) -> Result<Vec<Setting>, String> {
    let refused = || Err("has lines offcode cannot read without git".to_owned());
    let mut header = None;
    let mut settings = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let plain = |s: &str| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-.".contains(c))
            };
            header = match inner.split_once(" \"") {
                Some((section, sub)) => match sub.strip_suffix('"') {
                    Some(sub) if plain(section) && !sub.contains(['"', '\\']) => {
                        Some(format!("{}.{sub}", section.to_ascii_lowercase()))
                    }
                    _ => return refused(),
                },
                None if plain(inner) => Some(inner.to_ascii_lowercase()),
                None => return refused(),
            };
            continue;
        }
        let (Some(section), Some((key, value))) = (&header, line.split_once('=')) else {
            return refused();
        };
        let key = key.trim();
        let value = value.trim();
        let plain_key =
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !plain_key || value.contains(['"', '\\', '#', ';']) {
            return refused();
        }
        settings.push(Setting {
            key: format!("{section}.{}", key.to_ascii_lowercase()),
            value: Some(value.to_owned()),
        });
    }
    Ok(settings)
}

/// The settings written back in git's syntax, every value quoted.
pub(super) fn render(settings: &[&Setting]) -> String {
    let mut text = String::new();
    let mut current = None;
    for setting in settings {
        let (section, rest) = setting.key.split_once('.').unwrap_or((&setting.key, ""));
        let (subsection, name) = match rest.rsplit_once('.') {
            Some((subsection, name)) => (Some(subsection), name),
            None => (None, rest),
        };
        let header = match subsection {
            Some(sub) => format!("[{section} \"{}\"]", escape(sub)),
            None => format!("[{section}]"),
        };
        if current.as_ref() != Some(&header) {
            text.push_str(&header);
            text.push('\n');
            current = Some(header);
        }
        let _ = match &setting.value {
            Some(value) => writeln!(text, "\t{name} = \"{}\"", escape(value)),
            None => writeln!(text, "\t{name}"),
        };
    }
    text
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn keys_match_the_list_with_any_subsection() {
        assert!(harmless("core.bare"));
        assert!(harmless("remote.origin.url"));
        assert!(harmless("remote.a.b.url"));
        assert!(!harmless("core.fsmonitor"));
        assert!(!harmless("core.hookspath"));
        assert!(!harmless("alias.st"));
        assert!(!harmless("include.path"));
        assert!(!harmless("remote.origin.uploadpack"));
    }

    #[test]
    fn without_git_only_plain_lines_are_read() {
        let read = read_plain("[core]\n\tbare = false\n[remote \"o\"]\n\turl = x\n").unwrap();
        assert_eq!(
            read.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(),
            ["core.bare", "remote.o.url"]
        );
        for text in [
            "[core]\tfsmonitor = id\n",
            "[core]\n\tfsmonitor = \"id\"\n",
            "[core]\n\tx = a \\\n b\n",
            "bare = false\n",
        ] {
            assert!(read_plain(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn what_is_written_back_reads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let settings = [
            Setting {
                key: "remote.Up Stream.url".to_owned(),
                value: Some("a \"b\" \\c".to_owned()),
            },
            Setting {
                key: "core.bare".to_owned(),
                value: None,
            },
        ];
        std::fs::write(&path, render(&settings.iter().collect::<Vec<_>>())).unwrap();
        assert_eq!(read_config(&path).unwrap(), settings);
    }
}
