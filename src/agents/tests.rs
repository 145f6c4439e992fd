use super::built_in::read_only_permission;
use super::files::parse_file;
use super::*;
use serde_json::json;

fn config_layer(value: Value, project: bool) -> ConfigAgents {
    ConfigAgents {
        path: PathBuf::from(if project {
            "/p/offcode.jsonc"
        } else {
            "/home/u/.config/offcode/offcode.jsonc"
        }),
        value,
        project,
    }
}

#[test]
fn the_built_ins_are_build_plan_and_two_subagents() {
    let agents = Agents::default();
    let names: Vec<&str> = agents.all().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["build", "plan", "general", "compaction", "title", "explore"]
    );
    // offcode's own: never switched to, never a subagent.
    for own in ["compaction", "title"] {
        let mode = agents.get(own).unwrap().mode;
        assert!(!mode.primary() && !mode.subagent(), "{own}");
    }
    let compaction = agents.get("compaction").unwrap();
    assert!(
        compaction
            .prompt
            .starts_with("You summarise a coding session")
    );
    let plan = agents.get("plan").unwrap();
    for tool in ["write", "edit", "patch"] {
        assert!(!plan.offers(tool), "{tool}");
    }
    assert!(plan.offers("read") && plan.offers("bash"));
    assert!(agents.get("build").unwrap().offers("write"));
    assert_eq!(agents.next_primary("build"), "plan");
    assert_eq!(agents.next_primary("plan"), "build");
    let refused = agents.primary("explore").unwrap_err();
    assert!(refused.contains("is a subagent"), "{refused}");
    let unknown = agents.primary("nope").unwrap_err();
    assert!(
        unknown.contains("no agent `nope`") && unknown.contains("build, plan"),
        "{unknown}"
    );
}

#[test]
fn the_config_adds_agents_and_changes_built_ins() {
    let global = config_layer(
        json!({
            "review": {"description": "Reviews", "mode": "primary", "model": "big", "temperature": 0.1,
                       "tools": {"bash": false}, "permission": {"edit": "deny"}, "prompt": "Review."},
            "build": {"max_steps": 7},
            "general": {"disable": true}
        }),
        false,
    );
    let agents = Agents::load(&[global], None, None).unwrap();
    let review = agents.get("review").unwrap();
    assert_eq!(review.model.as_deref(), Some("big"));
    assert_eq!(
        review.temperature,
        Some(crate::sampling::Sampling::Value(0.1))
    );
    assert!(!review.offers("bash") && review.offers("read"));
    assert_eq!(review.permission, Some(json!({"edit": "deny"})));
    assert_eq!(review.prompt, "Review.");
    assert_eq!(
        review.origin,
        Origin::Config(PathBuf::from("/home/u/.config/offcode/offcode.jsonc"))
    );
    assert_eq!(agents.get("build").unwrap().max_steps, Some(7));
    // The summariser's model can be changed, its mode not.
    let global = config_layer(
        json!({"compaction": {"model": "small", "temperature": 0.2}}),
        false,
    );
    let changed = Agents::load(&[global], None, None).unwrap();
    let compaction = changed.get("compaction").unwrap();
    assert_eq!(compaction.model.as_deref(), Some("small"));
    assert_eq!(compaction.mode, Mode::Hidden);
    assert!(agents.get("general").is_none());
    assert_eq!(agents.next_primary("plan"), "review");
    assert_eq!(agents.next_primary("review"), "build");
}

#[test]
fn a_project_definition_adds_rules_that_only_tighten() {
    let project = config_layer(json!({"plan": {"permission": {"bash": "allow"}}}), true);
    let agents = Agents::load(&[project], None, None).unwrap();
    let plan = agents.get("plan").unwrap();
    // Kept apart from the built-in rules, which stay as they were.
    assert_eq!(plan.project_permission, Some(json!({"bash": "allow"})));
    assert_eq!(plan.permission, Some(read_only_permission()));
}

