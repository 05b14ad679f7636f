//! MiniCPM-V (vLLM's `parser/minicpmv.py`, reasoning name `minicpmv`; its
//! calls are Qwen3-Coder's, parsed by `qwen3_coder`): the Qwen3 grammar with
//! three additions.
//!
//! - `<|im_end|>`, `<reserved_12>`…`<reserved_15>` and
//!   `<|reserved_12|>`…`<|reserved_15|>` are dropped from reasoning and content.
//! - With thinking off (`enable_thinking` false) a stray `<think>…</think>` is
//!   dropped, not shown.
//! - The tokenizer decodes some newlines as the two characters `\` `n`, so
//!   reasoning and content get them back as newlines ([`EscapedNewlines`]);
//!   code, inline code and LaTeX spans keep their backslashes.
//!
//! Reasoning is recovered as it comes; content after the tool parser ran
//! (through [`ReasoningParser::rewrite_content`]), as vLLM recovers the final
//! content, so call arguments keep their escapes.

use crate::engine::adapters::EngineReasoningParser;
use crate::engine::config::{EngineConfig, State, on};
use crate::engine::models::qwen3::{self, QWEN3, Wrappers};
use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser};

use State::*;

/// MiniCPM-V's spellings: Qwen3's, no turn boundaries read from the prompt.
const MINICPMV: Wrappers = Wrappers {
    name: "minicpmv",
    turn_boundaries: &[],
    ..QWEN3
};

/// Markers dropped from reasoning and content.
const PASSTHROUGH: [&str; 9] = [
    "<|im_end|>",
    "<reserved_12>",
    "<reserved_13>",
    "<reserved_14>",
    "<reserved_15>",
    "<|reserved_12|>",
    "<|reserved_13|>",
    "<|reserved_14|>",
    "<|reserved_15|>",
];

/// The MiniCPM-V grammar; `thinking` starts the output in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut config = qwen3::config(MINICPMV, thinking);
    if !thinking {
        config.name = "minicpmv_no_thinking";
        config
            .transitions
            .insert(0, on(Content, "THINK_START", Reasoning, &[]));
        config.strip_trailing_reasoning_whitespace = false;
    }
    for marker in PASSTHROUGH {
        config.terminals.push((marker, marker));
        for state in [Content, Reasoning] {
            config.transitions.push(on(state, marker, state, &[]));
        }
    }
    config
}

/// The `minicpmv` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let thinking = options.template_flag("enable_thinking", true);
    Box::new(MiniCpmVParser {
        inner: EngineReasoningParser::new(config(thinking), true, &options.prompt),
        thinking,
        events: Vec::new(),
        reasoning: EscapedNewlines::default(),
        content: EscapedNewlines::default(),
        reasoning_over: false,
    })
}

/// The engine's events, reasoning dropped with thinking off, newlines
/// recovered in reasoning here and in the final content by the pipeline.
struct MiniCpmVParser {
    inner: EngineReasoningParser,
    thinking: bool,
    events: Vec<Event>,
    reasoning: EscapedNewlines,
    content: EscapedNewlines,
    reasoning_over: bool,
}

impl MiniCpmVParser {
    fn pass(&mut self, out: &mut Vec<Event>) {
        for event in self.events.drain(..) {
            match event {
                Event::Reasoning(_) if !self.thinking => {}
                Event::Reasoning(text) => {
                    push_text(out, Event::Reasoning, self.reasoning.feed(&text, false));
                }
                Event::Content(text) => {
                    if !self.reasoning_over {
                        // Reasoning is over: what it held back is final.
                        self.reasoning_over = true;
                        push_text(out, Event::Reasoning, self.reasoning.feed("", true));
                    }
                    out.push(Event::Content(text));
                }
                other => out.push(other),
            }
        }
    }
}

fn push_text(out: &mut Vec<Event>, kind: fn(String) -> Event, text: String) {
    if !text.is_empty() {
        out.push(kind(text));
    }
}

