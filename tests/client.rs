//! The streaming client against the mock server: retries, faults, abort.

use std::time::{Duration, Instant};

use offcode::cancel::Cancel;
use offcode::client::wire::{ChatRequest, StreamOptions, WireMessage};
use offcode::client::{Client, Error, Piece, Update};
use pretty_assertions::assert_eq;

use crate::support::{End, Reply, chunks, fast_config, mock, sse};

fn messages() -> Vec<WireMessage> {
    vec![WireMessage {
        role: "user".into(),
        content: Some("hi".into()),
        tool_calls: vec![],
        tool_call_id: None,
    }]
}

struct Outcome {
    result: Result<offcode::client::Assembled, Error>,
    updates: Vec<Update>,
    elapsed: Duration,
}

async fn stream_with(client: &Client, cancel: &Cancel) -> Outcome {
    let messages = messages();
    let extra = serde_json::Map::new();
    let request = ChatRequest {
        model: "mock-model",
        messages: &messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: &[],
        max_tokens: None,
        temperature: None,
        top_p: None,
        extra: &extra,
    };
    let mut updates = Vec::new();
    let start = Instant::now();
    let result = client
        .stream_chat(&request, cancel, &mut |update| updates.push(update))
        .await;
    Outcome {
        result,
        updates,
        elapsed: start.elapsed(),
    }
}

async fn stream(client: &Client) -> Outcome {
    stream_with(client, &Cancel::default()).await
}

fn retries(updates: &[Update]) -> usize {
    updates
        .iter()
        .filter(|u| matches!(u, Update::Retry(_)))
        .count()
}

#[tokio::test]
async fn plain_stream_sends_usage_option_and_no_max_tokens() {
    let server = mock();
    server.push(sse(&chunks::text_answer("Hello there")));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let response = stream(&client).await.result.unwrap();
    assert_eq!(response.content, "Hello there");
    let body = &server.chat_bodies()[0];
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert!(
        body.get("max_tokens").is_none(),
        "max_tokens is only sent when configured"
    );
    assert_eq!(body["stream"], true);
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let server = mock();
    server.push(
        Reply::json(
            429,
            &serde_json::json!({"error": {"message": "slow down", "code": "Throttling.RateQuota"}}),
        )
        .header("retry-after", "0.3"),
    );
    server.push(sse(&chunks::text_answer("ok")));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let outcome = stream(&client).await;
    assert_eq!(outcome.result.unwrap().content, "ok");
    let Some(Update::Retry(retry)) = outcome.updates.first() else {
        panic!("expected a retry notice first: {:?}", outcome.updates)
    };
    assert_eq!(retry.delay_ms, 300);
    assert!(
        retry.reason.contains("429") && retry.reason.contains("slow down"),
        "{}",
        retry.reason
    );
    assert!(outcome.elapsed >= Duration::from_millis(300));
    assert_eq!(server.chat_bodies().len(), 2);
}

