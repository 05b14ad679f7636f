//! The shape shared by vLLM's legacy whole-text tool parsers: content streams until
//! the text where calls may start, and from there on the format decides once, at
//! the end, what the text was.
//!
//! vLLM's `extract_tool_calls` for these formats (llama3_json, pythonic, deepseek_v3,
//! jamba, …) looks at the complete output: a later malformed call can turn the whole
//! output back into content, and content after the calls may be kept or dropped.
//! So a [`SettleParser`] streams the content vLLM keeps before the calls, buffers
//! the *tail* from the opening on (appending only, O(delta) per push), and hands it
//! to its [`Settle`] format once at [`finish`](ToolParser::finish). Each format's
//! settle function is a single linear pass over the tail.

use crate::event::Event;
use crate::parser::ToolParser;
use crate::text::{MarkerScanner, Piece, py_is_blank};
use crate::tool::{Call, emit_calls};

/// Where a format's tail begins.
#[derive(Debug, Clone, Copy)]
pub enum Opening {
    /// Only when the output starts with one of these strings (vLLM's streaming
    /// gate `current_text.startswith(...)`); otherwise the whole output is content.
    Start(&'static [&'static str]),
    /// At the first occurrence of any of these markers; the text before it is
    /// content.
    Marker(&'static [&'static str]),
    /// The whole output is the tail: vLLM drops text before calls it finds
    /// anywhere, so nothing can be released before the end.
    Whole,
}

/// What a format made of its tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// The calls, in order (may be empty when vLLM reports `tools_called` anyway).
    pub calls: Vec<Call>,
    /// Content vLLM keeps from the tail (e.g. text after the calls' end marker).
    pub content: String,
}

/// A whole-text tool format: decides what its buffered tail was.
pub trait Settle: Send {
    /// Where the tail begins.
    fn opening(&self) -> Opening;

    /// The calls in `tail` (which starts at the opening), or `None` when vLLM
    /// returns the whole output as content.
    fn settle(&self, tail: &str) -> Option<Settled>;

    /// Whether [`settle_with_head`](Settle::settle_with_head) reads the content
    /// before the opening (kept only then): vLLM's regexes for some formats
    /// (`hy_v3`) run over the whole output, prose included.
    fn reads_head(&self) -> bool {
        false
    }

    /// [`settle`](Settle::settle), given the content streamed before the tail too
    /// (empty unless [`reads_head`](Settle::reads_head)).
    fn settle_with_head(&self, head: &str, tail: &str) -> Option<Settled> {
        let _ = head;
        self.settle(tail)
    }

    /// Whether the whitespace-only content held back before the tail is dropped
    /// when the tail settles (`mistral` pre-v11: vLLM's content is then its
    /// JSON text alone, or the text before the marker only if it is not blank).
    fn drops_blank_head(&self) -> bool {
        false
    }

    /// Whether an output without calls whose content is only whitespace has no
    /// content at all (`k2_horizon`: vLLM's `content if content.strip() else None`).
    fn drops_blank_content(&self) -> bool {
        false
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// `Opening::Start`: not yet known whether the output starts with an opening.
    Undecided,
    /// Content, searching for an `Opening::Marker`.
    Content,
    /// `Opening::Start` did not match: everything is content.
    Plain,
    /// Buffering the tail.
    Tail,
}

/// A tool parser for a [`Settle`] format.
pub struct SettleParser<F> {
    format: F,
    state: State,
    scanner: MarkerScanner,
    tail: String,
    /// Whitespace-only content before the tail, held back: when vLLM reports
    /// `tools_called` its whitespace-only content becomes `None`, calls or not.
    blank: String,
    /// Whether content other than whitespace was emitted.
    spoke: bool,
    /// The content before the tail, kept when the format [reads it](Settle::reads_head).
    head: String,
}

impl<F: Settle + 'static> SettleParser<F> {
    /// A parser for one request.
    pub fn new(format: F) -> Self {
        let state = match format.opening() {
            Opening::Start(_) => State::Undecided,
            Opening::Marker(_) => State::Content,
            Opening::Whole => State::Tail,
        };
        Self {
            format,
            state,
            scanner: MarkerScanner::new(),
            tail: String::new(),
            blank: String::new(),
            spoke: false,
            head: String::new(),
        }
    }

    /// Content before the tail: whitespace is held until something else comes.
    fn prefix_content(&mut self, text: &str, out: &mut Vec<Event>) {
        if !self.spoke && py_is_blank(text) {
            self.blank.push_str(text);
            return;
        }
        self.spoke = true;
        let mut text = text.to_owned();
        if !self.blank.is_empty() {
            text.insert_str(0, &std::mem::take(&mut self.blank));
        }
        emit_content(text, out);
    }

    /// The parser, boxed for the registry.
    pub fn boxed(format: F) -> Box<dyn ToolParser> {
        Box::new(Self::new(format))
    }

    /// `Opening::Start`: decide from the first characters, once they are enough.
    fn decide(&mut self, starts: &[&str], out: &mut Vec<Event>) {
        let pending = self.scanner.pending();
        if starts.iter().any(|s| pending.starts_with(s)) {
            self.tail = self.scanner.finish();
            self.state = State::Tail;
        } else if !starts.iter().any(|s| s.starts_with(pending)) {
            self.state = State::Plain;
            emit_content(self.scanner.finish(), out);
        }
    }
}

fn emit_content(text: String, out: &mut Vec<Event>) {
    if !text.is_empty() {
        out.push(Event::Content(text));
    }
}

impl<F: Settle + 'static> ToolParser for SettleParser<F> {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        match (self.state, self.format.opening()) {
            (State::Tail, _) => self.tail.push_str(text),
            (State::Plain, _) => emit_content(text.to_owned(), out),
            (State::Undecided, Opening::Start(starts)) => {
                self.scanner.push(text);
                self.decide(starts, out);
            }
            (_, Opening::Marker(markers)) => {
                self.scanner.push(text);
                while let Some(piece) = self.scanner.next(markers) {
                    match piece {
                        Piece::Text(text) => {
                            let text = text.to_owned();
                            if self.format.reads_head() {
                                self.head.push_str(&text);
                            }
                            self.prefix_content(&text, out);
                        }
                        Piece::Marker(i) => {
                            self.tail = format!("{}{}", markers[i], self.scanner.finish());
                            self.state = State::Tail;
                            return;
                        }
                    }
                }
            }
            (_, Opening::Start(_) | Opening::Whole) => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let blank = std::mem::take(&mut self.blank);
        match self.state {
            State::Tail => {
                let tail = std::mem::take(&mut self.tail);
                match self.format.settle_with_head(&self.head, &tail) {
                    Some(settled) => {
                        let blank = if self.format.drops_blank_head() {
                            String::new()
                        } else {
                            blank
                        };
                        if self.spoke || !py_is_blank(&settled.content) {
                            emit_content(blank + &settled.content, out);
                        }
                        emit_calls(settled.calls, 0, out);
                    }
                    None => emit_content(blank + &tail, out),
                }
            }
            _ => {
                let rest = blank + &self.scanner.finish();
                if self.spoke || !self.format.drops_blank_content() || !py_is_blank(&rest) {
                    emit_content(rest, out);
                }
            }
        }
    }
}
