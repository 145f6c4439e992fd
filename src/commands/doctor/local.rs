//! The checks of this machine: whether commands run confined, and
//! whether each MCP server starts.

use super::Report;
use crate::config::Environment;
use crate::failure::Failure;

/// Whether shell commands run confined: what the machine lacks that a
/// command needs (`/proc`, `/dev/null`, `bash`), what the kernel offers,
/// and one real command through the helper.
pub(super) fn sandbox(
    environment: &Environment,
    config: &crate::config::Config,
    report: &mut Report,
) -> Result<(), Failure> {
    let bare = bare_root(environment);
    for (problem, fix) in &bare {
        report.problem(problem, fix)?;
    }
    let kernel = crate::confine::kernel::Kernel::probe();
    for line in kernel.lines() {
        report.note(&line)?;
    }
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
        // What is missing was named above; a probe would only fail again.
        crate::confine::Status::Confined { .. } if !bare.is_empty() => Ok(()),
        crate::confine::Status::Confined { network, .. } => {
            // What the agent's commands run: `bash`, through the helper.
            let ran = shell
                .command("bash", &["-c", ":"], false)
                .and_then(|mut command| command.output());
            match ran {
                Ok(output) if output.status.success() => {
                    report.ok(&format!("shell commands run {}", shell.status().describe()))?;
                    overlay(&shell, &environment.cwd, report)
                }
                Ok(output) => report.problem(
                    &format!(
                        "the sandbox refused to start a command: {}",
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                    &refused_fix(&kernel, *network),
                ),
                Err(error) => report.problem(
                    &format!("the sandbox helper could not be started: {error}"),
                    "the `offcode` binary was moved or replaced since it started (it is its own sandbox helper): start it again, or reinstall it",
                ),
            }
        }
    }
}

/// Whether commands run over an overlay of the workspace: one real
/// command over a layer, or why not.
fn overlay(
    shell: &crate::confine::Shell,
    root: &std::path::Path,
    report: &mut Report,
) -> Result<(), Failure> {
    let namespaces_fix = "allow unprivileged user namespaces (docs/install.md, \"What the sandbox needs\"; on Ubuntu 23.10 and later, the AppArmor profile there)";
    if !shell.layered() {
        return report.note(&format!(
            "commands write to the workspace directly (no user namespaces, or a kernel before 5.11): a file hard-linked from outside can be changed through the workspace, and what a command removes is kept for undo only where checkpoints keep it; to run them over an overlay, {namespaces_fix}"
        ));
    }
    let ran =
        shell
            .layered_command("bash", &["-c", ":"], false)
            .and_then(|(mut command, layer)| {
                let status = command.current_dir(root).output()?.status;
                Ok((status, layer.and_then(|layer| layer.unmounted())))
            });
    match ran {
        Ok((status, None)) if status.success() => report.ok(
            "commands run over an overlay of the workspace: what they change lands when they end, never through a hard link",
        ),
        Ok((_, Some(why))) => report.problem(
            &format!("the overlay of the workspace could not be mounted ({why}): commands write to it directly"),
            "keep offcode's data folder on a local file system that supports user extended attributes (ext4, xfs, btrfs, tmpfs), not NFS or an overlay",
        ),
        Ok((status, None)) => report.problem(
            &format!("a command over an overlay of the workspace failed ({status})"),
            namespaces_fix,
        ),
        Err(error) => report.problem(
            &format!("a command over an overlay of the workspace could not be started: {error}"),
            namespaces_fix,
        ),
    }
}

/// What a command needs of the machine that is missing, each with its fix:
/// a bare root (a chroot, a minimal container) often lacks them.
fn bare_root(environment: &Environment) -> Vec<(String, String)> {
    let mut missing = Vec::new();
    if std::fs::metadata("/proc/self/exe").is_err() {
        missing.push((
            "`/proc` is not mounted: offcode finds its sandbox helper (itself) and a command's processes through it".to_owned(),
            "mount it (`mount -t proc proc /proc`), or give the container or chroot offcode runs in a /proc".to_owned(),
        ));
    }
    let null = std::fs::metadata("/dev/null");
    if !null.is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_char_device(&m.file_type())) {
        missing.push((
            "`/dev/null` is missing or not a device: every command reads its input from it".to_owned(),
            "create it as root (`mknod -m 666 /dev/null c 1 3`), or bind-mount the host's /dev into this root".to_owned(),
        ));
    }
    let path = environment.var("PATH").unwrap_or_default();
    if !std::env::split_paths(path).any(|dir| crate::paths::runnable(&dir.join("bash"))) {
        missing.push((
            format!("no `bash` on PATH (`{path}`): the agent's commands run with bash"),
            "install bash, or add the folder that has it to PATH".to_owned(),
        ));
    }
    missing
}

/// The fix for a command the helper would not start, from what the kernel
/// lacks: only a closed network without namespaces or Landlock TCP rules
/// is the namespaces' fault.
fn refused_fix(kernel: &crate::confine::kernel::Kernel, network: bool) -> String {
    let no_tcp_rules = kernel.landlock.is_none_or(|abi| abi < 4);
    match &kernel.namespaces {
        Err(_) if !network && no_tcp_rules => "allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`; on Ubuntu `sysctl kernel.apparmor_restrict_unprivileged_userns=0`; a chroot never has them), or use Linux 6.7 or later (Landlock TCP rules)".to_owned(),
        _ => "the message above says what failed; `offcode --version --verbose` shows what this kernel offers (docs/install.md, \"What the sandbox needs\")".to_owned(),
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
