//! The helper's part: the overlay of the workspace, mounted in the
//! command's mount namespace before anything else is changed there.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::mount::{MountFlags, MoveMountFlags, OpenTreeFlags};

use super::Dirs;

/// Mounts an overlay over the workspace (`dirs.lower`, its own lower
/// layer), writing into `dirs`. What is mounted beneath `root` (another file
/// system, a writable directory of the config's) is carried over as it
/// is: an overlay does not look into the mounts beneath its lower layer,
/// and writes there are not the workspace's to hold back.
fn mount(dirs: &Dirs, carried: &[PathBuf]) -> std::io::Result<()> {
    let root = dirs.lower.as_path();
    let mut beneath: Vec<PathBuf> = mounts_beneath(root)
        .into_iter()
        .chain(
            carried
                .iter()
                .filter(|dir| dir.starts_with(root) && *dir != root)
                .cloned(),
        )
        .collect();
    beneath.sort();
    beneath.dedup();
    // One beneath another comes along with it.
    beneath.dedup_by(|inner, outer| inner.starts_with(&*outer));
    let mut trees = Vec::new();
    for dir in beneath {
        let tree = rustix::mount::open_tree(
            rustix::fs::CWD,
            &dir,
            OpenTreeFlags::OPEN_TREE_CLONE
                | OpenTreeFlags::OPEN_TREE_CLOEXEC
                | OpenTreeFlags::AT_RECURSIVE,
        )?;
        trees.push((dir, tree));
    }
    let mut data = b"lowerdir=".to_vec();
    escape(root, &mut data);
    data.extend_from_slice(b",upperdir=");
    escape(&dirs.upper, &mut data);
    data.extend_from_slice(b",workdir=");
    escape(&dirs.work, &mut data);
    // In a user namespace the overlay's own marks (opaque folders) are
    // `user.overlay.*` attributes.
    data.extend_from_slice(b",userxattr");
    // No sync of each file copied up: the layer is applied as soon as the
    // command ends, and after a crash it is never applied at all.
    data.extend_from_slice(b",volatile");
    let data = CString::new(data).map_err(std::io::Error::other)?;
    rustix::mount::mount(
        "overlay",
        root,
        "overlay",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(data.as_c_str()),
    )?;
    for (dir, tree) in trees {
        rustix::mount::move_mount(
            &tree,
            "",
            rustix::fs::CWD,
            &dir,
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
    }
    Ok(())
}

/// Mounts the overlay, or leaves a note in the layer's folder that it failed, and why:
/// the command then writes to the workspace directly.
pub fn mount_or_note(dirs: &Dirs, carried: &[PathBuf]) {
    if let Err(error) = mount(dirs, carried) {
        super::note_unmounted(dirs, &error);
    }
}

/// A path in an overlay's options: `\`, `,` and `:` are escaped.
fn escape(path: &Path, out: &mut Vec<u8>) {
    for byte in path.as_os_str().as_bytes() {
        if matches!(byte, b'\\' | b',' | b':') {
            out.push(b'\\');
        }
        out.push(*byte);
    }
}

/// The mount points strictly beneath `root`, from `/proc/self/mountinfo`.
fn mounts_beneath(root: &Path) -> Vec<PathBuf> {
    let Ok(table) = std::fs::read("/proc/self/mountinfo") else {
        return Vec::new();
    };
    table
        .split(|byte| *byte == b'\n')
        .filter_map(|line| line.split(|byte| *byte == b' ').nth(4))
        .map(|field| PathBuf::from(std::ffi::OsStr::from_bytes(&unescape(field))))
        .filter(|point| point.starts_with(root) && point != root)
        .collect()
}

/// A mountinfo field: spaces, tabs, newlines and `\` are written `\ooo`.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut at = 0;
    while at < field.len() {
        let octal = field.get(at + 1..at + 4).filter(|digits| {
            field[at] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d))
        });
        if let Some(digits) = octal {
            let value = digits
                .iter()
                .fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'));
            out.push(u8::try_from(value).unwrap_or(b'?'));
            at += 4;
        } else {
            out.push(field[at]);
            at += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_paths_escape_the_separators() {
        let mut out = Vec::new();
        escape(Path::new("/w/a,b:c\\d e"), &mut out);
        assert_eq!(out, b"/w/a\\,b\\:c\\\\d e");
    }

    #[test]
    fn mountinfo_fields_are_unescaped() {
        assert_eq!(unescape(b"/home/a\\040b\\011c\\134d"), b"/home/a b\tc\\d");
        assert_eq!(unescape(b"/plain\\9"), b"/plain\\9");
    }
}
