//! The files no call may change without a person: offcode's own, anything
//! in a git directory, the files the workspace's repository includes into
//! its config, and the person's shell, login and settings files (and what
//! they lead to, where they are links into the workspace).

use std::path::{Path, PathBuf};

use super::Policy;
use super::gate::{self, Danger};

impl Policy {
    /// Sets offcode's own files and directories, which no call may change
    /// without a person.
    #[must_use]
    pub fn with_own_files(mut self, own: &[PathBuf]) -> Self {
        self.own_files = own
            .iter()
            .map(|path| gate::real_path(path))
            .chain(
                own.iter()
                    .filter_map(|path| std::fs::canonicalize(path).ok()),
            )
            .collect();
        self
    }

    /// Whether `path` is one of the files no call may change without a
    /// person: offcode's project config and its own files (they decide what
    /// later calls may do), anything in a git directory at any depth (its
    /// config and hooks run programs when a person next uses git), and the
    /// person's shell, login and settings files in the home directory.
    pub(super) fn is_own_config(&self, path: &Path) -> bool {
        let resolved = gate::real_path(path);
        let in_workspace = resolved.strip_prefix(&self.root).is_ok_and(|relative| {
            crate::confine::protect::is_protected(relative)
                || relative.components().any(|part| part.as_os_str() == ".git")
        });
        let personal = self.home.as_deref().is_some_and(|home| {
            resolved
                .strip_prefix(gate::real_path(Path::new(home)))
                .ok()
                .and_then(|relative| relative.components().next())
                .is_some_and(|first| crate::confine::protect::is_personal_name(first.as_os_str()))
        });
        in_workspace
            || personal
            || self.own_files.iter().any(|own| resolved.starts_with(own))
            || self.linked().includes.contains(&resolved)
            || self
                .linked()
                .personal
                .iter()
                .any(|target| resolved.starts_with(target))
    }

    fn linked(&self) -> &Linked {
        self.linked.get_or_init(|| Linked {
            includes: crate::confine::includes::include_targets(&self.root),
            personal: self.home.as_deref().map_or_else(Vec::new, |home| {
                crate::confine::protect::personal_targets(
                    Path::new(home),
                    std::slice::from_ref(&self.root),
                )
            }),
        })
    }
}

/// Files that are protected because something else leads to them.
#[derive(Debug)]
pub(super) struct Linked {
    /// Files the workspace's repository includes into its config.
    includes: Vec<PathBuf>,
    /// What the person's files in the home directory lead to, where they
    /// are links into the workspace (a dotfiles repository).
    personal: Vec<PathBuf>,
}

/// The danger of a call that changes one of them.
pub(super) fn own_config_danger(target: &str) -> Danger {
    Danger {
        command: target.to_owned(),
        why: "changes offcode's own configuration or files, a git directory, or the person's shell, login or settings files, which decide what later runs"
            .to_owned(),
    }
}
