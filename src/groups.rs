//! The one owner of the process groups offcode starts: commands and MCP
//! servers alike. A group is held while it runs and stopped when its holder
//! is dropped; leaving offcode stops every group still held; and should
//! offcode be killed outright (SIGKILL, the OOM killer), a small reaper
//! process it started stops them for it.
//!
//! Stopping a group is SIGTERM to its leader, a wait of up to [`GRACE`] for
//! the leader to exit, then SIGKILL to the whole group. Under confinement
//! the leader is offcode's helper, which on SIGTERM kills the command's
//! PID namespace and exits only once the kernel has ended everything in
//! it: so when the leader is gone, nothing of the command can still change
//! a file, and the check after the command ([`crate::confine::after`]) sees
//! the workspace as the command left it.
//!
//! The reaper is this binary again (`offcode __reaper`), in a session of
//! its own so that the terminal's signals pass it by. Each group's first
//! process tells it `+PGID` itself, between `setsid` and `exec`, so no
//! command runs before the reaper knows its group (told by offcode after
//! the start, a kill in between once left background children alive);
//! offcode tells it each group's end (`-PGID`), and each check
//! after a command (`=PATH` of its record, removed once the check is
//! made), through a pipe; when the pipe closes, however offcode ended, the reaper
//! stops the groups it was told of and not told are gone, then makes the
//! checks still pending, removes the session's private temp dir (`#PATH`),
//! then exits. It is started with the first group,
//! so a run that starts none never has one.
//!
//! The parent-death signal (`PR_SET_PDEATHSIG`) already ends a command's
//! first process with offcode, and under confinement the PID namespace
//! with it; the reaper reaches what that signal cannot: an unconfined
//! command's (or a server's) background children, which live on in its
//! group. A process that left its group (`setsid`) outside a PID namespace
//! is reached by neither.

use std::io::{BufRead as _, Read as _, Write as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

/// `offcode __reaper`: read groups from stdin, kill them when it closes.
pub const REAPER_ARG: &str = "__reaper";

/// How long a group's leader is given to end after SIGTERM before the
/// whole group is killed.
pub const GRACE: Duration = Duration::from_secs(2);

/// A running group: its id (its leader's PID) and, where the kernel has
/// them, a pidfd of its leader (which says when the leader is gone, and
/// cannot reach another process that took its PID).
#[derive(Debug)]
struct Held {
    group: Pid,
    leader: Option<OwnedFd>,
}

impl Held {
    fn new(group: Pid) -> Self {
        Self {
            group,
            leader: rustix::process::pidfd_open(group, rustix::process::PidfdFlags::empty()).ok(),
        }
    }
}

/// Stops `groups` together: SIGTERM to each leader, up to [`GRACE`] for
/// all of them to exit, then SIGKILL to each whole group.
fn stop(groups: &[Held]) {
    for held in groups {
        let _ = match &held.leader {
            Some(fd) => rustix::process::pidfd_send_signal(fd, Signal::TERM),
            None => rustix::process::kill_process(held.group, Signal::TERM),
        };
    }
    let deadline = Instant::now() + GRACE;
    let mut waiting: Vec<&Held> = groups.iter().collect();
    while !waiting.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        waiting.retain(|held| !leader_gone(held, left));
    }
    for held in groups {
        let _ = kill_process_group(held.group, Signal::KILL);
    }
}

/// Waits up to `at_most` for `held`'s leader to exit; whether it has.
fn leader_gone(held: &Held, at_most: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let Some(fd) = &held.leader else {
        // No pidfds: the leader's state, looked at every 5 ms.
        let gone = u32::try_from(held.group.as_raw_nonzero().get())
            .map_or(true, |pid| !crate::confine::running(pid));
        if !gone {
            std::thread::sleep(at_most.min(Duration::from_millis(5)));
        }
        return gone;
    };
    let timeout = Timespec {
        tv_sec: i64::try_from(at_most.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(at_most.subsec_nanos()),
    };
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(ready) => ready > 0,
        Err(rustix::io::Errno::INTR) => false,
        Err(_) => true,
    }
}

/// Process groups that are running, and who kills them.
#[derive(Debug, Default)]
pub struct Running {
    groups: Mutex<Vec<Held>>,
    /// The reaper, once started (`None` inside: it could not be). Only
    /// offcode's own ([`Running::global`]) has one.
    reaper: Option<OnceLock<Mutex<Option<Reaper>>>>,
    /// What the reaper was told that is not a group (`=PATH`, `#PATH`):
    /// told again to a new reaper when the first has gone.
    standing: Mutex<Vec<String>>,
}

/// The reaper as offcode holds it.
#[derive(Debug)]
struct Reaper {
    /// Its input.
    stdin: std::process::ChildStdin,
    /// Its pidfd, readable once it has ended; `None` without pidfds.
    pidfd: Option<OwnedFd>,
}

