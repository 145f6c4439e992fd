//! Telling a model that repeats itself from one that writes: small local
//! models fall into loops (the same block of lines, again and again) and,
//! left alone, generate until `max_tokens`, minutes on a CPU. The step
//! stops such a stream once the loop is certain and keeps the text up to
//! the end of its first round ([`AgentState::stopped_loop`]).
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::hash::{DefaultHasher, Hash, Hasher};

use super::state::{AgentState, Step};
use super::textcalls::StepText;
use crate::cancel::Cancel;
use crate::client;
use crate::protocol::{EventMsg, SubmissionId};

/// Rounds of the same block before the stream is taken for a loop.
const ROUNDS: usize = 5;
/// Rounds of a block that changes only in its numbers (a model counting
/// `"id": "1"`, `"id": "2"`… in a block it repeats), with at least one
/// line the same in every round, before it is taken for a loop.
const COUNTING_ROUNDS: usize = 8;
/// Lines of a counting block with no line the same in every round (each
/// line counts: `"old_string": "line 5"`…) before it is taken for a loop:
/// far more than a numbered list or a table a person asks for. Only JSON
/// lines (calls, their arguments) are taken so: a model writing numbered
/// words or rows of data is not looping.
const COUNTING_LINES: usize = 96;
/// Bytes of one line that must repeat a short unit for it to be a loop:
/// about a thousand tokens, more than any line a person asks for.
const LINE_LOOP: usize = 4096;
/// The longest unit looked for within one line.
const LINE_PERIOD: usize = 64;
/// How often (in bytes) a line still arriving is looked at.
const LINE_CHECK: usize = 512;
/// The longest block, in lines, looked for.
const MAX_PERIOD: usize = 16;
/// Characters a block needs, so that short lines repeated by design
/// (closing braces, blank lines, table rules) are never a loop.
const MIN_BLOCK_CHARS: usize = 40;

/// One finished line: its shape and where it starts.
#[derive(Debug, Clone, Copy)]
struct Seen {
    shape: u64,
    /// The shape with every run of digits the same.
    form: u64,
    chars: usize,
    start: usize,
    /// It holds a quoted key (`"path":`): a call's JSON.
    json: bool,
}

/// Watches streamed text for a loop.
#[derive(Debug, Default)]
pub(super) struct Repetition {
    /// Bytes of the finished lines.
    len: usize,
    /// The line still arriving.
    current: String,
    lines: Vec<Seen>,
}

/// A loop found: the text to keep and what repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Loop {
    /// Bytes of the text to keep: up to the end of the loop's first round.
    pub(super) keep: usize,
    /// Lines in one round.
    pub(super) lines: usize,
    /// Rounds seen.
    pub(super) rounds: usize,
}

impl Repetition {
    /// Takes in the next piece of text; a loop once one is certain.
    pub(super) fn push(&mut self, delta: &str) -> Option<Loop> {
        let mut found = None;
        for piece in delta.split_inclusive('\n') {
            let before = self.current.len();
            self.current.push_str(piece);
            if !piece.ends_with('\n') {
                // One line that goes round (`ERROR\nERROR\n…` inside a
                // JSON string), looked at every few hundred bytes.
                if found.is_none() && before / LINE_CHECK != self.current.len() / LINE_CHECK {
                    found = self.line_loop();
                }
                continue;
            }
            let start = self.len;
            self.len += self.current.len();
            let line = std::mem::take(&mut self.current);
            self.lines.push(Seen {
                shape: shape(&line),
                form: form(&line),
                chars: line.trim().chars().count(),
                start,
                json: line.contains("\":"),
            });
            if found.is_none() {
                found = self.looping();
            }
        }
        found
    }

    /// The line still arriving, when its last [`LINE_LOOP`] bytes repeat a
    /// unit of at most [`LINE_PERIOD`] bytes: kept up to the end of the
    /// unit's first round.
    fn line_loop(&self) -> Option<Loop> {
        let bytes = self.current.as_bytes();
        let tail = bytes.len().checked_sub(LINE_LOOP)?;
        let period = (1..=LINE_PERIOD)
            .find(|&p| (tail + p..bytes.len()).all(|i| bytes[i] == bytes[i - p]))?;
        // Where the repetition began.
        let mut begin = tail;
        while begin > 0 && bytes[begin - 1] == bytes[begin - 1 + period] {
            begin -= 1;
        }
        let mut keep = begin + period;
        while !self.current.is_char_boundary(keep) {
            keep += 1;
        }
        Some(Loop {
            keep: self.len + keep,
            lines: 1,
            rounds: (bytes.len() - begin) / period,
        })
    }