#[tokio::test]
async fn server_errors_retry_until_give_up() {
    let server = mock(); // every unqueued request gets a 500
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let outcome = stream(&client).await;
    assert!(
        matches!(outcome.result, Err(Error::Status { status: 500, .. })),
        "{:?}",
        outcome.result.err()
    );
    assert_eq!(retries(&outcome.updates), 2);
    assert_eq!(server.chat_bodies().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = mock();
    server.push(Reply::json(
        400,
        &serde_json::json!({"object": "error", "message": "bad request body", "type": "BadRequestError", "param": null, "code": 400}),
    ));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let outcome = stream(&client).await;
    let error = outcome.result.unwrap_err();
    assert_eq!(
        error.to_string(),
        "The server answered HTTP 400: bad request body"
    );
    assert_eq!(server.chat_bodies().len(), 1);
}

#[tokio::test]
async fn refused_connection_retries_then_reports_the_url() {
    let (_held, port) = crate::support::refusing_port();
    let client = Client::new(&fast_config(&format!("http://127.0.0.1:{port}/v1"))).unwrap();
    let outcome = stream(&client).await;
    let error = outcome.result.unwrap_err();
    assert!(matches!(error, Error::Connect { .. }), "{error:?}");
    assert!(error.to_string().contains(&format!("127.0.0.1:{port}")));
    assert_eq!(retries(&outcome.updates), 2);
}

#[tokio::test]
async fn reset_before_output_is_retried() {
    let server = mock();
    server.push(Reply::sse(Vec::new()).ending(End::Reset));
    server.push(sse(&chunks::text_answer("second try")));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let outcome = stream(&client).await;
    assert_eq!(outcome.result.unwrap().content, "second try");
    assert_eq!(retries(&outcome.updates), 1);
}

#[tokio::test]
async fn cut_after_output_is_an_error_not_a_retry() {
    let server = mock();
    let events = [chunks::role(), chunks::text_delta("partial ")].concat();
    server.push(Reply::sse(events.into_bytes()).ending(End::Reset));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let outcome = stream(&client).await;
    let error = outcome.result.unwrap_err();
    assert!(
        matches!(error, Error::Read(_) | Error::Truncated),
        "{error:?}"
    );
    assert_eq!(retries(&outcome.updates), 0);
    assert!(
        outcome
            .updates
            .contains(&Update::Piece(Piece::Content("partial ".into())))
    );
    assert_eq!(server.chat_bodies().len(), 1);
}

#[tokio::test]
async fn stream_without_done_is_truncated() {
    let server = mock();
    let events = [chunks::role(), chunks::text_delta("cut")].concat();
    server.push(Reply::sse(events.into_bytes()));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let outcome = stream(&client).await;
    assert!(
        matches!(outcome.result, Err(Error::Truncated)),
        "{:?}",
        outcome.result.err()
    );
}

#[tokio::test]
async fn finished_stream_missing_only_done_is_accepted() {
    let server = mock();
    let events = [
        chunks::role(),
        chunks::text_delta("complete"),
        chunks::finish("stop"),
    ]
    .concat();
    server.push(Reply::sse(events.into_bytes()));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let response = stream(&client).await.result.unwrap();
    assert_eq!(response.content, "complete");
    assert!(response.truncated && !response.done_marker);
}

#[tokio::test]
async fn whole_json_completion_is_accepted() {
    let server = mock();
    server.push(Reply::json(
        200,
        &serde_json::json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Checking.", "reasoning_content": "think",
                "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]
            }}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        }),
    ));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let outcome = stream(&client).await;
    let response = outcome.result.unwrap();
    assert_eq!(response.content, "Checking.");
    assert_eq!(response.reasoning.as_deref(), Some("think"));
    assert_eq!(response.tool_calls[0].id, "call_9");
    assert_eq!(response.tool_calls[0].arguments, "{\"path\":\"a\"}");
    assert_eq!(response.usage.unwrap().total_tokens, 7);
    assert!(
        outcome
            .updates
            .contains(&Update::Piece(Piece::Content("Checking.".into())))
    );
}

#[tokio::test]
async fn malformed_chunk_names_the_data() {
    let server = mock();
    server.push(Reply::sse(
        format!("{}data: {{\"choices\": [oops\n\n", chunks::role()).into_bytes(),
    ));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let error = stream(&client).await.result.unwrap_err();
    assert!(matches!(error, Error::Malformed { .. }), "{error:?}");
    assert!(error.to_string().contains("{\"choices\": [oops"), "{error}");
}

#[tokio::test]
async fn in_band_error_is_reported_with_its_message() {
    let server = mock();
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openai-sse/vllm-error-mid-stream.sse"
    ))
    .unwrap();
    server.push(Reply::sse(body));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let error = stream(&client).await.result.unwrap_err();
    assert_eq!(
        error.to_string(),
        "The server reported an error during the response: Engine core encountered an issue. See stack trace for the root cause."
    );
}

#[tokio::test]
async fn ten_megabyte_line_is_parsed() {
    let server = mock();
    let big = "x".repeat(10 * 1024 * 1024);
    server.push(sse(&[
        chunks::role(),
        chunks::text_delta(&big),
        chunks::finish("stop"),
        chunks::done(),
    ]));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let response = stream(&client).await.result.unwrap();
    assert_eq!(response.content.len(), big.len());
}

#[tokio::test]
async fn invalid_utf8_is_replaced_and_flagged() {
    let server = mock();
    let mut body = chunks::role().into_bytes();
    body.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad \xff byte\"}}]}\n\n",
    );
    body.extend_from_slice(chunks::done().as_bytes());
    server.push(Reply::sse(body));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let response = stream(&client).await.result.unwrap();
    assert_eq!(response.content, "bad \u{fffd} byte");
    assert!(response.invalid_utf8);
}

#[tokio::test]
async fn slow_drip_is_assembled_and_each_byte_counts_as_activity() {
    let server = mock();
    // 1 byte per second for the first bytes, then the rest: an idle timeout
    // of 1.5 s must not fire because bytes keep arriving.
    let body = chunks::text_answer("drip").concat().into_bytes();
    let mut reply = Reply::sse(body[..3].to_vec()).drip(Duration::from_secs(1));
    reply.parts.push(offcode_part(&body[3..]));
    server.push(reply);
    let mut config = fast_config(&server.base_url());
    config.timeouts.idle_ms = 1_500;
    let client = Client::new(&config).unwrap();
    let outcome = stream(&client).await;
    assert_eq!(outcome.result.unwrap().content, "drip");
    assert!(outcome.elapsed >= Duration::from_secs(3));
}

