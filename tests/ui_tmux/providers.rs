//! Two servers as two providers on a real terminal: `/models` groups
//! them, and a switch sends the next request to the other server.

use super::Tmux;
use crate::support::{Workspace, demo_mock, wait_until};

#[test]
fn models_groups_two_providers_and_a_switch_moves_the_next_request() {
    let gpu = demo_mock();
    let cpu = demo_mock();
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        format!(
            r#"{{ "provider": {{
                 "gpu": {{ "name": "GPU box", "options": {{ "baseURL": "{}" }},
                          "models": {{ "coder": {{ "id": "mock-model" }} }} }},
                 "cpu": {{ "options": {{ "baseURL": "{}" }} }} }} }}"#,
            gpu.base_url(),
            cpu.base_url()
        ),
    )
    .unwrap();
    let tmux = Tmux::new("providers");
    tmux.start_args(
        "one",
        &ws,
        &gpu.base_url(),
        &ws.home.join("data"),
        "",
        "-m gpu/coder",
    );
    tmux.wait_for("one", "Type a task");
    tmux.send("one", "/models");
    let screen = tmux.wait_for("one", "Switch with /models ID.");
    assert!(
        screen.contains(&format!("GPU box  {}", gpu.base_url())),
        "{screen}"
    );
    assert!(screen.contains("* gpu/coder"), "{screen}");
    assert!(
        screen.contains(&format!("cpu  {}", cpu.base_url())),
        "{screen}"
    );
    assert!(screen.contains("  cpu/mock-model-large"), "{screen}");
    tmux.send("one", "/models cpu/mock-model-large");
    tmux.wait_for("one", "model: cpu/mock-model-large");
    tmux.send("one", "hi 你好");
    tmux.wait_for("one", "You said: hi");
    assert!(wait_until(std::time::Duration::from_secs(10), || {
        cpu.chat_bodies()
            .last()
            .is_some_and(|body| body["model"] == "mock-model-large")
    }));
    assert!(
        gpu.chat_bodies()
            .iter()
            .all(|body| !body.to_string().contains("hi 你好")),
        "the GPU box got the request after the switch"
    );
}
