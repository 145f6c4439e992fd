//! `cargo run --example mcp-server [-- OPTIONS]`: a stdio MCP server with
//! scripted faults, for offcode's MCP tests and to try `offcode mcp` by hand.
//!
//! It speaks JSON-RPC 2.0 with one JSON object per line on stdin and stdout
//! (no `Content-Length` headers); diagnostics go to stderr, and `--log FILE`
//! records what it received for the tests to check. Each `tools/call` runs on
//! its own thread, so a slow call can be cancelled while stdin is still read.
//! `--help` lists the tools and the options.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test support: a broken test server should fail loudly"
)]

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const USAGE: &str = "\
usage: mcp-server [OPTIONS]

A stdio MCP server (newline-delimited JSON-RPC 2.0) with scripted faults.

Tools: echo {text}, add {a, b}, slow {ms} (cancellable), big {bytes},
media {}, fail {}, crash {} (exits with status 3), write_file {path, content},
connect {port}, env {name}.

Options:
  --log FILE             append `start PID`, `recv METHOD`, `response ID`,
                         `cancelled ID`, `invalid json` and `exit` lines to FILE
  --notify-before-init   send notifications/tools/list_changed and
                         notifications/message before the initialize result
  --garbage              print `this is not json {` before every response
  --big-schemas N        add tools big_schema_1..N, each with a ~26 KB schema
  --many-tools N         add tools tool_1..N, each taking a string `x`
  --add-tool-after-call  after the first tools/call answer, add the tool
                         added_later and send notifications/tools/list_changed
  --ping-client          ping the client (id \"srv-1\") after
                         notifications/initialized
  --exit-at-start        log the start, then exit with status 1
  --hang-init            never answer initialize
  --page N               answer tools/list N tools at a time, with nextCursor
  --crash-after N        exit with status 4 on the tools/call after N answers
  --bad-version          answer initialize with protocolVersion 1999-01-01
  --linger               at the end of stdin, log `linger` and stay (a server
                         that outlives its client unless something kills it)
  --help                 print this and exit with status 2";

/// The protocol versions a client may ask for; any other gets the default.
const VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const DEFAULT_VERSION: &str = "2025-06-18";

/// The line `--garbage` prints before every response.
const GARBAGE: &str = "this is not json {\n";

#[allow(
    clippy::struct_excessive_bools,
    reason = "one field per command-line option"
)]
#[derive(Default)]
struct Options {
    log: Option<PathBuf>,
    notify_before_init: bool,
    garbage: bool,
    big_schemas: usize,
    many_tools: usize,
    add_tool_after_call: bool,
    ping_client: bool,
    exit_at_start: bool,
    hang_init: bool,
    page: Option<usize>,
    crash_after: Option<usize>,
    bad_version: bool,
    linger: bool,
}

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2);
}

fn parse_args() -> Options {
    let mut options = Options::default();
    let mut args = std::env::args().skip(1);
    let number = |args: &mut std::iter::Skip<std::env::Args>| -> usize {
        args.next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| usage())
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--log" => options.log = Some(args.next().unwrap_or_else(|| usage()).into()),
            "--notify-before-init" => options.notify_before_init = true,
            "--garbage" => options.garbage = true,
            "--big-schemas" => options.big_schemas = number(&mut args),
            "--many-tools" => options.many_tools = number(&mut args),
            "--add-tool-after-call" => options.add_tool_after_call = true,
            "--ping-client" => options.ping_client = true,
            "--exit-at-start" => options.exit_at_start = true,
            "--hang-init" => options.hang_init = true,
            "--page" => match number(&mut args) {
                0 => usage(),
                n => options.page = Some(n),
            },
            "--crash-after" => options.crash_after = Some(number(&mut args)),
            "--bad-version" => options.bad_version = true,
            "--linger" => options.linger = true,
            _ => usage(),
        }
    }
    options
}

