//! `json.dumps` as Python writes it, over template values.
//!
//! transformers replaces Jinja's `tojson` with
//! `json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`,
//! and templates pass those keyword arguments. Python's spacing (`", "` and `": "`,
//! `","` when indenting), its escapes and its float repr differ from
//! serde_json's, so the filter is written out here.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use super::pyrepr::write_float;

/// Options of Python's `json.dumps` that templates use.
#[derive(Debug, Clone)]
pub(crate) struct DumpOptions {
    pub ensure_ascii: bool,
    /// `None` for one line; `Some(s)` for one item per line indented by `s` per level.
    pub indent: Option<String>,
    pub item_separator: String,
    pub key_separator: String,
    pub sort_keys: bool,
}

impl DumpOptions {
    /// Reads the keyword arguments of the `tojson` filter with transformers' defaults.
    pub(crate) fn from_kwargs(indent: Option<Value>, kwargs: &Kwargs) -> Result<Self, Error> {
        let indent = match indent {
            Some(v) => Some(v),
            None => kwargs.get::<Option<Value>>("indent")?,
        };
        let indent = match indent {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => match v.kind() {
                ValueKind::Number => Some(" ".repeat(i64::try_from(v)?.max(0) as usize)),
                ValueKind::String => Some(v.as_str().unwrap_or_default().to_owned()),
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
                    (Some(i), Some(k)) => (i, k),
                    _ => {
                        return Err(Error::new(
                            ErrorKind::InvalidOperation,
                            "tojson: separators must be two strings",
                        ));
                    }
                }
            }
            _ => (
                if indent.is_some() { "," } else { ", " }.to_owned(),
                ": ".to_owned(),
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

/// Serializes `value` like Python's `json.dumps`.
pub(crate) fn dumps(value: &Value, opts: &DumpOptions) -> Result<String, Error> {
    let mut out = String::new();
    write_value(&mut out, value, opts, 0)?;
    Ok(out)
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
        ValueKind::Seq => {
            let items: Vec<Value> = value.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&opts.item_separator);
                }
                newline(out, opts, depth + 1);
                write_value(out, item, opts, depth + 1)?;
            }
            newline(out, opts, depth);
            out.push(']');
        }
        ValueKind::Map => {
            let mut entries: Vec<(String, Value)> = Vec::new();
            for key in value.try_iter()? {
                let item = value.get_item(&key)?;
                entries.push((key_string(&key)?, item));
            }
            if entries.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            if opts.sort_keys {
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push('{');
            for (i, (key, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(&opts.item_separator);
                }
                newline(out, opts, depth + 1);
                write_string(out, key, opts.ensure_ascii);
                out.push_str(&opts.key_separator);
                write_value(out, item, opts, depth + 1)?;
            }
            newline(out, opts, depth);
            out.push('}');
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
