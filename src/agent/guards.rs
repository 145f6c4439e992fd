//! What a small model's `write` may not do: put a tool call in a file as
//! its text, or rewrite a file that was there before the turn whole.
//! Both were measured on a 1.5B model that ended at exit 0 with the file
//! wrong; a larger model's writes are its own.

use super::intent::lexical;
use super::state::AgentState;
use crate::session::ToolCall;
use crate::tools::{ToolOutput, parse_argument_text};

/// How each refusal here starts: a refusal after the turn changed files
/// is no failure of the task ([`super::finish::Owed`]).
const NOT_WRITTEN: &str = "Not written:";

impl AgentState {
    /// A small model's `write` whose content is nothing but a call to one
    /// of its tools: the 1.5B model wrote its rename's `edit` as
    /// `<tools><function><name>edit</name>…` over shop.py. Refused, so the
    /// file keeps its text; the model is told to send the call itself.
    pub(super) fn call_as_content(&self, call: &ToolCall) -> Option<ToolOutput> {
        if call.name != "write" || !self.compact() {
            return None;
        }
        let arguments = parse_argument_text(&call.arguments).ok()?;
        let content = arguments.get("content")?.as_str()?;
        let mut parser =
            crate::client::inline::InlineParser::new(self.request.tools(), false, true);
        let _ = parser.push(content);
        let (_, calls) = parser.finish(false);
        let first = calls.first()?;
        parser.visible().trim().is_empty().then(|| ToolOutput {
            held_back: true,
            denied: false,
            ..ToolOutput::error(format!(
                "{NOT_WRITTEN} the content is a call to `{}`, not the file's text. To make that call, send it alone in your message.",
                first.name
            ))
        })
    }

    /// A small model's `write` over a file that existed before the turn's
    /// first write of it: refused, the model is told to use `edit`. At
    /// llama.cpp's own sampling the 1.5B model rewrote shop.py with
    /// main.py's text, and calc.py with imports, and ended at exit 0.
    pub(super) fn whole_rewrite(&mut self, call: &ToolCall) -> Option<ToolOutput> {
        if call.name != "write" || !self.compact() {
            return None;
        }
        let arguments = parse_argument_text(&call.arguments).ok()?;
        let path = arguments["path"].as_str()?;
        let target = lexical(&self.sandbox.relative(path).ok()?);
        if self.permits.creating.contains(&target) {
            return None;
        }
        if self.sandbox.open(path, rustix::fs::OFlags::RDONLY).is_err() {
            // New: this turn may write it whole, now and again.
            self.permits.creating.insert(target);
            return None;
        }
        Some(ToolOutput {
            held_back: true,
            denied: false,
            ..ToolOutput::error(format!(
                "{NOT_WRITTEN} `{path}` already exists. Change it with `edit` (old_string: the exact text to replace, new_string: what replaces it), so the rest of the file stays as it is."
            ))
        })
    }
}
