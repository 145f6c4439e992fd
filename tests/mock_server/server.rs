//! A mock OpenAI-compatible HTTP/1.1 server on loopback with byte-level
//! control over each reply: status, headers, body parts with delays, and how
//! the connection ends (clean, cut, reset, hang). It records every request
//! and when the client disconnected.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The body as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// A header's value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A piece of a reply body, written after a delay.
#[derive(Debug, Clone)]
pub struct Part {
    pub delay: Duration,
    pub bytes: Vec<u8>,
}

/// How the connection ends after the parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// A complete response; the connection may be reused.
    Complete,
    /// Close without finishing the chunked body (a cut stream).
    Cut,
    /// Abort with a TCP reset.
    Reset,
    /// Keep the connection open and silent for this long.
    Hang(Duration),
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub parts: Vec<Part>,
    pub end: End,
}

impl Reply {
    /// `200` with an SSE body sent at once.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            parts: vec![Part {
                delay: Duration::ZERO,
                bytes: body.into(),
            }],
            end: End::Complete,
        }
    }

    /// The same reply with its body rewritten (events keep their pace).
    pub fn map_body(self, change: impl FnOnce(&[u8]) -> Vec<u8>) -> Self {
        let body: Vec<u8> = self.parts.iter().flat_map(|p| p.bytes.clone()).collect();
        let delay = self.parts.iter().map(|p| p.delay).max().unwrap_or_default();
        let changed = change(&body);
        let mut reply = if delay.is_zero() {
            Self::sse(changed)
        } else {
            let text = String::from_utf8_lossy(&changed).into_owned();
            Self::sse_events(
                text.split_inclusive("\n\n").map(str::to_owned).collect(),
                delay,
            )
        };
        reply.status = self.status;
        reply.headers = self.headers;
        reply.end = self.end;
        reply
    }

    /// `200` with SSE events sent one by one, `delay` apart.
    pub fn sse_events(events: Vec<String>, delay: Duration) -> Self {
        let mut reply = Self::sse(Vec::new());
        reply.parts = events
            .into_iter()
            .map(|event| Part {
                delay,
                bytes: event.into_bytes(),
            })
            .collect();
        reply
    }

    /// A JSON reply with a status.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            parts: vec![Part {
                delay: Duration::ZERO,
                bytes: body.to_string().into_bytes(),
            }],
            end: End::Complete,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets how the connection ends.
    pub fn ending(mut self, end: End) -> Self {
        self.end = end;
        self
    }

    /// Sends the body one byte at a time, `delay` apart.
    pub fn drip(mut self, delay: Duration) -> Self {
        let bytes: Vec<u8> = self.parts.iter().flat_map(|p| p.bytes.clone()).collect();
        self.parts = bytes
            .into_iter()
            .map(|b| Part {
                delay,
                bytes: vec![b],
            })
            .collect();
        self
    }
}

/// Chooses a reply for a request when nothing is queued.
pub type Responder = dyn Fn(&Request) -> Reply + Send + Sync;

#[derive(Default)]
struct State {
    queue: VecDeque<Reply>,
    requests: Vec<Request>,
    disconnects: Vec<Instant>,
    timing_log: Option<std::fs::File>,
    /// Pieces of replies written so far.
    parts_sent: usize,
}

/// Nanoseconds since the Unix epoch, comparable across processes.
fn epoch_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn log_timing(state: &Mutex<State>, what: &str) {
    if let Some(file) = state.lock().unwrap().timing_log.as_mut() {
        let _ = writeln!(file, "{what} {}", epoch_nanos());
    }
}

/// A running mock server; it stops with the process.
#[derive(Clone)]
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl MockServer {
    /// Starts on an ephemeral loopback port. `fallback` answers requests
    /// when no reply is queued.
    pub fn start(fallback: Arc<Responder>) -> Self {
        Self::start_on("127.0.0.1:0", fallback).expect("bind loopback")
    }

    /// Starts on `address`.
    pub fn start_on(address: &str, fallback: Arc<Responder>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(address)?;
        let server = Self {
            addr: listener.local_addr()?,
            state: Arc::new(Mutex::new(State::default())),
        };
        let state = Arc::clone(&server.state);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&state);
                let fallback = Arc::clone(&fallback);
                thread::spawn(move || serve(stream, &state, &*fallback));
            }
        });
        Ok(server)
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues replies, used in order before the fallback.
    pub fn push(&self, reply: Reply) {
        self.state.lock().unwrap().queue.push_back(reply);
    }

    /// Appends `request NANOS` and `response_end NANOS` lines (epoch
    /// nanoseconds) to `path`, for benchmarks.
    pub fn log_timing_to(&self, path: &std::path::Path) -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        self.state.lock().unwrap().timing_log = Some(file);
        Ok(())
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The chat-completion request bodies so far.
    ///
    /// The request an interactive session sends on the side for its title
    /// is left out; [`MockServer::title_bodies`] has it.
    pub fn chat_bodies(&self) -> Vec<serde_json::Value> {
        self.all_chat_bodies()
            .into_iter()
            .filter(|body| !is_title_request(body))
            .collect()
    }

    /// The requests for a session's title.
    pub fn title_bodies(&self) -> Vec<serde_json::Value> {
        self.all_chat_bodies()
            .into_iter()
            .filter(is_title_request)
            .collect()
    }

    fn all_chat_bodies(&self) -> Vec<serde_json::Value> {
        self.requests()
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(Request::json)
            .collect()
    }

    /// How many pieces of replies (SSE events, body chunks) were written.
    pub fn parts_sent(&self) -> usize {
        self.state.lock().unwrap().parts_sent
    }

    /// When clients closed connections in the middle of a reply.
    pub fn disconnects(&self) -> Vec<Instant> {
        self.state.lock().unwrap().disconnects.clone()
    }
}

