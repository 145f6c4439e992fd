//! offcode: an offline coding agent for the terminal.
//!
//! The core (`agent`, `client`, `tools`, `session`, `context`, `policy`)
//! never prints; front ends (`headless`, later the terminal UI) consume its
//! [`protocol::Event`]s. [`run`] dispatches the command line.

pub mod agent;
pub mod agents;
pub mod cadence;
pub mod cancel;
pub mod catalogue;
pub mod checkpoint;
pub mod cli;
pub mod client;
mod commands;
pub mod config;
pub mod confine;
pub mod context;
pub mod failure;
pub mod groups;
mod headless;
pub mod ids;
pub mod jsonc;
pub mod log;
pub mod mcp;
pub mod paths;
pub mod policy;
pub mod protocol;
pub mod sampling;
pub mod sandbox;
pub mod servers;
pub mod session;
pub mod skills;
pub mod startup;
pub mod state_file;
pub mod stdio;
pub mod tools;
pub mod trust;
pub mod ui;

use cli::{Cli, Command};
use config::Environment;
use failure::Failure;

/// Runs the command line; returns the exit status.
pub fn run(cli: Cli, environment: &Environment) -> Result<u8, Failure> {
    // Checks an earlier run could not make (it and its reaper died during
    // a command): before any config here is read, since what such a
    // command left may be that config.
    for line in startup::recover_checks(environment) {
        let _ =
            std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("offcode: {line}\n"));
    }
    let result = dispatch(cli, environment);
    // A command still running (the turn was left mid-call) leaves with us.
    tools::kill_running();
    result
}

fn dispatch(cli: Cli, environment: &Environment) -> Result<u8, Failure> {
    match cli.command {
        Some(Command::Run(args)) => headless::run(&args, environment),
        Some(Command::Completions(args)) => commands::completions(args.shell),
        Some(Command::Man(args)) => commands::man(args.dir.as_deref()),
        Some(Command::Models(args)) => commands::models(args.json, environment),
        Some(Command::Doctor(args)) => commands::doctor(args.model.as_deref(), environment),
        Some(Command::Sessions(args)) => commands::sessions(&args, environment),
        Some(Command::Revert(args)) => commands::revert(&args, environment),
        Some(Command::Diff(args)) => commands::diff(&args, environment),
        Some(Command::Export(args)) => commands::export(&args, environment),
        Some(Command::Logs(args)) => commands::logs(&args, environment),
        Some(Command::Cache(args)) => match args.command {
            cli::CacheCommand::Clear => commands::cache_clear(environment),
        },
        Some(Command::Config(args)) => match args.command {
            Some(cli::ConfigCommand::Schema) => commands::config_schema(),
            None => commands::config(args.json, environment),
        },
        Some(Command::Context(args)) => commands::context(&args, environment),
        Some(Command::Tool(args)) => commands::tool(&args, environment),
        Some(Command::Trust(args)) => commands::trust(&args, environment),
        Some(Command::Mcp(args)) => commands::mcp(&args, environment),
        Some(Command::Policy(args)) => match args.command {
            cli::PolicyCommand::Check(check) => commands::policy_check(&check, environment),
            cli::PolicyCommand::Show(args) => commands::policy_show(args.json, environment),
        },
        None => {
            let mut start = startup::Start::from(&cli.start);
            start.prompt = cli.prompt;
            ui::run(environment, &start)
        }
    }
}