/// What the reader thread and the `tools/call` threads share.
struct Server {
    options: Options,
    /// Held for the whole of a write, so messages never interleave.
    out: Mutex<std::io::Stdout>,
    /// The tool definitions `tools/list` answers with, in order.
    tools: Mutex<Vec<Value>>,
    /// The `tools/call` requests being worked on, by their id as JSON, with
    /// the flag a `notifications/cancelled` sets.
    running: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// How many `tools/call` requests have been answered.
    answered: AtomicUsize,
    /// Whether `added_later` has been added (`--add-tool-after-call`).
    added_later: AtomicBool,
    /// How many `tools/call` threads are still running.
    in_flight: AtomicUsize,
    /// Set at the end of stdin: running `slow` calls then stop unanswered.
    eof: AtomicBool,
}

impl Server {
    fn new(options: Options) -> Self {
        let tools = tool_list(&options);
        Self {
            options,
            out: Mutex::new(std::io::stdout()),
            tools: Mutex::new(tools),
            running: Mutex::new(HashMap::new()),
            answered: AtomicUsize::new(0),
            added_later: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            eof: AtomicBool::new(false),
        }
    }

    /// Appends a line to the `--log` file, opened afresh each time since
    /// several servers may share it.
    fn log(&self, line: &str) {
        let Some(path) = &self.options.log else {
            return;
        };
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap_or_else(|e| panic!("cannot open the log {}: {e}", path.display()));
        file.write_all(format!("{line}\n").as_bytes())
            .unwrap_or_else(|e| panic!("cannot write the log {}: {e}", path.display()));
    }

    /// Writes one message as one line, in a single write, and flushes.
    fn send(&self, message: &Value, is_response: bool) {
        let mut text = String::new();
        if is_response && self.options.garbage {
            text.push_str(GARBAGE);
        }
        text.push_str(&message.to_string());
        text.push('\n');
        let mut out = self.out.lock().unwrap();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            eprintln!("mcp-server: cannot write to stdout: {e}");
        }
    }

    fn respond(&self, id: &Value, result: &Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}), true);
    }

    fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
            true,
        );
    }

    fn notify(&self, method: &str, params: Option<Value>) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.send(&message, false);
    }
}

/// An id as the log writes it: a string bare, anything else as JSON.
fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn main() {
    let server = Arc::new(Server::new(parse_args()));
    server.log(&format!("start {}", std::process::id()));
    if server.options.exit_at_start {
        eprintln!("mcp-server: exiting at start-up, as --exit-at-start asks");
        std::process::exit(1);
    }
    let mut input = std::io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => handle_line(&server, &line),
            Err(e) => {
                eprintln!("mcp-server: cannot read stdin: {e}");
                break;
            }
        }
    }
    // Calls already received still answer (a piped `tools/call` as the last
    // line gets its answer); running `slow` calls give up at once.
    if server.options.linger {
        server.log("linger");
        loop {
            std::thread::park();
        }
    }
    server.eof.store(true, Ordering::SeqCst);
    while server.in_flight.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.log("exit");
}

fn handle_line(server: &Arc<Server>, line: &[u8]) {
    if line.trim_ascii().is_empty() {
        return;
    }
    let message: Value = match serde_json::from_slice(line) {
        Ok(message) => message,
        Err(e) => {
            eprintln!("mcp-server: invalid JSON on stdin: {e}");
            server.log("invalid json");
            server.respond_error(&Value::Null, -32700, &format!("parse error: {e}"));
            return;
        }
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    match (
        message.get("method").and_then(Value::as_str),
        message.get("id"),
    ) {
        (Some(method), Some(id)) => {
            server.log(&format!("recv {method}"));
            handle_request(server, method, id, &params);
        }
        (Some(method), None) => {
            server.log(&format!("recv {method}"));
            handle_notification(server, method, &params);
        }
        (None, Some(id)) if message.get("result").is_some() || message.get("error").is_some() => {
            server.log(&format!("response {}", id_text(id)));
        }
        (_, id) => {
            eprintln!("mcp-server: not a JSON-RPC message: {message}");
            server.log("invalid request");
            server.respond_error(id.unwrap_or(&Value::Null), -32600, "invalid request");
        }
    }
}

fn handle_notification(server: &Server, method: &str, params: &Value) {
    match method {
        "notifications/initialized" if server.options.ping_client => {
            server.send(
                &json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}),
                false,
            );
        }
        "notifications/cancelled" => {
            let Some(request) = params.get("requestId") else {
                return;
            };
            // Under the lock, so the call either sees the flag before it
            // answers or has already left the map (and answered).
            let running = server.running.lock().unwrap();
            if let Some(cancelled) = running.get(&request.to_string()) {
                cancelled.store(true, Ordering::SeqCst);
                eprintln!("mcp-server: cancelled {}", id_text(request));
                server.log(&format!("cancelled {}", id_text(request)));
            }
        }
        _ => {}
    }
}

