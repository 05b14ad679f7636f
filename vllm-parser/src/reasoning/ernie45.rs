//! `ernie45`: vLLM's `Ernie45ReasoningParser`, `deepseek_r1`'s `<think>…</think>`
//! whose content may be wrapped as `<response>…</response>`.
//!
//! vLLM's whole-text rule for the content, which this parser reproduces: when it
//! holds `<response>` and, after it, `</response>`, the content is what lies
//! between the first `<response>` and the *last* `</response>`; otherwise it is
//! left as it is. (vLLM's streaming only recognises the tags as single special
//! tokens; the `ernie45_reasoning` fixture follows the whole text.)
//!
//! So content before `<response>` is held until `<response>` comes or the output
//! ends, and text after each `</response>` until the next one.

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser};
use crate::reasoning::think::{self, ThinkParser};
use crate::text::{MarkerScanner, Piece};

const OPEN: &str = "<response>";
const CLOSE: &str = "</response>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// No `<response>` yet: all content held.
    Before,
    /// After `<response>`, before any `</response>`: held, since without a
    /// closing tag the content stays as it was.
    Open,
    /// A `</response>` came: the body is released, text since the last
    /// `</response>` is held.
    Closed,
}

/// The `ernie45` reasoning parser.
pub struct Ernie45Parser {
    think: ThinkParser,
    scanner: MarkerScanner,
    stage: Stage,
    /// The content before `<response>`, tag included.
    prefix: String,
    /// [`Stage::Open`]: the body so far; [`Stage::Closed`]: the last
    /// `</response>` and the text after it.
    held: String,
    events: Vec<Event>,
}

impl Ernie45Parser {
    /// A boxed constructor for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self {
            think: ThinkParser::new(think::DEEPSEEK_R1, options),
            scanner: MarkerScanner::new(),
            stage: Stage::Before,
            prefix: String::new(),
            held: String::new(),
            events: Vec::new(),
        })
    }

    /// Route the think parser's events: reasoning passes, content is filtered.
    fn route(&mut self, out: &mut Vec<Event>) {
        for event in std::mem::take(&mut self.events) {
            match event {
                Event::Content(text) => {
                    self.scanner.push(&text);
                    self.scan(out);
                }
                other => out.push(other),
            }
        }
    }

    fn scan(&mut self, out: &mut Vec<Event>) {
        loop {
            let markers: &[&str] = match self.stage {
                Stage::Before => &[OPEN],
                Stage::Open | Stage::Closed => &[CLOSE],
            };
            let Some(piece) = self.scanner.next(markers) else {
                return;
            };
            match (self.stage, piece) {
                (Stage::Before, Piece::Text(text)) => self.prefix.push_str(text),
                (Stage::Before, Piece::Marker(_)) => {
                    self.prefix.push_str(OPEN);
                    self.stage = Stage::Open;
                }
                (_, Piece::Text(text)) => self.held.push_str(text),
                (Stage::Open, Piece::Marker(_)) => {
                    self.prefix.clear();
                    push_content(std::mem::replace(&mut self.held, CLOSE.to_owned()), out);
                    self.stage = Stage::Closed;
                }
                (Stage::Closed, Piece::Marker(_)) => {
                    push_content(std::mem::replace(&mut self.held, CLOSE.to_owned()), out);
                }
            }
        }
    }
}

fn push_content(text: String, out: &mut Vec<Event>) {
    if !text.is_empty() {
        out.push(Event::Content(text));
    }
}

impl ReasoningParser for Ernie45Parser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        self.think.prompt_ends_reasoning()
    }

    fn follows_whole_text(&mut self) {
        self.think.follows_whole_text();
    }

    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        self.think.push(text, token_ids, &mut self.events);
        self.route(out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.think.finish(&mut self.events);
        self.route(out);
        let rest = self.scanner.finish();
        match self.stage {
            Stage::Before => push_content(std::mem::take(&mut self.prefix) + &rest, out),
            Stage::Open => {
                let held = std::mem::take(&mut self.held);
                push_content(std::mem::take(&mut self.prefix) + &held + &rest, out);
            }
            Stage::Closed => {}
        }
    }
}
