//! gpt-oss's Harmony format: vLLM's `openai` tool parser and `openai_gptoss`
//! reasoning parser, which vLLM runs together as one `HarmonyParser`
//! (`vllm/parser/harmony.py`) over `openai_harmony`'s token-level
//! `StreamableParser`. This is the same state machine over text: the format's
//! markers are single special tokens of the gpt-oss vocabulary, so they appear in
//! the text exactly where the token parser sees them.
//!
//! The output is a sequence of messages. The first header follows the prompt's
//! `<|start|>assistant` directly; later ones start with `<|start|>`:
//!
//! ```text
//! <|channel|>analysis<|message|>REASONING<|end|>
//! <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>
//! <|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//! ```
//!
//! vLLM's whole-text result, which this parser reproduces at every chunking:
//! - a header ends at `<|message|>` and is parsed as `openai_harmony` parses it
//!   (`header.rs`); an invalid header is dropped, and so is text between messages
//!   up to the next `<|start|>`;
//! - a message body ends at `<|end|>`, `<|return|>` or `<|call|>`, or at the end of
//!   the output; other special tokens in it are text;
//! - assistant messages are routed by recipient and channel: `to=functions.NAME`
//!   (or any recipient that is not a built-in tool) is a call to `NAME` whose
//!   arguments are `json.dumps(json.loads(body))` (ASCII-escaped; the raw body when
//!   it is not JSON or the content type is not JSON); `analysis` is reasoning;
//!   `final`, and `commentary` without recipient, are content; the rest is dropped;
//! - reasoning parts and content parts are each joined with `"\n"` (empty parts
//!   are skipped);
//! - an output ending inside a header is recovered as content: the text since the
//!   last complete message (including `<|start|>` and failed headers).
//!
//! Without the reasoning parser, reasoning is dropped; without the tool parser,
//! calls are. With both, `openai_gptoss` steps aside and `openai` parses alone
//! ([`ReasoningParser::yields_to_tool_parser`]). vLLM's streaming differs from its
//! whole text (no `"\n"` joins, raw argument text, messages of other roles); the
//! fixtures follow the whole text. Call arguments are therefore released when the
//! call's message ends.
//!
//! The text must show the special tokens (decoded with
//! `skip_special_tokens=false`). When a delta comes with its token ids and its
//! text lacks them, the markers of gpt-oss's special token ids (fixed by the
//! Harmony encoding, as vLLM assumes too) are put back around the text: exact
//! for deltas whose special tokens come before or after their other tokens,
//! which includes every single-token delta.

mod header;

use crate::event::Event;
use crate::json;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::text::{MarkerScanner, Piece};

use header::{Header, Route};

const START: &str = "<|start|>";
const MESSAGE: &str = "<|message|>";
/// `openai_harmony`'s stop tokens: each ends the current message.
const STOPS: &[&str] = &["<|end|>", "<|return|>", "<|call|>"];

/// Where the parser is in the message sequence (`StreamableParser`'s states).
enum State {
    /// After a message: waiting for `<|start|>`, dropping anything else.
    ExpectStart,
    /// In a header; its text is `recovery[header_start..]`.
    Header { header_start: usize },
    /// In a message body routed to `route`.
    Body { route: Route, arguments: String },
}

/// The Harmony parser: `openai` (calls), `openai_gptoss` (reasoning) or both.
pub struct HarmonyParser {
    reasoning: bool,
    tools: bool,
    scanner: MarkerScanner,
    state: State,
    /// The first header's role is the prompt's `assistant` until a header parses.
    role_given: bool,
    /// Text accepted since the last complete message: what vLLM returns as
    /// content if the output ends inside a header.
    recovery: String,
    /// Whether a reasoning / content part was emitted (the next is joined by `"\n"`).
    reasoning_seen: bool,
    content_seen: bool,
    /// Whether the current body emitted text yet.
    part_started: bool,
    calls: usize,
}

