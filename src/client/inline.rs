//! Tool calls and reasoning that a server left inside the streamed text.
//!
//! A vLLM started without `--tool-call-parser` or `--reasoning-parser`
//! passes the model's markup through as content. [`InlineParser`] reads
//! that content as it streams and splits it into what a user should see,
//! what was reasoning and which tool calls were asked for:
//!
//! - `<think>…</think>` at the start of a response is reasoning; a lone
//!   `</think>` means everything before it was (the template opened the
//!   block in the prompt).
//! - `<tool_call>{"name":…,"arguments":…}</tool_call>` (Hermes, Qwen), also
//!   the Qwen3-Coder form `<function=NAME><parameter=K>V</parameter>…`.
//! - `<tools>…</tools>` holding calls as JSON, `<function name="NAME"
//!   arguments='{…}'/>` or `<function><name>NAME</name><arguments>{…}
//!   </arguments></function>`; each must name a known tool with arguments
//!   that fit it (the template's own `<tools>` lists schemas, not calls).
//! - `[TOOL_CALLS][{…}]` and `[TOOL_CALLS]NAME[ARGS]{…}` (Mistral).
//! - A bare JSON object naming a known tool, on lines of its own or as a
//!   fenced block, with valid arguments, and with nothing but other calls
//!   after it. Anything else that merely mentions a tool stays text.
//!
//! Reasoning is never searched for calls, and text inside a code block is
//! never taken for markup. Every split of the input gives the same result.

use std::collections::HashMap;

use serde_json::Value;

use super::wire::ToolSpec;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const CALL_OPEN: &str = "<tool_call>";
const CALL_CLOSE: &str = "</tool_call>";
const TOOLS_OPEN: &str = "<tools>";
const TOOLS_CLOSE: &str = "</tools>";
const MISTRAL: &str = "[TOOL_CALLS]";
const FENCE: &str = "```";
/// Text held while deciding whether it is a call; beyond this it is text.
const MAX_HOLD: usize = 256 * 1024;
/// Indentation held while waiting to see what the line holds.
const MAX_INDENT: usize = 256;

/// A tool call read from the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextCall {
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// What the parser found, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// Text for the user.
    Content(String),
    /// Reasoning.
    Reasoning(String),
    /// All the content given so far in this response was reasoning (a
    /// lone `</think>` arrived): move it.
    WasReasoning(String),
    /// The reasoning given so far was the answer after all (a response
    /// presumed to open with reasoning never closed it): move it back.
    WasContent(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Think { presumed: bool },
    Tagged(Tag),
    Mistral,
    Json,
    Fence,
}

/// Splits one response's content; see the module docs.
#[derive(Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent flags of one scanner"
)]
pub struct InlineParser {
    schemas: HashMap<String, Value>,
    mode: Mode,
    /// Text not yet classified.
    buf: String,
    /// The next content starts a line.
    line_start: bool,
    /// Inside a fenced code block given as text.
    in_code: bool,
    /// Drop whitespace before the answer after `</think>`.
    trim_next: bool,
    /// Content given so far.
    visible: String,
    /// Inline reasoning given so far.
    thought: String,
    /// A think tag was handled (only the first one counts).
    saw_think: bool,
    lone_close: bool,
    calls: Vec<TextCall>,
    /// Bare JSON calls: calls only if no text follows them.
    tentative: Vec<(TextCall, String)>,
    /// Tools are described in the prompt: a bare JSON call may follow
    /// prose. Otherwise it must be all the response says.
    text_mode: bool,
    /// Where searches of held text resume.
    hold: Hold,
    /// Bytes of content taken in.
    taken: usize,
    /// Calls the model was told it wrote as examples and to send alone:
    /// written again, words or not, they are meant.
    meant: Vec<TextCall>,
}

impl InlineParser {
    /// A parser for one response. `tools` are the tools offered (bare JSON
    /// is checked against them); `starts_in_reasoning` when this model's
    /// responses open inside a think block (seen earlier in the session).
    pub fn new(tools: &[ToolSpec], starts_in_reasoning: bool, text_mode: bool) -> Self {
        Self {
            schemas: calls::schemas(tools),
            mode: if starts_in_reasoning {
                Mode::Think { presumed: true }
            } else {
                Mode::Text
            },
            buf: String::new(),
            line_start: true,
            in_code: false,
            trim_next: false,
            visible: String::new(),
            thought: String::new(),
            saw_think: starts_in_reasoning,
            lone_close: false,
            calls: Vec::new(),
            tentative: Vec::new(),
            text_mode,
            hold: Hold::default(),
            taken: 0,
            meant: Vec::new(),
        }
    }

