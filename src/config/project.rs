//! What a project's config files would loosen: set aside while the files
//! are read, and applied only when the user trusts the folder
//! ([`crate::trust`]). Loosening is more than `allow` rules: network for
//! commands, and where requests (with the code in them) go: `base_url`,
//! and the TLS settings that decide which server is believed.

use std::fmt::Write as _;
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
    /// rules, its `mcp` servers and `provider`s, and `sandbox.network: true`, `base_url`,
    /// `tls.insecure_skip_verify: true` and `tls.ca_file`, which are taken
    /// out of `layer` until the folder is trusted.
    pub fn take(
        &mut self,
        path: &Path,
        root: &Path,
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
        if let Some(Value::Object(mut servers)) = layer.remove("mcp") {
            // Always confined: trust pins the files a server's command names,
            // not what they load (a sourced script, a module, a package), so
            // trust must never lift the sandbox. Only the person's own config
            // can run a server outside it; a server this file redefines is
            // confined too, whatever the person's config said of it.
            for server in servers.values_mut() {
                if let Value::Object(fields) = server {
                    fields.insert("confine".to_owned(), Value::Bool(true));
                }
            }
            for (name, server) in &servers {
                // Checked already (`mcp::check_layer`); read as a session would.
                if let Ok(server) =
                    serde_json::from_value::<super::mcp::ServerConfig>(server.clone())
                {
                    entries.push(describe_server(name, &server, root));
                }
            }
            held.insert("mcp".to_owned(), Value::Object(servers));
        }
        // So is the command that checks its work after each turn.
        if let Some(Value::Object(validate)) = layer.get_mut("validate")
            && let Some(commands) = validate.remove("commands")
        {
            let shown: Vec<String> = commands
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| format!("`{}`", c.as_str().unwrap_or_default()))
                .collect();
            entries.push(format!("validate runs {}", shown.join(", ")));
            held.insert("validate".to_owned(), json!({ "commands": commands }));
        }
        // A provider is a place requests go, with headers and a key: the
        // whole of it is the trust entry, so any change asks again.
        if let Some(Value::Object(providers)) = layer.remove("provider") {
            for (name, provider) in &providers {
                let url = ["/options/baseURL", "/api"]
                    .iter()
                    .find_map(|at| provider.pointer(at).and_then(Value::as_str))
                    .unwrap_or("the shorthand's URL");
                entries.push(format!(
                    "provider `{name}` sends requests to {url}: {provider}"
                ));
            }
            held.insert("provider".to_owned(), Value::Object(providers));
        }
        // Which providers are used decides where requests go too.
        for key in ["disabled_providers", "enabled_providers"] {
            if let Some(list) = layer.remove(key) {
                entries.push(format!("{key} = {list}"));
                held.insert(key.to_owned(), list);
            }
        }
        if let Some(url) = layer.remove("base_url") {
            entries.push(format!(
                "base_url = {url} (its requests carry the API key set for base_url, if any)"
            ));
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

/// One trust entry for a project's MCP server: everything that decides
/// what it runs (its command and arguments, environment and confinement,
/// and the content of each workspace file it names), so that a change to
/// any of them asks again.
fn describe_server(name: &str, server: &super::mcp::ServerConfig, root: &Path) -> String {
    let argv = server.argv();
    let mut text = if argv.is_empty() {
        format!("mcp server `{name}` is changed")
    } else {
        format!("mcp server `{name}` runs `{}`", argv.join(" "))
    };
    if !server.environment.is_empty() {
        let pairs: Vec<String> = server
            .environment
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        let _ = write!(text, " with environment {}", pairs.join(" "));
    }
    if !server.confine {
        text.push_str(" outside the sandbox");
    }
    for word in &argv {
        if let Some(digest) = workspace_file_digest(root, word) {
            let _ = write!(text, "; `{word}` has sha256 {digest}");
        }
    }
    text
}

/// The SHA-256 (its first 16 hex digits) of the file `word` names, when
/// it is a file inside the workspace `root`.
fn workspace_file_digest(root: &Path, word: &str) -> Option<String> {
    let path = std::fs::canonicalize(root.join(word)).ok()?;
    if !path.starts_with(std::fs::canonicalize(root).ok()?) || !path.is_file() {
        return None;
    }
    let content = std::fs::read(&path).ok()?;
    let digest = ring::digest::digest(&ring::digest::SHA256, &content);
    let mut hex = String::new();
    for byte in &digest.as_ref()[..8] {
        let _ = write!(hex, "{byte:02x}");
    }
    Some(hex)
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
