//! `hy_v3` and `hy_v4`: vLLM's `HYV3ToolParser` and `HYV4ToolParser` (Hunyuan),
//!
//! ```text
//! <tool_calls><tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call></tool_calls>
//! ```
//!
//! (V4 writes no `<tool_sep>`: the name ends at the first `<arg_key>`.)
//!
//! vLLM's whole-text rules, which this parser reproduces. Without
//! `<tool_calls>` all text is content; with it, content is the text before it.
//! Values are typed by the tool's schema (HY's `_parse_value`: the property's
//! `type`, type list, `anyOf` or `oneOf`, HY's aliases; `boolean` from
//! `true`/`false` in any case, `integer` by `int()`, `number` by `float()` when
//! the text has `.`/`e`/`E` and `int()` otherwise, other types by `json.loads`,
//! `string` verbatim, and for a schema without any of these `json.loads`, else
//! `ast.literal_eval`, else the text). A repeated key takes the last value.
//!
//! - `hy_v3` finds `<tool_call>NAME<tool_sep>ARGS</tool_call>` anywhere in the
//!   output (prose before `<tool_calls>` included) plus one unclosed call after
//!   the last `</tool_call>` (or, with no closed call, anywhere); names and
//!   argument text are `strip()`ped, keys are not; key and value tags may be
//!   separated by whitespace. Text after `<tool_calls>` is dropped even when no
//!   call is found, and a value `json.dumps` refuses drops every call.
//! - `hy_v4` is strict: the calls are those in the block between the first
//!   `<tool_calls>` and the first `</tool_calls>`, whose `<tool_call>` /
//!   `</tool_call>` tags must balance and pair up; each needs a non-empty name,
//!   balanced argument tags, value tags right after key tags and nothing but
//!   whitespace outside the pairs; no call, or any violation, makes the whole
//!   output content.
//!
//! vLLM's `hy_v4` reads a per-checkpoint tag suffix (`<tool_calls:SUFFIX>`)
//! from the vocabulary; only unsuffixed tags are supported here.

use serde_json::Value;

use super::literal::{Literal, json_or_literal};
use super::{ArgTags, Arguments};
use crate::engine::schema::{py_float, py_int};
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{py_is_blank, py_strip};
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, SettleParser, Settled};
use crate::tools::{Tool, find_tool};

const CALLS: &str = "<tool_calls>";
const CALLS_END: &str = "</tool_calls>";
const CALL: &str = "<tool_call>";
const CALL_END: &str = "</tool_call>";
const SEP: &str = "<tool_sep>";
const KEY: (&str, &str) = ("<arg_key>", "</arg_key>");
const VALUE: (&str, &str) = ("<arg_value>", "</arg_value>");

/// The tokens vLLM requires in the vocabulary.
pub const REQUIRED_TOKENS: &[&str] = &[CALLS, CALLS_END];

/// Which Hunyuan parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `hy_v3`: `<tool_sep>` after the name, lenient.
    V3,
    /// `hy_v4`: no separator, strict.
    V4,
}

/// A Hunyuan format, with the request's tools.
#[derive(Debug, Clone)]
pub struct Hunyuan {
    version: Version,
    tools: Vec<Tool>,
}

impl Hunyuan {
    /// A boxed `hy_v3` parser for the registry.
    pub fn v3(options: &ParserOptions) -> Box<dyn ToolParser> {
        Self::boxed(Version::V3, options)
    }

    /// A boxed `hy_v4` parser for the registry.
    pub fn v4(options: &ParserOptions) -> Box<dyn ToolParser> {
        Self::boxed(Version::V4, options)
    }

    fn boxed(version: Version, options: &ParserOptions) -> Box<dyn ToolParser> {
        SettleParser::boxed(Hunyuan {
            version,
            tools: options.tools.clone(),
        })
    }

    fn tags(&self) -> ArgTags {
        ArgTags {
            key: KEY,
            kind: None,
            value: VALUE,
            spaced: self.version == Version::V3,
        }
    }