impl Reaper {
    /// How it ended, if it has: `Some(true)` killed (by a command, the OOM
    /// killer...), to be started again; `Some(false)` exited by itself
    /// (its input closed, or `current_exe` is not offcode, as in a test
    /// harness), not to be. `None` while it runs, or without pidfds.
    fn ended(&self) -> Option<bool> {
        let fd = self.pidfd.as_ref()?;
        let status = rustix::process::waitid(
            rustix::process::WaitId::PidFd(fd.as_fd()),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOHANG,
        )
        .ok()??;
        Some(status.terminating_signal().is_some())
    }
}

impl Running {
    /// The process's own: what leaving offcode kills, with a reaper for
    /// when offcode is killed.
    pub fn global() -> Arc<Self> {
        static GLOBAL: std::sync::LazyLock<Arc<Running>> = std::sync::LazyLock::new(|| {
            Arc::new(Running {
                groups: Mutex::default(),
                reaper: Some(OnceLock::new()),
                standing: Mutex::default(),
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
            lock(&self.groups).push(Held::new(pid));
            self.tell(&format!("+{raw}"));
        }
        Group {
            leader: pid,
            running: Arc::clone(self),
        }
    }

    /// Stops every group still running: called when offcode leaves, where
    /// the tasks holding them may never be dropped.
    pub fn kill_all(&self) {
        let groups: Vec<Held> = lock(&self.groups).drain(..).collect();
        stop(&groups);
        for held in groups {
            self.tell(&format!("-{}", held.group.as_raw_nonzero()));
        }
    }

    /// Has the reaper make the check recorded at `record` should offcode
    /// end before it does (the check removes the record; the reaper skips
    /// one that is gone). A path that cannot be told in one line is not
    /// told.
    pub fn pending(&self, record: &Path) {
        if let Some(line) = record.to_str().filter(|line| !line.contains('\n')) {
            self.tell_standing(format!("={line}"));
        }
    }

    /// Has the reaper remove `dir` (a session's private temp dir, named
    /// `offcode-...`) should offcode end without removing it.
    pub fn remove_at_end(&self, dir: &Path) {
        if let Some(line) = dir.to_str().filter(|line| !line.contains('\n')) {
            self.tell_standing(format!("#{line}"));
        }
    }

    /// Has the process `command` starts tell the reaper of its group
    /// itself, before it runs anything (starting the reaper first if this
    /// owner has one). Told by offcode after the start, the group could
    /// be missed: a command running before offcode's thread got back to
    /// it, offcode killed then, left its background children alive. Call
    /// [`Announced::failed`] if the start fails.
    pub fn announce(&self, command: &mut std::process::Command) -> Option<Announced> {
        let mut reaper = lock(self.reaper()?);
        // One that was killed is replaced, and told what it held.
        match reaper.as_ref().and_then(Reaper::ended) {
            Some(true) => *reaper = self.restart(),
            Some(false) => *reaper = None,
            None => {}
        }
        let reaper = reaper.as_ref()?.stdin.as_fd().try_clone_to_owned().ok()?;
        let (back, write) = std::io::pipe().ok()?;
        crate::confine::announce_group(command, reaper, write.into());
        Some(Announced { back })
    }

    /// The reaper, started on first use with a thread that starts another
    /// whenever it ends (a command may kill it); `None` for an owner
    /// without one.
    fn reaper(&self) -> Option<&Mutex<Option<Reaper>>> {
        let reaper = self.reaper.as_ref()?;
        Some(reaper.get_or_init(|| {
            let _ = std::thread::Builder::new()
                .name("offcode-reaper-watch".to_owned())
                .spawn(|| watch(&Running::global()));
            Mutex::new(start_reaper())
        }))
    }

    /// A new reaper told every group held and every standing line (the
    /// caller holds the reaper's lock).
    fn restart(&self) -> Option<Reaper> {
        let mut reaper = start_reaper()?;
        let groups: Vec<String> = lock(&self.groups)
            .iter()
            .map(|held| format!("+{}\n", held.group.as_raw_nonzero()))
            .collect();
        let standing: Vec<String> = lock(&self.standing)
            .iter()
            .map(|line| format!("{line}\n"))
            .collect();
        for line in groups.iter().chain(&standing) {
            reaper.stdin.write_all(line.as_bytes()).ok()?;
        }
        Some(reaper)
    }

    /// Tells the reaper `line` and keeps it for a reaper started later.
    fn tell_standing(&self, line: String) {
        self.tell(&line);
        lock(&self.standing).push(line);
    }

    /// Tells the reaper a line, starting it first when it is not running.
    /// A reaper that was killed is replaced; one that cannot be started or
    /// exited by itself is done without: the groups are still killed when
    /// offcode leaves or drops them.
    fn tell(&self, line: &str) {
        let Some(stdin) = self.reaper() else {
            return;
        };
        let mut reaper = lock(stdin);
        // One write per line: a started process writes its own `+PID`
        // line to the same pipe, and must not land inside this one.
        let written = reaper
            .as_mut()
            .is_some_and(|held| held.stdin.write_all(format!("{line}\n").as_bytes()).is_ok());
        if !written && reaper.is_some() {
            // Killed: a new one is told what it held, this line included
            // (a group's is in the list; a `-` line's group is not).
            if reaper.as_ref().and_then(Reaper::ended) == Some(false) {
                *reaper = None;
                return;
            }
            *reaper = self.restart();
            if let Some(held) = reaper.as_mut()
                && (line.starts_with('=') || line.starts_with('#'))
            {
                let _ = held.stdin.write_all(format!("{line}\n").as_bytes());
            }
        }
    }
}

/// A start whose process tells the reaper of its group
/// ([`Running::announce`]).
#[derive(Debug)]
pub struct Announced {
    /// Where the process wrote its PID before telling the reaper.
    back: std::io::PipeReader,
}

impl Announced {
    /// The start failed: the reaper forgets the group the process told it
    /// of, if it got that far (its PID could be another's later). Call
    /// after the command is dropped, so that the pipe ends.
    pub fn failed(mut self, running: &Running) {
        let mut pid = String::new();
        let _ = self.back.read_to_string(&mut pid);
        if let Ok(pid) = pid.trim().parse::<i32>()
            && pid > 1
        {
            running.tell(&format!("-{pid}"));
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
            let held: Vec<Held> = {
                let mut groups = lock(&self.running.groups);
                let (this, others) = std::mem::take(&mut *groups)
                    .into_iter()
                    .partition(|held| held.group == pid);
                *groups = others;
                this
            };
            stop(&held);
            self.running
                .tell(&format!("-{}", pid.as_raw_nonzero().get()));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits for `running`'s reaper to end, and starts another told what it
/// held, for as long as offcode runs; without pidfds, a gone reaper is
/// found at the next start of a process instead.
fn watch(running: &Running) {
    use rustix::event::{PollFd, PollFlags};
    loop {
        let ended = running
            .reaper()
            .and_then(|reaper| lock(reaper).as_ref()?.pidfd.as_ref()?.try_clone().ok());
        let Some(ended) = ended else {
            return;
        };
        let mut fds = [PollFd::new(&ended, PollFlags::IN)];
        if rustix::event::poll(&mut fds, None).is_err() {
            continue;
        }
        if let Some(reaper) = running.reaper() {
            let mut reaper = lock(reaper);
            match reaper.as_ref().and_then(Reaper::ended) {
                Some(true) => *reaper = running.restart(),
                Some(false) => {
                    *reaper = None;
                    return;
                }
                None => {}
            }
        }
    }
}

/// Starts `offcode __reaper` in a session of its own, its stdin a pipe.
fn start_reaper() -> Option<Reaper> {
    let mut command = crate::confine::own::command(&crate::confine::own::program());
    command
        .arg(REAPER_ARG)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::confine::new_session(&mut command);
    // Not started (no binary to run, as under qemu-user without binfmt):
    // groups are still killed when offcode leaves or drops them.
    let mut child = command.spawn().ok()?;
    let pidfd = Pid::from_raw(i32::try_from(child.id()).ok()?).and_then(|pid| {
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
    });
    Some(Reaper {
        stdin: child.stdin.take()?,
        pidfd,
    })
}

/// The reaper's life: reads `+PGID`, `-PGID`, `=PATH` and `#PATH` lines until stdin closes, then stops the groups still listed,
/// makes the checks still pending (with `check`, the confinement's) and
/// removes the temp dirs. In a session of its own, it has no terminal
/// whose interrupt or hangup could stop it, and it ignores those signals
/// sent by name (`pkill offcode`); only the end of its input ends it (or
/// SIGKILL).
pub fn reaper(check: fn(&Path)) -> u8 {
    crate::confine::ignore_termination();
    let mut groups: Vec<Held> = Vec::new();
    let mut pending: Vec<PathBuf> = Vec::new();
    let mut temporary: Vec<PathBuf> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else {
            break;
        };
        let (sign, rest) = line.split_at(line.len().min(1));
        match (sign, rest.parse::<i32>().ok().and_then(Pid::from_raw)) {
            // Told twice (by the process, then by offcode): held once.
            ("+", Some(group))
                if group.as_raw_nonzero().get() > 1
                    && !groups.iter().any(|held| held.group == group) =>
            {
                groups.push(Held::new(group));
            }
            ("-", Some(group)) => groups.retain(|held| held.group != group),
            ("=", _) => pending.push(PathBuf::from(rest)),
            ("#", _) if !temporary.iter().any(|dir| dir == Path::new(rest)) => {
                temporary.push(PathBuf::from(rest));
            }
            _ => {}
        }
    }
    stop(&groups);
    for record in pending {
        check(&record);
    }
    for dir in temporary {
        let ours = dir
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("offcode-"));
        if ours {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    0
}