impl ReasoningParser for MiniCpmVParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        self.inner.prompt_ends_reasoning()
    }

    fn is_engine_based(&self) -> bool {
        true
    }

    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        self.inner.push(text, token_ids, &mut self.events);
        self.pass(out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.inner.finish(&mut self.events);
        self.pass(out);
        push_text(out, Event::Reasoning, self.reasoning.feed("", true));
    }

    fn rewrite_content(&mut self, text: &str, last: bool) -> Option<String> {
        Some(self.content.feed(text, last))
    }
}

/// vLLM's `EscapedNewlineNormalizer`: `\n`, `\r` and `\r\n` written as
/// escapes become a newline, except inside `` ` `` / ```` ``` ```` code,
/// `$` / `$$` / `\(`…`\)` / `\[`…`\]` LaTeX, and runs of several
/// backslashes. A tail that may still change meaning waits for the next text.
#[derive(Debug, Default)]
pub struct EscapedNewlines {
    closing: Option<&'static str>,
    pending: String,
}

impl EscapedNewlines {
    /// The recovered text of `text` after what was held; `last` releases all.
    pub fn feed(&mut self, text: &str, last: bool) -> String {
        let text = std::mem::take(&mut self.pending) + text;
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            if let Some(marker) = self.closing {
                if rest.starts_with(marker) {
                    out.push_str(marker);
                    i += marker.len();
                    self.closing = None;
                } else if !last && marker.starts_with(rest) {
                    self.pending = rest.to_owned();
                    break;
                } else {
                    let c = rest.chars().next().unwrap_or_default();
                    out.push(c);
                    i += c.len_utf8();
                }
                continue;
            }
            let c = rest.chars().next().unwrap_or_default();
            let opened = match c {
                '`' | '$' => {
                    let (one, two): (&'static str, &'static str) =
                        if c == '`' { ("`", "```") } else { ("$", "$$") };
                    if !last && two.starts_with(rest) && rest.len() < two.len() {
                        self.pending = rest.to_owned();
                        break;
                    }
                    Some(if rest.starts_with(two) { two } else { one })
                }
                _ => None,
            };
            if let Some(marker) = opened {
                out.push_str(marker);
                i += marker.len();
                self.closing = Some(marker);
                continue;
            }
            if c != '\\' {
                out.push(c);
                i += c.len_utf8();
                continue;
            }
            let run = rest.len() - rest.trim_start_matches('\\').len();
            if run > 1 {
                if !last && run == rest.len() {
                    self.pending = rest.to_owned();
                    break;
                }
                out.push_str(&rest[..run]);
                i += run;
                continue;
            }
            if !last && matches!(rest, "\\" | "\\r" | "\\r\\") {
                self.pending = rest.to_owned();
                break;
            }
            let (emit, len, closing) = if rest.starts_with("\\r\\n") {
                ("\n", 4, None)
            } else if rest.starts_with("\\n") || rest.starts_with("\\r") {
                ("\n", 2, None)
            } else if rest.starts_with("\\(") {
                ("\\(", 2, Some("\\)"))
            } else if rest.starts_with("\\[") {
                ("\\[", 2, Some("\\]"))
            } else {
                ("\\", 1, None)
            };
            out.push_str(emit);
            i += len;
            if closing.is_some() {
                self.closing = closing;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_recover_the_same_at_every_split() {
        let samples = [
            r"a\nb\r\nc\rd",
            r"```x\ny``` `a\nb` $c\nd$ $$e\nf$$ \(g\nh\) \[i\nj\] k\nl",
            r"m\\n o\\\n p\ q\",
            "東京\\n🌧``",
        ];
        for sample in samples {
            let whole = EscapedNewlines::default().feed(sample, true);
            for (at, _) in sample.char_indices() {
                let mut streamed = EscapedNewlines::default();
                let mut got = streamed.feed(&sample[..at], false);
                got += &streamed.feed(&sample[at..], false);
                got += &streamed.feed("", true);
                assert_eq!(got, whole, "{sample:?} split at {at}");
            }
        }
        assert_eq!(
            EscapedNewlines::default().feed(r"a\nb `c\nd`", true),
            "a\nb `c\\nd`"
        );
    }
}
