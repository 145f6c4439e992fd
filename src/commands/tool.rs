//! `offcode tool`: one built-in tool run from the shell, as the agent
//! would run it, or the list of tools.

use std::fmt::Write as _;

use crate::cli::ToolArgs;
use crate::config::{Environment, Flags};
use crate::failure::{EXIT_FAILED, EXIT_USAGE, Failure};
use crate::policy::Action;
use crate::startup::{load_config, load_policy, runtime, shell, workspace};
use crate::stdio::{out, read_stdin};

/// `offcode tool NAME 'JSON'`.
pub fn tool(args: &ToolArgs, environment: &Environment) -> Result<u8, Failure> {
    let loaded = load_config(environment, &Flags::default())?;
    let registry = crate::tools::Registry::default();
    let Some(name) = &args.name else {
        // No name: every tool, with what it does.
        let mut text = String::from("Tools (run one with `offcode tool NAME 'JSON'`):\n");
        for spec in registry.specs() {
            let _ = writeln!(
                text,
                "  {:<10} {}",
                spec.function.name,
                first_sentence(&spec.function.description)
            );
        }
        return out(&text).map(|()| 0);
    };
    let Some(tool) = registry.get(name) else {
        return Err(
            Failure::message(format!("Unknown tool `{name}`"), EXIT_USAGE)
                .with_hint(format!("Available tools: {}", registry.names().join(", "))),
        );
    };
    let text = match args.arguments.as_deref() {
        Some("-") => read_stdin()?,
        Some(text) => text.to_owned(),
        None => String::new(),
    };
    let arguments = crate::tools::parse_argument_text(&text).map_err(|reason| {
        Failure::message(
            format!("The arguments are not a JSON object: {reason}"),
            EXIT_USAGE,
        )
        .with_hint(format!(
            "For example: offcode tool {name} '{{\"path\": \"src/main.rs\"}}'"
        ))
    })?;
    let sandbox = workspace(environment)?;
    let policy = load_policy(environment, &loaded, sandbox.root())?;
    let decision = policy.decide(name, &arguments, &[]);
    permitted(&decision, args.yes)?;
    let context = crate::tools::ToolContext {
        shell: shell(environment, &loaded.config, sandbox.root()),
        sandbox,
        cancel: crate::cancel::Cancel::default(),
        allow_clobber: false,
        unconfined: false,
        running: crate::tools::Running::global(),
        late: std::sync::Arc::default(),
        checkpoints: None,
    };
    let output = runtime()?.block_on(registry.call_parsed(tool, arguments, &context));
    // On a terminal, what a command printed must not steer it: an escape
    // sequence could set its title or make it type an answer into the
    // shell. Into a pipe or a file, the output goes as it is.
    let shown = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        crate::ui::line::clean(&output.output)
    } else {
        output.output
    };
    let newline = if shown.ends_with('\n') { "" } else { "\n" };
    out(&format!("{shown}{newline}"))?;
    Ok(if output.ok { 0 } else { EXIT_FAILED })
}

/// Whether a call the user asked for on the command line may run: not
/// when denied, nor when it needs a person's approval that `--yes` cannot
/// give; an ask-rule runs with `yes`.
pub(super) fn permitted(decision: &crate::policy::Decision, yes: bool) -> Result<(), Failure> {
    match decision.action {
        Action::Deny => {
            return Err(Failure::message(
                format!("Not run: denied by the rule {}", decision.rule),
                EXIT_FAILED,
            ));
        }
        Action::Ask if decision.dangerous || decision.mandate.is_some() => {
            return Err(
                Failure::message(format!("Not run: {}", decision.rule), EXIT_FAILED).with_hint(
                    if decision.dangerous {
                        "Dangerous calls need a person's approval; --yes does not approve them"
                    } else if decision.mandate == Some(crate::protocol::Mandate::ManagedPolicy) {
                        "The managed policy asks for a person's approval; --yes does not give it"
                    } else {
                        "This needs a person's answer in the interactive UI; --yes does not give it"
                    },
                ),
            );
        }
        Action::Ask if !yes => {
            return Err(
                Failure::message(format!("Not run: {} asks", decision.rule), EXIT_FAILED)
                    .with_hint("Pass --yes to run it"),
            );
        }
        Action::Ask | Action::Allow => {}
    }
    Ok(())
}

/// The first sentence of `text`, without its full stop (`e.g.` and
/// `i.e.` do not end one).
fn first_sentence(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find(". ").map(|at| from + at) {
        if !(text[..at].ends_with("e.g") || text[..at].ends_with("i.e")) {
            return &text[..at];
        }
        from = at + 2;
    }
    text.trim_end_matches('.')
}
