//! Several endpoints in `OpenCode`'s `provider` shape: two mock servers as
//! two providers, a switch between them mid-session, per-model limits,
//! options and headers reaching the request, and `offcode models`.

use std::sync::Arc;
use std::time::Duration;

use offcode::agent::{self, AgentHandle, AgentSetup};
use offcode::protocol::{EventMsg, Op};
use offcode::session::Store;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{MockServer, Reply, Workspace, answer_to, chunks, run, sse};

/// A mock that lists `ids` on `GET /v1/models` and answers 500 to
/// anything not queued.
fn serving(ids: &'static [&'static str]) -> MockServer {
    MockServer::start(Arc::new(
        move |request: &crate::support::server::Request| {
            if request.method == "GET" && request.path.ends_with("/models") {
                let cards: Vec<(&str, u64)> = ids.iter().map(|id| (*id, 32_768)).collect();
                return Reply::json(200, &chunks::models(&cards));
            }
            crate::support::server::unscripted(request)
        },
    ))
}

fn two_providers(a: &MockServer, b: &MockServer) -> Value {
    json!({
        "provider": {
            "gpu": {
                "name": "GPU box",
                "options": {"baseURL": a.base_url(), "headers": {"X-Team": "infra"}},
                "models": {"coder": {
                    "id": "Qwen/Qwen3-Coder",
                    "limit": {"context": 65536, "output": 512},
                    "options": {"temperature": 0.35, "top_k": 20}
                }}
            },
            "cpu": {
                "options": {"baseURL": b.base_url(), "apiKey": "cpu-key"},
                "models": {"small": {"id": "qwen2.5-coder-1.5b"}}
            }
        }
    })
}

async fn finish_turn(handle: &mut AgentHandle, text: &str) {
    let id = handle.ops.submit(Op::UserTurn {
        text: text.to_owned(),
    });
    loop {
        if let EventMsg::TurnComplete(_) = answer_to(handle, id).await {
            return;
        }
    }
}

/// A session's core on `reference`, its session file beside.
fn spawn_core(
    config: offcode::config::Config,
    reference: &str,
    root: &std::path::Path,
    store: &Store,
) -> (AgentHandle, std::path::PathBuf) {
    let routed = config.routed(reference, &|_| None).unwrap();
    let session = store.create(root, reference, &routed.base_url).unwrap();
    let session_path = session.path.clone();
    let handle = agent::spawn(AgentSetup {
        client: Arc::new(offcode::client::Client::new(&routed).unwrap()),
        session,
        tools: offcode::tools::Registry::default(),
        config,
        shell: crate::support::confined_shell(root),
        sandbox: Arc::new(offcode::sandbox::Sandbox::new(root).unwrap()),
        policy: Arc::new(offcode::policy::PolicySource::fixed(
            offcode::policy::Policy::load(&[], &[], root, None).unwrap(),
        )),
        approver: offcode::protocol::Decider::User,
        context: offcode::context::Assembly::default(),
        servers: offcode::servers::ServerCache::default(),
        agents: offcode::agents::Agents::default(),
        agent: None,
        depth: 0,
        mcp: None,
        checkpoints: None,
    });
    (handle, session_path)
}

