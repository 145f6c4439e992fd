//! The one owner of the process groups offcode starts: commands and MCP
//! servers alike. A group is held while it runs and killed when its holder
//! is dropped; leaving offcode kills every group still held; and should
//! offcode be killed outright (SIGKILL, the OOM killer), a small reaper
//! process it started kills them for it.
//!
//! The reaper is this binary again (`offcode __reaper`), in a session of
//! its own so that the terminal's signals pass it by. offcode tells it
//! each group as it starts (`+PGID`) and ends (`-PGID`) through a pipe;
//! when the pipe closes, however offcode ended, the reaper kills the
//! groups it was told of and not told are gone, then exits. It is started
//! with the first group, so a run that starts none never has one.
//!
//! The parent-death signal (`PR_SET_PDEATHSIG`) already ends a command's
//! first process with offcode, and under confinement the PID namespace
//! with it; the reaper reaches what that signal cannot: an unconfined
//! command's (or a server's) background children, which live on in its
//! group. A process that left its group (`setsid`) outside a PID namespace
//! is reached by neither.

use std::io::{BufRead as _, Write as _};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rustix::process::{Pid, Signal, kill_process_group};

/// `offcode __reaper`: read groups from stdin, kill them when it closes.
pub const REAPER_ARG: &str = "__reaper";

/// Process groups that are running, and who kills them.
#[derive(Debug, Default)]
pub struct Running {
    groups: Mutex<Vec<i32>>,
    /// The reaper's stdin, once started (`None` inside: it could not be).
    /// Only offcode's own ([`Running::global`]) has one.
    reaper: Option<OnceLock<Mutex<Option<std::process::ChildStdin>>>>,
}

impl Running {
    /// The process's own: what leaving offcode kills, with a reaper for
    /// when offcode is killed.
    pub fn global() -> Arc<Self> {
        static GLOBAL: std::sync::LazyLock<Arc<Running>> = std::sync::LazyLock::new(|| {
            Arc::new(Running {
                groups: Mutex::default(),
                reaper: Some(OnceLock::new()),
            })
        });
        Arc::clone(&GLOBAL)
    }

    /// Holds the process group led by `leader` (a process started in a
    /// group of its own) until the returned holder is dropped.
    pub fn hold(self: &Arc<Self>, leader: Option<u32>) -> Group {
        let pid = leader.and_then(|id| Pid::from_raw(id.try_into().ok()?));
        if let Some(pid) = pid {
            let raw = pid.as_raw_nonzero().get();
            lock(&self.groups).push(raw);
            self.tell(&format!("+{raw}"));
        }
        Group {
            leader: pid,
            running: Arc::clone(self),
        }
    }

    /// Kills every group still running: called when offcode leaves, where
    /// the tasks holding them may never be dropped.
    pub fn kill_all(&self) {
        for raw in lock(&self.groups).drain(..) {
            if let Some(pid) = Pid::from_raw(raw) {
                let _ = kill_process_group(pid, Signal::KILL);
            }
            self.tell(&format!("-{raw}"));
        }
    }

    /// Starts the reaper, if this owner has one and it is not running:
    /// called before a process is started, so that the reaper is there to
    /// be told of its group however soon offcode is killed after.
    pub fn prepare(&self) {
        let _ = self.reaper();
    }

    /// The reaper's stdin, started on first use; `None` for an owner
    /// without a reaper.
    fn reaper(&self) -> Option<&Mutex<Option<std::process::ChildStdin>>> {
        let reaper = self.reaper.as_ref()?;
        Some(reaper.get_or_init(|| Mutex::new(start_reaper())))
    }

    /// Tells the reaper a line, starting it first when it is not running.
    /// A reaper that cannot be started or has gone is done without: the
    /// groups are still killed when offcode leaves or drops them.
    fn tell(&self, line: &str) {
        let Some(stdin) = self.reaper() else {
            return;
        };
        let mut stdin = lock(stdin);
        if let Some(pipe) = stdin.as_mut()
            && writeln!(pipe, "{line}").is_err()
        {
            *stdin = None;
        }
    }
}

/// Kills every command and server offcode still runs ([`Running::global`]).
pub fn kill_running() {
    Running::global().kill_all();
}

/// A running process group, killed when this is dropped.
///
/// Under confinement the group's leader is the helper, whose child (PID 1
/// of the command's PID namespace) dies with it, and the kernel then ends
/// every process in that namespace, even one that left the group with
/// `setsid`. Unconfined, only the group is reached.
#[derive(Debug)]
pub struct Group {
    leader: Option<Pid>,
    running: Arc<Running>,
}

impl Group {
    /// Sends `signal` to the whole group.
    pub fn signal(&self, signal: Signal) {
        if let Some(pid) = self.leader {
            let _ = kill_process_group(pid, signal);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.leader {
            let _ = kill_process_group(pid, Signal::KILL);
            let raw = pid.as_raw_nonzero().get();
            lock(&self.running.groups).retain(|running| *running != raw);
            self.running.tell(&format!("-{raw}"));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts `offcode __reaper` in a session of its own, its stdin a pipe.
fn start_reaper() -> Option<std::process::ChildStdin> {
    let exe = std::env::current_exe().ok()?;
    let mut command = std::process::Command::new(exe);
    command
        .arg(REAPER_ARG)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::confine::new_session(&mut command);
    // Not started (no binary to run, as under qemu-user without binfmt):
    // groups are still killed when offcode leaves or drops them.
    command.spawn().ok()?.stdin.take()
}

/// The reaper's life: reads `+PGID` and `-PGID` lines until stdin closes,
/// then kills the groups still listed. In a session of its own, it has no
/// terminal whose interrupt or hangup could stop it; only the end of its
/// input does.
pub fn reaper() -> u8 {
    let mut groups: Vec<i32> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else {
            break;
        };
        let (sign, number) = line.split_at(line.len().min(1));
        match (sign, number.parse::<i32>()) {
            ("+", Ok(group)) if group > 1 => groups.push(group),
            ("-", Ok(group)) => groups.retain(|g| *g != group),
            _ => {}
        }
    }
    for group in groups {
        if let Some(pid) = Pid::from_raw(group) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
    0
}
