//! `<think>…</think>`-style reasoning: the start/end-marker family of vLLM's
//! `BaseThinkingReasoningParser` and the think states of its parser engines.
//!
//! Each registered name is a [`ThinkFormat`] constant; behaviour differences between
//! vLLM's implementations are options, checked against vLLM by the `think` fixtures.

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser, py_truthy};
use crate::text::{MarkerScanner, Piece};

/// Which start markers inside the reasoning are removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartMarkers {
    /// Only the first (vLLM's `str.partition`); later ones stay reasoning text.
    First,
    /// Every one before the end marker (the parser engines absorb them).
    All,
    /// None: the start marker is reasoning text (Step3 only knows the end marker).
    Keep,
    /// Only at the very start of the output (Olmo3's `^(?:<think>)?` regex);
    /// anywhere else it is reasoning text.
    Leading,
}

/// What an output whose reasoning never ends is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unclosed {
    /// Reasoning: reasoning streams as it comes.
    Reasoning,
    /// Content, verbatim with its start marker (Olmo3's whole-text regex fails
    /// without an end marker): reasoning is held back until the end marker.
    Content,
}

/// How the prompt tells that reasoning is already over when the output starts
/// (vLLM's `is_reasoning_end(prompt_token_ids)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptRule {
    /// The last start or end marker in the prompt is an end marker.
    LastMarkerIsEnd,
    /// The prompt holds an end marker anywhere (Step3, so any earlier assistant turn
    /// in the history ends reasoning).
    AnyEnd,
    /// The prompt is not consulted (Olmo3's whole-text parsing ignores it).
    Ignore,
    /// Like [`LastMarkerIsEnd`](Self::LastMarkerIsEnd), but only within the
    /// current assistant turn: the backward search stops at this marker
    /// (Poolside's `<assistant>`), so a `</think>` in earlier turns does not count.
    LastMarkerIsEndSince(&'static str),
    /// The last start, end or turn-boundary marker is an end marker: vLLM's
    /// parser-engine `is_reasoning_end`, whose backward scan stops at the
    /// model's turn boundaries (Qwen3's `<|im_start|>` / `<|im_end|>`), so a
    /// `</think>` in an earlier turn or in the user's text does not count.
    LastMarkerIsEndBefore(&'static [&'static str]),
}

/// Reasoning switched by `chat_template_kwargs.reasoning_effort` (HY V3 / V4).
#[derive(Debug, Clone, Copy)]
pub struct EffortSwitch {
    /// The effort that turns reasoning off (`"no_think"`).
    pub off: &'static str,
    /// Whether reasoning is on when no (or a falsy) effort is given.
    pub by_default: bool,
}

/// The options that make one think-tag parser.
#[derive(Debug, Clone, Copy)]
pub struct ThinkFormat {
    /// Opens reasoning; optional in the output (output starts in reasoning).
    pub start: &'static str,
    /// Closes reasoning; the rest is content.
    pub end: &'static str,
    /// How start markers are removed.
    pub start_markers: StartMarkers,
    /// Markers that end reasoning implicitly and stay in the content
    /// (e.g. Qwen3's `<tool_call>`).
    pub implicit_end: &'static [&'static str],
    /// `chat_template_kwargs` flags that switch reasoning on; any truthy one does.
    /// When reasoning is off, all output is content.
    pub thinking_flags: &'static [&'static str],
    /// Whether reasoning is on when none of `thinking_flags` is given.
    pub thinking_by_default: bool,
    /// A `chat_template_kwargs.reasoning_effort` switch, if the format has one.
    pub effort: Option<EffortSwitch>,
    /// How a prompt that already closed reasoning is recognised.
    pub prompt_rule: PromptRule,
    /// What reasoning that never ends turns into.
    pub unclosed: Unclosed,
}

/// `deepseek_r1` (also vLLM's `step5`): `DeepSeekR1ReasoningParser`.
pub const DEEPSEEK_R1: ThinkFormat = ThinkFormat {
    start: "<think>",
    end: "</think>",
    start_markers: StartMarkers::First,
    implicit_end: &[],
    thinking_flags: &[],
    thinking_by_default: true,
    effort: None,
    prompt_rule: PromptRule::LastMarkerIsEnd,
    unclosed: Unclosed::Reasoning,
};

