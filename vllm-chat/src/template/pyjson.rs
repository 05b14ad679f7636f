//! `json.dumps` as Python writes it, over template values.
//!
//! transformers replaces Jinja's `tojson` with
//! `json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`,
//! and templates pass those keyword arguments. Python's spacing (`", "` and `": "`,
//! `","` when indenting), its escapes and its float repr differ from
//! serde_json's, so the filter is written out here.

use std::borrow::Cow;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use super::pyrepr::write_float;
use super::value::JsonMap;

/// Options of Python's `json.dumps` that templates use.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DumpOptions {
    pub ensure_ascii: bool,
    /// `None` for one line; `Some(s)` for one item per line indented by `s` per level.
    pub indent: Option<Cow<'static, str>>,
    pub item_separator: Cow<'static, str>,
    pub key_separator: Cow<'static, str>,
    pub sort_keys: bool,
}

impl DumpOptions {
    /// transformers' `tojson` without arguments: `json.dumps(x, ensure_ascii=False)`.
    pub(crate) const DEFAULT: DumpOptions = DumpOptions {
        ensure_ascii: false,
        indent: None,
        item_separator: Cow::Borrowed(", "),
        key_separator: Cow::Borrowed(": "),
        sort_keys: false,
    };

    /// Reads the keyword arguments of the `tojson` filter with transformers' defaults.
    pub(crate) fn from_kwargs(indent: Option<Value>, kwargs: &Kwargs) -> Result<Self, Error> {
        if indent.is_none() && kwargs.args().next().is_none() {
            return Ok(Self::DEFAULT);
        }
        let indent = match indent {
            Some(v) => Some(v),
            None => kwargs.get::<Option<Value>>("indent")?,
        };
        let indent = match indent {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => match v.kind() {
                ValueKind::Number => match i64::try_from(v)?.max(0) as usize {
                    2 => Some(Cow::Borrowed("  ")),
                    4 => Some(Cow::Borrowed("    ")),
                    n => Some(Cow::Owned(" ".repeat(n))),
                },
                ValueKind::String => Some(Cow::Owned(v.as_str().unwrap_or_default().to_owned())),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: indent must be an int or a string",
                    ));
                }
            },
        };
        let (item_separator, key_separator) = match kwargs.get::<Option<Value>>("separators")? {
            Some(v) if !v.is_none() => {
                let mut it = v.try_iter()?;
                let item = it.next().and_then(|x| x.as_str().map(str::to_owned));
                let key = it.next().and_then(|x| x.as_str().map(str::to_owned));
                match (item, key) {
                    (Some(i), Some(k)) => (Cow::Owned(i), Cow::Owned(k)),
                    _ => {
                        return Err(Error::new(
                            ErrorKind::InvalidOperation,
                            "tojson: separators must be two strings",
                        ));
                    }
                }
            }
            _ => (
                Cow::Borrowed(if indent.is_some() { "," } else { ", " }),
                Cow::Borrowed(": "),
            ),
        };
        let ensure_ascii = kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false);
        let sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
        kwargs.assert_all_used()?;
        Ok(DumpOptions {
            ensure_ascii,
            indent,
            item_separator,
            key_separator,
            sort_keys,
        })
    }
}

/// Maximum nesting accepted, as Python's recursion limit would stop a deep structure.
const MAX_DEPTH: usize = 512;

/// Serializes `value` like Python's `json.dumps` (a JSON object's text is made once).
pub(crate) fn dumps(value: &Value, opts: &DumpOptions) -> Result<Value, Error> {
    let write = || {
        let mut out = String::new();
        write_value(&mut out, value, opts, 0)?;
        Ok(out)
    };
    match value.downcast_object_ref::<JsonMap>() {
        Some(map) => map.dumps_with(opts, write).map(Value::from),
        None => write().map(Value::from),
    }
}

fn newline(out: &mut String, opts: &DumpOptions, depth: usize) {
    if let Some(indent) = &opts.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    }
}

