//! `minimax_m3`: MiniMax M3's `<mm:think>…</mm:think>` blocks, vLLM's
//! `MiniMaxM3ReasoningParser` (a legacy, text-marker parser).
//!
//! vLLM's whole-text rules, reproduced here:
//!
//! - Reasoning is the text between the first `<mm:think>` and the first
//!   `</mm:think>` after it; content is what comes before the block plus what
//!   comes after it, verbatim (later markers are content text). Without an end
//!   marker the rest of the output is reasoning.
//! - No `<mm:think>` at all: the output is content.
//! - An output that *starts* with `</mm:think>` (a stray closer): that marker is
//!   dropped and the rest is content, whatever it holds.
//! - `chat_template_kwargs.thinking_mode == "enabled"`: the template opened the
//!   block in the prompt, so the output starts inside reasoning (a `<mm:think>`
//!   at its very start is dropped) up to the first `</mm:think>`.
//!
//! Where vLLM's own modes disagree the `minimax_m3_reasoning` fixture records
//! the choice. With thinking enabled, vLLM's whole text re-reads the output when
//! a `<mm:think>` comes *later* (everything before it, already streamed as
//! reasoning, becomes content); no streaming parser can do that, so here such
//! a marker is reasoning text inside the block, and after the block ends the
//! content is verbatim (vLLM's streaming). vLLM's whole text ignores the prompt
//! (`thinking_mode="disabled"` renders a closed block), and so does this parser.

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser};
use crate::text::{MarkerScanner, Piece};

const START: &str = "<mm:think>";
const END: &str = "</mm:think>";

/// Where the parser is in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing classified yet, outside reasoning: a leading `</mm:think>` is
    /// dropped, a leading `<mm:think>` opens reasoning.
    Lead,
    /// Nothing classified yet, inside a block the prompt opened.
    LeadInReasoning,
    /// Content before the block: watching for `<mm:think>`.
    Before,
    /// Inside the block: watching for `</mm:think>`.
    Reasoning,
    /// The block is over (or cannot come): content as it comes.
    After,
}

/// The `minimax_m3` reasoning parser.
#[derive(Debug)]
pub struct MiniMaxM3ReasoningParser {
    scanner: MarkerScanner,
    phase: Phase,
    /// vLLM's `is_reasoning_end` for the prompt the parser was built with:
    /// the prompt has `</mm:think>` and no `<mm:think>` after it.
    prompt_ends_reasoning: bool,
}

impl MiniMaxM3ReasoningParser {
    /// A parser for the request's `options` (`thinking_mode`).
    pub fn new(options: &ParserOptions) -> Self {
        let thinking = options
            .chat_template_kwargs
            .get("thinking_mode")
            .and_then(|mode| mode.as_str())
            == Some("enabled");
        let prompt = &options.prompt;
        Self {
            prompt_ends_reasoning: prompt.rfind(END) > prompt.rfind(START),
            scanner: MarkerScanner::new(),
            phase: if thinking {
                Phase::LeadInReasoning
            } else {
                Phase::Lead
            },
        }
    }

    /// A boxed constructor for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(options))
    }

    fn drain(&mut self, out: &mut Vec<Event>) {
        while self.phase != Phase::After {
            let markers: &[&str] = match self.phase {
                Phase::Lead | Phase::LeadInReasoning => &[START, END],
                Phase::Before => &[START],
                _ => &[END],
            };
            let Some(piece) = self.scanner.next(markers) else {
                return;
            };
            self.phase = match (self.phase, piece) {
                (Phase::Lead | Phase::Before, Piece::Text(text)) => {
                    out.push(Event::Content(text.to_owned()));
                    Phase::Before
                }
                (_, Piece::Text(text)) => {
                    out.push(Event::Reasoning(text.to_owned()));
                    Phase::Reasoning
                }
                // Index 0 is `<mm:think>` in these phases' lists: it opens the
                // block. Any other marker is `</mm:think>`: it ends the block,
                // or is the dropped leading closer.
                (Phase::Lead | Phase::LeadInReasoning | Phase::Before, Piece::Marker(0)) => {
                    Phase::Reasoning
                }
                (_, Piece::Marker(_)) => Phase::After,
            };
        }
        let rest = self.scanner.finish();
        if !rest.is_empty() {
            out.push(Event::Content(rest));
        }
    }
}

impl ReasoningParser for MiniMaxM3ReasoningParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        if self.phase == Phase::After {
            if !text.is_empty() {
                out.push(Event::Content(text.to_owned()));
            }
            return;
        }
        self.scanner.push(text);
        self.drain(out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let rest = self.scanner.finish();
        if rest.is_empty() {
            return;
        }
        out.push(match self.phase {
            Phase::Lead | Phase::Before | Phase::After => Event::Content(rest),
            Phase::LeadInReasoning | Phase::Reasoning => Event::Reasoning(rest),
        });
    }
}
