//! The `offcode` binary: parse arguments, run, map the result to an exit code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use offcode::failure::{EXIT_USAGE, Failure};

fn main() -> ExitCode {
    // The confinement helper runs before anything else, while the process
    // is still single-threaded, and then becomes the command.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(offcode::confine::HELPER_ARG)) {
        let rest: Vec<_> = args.collect();
        return match offcode::confine::helper(&rest) {
            Ok(status) => ExitCode::from(status),
            Err(error) => {
                let _ = writeln!(std::io::stderr(), "offcode: not run: {error}");
                ExitCode::from(126)
            }
        };
    }
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(offcode::groups::REAPER_ARG))
    {
        return ExitCode::from(offcode::groups::reaper(
            offcode::confine::after::check_recorded,
        ));
    }
    // No file offcode was started with (a shell's `7>>file`) reaches an
    // unconfined command, an MCP server or the reaper.
    offcode::confine::close_inherited_on_exec();
    // Before any command can run: offcode starts itself (the confinement
    // helper, the reaper) through this file, whatever is renamed over its
    // path later.
    offcode::confine::own::hold();
    let cli = offcode::cli::Cli::parse();
    // Before the environment is read: it works on any box, however bare.
    if cli.version {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "offcode {}", offcode::cli::VERSION);
        if cli.verbose {
            for line in offcode::confine::kernel::Kernel::probe().lines() {
                let _ = writeln!(out, "{line}");
            }
        }
        return ExitCode::SUCCESS;
    }
    // `-C DIR`: before anything is read, as if started there.
    if let Some(dir) = &cli.cd
        && let Err(error) = std::env::set_current_dir(dir)
    {
        let _ = writeln!(
            std::io::stderr(),
            "error: Invalid value for -C: could not change to `{}`: {error}",
            dir.display()
        );
        return ExitCode::from(EXIT_USAGE);
    }
    let result = offcode::config::Environment::capture()
        .map_err(|e| Failure::new(&e, EXIT_USAGE))
        .and_then(|environment| offcode::run(cli, &environment));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            let _ = failure.report(&mut std::io::stderr().lock());
            ExitCode::from(failure.exit)
        }
    }
}
