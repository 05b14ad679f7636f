//! The macros of xgrammar 0.2.8's EBNF (`kMacroFunctions` in
//! `cpp/grammar_parser.cc`): a name among them followed by an argument list
//! of strings, integers, booleans, names and tuples, each macro checking its
//! own arguments. A rule named like a macro can be defined, but a reference
//! to it is read as the macro.

use std::collections::HashMap;

use super::lexer::Tok;
use super::parser::{Parser, Shape};
use super::{Step, Stop};

/// A macro argument (`MacroIR::Node`).
enum Value {
    Str(Vec<u8>),
    Int(i64),
    Bool,
    Ident(String),
    Tuple(Vec<Value>),
}

/// Positional and named arguments (a repeated name keeps its last value).
struct Arguments {
    positional: Vec<Value>,
    named: HashMap<String, Value>,
}

/// The macro named `name` at the parser's cursor, parsed and checked, and
/// its shape; `None` when `name` is no macro.
pub(super) fn parse(parser: &mut Parser, name: &str) -> Step<Option<Shape>> {
    let shape = match name {
        "TagDispatch" => Shape::TagDispatch,
        "TokenTagDispatch" | "Token" | "ExcludeToken" => Shape::Other,
        "Regex" => Shape::Regex,
        "Substring" => Shape::Substring,
        _ => return Ok(None),
    };
    parser.advance();
    let args = arguments(parser)?;
    let valid = match name {
        "TagDispatch" => dispatch(parser, &args, |tag| match tag {
            Value::Str(tag) if !tag.is_empty() => Some(Trigger::Text(tag)),
            _ => None,
        }),
        "TokenTagDispatch" => dispatch(parser, &args, |id| token_id(id).map(Trigger::Token)),
        "Token" | "ExcludeToken" => {
            args.named.is_empty()
                && !args.positional.is_empty()
                && args.positional.iter().all(|id| token_id(id).is_some())
        }
        "Regex" => {
            matches!(args.positional[..], [Value::Str(_)])
                && args.named.keys().all(|key| key == "json_string")
                && args.named.values().all(|v| matches!(v, Value::Bool))
        }
        _ => args.named.is_empty() && args.positional.iter().all(|v| matches!(v, Value::Str(_))),
    };
    if !valid {
        return Err(Stop::Refused);
    }
    Ok(Some(shape))
}

/// A non-negative integer, as the C++ keeps it (`int32_t`).
fn token_id(value: &Value) -> Option<i32> {
    match value {
        Value::Int(id) if *id >= 0 => Some(*id as i32),
        _ => None,
    }
}

/// A dispatch's trigger: a tag string or a token id.
#[derive(PartialEq)]
enum Trigger<'a> {
    Text(&'a [u8]),
    Token(i32),
}

impl Trigger<'_> {
    /// Whether the exclusion `exclude` clashes with this trigger: a tag
    /// string starting with it, or the same token id.
    fn excluded_by(&self, exclude: &Trigger) -> bool {
        match (self, exclude) {
            (Trigger::Text(tag), Trigger::Text(exclude)) => tag.starts_with(exclude),
            (trigger, exclude) => trigger == exclude,
        }
    }
}

/// `TagDispatch` / `TokenTagDispatch`: `(trigger, rule)` pairs, then
/// `loop_after_dispatch` (a boolean) and `excludes` (a tuple of triggers),
/// no exclusion clashing with a trigger.
fn dispatch<'a>(
    parser: &Parser,
    args: &'a Arguments,
    trigger: impl Fn(&'a Value) -> Option<Trigger<'a>>,
) -> bool {
    if !args
        .named
        .keys()
        .all(|key| key == "loop_after_dispatch" || key == "excludes")
    {
        return false;
    }
    let mut triggers = Vec::new();
    for pair in &args.positional {
        let Value::Tuple(pair) = pair else {
            return false;
        };
        let [tag, Value::Ident(rule)] = &pair[..] else {
            return false;
        };
        let Some(tag) = trigger(tag) else {
            return false;
        };
        if !parser.defined(rule) {
            return false;
        }
        triggers.push(tag);
    }
    if args
        .named
        .get("loop_after_dispatch")
        .is_some_and(|v| !matches!(v, Value::Bool))
    {
        return false;
    }
    let excludes = match args.named.get("excludes") {
        None => Vec::new(),
        Some(Value::Tuple(excludes)) => match excludes.iter().map(&trigger).collect() {
            Some(excludes) => excludes,
            None => return false,
        },
        Some(_) => return false,
    };
    !excludes
        .iter()
        .any(|exclude| triggers.iter().any(|t| t.excluded_by(exclude)))
}

/// `ParseMacroArguments`: `( … )` of values, some named `name = value`.
fn arguments(parser: &mut Parser) -> Step<Arguments> {
    let mut args = Arguments {
        positional: Vec::new(),
        named: HashMap::new(),
    };
    parser.expect(&Tok::LParen)?;
    if parser.peek() != &Tok::RParen {
        loop {
            if let (Tok::Ident(name), Tok::Equal) = (parser.peek(), parser.peek_at(1)) {
                let name = name.clone();
                parser.advance();
                parser.advance();
                let value = value(parser)?;
                args.named.insert(name, value);
            } else {
                args.positional.push(value(parser)?);
            }
            match parser.peek() {
                Tok::Comma => parser.advance(),
                Tok::RParen => break,
                _ => return Err(Stop::Refused),
            }
        }
    }
    parser.expect(&Tok::RParen)?;
    Ok(args)
}

/// `ParseMacroValue`; a tuple may end with a comma. Recurses once per
/// parenthesis, which [`super::parser::parse`] has bounded.
fn value(parser: &mut Parser) -> Step<Value> {
    let value = match parser.peek() {
        Tok::Str(value) => Value::Str(value.clone()),
        Tok::Int(value) => Value::Int(*value),
        Tok::Bool => Value::Bool,
        Tok::Ident(name) => Value::Ident(name.clone()),
        Tok::LParen => {
            parser.advance();
            let mut elements = Vec::new();
            while parser.peek() != &Tok::RParen {
                elements.push(value(parser)?);
                match parser.peek() {
                    Tok::Comma => parser.advance(),
                    Tok::RParen => {}
                    _ => return Err(Stop::Refused),
                }
            }
            Value::Tuple(elements)
        }
        _ => return Err(Stop::Refused),
    };
    parser.advance();
    Ok(value)
}
