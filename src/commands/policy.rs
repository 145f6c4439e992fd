//! `offcode policy check` (how the policy decides, nothing run), `offcode
//! policy show` (the whole effective policy, rule by rule) and `offcode
//! trust` (a project folder's loosening, trusted or forgotten).

use std::fmt::Write as _;

use serde_json::json;

use crate::cli::PolicyCheckArgs;
use crate::config::{Environment, Flags};
use crate::failure::{EXIT_FAILED, EXIT_USAGE, Failure};
use crate::startup::{load_config, load_policy, workspace};
use crate::stdio::{out, read_stdin};

/// `offcode policy show`: every rule of the effective policy with where
/// it came from, and each agent's own rules.
pub fn policy_show(as_json: bool, environment: &Environment) -> Result<u8, Failure> {
    let loaded = load_config(environment, &Flags::default())?;
    let sandbox = workspace(environment)?;
    let policy = load_policy(environment, &loaded, sandbox.root())?;
    let agents = crate::agents::Agents::load(
        &loaded.agent_layers,
        environment.config_dir().as_deref(),
        Some(&sandbox),
    )
    .map_err(|e| Failure::new(&e, EXIT_USAGE))?;
    let mut agent_rules = Vec::new();
    for profile in agents.all() {
        let rules = crate::policy::AgentRules::new(
            &profile.name,
            &profile.origin.to_string(),
            profile.permission.as_ref(),
            profile.project_permission.as_ref(),
        )
        .map_err(|e| Failure::new(&e, EXIT_USAGE))?
        .shown();
        if !rules.is_empty() {
            agent_rules.push((profile.name.clone(), rules));
        }
    }
    let rules = policy.shown();
    let managed: Vec<String> = policy
        .managed_files()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if as_json {
        let agents: serde_json::Map<String, serde_json::Value> = agent_rules
            .iter()
            .map(|(name, rules)| (name.clone(), json!(rules)))
            .collect();
        let value = json!({
            "workspace": sandbox.root().display().to_string(),
            "rules": rules,
            "agents": agents,
            "managed_files": managed,
            "additions": policy.additions().iter().map(|(source, what)| json!({"source": source, "what": what})).collect::<Vec<_>>(),
            "commands": policy.shell().describe(),
        });
        return out(&format!("{value:#}\n")).map(|()| 0);
    }
    let mut text = format!(
        "Permission policy for {}\n(the last matching rule wins; managed rules are laid last and only tighten; an untrusted project's rules apply only where stricter)\n",
        sandbox.root().display()
    );
    let mut last_source = String::new();
    for rule in &rules {
        if rule.source != last_source {
            let mark = match rule.layer {
                "managed" => "  [managed: its questions need a person]",
                "untrusted_project" => "  [project, not trusted: only where stricter]",
                _ => "",
            };
            let _ = writeln!(text, "\n{}{mark}", rule.source);
            last_source.clone_from(&rule.source);
        }
        let _ = writeln!(text, "  {:<5} {}", rule.action.to_string(), rule.key);
    }
    for (name, rules) in &agent_rules {
        let _ = writeln!(text, "\nagent `{name}` (while it is the agent in use)");
        for rule in rules {
            let _ = writeln!(text, "  {:<5} {}", rule.action.to_string(), rule.key);
        }
    }
    if !policy.additions().is_empty() {
        text.push_str("\nAdded to the gate:\n");
        for (source, what) in policy.additions() {
            let _ = writeln!(text, "  {what}  # {source}");
        }
    }
    let _ = writeln!(
        text,
        "\nManaged files: {}",
        if managed.is_empty() {
            "none".to_owned()
        } else {
            managed.join(", ")
        }
    );
    let _ = writeln!(text, "Commands run: {}", policy.shell().describe());
    out(&text).map(|()| 0)
}

