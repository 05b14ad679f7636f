//! Calls written as Python: `[get_weather(city='Paris'), get_time()]`. vLLM's
//! `PythonicToolParser` (`pythonic`), `Llama4PythonicToolParser`
//! (`llama4_pythonic`) and `Olmo3PythonicToolParser` (`olmo3`), one [`Settle`]
//! format with a [`Variant`] option.
//!
//! vLLM's whole-text rules reproduced here:
//! - the text must match vLLM's `TOOL_CALL_REGEX` at its start (`[name(` then
//!   `)` or `keyword=`…, see `matches_call_regex`), then `ast.parse` the *whole*
//!   text: its first statement must be a list whose elements are all calls;
//! - a call's name is a name or dotted attribute chain; only keyword arguments
//!   count (positional ones are ignored, `**x` gives the key `null`); values are
//!   literals converted as vLLM's `get_parameter_value` does: constants, lists,
//!   tuples and sets as lists, dicts with constant keys, `-`/`+` numbers,
//!   placeholder-free f-strings, and the names `null`/`true`/`false`; the
//!   arguments are `json.dumps(ensure_ascii=False)` of that dict;
//! - anything else makes the whole output content.
//!
//! `llama4_pythonic` first drops a leading `<|python_start|>` and every
//! `<|python_end|>`; `olmo3` takes the inside of the first
//! `<function_calls>…</function_calls>` (or the whole text), joins its non-blank
//! stripped lines with `", "` and wraps them in `[…]`.
//!
//! vLLM's streaming only parses when the output starts with `[` (`llama4`: or
//! `<|python_start|>`; `olmo3`: `<`), like the regex for the first two; we follow
//! that gate for `olmo3` too, so its content streams (the corpus records
//! `"follow": "streaming"` where vLLM's whole text finds calls in prose).

// Shared with `tool::arg_tags::literal` (Python's `ast.literal_eval`).
pub(crate) mod ast;
pub(crate) mod lexer;
pub(crate) mod repair;

use self::ast::{Expr, SequenceKind};
use self::lexer::Constant;
use crate::json::{self, PyJson};
use crate::text::{py_is_space, py_strip};
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, Settled};

const PYTHON_START: &str = "<|python_start|>";
const PYTHON_END: &str = "<|python_end|>";
const OLMO_START: &str = "<function_calls>";
const OLMO_END: &str = "</function_calls>";

/// The model-specific preprocessing of a pythonic format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `pythonic`: the text as it is.
    Plain,
    /// `llama4_pythonic`: `<|python_start|>…<|python_end|>` markers dropped.
    Llama4,
    /// `olmo3`: newline-separated calls, optionally in `<function_calls>`.
    Olmo3,
}

/// A pythonic tool-call format.
#[derive(Debug, Clone, Copy)]
pub struct Pythonic {
    /// The preprocessing.
    pub variant: Variant,
}

/// `pythonic`.
pub const PLAIN: Pythonic = Pythonic {
    variant: Variant::Plain,
};
/// `llama4_pythonic`.
pub const LLAMA4: Pythonic = Pythonic {
    variant: Variant::Llama4,
};
/// `olmo3`.
pub const OLMO3: Pythonic = Pythonic {
    variant: Variant::Olmo3,
};

impl Settle for Pythonic {
    fn opening(&self) -> Opening {
        match self.variant {
            Variant::Plain => Opening::Start(&["["]),
            Variant::Llama4 => Opening::Start(&["[", PYTHON_START]),
            Variant::Olmo3 => Opening::Start(&["<"]),
        }
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let source = match self.variant {
            Variant::Plain => tail.to_owned(),
            Variant::Llama4 => match tail.strip_prefix(PYTHON_START) {
                Some(rest) => rest.replace(PYTHON_END, ""),
                None => tail.to_owned(),
            },
            Variant::Olmo3 => olmo3_list(tail),
        };
        let calls = parse_calls(&source)?;
        Some(Settled {
            calls,
            content: String::new(),
        })
    }
}

/// Olmo 3's calls as one Python list.
fn olmo3_list(text: &str) -> String {
    let body = text
        .find(OLMO_START)
        .and_then(|start| {
            let inner = &text[start + OLMO_START.len()..];
            inner.find(OLMO_END).map(|end| py_strip(&inner[..end]))
        })
        .unwrap_or(text);
    let lines: Vec<&str> = py_splitlines(body)
        .map(py_strip)
        .filter(|line| !line.is_empty())
        .collect();
    format!("[{}]", lines.join(", "))
}

/// Python's `str.splitlines()`.
fn py_splitlines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let breaks = [
            '\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\u{85}', '\u{2028}', '\u{2029}',
        ];
        match rest.find(breaks) {
            Some(i) => {
                let line = &rest[..i];
                let len = if rest[i..].starts_with("\r\n") {
                    2
                } else {
                    rest[i..].chars().next().map_or(1, char::len_utf8)
                };
                rest = &rest[i + len..];
                Some(line)
            }
            None => Some(std::mem::take(&mut rest)),
        }
    })
}

