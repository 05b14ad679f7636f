//! Kimi K3's XTML tool calls, vLLM's `KimiK3ToolParser` as composed by its
//! `KimiK3Parser` (a `DelegatingParser`):
//!
//! ```text
//! <|open|>response<|sep|>Checking.<|close|>response<|sep|>
//! <|open|>tools<|sep|>
//!   <|open|>call tool="get_weather" index="1"<|sep|>
//!     <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
//!     <|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>
//!   <|close|>call<|sep|>
//! <|close|>tools<|sep|><|close|>message<|sep|>
//! ```
//!
//! vLLM's whole-text rules, reproduced here:
//!
//! - Content is the `response` channel's body; when the prompt opened the
//!   channel, it is the text before the `tools` channel with `response` /
//!   `message` closers removed (`xtml::ResponseChannel`).
//! - Calls are the `call` elements closed inside the first `tools` channel
//!   (up to its first closer); a call without a `tool="…"` attribute, or not
//!   closed, is dropped. Attribute values are unescaped (`&quot;`, `&amp;`).
//! - An argument of `type="string"` (the default) is its raw text; any other
//!   type is `json.loads`ed, falling back to the raw text. Arguments are
//!   `json.dumps`ed as one object; a repeated key keeps its first position and
//!   its last value.
//! - A request without tools (`tool_choice="none"`) gets the content and no
//!   calls.
//!
//! Calls are emitted when their closer arrives, as vLLM's streaming does. Where
//! vLLM's streaming and whole text disagree, the `kimi_k3` fixture records the
//! choice (see the README).

pub(crate) mod xtml;

use crate::event::Event;
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::tool::{Call, emit_calls};
use xtml::{Lexer, Name, ResponseChannel, Tag, Token};

/// Where the parser is in the output.
#[derive(Debug)]
enum Phase {
    /// Before the `tools` channel.
    Content,
    /// Inside it, between calls.
    Tools,
    /// Inside a call: its name and arguments so far.
    Call(Option<PendingCall>),
    /// Inside an argument of a call: its key, type and raw value so far.
    Argument(Option<PendingCall>, String, String, String),
    /// After the `tools` channel: nothing more counts.
    Done,
}

/// A call being read; `None` name means the call will be dropped.
#[derive(Debug)]
struct PendingCall {
    name: String,
    arguments: Vec<(String, PyJson)>,
}

/// The `kimi_k3` tool parser.
#[derive(Debug)]
pub struct KimiK3ToolParser {
    lexer: Lexer,
    content: ResponseChannel,
    phase: Phase,
    /// `tool_choice="none"`: calls are parsed (they end the content) but not
    /// emitted.
    emit: bool,
    calls: usize,
}

impl KimiK3ToolParser {
    /// A parser for the request's `options`.
    pub fn new(options: &ParserOptions) -> Self {
        Self {
            lexer: Lexer::default(),
            content: ResponseChannel::default(),
            phase: Phase::Content,
            emit: !options.tools.is_empty(),
            calls: 0,
        }
    }