    /// Whether the last lines are [`ROUNDS`] rounds of one block, or
    /// [`COUNTING_ROUNDS`] rounds of one that counts.
    fn looping(&self) -> Option<Loop> {
        let exact = |line: &Seen| line.shape;
        let counting = |line: &Seen| line.form;
        (1..=MAX_PERIOD)
            .find_map(|period| self.rounds(period, ROUNDS, exact))
            .or_else(|| {
                (2..=MAX_PERIOD).find_map(|period| {
                    let found = self.rounds(period, COUNTING_ROUNDS, counting)?;
                    self.anchored(period, COUNTING_ROUNDS).then_some(found)
                })
            })
            .or_else(|| {
                (1..=MAX_PERIOD).find_map(|period| {
                    let rounds = COUNTING_ROUNDS.max(COUNTING_LINES.div_ceil(period));
                    let first = self.lines.len().checked_sub(period * rounds)?;
                    if !self.lines[first..].iter().all(|line| line.json) {
                        return None;
                    }
                    self.rounds(period, rounds, counting)
                })
            })
    }

    /// The loop whose last `rounds` rounds of `period` lines are the same
    /// by `key`, if the block is long enough.
    fn rounds(&self, period: usize, rounds: usize, key: impl Fn(&Seen) -> u64) -> Option<Loop> {
        let lines = &self.lines;
        let first = lines.len().checked_sub(period * rounds)?;
        let same = |i: usize| key(&lines[i]) == key(&lines[i - period]);
        let block: usize = lines[first..first + period].iter().map(|l| l.chars).sum();
        if block < MIN_BLOCK_CHARS || !(first + period..lines.len()).all(same) {
            return None;
        }
        // The loop may have begun before the rounds looked at.
        let mut begin = first;
        while begin > 0 && same(begin - 1 + period) {
            begin -= 1;
        }
        Some(Loop {
            keep: lines[begin + period].start,
            lines: period,
            rounds: (lines.len() - begin) / period,
        })
    }

    /// Whether some line of the last `rounds` rounds of `period` lines is
    /// exactly the same in each: a counting block repeats more than its
    /// numbers' shape (rows of a table or test cases differ in every line).
    fn anchored(&self, period: usize, rounds: usize) -> bool {
        let lines = &self.lines;
        let first = lines.len() - period * rounds;
        (first..first + period)
            .any(|at| (1..rounds).all(|round| lines[at + round * period].shape == lines[at].shape))
    }
}

impl AgentState {
    /// A response stopped because it went round in a loop: what came
    /// before and the loop's first round are taken as the whole response.
    pub(super) async fn stopped_loop(
        &mut self,
        id: SubmissionId,
        raw: &str,
        found: Loop,
        reasoning: String,
        cancel: &Cancel,
    ) -> Step {
        self.warn(
            id,
            &format!(
                "The model wrote the same {} over and over; offcode stopped it after {} rounds and kept the first",
                crate::protocol::count(found.lines, "line"),
                found.rounds
            ),
        );
        let mut parser = self.request.inline_parser();
        let mut kept = StepText::default();
        // Already shown as it streamed.
        let shown = |_: EventMsg| {};
        for out in parser.push(&raw[..found.keep]) {
            kept.apply(out, &shown);
        }
        if kept.reasoning.is_empty() {
            kept.reasoning = reasoning;
        }
        let mut response = client::Assembled {
            finish_reason: Some("stop".to_owned()),
            ..client::Assembled::default()
        };
        let recovered = self.finish_text(id, &mut parser, &mut kept, &mut response);
        self.finish_step(id, response, recovered, cancel).await
    }
}

/// A line's shape: its text without surrounding space.
fn shape(line: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    line.trim().hash(&mut hasher);
    hasher.finish()
}

