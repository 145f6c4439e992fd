//! Messages a person can act on, in time: a server that accepts and never
//! answers, a closed port at start, input too big for the context.

use std::net::TcpListener;

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
fn a_run_says_it_waits_for_the_model_list() {
    let url = silent_port();
    // Past the 2 s notice, short of a long wait.
    let ws = patient(3_500);
    // No model configured: the model list is asked for first.
    let listing = run(ws.offcode(&url, &["run", "hello"]));
    assert_eq!(listing.code, 1);
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
}

#[test]
fn a_run_says_it_waits_for_the_model() {
    let url = silent_port();
    // Past the 5 s notice.
    let ws = patient(6_500);
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
        streaming.stderr.contains("No data from the server for 6 s"),
        "{}",
        streaming.stderr
    );
}

#[test]
fn a_long_call_written_as_text_is_reported_while_it_is_held() {
    use crate::support::{Reply, chunks, mock, sse};
    // A small model writes a call as bare JSON, slowly: nothing of it can
    // be shown until it ends, so the run says what is going on.
    let words = vec!["word"; 50].join(" ");
    let call = format!(
        r#"{{"name": "write", "arguments": {{"path": "notes.txt", "content": "{words}"}}}}"#
    );
    let server = mock();
    server.push(Reply::sse_events(
        chunks::text_answer(&call),
        // About 12 s in all: past the first notice at 10 s.
        std::time::Duration::from_millis(220),
    ));
    server.push(sse(&chunks::text_answer("Wrote notes.txt.")));
    let ws = Workspace::new();
    let output = run(ws.offcode(
        &server.base_url(),
        &["run", "--yes", "--model", "mock-model", "write the notes"],
    ));
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output
            .stderr
            .contains("The model is writing what may be a tool call: "),
        "{}",
        output.stderr
    );
    // Held, then run: the file is there and the call's text never showed.
    assert_eq!(
        std::fs::read_to_string(ws.root.join("notes.txt")).unwrap(),
        words
    );
    assert!(!output.stdout.contains("\"name\""), "{}", output.stdout);
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

/// `text` in GBK, as an older Chinese project keeps its files.
fn gbk(text: &str) -> Vec<u8> {
    encoding_rs::GBK.encode(text).0.into_owned()
}

#[test]
fn a_gbk_file_is_read_decoded_and_named_and_never_edited_into_utf8() {
    let ws = Workspace::new();
    let original = gbk("# 配置文件\nport = 8080 # 服务器端口\n");
    std::fs::write(ws.root.join("config.ini"), &original).unwrap();
    let read = run(ws.offcode(
        "http://127.0.0.1:9/v1",
        &["tool", "read", r#"{"path": "config.ini"}"#],
    ));
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert!(
        read.stdout
            .contains("is GBK text, not UTF-8; shown decoded"),
        "{}",
        read.stdout
    );
    assert!(
        read.stdout.contains("port = 8080 # 服务器端口"),
        "{}",
        read.stdout
    );
    assert!(
        !read.stdout.contains('\u{fffd}'),
        "mojibake: {}",
        read.stdout
    );
    let edit = run(ws.offcode(
        "http://127.0.0.1:9/v1",
        &[
            "tool",
            "edit",
            "--yes",
            r#"{"path": "config.ini", "old_string": "8080", "new_string": "9090"}"#,
        ],
    ));
    assert_eq!(edit.code, 1);
    let said = edit.stdout + &edit.stderr;
    assert!(
        said.contains("`config.ini` is GBK text, not UTF-8"),
        "{said}"
    );
    assert!(said.contains("iconv -f GBK -t UTF-8"), "{said}");
    assert!(!said.contains("use write"), "{said}");
    assert_eq!(std::fs::read(ws.root.join("config.ini")).unwrap(), original);
}

#[test]
fn at_attaches_gbk_decoded_and_refuses_a_binary_file() {
    let server = crate::support::demo_mock();
    let ws = Workspace::new();
    std::fs::write(ws.root.join("notes.txt"), gbk("会议记录：下周发布。\n")).unwrap();
    std::fs::write(ws.root.join("tool.bin"), b"\x7fELF\x02\x01\x01\0\0\0\0\0").unwrap();
    let mut command = ws.offcode(&server.base_url(), &[]);
    command.env("OFFCODE_MODEL", "mock-model");
    let output =
        crate::support::run_with_stdin(command, "summarise @notes.txt\nwhat is @tool.bin\n/quit\n");
    assert!(
        output
            .stdout
            .contains("`@notes.txt` is GBK text, not UTF-8: attached decoded"),
        "{}",
        output.stdout
    );
    assert!(
        output
            .stdout
            .contains("Cannot attach `@tool.bin`: it is a binary file"),
        "{}",
        output.stdout
    );
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 1, "only the text attachment was sent");
    let sent = bodies[0]["messages"].to_string();
    assert!(sent.contains("会议记录：下周发布。"), "{sent}");
    assert!(sent.contains(r#"encoding=\"GBK\""#), "{sent}");
}

#[test]
fn help_says_what_no_command_does_and_tool_lists_every_tool() {
    let ws = Workspace::new();
    let help = run(ws.offcode("http://127.0.0.1:9/v1", &["--help"]));
    assert!(
        help.stdout
            .contains("Without a command, `offcode` starts the interactive UI"),
        "{}",
        help.stdout
    );
    let names = offcode::tools::Registry::default().names();
    let listed = run(ws.offcode("http://127.0.0.1:9/v1", &["tool"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let tool_help = run(ws.offcode("http://127.0.0.1:9/v1", &["tool", "--help"]));
    for name in names {
        assert!(
            listed.stdout.contains(&format!("\n  {name} ")),
            "{name}: {}",
            listed.stdout
        );
        assert!(
            tool_help.stdout.contains(name),
            "{name}: {}",
            tool_help.stdout
        );
    }
    assert!(listed.stdout.contains("(**/*.rs)"), "{}", listed.stdout);
}

#[test]
fn json_output_has_no_empty_deltas() {
    let server = crate::support::demo_mock();
    let ws = Workspace::new();
    let output = run(ws.offcode(
        &server.base_url(),
        &["run", "--json", "-m", "mock-model", "hello there"],
    ));
    assert_eq!(output.code, 0, "{}", output.stderr);
    let deltas = output.stdout.matches(r#""type":"assistant_delta""#).count();
    assert!(deltas > 0, "{}", output.stdout);
    assert!(
        !output.stdout.contains(r#""delta":"""#),
        "{}",
        output.stdout
    );
}
