//! `hunyuan_a13b`: vLLM's `HunyuanA13BReasoningParser`,
//! `<think>\nREASONING\n</think>\n<answer>\nCONTENT\n</answer>`.
//!
//! vLLM's whole-text rules (two regexes), which this parser reproduces:
//! - the output starts with `<think>\n`, then the first `\n</think>\n<answer>\n`
//!   and a `\n</answer>` after it: the reasoning is between the first two, the
//!   content runs from there to that `\n</answer>`;
//! - otherwise, with a `\n</answer>` anywhere: no reasoning, the content is
//!   everything before the first `\n</answer>`;
//! - otherwise, a `<think>\n` followed later by `\n</think>\n<answer>\n`: the
//!   reasoning is between them, the content is the rest, and text before the
//!   `<think>\n` is dropped;
//! - otherwise all text is content.
//!
//! Only the first case can stream (its content, once the reasoning ended with no
//! `\n</answer>` before it); the others are decided when `\n</answer>` comes or
//! the output ends, so their text is held until then. (vLLM's streaming follows token ids of Hunyuan's own
//! vocabulary; the `hunyuan_a13b` fixture follows the whole text.)

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser};
use crate::text::{MarkerScanner, Piece};

const THINK_START: &str = "<think>\n";
const ANSWER_START: &str = "\n</think>\n<answer>\n";
const ANSWER_END: &str = "\n</answer>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Not yet known whether the output starts with `<think>\n`.
    Start,
    /// It did: reasoning (held, with the raw text) until `ANSWER_START`.
    Thinking,
    /// After `ANSWER_START`: content streams until `ANSWER_END`.
    Answer,
    /// After `ANSWER_START` with an `ANSWER_END` before it: held until
    /// another `ANSWER_END` shows the reasoning was reasoning after all.
    AnswerHeld,
    /// It did not: everything held until `ANSWER_END` or the end.
    Other,
    /// After the first `ANSWER_END`: everything is dropped.
    Done,
}

/// The `hunyuan_a13b` reasoning parser.
pub struct HunyuanA13bParser {
    scanner: MarkerScanner,
    stage: Stage,
    /// The raw text held so far.
    held: String,
    /// Where in `held` the first `ANSWER_END` starts.
    first_end: Option<usize>,
    /// [`Stage::AnswerHeld`]: where in `held` the reasoning ends.
    reasoning_end: usize,
}

impl HunyuanA13bParser {
    /// A boxed constructor for the registry.
    pub fn boxed(_options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self {
            scanner: MarkerScanner::new(),
            stage: Stage::Start,
            held: String::new(),
            first_end: None,
            reasoning_end: 0,
        })
    }

    fn scan(&mut self, out: &mut Vec<Event>) {
        loop {
            match self.stage {
                Stage::Start => {
                    let pending = self.scanner.pending();
                    if pending.starts_with(THINK_START) {
                        self.scanner.next(&[THINK_START]);
                        self.held.push_str(THINK_START);
                        self.stage = Stage::Thinking;
                    } else if THINK_START.starts_with(pending) {
                        return;
                    } else {
                        self.stage = Stage::Other;
                    }
                }
                Stage::Thinking => match self.scanner.next(&[ANSWER_START, ANSWER_END]) {
                    None => return,
                    Some(Piece::Text(text)) => self.held.push_str(text),
                    Some(Piece::Marker(0)) if self.first_end.is_none() => {
                        let reasoning = &self.held[THINK_START.len()..];
                        push(out, Event::Reasoning(reasoning.to_owned()));
                        self.held.clear();
                        self.stage = Stage::Answer;
                    }
                    Some(Piece::Marker(0)) => {
                        self.reasoning_end = self.held.len();
                        self.held.push_str(ANSWER_START);
                        self.stage = Stage::AnswerHeld;
                    }
                    Some(Piece::Marker(_)) => {
                        self.first_end.get_or_insert(self.held.len());
                        self.held.push_str(ANSWER_END);
                    }
                },
                Stage::AnswerHeld => match self.scanner.next(&[ANSWER_END]) {
                    None => return,
                    Some(Piece::Text(text)) => self.held.push_str(text),
                    Some(Piece::Marker(_)) => {
                        let held = std::mem::take(&mut self.held);
                        let content = &held[self.reasoning_end + ANSWER_START.len()..];
                        let reasoning = &held[THINK_START.len()..self.reasoning_end];
                        push(out, Event::Reasoning(reasoning.to_owned()));
                        push(out, Event::Content(content.to_owned()));
                        self.stage = Stage::Done;
                    }
                },
                Stage::Answer => match self.scanner.next(&[ANSWER_END]) {
                    None => return,
                    Some(Piece::Text(text)) => push(out, Event::Content(text.to_owned())),
                    Some(Piece::Marker(_)) => self.stage = Stage::Done,
                },
                Stage::Other => match self.scanner.next(&[ANSWER_END]) {
                    None => return,
                    Some(Piece::Text(text)) => self.held.push_str(text),
                    Some(Piece::Marker(_)) => {
                        push(out, Event::Content(std::mem::take(&mut self.held)));
                        self.stage = Stage::Done;
                    }
                },
                Stage::Done => {
                    self.scanner.finish();
                    return;
                }
            }
        }
    }
}

fn push(out: &mut Vec<Event>, event: Event) {
    let empty = matches!(&event, Event::Reasoning(t) | Event::Content(t) if t.is_empty());
    if !empty {
        out.push(event);
    }
}

impl ReasoningParser for HunyuanA13bParser {
    /// vLLM answers from the parser's streaming state (`current_state ==
    /// "response"`), which a fresh parser has not reached.
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(false)
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.scanner.push(text);
        self.scan(out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let rest = self.scanner.finish();
        let text = std::mem::take(&mut self.held) + &rest;
        match self.stage {
            Stage::Start => push(out, Event::Content(text)),
            // No `ANSWER_START` followed by an `ANSWER_END`: the content is the
            // text before the first `ANSWER_END`, if any.
            Stage::Thinking | Stage::AnswerHeld => {
                let end = self.first_end.unwrap_or(text.len());
                push(out, Event::Content(text[..end].to_owned()));
            }
            Stage::Answer => push(out, Event::Content(rest)),
            Stage::Done => {}
            Stage::Other => {
                // The second regex: `<think>\n(.*?)\n</think>\n<answer>\n(.*)`.
                let split = text.find(THINK_START).and_then(|start| {
                    let body = start + THINK_START.len();
                    let end = body + text[body..].find(ANSWER_START)?;
                    Some((body, end))
                });
                match split {
                    Some((body, end)) => {
                        push(out, Event::Reasoning(text[body..end].to_owned()));
                        push(
                            out,
                            Event::Content(text[end + ANSWER_START.len()..].to_owned()),
                        );
                    }
                    None => push(out, Event::Content(text)),
                }
            }
        }
    }
}
