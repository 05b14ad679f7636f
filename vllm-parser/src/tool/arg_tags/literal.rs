//! Python's `ast.literal_eval`, as vLLM's tag-argument parsers call it on a value
//! `json.loads` refused (`'single quotes'`, `(1, 2)`, `True`, `None`).
//!
//! Built on the bounded Python tokenizer and expression parser of
//! [`tool::pythonic`](crate::tool::pythonic). What vLLM does next depends on
//! *how* the evaluation ended, so [`Literal`] keeps the four outcomes apart.
//!
//! Checked against Python on random literal soup (`tests/differential_values.rs`).
//! Known gap, outside what models write: complex sums (`1+2j`, which
//! `json.dumps` refuses) are read as malformed text.

use crate::json::{self, PyJson};
use crate::text::py_strip;
use crate::tool::pythonic::ast::{Expr, SequenceKind, first_expression};
use crate::tool::pythonic::lexer::{Constant, Token, tokenize};

/// How `ast.literal_eval(text)` and a following `json.dumps` end.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A value `json.dumps` writes (tuples become lists).
    Json(PyJson),
    /// A value `json.dumps` refuses: a set, bytes, a complex number, `...`, a
    /// dict with a tuple key, or a container holding one.
    Unwritable,
    /// `literal_eval` raises `ValueError` / `SyntaxError`: not a literal.
    Malformed,
    /// `literal_eval` raises `TypeError`: an unhashable dict key or set element.
    Unhashable,
}

/// vLLM's `_deserialize`: `json.loads(text)`, or where it fails
/// `ast.literal_eval(text)`.
pub fn json_or_literal(text: &str) -> Literal {
    match json::loads(text) {
        Ok(value) => Literal::Json(value),
        Err(_) => literal_eval(text),
    }
}

/// `ast.literal_eval(text)`.
pub fn literal_eval(text: &str) -> Literal {
    let Some(text) = first_line(text.trim_start_matches([' ', '\t'])) else {
        return Literal::Malformed;
    };
    if !ends_cleanly(text) {
        return Literal::Malformed;
    }
    let Some(tokens) = tokenize(text) else {
        return Literal::Malformed;
    };
    if !eval_mode(&tokens) {
        return Literal::Malformed;
    }
    let Some(expr) = first_expression(&tokens) else {
        return Literal::Malformed;
    };
    if !set_calls_empty(&tokens) && contains_set_call(&expr) {
        return Literal::Malformed;
    }
    match convert(&expr) {
        Ok(Value { json: Some(v), .. }) => Literal::Json(v),
        Ok(_) => Literal::Unwritable,
        Err(failure) => failure,
    }
}

/// The source from its first line with a token: Python's tokenizer skips
/// leading blank and comment-only lines and bare line continuations, which the
/// expression parser's tokenizer does not; `None` when that line is indented
/// (an unexpected indent).
fn first_line(text: &str) -> Option<&str> {
    let mut rest = text;
    loop {
        if let Some(joined) = rest
            .strip_prefix("\\\n")
            .or_else(|| rest.strip_prefix("\\\r\n"))
        {
            rest = joined;
            continue;
        }
        let Some(end) = rest.find('\n') else { break };
        let line = rest[..end].trim_matches([' ', '\t', '\x0c', '\r']);
        if !(line.is_empty() || line.starts_with('#')) {
            break;
        }
        rest = &rest[end + 1..];
    }
    (rest.len() == text.len() || !rest.starts_with([' ', '\t'])).then_some(rest)
}

/// What Python's tokenizer refuses at the end of the source: a line
/// continuation right before it (`1\\\n`), or a last line of only spaces and
/// tabs after an unescaped newline (`1\n ` is an unexpected indent).
fn ends_cleanly(text: &str) -> bool {
    if text.ends_with("\\\n") || text.ends_with("\\\r\n") {
        return false;
    }
    let mut lines = text
        .split('\n')
        .rev()
        .map(|line| line.trim_end_matches('\r'));
    let Some(last) = lines.next() else {
        return true;
    };
    if last.is_empty() || !last.chars().all(|c| matches!(c, ' ' | '\t' | '\x0c')) {
        return true;
    }
    // A blank last line is fine only when continued from a line with tokens
    // (bare `\\` lines in between join too).
    for line in lines {
        match line.strip_suffix('\\') {
            Some(head) if py_strip(head).is_empty() => continue,
            Some(_) => return true,
            None => return false,
        }
    }
    false
}

