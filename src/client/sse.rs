//! A byte-level Server-Sent Events parser (WHATWG event-stream rules).
//!
//! Bytes may arrive in any slicing: a line ending (`\n`, `\r\n`, `\r`) or a
//! UTF-8 character may be split across reads and the result is the same. Only
//! `data:` fields matter to chat completions; comments are reported so the
//! caller can count them as activity, and llama.cpp's `error:` lines are
//! reported as errors. Bytes after the last line ending at the end of the body
//! are an incomplete event and are dropped.

/// Largest event accepted (a whole `data:` payload), to bound memory.
pub const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// One thing the parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A complete event's data (lines joined with `\n`).
    Data(Vec<u8>),
    /// A `:` comment line (a keep-alive).
    Comment,
    /// An `error:` line (llama.cpp writes errors this way).
    ErrorLine(Vec<u8>),
}

/// The stream broke the parser's limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("An event is larger than {MAX_EVENT_BYTES} bytes")]
pub struct TooLarge;

/// Incremental SSE parser.
#[derive(Debug, Default)]
pub struct SseParser {
    /// The unfinished line carried over from earlier input.
    line: Vec<u8>,
    /// Data of the event being built.
    data: Vec<u8>,
    /// Whether a `data` field was seen since the last dispatch.
    has_data: bool,
    /// The last input ended in `\r`: a leading `\n` next completes that ending.
    after_cr: bool,
}

impl SseParser {
    /// Parses `input`, appending what it completes to `out`.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<SseItem>) -> Result<(), TooLarge> {
        if self.after_cr && input.first() == Some(&b'\n') {
            input = &input[1..];
        }
        self.after_cr = false;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', input) {
            let ending_len = match (input[end], input.get(end + 1)) {
                (b'\r', Some(b'\n')) => 2,
                (b'\r', None) => {
                    self.after_cr = true;
                    1
                }
                _ => 1,
            };
            if self.line.is_empty() {
                self.process_line(&input[..end], out)?;
            } else {
                self.line.extend_from_slice(&input[..end]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, out)?;
                self.line = line;
                self.line.clear();
            }
            input = &input[end + ending_len..];
        }
        if self.line.len() + input.len() > MAX_EVENT_BYTES {
            return Err(TooLarge);
        }
        self.line.extend_from_slice(input);
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseItem>) -> Result<(), TooLarge> {
        if line.is_empty() {
            if self.has_data {
                // Each data line added a trailing '\n'; the last one goes.
                self.data.pop();
                out.push(SseItem::Data(std::mem::take(&mut self.data)));
                self.has_data = false;
            }
            return Ok(());
        }
        if line[0] == b':' {
            out.push(SseItem::Comment);
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(TooLarge);
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"error" => out.push(SseItem::ErrorLine(value.to_vec())),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse_sliced(input: &[u8], size: usize) -> Vec<SseItem> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for piece in input.chunks(size) {
            parser.feed(piece, &mut out).unwrap();
        }
        out
    }

    fn data(text: &str) -> SseItem {
        SseItem::Data(text.as_bytes().to_vec())
    }

    #[test]
    fn every_line_ending_and_slicing_gives_the_same_events() {
        let input = b"data: a\r\n\r\n: ping\rdata:b\ndata:  c\n\ndata: d\r\rdata: tail";
        let expected = vec![data("a"), SseItem::Comment, data("b\n c"), data("d")];
        for size in 1..=input.len() {
            assert_eq!(parse_sliced(input, size), expected, "slice size {size}");
        }
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing() {
        assert_eq!(parse_sliced(b"\n\n\r\n: x\n\n", 3), vec![SseItem::Comment]);
    }

    #[test]
    fn other_fields_are_ignored_and_error_lines_reported() {
        assert_eq!(
            parse_sliced(b"event: x\nid: 3\nretry: 9\ndata\n\nerror: {\"a\":1}\n", 2),
            vec![data(""), SseItem::ErrorLine(b"{\"a\":1}".to_vec())]
        );
    }

    #[test]
    fn oversized_line_is_refused() {
        let mut parser = SseParser::default();
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert_eq!(parser.feed(&big, &mut Vec::new()), Err(TooLarge));
    }
}