/// The calls of a whole pythonic output, or `None` where vLLM falls back to text.
fn parse_calls(source: &str) -> Option<Vec<Call>> {
    if !matches_call_regex(source) {
        return None;
    }
    let tokens = lexer::tokenize(source)?;
    let Expr::Sequence(SequenceKind::List, items) = ast::first_expression(&tokens)? else {
        return None;
    };
    items.iter().map(call).collect()
}

/// The first statement of `source` as a non-empty list of calls, each
/// through `handle_single_tool` (no regex gate): `None` where `ast.parse`
/// fails or vLLM raises.
pub(crate) fn call_list(source: &str) -> Option<Vec<Call>> {
    let tokens = lexer::tokenize(source)?;
    let Expr::Sequence(SequenceKind::List, items) = ast::first_expression(&tokens)? else {
        return None;
    };
    if items.is_empty() {
        return None;
    }
    items.iter().map(call).collect()
}

/// vLLM's `TOOL_CALL_REGEX.match(text)`:
/// `\[([a-zA-Z]+\w*\(([a-zA-Z]+\w*=.*,\s*)*([a-zA-Z]+\w*=.*\s)?\),\s*)*([a-zA-Z]+\w*\(([a-zA-Z]+\w*=.*,\s*)*([a-zA-Z]+\w*=.*\s*)?\)\s*)+\]`
/// with `DOTALL`. Its `.*` can swallow anything, so it reduces to: `[`, then
/// calls `name(` each either empty (`)`, followed by `,` or whitespace and the
/// next call, or by `\s*]`) or opening with `keyword=`, after which any later
/// `)\s*]` completes the match.
fn matches_call_regex(text: &str) -> bool {
    let Some(mut rest) = text.strip_prefix('[') else {
        return false;
    };
    loop {
        let Some(after_name) = regex_name(rest).and_then(|r| r.strip_prefix('(')) else {
            return false;
        };
        if let Some(after_keyword) = regex_name(after_name).and_then(|r| r.strip_prefix('=')) {
            return has_close(after_keyword);
        }
        let Some(after_call) = after_name.strip_prefix(')') else {
            return false;
        };
        if let Some(next) = after_call.strip_prefix(',') {
            rest = next.trim_start_matches(py_is_space);
            continue;
        }
        rest = after_call.trim_start_matches(py_is_space);
        if rest.starts_with(']') {
            return true;
        }
    }
}

/// `[a-zA-Z]+\w*` at the start of `text`: the rest after it.
fn regex_name(text: &str) -> Option<&str> {
    if !text.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    Some(text.trim_start_matches(|c: char| c == '_' || c.is_alphanumeric()))
}

/// Whether `\)\s*\]` occurs in `text`.
fn has_close(text: &str) -> bool {
    text.match_indices(')').any(|(i, _)| {
        text[i + 1..]
            .trim_start_matches(py_is_space)
            .starts_with(']')
    })
}

/// `handle_single_tool`: one list element as a call.
fn call(expr: &Expr) -> Option<Call> {
    let Expr::Call(func, keywords) = expr else {
        return None;
    };
    let name = dotted_name(func)?;
    let mut arguments = Dict::default();
    for (key, value) in keywords {
        let key = match key {
            Some(key) => Key::Str(key.clone()),
            None => Key::Null,
        };
        arguments.insert(key, parameter_value(value)?);
    }
    // `json.dumps` raises on a key it cannot write (e.g. `{1j: 0}`).
    let Value::Json(arguments) = arguments.into_value() else {
        return None;
    };
    Some(Call {
        name,
        arguments: json::dumps(&arguments),
    })
}

/// A converted argument value: JSON, or a Python value `json.dumps` would refuse
/// (a dict with a key like `1j`), which only fails if it is still there at the end.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Json(PyJson),
    Unwritable,
}

/// `a.b.c` for an attribute chain ending in a name.
fn dotted_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(name) => Some(name.clone()),
        Expr::Attribute(value, attr) => Some(format!("{}.{attr}", dotted_name(value)?)),
        _ => None,
    }
}

/// vLLM's `get_parameter_value`: a literal as the value it dumps to; `None`
/// where it raises.
fn parameter_value(expr: &Expr) -> Option<Value> {
    let json = |value| Some(Value::Json(value));
    match expr {
        Expr::Constant(Constant::Json(value)) => json(value.clone()),
        Expr::Constant(Constant::Opaque) => None,
        Expr::FString(value) => json(PyJson::Str(value.clone()?)),
        Expr::Name(name) => match name.as_str() {
            "null" => json(PyJson::Null),
            "true" => json(PyJson::Bool(true)),
            "false" => json(PyJson::Bool(false)),
            _ => None,
        },
        Expr::Sequence(_, items) => {
            let mut list = Vec::with_capacity(items.len());
            let mut writable = true;
            for item in items {
                match parameter_value(item)? {
                    Value::Json(value) => list.push(value),
                    Value::Unwritable => writable = false,
                }
            }
            Some(if writable {
                Value::Json(PyJson::List(list))
            } else {
                Value::Unwritable
            })
        }
        Expr::Dict(entries) => {
            let mut dict = Dict::default();
            for (key, value) in entries {
                let Some(Expr::Constant(key)) = key else {
                    return None;
                };
                let value = parameter_value(value)?;
                dict.insert(Key::from_constant(key), value);
            }
            Some(dict.into_value())
        }
        Expr::Sign(negate, operand) => match parameter_value(operand)? {
            Value::Json(PyJson::Int(digits)) if *negate => json(PyJson::Int(negate_int(&digits))),
            Value::Json(PyJson::Float(f)) if *negate => json(PyJson::Float(-f)),
            value @ Value::Json(PyJson::Int(_) | PyJson::Float(_)) => Some(value),
            _ => None,
        },
        Expr::Attribute(..) | Expr::Call(..) | Expr::Other => None,
    }
}

