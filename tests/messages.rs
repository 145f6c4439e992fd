//! Messages a person can act on, in time: a server that accepts and never
//! answers, a closed port at start, input too big for the context.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::support::{Workspace, run};

/// A port that accepts connections and never says a word.
fn silent_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    url
}

/// A workspace whose config gives up on a silent server after `idle_ms`.
fn patient(idle_ms: u64) -> Workspace {
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        format!(
            "{{ retry: {{ initial_delay_ms: 10, max_delay_ms: 40, max_retries: 0 }}, \
             timeouts: {{ idle_ms: {idle_ms} }} }}"
        ),
    )
    .unwrap();
    ws
}

#[test]
fn a_silent_server_is_named_as_connected_but_not_answering() {
    let url = silent_port();
    let ws = patient(1_500);
    let models = run(ws.offcode(&url, &["models"]));
    assert_eq!(models.code, 1);
    assert!(
        models.stderr.contains(&format!(
            "Connected to `{url}/models`, but the server sent no answer in time"
        )),
        "{}",
        models.stderr
    );
    assert!(
        !models.stderr.contains("Could not connect"),
        "{}",
        models.stderr
    );
    assert!(
        !models.stderr.contains("timeout: global"),
        "{}",
        models.stderr
    );
}

#[test]
fn a_run_says_what_it_waits_for_while_it_waits() {
    let url = silent_port();
    let ws = patient(8_000);
    // No model configured: the model list is asked for first.
    let started = Instant::now();
    let listing = run(ws.offcode(&url, &["run", "hello"]));
    assert!(
        listing
            .stderr
            .contains(&format!("Asking `{url}` which models it serves")),
        "{}",
        listing.stderr
    );
    assert!(
        listing.stderr.contains("no answer in time"),
        "{}",
        listing.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    // A model configured: the stream waits, and says so after 5 s.
    let streaming = run(ws.offcode(&url, &["run", "--model", "m", "hello"]));
    assert_eq!(streaming.code, 1);
    assert!(
        streaming
            .stderr
            .contains(&format!("Waiting for the model at `{url}`: no output for")),
        "{}",
        streaming.stderr
    );
    assert!(
        streaming.stderr.contains("No data from the server for 8 s"),
        "{}",
        streaming.stderr
    );
}
