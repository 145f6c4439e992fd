//! How connections are made: which certificates are trusted and which
//! proxy (if any) carries the requests, decided once for the endpoint.
//!
//! Trust: the system store (which honours `SSL_CERT_FILE`), or, with
//! `tls.ca_file`, the system bundle plus that file's certificates.
//! `tls.insecure_skip_verify` turns checking off (callers warn loudly).
//!
//! Proxies follow curl: `HTTPS_PROXY` for `https://` endpoints,
//! `http_proxy` for `http://` ones (lower case only: a login profile's
//! `HTTP_PROXY` is ignored, as curl ignores it since "httpoxy"),
//! `ALL_PROXY` for both (lower-case names too), and `NO_PROXY` with `*`,
//! domains that also match their subdomains, IP addresses, CIDR ranges and
//! optional ports.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

use super::Error;
use crate::config::Config;

/// Where Linux distributions keep the system CA bundle.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
];

/// Said whenever certificate checks are off.
pub const INSECURE_WARNING: &str = "INSECURE: `tls.insecure_skip_verify` is on, so the server's certificate is not checked; anyone on the network path can read and change what offcode sends and receives. Use `tls.ca_file` with the server's CA certificate instead";

/// TLS and proxy settings for one endpoint.
#[derive(Debug, Clone)]
pub struct Network {
    /// Certificate checking.
    pub tls: TlsConfig,
    /// The proxy requests go through, if any.
    pub proxy: Option<ureq::Proxy>,
    /// The proxy's address as configured (for `doctor`), credentials hidden.
    pub proxy_shown: Option<String>,
}

impl Network {
    /// The settings for `config.base_url`; `var` reads the environment.
    pub fn for_config(
        config: &Config,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let tls = tls_config(config, var)?;
        let proxy_url = proxy_for(&config.base_url, var);
        let proxy = match &proxy_url {
            Some(url) => Some(ureq::Proxy::new(url).map_err(|e| {
                Error::Setup(format!(
                    "The proxy address `{}` is not valid: {e}",
                    hide_credentials(url)
                ))
            })?),
            None => None,
        };
        Ok(Self {
            tls,
            proxy,
            proxy_shown: proxy_url.as_deref().map(hide_credentials),
        })
    }
}

fn tls_config(config: &Config, var: &dyn Fn(&str) -> Option<String>) -> Result<TlsConfig, Error> {
    let builder = TlsConfig::builder();
    if config.tls.insecure_skip_verify {
        return Ok(builder.disable_verification(true).build());
    }
    let Some(ca_file) = &config.tls.ca_file else {
        return Ok(builder.root_certs(RootCerts::PlatformVerifier).build());
    };
    let path = crate::paths::expand_home(ca_file, var("HOME").as_deref());
    let mut certs = read_certificates(&path).map_err(|reason| {
        Error::Setup(format!("`tls.ca_file` (`{}`): {reason}", path.display()))
    })?;
    if certs.is_empty() {
        return Err(Error::Setup(format!(
            "`tls.ca_file` (`{}`) holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)",
            path.display()
        )));
    }
    // A list of roots replaces the system's: add the system bundle too.
    let system = var("SSL_CERT_FILE")
        .map(PathBuf::from)
        .into_iter()
        .chain(SYSTEM_BUNDLES.iter().map(PathBuf::from))
        .find(|p| p.is_file());
    if let Some(bundle) = system
        && let Ok(system) = read_certificates(&bundle)
    {
        certs.extend(system);
    }
    Ok(builder
        .root_certs(RootCerts::new_with_certs(&certs))
        .build())
}

/// The certificates of a PEM file.
fn read_certificates(path: &Path) -> Result<Vec<Certificate<'static>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&bytes) {
        match item {
            Ok(PemItem::Certificate(cert)) => certs.push(cert),
            Ok(_) => {}
            Err(e) => return Err(format!("not a valid PEM file: {e}")),
        }
    }
    Ok(certs)
}

/// The proxy for requests to `url`, as curl would choose it.
pub fn proxy_for(url: &str, var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    // Lower case first, like curl; an empty value counts as unset.
    let get = |name: &str| {
        let set = |n: &str| var(n).filter(|v| !v.trim().is_empty());
        set(&name.to_lowercase()).or_else(|| set(name))
    };
    let scheme = url.split_once("://")?.0;
    let (host, port) = host_port(url)?;
    if let Some(list) = get("NO_PROXY")
        && no_proxy_matches(&list, &host, port)
    {
        return None;
    }
    let specific = if scheme.eq_ignore_ascii_case("https") {
        get("HTTPS_PROXY")
    } else {
        // Lower case only, as curl: `HTTP_PROXY` may be set by what a
        // request carries (CGI's `Proxy:` header) or a login profile.
        var("http_proxy").filter(|v| !v.trim().is_empty())
    };
    specific.or_else(|| get("ALL_PROXY"))
}

/// The host and port `url` connects to.
pub fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = split_host_port(authority, scheme);
    (!host.is_empty()).then_some((host, port))
}

fn split_host_port(authority: &str, scheme: &str) -> (String, u16) {
    let default = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    if let Some(rest) = authority.strip_prefix('[') {
        // [v6]:port
        let (host, after) = rest.split_once(']').unwrap_or((rest, ""));
        let port = after
            .strip_prefix(':')
            .and_then(|p| p.parse().ok())
            .unwrap_or(default);
        return (host.to_lowercase(), port);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => {
            (host.to_lowercase(), port.parse().unwrap_or(default))
        }
        _ => (authority.to_lowercase(), default),
    }
}