#[tokio::test]
async fn a_switch_mid_session_sends_the_next_request_to_the_other_server_and_is_recorded() {
    let a = serving(&["Qwen/Qwen3-Coder"]);
    let b = serving(&["qwen2.5-coder-1.5b"]);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let store = Store::new(dir.path().join("sessions"));
    let mut config: offcode::config::Config =
        serde_json::from_value(two_providers(&a, &b)).unwrap();
    config.timeouts.idle_ms = 5_000;
    let (mut handle, session_path) = spawn_core(config, "gpu/coder", &root, &store);

    a.push(sse(&chunks::text_answer("from the GPU box")));
    finish_turn(&mut handle, "hello").await;
    let sent = a.chat_bodies();
    assert_eq!(sent.len(), 1, "{sent:?}");
    // The model's id, lengths, options and the provider's headers.
    assert_eq!(sent[0]["model"], "Qwen/Qwen3-Coder");
    assert_eq!(sent[0]["temperature"], 0.35);
    assert_eq!(sent[0]["top_k"], 20);
    assert!(
        sent[0]["max_tokens"].as_u64().unwrap() <= 512,
        "{}",
        sent[0]["max_tokens"]
    );
    let chat = a
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && !crate::support::server::is_title_request(&r.json()))
        .unwrap();
    assert_eq!(chat.header("x-team"), Some("infra"));
    assert_eq!(
        chat.header("authorization"),
        None,
        "no key configured for gpu"
    );

    // The whole catalogue, grouped, both servers asked.
    let asked = handle.ops.submit(Op::ListModels);
    let EventMsg::ModelList(list) = answer_to(&mut handle, asked).await else {
        panic!("a model list answers ListModels");
    };
    let ids: Vec<&str> = list.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["gpu/coder", "cpu/small"]);
    assert_eq!(list.limit, Some(65536), "the model's configured context");
    let labels: Vec<&str> = list.providers.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(labels, ["GPU box", "cpu"]);

    let switched = handle.ops.submit(Op::SetModel {
        model: "cpu/small".to_owned(),
    });
    assert!(matches!(
        answer_to(&mut handle, switched).await,
        EventMsg::ModelChanged { model, .. } if model == "cpu/small"
    ));
    // The other server's list follows, with the new model's length.
    let EventMsg::ModelList(list) = answer_to(&mut handle, switched).await else {
        panic!("the new server's list follows a switch");
    };
    assert_eq!(list.limit, Some(32_768));
    b.push(sse(&chunks::text_answer("from the small box")));
    finish_turn(&mut handle, "and now?").await;
    assert_eq!(a.chat_bodies().len(), 1, "nothing more went to the GPU box");
    let sent = b.chat_bodies();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["model"], "qwen2.5-coder-1.5b");
    assert!(
        sent[0].get("top_k").is_none(),
        "the other model's options stay"
    );
    assert_eq!(
        sent[0]["temperature"], 0.2,
        "the agent's default, not gpu's model option"
    );
    let chat = b
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && !crate::support::server::is_title_request(&r.json()))
        .unwrap();
    assert_eq!(chat.header("authorization"), Some("Bearer cpu-key"));
    assert_eq!(chat.header("x-team"), None, "gpu's headers stay with gpu");
    // The history went along: the second server saw the first answer.
    assert!(
        sent[0].to_string().contains("from the GPU box"),
        "{}",
        sent[0]
    );
    // The session records the switch.
    let file = std::fs::read_to_string(&session_path).unwrap();
    assert!(
        file.lines()
            .any(|l| l.contains("model_change") && l.contains("cpu/small")),
        "{file}"
    );
    // Once the core has stopped, a resume goes on with it.
    handle.ops.submit(Op::Shutdown);
    while tokio::time::timeout(Duration::from_secs(10), handle.events.recv())
        .await
        .expect("the core stops")
        .is_some()
    {}
    let id = session_path.file_stem().unwrap().to_string_lossy();
    let session = crate::support::open_when_free(&store, &id).await;
    assert_eq!(session.model, "cpu/small");
}

fn workspace_with(config: &Value) -> Workspace {
    let workspace = Workspace::new();
    std::fs::write(
        workspace.home.join(".config/offcode/offcode.jsonc"),
        serde_json::to_string_pretty(config).unwrap(),
    )
    .unwrap();
    workspace
}

