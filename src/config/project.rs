//! What a project's config files would loosen: set aside while the files
//! are read, and applied only when the user trusts the folder
//! ([`crate::trust`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Environment, Merged, Source, single};
use crate::trust::{Loosening, Store, allow_entries};

/// The loosening settings found in the project's files so far.
#[derive(Default)]
pub struct ProjectPart {
    entries: Vec<String>,
    files: Vec<PathBuf>,
    network: Option<(Value, PathBuf)>,
}

impl ProjectPart {
    /// Notes what the project file at `path` would loosen: its `allow`
    /// rules, and `sandbox.network: true`, which is taken out of `layer`
    /// until the folder is trusted.
    pub fn take(
        &mut self,
        path: &Path,
        layer: &mut Map<String, Value>,
        permission: Option<&Value>,
    ) {
        let mut entries = permission.map(allow_entries).unwrap_or_default();
        if let Some(network) = take_network(layer) {
            entries.push("sandbox.network = true".to_owned());
            self.network = Some((network, path.to_path_buf()));
        }
        if !entries.is_empty() {
            self.entries.extend(entries);
            self.files.push(path.to_path_buf());
        }
    }

    /// Whether the user trusts it; when so, the project's policy layers
    /// loosen as written and its network setting is applied.
    pub fn finish(
        self,
        environment: &Environment,
        policy_layers: &mut [crate::policy::Layer],
        merged: &mut Merged,
    ) -> Option<Loosening> {
        if self.entries.is_empty() {
            return None;
        }
        let store = Store::in_dir(environment.data_dir().as_deref());
        let loosening = Loosening {
            trusted: store.trusts(&environment.cwd, &self.entries.join("\n")),
            root: environment.cwd.clone(),
            files: self.files,
            entries: self.entries,
        };
        if loosening.trusted {
            for layer in policy_layers {
                layer.untrusted = false;
            }
            if let Some((network, path)) = self.network {
                merged.apply(
                    single("sandbox", json!({ "network": network })),
                    &Source::File(path),
                );
            }
        }
        Some(loosening)
    }
}

/// Takes `sandbox.network: true` out of a project layer: it loosens, so it
/// waits for trust. `false` stays, as any tightening does.
fn take_network(layer: &mut Map<String, Value>) -> Option<Value> {
    let sandbox = layer.get_mut("sandbox")?.as_object_mut()?;
    if sandbox.get("network") == Some(&Value::Bool(true)) {
        sandbox.remove("network")
    } else {
        None
    }
}