#[test]
fn a_later_permission_is_laid_over_an_earlier_one() {
    let global = config_layer(
        json!({"plan": {"permission": {"bash": {"cargo check": "allow"}}}}),
        false,
    );
    let agents = Agents::load(&[global], None, None).unwrap();
    let permission = agents.get("plan").unwrap().permission.as_ref().unwrap();
    let bash = &permission["bash"];
    assert_eq!(bash["*"], "deny");
    // What the gate judges to only read, not a list of its own.
    assert_eq!(permission[crate::policy::READ_ONLY_BASH], "allow");
    // Last, so it wins over `*`.
    let keys: Vec<&String> = bash.as_object().unwrap().keys().collect();
    assert_eq!(keys.last().unwrap().as_str(), "cargo check");
}

#[test]
fn bad_definitions_say_which_agent_where_and_what() {
    let cases = [
        (json!({"r": {"tool": {}}}), "unknown field `tool`"),
        (
            json!({"r": {"temperature": 5}}),
            "`temperature` must be between 0 and 2",
        ),
        (json!({"r": {"mode": "boss"}}), "unknown variant `boss`"),
        (
            json!({"r": {"permission": {"bash": "maybe"}}}),
            "`permission`",
        ),
        (json!({"bad name": {}}), "the name `bad name`"),
        (json!({"build": {"disable": true}}), "cannot be disabled"),
        (json!({"build": {"mode": "subagent"}}), "must stay primary"),
        (json!({"r": {"max_steps": 0}}), "at least 1"),
        (
            json!({"compaction": {"disable": true}}),
            "cannot be disabled",
        ),
        (
            json!({"compaction": {"mode": "primary"}}),
            "they stay hidden",
        ),
        (json!({"r": {"mode": "hidden"}}), "they stay hidden"),
    ];
    for (value, expected) in cases {
        let error = Agents::load(&[config_layer(value.clone(), false)], None, None)
            .expect_err(&value.to_string())
            .to_string();
        assert!(
            error.contains(expected) && error.contains("offcode.jsonc"),
            "{value}: {error}"
        );
    }
}

#[test]
fn a_markdown_file_gives_its_name_frontmatter_and_prompt() {
    let text = "---\ndescription: Reviews diffs\nmode: primary\nmodel: qwen-big\ntop_p: 0.9\ntools:\n  write: false\npermission:\n  bash:\n    \"*\": deny\n    \"git diff*\": allow\n---\nYou review code.\n\nBe brief.\n";
    let (definition, name) = parse_file(Path::new("a/reviewer.md"), "reviewer", text).unwrap();
    assert_eq!(name, "reviewer");
    let mut agents = Agents::default();
    agents
        .define(
            &name,
            definition,
            Origin::File("a/reviewer.md".into()),
            false,
        )
        .unwrap();
    let reviewer = agents.get("reviewer").unwrap();
    assert_eq!(reviewer.description, "Reviews diffs");
    assert_eq!(reviewer.model.as_deref(), Some("qwen-big"));
    assert_eq!(reviewer.top_p, Some(crate::sampling::Sampling::Value(0.9)));
    assert!(!reviewer.offers("write"));
    assert_eq!(
        reviewer.permission,
        Some(json!({"bash": {"*": "deny", "git diff*": "allow"}}))
    );
    assert_eq!(reviewer.prompt, "You review code.\n\nBe brief.");
    // No frontmatter: all prompt.
    let (plain, _) = parse_file(Path::new("x.md"), "x", "Just a prompt.\n").unwrap();
    assert_eq!(plain.prompt.as_deref(), Some("Just a prompt."));
}

#[test]
fn a_bad_markdown_file_is_named_with_its_line_and_column() {
    let path = Path::new(".offcode/agents/r.md");
    // Line 3 of the file is the frontmatter's line 2.
    let error = parse_file(path, "r", "---\nmode: primary\ntemperatur: 0.2\n---\nHi\n")
        .err()
        .unwrap();
    assert_eq!((error.line, error.column), (Some(3), Some(1)), "{error}");
    let text = error.to_string();
    assert!(
        text.starts_with("Invalid agent `r` in `.offcode/agents/r.md` at line 3, column 1: unknown field `temperatur`"),
        "{text}"
    );
    let error = parse_file(path, "r", "---\ntools:\n  write: maybe\n---\n")
        .err()
        .unwrap();
    assert_eq!(error.line, Some(3), "{error}");
    let error = parse_file(path, "r", "---\nmode: primary\nno end\n")
        .err()
        .unwrap();
    assert!(error.to_string().contains("never closed"), "{error}");
}
