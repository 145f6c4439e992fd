//! Network pieces for the TLS and proxy tests: a small HTTPS server that
//! answers every request with a model list (certificates in
//! `tests/fixtures/tls`), and a CONNECT proxy.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");

/// The test CA's certificate file.
pub fn ca_file() -> String {
    format!("{FIXTURES}/ca.pem")
}

/// Starts the server; returns its `https://127.0.0.1:PORT/v1` root.
pub fn start() -> String {
    let certs = CertificateDer::pem_file_iter(format!("{FIXTURES}/server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{FIXTURES}/server.key")).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = Arc::clone(&config);
            std::thread::spawn(move || {
                let Ok(connection) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(connection, stream);
                // A client that refuses the certificate ends here.
                let mut reader = BufReader::new(&mut tls);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    if line == "\r\n" {
                        break;
                    }
                    line.clear();
                }
                let body = crate::support::chunks::models(&[("tls-model", 8192)]).to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(reply.as_bytes());
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    format!("https://127.0.0.1:{port}/v1")
}

/// A CONNECT proxy that sends every tunnel to `target` (whatever host was
/// asked for) and records the `CONNECT` lines it got.
pub fn connect_proxy(target: std::net::SocketAddr) -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(client.try_clone().unwrap());
                let mut first = String::new();
                reader.read_line(&mut first).unwrap();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                log.lock().unwrap().push(first.trim().to_owned());
                let Ok(server) = TcpStream::connect(target) else {
                    return;
                };
                let mut client_out = client.try_clone().unwrap();
                client_out
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .unwrap();
                let mut server_in = server.try_clone().unwrap();
                let mut server_out = server;
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut reader, &mut server_out);
                    let _ = server_out.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut server_in, &mut client_out);
                let _ = client_out.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (address, seen)
}
