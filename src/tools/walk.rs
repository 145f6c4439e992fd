//! Directory walks for `list`, `glob` and `grep`: `.gitignore`-aware (also
//! outside git repositories), hidden files off unless asked for, symlinks
//! never followed. The start is checked in the kernel before the walk and
//! every entry the tools return is checked again (or opened) through the
//! sandbox, so a directory swapped for a symlink mid-walk leaks nothing.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use rustix::fs::OFlags;

use super::Error;
use crate::sandbox::Sandbox;

/// A walk of the workspace below `path`.
pub fn builder(
    sandbox: &Sandbox,
    path: &str,
    hidden: bool,
) -> Result<(WalkBuilder, PathBuf), Error> {
    sandbox.open(path, OFlags::PATH)?;
    let relative = sandbox.relative(path)?;
    let start = sandbox.root().join(relative);
    crate::paths::refuse_blocking_ignore_files(&start);
    let mut builder = WalkBuilder::new(&start);
    // offcode's records are never entered, so not even a count of what
    // they hold leaks.
    let secret = sandbox.clone_secret();
    builder
        .hidden(!hidden)
        .follow_links(false)
        .require_git(false)
        .filter_entry(move |entry| {
            let kept =
                entry.file_name() != ".git" && !secret.iter().any(|s| entry.path().starts_with(s));
            if kept && entry.file_type().is_some_and(|kind| kind.is_dir()) {
                crate::paths::refuse_blocking_ignore_files(entry.path());
            }
            kept
        });
    Ok((builder, start))
}

/// An entry's path relative to the workspace root, as the model writes it.
pub fn relative(sandbox: &Sandbox, path: &Path) -> String {
    let shown = sandbox.display(path);
    if shown.is_empty() {
        ".".to_owned()
    } else {
        shown
    }
}

/// The marker appended when a result was cut.
pub fn more_marker(left_out: usize, what: &str, hint: &str) -> String {
    format!("[... {left_out} more {what} not shown; {hint}]")
}