/// `first_expression` reads a module; `literal_eval` parses one expression
/// (`1; 2` and a second line are syntax errors) and refuses nested signs
/// (`--1`, `1 - -1`), which the expression parser folds into one, and signs on
/// `...` or bytes.
fn eval_mode(tokens: &[Token]) -> bool {
    let sign = |t: &Token| matches!(t, Token::Op("-" | "+"));
    let lines = tokens
        .iter()
        .filter(|t| matches!(t, Token::Newline))
        .count();
    let trailing = tokens
        .iter()
        .rev()
        .take_while(|t| matches!(t, Token::Newline))
        .count();
    lines == trailing
        && !tokens.iter().any(|t| matches!(t, Token::Op(";")))
        && !tokens.windows(2).any(|w| {
            sign(&w[0]) && (sign(&w[1]) || matches!(w[1], Token::Op("...") | Token::Str(_)))
        })
}

/// Whether every `set(` in the source is `set()` (the expression parser keeps
/// no positional arguments, so `set(x)` would look empty).
fn set_calls_empty(tokens: &[Token]) -> bool {
    !tokens.windows(3).any(|w| {
        matches!(&w[0], Token::Name(n) if n == "set")
            && matches!(w[1], Token::Op("("))
            && !matches!(w[2], Token::Op(")"))
    })
}

fn contains_set_call(expr: &Expr) -> bool {
    match expr {
        Expr::Call(..) => true,
        Expr::Sign(_, inner) => contains_set_call(inner),
        Expr::Sequence(_, items) => items.iter().any(contains_set_call),
        Expr::Dict(entries) => entries
            .iter()
            .any(|(k, v)| k.as_ref().is_some_and(contains_set_call) || contains_set_call(v)),
        _ => false,
    }
}

/// A converted value: its JSON form (`None` when `json.dumps` refuses it) and
/// whether Python can hash it (be a dict key or set element).
struct Value {
    json: Option<PyJson>,
    hashable: bool,
}

fn convert(expr: &Expr) -> Result<Value, Literal> {
    Ok(match expr {
        Expr::Constant(Constant::Json(value)) => Value {
            json: Some(value.clone()),
            hashable: true,
        },
        Expr::Constant(Constant::Opaque) => Value {
            json: None,
            hashable: true,
        },
        Expr::Sign(negate, operand) => signed(*negate, operand)?,
        Expr::Sequence(kind, items) => sequence(*kind, items)?,
        Expr::Dict(entries) => dict(entries)?,
        // `set()`: a set, unhashable and refused by `json.dumps`.
        Expr::Call(callee, keywords)
            if keywords.is_empty() && matches!(&**callee, Expr::Name(n) if n == "set") =>
        {
            Value {
                json: None,
                hashable: false,
            }
        }
        Expr::FString(_) | Expr::Name(_) | Expr::Attribute(..) | Expr::Call(..) | Expr::Other => {
            return Err(Literal::Malformed);
        }
    })
}

/// `-x` / `+x`: only on an `int`, `float` or `complex` constant (not `bool`).
fn signed(negate: bool, operand: &Expr) -> Result<Value, Literal> {
    let json = match operand {
        Expr::Constant(Constant::Json(PyJson::Int(digits))) if negate => {
            Some(PyJson::Int(match digits.strip_prefix('-') {
                Some(positive) => positive.to_owned(),
                None if digits == "0" => digits.clone(),
                None => format!("-{digits}"),
            }))
        }
        Expr::Constant(Constant::Json(PyJson::Float(f))) if negate => Some(PyJson::Float(-f)),
        Expr::Constant(Constant::Json(value @ (PyJson::Int(_) | PyJson::Float(_)))) => {
            Some(value.clone())
        }
        // A complex number (bytes and `...` would be malformed; taken as complex).
        Expr::Constant(Constant::Opaque) => None,
        _ => return Err(Literal::Malformed),
    };
    Ok(Value {
        json,
        hashable: true,
    })
}

