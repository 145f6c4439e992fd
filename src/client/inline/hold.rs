//! The modes that hold text while deciding what it is: a `<tool_call>` or
//! `<tools>` block, Mistral calls, a JSON object, a code fence. Each push searches
//! only what is new ([`Hold`]), so a long call stays linear.

use super::calls::{
    disowned, parse_arguments_of, parse_bare, parse_mistral, parse_tagged, parse_tools,
};
use super::{FENCE, InlineParser, MAX_HOLD, MISTRAL, Mode, Out, Tag};

/// How far held text was searched, so each push scans only what is new.
#[derive(Debug, Default)]
pub(super) struct Hold {
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
    pub(super) fn fence_line(&mut self, text: &str) -> Option<usize> {
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
    pub(super) fn tagged(&mut self, tag: Tag, end: bool, out: &mut Vec<Out>) -> bool {
        let (open, close_tag) = (tag.open(), tag.close());
        // What follows the tag must look like a call, or it was a mention.
        match self.buf[open.len()..].trim_start().chars().next() {
            None if !end => return false,
            Some('{' | '<' | '`' | '[') => {}
            None | Some(_) => {
                self.give_up_at(open.len(), out);
                return true;
            }
        }
        let from = self.hold.resume(&self.buf, close_tag, open.len());
        let close = self.buf[from..].find(close_tag).map(|i| from + i);
        // Another opening tag first: the first one was a mention.
        if let Some(again) = self.buf[from..].find(open).map(|i| from + i)
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
            Some(at) => (at, at + close_tag.len()),
            None => (self.buf.len(), self.buf.len()),
        };
        // Words after the closing tag on its line make the block a
        // mention ("<tool_call>…</tool_call> which I will not follow").
        let after = &self.buf[raw_end..];
        let line_rest = after.split('\n').next().unwrap_or("");
        if !after.contains('\n') && !end && line_rest.trim().is_empty() {
            // The next search finds the same closing tag.
            self.hold.searched = raw_end;
            return false;
        }
        if !line_rest.trim().is_empty() {
            let rest = self.buf.split_off(raw_end);
            let raw = std::mem::replace(&mut self.buf, rest);
            self.mode = Mode::Text;
            self.content(&raw, out);
            self.line_start = false;
            return true;
        }
        let body = &self.buf[open.len()..body_end];
        let calls = match tag {
            // "Never run this: <tool_call>…": shown, not meant.
            _ if disowned(&self.visible) => None,
            Tag::ToolCall => parse_tagged(body, &self.schemas).map(|call| vec![call]),
            Tag::Tools => parse_tools(body, &self.schemas),
        };
        let rest = self.buf.split_off(raw_end);
        let raw = std::mem::replace(&mut self.buf, rest);
        self.mode = Mode::Text;
        match calls {
            Some(calls) => {
                self.release_tentative();
                self.calls.extend(calls);
                self.trim_next = true;
            }
            None => self.content(&raw, out),
        }
        true
    }

    pub(super) fn mistral(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
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

    pub(super) fn json(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
        let Some(close) = self.hold.json.advance(&self.buf) else {
            // A code fence first means this was code, not a call: the
            // fence goes back to be read as one.
            if let Some(fence) = self.hold.fence_line(&self.buf) {
                self.give_up_at(fence, out);
                self.line_start = true;
                return true;
            }
            if end {
                // The response ended inside the object: a call whose last
                // braces were never written is still one.
                let raw = std::mem::take(&mut self.buf);
                self.mode = Mode::Text;
                self.bare(raw, out);
                return true;
            }
            if self.buf.len() > MAX_HOLD {
                self.give_up(out);
                return true;
            }
            return false;
        };
        // The object must end its line; stray closing brackets after it go
        // with it (a small model's extra brace), for the repair to judge.
        let after = &self.buf[close..];
        let line_rest = after.split('\n').next().unwrap_or("");
        let stray = line_rest.len() - line_rest.trim_start_matches(['}', ']', ' ', '\t']).len();
        if !line_rest[stray..].trim().is_empty() {
            self.give_up_at(close, out);
            return true;
        }
        let close = close + stray;
        let after = &self.buf[close..];
        if !after.contains('\n') && !end {
            return false;
        }
        let rest = self.buf.split_off(close);
        let raw = std::mem::replace(&mut self.buf, rest);
        self.mode = Mode::Text;
        self.bare(raw, out);
        true
    }

    pub(super) fn fence(&mut self, end: bool, out: &mut Vec<Out>) -> bool {
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
        if !matches!(first, '{' | '[') || !json_fence {
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

    /// A bare JSON call candidate (or several): held until the text after
    /// it decides. The raw text rides with the last, so it is shown once if
    /// they turn out to be an example.
    fn bare_with(&mut self, raw: String, inner: &str, out: &mut Vec<Out>) {
        let alone = self.visible.trim().is_empty() || (self.text_mode && !disowned(&self.visible));
        // A tool's name alone on the line before, then its arguments.
        let named = || {
            if disowned(&self.visible) {
                return None;
            }
            let name = name_line(&self.visible)?;
            parse_arguments_of(name, inner, &self.schemas).map(|call| vec![call])
        };
        let parsed = parse_bare(inner, &self.schemas);
        // A call the model was told to send alone, sent among words.
        if !alone && let Some(calls) = parsed.as_ref().filter(|c| self.all_meant(c)) {
            self.line_start = true;
            self.calls.extend(calls.iter().cloned());
            return;
        }
        match parsed.filter(|_| alone).or_else(named) {
            Some(mut calls) => {
                self.line_start = true;
                let last = calls.pop();
                self.tentative
                    .extend(calls.into_iter().map(|call| (call, String::new())));
                self.tentative.extend(last.map(|call| (call, raw)));
            }
            None => self.content(&raw, out),
        }
    }

    /// Whether the text shown so far leaves the held calls alone: nothing
    /// but whitespace, or the one held call's name on a line of its own.
    pub(super) fn alone_with_tentative(&self) -> bool {
        self.visible.trim().is_empty()
            || matches!(self.tentative.as_slice(), [(call, _)] if name_line(&self.visible) == Some(call.name.as_str()))
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

/// The text, when it is nothing but one word on a line (a tool's name,
/// maybe in backticks or bold, maybe with a colon): `read`, `**bash**:`.
fn name_line(visible: &str) -> Option<&str> {
    let name = visible
        .trim()
        .trim_end_matches([':', '：'])
        .trim_matches(|c| matches!(c, '`' | '*' | '#' | ' '));
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
    .then_some(name)
}
