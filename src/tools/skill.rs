//! `skill`: loads a skill's instructions by name (only their index is in
//! the context). Offered only when the workspace has skills.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Error, Tool, ToolContext, ToolOutput};
use crate::skills::Skill;

/// The `skill` tool over the skills found at start.
pub struct Load(pub Arc<Vec<Skill>>);

/// The arguments as the model sends them.
#[derive(Deserialize)]
pub struct Arguments {
    name: String,
}

impl Tool for Load {
    const NAME: &'static str = "skill";

    const DESCRIPTION: &'static str =
        "Load a skill's instructions by name (the skills are listed in the system prompt).";

    const SUBJECT: Option<&'static str> = Some("name");
    type Arguments = Arguments;

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name"}},
            "required": ["name"]
        })
    }

    async fn run(&self, arguments: Arguments, _context: &ToolContext) -> Result<ToolOutput, Error> {
        let name = arguments.name.trim();
        let Some(skill) = self.0.iter().find(|s| s.name == name) else {
            let known: Vec<&str> = self.0.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::InvalidArguments {
                tool: Self::NAME,
                reason: format!("no skill `{name}`; the skills are: {}", known.join(", ")),
            });
        };
        Ok(ToolOutput::ok(
            format!(
                "Skill `{}` (from {}):\n\n{}",
                skill.name, skill.source, skill.body
            ),
            format!("skill {} loaded", skill.name),
        ))
    }
}
