//! `cargo bench --bench sse`: SSE framing plus chunk assembly throughput on a
//! vLLM-shaped stream (target: above 100 MB/s).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports on stdout"
)]

use std::time::Instant;

use offcode::client::assemble::Assembler;
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
}