fn handle_request(server: &Arc<Server>, method: &str, id: &Value, params: &Value) {
    match method {
        "initialize" => {
            if server.options.hang_init {
                return;
            }
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let version = if server.options.bad_version {
                "1999-01-01"
            } else {
                asked
                    .filter(|v| VERSIONS.contains(v))
                    .unwrap_or(DEFAULT_VERSION)
            };
            if server.options.notify_before_init {
                server.notify("notifications/tools/list_changed", None);
                server.notify(
                    "notifications/message",
                    Some(json!({"level": "info", "data": "warming up"})),
                );
            }
            server.respond(
                id,
                &json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "offcode-test-mcp", "version": "1.0.0"},
                }),
            );
        }
        "ping" => server.respond(id, &json!({})),
        "tools/list" => list_tools(server, id, params),
        "tools/call" => start_call(server, id, params),
        _ => server.respond_error(id, -32601, &format!("method not found: {method}")),
    }
}

fn list_tools(server: &Server, id: &Value, params: &Value) {
    let tools = server.tools.lock().unwrap().clone();
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(cursor) => match cursor.as_str().and_then(|c| c.parse::<usize>().ok()) {
            Some(start) if start <= tools.len() => start,
            _ => {
                server.respond_error(id, -32602, &format!("invalid cursor: {cursor}"));
                return;
            }
        },
    };
    let end = start
        .saturating_add(server.options.page.unwrap_or(usize::MAX))
        .min(tools.len());
    let mut result = json!({"tools": &tools[start..end]});
    if end < tools.len() {
        result["nextCursor"] = json!(end.to_string());
    }
    server.respond(id, &result);
}

/// Answers a `tools/call` on a thread of its own, so stdin is still read
/// (and a cancellation seen) while it runs.
fn start_call(server: &Arc<Server>, id: &Value, params: &Value) {
    if let Some(limit) = server.options.crash_after
        && server.answered.load(Ordering::SeqCst) >= limit
    {
        eprintln!("mcp-server: crashing after {limit} tools/call answers, as --crash-after asks");
        std::process::exit(4);
    }
    let key = id.to_string();
    let cancelled = Arc::new(AtomicBool::new(false));
    server
        .running
        .lock()
        .unwrap()
        .insert(key.clone(), Arc::clone(&cancelled));
    server.in_flight.fetch_add(1, Ordering::SeqCst);
    let server = Arc::clone(server);
    let id = id.clone();
    let params = params.clone();
    std::thread::spawn(move || {
        answer_call(&server, &id, &params, &key, &cancelled);
        server.in_flight.fetch_sub(1, Ordering::SeqCst);
    });
}

/// Runs a `tools/call` and answers it, unless it was cancelled meanwhile.
fn answer_call(server: &Server, id: &Value, params: &Value, key: &str, cancelled: &AtomicBool) {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let empty = json!({});
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(arguments) => arguments,
    };
    let outcome = call_tool(server, name, arguments, cancelled);
    {
        let mut running = server.running.lock().unwrap();
        running.remove(key);
        if cancelled.load(Ordering::SeqCst) {
            return;
        }
    }
    match outcome {
        Some(result) => server.respond(id, &result),
        None => server.respond_error(id, -32602, &format!("unknown tool: {name}")),
    }
    server.answered.fetch_add(1, Ordering::SeqCst);
    if server.options.add_tool_after_call && !server.added_later.swap(true, Ordering::SeqCst) {
        server.tools.lock().unwrap().push(tool(
            "added_later",
            "A tool added after the first call.",
            &json!({}),
            &[],
        ));
        server.notify("notifications/tools/list_changed", None);
    }
}

