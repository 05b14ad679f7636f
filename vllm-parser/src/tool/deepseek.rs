//! DeepSeek's special-token calls: vLLM's `DeepSeekV3ToolParser` (`deepseek_v3`)
//! and `DeepSeekV31ToolParser` (`deepseek_v31`), one [`Settle`] format with a
//! [`Variant`] option.
//!
//! ```text
//! <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//! ```json
//! {"city": "Paris"}
//! ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>                          (V3)
//! <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…   (V3.1)
//! ```
//!
//! vLLM's whole-text rules reproduced here: without `<｜tool▁calls▁begin｜>` all is
//! content; with it, the calls are the matches of vLLM's regex anywhere in the
//! output (arguments are the raw text, not re-serialised), and the content is the
//! text before
//! `<｜tool▁calls▁begin｜>` plus, for V3, the text after the last
//! `<｜tool▁calls▁end｜>`. Everything else is dropped, even when nothing matched
//! (vLLM reports `tools_called` regardless). V3's call type (the text before
//! `<｜tool▁sep｜>`) must be `function`, else the whole output is content.

use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, Settled};

const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
const CALLS_END: &str = "<｜tool▁calls▁end｜>";
const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const CALL_END: &str = "<｜tool▁call▁end｜>";
const SEP: &str = "<｜tool▁sep｜>";
/// V3: what follows the name line, and what closes the arguments.
const JSON_FENCE: &str = "\n```json\n";
const V3_ARGS_END: &str = "\n```<｜tool▁call▁end｜>";

/// The tokens vLLM needs in the tokenizer to build either parser.
pub const REQUIRED_TOKENS: &[&str] = &[CALLS_BEGIN, CALLS_END];

/// Which DeepSeek layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// V3: `TYPE<｜tool▁sep｜>NAME` and a fenced JSON block.
    V3,
    /// V3.1: `NAME<｜tool▁sep｜>ARGS`.
    V31,
}

/// A DeepSeek tool-call format.
#[derive(Debug, Clone, Copy)]
pub struct DeepSeek {
    /// The layout.
    pub variant: Variant,
}

/// `deepseek_v3`.
pub const V3: DeepSeek = DeepSeek {
    variant: Variant::V3,
};
/// `deepseek_v31`.
pub const V31: DeepSeek = DeepSeek {
    variant: Variant::V31,
};

impl Settle for DeepSeek {
    fn opening(&self) -> Opening {
        // vLLM's regexes run over the whole output: a call (or the calls end)
        // before the calls begin still counts once the calls begin appears.
        Opening::Marker(&[CALLS_BEGIN, CALL_BEGIN, CALLS_END])
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let calls_begin = tail.find(CALLS_BEGIN)?;
        let mut calls = Vec::new();
        let mut from = 0;
        while let Some(found) = tail[from..].find(CALL_BEGIN) {
            let start = from + found + CALL_BEGIN.len();
            let matched = match self.variant {
                Variant::V3 => v3_call(&tail[start..]),
                Variant::V31 => v31_call(&tail[start..]),
            };
            match matched {
                Match::Call(call, len) => {
                    calls.push(call);
                    from = start + len;
                }
                Match::NotHere => from = start,
                // No closing marker after this begin: none after a later one either.
                Match::Unclosed => break,
                Match::Invalid => return None,
            }
        }
        let mut content = tail[..calls_begin].to_owned();
        if self.variant == Variant::V3
            && let Some(end) = tail.rfind(CALLS_END)
        {
            // vLLM appends the text after the last calls end, even when that end
            // precedes the calls begin (the text then appears twice).
            content.push_str(&tail[end + CALLS_END.len()..]);
        }
        Some(Settled { calls, content })
    }
}

/// What vLLM's regex finds after one call begin.
enum Match {
    /// A call, and the length of the text it spans.
    Call(Call, usize),
    /// No match starting here.
    NotHere,
    /// No match here or after: the closing marker never comes.
    Unclosed,
    /// A match vLLM's `ToolCall` refuses (V3 type other than `function`): the
    /// whole output is content.
    Invalid,
}

/// V3's `(?P<type>.*)<｜tool▁sep｜>(?P<function_name>.*)\n```json\n(?P<function_arguments>[\s\S]*?)\n```<｜tool▁call▁end｜>`
/// after a call begin.
fn v3_call(text: &str) -> Match {
    let line = &text[..text.find('\n').unwrap_or(text.len())];
    // `.*` is greedy: the type runs to the line's last separator.
    let Some(sep) = line.rfind(SEP) else {
        return Match::NotHere;
    };
    let (kind, name) = (&line[..sep], &line[sep + SEP.len()..]);
    let Some(body) = text[line.len()..].strip_prefix(JSON_FENCE) else {
        return Match::NotHere;
    };
    let body_start = line.len() + JSON_FENCE.len();
    let Some(end) = body.find(V3_ARGS_END) else {
        return Match::Unclosed;
    };
    if kind != "function" {
        return Match::Invalid;
    }
    let call = Call {
        name: name.to_owned(),
        arguments: body[..end].to_owned(),
    };
    Match::Call(call, body_start + end + V3_ARGS_END.len())
}

/// V3.1's `(?P<function_name>.*?)<｜tool▁sep｜>(?P<function_arguments>[\s\S]*?)<｜tool▁call▁end｜>`
/// after a call begin.
fn v31_call(text: &str) -> Match {
    let line = &text[..text.find('\n').unwrap_or(text.len())];
    let Some(sep) = line.find(SEP) else {
        return Match::NotHere;
    };
    let args_start = sep + SEP.len();
    let Some(end) = text[args_start..].find(CALL_END) else {
        return Match::Unclosed;
    };
    let call = Call {
        name: text[..sep].to_owned(),
        arguments: text[args_start..args_start + end].to_owned(),
    };
    Match::Call(call, args_start + end + CALL_END.len())
}
