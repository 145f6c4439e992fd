//! Real servers' shapes: no tool-call parser, thinking models with no
//! reasoning parser. The binary runs headless tasks against the mock set
//! up like such a server.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::demo::{self, Flavour, Think};
use crate::support::{MockServer, Workspace, run};

/// A task that needs three tool calls: read, write, run.
const TASK: &str = "read input.txt, write out.txt and run `echo ran`";
const DONE: &str = "Done: I read input.txt and wrote out.txt and ran `echo ran`.\n";

fn server(flavour: Flavour) -> MockServer {
    MockServer::start(Arc::new(demo::responder(flavour)))
}

fn task(workspace: &Workspace, server: &MockServer) -> crate::support::Output {
    std::fs::write(workspace.root.join("input.txt"), "alpha beta\n").unwrap();
    run(workspace.offcode(&server.base_url(), &["run", "--yes", TASK]))
}

fn system_prompt(body: &Value) -> &str {
    body["messages"][0]["content"].as_str().unwrap()
}

/// Every message text of every request, for searching.
fn sent_text(server: &MockServer) -> String {
    server
        .chat_bodies()
        .iter()
        .flat_map(|b| b["messages"].as_array().unwrap().clone())
        .map(|m| m.to_string())
        .collect()
}

#[test]
fn without_a_tool_parser_the_task_runs_on_text_calls_and_the_next_start_knows() {
    let server = server(Flavour {
        tool_parser: false,
        think: Think::None,
    });
    let workspace = Workspace::new();
    let output = task(&workspace, &server);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, DONE);
    assert_eq!(
        std::fs::read_to_string(workspace.root.join("out.txt")).unwrap(),
        "Notes\n\nFirst line of what I read: alpha beta\n"
    );
    // The user learns what happened and how to fix the server.
    assert!(
        output
            .stderr
            .contains("--enable-auto-tool-choice --tool-call-parser"),
        "{}",
        output.stderr
    );
    for tool in ["read", "write", "bash"] {
        assert!(
            output.stderr.contains(&format!("→ {tool} (from text)")),
            "{tool}: {}",
            output.stderr
        );
    }
    // One refused request with tools; after it, tools in the prompt only.
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 5, "refused + 3 calls + answer");
    assert!(bodies[0]["tools"].is_array());
    for body in &bodies[1..] {
        assert!(body.get("tools").is_none(), "{body}");
        assert!(system_prompt(body).contains("<tool_call>"));
    }
    // The prefix stays byte-identical from one request to the next, so
    // vLLM's prefix cache keeps working in text mode.
    for pair in bodies[1..].windows(2) {
        let (before, after) = (
            pair[0]["messages"].as_array().unwrap(),
            pair[1]["messages"].as_array().unwrap(),
        );
        assert_eq!(before[..], after[..before.len()]);
    }
    // Results go back as text the template can take.
    let last = bodies.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(last.iter().all(|m| m["role"] != "tool"));
    assert!(last.iter().any(|m| {
        m["content"]
            .as_str()
            .unwrap()
            .starts_with("<tool_response>")
    }));

    // The next start does not pay for the refused request again.
    let output = run(workspace.offcode(&server.base_url(), &["run", "--yes", "hello"]));
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 6);
    assert!(bodies[5].get("tools").is_none());
    assert!(
        output.stderr.contains("did not parse tool calls last time"),
        "{}",
        output.stderr
    );
}

#[test]
fn a_thinking_model_with_inline_tags_finishes_and_its_reasoning_stays_home() {
    let server = server(Flavour {
        tool_parser: true,
        think: Think::Tags,
    });
    let workspace = Workspace::new();
    let output = task(&workspace, &server);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, DONE);
    assert!(!output.stderr.contains("<think>"), "{}", output.stderr);
    // Reasoning is kept in the session, never sent back.
    let sent = sent_text(&server);
    assert!(!sent.contains("step by step"), "{sent}");
    assert!(!sent.contains("think>"), "{sent}");
    let session = std::fs::read_to_string(&workspace.session_files()[0]).unwrap();
    assert!(session.contains("I will go step by step."));
}