/// `deepseek_v3`: `DeepSeekR1ReasoningParser` when the request sets `thinking` or
/// `enable_thinking`, otherwise no reasoning (vLLM's `IdentityReasoningParser`).
pub const DEEPSEEK_V3: ThinkFormat = ThinkFormat {
    thinking_flags: &["thinking", "enable_thinking"],
    thinking_by_default: false,
    ..DEEPSEEK_R1
};

/// `step3`: everything before `</think>` is reasoning; `<think>` is not special.
pub const STEP3: ThinkFormat = ThinkFormat {
    start_markers: StartMarkers::Keep,
    prompt_rule: PromptRule::AnyEnd,
    ..DEEPSEEK_R1
};

/// `qwen3`: the reasoning half of vLLM's `Qwen3Parser` engine.
pub const QWEN3: ThinkFormat = ThinkFormat {
    start: "<think>",
    end: "</think>",
    start_markers: StartMarkers::All,
    implicit_end: &["<tool_call>"],
    thinking_flags: &["enable_thinking"],
    thinking_by_default: true,
    effort: None,
    prompt_rule: PromptRule::LastMarkerIsEndBefore(&["<|im_start|>", "<|im_end|>"]),
    unclosed: Unclosed::Reasoning,
};

/// `olmo3`: `Olmo3ReasoningParser`'s whole-text regex
/// `^(?:<think>)?(.*?)</think>(.*)$`: reasoning up to the first `</think>`, and
/// no reasoning at all without one. (Its streaming mode drops characters next to
/// markers; the `olmo3` fixtures follow the whole text.)
pub const OLMO3: ThinkFormat = ThinkFormat {
    start_markers: StartMarkers::Leading,
    prompt_rule: PromptRule::Ignore,
    unclosed: Unclosed::Content,
    ..DEEPSEEK_R1
};

/// `holo2`: vLLM's `DeepSeekV3ReasoningWithThinkingParser`, [`DEEPSEEK_V3`]
/// thinking unless the request sets `thinking` or `enable_thinking`.
pub const HOLO2: ThinkFormat = ThinkFormat {
    thinking_by_default: true,
    ..DEEPSEEK_V3
};

/// `poolside_v1`: [`DEEPSEEK_V3`] whose prompt check only looks back to the
/// current turn's `<assistant>` token.
pub const POOLSIDE_V1: ThinkFormat = ThinkFormat {
    prompt_rule: PromptRule::LastMarkerIsEndSince("<assistant>"),
    ..DEEPSEEK_V3
};

/// `hy_v3`: [`DEEPSEEK_R1`] when `reasoning_effort` asks for thinking; without
/// it (`"no_think"`, the default) all output is content.
pub const HY_V3: ThinkFormat = ThinkFormat {
    effort: Some(EffortSwitch {
        off: "no_think",
        by_default: false,
    }),
    ..DEEPSEEK_R1
};

/// `hy_v4`: [`DEEPSEEK_R1`] unless `reasoning_effort` is `"no_think"` (its
/// default is `"high"`). (vLLM reads a per-checkpoint suffix of the think tags,
/// `<think:SUFFIX>`, from the vocabulary; these are the unsuffixed tags.)
pub const HY_V4: ThinkFormat = ThinkFormat {
    effort: Some(EffortSwitch {
        off: "no_think",
        by_default: true,
    }),
    ..DEEPSEEK_R1
};

/// `k2_horizon` at `reasoning_effort="high"` (the default): vLLM's
/// `K2HorizonReasoningParser`, `<ifm|think>…</ifm|think>` with the start marker
/// only stripped at the very start and `<ifm|tool_calls>` ending reasoning.
/// (vLLM's whole text makes an output with neither marker content; the
/// `k2_horizon` fixture follows its streaming, where such reasoning streams.)
pub const K2_HORIZON: ThinkFormat = ThinkFormat {
    start: "<ifm|think>",
    end: "</ifm|think>",
    start_markers: StartMarkers::Leading,
    implicit_end: &["<ifm|tool_calls>"],
    ..DEEPSEEK_R1
};

/// The [`K2_HORIZON`] markers for the request's `reasoning_effort` (`"medium"`:
/// `<ifm|think_fast>`, `"low"`: `<ifm|think_faster>`). vLLM rejects other values
/// when it builds the parser; here they get the default, `"high"`.
pub fn k2_horizon(options: &ParserOptions) -> ThinkFormat {
    let effort = options.chat_template_kwargs.get("reasoning_effort");
    match effort.and_then(|effort| effort.as_str()) {
        Some("medium") => ThinkFormat {
            start: "<ifm|think_fast>",
            end: "</ifm|think_fast>",
            ..K2_HORIZON
        },
        Some("low") => ThinkFormat {
            start: "<ifm|think_faster>",
            end: "</ifm|think_faster>",
            ..K2_HORIZON
        },
        _ => K2_HORIZON,
    }
}

