//! Nemotron V3 (vLLM's `parser/nemotron_v3.py`, reasoning name `nemotron_v3`):
//! the Qwen3 grammar with trailing reasoning whitespace stripped, and one
//! rule of its own: when the request sets `enable_thinking=false` or
//! `force_nonempty_content=true` and the content is empty or blank, reasoning
//! and content swap places.

use crate::engine::adapters::EngineReasoningParser;
use crate::engine::models::qwen3::{self, QWEN3};
use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser};
use crate::text::py_is_blank;

/// The `nemotron_v3` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let thinking = options.template_flag("enable_thinking", true);
    let mut config = qwen3::config(QWEN3, thinking);
    config.name = "nemotron_v3";
    config.strip_trailing_reasoning_whitespace = true;
    let inner = EngineReasoningParser::new(config, thinking, &options.prompt);
    let kwargs = &options.chat_template_kwargs;
    let force = kwargs.get("enable_thinking") == Some(&false.into())
        || kwargs.get("force_nonempty_content") == Some(&true.into());
    if force {
        Box::new(ForceContent {
            inner,
            held: Vec::new(),
            decided: false,
        })
    } else {
        Box::new(inner)
    }
}

/// Holds everything until content shows a non-blank character; if it never
/// does, the reasoning becomes the content and the content the reasoning.
struct ForceContent {
    inner: EngineReasoningParser,
    held: Vec<Event>,
    decided: bool,
}

impl ForceContent {
    /// Release everything once content is not blank; `from` is where the
    /// events not yet looked at start.
    fn pass(&mut self, from: usize, out: &mut Vec<Event>) {
        if !self.decided
            && self.held[from..]
                .iter()
                .any(|e| matches!(e, Event::Content(text) if !py_is_blank(text)))
        {
            self.decided = true;
        }
        if self.decided {
            out.append(&mut self.held);
        }
    }
}

impl ReasoningParser for ForceContent {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        self.inner.prompt_ends_reasoning()
    }

    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        let from = self.held.len();
        self.inner.push(text, token_ids, &mut self.held);
        self.pass(from, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let from = self.held.len();
        self.inner.finish(&mut self.held);
        self.pass(from, out);
        if self.decided {
            return;
        }
        let (mut reasoning, mut content) = (String::new(), String::new());
        for event in self.held.drain(..) {
            match event {
                Event::Reasoning(text) => reasoning.push_str(&text),
                Event::Content(text) => content.push_str(&text),
                _ => {}
            }
        }
        if !reasoning.is_empty() {
            out.push(Event::Content(reasoning));
        }
        if !content.is_empty() {
            out.push(Event::Reasoning(content));
        }
    }

    fn is_engine_based(&self) -> bool {
        true
    }
}
