//! What every request of a session carries besides the history: the
//! system prompt (the same everywhere), the workspace block, the tools and
//! how they travel. The prompt and the tools
//! sent are worked out from the parts and the [`Shape`] each time, never
//! kept in a second copy that could fall out of step.

use std::borrow::Cow;

use crate::client::inline::{InlineParser, describe_tools};
use crate::client::wire::{ToolSpec, WireMessage};
use crate::context::{Assembly, build_messages, build_text_messages, with_workspace};
use crate::session::Message;

/// The temperature at least of a request that asks again for a reply set
/// aside, when one is sent.
pub(super) const AGAIN_TEMPERATURE: f64 = 0.5;

/// How tool calls and reasoning travel with the session's server.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Shape {
    /// Tools are described in the prompt and calls read from the text.
    pub(super) text_tools: bool,
    /// The model's responses open inside a think block.
    pub(super) think_open: bool,
}

/// The request's fixed parts and their shape.
pub(super) struct Request {
    /// The system prompt's parts, for the prompt and context reports.
    context: Assembly,
    /// The system prompt without tool descriptions: the same everywhere
    /// for one agent (its prompt follows offcode's).
    base_system: String,
    /// The workspace block that opens the first user message.
    workspace: String,
    /// Every tool offered, however it reaches the model.
    tools: Vec<ToolSpec>,
    /// How tools and reasoning travel.
    shape: Shape,
    /// Text calls are wanted (they are used when there are tools).
    text_wanted: bool,
    /// The model writes its calls as text even when they could go
    /// natively (a small model, or one whose calls so far all came from
    /// its text): words before a call do not make it an example.
    text_caller: bool,
    /// Calls the model was just told to send alone: for the next
    /// response only.
    meant: Vec<crate::client::inline::TextCall>,
    /// The next request asks again for a reply set aside: sampled
    /// hotter, for another answer than the last.
    hotter: bool,
}

impl Request {
    pub(super) fn new(context: Assembly, tools: Vec<ToolSpec>) -> Self {
        Self {
            base_system: context.system_prompt(),
            workspace: context.workspace(),
            context,
            tools,
            shape: Shape::default(),
            text_wanted: false,
            text_caller: false,
            meant: Vec::new(),
            hotter: false,
        }
    }

    /// The system prompt's parts.
    pub(super) fn context(&self) -> &Assembly {
        &self.context
    }

    /// Every tool offered, however it travels.
    pub(super) fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// An agent's prompt after offcode's, and the tools it is offered.
    /// `compact`: the compact base prompt, for a small model, which
    /// writes its calls as text.
    pub(super) fn set_agent(&mut self, prompt: &str, tools: Vec<ToolSpec>, compact: bool) {
        self.context.set_compact(compact);
        self.text_caller |= compact;
        self.base_system = self.context.system_prompt();
        if !prompt.is_empty() {
            self.base_system.push_str("\n\n");
            self.base_system.push_str(prompt);
        }
        self.tools = tools;
        self.set_text_tools(self.text_wanted);
    }

    /// How tools and reasoning travel now.
    pub(super) fn shape(&self) -> Shape {
        self.shape
    }

    /// Tools described in the prompt (`true`, when there are any) or sent
    /// as definitions.
    pub(super) fn set_text_tools(&mut self, text: bool) {
        self.text_wanted = text;
        self.shape.text_tools = text && !self.tools.is_empty();
    }

    /// Whether the model's responses open inside a think block.
    pub(super) fn set_think_open(&mut self, open: bool) {
        self.shape.think_open = open;
    }

    /// The tool definitions sent with a request (none in text mode).
    pub(super) fn specs(&self) -> &[ToolSpec] {
        if self.shape.text_tools {
            &[]
        } else {
            &self.tools
        }
    }

    /// The system prompt as sent: with the tools described in text mode.
    pub(super) fn system(&self) -> Cow<'_, str> {
        if self.shape.text_tools {
            Cow::Owned(format!(
                "{}\n\n{}",
                self.base_system,
                describe_tools(&self.tools)
            ))
        } else {
            Cow::Borrowed(&self.base_system)
        }
    }

    /// The request's messages for `history`: the system message, then
    /// the conversation with the workspace block opening it.
    pub(super) fn messages(&self, history: &[Message]) -> Vec<WireMessage> {
        let messages = if self.shape.text_tools {
            build_text_messages(&self.system(), history)
        } else {
            build_messages(&self.system(), history)
        };
        with_workspace(messages, &self.workspace)
    }

    /// The model wrote a call as text: it is read as a text caller's from
    /// now on.
    pub(super) fn wrote_call_as_text(&mut self) {
        self.text_caller = true;
    }

    /// The calls the next response may send among words (the model was
    /// told to send them alone); none after it.
    pub(super) fn set_meant(&mut self, meant: Vec<crate::client::inline::TextCall>) {
        self.meant = meant;
    }

    /// The next request asks again for a reply set aside.
    pub(super) fn ask_again(&mut self) {
        self.hotter = true;
    }

    /// Whether this request asks again for a reply set aside (once).
    pub(super) fn take_hotter(&mut self) -> bool {
        std::mem::take(&mut self.hotter)
    }

    /// A parser for the next response's text.
    pub(super) fn inline_parser(&self) -> InlineParser {
        InlineParser::new(
            &self.tools,
            self.shape.think_open,
            self.shape.text_tools || self.text_caller,
        )
        .with_meant(self.meant.clone())
    }
}

/// The temperature sent: at least [`AGAIN_TEMPERATURE`] when the request
/// asks again (`hot`) and one is sent at all.
pub(super) fn heated(temperature: Option<f64>, hot: bool) -> Option<f64> {
    temperature.map(|t| if hot { t.max(AGAIN_TEMPERATURE) } else { t })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::wire::FunctionSpec;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            kind: "function",
            function: FunctionSpec {
                name: name.to_owned(),
                description: format!("The {name} tool"),
                parameters: serde_json::json!({"type": "object"}),
            },
        }
    }

    #[test]
    fn the_prompt_and_the_tools_sent_follow_the_shape() {
        let mut request = Request::new(Assembly::default(), vec![spec("read")]);
        let base = request.system().into_owned();
        assert_eq!(request.specs().len(), 1);
        request.set_text_tools(true);
        assert!(request.specs().is_empty());
        assert!(request.system().starts_with(&base));
        assert!(request.system().contains("The read tool"));
        request.set_text_tools(false);
        assert_eq!(request.system(), base);
        assert_eq!(request.specs().len(), 1);
        // Without tools there is nothing to describe.
        let mut toolless = Request::new(Assembly::default(), Vec::new());
        toolless.set_text_tools(true);
        assert!(!toolless.shape().text_tools);
    }
}
