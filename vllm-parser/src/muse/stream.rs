//! Muse Spark's reasoning as it streams: the `self` and bare-header bodies of
//! the reasoning parser's segmentation (`messages::reasoning_messages`),
//! released as soon as no later text can change them.
//!
//! A body ends at `<|eom|>`, `<|eot|>`, `<|start|>` or where the next header
//! starts; a header started by text (`…to=NAME<|message|>`) begins at the
//! earliest `to=` of the run of `[^\s<]` characters before its `<|message|>`.
//! So body text is held back only from such a `to=` (or a trailing `t` / `to`
//! that may grow into one) until the run ends; each character is looked at
//! once.

use crate::text::{MarkerScanner, Piece};

use super::messages::{EOM, EOT, MESSAGE, START};

/// The markers that matter inside a body: the header end and the boundaries.
const BODY_MARKERS: &[&str] = &[MESSAGE, EOM, EOT, START];
/// Outside a body only a header end matters; boundaries are text (their `<`
/// ends a run like any other).
const OUTSIDE_MARKERS: &[&str] = &[MESSAGE];

/// The end of the run of `[^\s<]` characters before a possible header.
#[derive(Debug, Default)]
struct HeaderRun {
    /// Held text: from the run's earliest `to=` on, or a trailing `t` / `to`.
    held: String,
    /// Whether `held` starts with `to=`.
    recipient: bool,
}

impl HeaderRun {
    /// One more character; what can no longer be part of a header goes to `released`.
    fn push(&mut self, c: char, released: &mut String) {
        if c.is_whitespace() || c == '<' {
            released.push_str(&self.held);
            released.push(c);
            self.held.clear();
            self.recipient = false;
            return;
        }
        self.held.push(c);
        if self.recipient {
            return;
        }
        // Without `to=` yet, `held` is at most `to` plus this character.
        if self.held == "to=" {
            self.recipient = true;
        } else if !matches!(self.held.as_str(), "t" | "to") {
            let keep = if self.held.ends_with('t') { 1 } else { 0 };
            let cut = self.held.len() - keep;
            released.push_str(&self.held[..cut]);
            self.held.drain(..cut);
        }
    }

    /// A `<|message|>` follows: the body text left before the header, and the
    /// header's recipient.
    fn header(&mut self) -> (String, Option<String>) {
        let held = std::mem::take(&mut self.held);
        let recipient = std::mem::take(&mut self.recipient);
        match held.strip_prefix("to=") {
            Some(name) if recipient && !name.is_empty() => (String::new(), Some(name.to_owned())),
            _ => (held, None),
        }
    }

    /// The run ends without a header: all of it was text.
    fn flush(&mut self) -> String {
        self.recipient = false;
        std::mem::take(&mut self.held)
    }
}

/// Where the stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first header or after a boundary: text belongs to no body.
    Outside,
    /// In a body; `reasoning` when its recipient is `self` or none.
    Body { reasoning: bool },
}

/// Incremental Spark reasoning.
#[derive(Debug)]
pub(super) struct ReasoningStream {
    scanner: MarkerScanner,
    state: State,
    run: HeaderRun,
}

impl ReasoningStream {
    pub fn new() -> Self {
        Self {
            scanner: MarkerScanner::new(),
            state: State::Outside,
            run: HeaderRun::default(),
        }
    }

    /// More output; appends the reasoning it settles to `reasoning`.
    pub fn push(&mut self, text: &str, reasoning: &mut String) {
        self.scanner.push(text);
        loop {
            let markers = match self.state {
                State::Outside => OUTSIDE_MARKERS,
                State::Body { .. } => BODY_MARKERS,
            };
            let Some(piece) = self.scanner.next(markers) else {
                return;
            };
            match piece {
                Piece::Text(text) => {
                    let mut released = String::new();
                    for c in text.chars() {
                        self.run.push(c, &mut released);
                    }
                    self.body_text(&released, reasoning);
                }
                Piece::Marker(i) if markers[i] == MESSAGE => {
                    let (text, recipient) = self.run.header();
                    self.body_text(&text, reasoning);
                    self.state = State::Body {
                        reasoning: matches!(recipient.as_deref(), None | Some("self")),
                    };
                }
                Piece::Marker(_) => {
                    let text = self.run.flush();
                    self.body_text(&text, reasoning);
                    self.state = State::Outside;
                }
            }
        }
    }

    /// The end of the output: an open body runs to the end.
    pub fn finish(&mut self, reasoning: &mut String) {
        let rest = self.scanner.finish();
        let mut released = String::new();
        for c in rest.chars() {
            self.run.push(c, &mut released);
        }
        released.push_str(&self.run.flush());
        self.body_text(&released, reasoning);
    }

    fn body_text(&self, text: &str, reasoning: &mut String) {
        if self.state == (State::Body { reasoning: true }) {
            reasoning.push_str(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::messages::reasoning_messages;
    use super::*;

    /// The reasoning of the whole-text segmentation.
    fn whole(text: &str) -> String {
        reasoning_messages(text)
            .iter()
            .filter(|m| matches!(m.recipient, None | Some("self")))
            .map(|m| m.body)
            .collect()
    }

    fn streamed(deltas: &[&str]) -> String {
        let mut stream = ReasoningStream::new();
        let mut reasoning = String::new();
        for delta in deltas {
            stream.push(delta, &mut reasoning);
        }
        stream.finish(&mut reasoning);
        reasoning
    }

    #[test]
    fn streamed_reasoning_equals_the_segmentation() {
        const PARTS: &[&str] = &[
            "to=",
            "self",
            "user",
            "t",
            "o",
            "=",
            "x",
            " ",
            "\n",
            "<",
            "<|message|>",
            "<|eom|>",
            "<|eot|>",
            "<|start|>",
            "assistant",
            "a:b",
            "é",
            "to=self<|message|>",
        ];
        // A small deterministic generator (xorshift).
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut with_reasoning = 0;
        for _ in 0..5000 {
            let text: String = (0..next(16)).map(|_| PARTS[next(PARTS.len())]).collect();
            let singles: Vec<String> = text.chars().map(String::from).collect();
            let singles: Vec<&str> = singles.iter().map(String::as_str).collect();
            assert_eq!(streamed(&[&text]), whole(&text), "{text:?}");
            assert_eq!(streamed(&singles), whole(&text), "{text:?} by characters");
            with_reasoning += usize::from(!whole(&text).is_empty());
        }
        assert!(with_reasoning > 1000, "{with_reasoning}");
    }
}
