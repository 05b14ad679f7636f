//! Jinja's tests, the filters and Python methods the compiled path runs, each as
//! minijinja (and minijinja-contrib's pycompat layer) defines it for the value kinds
//! handled here; other kinds give up ([`Bail`]) and the interpreter renders.

use std::fmt::Write as _;
use std::sync::Arc;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Value, filters, tests as builtin};

use super::super::pyjson::{self, DumpOptions};
use super::super::value::{Generator, is_none};
use super::eval::{Bail, Run, Step, is_ours, valid};
use super::ir::{Expr, Filter, Method, Test};

impl<'a> Run<'a> {
    pub(super) fn test(&mut self, test: Test, e: &'a Expr) -> Step<bool> {
        // `name is defined` for an environment function (`strftime_now is defined`).
        if let (Test::Defined | Test::Undefined, Expr::Var(name)) = (test, e)
            && self.program.is_global(*name)
            && self.lookup(*name).is_none()
        {
            return Ok(matches!(test, Test::Defined));
        }
        let value = self.expr(e)?;
        test_value(test, &value)
    }

    /// jinja2's `select`/`reject`/`selectattr`/`rejectattr` (the environment's
    /// versions: a falsy input gives nothing, the result is a generator) for tests
    /// compiled here and `eq`/`ne`.
    fn select(&mut self, filter: Filter, input: Value, args: &[Value]) -> Step<Value> {
        let by_attr = matches!(filter, Filter::SelectAttr | Filter::RejectAttr);
        let invert = matches!(filter, Filter::Reject | Filter::RejectAttr);
        let (attr, rest) = match by_attr {
            true => (
                Some(args.first().and_then(Value::as_str).ok_or(Bail)?),
                &args[1..],
            ),
            false => (None, args),
        };
        let (test, test_args) = match rest.split_first() {
            Some((name, test_args)) => (Some(name.as_str().ok_or(Bail)?), test_args),
            None => (None, rest),
        };
        let items = if is_none(&input) || !input.is_true() {
            Vec::new()
        } else {
            self.iterate(&input)?
        };
        let mut kept = Vec::new();
        for item in items {
            let probe = match attr {
                Some(path) => get_path(&item, path)?,
                None => item.clone(),
            };
            let passed = match test {
                None => probe.is_true(),
                Some(name) => named_test(name, &probe, test_args)?,
            };
            if passed != invert {
                kept.push(item);
            }
        }
        Ok(Value::from_object(Generator(kept)))
    }