/// Whether `NO_PROXY` (comma or space separated) exempts `host:port`.
pub fn no_proxy_matches(list: &str, host: &str, port: u16) -> bool {
    let host = host.trim_end_matches('.').to_lowercase();
    let ip: Option<IpAddr> = host.parse().ok();
    list.split([',', ' '])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            let entry = entry.to_lowercase();
            // An optional port must match.
            let (pattern, want_port) = match entry.rsplit_once(':') {
                Some((p, q)) if !p.contains(':') || p.ends_with(']') => {
                    (p.trim_matches(['[', ']']).to_owned(), q.parse::<u16>().ok())
                }
                _ => (entry.trim_matches(['[', ']']).to_owned(), None),
            };
            if want_port.is_some_and(|p| p != port) {
                return false;
            }
            if let Some(ip) = ip {
                return ip_matches(ip, &pattern);
            }
            let domain = pattern.trim_start_matches("*.").trim_start_matches('.');
            host == domain || host.ends_with(&format!(".{domain}"))
        })
}

fn ip_matches(ip: IpAddr, pattern: &str) -> bool {
    let (base, bits) = match pattern.split_once('/') {
        Some((base, bits)) => match bits.parse::<u32>() {
            Ok(bits) => (base, Some(bits)),
            Err(_) => return false,
        },
        None => (pattern, None),
    };
    let Ok(base) = base.parse::<IpAddr>() else {
        return false;
    };
    match (ip, base) {
        (IpAddr::V4(ip), IpAddr::V4(base)) => {
            let bits = bits.unwrap_or(32).min(32);
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(ip) & mask == u32::from(base) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(base)) => {
            let bits = bits.unwrap_or(128).min(128);
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(ip) & mask == u128::from(base) & mask
        }
        _ => false,
    }
}

/// `http://user:secret@host:3128` shown as `http://user:****@host:3128`.
fn hide_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.rsplit_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:****@{host}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn each_scheme_takes_its_own_proxy_variable() {
        let vars = env(&[
            ("HTTPS_PROXY", "http://secure:3128"),
            ("http_proxy", "http://plain:3128"),
        ]);
        assert_eq!(
            proxy_for("https://gpu:8000/v1", &vars).as_deref(),
            Some("http://secure:3128")
        );
        assert_eq!(
            proxy_for("http://gpu:8000/v1", &vars).as_deref(),
            Some("http://plain:3128")
        );
        // Only HTTP_PROXY set: https is not proxied (unlike ureq's own),
        // and neither is http (curl reads only `http_proxy`).
        let vars = env(&[("HTTP_PROXY", "http://plain:3128")]);
        assert_eq!(proxy_for("https://gpu/v1", &vars), None);
        assert_eq!(proxy_for("http://gpu/v1", &vars), None);
        let vars = env(&[("ALL_PROXY", "socks5://all:1080")]);
        assert_eq!(
            proxy_for("https://gpu/v1", &vars).as_deref(),
            Some("socks5://all:1080")
        );
        assert_eq!(proxy_for("http://gpu/v1", &env(&[])), None);
    }

    #[test]
    fn no_proxy_matches_like_curl() {
        let list = "localhost, .corp.example, gpu.lab, 10.0.0.0/8, ::1, 192.168.1.5:8000";
        for (host, port, expected) in [
            ("localhost", 80, true),
            ("a.corp.example", 443, true),
            ("corp.example", 443, true),
            ("gpu.lab", 8000, true),
            ("node1.gpu.lab", 8000, true),
            ("notgpu.lab", 8000, false),
            ("10.20.30.40", 8000, true),
            ("11.0.0.1", 8000, false),
            ("::1", 8000, true),
            ("192.168.1.5", 8000, true),
            ("192.168.1.5", 9000, false),
            ("example.com", 443, false),
        ] {
            assert_eq!(
                no_proxy_matches(list, host, port),
                expected,
                "{host}:{port}"
            );
        }
        assert!(no_proxy_matches("*", "anything", 1));
        let vars = env(&[("HTTPS_PROXY", "http://p:3128"), ("no_proxy", "10.0.0.0/8")]);
        assert_eq!(proxy_for("https://10.1.2.3:8000/v1", &vars), None);
        assert_eq!(
            proxy_for(
                "https://user:pw@[::1]:8000/v1",
                &env(&[("NO_PROXY", "::1"), ("HTTPS_PROXY", "http://p")])
            ),
            None
        );
    }

    #[test]
    fn an_empty_variable_is_unset_and_lower_case_wins() {
        let vars = env(&[
            ("NO_PROXY", ""),
            ("no_proxy", "gpu"),
            ("HTTPS_PROXY", "http://upper:1"),
            ("https_proxy", "http://lower:1"),
        ]);
        assert_eq!(proxy_for("https://gpu/v1", &vars), None);
        assert_eq!(
            proxy_for("https://other/v1", &vars).as_deref(),
            Some("http://lower:1")
        );
    }

    #[test]
    fn credentials_in_a_proxy_address_are_hidden() {
        assert_eq!(
            hide_credentials("http://me:p@ss@proxy:3128"),
            "http://me:****@proxy:3128"
        );
        assert_eq!(
            hide_credentials("http://me:secret@proxy:3128"),
            "http://me:****@proxy:3128"
        );
        assert_eq!(hide_credentials("http://proxy:3128"), "http://proxy:3128");
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.tls.ca_file = Some(dir.path().join("nope.pem").display().to_string());
        let error = Network::for_config(&config, &env(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`tls.ca_file`")
                && error.contains("nope.pem")
                && error.contains("cannot read"),
            "{error}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "just text\n").unwrap();
        config.tls.ca_file = Some("~/empty.pem".into());
        let home = dir.path().display().to_string();
        let error = Network::for_config(&config, &env(&[("HOME", &home)]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("holds no PEM certificate") && error.contains("empty.pem"),
            "{error}"
        );
    }
}