    /// Calls the model was told to send alone, after writing them among
    /// words: written again (the same tool and arguments), they run
    /// whatever words come with them; they are no longer a mention.
    #[must_use]
    pub fn with_meant(mut self, meant: Vec<TextCall>) -> Self {
        self.meant = meant;
        self
    }

    /// Whether every one of `calls` is one the model was told to send.
    fn all_meant(&self, calls: &[TextCall]) -> bool {
        !calls.is_empty()
            && calls.iter().all(|call| {
                self.meant.iter().any(|m| {
                    m.name == call.name
                        && serde_json::from_str::<Value>(&m.arguments).ok()
                            == serde_json::from_str::<Value>(&call.arguments).ok()
                })
            })
    }

    /// Whether a lone `</think>` was seen: later responses of this model
    /// open inside reasoning.
    pub fn saw_lone_close(&self) -> bool {
        self.lone_close
    }

    /// Whether inline reasoning was found.
    pub fn saw_reasoning(&self) -> bool {
        self.saw_think && !self.thought.is_empty()
    }

    /// The content given so far.
    pub fn visible(&self) -> &str {
        &self.visible
    }

    /// Bytes taken in but neither shown as text nor as reasoning yet: what
    /// is held while it may be a call, and calls found.
    pub fn unshown(&self) -> usize {
        self.taken
            .saturating_sub(self.visible.len() + self.thought.len())
    }

    /// Takes in a content delta.
    pub fn push(&mut self, delta: &str) -> Vec<Out> {
        self.taken += delta.len();
        self.buf.push_str(delta);
        let mut out = Vec::new();
        self.drain(false, &mut out);
        out
    }

    /// The end of the response (`cut_short`: it stopped at the output
    /// limit): what was held is decided, and the calls found are returned.
    pub fn finish(&mut self, cut_short: bool) -> (Vec<Out>, Vec<TextCall>) {
        let mut out = Vec::new();
        if let Mode::Think { presumed } = self.mode {
            // A think block that never closed is shown as the answer, so
            // nothing is lost. Calls are taken from it only when the model
            // was presumed to think, did not, and was not cut off: text
            // that was reasoning never runs a tool.
            let thought = std::mem::take(&mut self.thought);
            let opening = if presumed { "" } else { THINK_OPEN };
            let text = format!("{opening}{thought}{}", std::mem::take(&mut self.buf));
            out.push(Out::WasContent(thought));
            let mut found = self.take_calls();
            if presumed && !cut_short {
                let mut fresh = Self::new(&[], false, self.text_mode);
                fresh.schemas = std::mem::take(&mut self.schemas);
                fresh.saw_think = true;
                out.extend(fresh.push(&text));
                let (rest, calls) = fresh.finish(cut_short);
                out.extend(rest);
                self.visible.push_str(&fresh.visible);
                found.extend(calls);
            } else {
                self.emit(&text, &mut out);
            }
            return (out, found);
        }
        self.drain(true, &mut out);
        if !self.text_mode && !self.alone_with_tentative() {
            // Native tool calls work: a bare object after prose is an
            // example the answer shows.
            self.flush_tentative(&mut out);
        }
        let found = self.take_calls();
        (out, found)
    }

    fn take_calls(&mut self) -> Vec<TextCall> {
        let tentative = std::mem::take(&mut self.tentative);
        self.calls
            .extend(tentative.into_iter().map(|(call, _)| call));
        std::mem::take(&mut self.calls)
    }

    /// Starts holding text in `mode`.
    fn enter(&mut self, mode: Mode) {
        self.mode = mode;
        self.hold = Hold::default();
    }

    fn content(&mut self, text: &str, out: &mut Vec<Out>) {
        if text.is_empty() {
            return;
        }
        // Text after a bare JSON call makes it an example, not a call;
        // whitespace waits with it.
        if let Some((_, raw)) = self.tentative.last_mut()
            && text.trim().is_empty()
        {
            raw.push_str(text);
            return;
        }
        self.flush_tentative(out);
        self.emit(text, out);
    }

    /// Held bare calls with words after them: an example, shown as text,
    /// unless the model was told to send them and did.
    fn flush_tentative(&mut self, out: &mut Vec<Out>) {
        if self.tentative.is_empty() {
            return;
        }
        let calls: Vec<TextCall> = self.tentative.iter().map(|(c, _)| c.clone()).collect();
        if self.all_meant(&calls) {
            self.tentative.clear();
            self.calls.extend(calls);
            return;
        }
        let held: String = self.tentative.drain(..).map(|(_, raw)| raw).collect();
        self.emit(&held, out);
    }