    pub(super) fn filter(
        &mut self,
        filter: Filter,
        input: Value,
        pos: &'a [Expr],
        kw: &'a [(Box<str>, Expr)],
    ) -> Step<Value> {
        match filter {
            Filter::ToJson => {
                let text = if pos.is_empty() && kw.is_empty() {
                    pyjson::dumps(&input, &DumpOptions::DEFAULT)
                } else {
                    let indent = match pos.first() {
                        Some(e) => Some(self.expr(e)?),
                        None => None,
                    };
                    let mut pairs = Vec::with_capacity(kw.len());
                    for (key, e) in kw {
                        pairs.push((key.to_string(), self.expr(e)?));
                    }
                    let kwargs = Kwargs::from_iter(pairs);
                    DumpOptions::from_kwargs(indent, &kwargs)
                        .and_then(|opts| kwargs.assert_all_used().map(|()| opts))
                        .and_then(|opts| pyjson::dumps(&input, &opts))
                }
                .map_err(|_| Bail)?;
                self.charge(text.as_str().map_or(0, str::len))?;
                Ok(text)
            }
            Filter::Trim => {
                let s = input.as_str().ok_or(Bail)?;
                if input.is_safe() {
                    return Err(Bail);
                }
                let chars = match pos.first() {
                    None => None,
                    Some(e) => Some(self.expr(e)?.as_str().ok_or(Bail)?.to_owned()),
                };
                Ok(Value::from(match chars {
                    Some(chars) => s.trim_matches(&chars.chars().collect::<Vec<_>>()[..]),
                    None => s.trim(),
                }))
            }
            Filter::Length => filters::length(&input).map(Value::from).map_err(|_| Bail),
            Filter::String => match input.kind() {
                ValueKind::String => Ok(input),
                _ if input.as_object().is_some() && !is_none(&input) => Err(Bail),
                _ => {
                    let s = input.to_string();
                    self.charge(s.len())?;
                    Ok(Value::from(s))
                }
            },
            Filter::Default => {
                let other = match pos.first() {
                    Some(e) => self.expr(e)?,
                    None => Value::from(""),
                };
                let lax = match pos.get(1) {
                    Some(e) => self.expr(e)?.is_true(),
                    None => false,
                };
                Ok(if input.is_undefined() || (lax && !input.is_true()) {
                    other
                } else {
                    input
                })
            }
            Filter::Join => {
                let joiner = match pos.first() {
                    Some(e) => {
                        let v = self.expr(e)?;
                        match v.as_str() {
                            Some(s) if !v.is_safe() => s.to_owned(),
                            _ => return Err(Bail),
                        }
                    }
                    None => String::new(),
                };
                let items = self.iterate(&input)?;
                let mut out = String::new();
                for (i, item) in items.iter().enumerate() {
                    if item.is_safe() || (item.as_object().is_some() && !is_none(item)) {
                        return Err(Bail);
                    }
                    if i > 0 {
                        out.push_str(&joiner);
                    }
                    match item.as_str() {
                        Some(s) => out.push_str(s),
                        None => write!(out, "{item}").map_err(|_| Bail)?,
                    }
                    self.charge(joiner.len())?;
                }
                self.charge(out.len())?;
                Ok(Value::from(out))
            }
            Filter::Items => filters::items(&input).map_err(|_| Bail),
            Filter::List => Ok(Value::from(self.iterate(&input)?)),
            Filter::Select | Filter::Reject | Filter::SelectAttr | Filter::RejectAttr => {
                let args = pos.iter().map(|e| self.expr(e)).collect::<Step<Vec<_>>>()?;
                self.select(filter, input, &args)
            }
        }
    }

