//! How a session runs shell commands: the confinement, the overlay of the
//! workspace, or plainly.

use std::path::{Path, PathBuf};

use super::{CONFINED_ENV, Confinement, SandboxConfig, Status, layer, sys};

/// How a session runs shell commands: through the helper, or plainly
/// when confinement is off or unavailable.
#[derive(Debug)]
pub struct Shell {
    confinement: Option<Confinement>,
    status: Status,
    /// Where the checks after running commands are recorded
    /// ([`super::after::RECORDS`] in offcode's data folder).
    records: Option<PathBuf>,
    /// Where commands' layers are made ([`layer`]); without one, commands
    /// write to the workspace directly.
    layers: Option<PathBuf>,
}

impl Shell {
    /// Commands in `root`, by `helper` (the `offcode` binary), under
    /// `config`; plain when confinement is off or unavailable.
    pub fn new(helper: PathBuf, root: &Path, config: &SandboxConfig, home: Option<&str>) -> Self {
        let status = Status::of(root, config, home);
        let Status::Confined { network, writable } = &status else {
            return Self::unconfined(status);
        };
        let readable = config.readable.as_ref().map(|dirs| {
            dirs.iter()
                .map(|dir| crate::paths::expand_home(dir, home))
                .collect()
        });
        let home = home.map(Path::new);
        match Confinement::new(helper, root, &writable[1..], *network, readable, home) {
            Ok(confinement) => Self {
                confinement: Some(confinement),
                status,
                records: None,
                layers: None,
            },
            Err(error) => Self::unconfined(Status::Unavailable {
                reason: format!("no private temp dir: {error}"),
            }),
        }
    }

    /// Keeps offcode's own files and directories (config, data, state)
    /// from commands wherever they are.
    #[must_use]
    pub fn with_own_files(mut self, own: &[PathBuf]) -> Self {
        self.confinement = self.confinement.map(|c| c.with_own_files(own));
        self
    }

    /// Keeps offcode's data folder from commands ([`Confinement::with_secret`]).
    #[must_use]
    pub fn with_secret(mut self, paths: &[PathBuf]) -> Self {
        self.confinement = self.confinement.map(|c| c.with_secret(paths));
        self
    }

    /// A shell that runs commands plainly, for the reason `status` gives.
    pub fn unconfined(status: Status) -> Self {
        Self {
            confinement: None,
            status,
            records: None,
            layers: None,
        }
    }

    /// Records the checks after commands in `dir` (in offcode's data
    /// folder, which commands cannot reach), so that they are made even
    /// when offcode dies during a command ([`super::after`]).
    #[must_use]
    pub fn with_records(mut self, dir: Option<PathBuf>) -> Self {
        self.records = dir;
        self
    }

    /// Runs commands ([`Shell::layered_command`]) over an overlay of the
    /// workspace whose layers are made in `dir` (offcode's data folder).
    #[must_use]
    pub fn with_layers(mut self, dir: Option<PathBuf>) -> Self {
        self.layers = dir;
        self
    }

    /// Whether commands run over an overlay of the workspace: the
    /// confinement has namespaces and a folder for layers, and this kernel
    /// makes user namespaces (tried once) and is 5.11 or later (overlays in
    /// them). Where it is not, commands write to the workspace directly.
    pub fn layered(&self) -> bool {
        static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let asked =
            self.layers.is_some() && self.confinement.as_ref().is_some_and(|c| c.spec.namespaces);
        asked && *WORKS.get_or_init(|| layer::kernel_has_overlays() && sys::can_unshare().is_ok())
    }

    /// Confines commands without user namespaces even where the kernel
    /// allows them, as on a server that refuses them (Ubuntu 24.04's
    /// default): Landlock and the system-call filter alone. For testing
    /// that fallback (`OFFCODE_TEST_NO_NAMESPACES`).
    #[must_use]
    pub fn without_namespaces(mut self) -> Self {
        if let Some(confinement) = &mut self.confinement {
            confinement.spec.namespaces = false;
        }
        self
    }

    /// Where the checks after commands are recorded.
    pub fn records(&self) -> Option<&Path> {
        self.records.as_deref()
    }

    /// How commands run.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The confinement, unless it is off, unavailable or `lifted` (a
    /// person approved running this one command unconfined).
    pub fn confinement(&self, lifted: bool) -> Option<&Confinement> {
        self.confinement.as_ref().filter(|_| !lifted)
    }

    /// `program args...`, confined unless `lifted`; either way in a new
    /// session with no controlling terminal (and so its own process group).
    ///
    /// # Errors
    /// When the private temp dir of a confined command cannot be made.
    pub fn command(
        &self,
        program: &str,
        args: &[&str],
        lifted: bool,
    ) -> std::io::Result<std::process::Command> {
        self.start(program, args, lifted, None)
    }

    /// [`Shell::command`] over an overlay of the workspace where commands
    /// are [`Shell::layered`]: the layer that then holds what the command
    /// changes, for the caller to apply once the command and all it
    /// started have ended.
    ///
    /// # Errors
    /// As [`Shell::command`], and when the layer's folders cannot be made.
    pub fn layered_command(
        &self,
        program: &str,
        args: &[&str],
        lifted: bool,
    ) -> std::io::Result<(std::process::Command, Option<layer::Layer>)> {
        let layer = match (&self.layers, self.confinement(lifted)) {
            (Some(layers), Some(confinement)) if self.layered() => {
                Some(layer::Layer::new(layers, &confinement.spec.writable[0])?)
            }
            _ => None,
        };
        let command = self.start(
            program,
            args,
            lifted,
            layer.as_ref().map(layer::Layer::dirs),
        )?;
        Ok((command, layer))
    }

    /// [`Shell::command`], over the overlay `layer` writes to when given.
    fn start(
        &self,
        program: &str,
        args: &[&str],
        lifted: bool,
        layer: Option<&layer::Dirs>,
    ) -> std::io::Result<std::process::Command> {
        let mut command = if let Some(confinement) = self.confinement(lifted) {
            confinement.command(program, args, layer)?
        } else {
            let mut command = std::process::Command::new(program);
            command.args(args);
            command
        };
        sys::new_session(&mut command);
        Ok(command)
    }

    /// Gives `environment` to the program of `command` (made by
    /// [`Shell::command`] with `lifted`): confined, it travels through the
    /// helper ([`CONFINED_ENV`]) and reaches the program only, never the
    /// helper, where `LD_PRELOAD` and the like would run before it confines
    /// anything.
    ///
    /// # Errors
    /// When it cannot be written down for the helper.
    pub fn give_environment(
        &self,
        command: &mut std::process::Command,
        lifted: bool,
        environment: &std::collections::BTreeMap<String, String>,
    ) -> std::io::Result<()> {
        if self.confinement(lifted).is_some() {
            let json = serde_json::to_string(environment).map_err(std::io::Error::other)?;
            command.env(CONFINED_ENV, json);
        } else {
            command.envs(environment);
        }
        Ok(())
    }
}
