//! What a project's config files would loosen: set aside while the files
//! are read, and applied only when the user trusts the folder
//! ([`crate::trust`]). Loosening is more than `allow` rules: network for
//! commands, and where requests (with the code in them) go: `base_url`,
//! and the TLS settings that decide which server is believed.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Environment, Merged, Source};
use crate::trust::{Loosening, Store, allow_entries};

/// The loosening settings found in the project's files so far.
#[derive(Default)]
pub struct ProjectPart {
    entries: Vec<String>,
    files: Vec<PathBuf>,
    /// Settings taken out of the files, applied (in order) when trusted.
    held: Vec<(Map<String, Value>, PathBuf)>,
}

impl ProjectPart {
    /// Notes what the project file at `path` would loosen: its `allow`
    /// rules, its `mcp` servers, and `sandbox.network: true`, `base_url`,
    /// `tls.insecure_skip_verify: true` and `tls.ca_file`, which are taken
    /// out of `layer` until the folder is trusted.
    pub fn take(
        &mut self,
        path: &Path,
        layer: &mut Map<String, Value>,
        permission: Option<&Value>,
    ) {
        let mut entries = permission.map(allow_entries).unwrap_or_default();
        let mut held = Map::new();
        if let Some(network) = take_network(layer) {
            entries.push("sandbox.network = true".to_owned());
            held.insert("sandbox".to_owned(), json!({ "network": network }));
        }
        // A repository's MCP servers are programs it would have offcode run.
        if let Some(Value::Object(servers)) = layer.remove("mcp") {
            for (name, server) in &servers {
                // Checked already (`mcp::check_layer`); read as a session would.
                let Ok(server) = serde_json::from_value::<super::mcp::ServerConfig>(server.clone())
                else {
                    continue;
                };
                let unconfined = if server.confine {
                    ""
                } else {
                    " outside the sandbox"
                };
                let argv = server.argv();
                entries.push(if argv.is_empty() {
                    format!("mcp server `{name}` is changed{unconfined}")
                } else {
                    format!("mcp server `{name}` runs `{}`{unconfined}", argv.join(" "))
                });
            }
            held.insert("mcp".to_owned(), Value::Object(servers));
        }
        if let Some(url) = layer.remove("base_url") {
            entries.push(format!("base_url = {url}"));
            held.insert("base_url".to_owned(), url);
        }
        if let Some(Value::Object(tls)) = layer.get_mut("tls") {
            let mut taken = Map::new();
            if tls.get("insecure_skip_verify") == Some(&Value::Bool(true)) {
                entries.push("tls.insecure_skip_verify = true".to_owned());
                taken.insert("insecure_skip_verify".to_owned(), Value::Bool(true));
                tls.remove("insecure_skip_verify");
            }
            if let Some(file) = tls.remove("ca_file") {
                entries.push(format!("tls.ca_file = {file}"));
                taken.insert("ca_file".to_owned(), file);
            }
            if !taken.is_empty() {
                held.insert("tls".to_owned(), Value::Object(taken));
            }
        }
        if !held.is_empty() {
            self.held.push((held, path.to_path_buf()));
        }
        if !entries.is_empty() {
            self.entries.extend(entries);
            self.files.push(path.to_path_buf());
        }
    }

    /// Whether the user trusts it; when so, the project's policy layers
    /// loosen as written and the settings held back are applied.
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
            for (layer, path) in self.held {
                merged.apply(layer, &Source::File(path));
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