/// `offcode policy check`: how the effective policy decides on a command
/// line or a tool call. Nothing is run.
pub fn policy_check(args: &PolicyCheckArgs, environment: &Environment) -> Result<u8, Failure> {
    let (tool, arguments) = check_subject(args)?;
    let loaded = load_config(environment, &Flags::default())?;
    let sandbox = workspace(environment)?;
    let policy = load_policy(environment, &loaded, sandbox.root())?;
    let decision = policy.decide(&tool, &arguments, &[]);
    if args.json {
        let mut value =
            serde_json::to_value(&decision).map_err(|e| Failure::new(&e, EXIT_FAILED))?;
        value["tool"] = json!(tool);
        value["arguments"] = arguments;
        let managed: Vec<String> = policy
            .managed_files()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        value["managed_file"] = json!(managed.first());
        value["managed_files"] = json!(managed);
        return out(&format!("{value}\n")).map(|()| 0);
    }
    let mut text = String::new();
    let dangerous = if decision.dangerous {
        " (dangerous)"
    } else {
        ""
    };
    let _ = writeln!(text, "Decision: {}{dangerous}", decision.action);
    let _ = writeln!(text, "Rule:     {}", decision.rule);
    if tool == "bash" && !decision.dangerous && decision.runs.is_empty() {
        let _ = writeln!(
            text,
            "Gate:     plain: offcode understands every command, and none replaces a file, runs a string or reaches the network"
        );
    } else if tool == "bash" && !decision.dangerous {
        let _ = writeln!(
            text,
            "Gate:     not plain (not dangerous either): {}",
            decision.runs.join("; ")
        );
    }
    if let Some(how) = &decision.confinement {
        let _ = writeln!(text, "Runs:     {how}");
    }
    if decision.mandate.is_some() {
        let _ = writeln!(
            text,
            "          set by the managed policy; it cannot be waived"
        );
    }
    let _ = writeln!(text, "Checked:");
    for subject in &decision.subjects {
        let _ = writeln!(
            text,
            "  {:<5} {:<18} {}  ({})",
            subject.action.to_string(),
            subject.permission,
            subject.value,
            subject.rule
        );
    }
    if !decision.dangers.is_empty() {
        let _ = writeln!(text, "Dangerous:");
        for danger in &decision.dangers {
            let _ = writeln!(text, "  {}: {}", danger.command, danger.why);
        }
    }
    out(&text).map(|()| 0)
}

/// The tool and arguments `offcode policy check` was asked about.
fn check_subject(args: &PolicyCheckArgs) -> Result<(String, serde_json::Value), Failure> {
    let Some(name) = &args.tool else {
        let command = args.words.join(" ");
        if command.trim().is_empty() {
            return Err(Failure::message("No command to check", EXIT_USAGE)
                .with_hint("For example: offcode policy check -- rm -rf build"));
        }
        return Ok(("bash".to_owned(), json!({ "command": command })));
    };
    let text = match args.words.as_slice() {
        [] => String::new(),
        [one] if one == "-" => read_stdin()?,
        [one] => one.clone(),
        _ => {
            return Err(Failure::message(
                "With --tool, pass the arguments as one JSON object",
                EXIT_USAGE,
            )
            .with_hint(format!(
                "For example: offcode policy check --tool {name} '{{\"path\": \"src/main.rs\"}}'"
            )));
        }
    };
    let arguments = crate::tools::parse_argument_text(&text).map_err(|reason| {
        Failure::message(
            format!("The arguments are not a JSON object: {reason}"),
            EXIT_USAGE,
        )
    })?;
    Ok((name.clone(), arguments))
}

/// `offcode trust`: records (or, with `--revoke`, forgets) this folder's
/// loosening settings as trusted, and says what they are.
pub fn trust(args: &crate::cli::TrustArgs, environment: &Environment) -> Result<u8, Failure> {
    let store = crate::trust::Store::in_dir(environment.data_dir().as_deref());
    let here = environment.cwd.display();
    if args.revoke {
        let was = store
            .revoke(&environment.cwd)
            .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
        let text = if was {
            format!("{here} is no longer trusted: its config may only tighten the policy.\n")
        } else {
            format!("{here} was not trusted.\n")
        };
        return out(&text).map(|()| 0);
    }
    let loaded = load_config(environment, &Flags::default())?;
    let Some(loosening) = loaded.loosening else {
        return out(&format!(
            "Nothing to trust: no config in {here} loosens the permission policy.\n"
        ))
        .map(|()| 0);
    };
    store
        .trust(&loosening)
        .map_err(|e| Failure::new(&e, EXIT_FAILED))?;
    let mut text = format!("Trusted {here}: from now on these settings apply:\n");
    for entry in &loosening.entries {
        let _ = writeln!(text, "  {entry}");
    }
    text.push_str("When they change, they are ignored again until you run `offcode trust` anew.\n");
    out(&text).map(|()| 0)
}
