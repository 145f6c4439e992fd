//! The `offcode` binary: parse arguments, run, map the result to an exit code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = offcode::cli::Cli::parse();
    let result = offcode::config::Environment::capture()
        .map_err(|e| offcode::Failure::new(&e, offcode::EXIT_USAGE))
        .and_then(|environment| offcode::run(cli, &environment));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "error: {}", failure.message);
            for cause in &failure.causes {
                let _ = writeln!(stderr, "  Caused by: {cause}");
            }
            if let Some(hint) = &failure.hint {
                let _ = writeln!(stderr, "\nhint: {hint}");
            }
            ExitCode::from(failure.exit)
        }
    }
}
