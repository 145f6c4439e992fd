//! The files git reads as config beyond a repository's own, found from
//! the workspace's repository and the person's global config: what they
//! include (to any depth), the links on the way, and the hooks folder a
//! `core.hooksPath` names. Commands may not change them
//! ([`super::protect`]), and the file tools ask before they do.

use std::path::{Path, PathBuf};

use super::gitconfig::{read_config, read_plain, read_plain_file};

/// Files inside the workspace `root` that git reads as config when the
/// person uses it: what the workspace's own repository includes into its
/// config (`include.path`, `includeIf.*.path`), what the person's global
/// config includes (`~/.gitconfig`, `~/.config/git/config`: a workspace
/// that is a dotfiles folder), and what those files include in turn; a
/// link in the workspace on the way to one; and the folder hooks run from
/// when `core.hooksPath` names one there (husky's `.husky/_`, a
/// `.githooks`). git reads the first as its config and runs what is in the
/// last, so they are kept like `.git/config` and `.git/hooks`.
pub fn include_targets(root: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    include_targets_with(root, home.as_deref(), xdg.as_deref())
}

/// Config files read at most while following includes.
const MAX_INCLUDED: usize = 32;

/// [`include_targets`] with the home and `XDG_CONFIG_HOME` given.
fn include_targets_with(root: &Path, home: Option<&Path>, xdg: Option<&Path>) -> Vec<PathBuf> {
    let root = &crate::paths::real_path(root);
    let git_dir = root.join(".git");
    let mut queue: Vec<PathBuf> = vec![git_dir.join("config"), git_dir.join("config.worktree")];
    if let Some(home) = home {
        queue.push(home.join(".gitconfig"));
        queue.push(
            xdg.map_or_else(|| home.join(".config"), Path::to_path_buf)
                .join("git/config"),
        );
    }
    let home_text = home.and_then(Path::to_str);
    let mut read = Vec::new();
    let mut targets = Vec::new();
    while let Some(file) = queue.pop() {
        // Not there, nothing included: no git to start (two of them cost
        // the start-up several milliseconds before the first request).
        let file = crate::paths::real_path(&file);
        if read.len() >= MAX_INCLUDED || read.contains(&file) || !file.is_file() {
            continue;
        }
        read.push(file.clone());
        // The person's own files outside (which no command can write) are
        // read plainly where that can be done, sparing a git at start;
        // what is inside, by git itself.
        let plainly = || {
            let bytes = read_plain_file(&file)?;
            read_plain(&String::from_utf8_lossy(&bytes)).ok()
        };
        let settings = if file.starts_with(root) {
            None
        } else {
            plainly()
        };
        let Some(settings) = settings.or_else(|| read_config(&file).ok()) else {
            continue;
        };
        // An include is relative to the file that names it; the hooks
        // folder to the top of the working tree. `~/` is the home.
        let folder = file.parent().unwrap_or(root).to_path_buf();
        for setting in settings {
            let include = setting.key == "include.path"
                || (setting.key.starts_with("includeif.")
                    && setting.key.rsplit('.').next() == Some("path"));
            let hooks = setting.key == "core.hookspath";
            let Some(value) = setting.value.filter(|_| include || hooks) else {
                continue;
            };
            let base = if hooks { root } else { &folder };
            let named = base.join(crate::paths::expand_home(&value, home_text));
            let path = crate::paths::real_path(&named);
            let mut found = vec![path.clone()];
            // A link of the workspace on the way (`cfg -> elsewhere`): a
            // command that points it at another file changes the config.
            found.extend(links_on_the_way(root, &named));
            for target in found {
                let inside = target.starts_with(root) && !target.starts_with(&git_dir);
                if inside && !targets.contains(&target) {
                    targets.push(target);
                }
            }
            if include {
                queue.push(path);
            }
        }
    }
    targets
}

/// The links among the folders and file `path` names beneath `root`, read
/// as written (`..` taken lexically).
fn links_on_the_way(root: &Path, path: &Path) -> Vec<PathBuf> {
    let mut lexical = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            std::path::Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    lexical
        .ancestors()
        .filter(|step| step.starts_with(root) && *step != root)
        .filter(|step| std::fs::symlink_metadata(step).is_ok_and(|m| m.file_type().is_symlink()))
        .map(Path::to_path_buf)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn what_the_global_config_and_includes_of_includes_read_is_found() {
        let (work, home, elsewhere) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let root = &crate::paths::real_path(work.path());
        let home = &crate::paths::real_path(home.path());
        let elsewhere = &crate::paths::real_path(elsewhere.path());
        // The workspace is a dotfiles folder the global config includes,
        // directly and through a file of the home.
        std::fs::write(
            home.join(".gitconfig"),
            format!(
                "[include]\n\tpath = {}\n\tpath = ~/outside.gitconfig\n",
                root.join("shared.gitconfig").display()
            ),
        )
        .unwrap();
        std::fs::write(
            home.join("outside.gitconfig"),
            format!(
                "[include]\n\tpath = {}\n",
                root.join("deep/more.gitconfig").display()
            ),
        )
        .unwrap();
        // Its repository includes a file that includes one not made yet,
        // and one through a link of the workspace.
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[include]\n\tpath = ../proj.gitconfig\n\tpath = ../cfg/x.gitconfig\n",
        )
        .unwrap();
        std::fs::write(
            root.join("proj.gitconfig"),
            "[include]\n\tpath = local.gitconfig\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(elsewhere, root.join("cfg")).unwrap();
        let mut found = include_targets_with(root, Some(home), None);
        found.sort();
        let mut wanted: Vec<PathBuf> = [
            "cfg",
            "deep/more.gitconfig",
            "local.gitconfig",
            "proj.gitconfig",
            "shared.gitconfig",
        ]
        .iter()
        .map(|p| root.join(p))
        .collect();
        wanted.sort();
        assert_eq!(found, wanted);
        // Without the home, only the repository's.
        let found = include_targets_with(root, None, None);
        assert!(!found.contains(&root.join("shared.gitconfig")), "{found:?}");
        assert!(found.contains(&root.join("local.gitconfig")), "{found:?}");
    }
}
