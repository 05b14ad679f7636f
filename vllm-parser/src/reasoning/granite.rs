//! `granite`: IBM Granite's plain-text sections, vLLM's `GraniteReasoningParser`.
//!
//! Granite writes `Here is my thought process: … Here is my response: …` (or
//! `Here's …`), with no special tokens. vLLM's whole-text rule, which this parser
//! reproduces, is the regex
//! `(?:Here's|Here is) my thought process:(.*?)(?:Here's|Here is) my response:(.*)`
//! searched anywhere: when it matches, the reasoning is between the first thought
//! marker and the first response marker after it, the content is everything after
//! that, and text before the thought marker is dropped; when it does not, the whole
//! output is content. Until the response marker arrives nothing can be told apart,
//! so the output is held back until then.
//!
//! vLLM's streaming mode only knows a thought marker at the very start and leaves
//! stray characters around markers; the `granite` fixtures follow the whole text.

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser};
use crate::text::{MarkerScanner, Piece};

const THOUGHT: &[&str] = &["Here's my thought process:", "Here is my thought process:"];
const RESPONSE: &[&str] = &["Here's my response:", "Here is my response:"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the thought marker: held, dropped if the response marker comes.
    Prefix,
    /// After the thought marker: reasoning if the response marker comes.
    Thought,
    /// After the response marker: content, streamed.
    Response,
}

/// The `granite` reasoning parser.
#[derive(Debug)]
pub struct GraniteParser {
    state: State,
    scanner: MarkerScanner,
    /// The output until the response marker: the content if it never comes.
    raw: String,
    /// The text after the thought marker.
    reasoning: String,
}

impl GraniteParser {
    /// A parser for one request.
    pub fn new() -> Self {
        Self {
            state: State::Prefix,
            scanner: MarkerScanner::new(),
            raw: String::new(),
            reasoning: String::new(),
        }
    }

    /// A boxed constructor for the registry.
    pub fn boxed(_options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new())
    }

    fn drain(&mut self, out: &mut Vec<Event>) {
        while self.state != State::Response {
            let markers = if self.state == State::Prefix {
                THOUGHT
            } else {
                RESPONSE
            };
            let Some(piece) = self.scanner.next(markers) else {
                return;
            };
            match piece {
                Piece::Text(text) => {
                    self.raw.push_str(text);
                    if self.state == State::Thought {
                        self.reasoning.push_str(text);
                    }
                }
                Piece::Marker(i) if self.state == State::Prefix => {
                    self.raw.push_str(markers[i]);
                    self.state = State::Thought;
                }
                Piece::Marker(_) => {
                    self.state = State::Response;
                    self.raw.clear();
                    let reasoning = std::mem::take(&mut self.reasoning);
                    if !reasoning.is_empty() {
                        out.push(Event::Reasoning(reasoning));
                    }
                }
            }
        }
        let rest = self.scanner.finish();
        if !rest.is_empty() {
            out.push(Event::Content(rest));
        }
    }
}

impl Default for GraniteParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ReasoningParser for GraniteParser {
    /// vLLM's `GraniteReasoningParser` does not implement `is_reasoning_end`
    /// (the abstract method's body returns `None`).
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        None
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        if self.state == State::Response {
            if !text.is_empty() {
                out.push(Event::Content(text.to_owned()));
            }
            return;
        }
        self.scanner.push(text);
        self.drain(out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        if self.state == State::Response {
            return;
        }
        // No response marker: vLLM's regex fails and the output is content.
        let mut content = std::mem::take(&mut self.raw);
        content.push_str(&self.scanner.finish());
        self.reasoning.clear();
        if !content.is_empty() {
            out.push(Event::Content(content));
        }
    }
}
