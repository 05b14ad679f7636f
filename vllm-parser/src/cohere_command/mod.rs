//! vLLM's Cohere Command parsers (`cohere_command3`, `cohere_command4`): the
//! `cohere_melody` filter (presets `cmd3` / `cmd4`) that vLLM 0.33.0 runs for
//! both halves (`vllm/parser/cohere_command.py`).
//!
//! Output is split by Command A's control tokens into regions: answer text
//! (`<|START_RESPONSE|>`, after `<|END_THINKING|>`; also `<|START_TEXT|>` for
//! Command 4), reasoning (`<|START_THINKING|>`), an action block of tool calls
//! (`<|START_ACTION|>`), and ignored text (after `<|END_RESPONSE|>`,
//! `<|END_ACTION|>`, Command 4's `<|END_TEXT|>`). Command 3 starts in answer
//! text, Command 4 in reasoning (its prompt opens the thinking block).
//!
//! vLLM's whole-text result is melody's `process_full_text`, which hands the
//! filter each region whole; melody's token-by-token streaming differs from it
//! in places (partial citations, parameters of a call followed by another), so
//! each region is filtered as a whole when its closing token (or the end)
//! arrives: every chunking gives the whole-text result. Text streams before
//! that up to the region's first `<` (which may open a citation), less
//! trailing whitespace: the whole-region result always starts with it.
//! Rules reproduced:
//! - Text is right-trimmed per region; reasoning is also left-trimmed until it
//!   has text (and that carries over into an answer when reasoning was empty).
//! - Command 3 citations `<co>text</co: 0:[1]>` are unwrapped to `text`; an
//!   unfinished one keeps its text.
//! - Tool calls need a string `tool_call_id`; the `action` module describes
//!   melody's key-search reading of the block. Arguments are the raw parameter text.
//! - Reasoning is returned even with only the tool parser selected; tool
//!   calls only when the tool parser is selected.

mod action;
mod text;

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::text::{MarkerScanner, Piece};
use action::ActionParser;
use text::{Match, TextFilter, find_partial};

/// What a region's text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    Answer,
    Reasoning,
    Action,
    Ignore,
}

/// A melody preset: its control tokens and the region each opens.
struct Preset {
    tokens: &'static [&'static [(&'static str, Region)]],
    start: Region,
}

/// Command A's control tokens, in both presets.
const COMMAND_A_TOKENS: &[(&str, Region)] = &[
    ("<|START_RESPONSE|>", Region::Answer),
    ("<|END_RESPONSE|>", Region::Ignore),
    ("<|START_THINKING|>", Region::Reasoning),
    ("<|END_THINKING|>", Region::Answer),
    ("<|START_ACTION|>", Region::Action),
    ("<|END_ACTION|>", Region::Ignore),
];

/// Command 4's answer delimiters.
const TEXT_TOKENS: &[(&str, Region)] = &[
    ("<|START_TEXT|>", Region::Answer),
    ("<|END_TEXT|>", Region::Ignore),
];

const CMD3: Preset = Preset {
    tokens: &[COMMAND_A_TOKENS],
    start: Region::Answer,
};

const CMD4: Preset = Preset {
    tokens: &[COMMAND_A_TOKENS, TEXT_TOKENS],
    start: Region::Reasoning,
};

/// How far early streaming has looked into the current region.
#[derive(Debug, Default)]
struct Early {
    /// Where the region's text starts after left-trimming.
    lead: usize,
    /// How far the region was searched for `<`.
    checked: usize,
    /// A `<` was found: the rest waits for the region's end.
    blocked: bool,
}

/// One request's Cohere Command parser (either half, or both: the reasoning
/// half steps aside for the tool half, as vLLM runs one parser).
pub struct CohereCommandParser {
    tokens: Vec<&'static str>,
    regions: Vec<Region>,
    scanner: MarkerScanner,
    region: Region,
    /// The current region's text, filtered when the region ends.
    segment: String,
    /// How much of the current region's filtered text was streamed early.
    streamed: usize,
    /// Scan state of the current region for early streaming.
    early: Early,
    text: TextFilter,
    actions: ActionParser,
    parse_tools: bool,
    finished: bool,
    /// vLLM's `is_reasoning_end` for the prompt the parser was built with.
    prompt_ends_reasoning: bool,
}

impl CohereCommandParser {
    fn new(preset: &Preset, parse_tools: bool) -> Self {
        Self {
            tokens: preset
                .tokens
                .concat()
                .iter()
                .map(|(token, _)| *token)
                .collect(),
            regions: preset
                .tokens
                .concat()
                .iter()
                .map(|(_, region)| *region)
                .collect(),
            scanner: MarkerScanner::new(),
            region: preset.start,
            segment: String::new(),
            streamed: 0,
            early: Early::default(),
            text: TextFilter::new(),
            actions: ActionParser::new(),
            parse_tools,
            finished: false,
            prompt_ends_reasoning: false,
        }
    }

    /// `cohere_command3` as the reasoning parser.
    pub fn command3_reasoning(options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(&CMD3, false).with_prompt(&options.prompt))
    }

    /// `cohere_command3` as the tool parser.
    pub fn command3_tool(_options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::new(&CMD3, true))
    }

