//! `lfm2`: vLLM's `Lfm2ToolParser` (LiquidAI LFM2 / LFM2.5), pythonic calls
//! between special tokens:
//!
//! ```text
//! <|tool_call_start|>[get_weather(location="Paris")]<|tool_call_end|>The weather…
//! ```
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - without `<|tool_call_start|>` all text is content;
//! - the block is the text after the first start marker up to the first
//!   `<|tool_call_end|>` (or the end); `strip()`ped, it must start with `[` and
//!   end with `]`, and its first statement must be a non-empty list of calls
//!   (`tool::pythonic`'s parser and `handle_single_tool` conversions);
//! - when it does not parse as written, vLLM's rewrites are tried in order
//!   (`tool::pythonic::repair`): zero-padded integers and raw
//!   control characters in strings, then unescaped nested quotes, then
//!   keyword-named parameters (renamed, and restored in the arguments); the
//!   first rewrite that parses is used;
//! - with calls, content is the text before the block and the text after its
//!   end marker, each `strip()`ped, joined by `"\n"`; from the text after, an
//!   echo of the call up to the *last* `<|tool_call_end|>` is dropped;
//! - anything else is no call, and the output is content as it was.
//!
//! Content before the block streams ([`StrippedHead`]); the rest is settled
//! once, at [`finish`](ToolParser::finish).

use crate::event::Event;
use crate::parser::{ParserOptions, ToolParser};
use crate::text::py_strip;
use crate::tool::pythonic::{call_list, repair};
use crate::tool::stripped::StrippedHead;
use crate::tool::{Call, emit_calls};

const START: &str = "<|tool_call_start|>";
const END: &str = "<|tool_call_end|>";

/// The `lfm2` tool parser.
pub struct Lfm2Parser {
    head: StrippedHead,
}

impl Lfm2Parser {
    /// A boxed parser for the registry.
    pub fn boxed(_options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self {
            head: StrippedHead::new(START),
        })
    }
}

impl ToolParser for Lfm2Parser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.head.push(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let ended = self.head.finish();
        let settled = ended
            .tail
            .as_deref()
            .and_then(|tail| tail.strip_prefix(START))
            .and_then(|tail| {
                let (block, after) = match tail.split_once(END) {
                    Some((block, after)) => (block, strip_echo(after)),
                    None => (tail, ""),
                };
                Some((block_calls(block)?, py_strip(after)))
            });
        let (text, calls) = match settled {
            Some((calls, after)) => (ended.content.joined(&[after]), calls),
            None => (ended.verbatim(), Vec::new()),
        };
        if !text.is_empty() {
            out.push(Event::Content(text));
        }
        emit_calls(calls, 0, out);
    }
}

/// `_strip_echo`: the text after the last `<|tool_call_end|>`, if any.
fn strip_echo(after: &str) -> &str {
    after
        .rfind(END)
        .map_or(after, |at| &after[at + END.len()..])
}

/// The calls of one block, or `None` where vLLM keeps the output as content.
fn block_calls(block: &str) -> Option<Vec<Call>> {
    let text = py_strip(block);
    if !(text.starts_with('[') && text.ends_with(']')) {
        return None;
    }
    if repair::parses(text) {
        return call_list(text);
    }
    let escaped = repair::escape_ctrl_chars_in_strings(&repair::normalize_leading_zero_ints(text));
    let mut candidates = vec![escaped];
    if let Some(requoted) = repair::escape_nested_quotes_in_strings(&candidates[0]) {
        candidates.push(repair::escape_ctrl_chars_in_strings(&requoted));
    }
    let renamed = candidates
        .last()
        .and_then(|c| repair::rename_reserved_kwargs(c));
    let keywords_renamed = renamed.is_some();
    candidates.extend(renamed);
    let source = candidates.iter().find(|c| repair::parses(c))?;
    let calls = call_list(source)?;
    Some(if keywords_renamed {
        calls
            .into_iter()
            .map(|call| Call {
                arguments: repair::restore_reserved_kwarg_names(call.arguments),
                ..call
            })
            .collect()
    } else {
        calls
    })
}
