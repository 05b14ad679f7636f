//! `apertus`: vLLM's `ApertusToolParser`, a JSON array of single-key objects
//! between special tokens:
//!
//! ```text
//! I will check. <|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>
//! ```
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - without `<|tools_prefix|>` all text is content;
//! - the block runs from the first prefix to the first `<|tools_suffix|>` (or
//!   the end). Left-stripped, its first JSON value is read (`raw_decode`);
//!   when that fails, the whole block is read as truncated JSON
//!   ([`json::loads_partial`], `partial_json_parser`), and when that fails
//!   too, the output is content as it was;
//! - a value that is not a list counts as a one-element list (none when
//!   falsy); each non-empty object is a call named by its first key, whose
//!   value is the arguments (`json.dumps`, any JSON value);
//! - content is the text before the block, text left in the block after the
//!   JSON value, and the text after the suffix (other suffixes removed),
//!   each `strip()`ped, joined by `"\n"`. vLLM reports calls even when there
//!   are none, so an empty block still removes itself from the content.
//!
//! Content before the block streams ([`StrippedHead`]); the rest is settled
//! once, at [`finish`](ToolParser::finish).

use crate::event::Event;
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{py_is_space, py_strip};
use crate::tool::stripped::StrippedHead;
use crate::tool::{Call, emit_calls};

const PREFIX: &str = "<|tools_prefix|>";
const SUFFIX: &str = "<|tools_suffix|>";

/// The `apertus` tool parser.
pub struct ApertusParser {
    head: StrippedHead,
}

impl ApertusParser {
    /// A boxed parser for the registry.
    pub fn boxed(_options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self {
            head: StrippedHead::new(PREFIX),
        })
    }
}

/// What the block held: the calls, and the content parts after the prefix
/// (text left in the block after the JSON value, text after the suffix).
struct Block {
    calls: Vec<Call>,
    trailing: [String; 2],
}

impl ToolParser for ApertusParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.head.push(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let ended = self.head.finish();
        let block = ended
            .tail
            .as_deref()
            .and_then(|tail| tail.strip_prefix(PREFIX))
            .and_then(block);
        let (text, calls) = match block {
            Some(Block { calls, trailing }) => {
                let [rest, after] = trailing.each_ref().map(String::as_str);
                (ended.content.joined(&[rest, after]), calls)
            }
            None => (ended.verbatim(), Vec::new()),
        };
        if !text.is_empty() {
            out.push(Event::Content(text));
        }
        emit_calls(calls, 0, out);
    }
}

/// The block after the prefix, or `None` where vLLM keeps the output as content.
fn block(tail: &str) -> Option<Block> {
    let (group, after) = match tail.split_once(SUFFIX) {
        Some((group, after)) => (group, after),
        None => (tail, ""),
    };
    let stripped = group.trim_start_matches(py_is_space);
    let (value, rest) = match json::loads_prefix(stripped) {
        Ok((value, end)) => (value, &stripped[end..]),
        Err(_) => (json::loads_partial(group)?, ""),
    };
    let items = match value {
        PyJson::List(items) => items,
        value if value.is_truthy() => vec![value],
        _ => Vec::new(),
    };
    let calls = items
        .into_iter()
        .filter_map(|item| match item {
            PyJson::Dict(entries) => entries.into_iter().next(),
            _ => None,
        })
        .map(|(name, arguments)| Call {
            name,
            arguments: json::dumps(&arguments),
        })
        .collect();
    Some(Block {
        calls,
        trailing: [
            py_strip(rest).to_owned(),
            py_strip(&after.replace(SUFFIX, "")).to_owned(),
        ],
    })
}