impl HarmonyParser {
    /// A parser that emits reasoning (`openai_gptoss`) and/or tool calls (`openai`).
    pub fn new(reasoning: bool, tools: bool) -> Self {
        Self {
            reasoning,
            tools,
            scanner: MarkerScanner::new(),
            state: State::Header { header_start: 0 },
            role_given: true,
            recovery: String::new(),
            reasoning_seen: false,
            content_seen: false,
            part_started: false,
            calls: 0,
        }
    }

    /// `openai_gptoss` alone: reasoning and content, calls dropped.
    pub fn reasoning_parser(_options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(true, false))
    }

    /// `openai` alone: content and calls, reasoning dropped.
    pub fn tool_parser(_options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::new(false, true))
    }

    fn drain(&mut self, out: &mut Vec<Event>) {
        loop {
            let markers: &[&str] = match self.state {
                State::ExpectStart => &[START],
                State::Header { .. } => &[MESSAGE],
                State::Body { .. } => STOPS,
            };
            let Some(piece) = self.scanner.next(markers) else {
                return;
            };
            match piece {
                Piece::Text(text) => {
                    let text = text.to_owned();
                    self.text(&text, out);
                }
                Piece::Marker(_) => self.marker(out),
            }
        }
    }

    fn text(&mut self, text: &str, out: &mut Vec<Event>) {
        match &mut self.state {
            State::ExpectStart => {}
            State::Header { .. } => self.recovery.push_str(text),
            State::Body { route, arguments } => match route {
                Route::Tool { .. } if self.tools => arguments.push_str(text),
                Route::Reasoning if self.reasoning => {
                    let joined = self.reasoning_seen;
                    self.reasoning_seen = true;
                    self.body_text(joined, text, out, Event::Reasoning);
                }
                Route::Content => {
                    let joined = self.content_seen;
                    self.content_seen = true;
                    self.body_text(joined, text, out, Event::Content);
                }
                Route::Tool { .. } | Route::Reasoning | Route::Ignore => {}
            },
        }
    }

    /// Emit body text, `"\n"` first when it starts a part after an earlier one.
    fn body_text(
        &mut self,
        joined: bool,
        text: &str,
        out: &mut Vec<Event>,
        event: fn(String) -> Event,
    ) {
        if !self.part_started && joined {
            out.push(event("\n".to_owned()));
        }
        self.part_started = true;
        out.push(event(text.to_owned()));
    }

    /// The marker the current state was waiting for.
    fn marker(&mut self, out: &mut Vec<Event>) {
        match &self.state {
            State::ExpectStart => {
                self.recovery.push_str(START);
                self.state = State::Header {
                    header_start: self.recovery.len(),
                };
            }
            State::Header { header_start } => {
                match Header::parse(&self.recovery[*header_start..], self.role_given) {
                    Some(header) => {
                        self.role_given = false;
                        self.begin(header.route(), out);
                    }
                    // openai_harmony raises; vLLM skips the token and the parser
                    // waits for the next `<|start|>`.
                    None => self.state = State::ExpectStart,
                }
            }
            State::Body { .. } => self.end_message(out),
        }
    }

    fn begin(&mut self, route: Route, out: &mut Vec<Event>) {
        if let Route::Tool { name, .. } = &route
            && self.tools
        {
            out.push(Event::ToolCallBegin {
                index: self.calls,
                id: None,
                name: name.clone(),
            });
        }
        self.part_started = false;
        self.state = State::Body {
            route,
            arguments: String::new(),
        };
    }

    fn end_message(&mut self, out: &mut Vec<Event>) {
        let state = std::mem::replace(&mut self.state, State::ExpectStart);
        self.recovery.clear();
        if let State::Body {
            route: Route::Tool { json, .. },
            arguments,
        } = state
            && self.tools
        {
            let index = self.calls;
            self.calls += 1;
            let delta = match json.then(|| json::loads(&arguments)) {
                Some(Ok(value)) => json::dumps_ascii(&value),
                _ => arguments,
            };
            if !delta.is_empty() {
                out.push(Event::ToolCallArguments { index, delta });
            }
            out.push(Event::ToolCallEnd { index });
        }
    }

    fn push_text(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        match with_markers(text, token_ids) {
            Some(restored) => self.scanner.push(&restored),
            None => self.scanner.push(text),
        }
        self.drain(out);
    }

    fn finish_output(&mut self, out: &mut Vec<Event>) {
        let rest = self.scanner.finish();
        if !rest.is_empty() {
            self.text(&rest, out);
        }
        match self.state {
            State::ExpectStart => {}
            State::Body { .. } => self.end_message(out),
            // openai_harmony fails at EOS inside a header; vLLM returns the text
            // since the last complete message as a `final` message.
            State::Header { .. } => {
                let recovered = std::mem::take(&mut self.recovery);
                if !recovered.is_empty() {
                    self.part_started = false;
                    self.state = State::Body {
                        route: Route::Content,
                        arguments: String::new(),
                    };
                    self.text(&recovered, out);
                }
                self.state = State::ExpectStart;
            }
        }
    }
}