    /// Python string and dict methods, as minijinja-contrib's pycompat defines them.
    pub(super) fn method(
        &mut self,
        receiver: &Value,
        method: Method,
        args: &[Value],
    ) -> Step<Value> {
        if is_ours(receiver) || args.iter().any(is_ours) {
            return Err(Bail);
        }
        if let Some(s) = receiver.as_str() {
            let text_arg = |i: usize| -> Step<Option<&str>> {
                match args.get(i) {
                    None => Ok(None),
                    Some(v) if v.is_none() || v.is_undefined() => Ok(None),
                    Some(v) => v.as_str().map(Some).ok_or(Bail),
                }
            };
            let strip_chars = |chars: &str| chars.chars().collect::<Vec<_>>();
            return Ok(match method {
                Method::Strip => Value::from(match text_arg(0)? {
                    Some(c) => s.trim_matches(&strip_chars(c)[..]),
                    None => s.trim(),
                }),
                Method::LStrip => Value::from(match text_arg(0)? {
                    Some(c) => s.trim_start_matches(&strip_chars(c)[..]),
                    None => s.trim_start(),
                }),
                Method::RStrip => Value::from(match text_arg(0)? {
                    Some(c) => s.trim_end_matches(&strip_chars(c)[..]),
                    None => s.trim_end(),
                }),
                Method::StartsWith | Method::EndsWith => {
                    let arg = args.first().ok_or(Bail)?;
                    let affix = arg.as_str().ok_or(Bail)?;
                    Value::from(if matches!(method, Method::StartsWith) {
                        s.starts_with(affix)
                    } else {
                        s.ends_with(affix)
                    })
                }
                Method::Split => {
                    let sep = text_arg(0)?.map(Arc::from);
                    let max = match args.get(1) {
                        None => None,
                        Some(v) if v.is_integer() => Some(v.as_i64().ok_or(Bail)?),
                        Some(_) => return Err(Bail),
                    };
                    self.charge(s.len())?;
                    filters::split(receiver, sep, max)
                        .and_then(|parts| parts.try_iter())
                        .map_err(|_| Bail)?
                        .collect::<Value>()
                }
                Method::Replace => {
                    let (Some(old), Some(new)) = (
                        args.first().and_then(Value::as_str),
                        args.get(1).and_then(Value::as_str),
                    ) else {
                        return Err(Bail);
                    };
                    let count = match args.get(2) {
                        None => None,
                        Some(v) if v.is_none() || v.is_undefined() => None,
                        Some(v) if v.is_integer() => {
                            let n = i32::try_from(v.as_i64().ok_or(Bail)?).map_err(|_| Bail)?;
                            usize::try_from(n).ok()
                        }
                        Some(_) => return Err(Bail),
                    };
                    // Pay for the growth before making the string, as pycompat does.
                    if new.len() > old.len() {
                        let matches = s.len() / old.len().max(1) + 1;
                        let matches = count.map_or(matches, |c| matches.min(c));
                        self.charge(matches.saturating_mul(new.len() - old.len()))?;
                    }
                    Value::from(match count {
                        Some(count) => s.replacen(old, new, count),
                        None => s.replace(old, new),
                    })
                }
                Method::Upper if args.is_empty() => Value::from(s.to_uppercase()),
                Method::Lower if args.is_empty() => Value::from(s.to_lowercase()),
                _ => return Err(Bail),
            });
        }
        match (method, receiver.as_object()) {
            (Method::Get, Some(obj)) if receiver.kind() == ValueKind::Map && !args.is_empty() => {
                Ok(match obj.get_value(&args[0]) {
                    Some(v) => v,
                    None => args.get(1).cloned().unwrap_or_else(|| Value::from(())),
                })
            }
            (Method::Items, Some(obj)) if receiver.kind() == ValueKind::Map && args.is_empty() => {
                Ok(Value::make_object_iterable(obj.clone(), |obj| {
                    match obj.try_iter_pairs() {
                        Some(iter) => Box::new(
                            iter.map(|(k, v)| Value::from(minijinja::value::Tuple::from([k, v]))),
                        ),
                        None => Box::new(None.into_iter()),
                    }
                }))
            }
            _ => Err(Bail),
        }
    }
}

/// A test compiled here, as the environment defines it (`none` is Python's).
fn test_value(test: Test, value: &Value) -> Step<bool> {
    if is_ours(value) && !matches!(test, Test::Defined | Test::Undefined | Test::None) {
        return Err(Bail);
    }
    Ok(match test {
        Test::Defined => builtin::is_defined(value),
        Test::Undefined => builtin::is_undefined(value),
        Test::None => is_none(value),
        Test::String => builtin::is_string(value),
        Test::Mapping => builtin::is_mapping(value),
        Test::Sequence => builtin::is_sequence(value),
        Test::Iterable => builtin::is_iterable(value),
        Test::Number => builtin::is_number(value),
        Test::Integer => builtin::is_integer(value),
        Test::Boolean => builtin::is_boolean(value),
        Test::True => builtin::is_true(value),
        Test::False => builtin::is_false(value),
    })
}

/// A test called by name from `select`-style filters.
fn named_test(name: &str, value: &Value, args: &[Value]) -> Step<bool> {
    match (name, args) {
        ("eq" | "equalto" | "==", [other]) if !is_ours(value) && !is_ours(other) => {
            Ok(value == other)
        }
        ("ne" | "!=", [other]) if !is_ours(value) && !is_ours(other) => Ok(value != other),
        (name, []) => match super::lower::test(name) {
            Some(test) => test_value(test, value),
            None => Err(Bail),
        },
        _ => Err(Bail),
    }
}

/// minijinja's dotted attribute path (`function.name`, `items.0`).
fn get_path(value: &Value, path: &str) -> Step<Value> {
    let mut current = value.clone();
    for part in path.split('.') {
        current = match part.parse::<usize>() {
            Ok(index) => current.get_item_by_index(index),
            Err(_) => current.get_attr(part),
        }
        .map_err(|_| Bail)?;
    }
    valid(current)
}
