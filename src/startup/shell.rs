//! How the session's shell commands run, and what of offcode's own they
//! never reach.

use std::sync::Arc;

use crate::config::{Config, Environment};
use crate::confine::Shell;

/// How shell commands run in `root`: confined by this `offcode` binary
/// acting as the helper, unless the config turned it off or the kernel
/// cannot.
pub fn shell(environment: &Environment, config: &Config, root: &std::path::Path) -> Arc<Shell> {
    let helper = crate::confine::own::program();
    // Made before any command: made during one in a workspace that is the
    // home, offcode's own folder would pass for a file the command left.
    for dir in [records(environment), layers(environment)]
        .into_iter()
        .flatten()
    {
        let _ = crate::paths::private_dir(&dir);
    }
    let shell = Shell::new(helper, root, &config.sandbox, environment.var("HOME"))
        .with_own_files(&environment.own_files())
        .with_secret(&secret(environment, root))
        .with_records(records(environment))
        .with_layers(layers(environment));
    // The fallback of a server without user namespaces, tried here.
    Arc::new(if environment.var("OFFCODE_TEST_NO_NAMESPACES").is_some() {
        shell.without_namespaces()
    } else {
        shell
    })
}

/// Finishes what an earlier run in this workspace left half done: the
/// changes of a command it was applying when it was killed, then the
/// checks after commands it and its reaper died during; what each did.
pub fn recover_checks(environment: &Environment) -> Vec<String> {
    let mut said = layers(environment).map_or_else(Vec::new, |layers| {
        crate::confine::layer::finish_interrupted(&layers, &environment.cwd)
    });
    if let Some(records) = records(environment) {
        said.extend(crate::confine::after::recover(&records, &environment.cwd));
    }
    said
}

/// Where commands' layers are made.
fn layers(environment: &Environment) -> Option<std::path::PathBuf> {
    environment
        .data_dir()
        .map(|dir| dir.join(crate::confine::layer::LAYERS))
}

/// Where the checks after running commands are recorded.
fn records(environment: &Environment) -> Option<std::path::PathBuf> {
    environment
        .data_dir()
        .map(|dir| dir.join(crate::confine::after::RECORDS))
}

/// offcode's data folder (sessions, history, checkpoints) and its config
/// folder (the endpoint's API key, MCP servers' tokens), kept from commands
/// and file tools, each unless the workspace lies inside it.
pub fn secret(environment: &Environment, root: &std::path::Path) -> Vec<std::path::PathBuf> {
    [environment.data_dir(), environment.config_dir()]
        .into_iter()
        .flatten()
        .filter(|dir| !root.starts_with(dir) && !root.starts_with(crate::paths::real_path(dir)))
        .collect()
}
