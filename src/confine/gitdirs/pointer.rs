//! Where a `.git` file or a `commondir` sends git, resolved one name at a
//! time, and every path of the workspace the answer hangs on.
//!
//! git reads a pointer in the person's process, later: a link on the way
//! can be re-pointed after offcode looked (`ln -sfn evil x` in a later
//! command changes where git goes without touching the pointer), and a
//! link into `/proc` (`/proc/self/cwd`) leads git somewhere other than
//! offcode, whose current folder is not the person's. So every link and
//! folder the resolution passes is recorded, to tell when any of them
//! changed, and a pointer that leads through a link of the workspace or
//! through `/proc` is said to be odd: git itself never writes one.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::super::gitconfig::read_plain_file;

/// Links followed at most, as the kernel does.
const MAX_LINKS: usize = 40;

/// What a pointer comes to.
pub(super) struct Resolved {
    /// The folder git would use, as a real path inside the workspace;
    /// `None` when it leads outside it, nowhere, or through `/proc`.
    pub target: Option<PathBuf>,
    /// The path as written in the pointer (or its link).
    pub written: String,
    /// Paths inside the workspace the answer hangs on: the pointer, each
    /// link read and each folder entered.
    pub hangs_on: Vec<PathBuf>,
    /// Why git may be led elsewhere than what is judged here: the
    /// pointer is a link, a link of the workspace is on the way, or the
    /// way passes through `/proc`.
    pub odd: Option<&'static str>,
}

/// Resolves `pointer` (a real path inside `root`, itself real).
pub(super) fn resolve(root: &Path, pointer: &Path) -> Resolved {
    let mut resolved = Resolved {
        target: None,
        written: String::new(),
        hangs_on: vec![pointer.to_path_buf()],
        odd: None,
    };
    let base = pointer.parent().unwrap_or(root).to_path_buf();
    let text = if let Ok(link) = std::fs::read_link(pointer) {
        // git reads through a link; where it leads counts too.
        resolved.odd = Some("is a link");
        let text = link.display().to_string();
        let file = walk_path(root, &base, &link, &mut resolved);
        if pointer.file_name().is_some_and(|name| name == ".git") {
            // A `.git` link names the git directory itself.
            resolved.written = text;
            resolved.target = file.filter(|path| path.is_dir());
            return resolved;
        }
        let Some(file) = file else {
            resolved.written = text;
            return resolved;
        };
        read_plain_file(&file).unwrap_or_default()
    } else {
        read_plain_file(pointer).unwrap_or_default()
    };
    let git_file = pointer.file_name().is_some_and(|name| name == ".git");
    let Some(path) = as_git_reads(&text, git_file) else {
        resolved.written = String::from_utf8_lossy(&text).into_owned();
        return resolved;
    };
    resolved.written = String::from_utf8_lossy(path).into_owned();
    // git never writes a name with a space or control character at
    // either end, nor a NUL (which ends the name for git).
    let trimmed = path.trim_ascii();
    if trimmed.len() != path.len() || path.iter().any(|b| *b < b' ') || text.contains(&0) {
        resolved.odd = Some("is not written as git writes one");
    }
    let path = Path::new(std::ffi::OsStr::from_bytes(path));
    let target = if path.as_os_str().is_empty() {
        // An empty `commondir` is the git directory itself.
        Some(base)
    } else {
        walk_path(root, &base, path, &mut resolved)
    };
    resolved.target = target.filter(|path| path.is_dir() && path.starts_with(root));
    resolved
}