#[test]
fn a_thinking_model_on_a_bare_server_needs_both_fallbacks() {
    for think in [Think::Tags, Think::Open] {
        let server = server(Flavour {
            tool_parser: false,
            think,
        });
        let workspace = Workspace::new();
        let output = task(&workspace, &server);
        assert_eq!(output.code, 0, "{think:?}: {}", output.stderr);
        assert_eq!(output.stdout, DONE, "{think:?}");
        let sent = sent_text(&server);
        assert!(!sent.contains("step by step"), "{think:?}: {sent}");
        assert!(!sent.contains("think>"), "{think:?}: {sent}");
        assert!(workspace.root.join("out.txt").exists());
    }
}

#[test]
fn a_model_whose_template_opens_the_think_block_is_remembered() {
    let server = server(Flavour {
        tool_parser: true,
        think: Think::Open,
    });
    let workspace = Workspace::new();
    let output = task(&workspace, &server);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout, DONE);
    let cache = workspace.home.join(".cache/offcode/servers.json");
    let cache: Value = serde_json::from_str(&std::fs::read_to_string(cache).unwrap()).unwrap();
    let entry = &cache["servers"][format!("{} mock-model", server.base_url())];
    assert_eq!(entry["think_open"], true, "{cache}");
}

/// `tls` in the user's global config (in a project's file it would wait
/// for the folder to be trusted).
fn with_tls(workspace: &Workspace, tls: &str) {
    std::fs::write(
        workspace.home.join(".config/offcode/offcode.jsonc"),
        format!(
            "{{ retry: {{ initial_delay_ms: 10, max_delay_ms: 40, max_retries: 2 }}, tls: {tls} }}\n"
        ),
    )
    .unwrap();
}

#[test]
fn https_with_a_private_ca_works_given_ca_file_and_is_refused_without() {
    let url = crate::network::start();
    let workspace = Workspace::new();
    // Not trusted: a clear error at once (no retries) with the fix.
    let started = std::time::Instant::now();
    let refused = run(workspace.offcode(&url, &["models"]));
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("certificate"), "{}", refused.stderr);
    assert!(refused.stderr.contains("tls.ca_file"), "{}", refused.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Given the CA: it lists the models.
    with_tls(
        &workspace,
        &format!("{{ ca_file: {:?} }}", crate::network::ca_file()),
    );
    let trusted = run(workspace.offcode(&url, &["models"]));
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    assert!(trusted.stdout.contains("tls-model"), "{}", trusted.stdout);
    // The same through SSL_CERT_FILE, as with the system store.
    with_tls(&workspace, "{}");
    let mut command = workspace.offcode(&url, &["models"]);
    command.env("SSL_CERT_FILE", crate::network::ca_file());
    let from_env = run(&mut command);
    assert_eq!(from_env.code, 0, "{}", from_env.stderr);
    // A ca_file that is not there is a usage error naming it.
    with_tls(&workspace, "{ ca_file: \"/nonexistent/ca.pem\" }");
    let missing = run(workspace.offcode(&url, &["models"]));
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("/nonexistent/ca.pem"),
        "{}",
        missing.stderr
    );
}

