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

#[test]
fn a_message_too_big_for_the_model_says_by_how_much_and_is_not_sent() {
    let server = crate::support::demo_mock();
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        "{ context_limit: 32768 }",
    )
    .unwrap();
    let prompt = "explain this log line by line\n".repeat(35_000);
    let output = crate::support::run_with_stdin(
        ws.offcode(&server.base_url(), &["run", "--model", "mock-model", "-"]),
        &prompt,
    );
    assert_eq!(output.code, 1);
    for expected in [
        "error: This message is too big for the model: about ",
        "the context holds 32768",
        "tokens too big. Nothing was sent.",
        "let the model read the parts it needs",
    ] {
        assert!(
            output.stderr.contains(expected),
            "{expected}: {}",
            output.stderr
        );
    }
    assert!(!output.stderr.contains("/new"), "{}", output.stderr);
    assert!(server.chat_bodies().is_empty(), "the request went out");
    // The session does not keep a message that was never sent.
    let session = std::fs::read_to_string(ws.session_files().pop().unwrap()).unwrap();
    assert!(!session.contains("explain this log"), "recorded");
}
