//! The check after a command, made however the command ends: what it left
//! for later (changed git settings and hooks, offcode's config, the
//! person's new shell files) is undone when it exits, times out, is
//! aborted (Esc, Ctrl+C, its future dropped), and when offcode itself dies
//! during it.
//!
//! Before the command starts, what the check needs (the protected paths as
//! they were, the time, the person's files) is recorded in offcode's data
//! folder, which no command can reach, and the reaper (`offcode __reaper`)
//! is told of it. The check is made by whoever sees the end first:
//! the call itself ([`After::finish`]); its guard when dropped; the reaper
//! when offcode is gone (after it has stopped the command); or the next
//! offcode started in the workspace, when the reaper was gone too
//! ([`recover`]). Each removes the record once the check is made.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::protect::{Snapshot, Watch};
use crate::sandbox::Sandbox;

/// Where the records of running commands' checks are kept, in offcode's
/// data folder.
pub const RECORDS: &str = "pending-checks";

/// Reports of checks made when a call was cut short, for whoever reports
/// its end.
pub type Late = Arc<Mutex<Vec<String>>>;

/// The reports `late` holds, taken out of it.
pub fn take(late: &Late) -> Vec<String> {
    std::mem::take(
        &mut *late
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

/// What the check after one command needs, as kept on disk.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The workspace.
    root: PathBuf,
    /// offcode's PID and its start time (so a later process with the same
    /// PID is not taken for it).
    owner: (u32, u64),
    /// The protected paths before, when the command is confined.
    before: Option<Snapshot>,
    /// The time and the person's files before.
    watch: Watch,
    /// Paths in the workspace its repository's config names (included
    /// files, the hooks folder), kept like the protected ones.
    #[serde(default)]
    also: Vec<PathBuf>,
}

impl Record {
    /// Makes the check: undoes what changed since, and says what.
    fn check(&self, sandbox: &Sandbox) -> String {
        let mut text = self.watch.finish(sandbox.root());
        if let Some(before) = &self.before {
            let changes = before.restore(&Snapshot::take(sandbox.root(), &self.also), sandbox);
            if !changes.is_empty() {
                let _ = write!(
                    text,
                    "\n[offcode: commands may not change git's config and hooks or offcode's config: {}]",
                    changes.join("; ")
                );
            }
        }
        text
    }
}

/// The check after one command, pending until [`After::finish`] or drop.
#[derive(Debug)]
pub struct After {
    record: Record,
    /// Where the record is kept; `None` when it could not be written (the
    /// call still checks, but offcode's death would skip the check).
    file: Option<PathBuf>,
    sandbox: Arc<Sandbox>,
    late: Late,
    done: bool,
}

impl After {
    /// Records the state before a command runs under `confinement` in
    /// `sandbox`'s workspace, in `records` (offcode's folder for them), and
    /// tells the reaper through `running` (which must be told before the
    /// command starts). `late` gets the report of a check made on drop.
    pub fn start(
        sandbox: &Arc<Sandbox>,
        confinement: Option<&super::Confinement>,
        records: Option<&Path>,
        running: &dyn Fn(&Path),
        late: &Late,
    ) -> Self {
        let also: Vec<PathBuf> = confinement
            .map(|confinement| confinement.spec().read_only.clone())
            .unwrap_or_default();
        let record = Record {
            root: sandbox.root().to_path_buf(),
            owner: (std::process::id(), started(std::process::id()).unwrap_or(0)),
            before: confinement.map(|_| Snapshot::take(sandbox.root(), &also)),
            watch: Watch::start(confinement),
            also,
        };
        let file = records.and_then(|dir| write(dir, &record).ok());
        if let Some(file) = &file {
            running(file);
        }
        Self {
            record,
            file,
            sandbox: Arc::clone(sandbox),
            late: Arc::clone(late),
            done: false,
        }
    }

    /// Makes the check once the command has ended (its group stopped);
    /// the lines that say what was undone, to append to its result.
    pub fn finish(mut self) -> String {
        self.done = true;
        self.check()
    }

    fn check(&self) -> String {
        let text = self.record.check(&self.sandbox);
        // The reaper skips a record that is gone.
        if let Some(file) = &self.file {
            let _ = std::fs::remove_file(file);
        }
        text
    }
}

impl Drop for After {
    /// A call cut short: the check is made all the same, and its report
    /// kept for the call's end.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let text = self.check();
        if !text.is_empty() {
            self.late
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(text.trim_start().to_owned());
        }
    }
}

/// Writes `record` under `dir`, whole or not at all; its path.
fn write(dir: &Path, record: &Record) -> std::io::Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    crate::paths::private_dir(dir)?;
    let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("{}-{number}.json", std::process::id());
    let file = dir.join(&name);
    let partial = dir.join(format!(".{name}.partial"));
    let mut out = crate::paths::private_file()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&partial)?;
    out.write_all(&serde_json::to_vec(record).map_err(std::io::Error::other)?)?;
    std::fs::rename(&partial, &file)?;
    Ok(file)
}

/// When process `pid` started (clock ticks since boot), from
/// `/proc/PID/stat`; `None` when there is no such process.
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which may hold spaces and ")".
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split(' ').nth(19)?.parse().ok()
}

/// Makes the check recorded at `file` and removes the record: the
/// reaper's part, once it has stopped the command.
pub fn check_recorded(file: &Path) {
    if let Some((record, sandbox)) = read(file) {
        let _ = record.check(&sandbox);
        let _ = std::fs::remove_file(file);
    }
}

fn read(file: &Path) -> Option<(Record, Sandbox)> {
    let record: Record = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    let sandbox = Sandbox::new(&record.root).ok()?;
    Some((record, sandbox))
}

/// At start in `root`: makes the checks an earlier offcode left pending
/// there (it and its reaper died during a command), and says what each
/// undid. A record of a running offcode is left alone.
pub fn recover(records: &Path, root: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let entries = std::fs::read_dir(records).into_iter().flatten().flatten();
    for entry in entries {
        let file = entry.path();
        if file.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Some((record, sandbox)) = read(&file) else {
            continue;
        };
        let (pid, start) = record.owner;
        if record.root != root || started(pid) == Some(start) {
            continue;
        }
        let text = record.check(&sandbox);
        let _ = std::fs::remove_file(&file);
        if !text.is_empty() {
            said.push(format!(
                "An earlier offcode run ended during a command; its check was made now:{text}"
            ));
        }
    }
    said
}
