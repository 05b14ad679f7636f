//! `functiongemma`: vLLM's `FunctionGemmaToolParser`,
//! `<start_function_call>call:NAME{key:<escape>value<escape>,…}<end_function_call>`.
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - calls are the matches of `<start_function_call>call:(\w+)\{(.*?)\}<end_function_call>`
//!   or, when no `}<end_function_call>` follows, `<start_function_call>call:(\w+)\{(.*)`
//!   (to the end of the output);
//! - arguments are the matches of `(\w+):<escape>(.*?)<escape>` in the body, each
//!   value `json.loads`-ed when it is JSON and kept as a string otherwise, dumped
//!   as one object (`ensure_ascii=False`; a repeated key keeps its first position);
//! - with calls, content is the text before the first `<start_function_call>`,
//!   Python-`strip()`ped, and everything else is dropped; without, all text is
//!   content.
//!
//! Content streams as far as the strip cannot change it
//! ([`StrippedHead`]). From the
//! first `<start_function_call>` on the text is settled once, at
//! [`finish`](ToolParser::finish), in one linear pass.

use crate::engine::models::dict_json;
use crate::event::Event;
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::tool::stripped::StrippedHead;
use crate::tool::{Call, emit_calls};

const START: &str = "<start_function_call>";
const CALL: &str = "call:";
const END: &str = "}<end_function_call>";
const ESCAPE: &str = "<escape>";
const KEY_END: &str = ":<escape>";

/// The `functiongemma` tool parser.
pub struct FunctionGemmaParser {
    head: StrippedHead,
}

impl FunctionGemmaParser {
    /// A boxed parser for the registry.
    pub fn boxed(_options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self {
            head: StrippedHead::new(START),
        })
    }
}

impl ToolParser for FunctionGemmaParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.head.push(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let ended = self.head.finish();
        let calls = calls(ended.tail.as_deref().unwrap_or(""));
        let content = if calls.is_empty() {
            ended.verbatim()
        } else {
            ended.content.stripped("")
        };
        if !content.is_empty() {
            out.push(Event::Content(content));
        }
        emit_calls(calls, 0, out);
    }
}

/// Python's `\w` (the `regex` module's, approximated by Unicode alphanumerics).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The calls in `tail` (which starts at the first `<start_function_call>`).
fn calls(tail: &str) -> Vec<Call> {
    let mut calls = Vec::new();
    let mut pos = 0;
    while let Some(found) = tail[pos..].find(START) {
        let after = pos + found + START.len();
        pos = after;
        let Some(rest) = tail[after..].strip_prefix(CALL) else {
            continue;
        };
        let name_len = rest.len() - rest.trim_start_matches(is_word).len();
        let (name, body) = rest.split_at(name_len);
        let Some(body) = body.strip_prefix('{').filter(|_| name_len > 0) else {
            continue;
        };
        let body_start = tail.len() - body.len();
        let (args, end) = match body.find(END) {
            Some(close) => (&body[..close], body_start + close + END.len()),
            None => (body, tail.len()),
        };
        calls.push(Call {
            name: name.to_owned(),
            arguments: arguments(args),
        });
        pos = end;
    }
    calls
}

/// The matches of `(\w+):<escape>(.*?)<escape>` as one JSON object.
fn arguments(body: &str) -> String {
    let mut params = Vec::new();
    let mut pos = 0;
    while let Some(found) = body[pos..].find(KEY_END) {
        let colon = pos + found;
        let key_start =
            colon - (body[pos..colon].len() - body[pos..colon].trim_end_matches(is_word).len());
        let value_start = colon + KEY_END.len();
        if key_start == colon {
            pos = colon + 1;
            continue;
        }
        let Some(len) = body[value_start..].find(ESCAPE) else {
            break;
        };
        let value = &body[value_start..value_start + len];
        let value = json::loads(value).unwrap_or_else(|_| PyJson::Str(value.to_owned()));
        params.push((body[key_start..colon].to_owned(), value));
        pos = value_start + len + ESCAPE.len();
    }
    dict_json(params)
}
