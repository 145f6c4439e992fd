//! The checks of this machine: whether commands run confined, and
//! whether each MCP server starts.

use super::Report;
use crate::config::Environment;
use crate::failure::Failure;

/// Whether shell commands run confined: the kernel's support, and one real
/// command through the helper.
pub(super) fn sandbox(
    environment: &Environment,
    config: &crate::config::Config,
    report: &mut Report,
) -> Result<(), Failure> {
    let shell = crate::startup::shell(environment, config, &environment.cwd);
    match shell.status() {
        crate::confine::Status::Off => report.problem(
            "shell commands run unconfined (`\"sandbox\": \"off\"` in your config)",
            "remove `sandbox` from your global config so commands run confined by the kernel",
        ),
        crate::confine::Status::Unavailable { reason } => report.problem(
            &format!("shell commands cannot be confined: {reason}, so every command asks"),
            "run offcode on Linux 5.13 or later with Landlock enabled (`lsm=...,landlock` on the kernel command line); or, to run commands unconfined without asking, set `\"sandbox\": \"off\"` in your global config",
        ),
        crate::confine::Status::Confined { .. } => {
            let ran = shell
                .command("true", &[], false)
                .and_then(|mut command| command.output());
            match ran {
                Ok(output) if output.status.success() => {
                    report.ok(&format!("shell commands run {}", shell.status().describe()))
                }
                Ok(output) => report.problem(
                    &format!(
                        "the sandbox refused to start a command: {}",
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                    "allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`) or use Linux 6.7 or later (Landlock TCP rules)",
                ),
                Err(error) => report.problem(
                    &format!("the sandbox helper could not be started: {error}"),
                    "reinstall offcode; the helper is the `offcode` binary itself",
                ),
            }
        }
    }
}

/// Each enabled MCP server, started as a session would start it.
pub(super) fn mcp_servers(
    environment: &Environment,
    config: &crate::config::Config,
    report: &mut Report,
) -> Result<(), Failure> {
    for (text, fix) in super::super::mcp::doctor(environment, config)? {
        match fix {
            Some(fix) => report.problem(&text, &fix)?,
            None => report.ok(&text)?,
        }
    }
    Ok(())
}
