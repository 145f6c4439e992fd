//! `cargo bench --bench sse`: SSE framing plus chunk assembly throughput on a
//! vLLM-shaped stream (target: above 100 MB/s), and the inline parser that
//! reads tool calls and reasoning from the text, fed in 4-byte deltas
//! (target: above 10 MB/s, linear in the text whatever it holds; a model
//! streams a few kB/s, and a 2 MB call must not stall the turn).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports on stdout"
)]

use std::time::Instant;

use offcode::client::assemble::Assembler;
use offcode::client::inline::InlineParser;
use offcode::client::sse::{SseItem, SseParser};

fn body(target_bytes: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(target_bytes + 1024);
    let words = [
        "fn ", "main", "() {", " let x", " = 42;", " 你好", "世界", " // ok", "\n",
    ];
    let mut i = 0;
    while body.len() < target_bytes {
        let chunk = format!(
            "data: {{\"id\":\"chatcmpl-ba1b4314210adc3b\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"Qwen/Qwen3-Coder-30B\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"logprobs\":null,\"finish_reason\":null,\"token_ids\":null}}]}}\n\n",
            serde_json::to_string(words[i % words.len()]).unwrap()
        );
        body.extend_from_slice(chunk.as_bytes());
        i += 1;
    }
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn main() {
    let body = body(64 << 20);
    let mut rates = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let mut parser = SseParser::default();
        let mut assembler = Assembler::default();
        let mut items = Vec::new();
        let mut pieces = Vec::new();
        for read in body.chunks(64 * 1024) {
            parser.feed(read, &mut items).unwrap();
            for item in items.drain(..) {
                if let SseItem::Data(data) = item {
                    assembler.push(&data, &mut pieces).unwrap();
                }
            }
            pieces.clear();
        }
        let response = assembler.finish();
        assert!(response.done_marker && !response.content.is_empty());
        let seconds = start.elapsed().as_secs_f64();
        #[allow(clippy::cast_precision_loss, reason = "sizes far below 2^52")]
        rates.push(body.len() as f64 / seconds / 1e6);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "sse parse + assemble: {:.0} MB/s median ({:.0}..{:.0}) over {} MB, 5 runs",
        rates[2],
        rates[0],
        rates[4],
        body.len() >> 20
    );
    inline_bench();
}

/// MB/s of the inline parser over `text` fed in `piece`-byte deltas.
fn inline_rate(text: &str, piece: usize) -> f64 {
    // Deltas of about `piece` bytes, whole characters each (as servers send).
    let mut pieces: Vec<&str> = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + piece).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    let start = Instant::now();
    let mut parser = InlineParser::new(&[], false, true);
    let mut shown = 0;
    for delta in pieces {
        shown += parser.push(delta).len();
    }
    let (rest, _) = parser.finish(false);
    assert!(shown + rest.len() > 0);
    #[allow(clippy::cast_precision_loss, reason = "sizes far below 2^52")]
    let rate = text.len() as f64 / start.elapsed().as_secs_f64() / 1e6;
    rate
}

#[allow(clippy::cast_precision_loss, reason = "sizes far below 2^52")]
fn inline_bench() {
    let prose = "Here is the plan:\n\n```rust\nfn main() {\n    let x = {\n        42\n    };\n}\n```\n\n1. Read `src/main.rs` (它很短).\n".repeat(20_000);
    let call = format!(
        "<think>I will write the file.</think>\n<tool_call>\n{{\"name\": \"write\", \"arguments\": {{\"path\": \"a.txt\", \"content\": \"{}\"}}}}\n</tool_call>",
        "line of file text\\n".repeat(100_000)
    );
    for (what, text) in [("prose and code", &prose), ("a 2 MB tool call", &call)] {
        let mut rates: Vec<f64> = (0..5).map(|_| inline_rate(text, 4)).collect();
        rates.sort_by(f64::total_cmp);
        println!(
            "inline parser, {what} in 4-byte deltas: {:.0} MB/s median ({:.0}..{:.0}) over {:.1} MB",
            rates[2],
            rates[0],
            rates[4],
            text.len() as f64 / 1e6
        );
    }
}