/// A `tools/call` result with one text content.
fn tool_result(text: &str, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// Runs a tool and makes its `tools/call` result, `None` for an unknown
/// tool. Bad arguments, like any failure, make a result with `isError`.
fn call_tool(server: &Server, name: &str, args: &Value, cancelled: &AtomicBool) -> Option<Value> {
    let outcome = match name {
        "echo" => string_arg(args, "text").map(|text| format!("echo: {text}")),
        "add" => add(args),
        "slow" => int_arg(args, "ms").map(|ms| {
            let end = Instant::now() + Duration::from_millis(ms);
            while !cancelled.load(Ordering::SeqCst) {
                if server.eof.load(Ordering::SeqCst) {
                    eprintln!("mcp-server: end of input, a slow call stops unanswered");
                    cancelled.store(true, Ordering::SeqCst);
                    break;
                }
                let left = end.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(Duration::from_millis(10)));
            }
            format!("slept {ms} ms")
        }),
        "big" => int_arg(args, "bytes").and_then(|bytes| {
            usize::try_from(bytes)
                .map(big_text)
                .map_err(|e| format!("invalid arguments: `bytes`: {e}"))
        }),
        "media" => return Some(media_result()),
        "fail" => Err("the tool failed on purpose".to_owned()),
        "crash" => {
            eprintln!("mcp-server: crashing, as the crash tool asks");
            std::process::exit(3);
        }
        "write_file" => string_arg(args, "path").and_then(|path| {
            let content = string_arg(args, "content")?;
            std::fs::write(path, content)
                .map(|()| format!("wrote {path}"))
                .map_err(|e| format!("cannot write {path}: {e}"))
        }),
        "connect" => int_arg(args, "port").and_then(|port| {
            let port =
                u16::try_from(port).map_err(|e| format!("invalid arguments: `port`: {e}"))?;
            TcpStream::connect_timeout(
                &SocketAddr::from(([127, 0, 0, 1], port)),
                Duration::from_secs(2),
            )
            .map(|_| "connected".to_owned())
            .map_err(|e| format!("cannot connect: {e}"))
        }),
        "env" => string_arg(args, "name").map(|name| {
            std::env::var_os(name).map_or_else(
                || "<unset>".to_owned(),
                |value| value.to_string_lossy().into_owned(),
            )
        }),
        "added_later" if server.added_later.load(Ordering::SeqCst) => Ok("added later".to_owned()),
        _ => {
            if numbered(name, "tool_", server.options.many_tools) {
                string_arg(args, "x").map(|x| format!("{name}: {x}"))
            } else if numbered(name, "big_schema_", server.options.big_schemas) {
                Ok(format!("{name}: ok"))
            } else {
                return None;
            }
        }
    };
    Some(match outcome {
        Ok(text) => tool_result(&text, false),
        Err(text) => tool_result(&text, true),
    })
}

/// Whether `name` is `prefix` and a number from 1 to `count`, as listed.
fn numbered(name: &str, prefix: &str, count: usize) -> bool {
    name.strip_prefix(prefix)
        .and_then(|k| k.parse::<usize>().ok())
        .is_some_and(|k| (1..=count).contains(&k) && name == format!("{prefix}{k}"))
}

fn string_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("invalid arguments: `{key}` must be a string"))
}

fn int_arg(args: &Value, key: &str) -> Result<u64, String> {
    args.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("invalid arguments: `{key}` must be a non-negative integer"))
}

fn add(args: &Value) -> Result<String, String> {
    let number = |key: &str| {
        args.get(key)
            .filter(|v| v.is_number())
            .ok_or_else(|| format!("invalid arguments: `{key}` must be a number"))
    };
    let (a, b) = (number("a")?, number("b")?);
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64())
        && let Some(sum) = a.checked_add(b)
    {
        return Ok(sum.to_string());
    }
    Ok((a.as_f64().unwrap() + b.as_f64().unwrap()).to_string())
}

/// `bytes` bytes of lines of 99 `x` and a newline, the last one cut short.
fn big_text(bytes: usize) -> String {
    let line = format!("{}\n", "x".repeat(99));
    let mut text = line.repeat(bytes / line.len() + 1);
    text.truncate(bytes);
    text
}

