//! Tests of compaction, estimates and overflow errors.

use super::*;

fn status(message: &str) -> client::Error {
    client::Error::Status {
        status: 400,
        message: message.to_owned(),
        code: None,
        retry_after: None,
    }
}

#[test]
fn every_vllm_and_llama_cpp_wording_is_recognised_with_its_numbers() {
    for (message, limit, prompt) in [
        (
            "This model's maximum context length is 32768 tokens. However, you requested 33000 tokens (32000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            Some(32768),
            Some(32000),
        ),
        (
            "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens in the messages, Please reduce the length of the messages.",
            Some(32768),
            Some(40000),
        ),
        (
            "This model's maximum context length is 8192 tokens. However, your request has 9000 input tokens. Please reduce the length of the input messages.",
            Some(8192),
            Some(9000),
        ),
        (
            "You passed 31000 input tokens and requested 4096 output tokens. However, the model's context length is only 32768 tokens, resulting in a maximum input length of 28672 tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=31000)",
            Some(32768),
            Some(31000),
        ),
        (
            "This model's maximum context length is 32768 tokens. However, you requested 1024 output tokens and your prompt contains at least 32769 input tokens, for a total of at least 33793 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=32769)",
            Some(32768),
            Some(32769),
        ),
        // llama.cpp's llama-server.
        (
            "request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",
            Some(8192),
            Some(13392),
        ),
    ] {
        assert_eq!(
            overflow(&status(message)),
            Some(Overflow { limit, prompt }),
            "{message}"
        );
    }
    assert_eq!(overflow(&status("model not found")), None);
    let coded = client::Error::InBand {
        message: "too long".into(),
        code: Some("context_length_exceeded".into()),
    };
    assert!(overflow(&coded).is_some());
}

#[test]
fn the_summary_stands_in_for_old_messages_and_old_outputs_are_pruned() {
    let user = |c: &str| Message::User { content: c.into() };
    let tool = |c: &str| Message::Tool {
        tool_call_id: "t".into(),
        name: "read".into(),
        content: c.into(),
        is_error: false,
        shown: None,
    };
    let messages = vec![
        user("old"),
        tool("big old output"),
        user("now"),
        tool("fresh"),
    ];
    let compaction = Compaction {
        summary: Some("S".into()),
        keep_from: 2,
        prune_before: 4,
    };
    let history = request_history(&messages, Some(&compaction));
    assert_eq!(
        history,
        vec![
            user(
                "[Summary of the conversation so far, written when the context filled up]\nS\n\nnow"
            ),
            tool(PRUNED),
        ]
    );
    assert_eq!(request_history(&messages, None), messages);
}
