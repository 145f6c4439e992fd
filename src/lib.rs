//! offcode: an offline coding agent for the terminal.
//!
//! The core (`agent`, `client`, `tools`, `session`, `context`, `policy`)
//! never prints; front ends (`headless`, later the terminal UI) consume its
//! [`protocol::Event`]s. [`run`] dispatches the command line.

pub mod agent;
pub mod cancel;
pub mod cli;
pub mod client;
mod commands;
pub mod config;
pub mod confine;
pub mod context;
mod doctor;
mod headless;
pub mod policy;
pub mod protocol;
pub mod sandbox;
pub mod servers;
pub mod session;
pub mod skills;
pub mod state_file;
pub mod tools;
pub mod trust;
pub mod ui;

use cli::{Cli, Command};
use config::Environment;

/// Exit status for usage and configuration errors.
pub const EXIT_USAGE: u8 = 2;
/// Exit status when the task failed.
pub const EXIT_FAILED: u8 = 1;

/// An error to report at the top level: the message, its causes, an optional
/// hint and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// What failed.
    pub message: String,
    /// Each underlying cause, outermost first.
    pub causes: Vec<String>,
    /// What the user can do about it.
    pub hint: Option<String>,
    /// The process exit status.
    pub exit: u8,
}

impl Failure {
    /// A failure from an error value and its source chain.
    pub fn new(error: &dyn std::error::Error, exit: u8) -> Self {
        let mut causes = Vec::new();
        let mut source = error.source();
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        Self {
            message: error.to_string(),
            causes,
            hint: None,
            exit,
        }
    }

    /// A failure with only a message.
    pub fn message(message: impl Into<String>, exit: u8) -> Self {
        Self {
            message: message.into(),
            causes: Vec::new(),
            hint: None,
            exit,
        }
    }

    /// Adds a hint.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl From<config::Error> for Failure {
    fn from(error: config::Error) -> Self {
        let hint = match &error {
            // `offcode config` would stop at the same file.
            config::Error::Read { .. } | config::Error::Invalid { .. } => {
                "Fix the file at the place named above; every offcode command reads it, so they \
                 all stop here until it is fixed"
            }
            config::Error::BadValue { .. } | config::Error::Merged(_) => {
                "Fix the value named above; `offcode config` shows where each setting comes from"
            }
        };
        Self::new(&error, EXIT_USAGE).with_hint(hint)
    }
}

/// Runs the command line; returns the exit status.
pub fn run(cli: Cli, environment: &Environment) -> Result<u8, Failure> {
    let result = dispatch(cli, environment);
    // A command still running (the turn was left mid-call) leaves with us.
    tools::kill_running();
    result
}

fn dispatch(cli: Cli, environment: &Environment) -> Result<u8, Failure> {
    match cli.command {
        Some(Command::Run(args)) => headless::run(&args, environment),
        Some(Command::Models(args)) => commands::models(args.json, environment),
        Some(Command::Doctor(args)) => doctor::run(args.model.as_deref(), environment),
        Some(Command::Sessions(args)) => commands::sessions(&args, environment),
        Some(Command::Config(args)) => commands::config(args.json, environment),
        Some(Command::Context(args)) => commands::context(&args, environment),
        Some(Command::Tool(args)) => commands::tool(&args, environment),
        Some(Command::Trust(args)) => commands::trust(&args, environment),
        Some(Command::Policy(args)) => match args.command {
            cli::PolicyCommand::Check(check) => commands::policy_check(&check, environment),
        },
        None => ui::run(
            environment,
            &ui::Start {
                model: cli.start.model,
                session: cli.start.session,
                resume_latest: cli.start.r#continue,
            },
        ),
    }
}
