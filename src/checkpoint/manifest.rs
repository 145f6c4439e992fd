//! A checkpoint's manifest: every kept file of the workspace with its
//! kind, mode, size, times and the hash of its bytes, sorted by path.
//!
//! Stored as a text object of its own (so an unchanged tree gives the same
//! manifest and costs nothing more), one line per file:
//! `KIND MODE SIZE MTIME_NS CTIME_NS INODE HASH PATH`, the path escaped
//! (`%25` for `%`, `%0A` for a newline, `%XX` for bytes that are not UTF-8);
//! then, since version 2, one line per folder the walk entered:
//! `d MODE 0 0 0 0 - PATH`, so a revert knows which folders were there
//! and with what mode (a folder's birth time is no witness: a container's
//! overlay file system gives a folder a new one when it is first written).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The first line of a manifest with its folders.
const HEADER: &str = "offcode-manifest 2";
/// The first line of one written before folders were kept.
const HEADER_FILES_ONLY: &str = "offcode-manifest 1";

/// What a kept path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file; the hash is of its bytes.
    File,
    /// A symbolic link; the hash is of its target.
    Link,
    /// A file whose bytes were not kept (over `max_file_mb`, or the
    /// session's share of the store was full): seen, never stored.
    NotKept,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Self::File => 'f',
            Self::Link => 'l',
            Self::NotKept => 'x',
        }
    }

    fn from_letter(letter: &str) -> Option<Self> {
        match letter {
            "f" => Some(Self::File),
            "l" => Some(Self::Link),
            "x" => Some(Self::NotKept),
            _ => None,
        }
    }
}

/// One path of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the workspace root.
    pub path: PathBuf,
    /// What it is.
    pub kind: Kind,
    /// Permission bits.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime: i128,
    /// Status change time, nanoseconds since the epoch.
    pub ctime: i128,
    /// Inode number.
    pub inode: u64,
    /// SHA-256 of the content, hex (empty for [`Kind::NotKept`]).
    pub hash: String,
}

impl Entry {
    /// Whether `other` has the same content and mode (times may differ).
    pub fn same_content(&self, other: &Entry) -> bool {
        self.kind == other.kind
            && self.mode == other.mode
            && self.hash == other.hash
            && (self.kind != Kind::NotKept || self.size == other.size && self.mtime == other.mtime)
    }

    /// Whether a stat of the file now matches what was recorded, so its
    /// hash can be taken over without reading it.
    pub fn same_stat(&self, other: &Entry) -> bool {
        self.kind == other.kind
            && self.mode == other.mode
            && self.size == other.size
            && self.mtime == other.mtime
            && self.ctime == other.ctime
            && self.inode == other.inode
    }
}

/// A folder of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    /// Relative to the workspace root.
    pub path: PathBuf,
    /// Permission bits.
    pub mode: u32,
}

/// The kept files of one checkpoint, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The entries, sorted by path bytes.
    pub entries: Vec<Entry>,
    /// The folders the walk entered, sorted by path bytes; `None` in a
    /// manifest written before they were kept.
    pub folders: Option<Vec<Folder>>,
}

impl Manifest {
    /// The entry for `path`.
    pub fn get(&self, path: &Path) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| {
                e.path
                    .as_os_str()
                    .as_bytes()
                    .cmp(path.as_os_str().as_bytes())
            })
            .ok()
            .map(|index| &self.entries[index])
    }

    /// The folder at `path`; `None` when there is none, or the manifest
    /// does not know its folders.
    pub fn folder(&self, path: &Path) -> Option<&Folder> {
        let folders = self.folders.as_ref()?;
        folders
            .binary_search_by(|f| by_bytes(&f.path, path))
            .ok()
            .map(|index| &folders[index])
    }

    /// The text stored.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.entries.len() * 120);
        let header = if self.folders.is_some() {
            HEADER
        } else {
            HEADER_FILES_ONLY
        };
        out.extend_from_slice(header.as_bytes());
        out.push(b'\n');
        for e in &self.entries {
            let hash = if e.hash.is_empty() { "-" } else { &e.hash };
            out.extend_from_slice(
                format!(
                    "{} {:o} {} {} {} {} {hash} ",
                    e.kind.letter(),
                    e.mode,
                    e.size,
                    e.mtime,
                    e.ctime,
                    e.inode
                )
                .as_bytes(),
            );
            escape(e.path.as_os_str().as_bytes(), &mut out);
            out.push(b'\n');
        }
        for folder in self.folders.iter().flatten() {
            out.extend_from_slice(format!("d {:o} 0 0 0 0 - ", folder.mode).as_bytes());
            escape(folder.path.as_os_str().as_bytes(), &mut out);
            out.push(b'\n');
        }
        out
    }

    /// Reads a stored manifest; `None` when it is not one.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.split('\n');
        let mut folders = match lines.next()? {
            HEADER => Some(Vec::new()),
            HEADER_FILES_ONLY => None,
            _ => return None,
        };
        let mut entries = Vec::new();
        for line in lines.filter(|l| !l.is_empty()) {
            let mut fields = line.splitn(8, ' ');
            let letter = fields.next()?;
            if letter == "d" {
                let mode = u32::from_str_radix(fields.next()?, 8).ok()?;
                let path = PathBuf::from(std::ffi::OsStr::from_bytes(&unescape(fields.nth(5)?)?));
                folders.as_mut()?.push(Folder { path, mode });
                continue;
            }
            let kind = Kind::from_letter(letter)?;
            let mode = u32::from_str_radix(fields.next()?, 8).ok()?;
            let size = fields.next()?.parse().ok()?;
            let mtime = fields.next()?.parse().ok()?;
            let ctime = fields.next()?.parse().ok()?;
            let inode = fields.next()?.parse().ok()?;
            let hash = match fields.next()? {
                "-" => String::new(),
                hash if is_hash(hash) => hash.to_owned(),
                _ => return None,
            };
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(&unescape(fields.next()?)?));
            entries.push(Entry {
                path,
                kind,
                mode,
                size,
                mtime,
                ctime,
                inode,
                hash,
            });
        }
        let sorted = entries
            .windows(2)
            .all(|pair| by_bytes(&pair[0].path, &pair[1].path).is_lt())
            && folders
                .iter()
                .flatten()
                .collect::<Vec<_>>()
                .windows(2)
                .all(|pair| by_bytes(&pair[0].path, &pair[1].path).is_lt());
        sorted.then_some(Self { entries, folders })
    }
}

