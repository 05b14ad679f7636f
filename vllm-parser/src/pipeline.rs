//! One request's parsing: reasoning first, then tool calls in the content.

use crate::error::ParserError;
use crate::event::Event;
use crate::message::{MessageBuilder, ParsedMessage};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::registry;

/// The per-request parser a server holds: an optional [`ReasoningParser`] whose
/// content flows into an optional [`ToolParser`] (vLLM's `DelegatingParser`).
///
/// ```
/// use vllm_parser::{MessageParser, ParserOptions};
/// let options = ParserOptions::default();
/// let mut parser = MessageParser::from_names(Some("deepseek_r1"), Some("hermes"), &options)?;
/// let message = parser.parse("<think>hm</think>Hi", &[]);
/// assert_eq!(message.reasoning.as_deref(), Some("hm"));
/// assert_eq!(message.content.as_deref(), Some("Hi"));
/// # Ok::<(), vllm_parser::ParserError>(())
/// ```
pub struct MessageParser {
    reasoning: Option<Box<dyn ReasoningParser>>,
    tool: Option<Box<dyn ToolParser>>,
    scratch: Vec<Event>,
}

impl MessageParser {
    /// Compose the parsers; with neither, all text is content.
    pub fn new(
        mut reasoning: Option<Box<dyn ReasoningParser>>,
        mut tool: Option<Box<dyn ToolParser>>,
    ) -> Self {
        if let (Some(reasoning), Some(tool)) = (&reasoning, &mut tool) {
            tool.follows_reasoning_parser();
            if !reasoning.is_engine_based() {
                tool.follows_legacy_reasoning_parser();
            }
        }
        let yields = reasoning
            .as_ref()
            .is_some_and(|r| r.yields_to_tool_parser());
        if yields && tool.is_some() {
            reasoning = None;
        }
        Self {
            reasoning,
            tool,
            scratch: Vec::new(),
        }
    }

    /// Build the parsers registered under vLLM's names (`--reasoning-parser`,
    /// `--tool-call-parser`) for one request (the reasoning parser as
    /// [`registry::reasoning_parser_beside`] builds it next to `tool`).
    pub fn from_names(
        reasoning: Option<&str>,
        tool: Option<&str>,
        options: &ParserOptions,
    ) -> Result<Self, ParserError> {
        Ok(Self::new(
            reasoning
                .map(|name| registry::reasoning_parser_beside(name, tool, options))
                .transpose()?,
            tool.map(|name| registry::tool_parser(name, options))
                .transpose()?,
        ))
    }

    /// Parse one streamed delta, appending its events to `out`.
    ///
    /// The tool parser sees `token_ids` only for content that is the whole delta.
    pub fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        let start = out.len();
        match &mut self.reasoning {
            Some(reasoning) => {
                reasoning.push(text, token_ids, &mut self.scratch);
                self.route(text, token_ids, out);
            }
            None => self.content(text, token_ids, out),
        }
        self.rewrite_content(start, false, out);
    }

    /// End of output: flush both parsers, appending the last events to `out`.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        let start = out.len();
        if let Some(reasoning) = &mut self.reasoning {
            reasoning.finish(&mut self.scratch);
            self.route("", &[], out);
        }
        if let Some(tool) = &mut self.tool {
            tool.finish(out);
        }
        self.rewrite_content(start, true, out);
    }

    /// The reasoning parser's [`rewrite_content`](ReasoningParser::rewrite_content)
    /// over the content events from `start` on.
    fn rewrite_content(&mut self, start: usize, last: bool, out: &mut Vec<Event>) {
        let Some(reasoning) = &mut self.reasoning else {
            return;
        };
        let mut i = start;
        while i < out.len() {
            if let Event::Content(text) = &out[i] {
                let Some(text) = reasoning.rewrite_content(text, false) else {
                    return;
                };
                if text.is_empty() {
                    out.remove(i);
                    continue;
                }
                out[i] = Event::Content(text);
            }
            i += 1;
        }
        if last
            && let Some(tail) = reasoning.rewrite_content("", true)
            && !tail.is_empty()
        {
            out.push(Event::Content(tail));
        }
    }

    /// Parse a whole output: one delta, then finish.
    pub fn parse(&mut self, text: &str, token_ids: &[u32]) -> ParsedMessage {
        let mut events = Vec::new();
        self.push(text, token_ids, &mut events);
        self.finish(&mut events);
        let mut message = MessageBuilder::new();
        message.extend(&events);
        message.finish()
    }

    fn route(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        for event in scratch.drain(..) {
            match event {
                Event::Content(content) => {
                    let ids = if content == text { token_ids } else { &[] };
                    self.content(&content, ids, out);
                }
                other => out.push(other),
            }
        }
        self.scratch = scratch;
    }

    fn content(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        match &mut self.tool {
            Some(tool) => tool.push(text, token_ids, out),
            None if text.is_empty() => {}
            None => out.push(Event::Content(text.to_owned())),
        }
    }
}