fn negate_int(digits: &str) -> String {
    match digits.strip_prefix('-') {
        Some(positive) => positive.to_owned(),
        None if digits == "0" => "0".to_owned(),
        None => format!("-{digits}"),
    }
}

/// A Python dict key, compared the way Python compares keys (`1 == 1.0 == True`).
#[derive(Debug, Clone, PartialEq)]
enum Key {
    Str(String),
    Null,
    /// A number or bool: its JSON text and its identity for equality.
    Number {
        text: String,
        identity: String,
    },
    /// A constant `json.dumps` cannot write as a key (bytes, complex, `...`).
    Unwritable,
}

impl Key {
    fn from_constant(constant: &Constant) -> Key {
        let Constant::Json(value) = constant else {
            return Key::Unwritable;
        };
        match value {
            PyJson::Str(s) => Key::Str(s.clone()),
            PyJson::Null => Key::Null,
            PyJson::Bool(b) => Key::Number {
                text: b.to_string(),
                identity: u8::from(*b).to_string(),
            },
            PyJson::Int(digits) => Key::Number {
                text: digits.clone(),
                identity: digits.clone(),
            },
            PyJson::Float(f) => {
                let text = json::dumps(&PyJson::Float(*f));
                let identity = if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e300 {
                    format!("{:.0}", f.abs() * f.signum()).replace("-0", "0")
                } else {
                    format!("f{text}")
                };
                Key::Number { text, identity }
            }
            // Constants are never containers.
            PyJson::List(_) | PyJson::Dict(_) => Key::Unwritable,
        }
    }

    fn json_text(&self) -> Option<String> {
        match self {
            Key::Str(s) => Some(s.clone()),
            Key::Null => Some("null".to_owned()),
            Key::Number { text, .. } => Some(text.clone()),
            Key::Unwritable => None,
        }
    }

    fn same(&self, other: &Key) -> bool {
        match (self, other) {
            (Key::Number { identity: a, .. }, Key::Number { identity: b, .. }) => {
                a == b && !a.starts_with("fNaN")
            }
            (Key::Unwritable, _) | (_, Key::Unwritable) => false,
            (a, b) => a == b,
        }
    }
}

/// A Python dict: a repeated key keeps its first position and takes the last value.
#[derive(Default)]
struct Dict(Vec<(Key, Value)>);

impl Dict {
    fn insert(&mut self, key: Key, value: Value) {
        match self.0.iter_mut().find(|(k, _)| k.same(&key)) {
            Some(entry) => entry.1 = value,
            None => self.0.push((key, value)),
        }
    }

    fn into_value(self) -> Value {
        let mut items = Vec::with_capacity(self.0.len());
        for (key, value) in self.0 {
            match (key.json_text(), value) {
                (Some(key), Value::Json(value)) => items.push((key, value)),
                _ => return Value::Unwritable,
            }
        }
        Value::Json(PyJson::Dict(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_regex_gate_matches_vllms() {
        for yes in ["[f()]", "[f(), g()]", "[f(a=1)]", "[f() ]", "[f(a=1, 2) ]"] {
            assert!(matches_call_regex(yes), "{yes}");
        }
        for no in [
            "[]",
            " [f()]",
            "[f(1)]",
            "[f( )]",
            "[f(a = 1)]",
            "[f() , g()]",
            "[_f()]",
        ] {
            assert!(!matches_call_regex(no), "{no}");
        }
    }

    #[test]
    fn values_convert_like_get_parameter_value() {
        let calls = parse_calls(
            "[g(k=1), a.b(x=-1, y=(1, {2}), z={1: 'a', 1.0: 'b', True: 'c'}, n=null, s=f'{{q}}')]",
        )
        .unwrap();
        assert_eq!(calls[0].arguments, r#"{"k": 1}"#);
        assert_eq!(calls[1].name, "a.b");
        assert_eq!(
            calls[1].arguments,
            r#"{"x": -1, "y": [1, [2]], "z": {"1": "c"}, "n": null, "s": "{q}"}"#
        );
        assert_eq!(parse_calls("[f(x=f'{y}')]"), None);
        assert_eq!(parse_calls("[f(x=b'y')]"), None);
    }
}
