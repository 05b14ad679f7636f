//! `hermes` (and `qwen3_json`): `<tool_call>{"name": …, "arguments": …}</tool_call>`,
//! vLLM's `Hermes2ProToolParser`; `longcat` is the same parser with
//! `<longcat_tool_call>` tags ([`Tags`]).
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - no `<tool_call>` anywhere: all text is content;
//! - otherwise every `<tool_call>BODY</tool_call>` (or, when no closing tag follows,
//!   `<tool_call>` to the end) must be JSON of an object with a string `name` and an
//!   `arguments` key; then the calls are returned with `arguments` re-serialised by
//!   `json.dumps(ensure_ascii=False)`, content is the text before the first
//!   `<tool_call>`, and text between or after calls is dropped;
//! - if any body fails, nothing is a call and the whole output is content.
//!
//! Because a later malformed call turns earlier ones into content, calls are
//! released at [`finish`](ToolParser::finish); the text before the first
//! `<tool_call>` streams as it comes.

use crate::event::Event;
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{MarkerScanner, Piece};
use crate::tool::{Call, emit_calls};

/// The tags around one call: the only difference between vLLM's Hermes subclasses.
#[derive(Debug, Clone, Copy)]
pub struct Tags {
    /// Opens a call.
    pub start: &'static str,
    /// Closes a call.
    pub end: &'static str,
}

/// `hermes`, `qwen3_json`.
pub const HERMES: Tags = Tags {
    start: "<tool_call>",
    end: "</tool_call>",
};

/// `longcat`: vLLM's `LongcatFlashToolParser`.
pub const LONGCAT: Tags = Tags {
    start: "<longcat_tool_call>",
    end: "</longcat_tool_call>",
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first `<tool_call>`: content.
    Prefix,
    /// Inside a call body.
    Body,
    /// After a closed call, looking for the next `<tool_call>`.
    Between,
    /// A body failed: everything is content; only `raw` grows.
    Failed,
}

/// The `hermes` tool parser.
pub struct HermesParser {
    tags: Tags,
    state: State,
    scanner: MarkerScanner,
    /// Everything from the first `<tool_call>` on, the content if a call fails.
    raw: String,
    body: String,
    calls: Vec<Call>,
}

impl HermesParser {
    /// A parser for one request.
    pub fn new(_options: &ParserOptions) -> Self {
        Self::with_tags(HERMES)
    }

    /// A parser for calls wrapped in `tags`.
    pub fn with_tags(tags: Tags) -> Self {
        Self {
            tags,
            state: State::Prefix,
            scanner: MarkerScanner::new(),
            raw: String::new(),
            body: String::new(),
            calls: Vec::new(),
        }
    }

    /// A boxed constructor for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::new(options))
    }

    /// A boxed `longcat` parser for the registry.
    pub fn longcat(_options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::with_tags(LONGCAT))
    }

    fn close_body(&mut self) {
        let body = std::mem::take(&mut self.body);
        match parse_call(&body) {
            Some(call) => self.calls.push(call),
            None => self.state = State::Failed,
        }
    }
}

/// One body as vLLM reads it, `None` where vLLM's `extract_tool_calls` raises.
fn parse_call(body: &str) -> Option<Call> {
    let value = json::loads(body).ok()?;
    let name = value.get("name")?.as_str()?.to_owned();
    let arguments = json::dumps(value.get("arguments")?);
    matches!(value, PyJson::Dict(_)).then_some(Call { name, arguments })
}

impl ToolParser for HermesParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        if self.state != State::Prefix {
            self.raw.push_str(text);
        }
        if self.state == State::Failed {
            return;
        }
        self.scanner.push(text);
        loop {
            let markers: &[&str] = match self.state {
                State::Prefix | State::Between => &[self.tags.start],
                State::Body => &[self.tags.end],
                State::Failed => return,
            };
            let Some(piece) = self.scanner.next(markers) else {
                return;
            };
            match (self.state, piece) {
                (State::Prefix, Piece::Text(text)) => out.push(Event::Content(text.to_owned())),
                (State::Prefix, Piece::Marker(_)) => {
                    // `raw` starts at the marker: re-add it plus the unscanned rest.
                    self.raw.push_str(self.tags.start);
                    self.raw.push_str(self.scanner.pending());
                    self.state = State::Body;
                }
                (State::Body, Piece::Text(text)) => self.body.push_str(text),
                (State::Body, Piece::Marker(_)) => {
                    self.close_body();
                    if self.state == State::Body {
                        self.state = State::Between;
                    }
                }
                (State::Between, Piece::Text(_)) => {}
                (State::Between, Piece::Marker(_)) => self.state = State::Body,
                (State::Failed, _) => return,
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let rest = self.scanner.finish();
        match self.state {
            State::Prefix => {
                if !rest.is_empty() {
                    out.push(Event::Content(rest));
                }
                return;
            }
            State::Body => {
                self.body.push_str(&rest);
                self.close_body();
            }
            State::Between | State::Failed => {}
        }
        if self.state == State::Failed {
            out.push(Event::Content(std::mem::take(&mut self.raw)));
        } else {
            emit_calls(std::mem::take(&mut self.calls), 0, out);
        }
    }
}