    fn emit(&mut self, text: &str, out: &mut Vec<Out>) {
        self.line_start = text.ends_with('\n');
        self.visible.push_str(text);
        match out.last_mut() {
            Some(Out::Content(last)) => last.push_str(text),
            _ => out.push(Out::Content(text.to_owned())),
        }
    }

    fn reasoning(&mut self, text: &str, out: &mut Vec<Out>) {
        if text.is_empty() {
            return;
        }
        self.thought.push_str(text);
        match out.last_mut() {
            Some(Out::Reasoning(last)) => last.push_str(text),
            _ => out.push(Out::Reasoning(text.to_owned())),
        }
    }

    fn drain(&mut self, end: bool, out: &mut Vec<Out>) {
        loop {
            let progressed = match self.mode {
                Mode::Think { .. } => self.think(end, out),
                Mode::Text => self.text(end, out),
                Mode::Tagged(tag) => self.tagged(tag, end, out),
                Mode::Mistral => self.mistral(end, out),
                Mode::Json => self.json(end, out),
                Mode::Fence => self.fence(end, out),
            };
            if !progressed {
                return;
            }
        }
    }

    fn think(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
        if let Some(at) = self.buf.find(THINK_CLOSE) {
            let rest = self.buf.split_off(at);
            let thought = std::mem::replace(&mut self.buf, rest[THINK_CLOSE.len()..].to_owned());
            self.reasoning(&thought, out);
            self.mode = Mode::Text;
            self.trim_next = true;
            self.line_start = true;
            return true;
        }
        let keep = if end {
            0
        } else {
            partial_suffix(&self.buf, &[THINK_CLOSE])
        };
        let rest = self.buf.split_off(self.buf.len() - keep);
        let thought = std::mem::replace(&mut self.buf, rest);
        self.reasoning(&thought, out);
        false
    }

    fn text(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
        if self.trim_next {
            let trimmed = self.buf.trim_start().len();
            self.buf.drain(..self.buf.len() - trimmed);
            if self.buf.is_empty() {
                return false;
            }
            self.trim_next = false;
        }
        let Some((at, marker)) = self.next_marker() else {
            let keep = if end { 0 } else { self.holdback() };
            let rest = self.buf.split_off(self.buf.len() - keep);
            let text = std::mem::replace(&mut self.buf, rest);
            self.content(&text, out);
            return false;
        };
        let rest = self.buf.split_off(at);
        let before = std::mem::replace(&mut self.buf, rest);
        match marker {
            Marker::ThinkOpen => {
                if self.saw_think || !(self.visible.trim().is_empty() && before.trim().is_empty()) {
                    // A mention: a closing tag later is one too.
                    self.saw_think = true;
                    self.content(&before, out);
                    let tag: String = self.buf.drain(..THINK_OPEN.len()).collect();
                    self.content(&tag, out);
                } else {
                    self.saw_think = true;
                    self.buf.drain(..THINK_OPEN.len());
                    self.mode = Mode::Think { presumed: false };
                }
            }
            Marker::ThinkClose => {
                let line_so_far = format!("{}{before}", self.visible);
                let line_so_far = line_so_far.rsplit('\n').next().unwrap_or("");
                let in_inline_code = line_so_far.matches('`').count() % 2 == 1;
                if self.saw_think
                    || in_inline_code
                    || !self.calls.is_empty()
                    || !self.tentative.is_empty()
                {
                    self.content(&before, out);
                    let tag: String = self.buf.drain(..THINK_CLOSE.len()).collect();
                    self.content(&tag, out);
                } else {
                    // The block was opened in the prompt: all so far was
                    // reasoning.
                    let text = std::mem::take(&mut self.visible) + &before;
                    self.buf.drain(..THINK_CLOSE.len());
                    self.saw_think = true;
                    self.lone_close = true;
                    self.thought.push_str(&text);
                    out.push(Out::WasReasoning(text));
                    self.trim_next = true;
                    self.line_start = true;
                }
            }
            Marker::Call(tag) => {
                // A tag inside a sentence (or a quote, or backticks) is a
                // mention: a call's tag opens its line.
                let line_so_far = format!("{}{before}", self.visible);
                let line_so_far = line_so_far.rsplit('\n').next().unwrap_or("");
                self.content(&before, out);
                if line_so_far.trim().is_empty() {
                    self.enter(Mode::Tagged(tag));
                } else {
                    let open = match tag {
                        Tag::ToolCall => CALL_OPEN,
                        Tag::Tools => TOOLS_OPEN,
                    };
                    let text: String = self.buf.drain(..open.len()).collect();
                    self.content(&text, out);
                }
            }
            Marker::Mistral => {
                self.content(&before, out);
                self.enter(Mode::Mistral);
            }
            Marker::Brace => {
                self.content(&before, out);
                self.enter(Mode::Json);
            }
            Marker::Fence => {
                self.content(&before, out);
                self.enter(Mode::Fence);
            }
            Marker::CloseFence => {
                self.content(&before, out);
                let fence: String = self.buf.drain(..FENCE.len()).collect();
                self.in_code = false;
                self.content(&fence, out);
            }
        }
        true
    }

