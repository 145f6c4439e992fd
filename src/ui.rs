//! The interactive terminal UI (issue 5). So far: the output blocks and
//! the approval prompt as styled lines, and the line-mode loop that uses
//! them (the fallback for terminals the editor cannot drive, and the
//! interactive mode until the editor lands).

pub mod lines;
pub mod render;

use std::io::IsTerminal;

use crate::Failure;
use crate::commands::runtime;
use crate::config::Environment;

/// `offcode` with no subcommand.
pub fn run(environment: &Environment) -> Result<u8, Failure> {
    let setup = crate::headless::prepare(environment, None, None, false, "user")?;
    let colour = std::io::stdout().is_terminal()
        && environment.var("NO_COLOR").is_none()
        && environment.var("OFFCODE_NO_COLOR").is_none();
    Ok(runtime()?.block_on(lines::run(setup, colour)))
}