/// A reasoning parser for one [`ThinkFormat`].
pub struct ThinkParser {
    format: ThinkFormat,
    /// vLLM's `is_reasoning_end` for the prompt the parser was built with.
    prompt_ends_reasoning: bool,
    markers: Vec<&'static str>,
    scanner: MarkerScanner,
    in_reasoning: bool,
    /// The start state without the prompt (vLLM's whole-text parse of a
    /// legacy format, see [`ReasoningParser::follows_whole_text`]).
    thinking_without_prompt: bool,
    start_seen: bool,
    /// With [`Unclosed::Content`]: the reasoning so far, and the raw output it
    /// came from (start marker included), until the end marker decides.
    held_reasoning: String,
    held_raw: String,
}

impl ThinkParser {
    /// A parser for `format` under the request's `options`.
    pub fn new(format: ThinkFormat, options: &ParserOptions) -> Self {
        let mut given = format
            .thinking_flags
            .iter()
            .filter_map(|flag| options.chat_template_kwargs.get(*flag))
            .peekable();
        let thinking = match given.peek() {
            None => format.thinking_by_default,
            Some(_) => given.any(py_truthy),
        };
        let thinking = thinking
            && format.effort.is_none_or(|switch| {
                match options
                    .chat_template_kwargs
                    .get("reasoning_effort")
                    .filter(|effort| py_truthy(effort))
                {
                    Some(effort) => effort.as_str() != Some(switch.off),
                    None => switch.by_default,
                }
            });
        let prompt_ends_reasoning = is_reasoning_end(&format, thinking, &options.prompt);
        let thinking_without_prompt = thinking;
        let thinking = thinking && !prompt_closed_reasoning(&format, &options.prompt);
        let start = if format.start_markers == StartMarkers::Keep {
            ""
        } else {
            format.start
        };
        let mut markers = vec![start, format.end];
        markers.extend_from_slice(format.implicit_end);
        Self {
            format,
            prompt_ends_reasoning,
            markers,
            scanner: MarkerScanner::new(),
            in_reasoning: thinking,
            thinking_without_prompt,
            start_seen: false,
            held_reasoning: String::new(),
            held_raw: String::new(),
        }
    }

    /// A boxed constructor for the registry.
    pub fn boxed(format: ThinkFormat, options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(format, options))
    }

    fn drain(&mut self, out: &mut Vec<Event>) {
        while self.in_reasoning {
            let Some(piece) = self.scanner.next(&self.markers) else {
                return;
            };
            let holding = self.format.unclosed == Unclosed::Content;
            match piece {
                Piece::Text(text) if holding => {
                    self.held_raw.push_str(text);
                    self.held_reasoning.push_str(text);
                }
                Piece::Text(text) => out.push(Event::Reasoning(text.to_owned())),
                Piece::Marker(0) => {
                    if self.start_seen && self.format.start_markers == StartMarkers::First {
                        out.push(Event::Reasoning(self.format.start.to_owned()));
                    }
                    self.start_seen = true;
                    if holding {
                        self.held_raw.push_str(self.format.start);
                    }
                }
                Piece::Marker(1) => {
                    self.in_reasoning = false;
                    self.release_held(out);
                }
                Piece::Marker(i) => {
                    self.in_reasoning = false;
                    self.release_held(out);
                    out.push(Event::Content(self.markers[i].to_owned()));
                }
            }
            if self.format.start_markers == StartMarkers::Leading {
                self.markers[0] = "";
            }
        }
        let rest = self.scanner.finish();
        if !rest.is_empty() {
            out.push(Event::Content(rest));
        }
    }

    /// The end marker came: held reasoning is reasoning after all.
    fn release_held(&mut self, out: &mut Vec<Event>) {
        self.held_raw.clear();
        let reasoning = std::mem::take(&mut self.held_reasoning);
        if !reasoning.is_empty() {
            out.push(Event::Reasoning(reasoning));
        }
    }
}

