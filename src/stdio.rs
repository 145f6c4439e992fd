//! Standard streams for the commands: output that a closed pipe does not
//! turn into an error, all of standard input, and a notice while a slow
//! call is waited for.

use std::io::Write;

use crate::failure::{EXIT_FAILED, EXIT_USAGE, Failure};

/// Writes to stdout; a closed pipe (`offcode models | head`) is not an error.
pub fn out(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::new(&error, EXIT_FAILED))
        }
        _ => Ok(()),
    }
}

/// All of standard input; a redirected file is read in one allocation.
pub fn read_stdin() -> Result<String, Failure> {
    let size = rustix::fs::fstat(std::io::stdin()).map_or(0, |s| s.st_size);
    let mut text = String::with_capacity(usize::try_from(size).unwrap_or(0));
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .map_err(|e| Failure::new(&e, EXIT_USAGE))?;
    Ok(text)
}

/// Runs `work`; when it takes longer than `after`, `notice` goes to
/// standard error meanwhile, so a silent server is never a silent wait.
pub fn with_notice<T>(after: std::time::Duration, notice: String, work: impl FnOnce() -> T) -> T {
    let (done, waiter) = std::sync::mpsc::channel::<()>();
    let shown = std::thread::spawn(move || {
        if waiter.recv_timeout(after) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            let _ = writeln!(std::io::stderr(), "{notice}");
        }
    });
    let result = work();
    drop(done);
    let _ = shown.join();
    result
}
