//! Granite 4.2 thinking (vLLM's `parser/granite_thinking.py`, reasoning name
//! `granite_thinking_parser`): Nemotron V3's format (the Qwen3 grammar,
//! trailing reasoning whitespace stripped), with two rules of its own:
//!
//! - the template writes `\n</think>\n`, so leading newlines of the content
//!   are dropped;
//! - with thinking on and `force_nonempty_content=true`, an output with no
//!   content at all (before that stripping) gives its reasoning as content.

use crate::engine::adapters::EngineReasoningParser;
use crate::engine::models::qwen3::{self, QWEN3, Wrappers};
use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser};

/// Granite's spellings: Qwen3's.
const GRANITE_THINKING: Wrappers = Wrappers {
    name: "granite_thinking_parser",
    ..QWEN3
};

/// The `granite_thinking_parser` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let thinking = options.template_flag("enable_thinking", true);
    let mut config = qwen3::config(GRANITE_THINKING, thinking);
    config.strip_trailing_reasoning_whitespace = true;
    let force = thinking
        && options.chat_template_kwargs.get("force_nonempty_content") == Some(&true.into());
    Box::new(GraniteThinkingParser {
        inner: EngineReasoningParser::new(config, thinking, &options.prompt),
        events: Vec::new(),
        content_started: false,
        held: force.then(Vec::new),
    })
}

/// The engine's events with the content's leading newlines dropped; while
/// no content has come and the swap may still happen, reasoning is `held`.
struct GraniteThinkingParser {
    inner: EngineReasoningParser,
    events: Vec<Event>,
    content_started: bool,
    held: Option<Vec<Event>>,
}

impl GraniteThinkingParser {
    fn pass(&mut self, out: &mut Vec<Event>) {
        for event in self.events.drain(..) {
            if let Some(held) = &mut self.held {
                if matches!(event, Event::Content(_)) {
                    out.append(held);
                    self.held = None;
                } else {
                    held.push(event);
                    continue;
                }
            }
            match event {
                Event::Content(text) if !self.content_started => {
                    let text = text.trim_start_matches('\n');
                    if !text.is_empty() {
                        self.content_started = true;
                        out.push(Event::Content(text.to_owned()));
                    }
                }
                other => out.push(other),
            }
        }
    }
}

impl ReasoningParser for GraniteThinkingParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        self.inner.prompt_ends_reasoning()
    }

    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        self.inner.push(text, token_ids, &mut self.events);
        self.pass(out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.inner.finish(&mut self.events);
        self.pass(out);
        // No content came: the reasoning is the content.
        if let Some(held) = self.held.take() {
            let reasoning: String = held
                .into_iter()
                .filter_map(|event| match event {
                    Event::Reasoning(text) => Some(text),
                    _ => None,
                })
                .collect();
            if !reasoning.is_empty() {
                out.push(Event::Content(reasoning));
            }
        }
    }

    fn is_engine_based(&self) -> bool {
        true
    }
}