    /// One call's arguments JSON (keys as written); `None` where `json.dumps`
    /// raises.
    fn arguments(&self, name: &str, args: &str) -> Option<String> {
        let mut arguments = Arguments::default();
        for pair in self.tags().pairs(args) {
            let types = types(&self.tools, name, pair.key);
            arguments.insert(pair.key, parse_value(pair.value, &types));
        }
        arguments.dumps()
    }

    /// `hy_v3` over the whole output (`head` + `tail`).
    fn settle_v3(&self, full: &str) -> Settled {
        let mut found: Vec<(&str, &str)> = Vec::new();
        let mut cursor = 0;
        while let Some((name, args, end)) = closed_call(full, cursor) {
            found.push((name, args));
            cursor = end;
        }
        let rest = match full.rfind(CALL_END) {
            Some(at) if !found.is_empty() => &full[at + CALL_END.len()..],
            _ => full,
        };
        found.extend(open_call(rest));
        let calls = found
            .into_iter()
            .map(|(name, args)| {
                let name = py_strip(name);
                Some(Call {
                    name: name.to_owned(),
                    arguments: self.arguments(name, py_strip(args))?,
                })
            })
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default();
        Settled {
            calls,
            content: String::new(),
        }
    }

    /// `hy_v4`'s `_extract_tool_calls_strict` over the tail (from `<tool_calls>`).
    fn settle_v4(&self, tail: &str) -> Option<Settled> {
        let block = &tail[CALLS.len()..tail.find(CALLS_END)?];
        let starts = block.matches(CALL).count();
        if starts != block.matches(CALL_END).count() {
            return None;
        }
        let mut bodies = Vec::new();
        let mut cursor = 0;
        while let Some(start) = block[cursor..]
            .find(CALL)
            .map(|at| cursor + at + CALL.len())
        {
            let Some(len) = block[start..].find(CALL_END) else {
                break;
            };
            bodies.push(&block[start..start + len]);
            cursor = start + len + CALL_END.len();
        }
        if bodies.len() != starts || bodies.is_empty() {
            return None;
        }
        let calls = bodies
            .into_iter()
            .map(|body| self.strict_call(body))
            .collect::<Option<Vec<_>>>()?;
        Some(Settled {
            calls,
            content: String::new(),
        })
    }

    /// One strict `hy_v4` call body; `None` for a malformed one.
    fn strict_call(&self, body: &str) -> Option<Call> {
        let (name, args) = match body.find(KEY.0) {
            Some(at) => (py_strip(&body[..at]), py_strip(&body[at..])),
            None => (py_strip(body), ""),
        };
        let balanced =
            |(open, close): (&str, &str)| args.matches(open).count() == args.matches(close).count();
        if name.is_empty() || !balanced(KEY) || !balanced(VALUE) {
            return None;
        }
        let mut outside = 0;
        for pair in self.tags().pairs(args) {
            if !py_is_blank(&args[outside..pair.span.0]) {
                return None;
            }
            outside = pair.span.1;
        }
        if !py_is_blank(&args[outside..]) {
            return None;
        }
        Some(Call {
            name: name.to_owned(),
            arguments: self.arguments(name, args)?,
        })
    }
}

/// `<tool_call>(.*?)<tool_sep>(.*?)</tool_call>` from `from`: name, arguments
/// and where the match ends.
fn closed_call(text: &str, from: usize) -> Option<(&str, &str, usize)> {
    let name = from + text[from..].find(CALL)? + CALL.len();
    let args = name + text[name..].find(SEP)? + SEP.len();
    let end = args + text[args..].find(CALL_END)?;
    Some((
        &text[name..args - SEP.len()],
        &text[args..end],
        end + CALL_END.len(),
    ))
}

/// `<tool_call>(.*?)<tool_sep>(.*)`: an unclosed call to the end of `text`.
fn open_call(text: &str) -> Option<(&str, &str)> {
    let name = text.find(CALL)? + CALL.len();
    let sep = name + text[name..].find(SEP)?;
    Some((&text[name..sep], &text[sep + SEP.len()..]))
}

