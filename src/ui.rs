//! The interactive terminal UI (issue 5). So far: the output blocks and
//! the approval prompt as styled lines, the input (the reedline editor on
//! a terminal, plain lines otherwise) and the loop that joins them.

pub mod input;
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
    // The editor needs a terminal it can drive; anything else (a pipe,
    // `TERM=dumb`) gets plain lines.
    let terminal = std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal()
        && environment.var("TERM").is_some_and(|term| term != "dumb");
    let input = if terminal {
        let history = environment.data_dir().map(|dir| {
            let _ = std::fs::create_dir_all(&dir);
            dir.join("history")
        });
        input::editor(history)
    } else {
        input::plain(!std::io::stdin().is_terminal())
    };
    Ok(runtime()?.block_on(lines::run(setup, input, colour)))
}