/// `openai_gptoss`. vLLM's `GptOssReasoningParser` only marks the pair: with a
/// tool parser it steps aside and `openai` parses the reasoning too.
impl ReasoningParser for HarmonyParser {
    /// `GptOssReasoningParser.is_reasoning_end` is always `True`.
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(true)
    }

    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        self.push_text(text, token_ids, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_output(out);
    }

    fn yields_to_tool_parser(&self) -> bool {
        true
    }
}

/// `openai`: with `openai_gptoss` before it, it emits the reasoning as well.
impl ToolParser for HarmonyParser {
    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        self.push_text(text, token_ids, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_output(out);
    }

    fn follows_reasoning_parser(&mut self) {
        self.reasoning = true;
    }
}

/// The text of a special token of the gpt-oss vocabulary (`o200k_harmony`).
fn special_token(id: u32) -> Option<String> {
    let name = match id {
        199_998 => "startoftext",
        199_999 => "endoftext",
        200_002 => "return",
        200_003 => "constrain",
        200_005 => "channel",
        200_006 => "start",
        200_007 => "end",
        200_008 => "message",
        200_012 => "call",
        200_018 => "endofprompt",
        200_000..=200_017 => return Some(format!("<|reserved_{id}|>")),
        _ => return None,
    };
    Some(format!("<|{name}|>"))
}

/// `text` with its special tokens put back, when `token_ids` has special tokens
/// whose text is missing (decoded with `skip_special_tokens`). `None` when the
/// text is fine as it is, or when a special token sits between other tokens and
/// its place in the text cannot be known.
fn with_markers(text: &str, token_ids: &[u32]) -> Option<String> {
    let markers: Vec<Option<String>> = token_ids.iter().map(|&id| special_token(id)).collect();
    let mut specials = markers.iter().flatten().peekable();
    if specials.peek().is_none() || specials.all(|marker| text.contains(marker.as_str())) {
        return None;
    }
    let leading = markers.iter().take_while(|m| m.is_some()).count();
    let trailing = markers[leading..]
        .iter()
        .rev()
        .take_while(|m| m.is_some())
        .count();
    let (before, rest) = markers.split_at(leading);
    let (middle, after) = rest.split_at(rest.len() - trailing);
    if middle.iter().any(Option::is_some) {
        return None;
    }
    let mut restored: String = before.iter().flatten().map(String::as_str).collect();
    restored.push_str(text);
    restored.extend(after.iter().flatten().map(String::as_str));
    Some(restored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_tokens_are_put_back_where_their_place_is_known() {
        // <|end|> <|start|> "assistant" <|channel|>, decoded without special tokens.
        assert_eq!(
            with_markers("assistant", &[200_007, 200_006, 1, 200_005]).as_deref(),
            Some("<|end|><|start|>assistant<|channel|>")
        );
        assert_eq!(with_markers("", &[200_008]).as_deref(), Some("<|message|>"));
        // Already in the text, or no special token: nothing to do.
        assert_eq!(with_markers("<|call|>", &[200_012]), None);
        assert_eq!(with_markers("hi", &[1, 2]), None);
        // Between two ordinary tokens: its place in "ab" is unknown.
        assert_eq!(with_markers("ab", &[1, 200_008, 2]), None);
        assert_eq!(
            special_token(200_013).as_deref(),
            Some("<|reserved_200013|>")
        );
    }
}