    /// A boxed constructor for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::new(options))
    }

    fn drain(&mut self, out: &mut Vec<Event>) {
        while let Some(token) = self.lexer.next() {
            self.token(token, out);
        }
    }

    fn token(&mut self, token: Token, out: &mut Vec<Event>) {
        let phase = std::mem::replace(&mut self.phase, Phase::Done);
        self.phase = match (phase, token) {
            (Phase::Content, Token::Tag(tag)) if tag.open && tag.name() == Name::Tools => {
                Phase::Tools
            }
            (Phase::Content, Token::Tag(tag)) => {
                self.content.tag(&tag, out);
                Phase::Content
            }
            (Phase::Content, Token::Text(text)) => {
                self.content.text(text, out);
                Phase::Content
            }
            (Phase::Done, _) => Phase::Done,
            (phase, Token::Text(text)) => match phase {
                Phase::Argument(call, key, kind, mut value) => {
                    value.push_str(&text);
                    Phase::Argument(call, key, kind, value)
                }
                phase => phase,
            },
            (phase, Token::Tag(tag)) => self.tool_tag(phase, tag, out),
        };
    }

    /// A tag inside the `tools` channel (vLLM's call and argument regexes,
    /// each body ending at its first closer).
    fn tool_tag(&mut self, phase: Phase, tag: Tag, out: &mut Vec<Event>) -> Phase {
        let name = tag.name();
        if !tag.open && name == Name::Tools {
            return Phase::Done;
        }
        match (phase, tag.open, name) {
            (Phase::Tools, true, Name::Call(attrs)) => Phase::Call(pending_call(attrs)),
            (Phase::Call(call), true, Name::Argument(attrs)) => {
                let attrs = attributes(attrs);
                let get = |key: &str| attrs.iter().rev().find(|(k, _)| k == key);
                let key = get("key").map_or(String::new(), |(_, v)| v.clone());
                let kind = get("type").map_or("string".to_owned(), |(_, v)| v.clone());
                Phase::Argument(call, key, kind, String::new())
            }
            (Phase::Argument(mut call, key, kind, value), false, Name::Argument(_)) => {
                if let Some(call) = &mut call {
                    set_argument(&mut call.arguments, key, argument_value(&kind, value));
                }
                Phase::Call(call)
            }
            (Phase::Call(call) | Phase::Argument(call, ..), false, Name::Call(_)) => {
                if let Some(call) = call
                    && self.emit
                {
                    let arguments = json::dumps(&PyJson::Dict(call.arguments));
                    emit_calls(
                        vec![Call {
                            name: call.name,
                            arguments,
                        }],
                        self.calls,
                        out,
                    );
                    self.calls += 1;
                }
                Phase::Tools
            }
            (Phase::Argument(call, key, kind, mut value), ..) => {
                value.push_str(&tag.raw());
                Phase::Argument(call, key, kind, value)
            }
            (phase, ..) => phase,
        }
    }
}

/// A call from its opening tag's attributes; `None` without a tool name.
fn pending_call(attrs: &str) -> Option<PendingCall> {
    let name = attributes(attrs)
        .into_iter()
        .rev()
        .find(|(k, _)| k == "tool")
        .map(|(_, v)| v)
        .filter(|name| !name.is_empty())?;
    Some(PendingCall {
        name,
        arguments: Vec::new(),
    })
}

/// vLLM's `_attrs`: every `(\w+)="([^"]*)"` in order, values unescaped.
fn attributes(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(is_word) {
        let word = &rest[start..];
        let end = word.find(|c: char| !is_word(c)).unwrap_or(word.len());
        let after = &word[end..];
        rest = after;
        let Some(value) = after.strip_prefix("=\"") else {
            continue;
        };
        let Some(close) = value.find('"') else {
            break;
        };
        let unescaped = value[..close].replace("&quot;", "\"").replace("&amp;", "&");
        found.push((word[..end].to_owned(), unescaped));
        rest = &value[close + 1..];
    }
    found
}

/// Python's `\w` for `str` patterns (approximated by Unicode alphanumerics).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// An argument's value: raw text for strings, else its JSON (raw text if that
/// fails to load).
fn argument_value(kind: &str, raw: String) -> PyJson {
    if kind == "string" {
        return PyJson::Str(raw);
    }
    json::loads(&raw).unwrap_or(PyJson::Str(raw))
}

/// Python's `dict[key] = value`: first position, last value.
fn set_argument(arguments: &mut Vec<(String, PyJson)>, key: String, value: PyJson) {
    match arguments.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => arguments.push((key, value)),
    }
}

impl ToolParser for KimiK3ToolParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.lexer.push(text);
        self.drain(out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let rest = self.lexer.finish();
        self.token(Token::Text(rest), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_follow_vllm_regex() {
        assert_eq!(
            attributes(r#"tool="a&quot;b&amp;c" index="1" bad=x k="unterminated"#),
            [
                ("tool".to_owned(), "a\"b&c".to_owned()),
                ("index".to_owned(), "1".to_owned()),
            ]
        );
    }
}