/// The path a pointer's `text` names, read as git reads it: line ends
/// (`\n`, `\r`) taken off its end and nothing else, then up to a NUL
/// (git reads it as a C string), after `gitdir: ` (one space) in a `.git`
/// file; `None` when git would refuse it.
fn as_git_reads(text: &[u8], git_file: bool) -> Option<&[u8]> {
    let mut end = text.len();
    while end > 0 && matches!(text[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let text = text[..end].split(|b| *b == 0).next().unwrap_or_default();
    if git_file {
        text.strip_prefix(b"gitdir: ")
    } else {
        Some(text)
    }
}

/// Follows `path` from `base` one name at a time as the kernel would,
/// noting in `resolved` what inside `root` it passes and what makes it
/// odd; the real path it ends at, when it exists and leaves no `/proc`.
fn walk_path(root: &Path, base: &Path, path: &Path, resolved: &mut Resolved) -> Option<PathBuf> {
    let mut current = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    let mut pending: VecDeque<Component<'_>> = path.components().collect();
    let mut links = 0;
    // Link texts read on the way are kept alive here and walked in turn.
    let mut queue: VecDeque<OsString> = VecDeque::new();
    loop {
        let part = if let Some(name) = queue.pop_front() {
            name
        } else if let Some(part) = pending.pop_front() {
            match part {
                Component::RootDir => {
                    current = PathBuf::from("/");
                    continue;
                }
                Component::CurDir | Component::Prefix(_) => continue,
                Component::ParentDir => OsString::from(".."),
                Component::Normal(name) => name.to_owned(),
            }
        } else {
            break;
        };
        if part == ".." {
            current.pop();
            continue;
        }
        if part == "." || part.is_empty() {
            continue;
        }
        let next = current.join(&part);
        if next.starts_with("/proc") {
            resolved.odd = Some("leads through /proc");
            return None;
        }
        let inside = next.starts_with(root);
        if inside {
            resolved.hangs_on.push(next.clone());
        }
        let meta = std::fs::symlink_metadata(&next).ok()?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            if inside {
                resolved
                    .odd
                    .get_or_insert("leads through a link in the workspace");
            }
            let link = std::fs::read_link(&next).ok()?;
            if link.is_absolute() {
                current = PathBuf::from("/");
            }
            // The link's names come before what was left of the path.
            let mut names: VecDeque<OsString> = link
                .components()
                .filter_map(|c| match c {
                    Component::Normal(name) => Some(name.to_owned()),
                    Component::ParentDir => Some(OsString::from("..")),
                    _ => None,
                })
                .collect();
            names.extend(queue.drain(..));
            queue = names;
        } else {
            current = next;
        }
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointer_is_resolved_name_by_name_with_what_it_hangs_on() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for folder in ["w", "G", "y/C", "z"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        // Plainly: `../G` from `w`.
        std::fs::write(root.join("w/.git"), "gitdir: ../G\n").unwrap();
        let plain = resolve(&root, &root.join("w/.git"));
        assert_eq!(plain.target, Some(root.join("G")));
        assert_eq!(plain.written, "../G");
        assert!(plain.odd.is_none());
        assert_eq!(plain.hangs_on, [root.join("w/.git"), root.join("G")]);
        // Through a link: the link and where it leads are hung on.
        std::os::unix::fs::symlink("../y", root.join("G/L")).unwrap();
        std::fs::write(root.join("G/commondir"), "L/C\n").unwrap();
        let linked = resolve(&root, &root.join("G/commondir"));
        assert_eq!(linked.target, Some(root.join("y/C")));
        assert_eq!(linked.odd, Some("leads through a link in the workspace"));
        assert!(linked.hangs_on.contains(&root.join("G/L")));
        assert!(linked.hangs_on.contains(&root.join("y/C")));
        // Into /proc: where it leads depends on who reads it.
        std::os::unix::fs::symlink("/proc/self/cwd", root.join("G/P")).unwrap();
        std::fs::write(root.join("z/commondir"), "../G/P/C\n").unwrap();
        let proc = resolve(&root, &root.join("z/commondir"));
        assert_eq!(proc.target, None);
        assert_eq!(proc.odd, Some("leads through /proc"));
        // The pointer a link: odd, and the file it leads to is hung on.
        std::fs::write(root.join("y/cd"), "../G\n").unwrap();
        std::os::unix::fs::symlink("../y/cd", root.join("w/commondir")).unwrap();
        let link = resolve(&root, &root.join("w/commondir"));
        assert_eq!(link.odd, Some("is a link"));
        assert!(link.hangs_on.contains(&root.join("y/cd")));
        // Links in a circle lead nowhere; nor does a missing folder.
        std::os::unix::fs::symlink("b", root.join("a")).unwrap();
        std::os::unix::fs::symlink("a", root.join("b")).unwrap();
        std::fs::write(root.join("z/.git"), "gitdir: ../a\n").unwrap();
        assert_eq!(resolve(&root, &root.join("z/.git")).target, None);
        std::fs::write(root.join("z/.git"), "gitdir: ../missing\n").unwrap();
        assert_eq!(resolve(&root, &root.join("z/.git")).target, None);
        // Outside the workspace: no target.
        std::fs::write(root.join("z/.git"), "gitdir: /tmp\n").unwrap();
        assert_eq!(resolve(&root, &root.join("z/.git")).target, None);
    }

    #[test]
    fn a_pointer_is_read_as_git_reads_it_and_odd_bytes_are_odd() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for folder in ["G", "u", "u ", "u\t", " x"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        let commondir = root.join("G/commondir");
        let read = |text: &[u8]| {
            std::fs::write(&commondir, text).unwrap();
            resolve(&root, &commondir)
        };
        // git takes off line ends only: a space or a tab stays part of
        // the name (an outside tester's `../u ` led git to `u `).
        let plain = read(b"../u\r\n\n");
        assert_eq!((plain.target, plain.odd), (Some(root.join("u")), None));
        let space = read(b"../u \n");
        assert_eq!(space.target, Some(root.join("u ")));
        assert_eq!(space.odd, Some("is not written as git writes one"));
        let tab = read(b"../u\t");
        assert_eq!(tab.target, Some(root.join("u\t")));
        assert!(tab.odd.is_some());
        // A NUL ends the name for git.
        let nul = read(b"../u\0/../x\n");
        assert_eq!(nul.target, Some(root.join("u")));
        assert!(nul.odd.is_some());
        // Empty: the git directory itself.
        assert_eq!(read(b"\n").target, Some(root.join("G")));
        // A `.git` file: `gitdir: ` and one space; more are the name's.
        std::fs::write(root.join("G/.git"), "gitdir:  x\n").unwrap();
        let spaced = resolve(&root, &root.join("G/.git"));
        assert_eq!(spaced.target, None);
        std::fs::write(root.join("G/.git"), "gitdir:  ../ x\n").unwrap();
        let spaced = resolve(&root, &root.join("G/.git"));
        assert_eq!(spaced.written, " ../ x");
        assert!(spaced.odd.is_some());
        std::fs::write(root.join("G/.git"), "gitdir:../u\n").unwrap();
        assert_eq!(resolve(&root, &root.join("G/.git")).target, None);
    }
}
