//! How a [`super::Snapshot`] is kept on disk: paths as the bytes of their
//! names, so any name a file may have is recorded.

/// A path as the bytes of its name.
pub(super) mod path_bytes {
    use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
    use std::path::{Path, PathBuf};

    use serde::{Deserialize as _, Deserializer, Serialize as _, Serializer};

    pub fn serialize<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
        path.as_os_str().as_bytes().serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PathBuf, D::Error> {
        Vec::<u8>::deserialize(deserializer).map(|bytes| std::ffi::OsString::from_vec(bytes).into())
    }
}

/// The entries as a list of (path bytes, entry).
pub(super) mod entries {
    use std::collections::BTreeMap;
    use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
    use std::path::PathBuf;

    use serde::{Deserialize as _, Deserializer, Serialize as _, Serializer};

    use super::super::Entry;

    pub fn serialize<S: Serializer>(
        entries: &BTreeMap<PathBuf, Entry>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let list: Vec<(&[u8], &Entry)> = entries
            .iter()
            .map(|(path, entry)| (path.as_os_str().as_bytes(), entry))
            .collect();
        list.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<PathBuf, Entry>, D::Error> {
        let list = Vec::<(Vec<u8>, Entry)>::deserialize(deserializer)?;
        Ok(list
            .into_iter()
            .map(|(path, entry)| (std::ffi::OsString::from_vec(path).into(), entry))
            .collect())
    }
}