/// Paths in a manifest's order: byte for byte.
pub fn by_bytes(a: &Path, b: &Path) -> std::cmp::Ordering {
    a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes())
}

/// Whether `text` is a SHA-256 in lowercase hex.
pub fn is_hash(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(bytes);
    let valid = matches!(text, std::borrow::Cow::Borrowed(_));
    for &b in bytes {
        if b == b'%' || b == b'\n' || b == b'\r' || (!valid && b >= 0x80) {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

fn unescape(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// How one path differs between two manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The path.
    pub path: PathBuf,
    /// Before (none: it did not exist).
    pub before: Option<Entry>,
    /// After (none: it was removed).
    pub after: Option<Entry>,
}

/// The paths whose content or mode differ from `old` to `new`.
pub fn diff(old: &Manifest, new: &Manifest) -> Vec<Change> {
    let mut left = old.entries.iter().peekable();
    let mut right = new.entries.iter().peekable();
    let mut changes = Vec::new();
    loop {
        let order = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(was), Some(is)) => was
                .path
                .as_os_str()
                .as_bytes()
                .cmp(is.path.as_os_str().as_bytes()),
        };
        match order {
            std::cmp::Ordering::Less => {
                if let Some(was) = left.next() {
                    changes.push(Change {
                        path: was.path.clone(),
                        before: Some(was.clone()),
                        after: None,
                    });
                }
            }
            std::cmp::Ordering::Greater => {
                if let Some(is) = right.next() {
                    changes.push(Change {
                        path: is.path.clone(),
                        before: None,
                        after: Some(is.clone()),
                    });
                }
            }
            std::cmp::Ordering::Equal => {
                if let (Some(was), Some(is)) = (left.next(), right.next())
                    && !was.same_content(is)
                {
                    changes.push(Change {
                        path: was.path.clone(),
                        before: Some(was.clone()),
                        after: Some(is.clone()),
                    });
                }
            }
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &[u8], hash: char) -> Entry {
        Entry {
            path: PathBuf::from(std::ffi::OsStr::from_bytes(path)),
            kind: Kind::File,
            mode: 0o644,
            size: 3,
            mtime: 1_700_000_000_123_456_789,
            ctime: -5,
            inode: 42,
            hash: hash.to_string().repeat(64),
        }
    }

    #[test]
    fn a_manifest_reads_back_as_written_with_odd_names() {
        let manifest = Manifest {
            entries: vec![
                entry(b"a b/c%d", 'a'),
                entry(b"line\nbreak", 'b'),
                entry(b"raw\xff\xfe", 'c'),
                entry("中文.txt".as_bytes(), 'd'),
            ],
            folders: None,
        };
        let text = manifest.render();
        assert!(text.starts_with(b"offcode-manifest 1\n"));
        assert_eq!(Manifest::parse(&text), Some(manifest.clone()));
        // With its folders: version 2, odd names too.
        let mut with_folders = manifest;
        with_folders.folders = Some(vec![
            Folder {
                path: PathBuf::from("a b"),
                mode: 0o755,
            },
            Folder {
                path: PathBuf::from(std::ffi::OsStr::from_bytes(b"line\nbreak dir\xff")),
                mode: 0o1777,
            },
        ]);
        let text = with_folders.render();
        assert!(text.starts_with(b"offcode-manifest 2\n"));
        let read = Manifest::parse(&text).unwrap();
        assert_eq!(read, with_folders);
        assert_eq!(read.folder(Path::new("a b")).map(|f| f.mode), Some(0o755));
        assert_eq!(read.folder(Path::new("a")), None);
        // A folder line in a version 1 manifest is not one.
        let mut mixed = b"offcode-manifest 1\n".to_vec();
        mixed.extend_from_slice(b"d 755 0 0 0 0 - x\n");
        assert_eq!(Manifest::parse(&mixed), None);
        assert_eq!(Manifest::parse(b"not a manifest\n"), None);
        let mut broken = text.clone();
        broken.truncate(text.len() - 10);
        broken.extend_from_slice(b"\nf zz");
        assert_eq!(Manifest::parse(&broken), None);
    }

    #[test]
    fn diff_names_added_removed_and_changed_paths() {
        let a = Manifest {
            entries: vec![entry(b"a", '1'), entry(b"b", '2'), entry(b"c", '3')],
            folders: None,
        };
        let mut changed = entry(b"c", '4');
        changed.mtime = 0;
        let mut touched = entry(b"b", '2');
        touched.mtime = 9;
        let b = Manifest {
            entries: vec![touched, changed, entry(b"d", '5')],
            folders: None,
        };
        let paths: Vec<(String, bool, bool)> = diff(&a, &b)
            .into_iter()
            .map(|c| {
                (
                    c.path.display().to_string(),
                    c.before.is_some(),
                    c.after.is_some(),
                )
            })
            .collect();
        assert_eq!(
            paths,
            [
                ("a".to_owned(), true, false),
                ("c".to_owned(), true, true),
                ("d".to_owned(), false, true)
            ]
        );
    }
}