/// A line's shape with each run of digits as one `0`.
fn form(line: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut digits = false;
    for c in line.trim().chars() {
        let digit = c.is_ascii_digit();
        if !(digit && digits) {
            (if digit { '0' } else { c }).hash(&mut hasher);
        }
        digits = digit;
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    fn feed(text: &str, piece: usize) -> Option<Loop> {
        let mut repetition = Repetition::default();
        let chars: Vec<char> = text.chars().collect();
        chars.chunks(piece).find_map(|chunk| {
            let delta: String = chunk.iter().collect();
            repetition.push(&delta)
        })
    }

    #[test]
    fn a_block_of_calls_written_again_and_again_is_a_loop_and_its_first_round_is_kept() {
        let block = "{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n{\"name\": \"todowrite\", \"arguments\": {\"todos\": [{\"id\": \"N\"}]}}\n";
        let mut text = String::from("I will do it.\n");
        for _ in 0..9 {
            text.push_str(block);
        }
        for piece in [1, 3, 7, 500] {
            let found = feed(&text, piece).expect("a loop");
            assert_eq!(found.lines, 2);
            assert_eq!(found.rounds, ROUNDS, "found as soon as certain");
            let kept = &text[..found.keep];
            assert_eq!(kept, format!("I will do it.\n{block}"));
        }
    }

    #[test]
    fn one_long_line_again_and_again_is_a_loop() {
        let line = "The answer is that the file says hello world in lower case.\n";
        let text = format!("Intro\n{}", line.repeat(7));
        let found = feed(&text, 5).expect("a loop");
        assert_eq!((found.lines, found.rounds), (1, ROUNDS));
        assert_eq!(&text[..found.keep], format!("Intro\n{line}"));
    }

    #[test]
    fn ordinary_code_and_prose_are_not_loops() {
        // Short lines repeated by design.
        let braces = "fn a() {\n    {\n    }\n}\n\n".repeat(20);
        assert_eq!(feed(&braces, 4), None);
        // Similar lines.
        let mut tests = String::new();
        for n in 0..30 {
            let _ = writeln!(tests, "    assert_eq!(parse(\"word{n}\"), Ok({}));", n % 2);
        }
        assert_eq!(feed(&tests, 9), None);
        // Four rounds are not yet certain.
        let line = "The answer is that the file says hello world in lower case.\n";
        assert_eq!(feed(&line.repeat(ROUNDS - 1), 3), None);
        // A table's rows, which differ only in numbers.
        let mut table = String::new();
        for n in 0..40 {
            let _ = writeln!(table, "| {n} | item {} | ok |", n * 7);
        }
        assert_eq!(feed(&table, 11), None);
        // Blocks of lines that all count, such as numbered test cases.
        let mut cases = String::new();
        for n in 0..30 {
            let _ = write!(
                cases,
                "    fn case_{n}() {{\n        assert_eq!(parse(\"word{n}\"), Ok({n}));\n"
            );
        }
        assert_eq!(feed(&cases, 9), None);
    }

    #[test]
    fn a_block_that_counts_up_round_after_round_is_a_loop() {
        // The 0.5B model's loop: a todo id counting up, other calls alike.
        let round = |n: usize| {
            format!(
                "{{\"name\": \"todowrite\", \"arguments\": {{\"todos\": [{{\"id\": \"{n}\"}}]}}}}\n\
                 {{\"name\": \"list\", \"arguments\": {{\"path\": \"/tmp/w\"}}}}\n"
            )
        };
        let text: String = (1..=20).map(round).collect();
        let found = feed(&text, 13).expect("a loop");
        assert_eq!((found.lines, found.rounds), (2, COUNTING_ROUNDS));
        assert_eq!(&text[..found.keep], round(1));
        // One round short is not yet a loop.
        let short: String = (1..COUNTING_ROUNDS).map(round).collect();
        assert_eq!(feed(&short, 13), None);
        // The 0.5B model's 4096-token reply: edits whose every line counts,
        // cut after COUNTING_LINES lines, not at `max_tokens`.
        let edit = |n: usize| {
            format!(
                "{{\"old_string\": \"line {n} of the file\", \"new_string\": \"LINE {n} OF THE FILE\"}},\n"
            )
        };
        let text: String = (1..=400).map(edit).collect();
        let found = feed(&text, 17).expect("a loop");
        assert_eq!((found.lines, found.rounds), (1, COUNTING_LINES));
        assert_eq!(&text[..found.keep], edit(1));
        // One line that goes round: the 0.5B model's write of app.log as
        // `ERROR\nERROR\n…` in a JSON string, 4096 tokens long.
        let line = format!(
            "{{\"name\": \"write\", \"arguments\": {{\"content\": \"{}",
            "ERROR\\n".repeat(2_000)
        );
        let found = feed(&line, 23).expect("a loop");
        assert_eq!(found.lines, 1);
        assert!(
            line[..found.keep].ends_with("\"content\": \"ERROR\\n"),
            "{}",
            &line[..found.keep]
        );
        let mut long_text = String::new();
        for n in 0..900 {
            let _ = write!(long_text, "word{n} ");
        }
        assert_eq!(feed(&long_text, 31), None);
        let fewer: String = (1..COUNTING_LINES).map(edit).collect();
        assert_eq!(feed(&fewer, 17), None);
        // Numbered words or rows of data are not calls: never cut.
        let mut words = String::new();
        for n in 0..2_000 {
            let _ = write!(words, "w{n:05}{}", if n % 12 == 11 { '\n' } else { ' ' });
        }
        assert_eq!(feed(&words, 31), None);
    }
}
