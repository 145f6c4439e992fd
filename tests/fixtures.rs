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

/// Every file under `dir` (relative path → bytes), directories as empty
/// markers so a directory left behind counts.
fn tree(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                files.insert(format!("{name}/"), Vec::new());
                pending.push(path);
            } else {
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for (name, bytes) in tree(from) {
        let path = to.join(&name);
        if name.ends_with('/') {
            std::fs::create_dir_all(path).unwrap();
        } else {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }
}

/// Every `tests/fixtures/edit/NNN-*/` case: the call on `before/` leaves
/// exactly `after/`, and nothing beside the workspace.
#[test]
fn every_golden_edit_and_patch_case_gives_exactly_its_after() {
    use std::sync::Arc;

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/edit");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 12, "{}", cases.len());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let call: Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("call.json")).unwrap())
                .unwrap();
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("project");
        std::fs::create_dir(&root).unwrap();
        copy_tree(&case.join("before"), &root);
        let context = offcode::tools::ToolContext {
            sandbox: Arc::new(offcode::sandbox::Sandbox::new(&root).unwrap()),
            cancel: offcode::cancel::Cancel::default(),
            allow_clobber: false,
            shell: Arc::new(offcode::confine::Shell::unconfined(
                offcode::confine::Status::Off,
            )),
            unconfined: false,
            running: std::sync::Arc::default(),
            late: std::sync::Arc::default(),
            checkpoints: None,
        };
        let output = runtime.block_on(offcode::tools::Registry::default().call(
            call["tool"].as_str().unwrap(),
            &call["arguments"].to_string(),
            &context,
        ));
        let expected_after: std::collections::BTreeMap<String, Vec<u8>> = tree(&case.join("after"))
            .into_iter()
            .map(|(path, bytes)| (format!("project/{path}"), bytes))
            .chain([("project/".to_owned(), Vec::new())])
            .collect();
        let after = tree(base.path());
        let contains = call["output_contains"].as_str().unwrap();
        if output.ok != call["ok"].as_bool().unwrap() || !output.output.contains(contains) {
            failures.push(format!(
                "{name}: ok {} (expected {}), output without `{contains}`: {}",
                output.ok, call["ok"], output.output
            ));
        }
        if after != expected_after {
            let shown = |files: &std::collections::BTreeMap<String, Vec<u8>>| {
                files
                    .iter()
                    .map(|(p, b)| format!("{p}: {:?}", String::from_utf8_lossy(b)))
                    .collect::<Vec<_>>()
                    .join("\n  ")
            };
            failures.push(format!(
                "{name}: the files differ\n expected:\n  {}\n found:\n  {}",
                shown(&expected_after),
                shown(&after)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
