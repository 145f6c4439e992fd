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
//! - `[TOOL_CALLS][{…}]` and `[TOOL_CALLS]NAME[ARGS]{…}` (Mistral).
//! - A bare JSON object naming a known tool, on lines of its own or as a
//!   fenced block, with valid arguments, and with nothing but other calls
//!   after it. Anything else that merely mentions a tool stays text.
//!
//! Reasoning is never searched for calls, and text inside a code block is
//! never taken for markup. Every split of the input gives the same result.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::wire::ToolSpec;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const CALL_OPEN: &str = "<tool_call>";
const CALL_CLOSE: &str = "</tool_call>";
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
    Tagged,
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
}

/// How far held text was searched, so each push scans only what is new.
#[derive(Debug, Default)]
struct Hold {
    /// Bytes of the buffer already searched for a closing tag.
    searched: usize,
    /// The start of the first line not yet known to be complete.
    line_at: usize,
    /// Bytes searched for line ends.
    lines_searched: usize,
    /// The JSON object scan.
    json: JsonScan,
}

impl Hold {
    /// The start of the first line after the first one that opens with a
    /// code fence (indented or not).
    fn fence_line(&mut self, text: &str) -> Option<usize> {
        loop {
            let line = text[self.line_at..].trim_start_matches([' ', '\t']);
            if self.line_at > 0 && line.starts_with(FENCE) {
                return Some(self.line_at);
            }
            let from = self.lines_searched.max(self.line_at);
            let Some(i) = text[from..].find('\n') else {
                self.lines_searched = text.len();
                return None;
            };
            self.line_at = from + i + 1;
            self.lines_searched = self.line_at;
        }
    }

    /// Where to resume a search for `tag` in `text`.
    fn resume(&self, text: &str, tag: &str, floor: usize) -> usize {
        let mut at = self.searched.saturating_sub(tag.len()).max(floor);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }
}

/// An incremental scan for the end of the JSON object a text starts with.
#[derive(Debug, Default)]
struct JsonScan {
    /// Where the object ended, once it did.
    end: Option<usize>,
    pos: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl JsonScan {
    /// Just past the object's closing brace, once it has arrived.
    fn advance(&mut self, text: &str) -> Option<usize> {
        if self.end.is_some() {
            return self.end;
        }
        let bytes = text.as_bytes();
        while self.pos < bytes.len() {
            let byte = bytes[self.pos];
            self.pos += 1;
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.end = Some(self.pos);
                        return self.end;
                    }
                }
                _ => {}
            }
        }
        None
    }
}