/// The title a server with nothing scripted gives sessions.
pub const MOCK_TITLE: &str = "Mock session title";

/// A 500 reply saying nothing was scripted (a title request gets
/// [`MOCK_TITLE`]).
pub fn unscripted(request: &Request) -> Reply {
    if is_title_request(&request.json()) {
        return Reply::sse(super::chunks::text_answer(MOCK_TITLE).concat().into_bytes());
    }
    Reply::json(
        500,
        &serde_json::json!({"error": {"message": format!("mock: no reply scripted for {} {}", request.method, request.path), "code": 500}}),
    )
}

fn serve(stream: TcpStream, state: &Mutex<State>, fallback: &Responder) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone socket"));
    let mut stream = stream;
    while let Some(request) = read_request(&mut reader) {
        log_timing(state, "request");
        let reply = {
            let mut state = state.lock().unwrap();
            state.requests.push(request.clone());
            // Queued replies answer model requests; a GET (`/v1/models`)
            // or a session's title request, asked for on the side, goes to
            // the fallback.
            if request.method == "GET" || is_title_request(&request.json()) {
                None
            } else {
                state.queue.pop_front()
            }
        }
        .unwrap_or_else(|| fallback(&request));
        let written = write_reply(&mut stream, &reply, state);
        log_timing(state, "response_end");
        match written {
            Ok(true) => {}
            Ok(false) => return,
            Err(_) => {
                state.lock().unwrap().disconnects.push(Instant::now());
                return;
            }
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut words = line.split_whitespace();
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

/// Waits `delay`, noticing a client that closes meanwhile.
fn wait_watching(stream: &TcpStream, delay: Duration) -> std::io::Result<()> {
    if delay.is_zero() {
        return Ok(());
    }
    // A socket read timeout is only as fine as the kernel's tick (4-10 ms);
    // short gaps are slept, and a closed connection shows at the next write.
    if delay < Duration::from_millis(20) {
        thread::sleep(delay);
        return Ok(());
    }
    let deadline = Instant::now() + delay;
    let mut probe = [0u8; 1];
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if left.is_zero() {
            break;
        }
        stream.set_read_timeout(Some(left.min(Duration::from_millis(20))))?;
        match stream.peek(&mut probe) {
            Ok(0) => return Err(std::io::ErrorKind::ConnectionAborted.into()),
            Ok(_) => thread::sleep(left.min(Duration::from_millis(5))),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    stream.set_read_timeout(None)
}

/// Writes a reply with chunked framing; `Ok(false)` when the connection
/// must not be reused.
fn write_reply(
    stream: &mut TcpStream,
    reply: &Reply,
    state: &Mutex<State>,
) -> std::io::Result<bool> {
    let reason = match reply.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\ntransfer-encoding: chunked\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        head.extend([name.as_str(), ": ", value.as_str(), "\r\n"]);
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.flush()?;
    for part in &reply.parts {
        wait_watching(stream, part.delay)?;
        if part.bytes.is_empty() {
            continue;
        }
        stream.write_all(format!("{:x}\r\n", part.bytes.len()).as_bytes())?;
        stream.write_all(&part.bytes)?;
        stream.write_all(b"\r\n")?;
        stream.flush()?;
        state.lock().unwrap().parts_sent += 1;
    }
    match reply.end {
        End::Complete => {
            stream.write_all(b"0\r\n\r\n")?;
            stream.flush()?;
            Ok(true)
        }
        End::Cut => {
            stream.shutdown(std::net::Shutdown::Both)?;
            Ok(false)
        }
        End::Reset => {
            rustix::net::sockopt::set_socket_linger(&*stream, Some(Duration::ZERO))?;
            Ok(false)
        }
        End::Hang(duration) => {
            wait_watching(stream, duration)?;
            Ok(false)
        }
    }
}

/// Whether a chat request is the `title` agent's.
pub fn is_title_request(body: &serde_json::Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|system| system.starts_with("Write a title for the coding task"))
}