fn offcode_part(bytes: &[u8]) -> crate::support::server::Part {
    crate::support::server::Part {
        delay: Duration::from_millis(10),
        bytes: bytes.to_vec(),
    }
}

#[tokio::test]
async fn silent_server_hits_the_idle_timeout() {
    let server = mock();
    server.push(Reply::sse(chunks::role().into_bytes()).ending(End::Hang(Duration::from_secs(30))));
    let mut config = fast_config(&server.base_url());
    config.timeouts.idle_ms = 300;
    let client = Client::new(&config).unwrap();
    let outcome = stream(&client).await;
    assert!(
        matches!(outcome.result, Err(Error::IdleTimeout(_))),
        "{:?}",
        outcome.result.err()
    );
    assert!(
        outcome.elapsed < Duration::from_secs(3),
        "{:?}",
        outcome.elapsed
    );
}

/// The cancel is prompt: the answer would take 10 s, and the call returns
/// and the connection closes long before (the latency itself is measured
/// by `cargo bench --bench cancel`, not asserted here).
#[tokio::test]
async fn cancel_closes_the_connection_long_before_the_stream_ends() {
    let server = mock();
    let events: Vec<String> = (0..200)
        .map(|i| chunks::text_delta(&format!("{i} ")))
        .collect();
    server.push(Reply::sse_events(events, Duration::from_millis(50)));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let cancel = Cancel::default();
    let trigger = cancel.clone();
    let cancelled_at = std::sync::Arc::new(std::sync::Mutex::new(None));
    let stamp = std::sync::Arc::clone(&cancelled_at);
    let sent = server.clone();
    tokio::spawn(async move {
        while sent.parts_sent() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        *stamp.lock().unwrap() = Some(Instant::now());
        trigger.cancel();
    });
    let outcome = stream_with(&client, &cancel).await;
    assert!(matches!(outcome.result, Err(Error::Cancelled)));
    let cancelled_at = cancelled_at.lock().unwrap().unwrap();
    assert!(
        crate::support::wait_until(Duration::from_secs(5), || !server.disconnects().is_empty()),
        "the server never saw the disconnect"
    );
    let seen = server.disconnects()[0].duration_since(cancelled_at);
    assert!(
        seen < Duration::from_secs(5),
        "server saw the disconnect after {seen:?}"
    );
    assert!(server.parts_sent() < 150, "{}", server.parts_sent());
    // The client still works after an abort.
    server.push(sse(&chunks::text_answer("again")));
    assert_eq!(stream(&client).await.result.unwrap().content, "again");
}

#[tokio::test]
async fn models_lists_context_lengths() {
    let server = crate::support::demo_mock();
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let models = client.list_models().unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!(models[0].id, "mock-model");
    assert_eq!(models[0].max_model_len, Some(32768));
    assert_eq!(models[1].max_model_len, Some(131_072));
}

#[test]
fn tokenize_counts_at_the_server_root() {
    let server = crate::support::MockServer::start(std::sync::Arc::new(
        |request: &crate::support::server::Request| {
            if request.path == "/tokenize" {
                let body = request.json();
                assert_eq!(body["add_generation_prompt"], true);
                return crate::support::Reply::json(
                    200,
                    &serde_json::json!({"count": 1234, "max_model_len": 32768, "tokens": []}),
                );
            }
            crate::support::Reply::json(404, &serde_json::json!({"error": {"message": "no route"}}))
        },
    ));
    let client = Client::new(&fast_config(&server.base_url())).unwrap();
    let counted = client.tokenize("mock-model", &[], &[]).unwrap().unwrap();
    assert_eq!((counted.count, counted.max_model_len), (1234, Some(32768)));
    assert_eq!(
        client
            .tokenize("mock-model", &[], &[])
            .unwrap()
            .unwrap()
            .count,
        1234
    );
    // A server without the route: no count, no error.
    let other = crate::support::MockServer::start(std::sync::Arc::new(
        |_: &crate::support::server::Request| {
            crate::support::Reply::json(404, &serde_json::json!({"error": {"message": "no route"}}))
        },
    ));
    let client = Client::new(&fast_config(&other.base_url())).unwrap();
    assert!(client.tokenize("mock-model", &[], &[]).unwrap().is_none());
}
