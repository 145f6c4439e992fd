use super::*;
use crate::session::ToolCall;
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn text_messages_write_calls_and_results_as_blocks_and_alternate() {
    let history = vec![
        Message::User {
            content: "list".into(),
        },
        Message::Assistant {
            content: "Listing.".into(),
            reasoning: Some("hidden".into()),
            tool_calls: vec![
                ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                },
                ToolCall {
                    id: "c2".into(),
                    name: "read".into(),
                    arguments: "not json".into(),
                },
            ],
            interrupted: false,
        },
        Message::Tool {
            tool_call_id: "c1".into(),
            name: "bash".into(),
            content: "a.txt".into(),
            is_error: false,
            shown: None,
        },
        Message::Tool {
            tool_call_id: "c2".into(),
            name: "read".into(),
            content: "bad arguments".into(),
            is_error: true,
            shown: None,
        },
        Message::Assistant {
            content: "Done.".into(),
            reasoning: None,
            tool_calls: Vec::new(),
            interrupted: false,
        },
    ];
    let wire = serde_json::to_value(build_text_messages("sys", &history)).unwrap();
    assert_eq!(
        wire,
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "list"},
            {"role": "assistant", "content": "Listing.\n<tool_call>\n{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}\n</tool_call>\n<tool_call>\n{\"name\":\"read\",\"arguments\":\"not json\"}\n</tool_call>"},
            {"role": "user", "content": "<tool_response>\na.txt\n</tool_response>\n<tool_response>\nbad arguments\n</tool_response>"},
            {"role": "assistant", "content": "Done."},
        ])
    );
}

#[test]
fn history_maps_to_wire_without_reasoning() {
    let history = vec![
        Message::User {
            content: "hi".into(),
        },
        Message::Assistant {
            content: String::new(),
            reasoning: Some("secret thoughts".into()),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: "{\"path\":\"a\"}".into(),
            }],
            interrupted: false,
        },
        Message::Tool {
            tool_call_id: "c1".into(),
            name: "read".into(),
            content: "x".into(),
            is_error: false,
            shown: None,
        },
    ];
    let wire = serde_json::to_value(build_messages("sys", &history)).unwrap();
    assert_eq!(
        wire,
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}
            ]},
            {"role": "tool", "content": "x", "tool_call_id": "c1"}
        ])
    );
}

#[test]
fn rules_and_instructions_come_in_order_with_their_sources() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    let config = dir.path().join("config");
    std::fs::create_dir_all(root.join("docs/rules")).unwrap();
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("AGENTS.md"), "Use tabs.\n").unwrap();
    std::fs::write(root.join("AGENTS.md"), "Use spaces. 用中文回答。\n").unwrap();
    std::fs::write(root.join("docs/rules/b.md"), "B").unwrap();
    std::fs::write(root.join("docs/rules/a.md"), "A").unwrap();
    std::fs::write(root.join("STYLE.md"), "S").unwrap();
    std::fs::write(dir.path().join("outside.md"), "secret").unwrap();
    let sandbox = crate::sandbox::Sandbox::new(&root).unwrap();
    let assembly = assemble(
        &sandbox,
        Some(&config),
        &[
            "STYLE.md".into(),
            "docs/rules/*.md".into(),
            "STYLE.md".into(),
            "../outside.md".into(),
            "none/*.md".into(),
        ],
    );
    let parts: Vec<(&str, &str)> = assembly
        .parts
        .iter()
        .map(|p| (p.name, p.source.as_str()))
        .collect();
    let global = config.join("AGENTS.md").display().to_string();
    let root = sandbox.root().display().to_string();
    assert_eq!(
        parts,
        [
            ("system prompt", "built in"),
            ("workspace", root.as_str()),
            ("global rules", global.as_str()),
            ("project rules", "AGENTS.md"),
            ("instructions", "STYLE.md"),
            ("instructions", "docs/rules/a.md"),
            ("instructions", "docs/rules/b.md"),
        ]
    );
    let prompt = assembly.workspace();
    assert!(
        prompt.contains("these take precedence):\nUse spaces. 用中文回答。"),
        "{prompt}"
    );
    assert!(!prompt.contains("secret"));
    // The system message holds nothing of the workspace.
    assert_eq!(assembly.system_prompt(), system_prompt());
    assert_eq!(assembly.warnings.len(), 2, "{:?}", assembly.warnings);
    assert!(assembly.warnings[0].contains("`none/*.md` matches no file"));
    assert!(assembly.warnings[1].contains("`../outside.md` were not read: outside_workspace"));
    // The same files give the same bytes: the prefix cache holds.
    assert_eq!(
        assemble(&sandbox, Some(&config), &["docs/rules/*.md".into()]).workspace(),
        assemble(&sandbox, Some(&config), &["docs/rules/*.md".into()]).workspace()
    );
}

#[test]
fn token_estimate_counts_cjk_characters_whole() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("abcd"), 1);
    assert_eq!(estimate_tokens("abcde"), 2);
    assert_eq!(estimate_tokens("你好"), 2);
}

#[test]
fn the_workspace_block_opens_the_first_user_message() {
    let history = [
        Message::User {
            content: "fix it".into(),
        },
        Message::User {
            content: "and test".into(),
        },
    ];
    let messages = with_workspace(build_messages(system_prompt(), &history), "W");
    assert_eq!(messages[0].content.as_deref(), Some(system_prompt()));
    assert_eq!(
        messages[1].content.as_deref(),
        Some("<workspace>\nW\n</workspace>\n\nfix it")
    );
    assert_eq!(messages[2].content.as_deref(), Some("and test"));
    // No conversation yet: the block stands alone, after the system.
    let alone = with_workspace(build_messages(system_prompt(), &[]), "W");
    assert_eq!(alone.len(), 2);
    assert_eq!(alone[1].role, "user");
    assert_eq!(
        alone[1].content.as_deref(),
        Some("<workspace>\nW\n</workspace>")
    );
}

#[test]
fn tool_schemas_and_system_prompt_fit_in_10_kb() {
    let specs = serde_json::to_string(&crate::tools::Registry::default().specs()).unwrap();
    let prompt = system_prompt();
    let total = specs.len() + prompt.len();
    assert!(total < 10 * 1024, "{total} bytes");
}