fn write_value(
    out: &mut String,
    value: &Value,
    opts: &DumpOptions,
    depth: usize,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "maximum recursion depth exceeded while encoding a JSON object",
        ));
    }
    if super::value::is_none(value) {
        out.push_str("null");
        return Ok(());
    }
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => write_number(out, value),
        ValueKind::String => {
            write_string(out, value.as_str().unwrap_or_default(), opts.ensure_ascii)
        }
        // A lazy iterable is a Python generator (`map`, `select`, …): not serializable.
        ValueKind::Iterable => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "Object of type generator is not JSON serializable",
            ));
        }
        ValueKind::Map if value.downcast_object_ref::<JsonMap>().is_some() => {
            let entries = value
                .downcast_object_ref::<JsonMap>()
                .map(JsonMap::entries)
                .into_iter()
                .flatten();
            write_map(out, entries, opts, depth)?;
        }
        ValueKind::Seq if value.downcast_object_ref::<Vec<Value>>().is_some() => {
            let items = value
                .downcast_object_ref::<Vec<Value>>()
                .into_iter()
                .flatten();
            write_seq(out, items, opts, depth)?;
        }
        ValueKind::Seq => {
            let items: Vec<Value> = value.try_iter()?.collect();
            write_seq(out, items.iter(), opts, depth)?;
        }
        ValueKind::Map => {
            let mut entries: Vec<(Value, Value)> = Vec::new();
            for key in value.try_iter()? {
                let item = value.get_item(&key)?;
                entries.push((key, item));
            }
            write_map(out, entries.iter().map(|(k, v)| (k, v)), opts, depth)?;
        }
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("Object of type {} is not JSON serializable", value.kind()),
            ));
        }
    }
    Ok(())
}

fn write_seq<'a>(
    out: &mut String,
    items: impl Iterator<Item = &'a Value>,
    opts: &DumpOptions,
    depth: usize,
) -> Result<(), Error> {
    out.push('[');
    let mut empty = true;
    for item in items {
        if !empty {
            out.push_str(&opts.item_separator);
        }
        empty = false;
        newline(out, opts, depth + 1);
        write_value(out, item, opts, depth + 1)?;
    }
    if !empty {
        newline(out, opts, depth);
    }
    out.push(']');
    Ok(())
}

fn write_map<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a Value, &'a Value)>,
    opts: &DumpOptions,
    depth: usize,
) -> Result<(), Error> {
    if opts.sort_keys {
        let mut sorted = entries
            .map(|(k, v)| Ok((key_string(k)?, v)))
            .collect::<Result<Vec<_>, Error>>()?;
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let entries = sorted
            .iter()
            .map(|(k, v)| Ok((Cow::Borrowed(k.as_str()), *v)));
        return write_entries(out, entries, opts, depth);
    }
    let entries = entries.map(|(k, v)| {
        let key = match k.as_str() {
            Some(k) => Cow::Borrowed(k),
            None => Cow::Owned(key_string(k)?),
        };
        Ok((key, v))
    });
    write_entries(out, entries, opts, depth)
}

fn write_entries<'a>(
    out: &mut String,
    entries: impl Iterator<Item = Result<(Cow<'a, str>, &'a Value), Error>>,
    opts: &DumpOptions,
    depth: usize,
) -> Result<(), Error> {
    out.push('{');
    let mut empty = true;
    for entry in entries {
        let (key, item) = entry?;
        if !empty {
            out.push_str(&opts.item_separator);
        }
        empty = false;
        newline(out, opts, depth + 1);
        write_string(out, &key, opts.ensure_ascii);
        out.push_str(&opts.key_separator);
        write_value(out, item, opts, depth + 1)?;
    }
    if !empty {
        newline(out, opts, depth);
    }
    out.push('}');
    Ok(())
}

/// Python converts bool, None and number keys to strings; other keys are an error.
fn key_string(key: &Value) -> Result<String, Error> {
    Ok(match key.kind() {
        ValueKind::String => key.as_str().unwrap_or_default().to_owned(),
        ValueKind::Bool => (if key.is_true() { "true" } else { "false" }).to_owned(),
        ValueKind::None | ValueKind::Undefined => "null".to_owned(),
        ValueKind::Number => {
            let mut s = String::new();
            write_number(&mut s, key);
            s
        }
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("keys must be str, int, float, bool or None, not {other}"),
            ));
        }
    })
}

fn write_number(out: &mut String, value: &Value) {
    if value.is_integer() {
        out.push_str(&value.to_string());
    } else if let Ok(f) = f64::try_from(value.clone()) {
        if f.is_nan() {
            out.push_str("NaN");
        } else if f.is_infinite() {
            out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
        } else {
            write_float(out, f);
        }
    } else {
        out.push_str(&value.to_string());
    }
}

/// Writes a JSON string literal with Python's escapes.
pub(crate) fn write_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) > 0x7e) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
