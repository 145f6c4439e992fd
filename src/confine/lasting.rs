//! One thread that lives as long as offcode, where the processes that must
//! die with it are started. `PR_SET_PDEATHSIG` fires when the thread that
//! forked a child ends, not when the process does, and the threads of
//! tokio's blocking pool end when idle: a server started there would be
//! killed seconds later, so MCP servers once got no parent-death signal,
//! and one that ignored its closed stdin outlived `kill -9 offcode`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::io;
use std::sync::{LazyLock, Mutex, PoisonError, mpsc};

type Job = Box<dyn FnOnce() + Send>;

/// The jobs' way to the thread; none when it could not be started.
static JOBS: LazyLock<Mutex<Option<mpsc::Sender<Job>>>> = LazyLock::new(|| {
    let (sender, receiver) = mpsc::channel::<Job>();
    let started = std::thread::Builder::new()
        .name("offcode-starter".to_owned())
        .spawn(move || {
            for job in receiver {
                // A job that panics loses its answer, not the thread.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        });
    Mutex::new(started.ok().map(|_| sender))
});

/// Runs `start` on the lasting thread and returns what it returned. A
/// child it forks with [`super::die_with_parent`] dies with offcode.
///
/// # Errors
/// When the thread cannot be started, or `start` panicked there.
pub fn on_lasting_thread<R: Send + 'static>(
    start: impl FnOnce() -> R + Send + 'static,
) -> io::Result<R> {
    let (sender, receiver) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = sender.send(start());
    });
    let jobs = JOBS.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(jobs) = jobs.as_ref() else {
        return Err(io::Error::other(
            "the thread that starts processes could not be started",
        ));
    };
    jobs.send(job)
        .map_err(|_| io::Error::other("the thread that starts processes is gone"))?;
    receiver
        .recv()
        .map_err(|_| io::Error::other("starting the process failed on its thread"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_one_thread_that_outlives_them_and_a_panic() {
        let name = || std::thread::current().name().map(str::to_owned);
        let first = on_lasting_thread(name).unwrap();
        assert_eq!(first.as_deref(), Some("offcode-starter"));
        assert!(on_lasting_thread(|| panic!("a job that panics")).is_err());
        let id = on_lasting_thread(|| std::thread::current().id()).unwrap();
        assert_eq!(
            on_lasting_thread(|| std::thread::current().id()).unwrap(),
            id
        );
    }
}
