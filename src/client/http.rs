//! The blocking half of a streaming request: one worker thread per attempt
//! sends the request with ureq, frames the body with [`SseParser`], assembles
//! it and hands [`Piece`]s to the async side through a channel.
//!
//! The worker never decides when to stop: the async side does, by shutting
//! the ureq agent down, which fails the worker's blocked read at once and
//! closes the socket so the server sees the disconnect.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::mpsc;

use super::Error;
use super::assemble::{Assembled, Assembler, Piece};
use super::error::{parse_error_body, parse_retry_after};
use super::sse::{SseItem, SseParser};

/// Messages from a worker to the async side.
#[derive(Debug)]
pub enum WorkerMsg {
    /// Pieces completed by the last read.
    Pieces(Vec<Piece>),
    /// The request is over.
    Finished(Box<Result<Assembled, Error>>),
}

/// Milliseconds since `start` of the last byte received, shared with the
/// async side for the idle timeout.
#[derive(Debug, Clone)]
pub struct Activity {
    start: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Default for Activity {
    /// Starts the clock now.
    fn default() -> Self {
        Self {
            start: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Activity {
    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// Time since the last byte.
    pub fn idle(&self) -> std::time::Duration {
        let last = std::time::Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// What a worker needs to send one request.
pub struct Job {
    /// The agent (a clone; shutting any clone down stops this request).
    pub agent: ureq::Agent,
    /// Full URL.
    pub url: String,
    /// Bearer token.
    pub api_key: Option<String>,
    /// Headers of the provider and model.
    pub headers: Vec<(String, String)>,
    /// JSON body, shared by every attempt of a request.
    pub body: std::sync::Arc<[u8]>,
}

/// Starts a worker thread for `job`.
pub fn spawn(job: Job, activity: Activity) -> mpsc::UnboundedReceiver<WorkerMsg> {
    let (sender, receiver) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let result = run(&job, &activity, &sender);
        // The receiver is gone when the request was cancelled: nothing to do.
        let _ = sender.send(WorkerMsg::Finished(Box::new(result)));
    });
    receiver
}

fn run(
    job: &Job,
    activity: &Activity,
    sender: &mpsc::UnboundedSender<WorkerMsg>,
) -> Result<Assembled, Error> {
    let mut request = job
        .agent
        .post(&job.url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream");
    for (name, value) in &job.headers {
        request = request.header(name, value);
    }
    if let Some(key) = &job.api_key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let response = request.send(&job.body[..]).map_err(|source| match source {
        ureq::Error::Io(io) if io.kind() != std::io::ErrorKind::ConnectionRefused => {
            Error::Read(io)
        }
        source => Error::Connect {
            url: job.url.clone(),
            source,
        },
    })?;
    activity.touch();
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = response
            .into_body()
            .with_config()
            .limit(1 << 20)
            .read_to_string()
            .unwrap_or_default();
        let (message, code) = parse_error_body(&body);
        return Err(Error::Status {
            status,
            message,
            code,
            retry_after,
        });
    }
    let whole_json = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    let mut reader = response.into_body().into_reader();
    if whole_json {
        return read_completion(&mut reader, sender);
    }
    read_stream(&mut reader, activity, sender)
}

/// A server (or proxy) that ignored `stream: true` and sent one
/// `chat.completion` object: its message becomes a single delta.
fn read_completion(
    reader: &mut impl Read,
    sender: &mpsc::UnboundedSender<WorkerMsg>,
) -> Result<Assembled, Error> {
    let mut body = Vec::new();
    reader
        .take(64 << 20)
        .read_to_end(&mut body)
        .map_err(Error::Read)?;
    let bad = |reason: String| Error::BadResponse {
        what: "the chat request (a JSON body instead of a stream)".to_owned(),
        reason,
    };
    let mut completion: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| bad(e.to_string()))?;
    if let Some(choices) = completion
        .get_mut("choices")
        .and_then(serde_json::Value::as_array_mut)
    {
        for choice in choices {
            if let Some(message) = choice.get_mut("message").map(serde_json::Value::take) {
                choice["delta"] = message;
            }
        }
    }
    let chunk = serde_json::to_vec(&completion).map_err(|e| bad(e.to_string()))?;
    let mut body = b"data: ".to_vec();
    body.extend_from_slice(&chunk);
    body.extend_from_slice(b"\n\ndata: [DONE]\n\n");
    read_stream(&mut &body[..], &Activity::default(), sender)
}

/// Reads an SSE body to its end, sending pieces as they complete.
pub fn read_stream(
    reader: &mut impl Read,
    activity: &Activity,
    sender: &mpsc::UnboundedSender<WorkerMsg>,
) -> Result<Assembled, Error> {
    let mut parser = SseParser::default();
    let mut assembler = Assembler::default();
    let mut buffer = vec![0; 64 * 1024];
    let mut items = Vec::new();
    let mut pieces = Vec::new();
    while !assembler.is_done() {
        let read = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(Error::Read(error)),
        };
        activity.touch();
        parser
            .feed(&buffer[..read], &mut items)
            .map_err(|_| Error::TooLarge)?;
        for item in items.drain(..) {
            match item {
                SseItem::Data(data) => {
                    assembler
                        .push(&data, &mut pieces)
                        .map_err(|e| Error::Malformed {
                            reason: e.reason,
                            excerpt: e.excerpt,
                        })?;
                }
                SseItem::ErrorLine(text) => {
                    let (message, code) = parse_error_body(&String::from_utf8_lossy(&text));
                    return Err(Error::InBand { message, code });
                }
                SseItem::Comment => {}
            }
            if assembler.is_done() {
                break;
            }
        }
        if !pieces.is_empty()
            && sender
                .send(WorkerMsg::Pieces(std::mem::take(&mut pieces)))
                .is_err()
        {
            return Err(Error::Cancelled);
        }
    }
    let response = assembler.finish();
    if let Some(error) = &response.error {
        let object = error.as_object();
        let message = object
            .and_then(|o| o.get("message"))
            .and_then(|m| m.as_str())
            .map_or_else(|| error.to_string(), str::to_owned);
        let code = super::error::code_text(object.and_then(|o| o.get("code")));
        return Err(Error::InBand { message, code });
    }
    // A body that ends after the finishing chunk lost only `[DONE]` (some
    // proxies drop it); one that ends before it was cut short.
    if response.truncated && response.finish_reason.is_none() {
        return Err(Error::Truncated);
    }
    Ok(response)
}
