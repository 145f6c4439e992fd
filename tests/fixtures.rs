//! Every SSE fixture, fed whole and in random 1-7 byte slices, must give
//! exactly its `expected` block.

use offcode::client::assemble::{Assembled, Assembler};
use offcode::client::sse::{SseItem, SseParser};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/openai-sse");

fn assemble(pieces: impl Iterator<Item = Vec<u8>>) -> Assembled {
    let mut parser = SseParser::default();
    let mut assembler = Assembler::default();
    let mut items = Vec::new();
    for piece in pieces {
        parser.feed(&piece, &mut items).unwrap();
        for item in items.drain(..) {
            if let SseItem::Data(data) = item
                && !assembler.is_done()
            {
                assembler.push(&data, &mut Vec::new()).unwrap();
            }
        }
    }
    assembler.finish()
}

fn as_expected(response: &Assembled) -> Value {
    json!({
        "id": response.id,
        "model": response.model,
        "role": response.role,
        "content": response.content,
        "reasoning": response.reasoning,
        "tool_calls": response.tool_calls.iter().map(|call| json!({
            "index": call.index, "id": call.id, "type": "function", "name": call.name,
            "arguments": call.arguments,
            "arguments_json": serde_json::from_str::<Value>(&call.arguments).ok(),
        })).collect::<Vec<_>>(),
        "finish_reason": response.finish_reason,
        "usage": response.usage.map(|u| json!({
            "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens
        })),
        "error": response.error,
        "done_marker": response.done_marker,
        "truncated": response.truncated,
    })
}

/// Random slice sizes from 1 to 7 (a small LCG, seeded per run).
fn slices(body: &[u8], seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut rest = body;
    let mut out = Vec::new();
    while !rest.is_empty() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let size = usize::try_from(state >> 61).unwrap() % 7 + 1;
        let (head, tail) = rest.split_at(size.min(rest.len()));
        out.push(head.to_vec());
        rest = tail;
    }
    out
}

#[test]
fn every_fixture_matches_whole_and_sliced() {
    let mut checked = 0;
    for entry in std::fs::read_dir(DIR).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let spec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let body = std::fs::read(path.with_extension("sse")).unwrap();
        let expected = &spec["expected"];
        let whole = as_expected(&assemble(std::iter::once(body.clone())));
        assert_eq!(&whole, expected, "{} (whole)", path.display());
        for seed in 0..25 {
            let sliced = as_expected(&assemble(slices(&body, seed).into_iter()));
            assert_eq!(&sliced, expected, "{} (seed {seed})", path.display());
        }
        let bytewise = as_expected(&assemble(body.iter().map(|b| vec![*b])));
        assert_eq!(&bytewise, expected, "{} (1-byte slices)", path.display());
        checked += 1;
    }
    assert_eq!(checked, 21, "all fixtures were checked");
}