impl InlineParser {
    /// A parser for one response. `tools` are the tools offered (bare JSON
    /// is checked against them); `starts_in_reasoning` when this model's
    /// responses open inside a think block (seen earlier in the session).
    pub fn new(tools: &[ToolSpec], starts_in_reasoning: bool, text_mode: bool) -> Self {
        Self {
            schemas: tools
                .iter()
                .map(|t| (t.function.name.clone(), t.function.parameters.clone()))
                .collect(),
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
        }
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

    /// Takes in a content delta.
    pub fn push(&mut self, delta: &str) -> Vec<Out> {
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
        if !self.text_mode && !self.visible.trim().is_empty() {
            // Native tool calls work: a bare object after prose is an
            // example the answer shows.
            let held: String = self.tentative.drain(..).map(|(_, raw)| raw).collect();
            self.emit(&held, &mut out);
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
        if !self.tentative.is_empty() {
            let held: String = self.tentative.drain(..).map(|(_, raw)| raw).collect();
            self.emit(&held, out);
        }
        self.emit(text, out);
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
                Mode::Tagged => self.tagged(end, out),
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
            Marker::Call => {
                self.content(&before, out);
                self.enter(Mode::Tagged);
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
            consider(&mut best, self.buf.find(CALL_OPEN), Marker::Call);
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
            partial_suffix(&self.buf, &[THINK_OPEN, THINK_CLOSE, CALL_OPEN, MISTRAL])
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

    fn tagged(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
        // What follows the tag must look like a call, or it was a mention.
        match self.buf[CALL_OPEN.len()..].trim_start().chars().next() {
            None if !end => return false,
            Some('{' | '<' | '`' | '[') => {}
            None | Some(_) => {
                self.give_up_at(CALL_OPEN.len(), out);
                return true;
            }
        }
        let from = self.hold.resume(&self.buf, CALL_CLOSE, CALL_OPEN.len());
        let close = self.buf[from..].find(CALL_CLOSE).map(|i| from + i);
        // Another opening tag first: the first one was a mention.
        if let Some(again) = self.buf[from..].find(CALL_OPEN).map(|i| from + i)
            && close.is_none_or(|close| again < close)
        {
            self.give_up_at(again, out);
            return true;
        }
        if close.is_none() && !end {
            if self.buf.len() > MAX_HOLD {
                self.give_up(out);
                return true;
            }
            self.hold.searched = self.buf.len();
            return false;
        }
        let (body_end, raw_end) = match close {
            Some(at) => (at, at + CALL_CLOSE.len()),
            None => (self.buf.len(), self.buf.len()),
        };
        let body = &self.buf[CALL_OPEN.len()..body_end];
        let call = parse_tagged(body, &self.schemas);
        let rest = self.buf.split_off(raw_end);
        let raw = std::mem::replace(&mut self.buf, rest);
        self.mode = Mode::Text;
        match call {
            Some(call) => {
                self.release_tentative();
                self.calls.push(call);
                self.trim_next = true;
            }
            None => self.content(&raw, out),
        }
        true
    }

    fn mistral(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
        // `[TOOL_CALLS]` then `[`, `{` or `NAME[`; anything else is a
        // mention.
        let after = self.buf[MISTRAL.len()..].trim_start();
        let name_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.');
        let plausible = match after.chars().next() {
            None => None,
            Some('[' | '{') => Some(true),
            Some(c) if name_char(c) => after
                .find(|c: char| !name_char(c))
                .map(|i| after[i..].starts_with('[')),
            Some(_) => Some(false),
        };
        if plausible == Some(false) {
            self.give_up_at(MISTRAL.len(), out);
            return true;
        }
        if !end {
            if self.buf.len() > MAX_HOLD {
                self.give_up(out);
                return true;
            }
            return false;
        }
        let raw = std::mem::take(&mut self.buf);
        self.mode = Mode::Text;
        match parse_mistral(&raw) {
            Some(calls) => {
                self.release_tentative();
                self.calls.extend(calls);
            }
            None => self.content(&raw, out),
        }
        true
    }

    fn json(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
        let Some(close) = self.hold.json.advance(&self.buf) else {
            // A code fence first means this was code, not a call: the
            // fence goes back to be read as one.
            if let Some(fence) = self.hold.fence_line(&self.buf) {
                self.give_up_at(fence, out);
                self.line_start = true;
                return true;
            }
            if end || self.buf.len() > MAX_HOLD {
                self.give_up(out);
                return true;
            }
            return false;
        };
        // The object must end its line.
        let after = &self.buf[close..];
        let line_rest = after.split('\n').next().unwrap_or("");
        if !line_rest.trim().is_empty() {
            self.give_up_at(close, out);
            return true;
        }
        if !after.contains('\n') && !end {
            return false;
        }
        let rest = self.buf.split_off(close);
        let raw = std::mem::replace(&mut self.buf, rest);
        self.mode = Mode::Text;
        self.bare(raw, out);
        true
    }

    fn fence(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
        let Some(newline) = self.buf.find('\n') else {
            if end {
                self.give_up(out);
                return true;
            }
            return false;
        };
        let body = &self.buf[newline + 1..];
        let Some(first) = body.trim_start().chars().next() else {
            if end {
                self.give_up(out);
                return true;
            }
            return false;
        };
        let info = self.buf[FENCE.len()..newline].trim().to_ascii_lowercase();
        let json_fence = matches!(info.as_str(), "" | "json" | "jsonc" | "json5" | "tool_call");
        if first != '{' || !json_fence {
            // An ordinary code block: its text is shown as it comes.
            self.mode = Mode::Text;
            self.in_code = true;
            let rest = self.buf.split_off(newline + 1);
            let line = std::mem::replace(&mut self.buf, rest);
            self.content(&line, out);
            return true;
        }
        let Some(close) = self.hold.fence_line(&self.buf) else {
            if end {
                let raw = std::mem::take(&mut self.buf);
                self.mode = Mode::Text;
                let inner = raw[newline + 1..].to_owned();
                self.bare_with(raw, &inner, out);
                return true;
            }
            if self.buf.len() > MAX_HOLD {
                self.give_up(out);
                return true;
            }
            return false;
        };
        // The call ends with the fence; the rest of its line is text
        // after it (which makes it an example, if it says anything).
        let indent =
            self.buf[close..].len() - self.buf[close..].trim_start_matches([' ', '\t']).len();
        let fence_end = close + indent + FENCE.len();
        let inner = self.buf[newline + 1..close].to_owned();
        let rest = self.buf.split_off(fence_end);
        let raw = std::mem::replace(&mut self.buf, rest);
        self.mode = Mode::Text;
        self.line_start = false;
        self.bare_with(raw, &inner, out);
        true
    }

    fn bare(&mut self, raw: String, out: &mut Vec<Out>) {
        let inner = raw.clone();
        self.bare_with(raw, &inner, out);
    }

    /// A bare JSON call candidate: held until the text after it decides.
    fn bare_with(&mut self, raw: String, inner: &str, out: &mut Vec<Out>) {
        let alone = self.text_mode || self.visible.trim().is_empty();
        match parse_bare(inner, &self.schemas).filter(|_| alone) {
            Some(call) => {
                self.line_start = true;
                self.tentative.push((call, raw));
            }
            None => self.content(&raw, out),
        }
    }

    /// Held text turned out to be text.
    fn give_up(&mut self, out: &mut Vec<Out>) {
        let len = self.buf.len();
        self.give_up_at(len, out);
    }

    fn give_up_at(&mut self, at: usize, out: &mut Vec<Out>) {
        let rest = self.buf.split_off(at);
        let text = std::mem::replace(&mut self.buf, rest);
        self.mode = Mode::Text;
        self.content(&text, out);
        if self.buf.is_empty() {
            return;
        }
        // What follows on the same line is plain text too.
        self.line_start = false;
    }

    /// Bare calls followed by a tagged call are calls.
    fn release_tentative(&mut self) {
        let tentative = std::mem::take(&mut self.tentative);
        self.calls
            .extend(tentative.into_iter().map(|(call, _)| call));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    ThinkOpen,
    ThinkClose,
    Call,
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

/// `{"name": …, "arguments": …}` (or `parameters`); arguments may be an
/// object or JSON text. Returns the name and the arguments object.
fn name_and_arguments(value: &Value) -> Option<(String, Value)> {
    let object = value.as_object()?;
    let function = object.get("function").filter(|f| f.is_object());
    let source = function.unwrap_or(value);
    let name = source.get("name")?.as_str()?.trim().to_owned();
    if name.is_empty() {
        return None;
    }
    let arguments = match source.get("arguments").or_else(|| source.get("parameters")) {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        Some(other) => other.clone(),
    };
    Some((name, arguments))
}

fn call(name: String, arguments: &Value) -> TextCall {
    TextCall {
        name,
        arguments: match arguments {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        },
    }
}

/// The body of a `<tool_call>` block. The model clearly meant a call, so
/// any name is taken; the tool checks its arguments and answers errors.
fn parse_tagged(body: &str, schemas: &HashMap<String, Value>) -> Option<TextCall> {
    let body = body.trim();
    if body.starts_with("<function=") {
        return parse_xml_call(body, schemas);
    }
    let body = strip_fence(body);
    // Some servers drop the last brace (vLLM with speculative decoding).
    let value: Value = ["", "}", "}}"]
        .iter()
        .find_map(|end| serde_json::from_str(&format!("{body}{end}")).ok())?;
    let (name, arguments) = name_and_arguments(&value)?;
    Some(call(name, &arguments))
}

/// Qwen3-Coder: `<function=NAME><parameter=K>V</parameter>…</function>`.
fn parse_xml_call(body: &str, schemas: &HashMap<String, Value>) -> Option<TextCall> {
    let rest = body.strip_prefix("<function=")?;
    let (name, mut rest) = rest.split_once('>')?;
    let name = name.trim().to_owned();
    let properties = schemas.get(&name).and_then(|s| s.get("properties"));
    let mut arguments = Map::new();
    while let Some(start) = rest.find("<parameter=") {
        let after = &rest[start + "<parameter=".len()..];
        let (key, after) = after.split_once('>')?;
        let (value, after) = after.split_once("</parameter>")?;
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        let wants_string = properties
            .and_then(|p| p.get(key.trim()))
            .and_then(|p| p.get("type"))
            .is_none_or(|t| t == "string");
        let parsed = if wants_string {
            Value::String(value.to_owned())
        } else {
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()))
        };
        arguments.insert(key.trim().to_owned(), parsed);
        rest = after;
    }
    Some(call(name, &Value::Object(arguments)))
}

fn strip_fence(body: &str) -> &str {
    let Some(inner) = body.strip_prefix(FENCE) else {
        return body;
    };
    let inner = inner.split_once('\n').map_or("", |(_, rest)| rest);
    inner.trim_end().strip_suffix(FENCE).unwrap_or(inner).trim()
}

/// Everything from the first `[TOOL_CALLS]` to the end of the response.
fn parse_mistral(raw: &str) -> Option<Vec<TextCall>> {
    let mut calls = Vec::new();
    for part in raw.split(MISTRAL).skip(1) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if part.starts_with('[') || part.starts_with('{') {
            let value: Value = serde_json::from_str(part).ok()?;
            let items = match value {
                Value::Array(items) => items,
                other => vec![other],
            };
            for item in &items {
                let (name, arguments) = name_and_arguments(item)?;
                calls.push(call(name, &arguments));
            }
        } else {
            let (name, arguments) = part.split_once("[ARGS]")?;
            let name = name.split("[CALL_ID]").next().unwrap_or(name).trim();
            if name.is_empty() {
                return None;
            }
            let arguments: Value = serde_json::from_str(arguments.trim()).ok()?;
            calls.push(call(name.to_owned(), &arguments));
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// A bare JSON object is a call only with a known tool, nothing but the
/// call's keys and arguments that fit the tool's schema.
fn parse_bare(inner: &str, schemas: &HashMap<String, Value>) -> Option<TextCall> {
    let value: Value = serde_json::from_str(inner.trim()).ok()?;
    let object = value.as_object()?;
    let allowed = ["name", "arguments", "parameters", "id", "type", "function"];
    if object.keys().any(|k| !allowed.contains(&k.as_str())) {
        return None;
    }
    let (name, arguments) = name_and_arguments(&value)?;
    let schema = schemas.get(&name)?;
    fits_schema(arguments.as_object()?, schema).then(|| call(name, &arguments))
}

/// Required keys present, declared types right, no unknown keys when the
/// schema forbids them.
fn fits_schema(arguments: &Map<String, Value>, schema: &Value) -> bool {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if required
        .iter()
        .filter_map(Value::as_str)
        .any(|key| !arguments.contains_key(key))
    {
        return false;
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    arguments
        .iter()
        .all(|(key, value)| match properties.and_then(|p| p.get(key)) {
            Some(property) => has_type(value, property.get("type")),
            None => !closed,
        })
}

fn has_type(value: &Value, kind: Option<&Value>) -> bool {
    let one = |kind: &str| match kind {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    };
    match kind {
        Some(Value::String(kind)) => one(kind),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

/// The tools described for a model that reads them from the prompt.
pub fn describe_tools(tools: &[ToolSpec]) -> String {
    let mut text = String::from(
        "# Tools\n\nYou can call these tools. To call one, write a block like this on its own \
         (several blocks for several calls), then stop and wait for the results:\n\n\
         <tool_call>\n{\"name\": \"TOOL\", \"arguments\": {ARGUMENTS}}\n</tool_call>\n\n\
         The results come back in <tool_response> blocks. Only the blocks run tools; \
         never write one you do not mean to run.\n\nThe tools, as JSON schemas:\n",
    );
    for tool in tools {
        let function = serde_json::json!({
            "name": tool.function.name,
            "description": tool.function.description,
            "parameters": tool.function.parameters,
        });
        text.push('\n');
        text.push_str(&function.to_string());
    }
    text
}

#[cfg(test)]
mod tests;