    /// The first markup in the buffer.
    fn next_marker(&self) -> Option<(usize, Marker)> {
        fn consider(best: &mut Option<(usize, Marker)>, at: Option<usize>, marker: Marker) {
            if let Some(at) = at
                && best.is_none_or(|(b, _)| at < b)
            {
                *best = Some((at, marker));
            }
        }
        let mut best: Option<(usize, Marker)> = None;
        if !self.in_code {
            consider(&mut best, self.buf.find(THINK_OPEN), Marker::ThinkOpen);
            consider(&mut best, self.buf.find(THINK_CLOSE), Marker::ThinkClose);
            consider(
                &mut best,
                self.buf.find(CALL_OPEN),
                Marker::Call(Tag::ToolCall),
            );
            consider(
                &mut best,
                self.buf.find(TOOLS_OPEN),
                Marker::Call(Tag::Tools),
            );
            consider(&mut best, self.buf.find(MISTRAL), Marker::Mistral);
        }
        // Line starts: a JSON object or a code fence.
        let mut start = 0;
        let mut first = self.line_start;
        loop {
            if first {
                let indent = self.buf[start..]
                    .find(|c: char| c != ' ' && c != '\t')
                    .map(|i| start + i);
                if let Some(at) = indent {
                    let line = &self.buf[at..];
                    if line.starts_with(FENCE) {
                        let marker = if self.in_code {
                            Marker::CloseFence
                        } else {
                            Marker::Fence
                        };
                        consider(&mut best, Some(at), marker);
                        break;
                    }
                    if !self.in_code && line.starts_with('{') {
                        consider(&mut best, Some(at), Marker::Brace);
                        break;
                    }
                }
            }
            match self.buf[start..].find('\n') {
                Some(i) if best.is_none_or(|(b, _)| start + i < b) => {
                    start += i + 1;
                    first = true;
                }
                _ => break,
            }
        }
        best
    }

    /// Bytes at the end of the buffer that may begin markup.
    fn holdback(&self) -> usize {
        let tags = if self.in_code {
            0
        } else {
            partial_suffix(
                &self.buf,
                &[THINK_OPEN, THINK_CLOSE, CALL_OPEN, TOOLS_OPEN, MISTRAL],
            )
        };
        // An unfinished line of only indentation or backticks may become a
        // fence or a JSON object.
        let line_begin = match self.buf.rfind('\n') {
            Some(i) => i + 1,
            None if self.line_start => 0,
            None => return tags,
        };
        let line = &self.buf[line_begin..];
        let undecided = line.trim_start_matches([' ', '\t']);
        // A line of nothing but spaces is not held for ever.
        if (undecided.is_empty() && line.len() <= MAX_INDENT)
            || (undecided.len() < FENCE.len() && undecided.bytes().all(|b| b == b'`'))
        {
            tags.max(self.buf.len() - line_begin)
        } else {
            tags
        }
    }
}

/// The tags calls come wrapped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// `<tool_call>…</tool_call>`: one call (Hermes, Qwen).
    ToolCall,
    /// `<tools>…</tools>`: several, as JSON or `<function …>` elements
    /// (small Qwen models echo the template's wrapper).
    Tools,
}

impl Tag {
    fn open(self) -> &'static str {
        match self {
            Self::ToolCall => CALL_OPEN,
            Self::Tools => TOOLS_OPEN,
        }
    }

    fn close(self) -> &'static str {
        match self {
            Self::ToolCall => CALL_CLOSE,
            Self::Tools => TOOLS_CLOSE,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    ThinkOpen,
    ThinkClose,
    Call(Tag),
    Mistral,
    Brace,
    Fence,
    CloseFence,
}

/// The length of the longest end of `text` that begins one of `tags`.
fn partial_suffix(text: &str, tags: &[&str]) -> usize {
    tags.iter()
        .flat_map(|tag| (1..tag.len()).rev().map(move |n| (tag, n)))
        .filter(|(tag, n)| text.ends_with(&tag[..*n]))
        .map(|(_, n)| n)
        .max()
        .unwrap_or(0)
}

mod calls;
mod hold;
mod repair;
#[cfg(test)]
mod tests;
mod unrun;

use hold::Hold;
pub use unrun::{describe_tools, example_call, unrun_call, unrun_call_as};