impl Settle for Hunyuan {
    fn opening(&self) -> Opening {
        Opening::Marker(&[CALLS])
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        self.settle_with_head("", tail)
    }

    fn reads_head(&self) -> bool {
        true
    }

    fn settle_with_head(&self, head: &str, tail: &str) -> Option<Settled> {
        match self.version {
            Version::V3 => Some(self.settle_v3(&format!("{head}{tail}"))),
            // `</tool_calls>` before the first `<tool_calls>` is malformed.
            Version::V4 if head.contains(CALLS_END) => None,
            Version::V4 => self.settle_v4(tail),
        }
    }
}

/// HY's `_get_types`: the normalised, non-`null` types the property `key` of
/// tool `name` allows (`string` when the tool or property has no schema).
fn types(tools: &[Tool], name: &str, key: &str) -> Vec<String> {
    let schema = find_tool(tools, name)
        .and_then(|tool| tool.parameters.get("properties")?.get(key))
        .and_then(Value::as_object);
    let type_of = |option: &Value| match option.get("type") {
        None => Some("string".to_owned()),
        Some(Value::String(kind)) => Some(normalise(kind)),
        Some(_) => None,
    };
    let mut types: Vec<String> = match schema {
        None => vec!["string".to_owned()],
        Some(schema) => match (schema.get("type"), schema.get("anyOf"), schema.get("oneOf")) {
            (Some(Value::Array(list)), ..) => list
                .iter()
                .filter_map(|t| t.as_str().map(normalise))
                .collect(),
            (Some(Value::String(kind)), ..) => vec![normalise(kind)],
            (Some(_), ..) => Vec::new(),
            (None, Some(Value::Array(options)), _) | (None, None, Some(Value::Array(options))) => {
                options.iter().filter_map(type_of).collect()
            }
            _ => vec!["string".to_owned()],
        },
    };
    types.retain(|t| t != "null");
    types
}

/// HY's `_normalize_type`: exact aliases, then `int`/`uint`/`long`/`short`/
/// `unsigned` and `num`/`float` prefixes (case-insensitive).
fn normalise(kind: &str) -> String {
    let alias = match kind {
        "str" | "text" | "varchar" | "char" | "enum" => "string",
        "bool" | "binary" => "boolean",
        "int" => "integer",
        "float" | "double" => "number",
        "list" => "array",
        "dict" | "map" => "object",
        _ => {
            let lower = kind.to_lowercase();
            let starts = |prefixes: &[&str]| prefixes.iter().any(|p| lower.starts_with(p));
            if starts(&["int", "uint", "long", "short", "unsigned"]) {
                "integer"
            } else if starts(&["num", "float"]) {
                "number"
            } else {
                return kind.to_owned();
            }
        }
    };
    alias.to_owned()
}

/// HY's `_parse_value`; `None` for a value `json.dumps` will refuse.
fn parse_value(value: &str, types: &[String]) -> Option<PyJson> {
    let has = |t: &str| types.iter().any(|x| x == t);
    if has("boolean") {
        match value.to_lowercase().as_str() {
            "true" => return Some(PyJson::Bool(true)),
            "false" => return Some(PyJson::Bool(false)),
            _ => {}
        }
    }
    if has("integer")
        && let Some(int) = py_int(value)
    {
        return Some(PyJson::Int(int));
    }
    if has("number") {
        let number = if value.contains(['.', 'e', 'E']) {
            py_float(value).map(PyJson::Float)
        } else {
            py_int(value).map(PyJson::Int)
        };
        if number.is_some() {
            return number;
        }
    }
    let basic = ["string", "boolean", "integer", "number"];
    if types.iter().any(|t| !basic.contains(&t.as_str()))
        && let Ok(parsed) = json::loads(value)
    {
        return Some(parsed);
    }
    if has("string") {
        return Some(PyJson::Str(value.to_owned()));
    }
    match json_or_literal(value) {
        Literal::Json(parsed) => Some(parsed),
        Literal::Malformed | Literal::Unhashable => Some(PyJson::Str(value.to_owned())),
        Literal::Unwritable => None,
    }
}