/// Lists and tuples dump as lists; sets never dump.
fn sequence(kind: SequenceKind, items: &[Expr]) -> Result<Value, Literal> {
    let mut list = Some(Vec::with_capacity(items.len()));
    let mut hashable = true;
    for item in items {
        let value = convert(item)?;
        if kind == SequenceKind::Set && !value.hashable {
            return Err(Literal::Unhashable);
        }
        hashable &= value.hashable;
        match (&mut list, value.json) {
            (Some(list), Some(json)) => list.push(json),
            _ => list = None,
        }
    }
    Ok(match kind {
        SequenceKind::List => Value {
            json: list.map(PyJson::List),
            hashable: false,
        },
        SequenceKind::Tuple => Value {
            json: list.map(PyJson::List),
            hashable,
        },
        SequenceKind::Set => Value {
            json: None,
            hashable: false,
        },
    })
}

/// A dict, built as Python does: key, value, insert; a repeated key (by
/// Python equality: `1 == 1.0 == True`) keeps its first position.
fn dict(entries: &[(Option<Expr>, Expr)]) -> Result<Value, Literal> {
    let mut items: Option<Vec<(String, String, PyJson)>> = Some(Vec::new());
    for (key, value) in entries {
        let key = convert(key.as_ref().ok_or(Literal::Malformed)?)?;
        let value = convert(value)?;
        if !key.hashable {
            return Err(Literal::Unhashable);
        }
        let Some(list) = &mut items else { continue };
        let (Some((identity, text)), Some(value)) =
            (key.json.as_ref().and_then(key_text), value.json)
        else {
            items = None;
            continue;
        };
        match list.iter_mut().find(|(id, _, _)| *id == identity) {
            Some(entry) => entry.2 = value,
            None => list.push((identity, text, value)),
        }
    }
    Ok(Value {
        json: items.map(|list| PyJson::Dict(list.into_iter().map(|(_, k, v)| (k, v)).collect())),
        hashable: false,
    })
}

/// A scalar key's identity under Python equality and its `json.dumps` text;
/// `None` for keys `json.dumps` refuses (tuples).
fn key_text(key: &PyJson) -> Option<(String, String)> {
    Some(match key {
        PyJson::Str(s) => (format!("s{s}"), s.clone()),
        PyJson::Null => ("none".to_owned(), "null".to_owned()),
        PyJson::Bool(b) => (format!("n{}", u8::from(*b)), b.to_string()),
        PyJson::Int(digits) => (format!("n{digits}"), digits.clone()),
        PyJson::Float(f) => {
            let text = json::dumps(&PyJson::Float(*f));
            let identity = if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e300 {
                format!("n{}", format!("{f:.0}").replace("-0", "0"))
            } else {
                format!("f{text}")
            };
            (identity, text)
        }
        PyJson::List(_) | PyJson::Dict(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> PyJson {
        json::loads(text).unwrap()
    }

    #[test]
    fn literals_evaluate_like_python() {
        assert_eq!(literal_eval("(1, 'a')"), Literal::Json(json(r#"[1, "a"]"#)));
        assert_eq!(literal_eval(" \t-5"), Literal::Json(json("-5")));
        assert_eq!(
            literal_eval("{'a': True, 1: None, 1.0: 2}"),
            Literal::Json(json(r#"{"a": true, "1": 2}"#))
        );
        assert_eq!(literal_eval("{1, 2}"), Literal::Unwritable);
        assert_eq!(literal_eval("b'x'"), Literal::Unwritable);
        assert_eq!(literal_eval("{(1, 2): 3}"), Literal::Unwritable);
        assert_eq!(literal_eval("{[1]: 2}"), Literal::Unhashable);
        for malformed in [
            "--1",
            "-True",
            "x",
            "1; 2",
            "f'a'",
            "",
            "\n  1",
            "[1] + [2]",
        ] {
            assert_eq!(literal_eval(malformed), Literal::Malformed, "{malformed:?}");
        }
    }
}