    /// `cohere_command4` as the reasoning parser.
    pub fn command4_reasoning(options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(&CMD4, false).with_prompt(&options.prompt))
    }

    /// `cohere_command4` as the tool parser.
    pub fn command4_tool(_options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::new(&CMD4, true))
    }

    /// `BaseCohereCommandReasoningParser.is_reasoning_end`: scanning the
    /// prompt backwards, `<|CHATBOT_TOKEN|>` (the current turn's start) means
    /// not ended, `<|START_THINKING|>` means ended if an `<|END_THINKING|>`
    /// came after it, and the prompt's start likewise.
    fn with_prompt(mut self, prompt: &str) -> Self {
        let last = |marker: &str| prompt.rfind(marker);
        let end = last("<|END_THINKING|>");
        let start = last("<|START_THINKING|>");
        let chatbot = last("<|CHATBOT_TOKEN|>");
        self.prompt_ends_reasoning = if chatbot.is_some() && chatbot > start {
            false
        } else if start.is_some() {
            end > start
        } else {
            end.is_some()
        };
        self
    }

    fn push_text(&mut self, text: &str, out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        self.scanner.push(text);
        while let Some(piece) = self.scanner.next(&self.tokens) {
            match piece {
                Piece::Text(text) => self.segment.push_str(text),
                Piece::Marker(index) => {
                    let segment = std::mem::take(&mut self.segment);
                    let mut filtered = String::new();
                    if !segment.is_empty() {
                        self.filter(&segment, true, &mut filtered);
                    }
                    self.emit_rest(&filtered, out);
                    self.enter(self.regions[index]);
                }
            }
        }
        self.stream_early(out);
    }

    /// Stream the part of the region's text that its filtered result is sure
    /// to start with.
    fn stream_early(&mut self, out: &mut Vec<Event>) {
        if !matches!(self.region, Region::Answer | Region::Reasoning) || self.early.blocked {
            return;
        }
        let segment = &self.segment;
        let early = &mut self.early;
        // Where the text starts (leading whitespace is trimmed in reasoning).
        if self.text.left_trimmed {
            early.lead += segment[early.lead..]
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(segment.len() - early.lead);
            early.checked = early.checked.max(early.lead);
            if early.lead == segment.len() {
                return;
            }
        }
        let sure_end = match memchr::memchr(b'<', &segment.as_bytes()[early.checked..]) {
            Some(at) => {
                early.blocked = true;
                early.checked + at
            }
            None => {
                early.checked = segment.len();
                segment.trim_end().len()
            }
        };
        let from = early.lead + self.streamed;
        if sure_end > from {
            let fresh = segment[from..sure_end].to_owned();
            self.streamed = sure_end - early.lead;
            self.emit(fresh, out);
        }
    }

    /// The filtered text of a region that ended, less what was streamed
    /// (which it starts with, see the module doc).
    fn emit_rest(&mut self, filtered: &str, out: &mut Vec<Event>) {
        let streamed = std::mem::take(&mut self.streamed);
        self.early = Early::default();
        if let Some(rest) = filtered.get(streamed..) {
            self.emit(rest.to_owned(), out);
        }
    }

    fn emit(&self, text: String, out: &mut Vec<Event>) {
        if text.is_empty() {
            return;
        }
        out.push(if self.region == Region::Reasoning {
            Event::Reasoning(text)
        } else {
            Event::Content(text)
        });
    }

    fn finish_text(&mut self, out: &mut Vec<Event>) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let mut segment = std::mem::take(&mut self.segment);
        segment.push_str(&self.scanner.finish());
        let mut filtered = String::new();
        if !segment.is_empty() {
            // melody filters a last region that ends like the start of a token
            // once; any other in two steps (as text, then the rest as final).
            let pending_token = self
                .tokens
                .iter()
                .any(|token| matches!(find_partial(&segment, token), Match::Partial(_)));
            if pending_token {
                self.filter(&segment, true, &mut filtered);
            } else {
                let consumed = self.filter(&segment, false, &mut filtered);
                if consumed < segment.len() {
                    self.filter(&segment[consumed..], true, &mut filtered);
                }
            }
        }
        self.emit_rest(&filtered, out);
        if self.parse_tools {
            for (index, call) in self.actions.calls().into_iter().enumerate() {
                out.push(Event::ToolCallBegin {
                    index,
                    id: (!call.id.is_empty()).then_some(call.id),
                    name: call.name,
                });
                out.push(Event::ToolCallArguments {
                    index,
                    delta: call.arguments,
                });
                out.push(Event::ToolCallEnd { index });
            }
        }
    }

    /// melody's `handle_token` for the current region: appends the text it
    /// emits to `filtered` and returns the bytes consumed.
    fn filter(&mut self, text: &str, last: bool, filtered: &mut String) -> usize {
        match self.region {
            Region::Ignore => 0,
            Region::Action => self.actions.parse(text),
            Region::Answer | Region::Reasoning => {
                let (emitted, consumed) = self.text.process(text, last);
                filtered.push_str(&emitted);
                consumed
            }
        }
    }

    fn enter(&mut self, region: Region) {
        if matches!(region, Region::Answer | Region::Reasoning) {
            self.text.restart(region == Region::Reasoning);
        }
        self.region = region;
    }
}

impl ReasoningParser for CohereCommandParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.push_text(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_text(out);
    }

    /// vLLM runs one melody filter for both halves.
    fn yields_to_tool_parser(&self) -> bool {
        true
    }
}

impl ToolParser for CohereCommandParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.push_text(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_text(out);
    }
}