/// Whether `prompt` already ended reasoning, by the format's [`PromptRule`].
fn prompt_closed_reasoning(format: &ThinkFormat, prompt: &str) -> bool {
    let end = prompt.rfind(format.end);
    match format.prompt_rule {
        PromptRule::AnyEnd => end.is_some(),
        PromptRule::LastMarkerIsEnd => end > prompt.rfind(format.start),
        PromptRule::LastMarkerIsEndSince(turn) => {
            end > prompt.rfind(format.start) && end > prompt.rfind(turn)
        }
        PromptRule::LastMarkerIsEndBefore(boundaries) => {
            let boundary = boundaries.iter().filter_map(|b| prompt.rfind(b)).max();
            end > prompt.rfind(format.start) && end > boundary
        }
        PromptRule::Ignore => false,
    }
}

/// vLLM's `is_reasoning_end(prompt_token_ids)` for `format` (`thinking`: the
/// request's flags left reasoning on). Where a format's prompt rule is vLLM's
/// streaming start state this is the same rule; it differs where vLLM's
/// answer does: a parser built with thinking off is vLLM's
/// `IdentityReasoningParser` (always ended); Olmo3's start state ignores the
/// prompt, its `is_reasoning_end` finds `</think>` anywhere; the implicit ends
/// (a tool-call start) end reasoning too; and Qwen3's parser engine answers
/// `not wait_for_reasoning` (thinking off) when its backward scan reaches a
/// turn boundary or the prompt's start.
fn is_reasoning_end(format: &ThinkFormat, thinking: bool, prompt: &str) -> bool {
    let last = |marker: &str| prompt.rfind(marker);
    let end = std::iter::once(format.end)
        .chain(format.implicit_end.iter().copied())
        .filter_map(last)
        .max();
    let start = last(format.start);
    match format.prompt_rule {
        PromptRule::LastMarkerIsEndBefore(boundaries) => {
            let boundary = boundaries.iter().filter_map(|b| last(b)).max();
            let newest = [end, start, boundary].into_iter().flatten().max();
            // Qwen3's `THINK_START` opens reasoning only from its thinking
            // start state; elsewhere the scan stops there as at a boundary.
            newest.is_some() && newest == end || !thinking
        }
        _ if !thinking => true,
        PromptRule::AnyEnd | PromptRule::Ignore => end.is_some(),
        PromptRule::LastMarkerIsEnd => end > start,
        PromptRule::LastMarkerIsEndSince(turn) => end > start && end > last(turn),
    }
}

impl ReasoningParser for ThinkParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        if self.in_reasoning {
            self.scanner.push(text);
            self.drain(out);
        } else if !text.is_empty() {
            out.push(Event::Content(text.to_owned()));
        }
    }

    /// vLLM's think-tag formats that absorb every start marker are the
    /// reasoning halves of its parser engines (`qwen3`).
    fn is_engine_based(&self) -> bool {
        self.format.start_markers == StartMarkers::All
    }

    /// A legacy format's whole-text `extract_reasoning` reads only the output.
    fn follows_whole_text(&mut self) {
        if !self.is_engine_based() {
            self.in_reasoning = self.thinking_without_prompt;
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let mut rest = self.scanner.finish();
        if self.in_reasoning && self.format.unclosed == Unclosed::Content {
            // No end marker: the whole output is content, as it came.
            rest.insert_str(0, &std::mem::take(&mut self.held_raw));
            self.held_reasoning.clear();
            self.in_reasoning = false;
        }
        if !rest.is_empty() {
            out.push(if self.in_reasoning {
                Event::Reasoning(rest)
            } else {
                Event::Content(rest)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reasoning and content of one whole push.
    fn parse(format: ThinkFormat, prompt: &str, whole_text: bool, text: &str) -> Vec<Event> {
        let options = ParserOptions {
            prompt: prompt.to_owned(),
            ..ParserOptions::default()
        };
        let mut parser = ThinkParser::new(format, &options);
        if whole_text {
            parser.follows_whole_text();
        }
        let mut out = Vec::new();
        parser.push(text, &[], &mut out);
        parser.finish(&mut out);
        out
    }

    #[test]
    fn whole_text_start_ignores_the_prompt_of_legacy_formats() {
        let closed = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
        let content = vec![Event::Content("Hi".into())];
        let reasoning = vec![Event::Reasoning("Hi".into())];
        // vLLM's streaming start: the prompt ended reasoning.
        assert_eq!(parse(DEEPSEEK_R1, closed, false, "Hi"), content);
        // Its whole text never sees the prompt.
        assert_eq!(parse(DEEPSEEK_R1, closed, true, "Hi"), reasoning);
        // An engine-based format's whole text reads it too.
        assert_eq!(parse(QWEN3, closed, true, "Hi"), content);
    }
}
