//! `minimax_m2_append_think`: no reasoning split at all; the content is the output
//! with `<think>` put back in front (the chat template opened it in the prompt),
//! vLLM's `MiniMaxM2AppendThinkReasoningParser`.

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser};

/// The `minimax_m2_append_think` reasoning parser.
#[derive(Debug, Default)]
pub struct AppendThinkParser {
    started: bool,
    /// vLLM's `is_reasoning_end(prompt)`: the prompt's last think tag is `</think>`.
    prompt_ends_reasoning: bool,
}

impl AppendThinkParser {
    /// A boxed constructor for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ReasoningParser> {
        let prompt = &options.prompt;
        Box::new(Self {
            started: false,
            prompt_ends_reasoning: prompt.rfind("</think>") > prompt.rfind("<think>"),
        })
    }

    fn start(&mut self, out: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            out.push(Event::Content("<think>".to_owned()));
        }
    }
}

impl ReasoningParser for AppendThinkParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.start(out);
        if !text.is_empty() {
            out.push(Event::Content(text.to_owned()));
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.start(out);
    }
}
