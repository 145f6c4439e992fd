//! The spellings of one file path that permission rules are matched on.

use std::path::{Path, PathBuf};

use super::gate;

/// Every spelling of the file `path` names, for its rules: as written,
/// with `.` and `..` taken out and a path in the workspace made
/// relative, and with every symlink followed (a link, or a folder
/// link, to a denied file is the denied file). A rule on any of them
/// applies, and the strictest decides, so a spelling never loosens.
pub(super) fn spellings(root: &Path, path: &str) -> Vec<String> {
    let mut forms = vec![path.to_owned()];
    if path.is_empty() {
        return forms;
    }
    let joined = root.join(path);
    let as_rule = |full: &Path| match full.strip_prefix(root) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => full.display().to_string(),
    };
    let plain = lexical(&joined);
    // A dangling symlink names the file a write through it creates.
    let dangling = std::fs::read_link(&plain)
        .ok()
        .map(|target| gate::real_path(&plain.parent().unwrap_or(root).join(target)));
    for full in [Some(plain), Some(gate::real_path(&joined)), dangling]
        .into_iter()
        .flatten()
    {
        let form = as_rule(&full);
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// `path` with `.` and `..` applied as written, no symlink followed.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