#[test]
fn skipping_verification_works_and_says_so_loudly() {
    let url = crate::network::start();
    let workspace = Workspace::new();
    with_tls(&workspace, "{ insecure_skip_verify: true }");
    let listed = run(workspace.offcode(&url, &["models"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stderr.contains("INSECURE"), "{}", listed.stderr);
}

#[test]
fn proxies_come_from_the_environment_and_no_proxy_is_honoured() {
    let server = demo::responder(Flavour::default());
    let server = MockServer::start(Arc::new(server));
    let target: std::net::SocketAddr = server
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .parse()
        .unwrap();
    let (proxy, seen) = crate::network::connect_proxy(target);
    let workspace = Workspace::new();
    // A host only the proxy can reach.
    let url = "http://gpu.invalid:8000/v1";
    let mut command = workspace.offcode(url, &["models"]);
    command.env("http_proxy", &proxy);
    let listed = run(&mut command);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains("mock-model"), "{}", listed.stdout);
    assert_eq!(*seen.lock().unwrap(), ["CONNECT gpu.invalid:8000 HTTP/1.1"]);
    // A SOCKS proxy is used (here a closed port): a clear error, no crash.
    let mut command = workspace.offcode(url, &["models"]);
    command.env("ALL_PROXY", "socks5://127.0.0.1:9");
    let socks = run(&mut command);
    assert_eq!(socks.code, 1, "{}", socks.stderr);
    assert!(!socks.stderr.contains("panicked"), "{}", socks.stderr);
    // HTTPS_PROXY is for https endpoints only; upper-case HTTP_PROXY (a
    // login profile's) is ignored, as curl ignores it; NO_PROXY exempts a
    // domain and its subdomains.
    for (name, value) in [
        ("HTTPS_PROXY", proxy.as_str()),
        ("HTTP_PROXY", proxy.as_str()),
        ("NO_PROXY", "invalid"),
    ] {
        let mut command = workspace.offcode(url, &["models"]);
        command.env(name, value);
        if name == "NO_PROXY" {
            command.env("http_proxy", &proxy);
        }
        let direct = run(&mut command);
        assert_eq!(direct.code, 1, "{name}: {}", direct.stderr);
        assert_eq!(seen.lock().unwrap().len(), 1, "{name}: not proxied");
    }
}

/// A recorded stream from `tests/fixtures/openai-sse`.
fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/openai-sse/{name}.sse",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn dashscope_llama_cpp_and_litellm_streams_drive_a_tool_call() {
    // (server shape, model, the call's id, a file or command it needs)
    for (shape, model, call_id) in [
        ("dashscope-tool-call", "qwen3-max", "call_8f2e1d0c9b7a4e3f"),
        (
            "llamacpp-tool-call",
            "qwen2.5-coder",
            "kX9mQ2pL7vR4tN8sW1cF6hJ3bD5gA0eY",
        ),
        (
            "litellm-reasoning-tool-call",
            "Qwen3-32B",
            "chatcmpl-tool-a331788bab1045a8",
        ),
    ] {
        let server = crate::support::mock();
        server.push(crate::support::Reply::sse(fixture(shape)));
        server.push(crate::support::Reply::sse(fixture("dashscope-text-usage")));
        let workspace = Workspace::new();
        std::fs::write(workspace.root.join("说明.txt"), "第一行\n").unwrap();
        let mut command = workspace.offcode(
            &server.base_url(),
            &["run", "--yes", "--model", model, "do it"],
        );
        // The DashScope key is used when no offcode key is set.
        command.env("DASHSCOPE_API_KEY", "sk-dash-test");
        let output = run(&mut command);
        assert_eq!(output.code, 0, "{shape}: {}", output.stderr);
        assert_eq!(
            output.stdout, "你好!我是通义千问有任何问题或需要帮助,欢迎随时告诉我!😊\n",
            "{shape}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{shape}");
        assert_eq!(
            requests[0].header("authorization"),
            Some("Bearer sk-dash-test")
        );
        // The call ran and its result went back under the server's id;
        // the reasoning did not.
        let second = &server.chat_bodies()[1];
        let messages = second["messages"].as_array().unwrap();
        let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
        assert_eq!(result["tool_call_id"], call_id, "{shape}");
        if shape == "dashscope-tool-call" {
            assert!(
                result["content"].as_str().unwrap().contains("第一行"),
                "{result}"
            );
        }
        assert!(!second.to_string().contains("用户想"), "{shape}");
        assert!(!second.to_string().contains("The user wants"), "{shape}");
    }
}