#[test]
fn models_lists_every_provider_and_run_goes_to_the_one_named() {
    let a = serving(&["Qwen/Qwen3-Coder", "extra-model"]);
    let b = serving(&["qwen2.5-coder-1.5b"]);
    let workspace = workspace_with(&two_providers(&a, &b));
    let mut command = workspace.offcode("", &["models"]);
    command.env_remove("OFFCODE_BASE_URL");
    let listed = run(command);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let lines: Vec<&str> = listed.stdout.lines().map(str::trim_end).collect();
    assert_eq!(
        lines,
        [
            "  MODEL            CONTEXT",
            &format!("GPU box  {}", a.base_url()),
            "  gpu/coder          65.5k",
            "  gpu/extra-model    32.8k",
            &format!("cpu  {}", b.base_url()),
            "  cpu/small          32.8k",
        ]
    );

    // `--model cpu/small` goes to the second server only.
    b.push(sse(&chunks::text_answer("small answered")));
    let mut command = workspace.offcode("", &["run", "--model", "cpu/small", "say hi"]);
    command.env_remove("OFFCODE_BASE_URL");
    let done = run(command);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(done.stdout.contains("small answered"), "{}", done.stdout);
    assert_eq!(b.chat_bodies()[0]["model"], "qwen2.5-coder-1.5b");
    assert!(a.chat_bodies().is_empty());

    // No model named: the first provider's first model.
    a.push(sse(&chunks::text_answer("gpu answered")));
    let mut command = workspace.offcode("", &["run", "say hi"]);
    command.env_remove("OFFCODE_BASE_URL");
    let done = run(command);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(a.chat_bodies()[0]["model"], "Qwen/Qwen3-Coder");
}

#[test]
fn a_provider_without_a_url_or_with_a_reserved_option_is_refused_by_name() {
    let workspace = workspace_with(&json!({"provider": {"gpu": {"models": {"m": {}}}}}));
    let listed = run(workspace.offcode("http://127.0.0.1:9/v1", &["config"]));
    assert_eq!(listed.code, 2, "{}", listed.stdout);
    assert!(
        listed
            .stderr
            .contains("provider `gpu` has no `options.baseURL`"),
        "{}",
        listed.stderr
    );

    let workspace = workspace_with(&json!({"provider": {"gpu": {
        "options": {"baseURL": "http://gpu1:8000/v1"},
        "models": {"m": {"options": {"messages": []}}}
    }}}));
    let listed = run(workspace.offcode("http://127.0.0.1:9/v1", &["config"]));
    assert_eq!(listed.code, 2, "{}", listed.stdout);
    assert!(
        listed
            .stderr
            .contains("`provider.gpu.models.m.options.messages` is what offcode sends itself"),
        "{}",
        listed.stderr
    );

    // A key OpenCode does not have is an error with its line and column.
    let workspace = Workspace::new();
    std::fs::write(
        workspace.home.join(".config/offcode/offcode.jsonc"),
        "{\n  \"provider\": {\n    \"gpu\": {\n      \"option\": {}\n    }\n  }\n}\n",
    )
    .unwrap();
    let listed = run(workspace.offcode("http://127.0.0.1:9/v1", &["config"]));
    assert_eq!(listed.code, 2, "{}", listed.stdout);
    assert!(
        listed.stderr.contains("at line 4, column 7"),
        "{}",
        listed.stderr
    );
    assert!(
        listed.stderr.contains("unknown field `option`"),
        "{}",
        listed.stderr
    );
}

#[test]
fn doctor_checks_the_named_providers_server_and_names_a_provider_prefix_it_lacks() {
    let a = serving(&["Qwen/Qwen3-Coder"]);
    let b = serving(&["qwen2.5-coder-1.5b"]);
    let workspace = workspace_with(&two_providers(&a, &b));
    let mut command = workspace.offcode("", &["doctor", "--model", "cpu/small"]);
    command.env_remove("OFFCODE_BASE_URL");
    let checked = run(command);
    assert!(
        checked.stdout.starts_with(&format!(
            "offcode doctor: {} (provider `cpu`)",
            b.base_url()
        )),
        "{}",
        checked.stdout
    );
    assert!(
        checked
            .stdout
            .contains("model `qwen2.5-coder-1.5b` is served"),
        "{}",
        checked.stdout
    );
    // OpenCode's `vllm/...` with no `vllm` provider: said so, not
    // `--served-model-name`.
    let workspace = Workspace::new();
    let checked = run(workspace.offcode(
        &a.base_url(),
        &["doctor", "--model", "vllm/Qwen/Qwen3-Coder"],
    ));
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert!(
        checked.stdout.contains("`vllm` is no configured provider"),
        "{}",
        checked.stdout
    );
}
