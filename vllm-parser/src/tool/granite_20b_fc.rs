//! `granite-20b-fc`: vLLM's `Granite20bFCToolParser`, calls written as
//! `<function_call> {"name": …, "arguments": …}` one after another.
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - no `<function_call>` anywhere: all text is content;
//! - otherwise each `<function_call>` (and the whitespace after it) starts a
//!   segment that runs to the next `<function_call>`; the segment must *begin*
//!   with a JSON object holding a string `name` and an `arguments` key (what
//!   follows the JSON in the segment is ignored, `JSONDecoder.raw_decode`);
//!   arguments are re-serialised by `json.dumps(ensure_ascii=False)`;
//! - content is the text before the first `<function_call>`;
//! - if any segment fails, the whole output is content.
//!
//! Content before the first marker streams; the rest settles at the end
//! ([`SettleParser`](crate::tool::settle::SettleParser)).

use crate::json::{self, PyJson};
use crate::text::py_is_space;
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, Settled};

const BOT: &str = "<function_call>";

/// The `granite-20b-fc` format.
#[derive(Debug, Clone, Copy)]
pub struct Granite20bFc;

impl Settle for Granite20bFc {
    fn opening(&self) -> Opening {
        Opening::Marker(&[BOT])
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        // `tail` starts with BOT, so the first split piece is empty.
        let calls = tail
            .split(BOT)
            .skip(1)
            .map(|segment| call(segment.trim_start_matches(py_is_space)))
            .collect::<Option<Vec<_>>>()?;
        Some(Settled {
            calls,
            content: String::new(),
        })
    }
}

/// The call at the start of one segment, `None` where vLLM raises.
fn call(segment: &str) -> Option<Call> {
    let (value, _) = json::loads_prefix(segment).ok()?;
    if !matches!(value, PyJson::Dict(_)) {
        return None;
    }
    Some(Call {
        name: value.get("name")?.as_str()?.to_owned(),
        arguments: json::dumps(value.get("arguments")?),
    })
}