fn media_result() -> Value {
    // A PNG signature, then bytes that are arbitrary but always the same.
    let mut image = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut byte = 7_u8;
    while image.len() < 3000 {
        byte = byte.wrapping_mul(31).wrapping_add(17);
        image.push(byte);
    }
    let notes = "These are the notes of the test MCP server, 2000 characters of them.\n";
    let mut notes = notes.repeat(2000 / notes.len() + 1);
    notes.truncate(2000);
    json!({
        "content": [
            {"type": "image", "data": base64(&image), "mimeType": "image/png"},
            {
                "type": "resource",
                "resource": {"uri": "file:///tmp/notes.txt", "mimeType": "text/plain", "text": notes},
            },
            {"type": "text", "text": "two attachments"},
        ],
        "isError": false,
    })
}

/// Standard base64, with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                text.push(char::from(ALPHABET[(n >> shift & 63) as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// A tool definition, its input schema an object with these properties.
fn tool(name: &str, description: &str, properties: &Value, required: &[&str]) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    })
}

/// `text` padded with dots or cut to exactly `len` bytes (it is ASCII).
fn sized(mut text: String, len: usize) -> String {
    while text.len() < len {
        text.push('.');
    }
    text.truncate(len);
    text
}

fn tool_list(options: &Options) -> Vec<Value> {
    let string = |description: &str| json!({"type": "string", "description": description});
    let integer = |description: &str| json!({"type": "integer", "description": description});
    let number = |description: &str| json!({"type": "number", "description": description});
    let mut tools = vec![
        tool(
            "echo",
            "Answers `echo: ` and the text.",
            &json!({"text": string("The text to echo.")}),
            &["text"],
        ),
        tool(
            "add",
            "Adds two numbers.",
            &json!({"a": number("The first number."), "b": number("The second number.")}),
            &["a", "b"],
        ),
        tool(
            "slow",
            "Sleeps for `ms` milliseconds, then answers; it can be cancelled.",
            &json!({"ms": integer("How long to sleep, in milliseconds.")}),
            &["ms"],
        ),
        tool(
            "big",
            "Answers with a text of exactly `bytes` bytes.",
            &json!({"bytes": integer("How many bytes to answer with.")}),
            &["bytes"],
        ),
        tool(
            "media",
            "Answers with an image, an embedded resource and a text.",
            &json!({}),
            &[],
        ),
        tool("fail", "Always fails.", &json!({}), &[]),
        tool(
            "crash",
            "Makes the server exit with status 3 without answering.",
            &json!({}),
            &[],
        ),
        tool(
            "write_file",
            "Writes a file, relative paths against the server's working directory.",
            &json!({"path": string("The file to write."), "content": string("What to write.")}),
            &["path", "content"],
        ),
        tool(
            "connect",
            "Opens a TCP connection to 127.0.0.1 on the port (2 s timeout).",
            &json!({"port": integer("The port to connect to.")}),
            &["port"],
        ),
        tool(
            "env",
            "Answers with an environment variable's value, or `<unset>`.",
            &json!({"name": string("The variable's name.")}),
            &["name"],
        ),
    ];
    // The tools that change nothing say so.
    for listed in &mut tools {
        if ["echo", "add", "env"].contains(&listed["name"].as_str().unwrap_or_default()) {
            listed["annotations"] = json!({"readOnlyHint": true});
        }
    }
    for k in 1..=options.big_schemas {
        let mut properties = serde_json::Map::new();
        for i in 1..=200 {
            let description = sized(
                format!(
                    "Field {i} of big_schema_{k}: a string the tool ignores, there to make the schema large"
                ),
                80,
            );
            properties.insert(format!("field_{i}"), string(&description));
        }
        let description = sized(
            format!(
                "A tool with a large input schema (number {k}), to see how offcode copes with big tool lists"
            ),
            100,
        );
        tools.push(tool(
            &format!("big_schema_{k}"),
            &description,
            &Value::Object(properties),
            &["field_1"],
        ));
    }
    for k in 1..=options.many_tools {
        tools.push(tool(
            &format!("tool_{k}"),
            &format!("Small tool number {k}: answers `tool_{k}: ` and x."),
            &json!({"x": string("Any text.")}),
            &["x"],
        ));
    }
    tools
}
