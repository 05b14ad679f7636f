//! Per-operation allocation limits for untrusted templates.
//!
//! minijinja's fuel counts instructions (and bytes only after they are made), so one
//! operation with small inputs can still ask for gigabytes: `'%1000000000s'|format`,
//! `indent(10**9)`, `tojson(indent=10**9)`, `'x'.center(10**9)`, a `join` or `replace`
//! over a lazily repeated sequence. Each such filter and string method is wrapped here:
//! the size of its result is bounded *before* it is made and an operation that would
//! exceed [`Limits::max_value_bytes`](super::Limits::max_value_bytes) fails the render.
//! The whole output is bounded by a writer that refuses bytes past
//! [`Limits::max_output_bytes`](super::Limits::max_output_bytes).

use std::fmt::{self, Write as _};
use std::io;

use minijinja::value::{Kwargs, Rest};
use minijinja::{Environment, Error, ErrorKind, State, Value};

/// The error of an operation whose result would exceed the per-value limit.
pub(crate) fn too_large(what: &str, max: usize) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!(
            "{what} would exceed the template size limit of {max} bytes (Limits::max_value_bytes)"
        ),
    )
}

/// Counts the bytes `Display` writes, stopping once past `max`.
struct Count {
    bytes: usize,
    max: usize,
}

impl fmt::Write for Count {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.bytes = self.bytes.saturating_add(s.len());
        if self.bytes > self.max {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// The length of `value` as a string, or `None` when it is longer than `max`
/// (found without making the string).
pub(crate) fn display_len(value: &Value, max: usize) -> Option<usize> {
    if let Some(s) = value.as_str() {
        return (s.len() <= max).then_some(s.len());
    }
    let mut count = Count { bytes: 0, max };
    write!(count, "{value}").ok().map(|()| count.bytes)
}

/// The largest integer written in `s` (format widths and precisions are among them).
fn largest_number(s: &str) -> u128 {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|d| !d.is_empty())
        .map(|d| d.parse::<u128>().unwrap_or(u128::MAX))
        .max()
        .unwrap_or(0)
}

fn as_width(value: &Value) -> Option<u128> {
    if let Some(s) = value.as_str() {
        return Some(s.len() as u128);
    }
    i128::try_from(value.clone()).ok().map(|n| n.unsigned_abs())
}

/// The keyword argument `name`, or the positional argument at `index`.
fn arg(args: &[Value], index: usize, name: &str) -> Option<Value> {
    if let Some(last) = args.last()
        && last.is_kwargs()
        && let Ok(v) = last.get_attr(name)
        && !v.is_undefined()
    {
        return Some(v);
    }
    args.get(index).filter(|v| !v.is_kwargs()).cloned()
}

/// `format` (filter, `%`-style, and the `str.format` method): no width or precision (a
/// number in the format string, or a `*` argument) may exceed the limit, nor may the
/// arguments' total size.
fn check_format(format: &str, args: &[Value], max: usize) -> Result<(), Error> {
    let mut total = format.len();
    if largest_number(format) > max as u128 {
        return Err(too_large("a format width or precision", max));
    }
    for a in args {
        if format.contains('*')
            && let Some(n) = as_width(a)
            && !a.is_kwargs()
            && a.as_str().is_none()
            && n > max as u128
        {
            return Err(too_large("a format width or precision", max));
        }
        let len = display_len(a, max).ok_or_else(|| too_large("format", max))?;
        total = total.saturating_add(len);
        if total > max {
            return Err(too_large("format", max));
        }
    }
    Ok(())
}

/// `indent(width)`: the text grows by the width on every line.
fn check_indent(args: &[Value], max: usize) -> Result<(), Error> {
    let Some(text) = args.first().and_then(Value::as_str) else {
        return Ok(());
    };
    let width = arg(args, 1, "width")
        .and_then(|w| as_width(&w))
        .unwrap_or(4);
    let lines = text.matches('\n').count() as u128 + 1;
    if (text.len() as u128).saturating_add(lines.saturating_mul(width)) > max as u128 {
        return Err(too_large("indent", max));
    }
    Ok(())
}

/// `center`, `ljust`, `rjust`, `zfill`: a result of the requested width.
fn check_width(what: &str, width: Option<Value>, max: usize) -> Result<(), Error> {
    // A fill character is at most 4 bytes.
    if width
        .and_then(|w| as_width(&w))
        .unwrap_or(0)
        .saturating_mul(4)
        > max as u128
    {
        return Err(too_large(what, max));
    }
    Ok(())
}

/// `join`: the items' text and a joiner between each two, counted (and fuel charged per
/// item, so a lazily repeated sequence of 10^12 items stops on fuel) before joining.
fn check_join(state: &State, args: &[Value], max: usize) -> Result<(), Error> {
    let Some(value) = args.first() else {
        return Ok(());
    };
    if value.as_str().is_some() {
        return Ok(());
    }
    let joiner = arg(args, 1, "d").map_or(0, |j| display_len(&j, max).unwrap_or(usize::MAX));
    let attribute = arg(args, 2, "attribute");
    let Ok(items) = value.try_iter() else {
        return Ok(());
    };
    let mut total = 0usize;
    for (i, item) in items.enumerate() {
        state.consume_fuel(1)?;
        let item = match &attribute {
            Some(path) => {
                let mut v = item;
                for part in path.to_string().split('.') {
                    v = match part.parse::<usize>() {
                        Ok(n) => v.get_item(&Value::from(n)).unwrap_or_default(),
                        Err(_) => v.get_attr(part).unwrap_or_default(),
                    };
                }
                v
            }
            None => item,
        };
        let len = display_len(&item, max).ok_or_else(|| too_large("join", max))?;
        total = total
            .saturating_add(len)
            .saturating_add(if i > 0 { joiner } else { 0 });
        if total > max {
            return Err(too_large("join", max));
        }
    }
    Ok(())
}

/// `replace(old, new[, count])`: each occurrence grows the text by `new - old` bytes.
fn check_replace(text: &str, args: &[Value], max: usize) -> Result<(), Error> {
    let (Some(old), Some(new)) = (args.first(), args.get(1)) else {
        return Ok(());
    };
    let old = old.to_string();
    let new_len = display_len(new, max).ok_or_else(|| too_large("replace", max))?;
    if new_len <= old.len() {
        return Ok(());
    }
    let count = if old.is_empty() {
        text.chars().count() + 1
    } else {
        text.matches(old.as_str()).count()
    };
    let grown = (text.len() as u128).saturating_add(count as u128 * (new_len - old.len()) as u128);
    if grown > max as u128 {
        return Err(too_large("replace", max));
    }
    Ok(())
}

/// `string`: no string longer than the limit. `list` and the filters that collect a
/// sequence (`sort`, `reverse`, `unique`, `batch`, `slice`, `groupby`,
/// `dictsort`): no collection of more than the limit's worth of values (24 bytes each);
/// strings, already bounded, pass.
fn check_materialize(state: &State, what: &str, args: &[Value], max: usize) -> Result<(), Error> {
    use minijinja::value::ValueKind;
    let Some(value) = args.first() else {
        return Ok(());
    };
    match what {
        "string" => {
            string_len(state, value, max).ok_or_else(|| too_large(what, max))??;
        }
        _ if matches!(
            value.kind(),
            ValueKind::Seq | ValueKind::Iterable | ValueKind::Map
        ) && value.len().unwrap_or(0).saturating_mul(24) > max =>
        {
            return Err(too_large(what, max));
        }
        _ => {}
    }
    Ok(())
}

/// Like [`display_len`], but a sequence or map is walked item by item with fuel charged
/// for each (formatting a lazily repeated sequence visits every item even after the
/// output is refused).
pub(crate) fn string_len(state: &State, value: &Value, max: usize) -> Option<Result<usize, Error>> {
    use minijinja::value::ValueKind;
    if !matches!(
        value.kind(),
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map
    ) {
        return display_len(value, max).map(Ok);
    }
    let Ok(items) = value.try_iter() else {
        return display_len(value, max).map(Ok);
    };
    let mut total = 2usize;
    for item in items {
        if let Err(e) = state.consume_fuel(1) {
            return Some(Err(e));
        }
        let item = match value.kind() {
            ValueKind::Map => value.get_item(&item).unwrap_or_default(),
            _ => item,
        };
        total = total.saturating_add(display_len(&item, max)? + 2);
        if total > max {
            return None;
        }
    }
    Some(Ok(total))
}

/// Replaces the builtin filters that can make large values with guarded versions.
pub(crate) fn guard_filters(env: &mut Environment<'static>, max: usize) {
    use minijinja::filters as f;
    let builtins: [(&str, Value); 13] = [
        ("format", Value::from_function(f::format)),
        ("indent", Value::from_function(f::indent)),
        ("join", Value::from_function(f::join)),
        ("replace", Value::from_function(f::replace)),
        ("string", Value::from_function(f::string)),
        ("list", Value::from_function(f::list)),
        // The filters that collect a sequence's items before answering.
        ("sort", Value::from_function(f::sort)),
        ("reverse", Value::from_function(f::reverse)),
        ("unique", Value::from_function(f::unique)),
        ("batch", Value::from_function(f::batch)),
        ("slice", Value::from_function(f::slice)),
        ("groupby", Value::from_function(f::groupby)),
        ("dictsort", Value::from_function(f::dictsort)),
    ];
    for (name, builtin) in builtins {
        env.add_filter(
            name,
            move |state: &mut State, args: Rest<Value>, kwargs: Kwargs| {
                // Keyword arguments (`join(attribute=…)`, `sort(reverse=true)`) go on to
                // the builtin, which checks them itself: mark them used here.
                let mut all = args.0;
                if kwargs.args().next().is_some() {
                    for key in kwargs.args().map(str::to_owned).collect::<Vec<_>>() {
                        let _: Value = kwargs.get(&key)?;
                    }
                    all.push(Value::from(kwargs));
                }
                check_filter(state, name, &all, max)?;
                builtin.call(state, &all)
            },
        );
    }
}

fn check_filter(state: &State, name: &str, args: &[Value], max: usize) -> Result<(), Error> {
    match name {
        "format" => match args.first().and_then(Value::as_str) {
            Some(format) => check_format(format, &args[1..], max),
            None => Ok(()),
        },
        "indent" => check_indent(args, max),
        "join" => check_join(state, args, max),
        "replace" => match args.first().and_then(Value::as_str) {
            Some(text) => check_replace(text, &args[1..], max),
            None => Ok(()),
        },
        other => check_materialize(state, other, args, max),
    }
}

/// Checks a string method call (minijinja-contrib's Python methods) before it runs.
pub(crate) fn check_method(
    state: &State,
    value: &Value,
    method: &str,
    args: &[Value],
    max: usize,
) -> Result<(), Error> {
    let Some(text) = value.as_str() else {
        return Ok(());
    };
    match method {
        "center" | "ljust" | "rjust" | "zfill" => check_width(method, args.first().cloned(), max),
        "expandtabs" => {
            let width = args.first().and_then(as_width).unwrap_or(8);
            let tabs = text.matches('\t').count() as u128;
            if (text.len() as u128).saturating_add(tabs.saturating_mul(width)) > max as u128 {
                return Err(too_large("expandtabs", max));
            }
            Ok(())
        }
        "format" => check_format(text, args, max),
        "replace" => check_replace(text, args, max),
        "join" => {
            let mut all = Vec::with_capacity(2);
            all.extend(args.first().cloned());
            all.push(value.clone());
            check_join(state, &all, max)
        }
        _ => Ok(()),
    }
}

/// An output buffer that refuses to grow past `max` bytes.
pub(crate) struct Bounded {
    pub(crate) buf: Vec<u8>,
    /// Set when a write was refused.
    pub(crate) full: bool,
    max: usize,
}

impl Bounded {
    pub(crate) fn new(max: usize) -> Self {
        Bounded {
            buf: Vec::new(),
            full: false,
            max,
        }
    }
}

impl io::Write for Bounded {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.buf.len().saturating_add(bytes.len()) > self.max {
            self.full = true;
            return Err(io::Error::other("output limit"));
        }
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The error of a render whose output would exceed `max` bytes.
pub(crate) fn output_too_large(max: usize) -> crate::RenderError {
    crate::RenderError::Template(format!(
        "the rendered prompt exceeds the limit of {max} bytes (Limits::max_output_bytes)"
    ))
}

/// Bounds `tojson`'s output before it is made: an indent of more than `max` bytes, or
/// an estimate of the output (every value's text, plus one indented line per item when
/// indenting) past `max`, fails. Request data (JSON objects) is walked only when
/// indenting; values the template built (lazily repeated sequences among them) always.
pub(crate) fn check_tojson(
    state: &State,
    value: &Value,
    indent: Option<&str>,
    max: usize,
) -> Result<(), Error> {
    let indent = indent.map_or(0, str::len);
    let mut shape = Shape {
        nodes: 0,
        depth: 0,
        walk_json: indent > 0,
        max,
    };
    shape.walk(state, value, 0)?;
    let estimate = (shape.nodes as u128).saturating_mul((shape.depth as u128 + 1) * indent as u128);
    if estimate > max as u128 {
        return Err(too_large("tojson", max));
    }
    Ok(())
}

struct Shape {
    nodes: usize,
    depth: usize,
    walk_json: bool,
    max: usize,
}

impl Shape {
    fn walk(&mut self, state: &State, value: &Value, depth: usize) -> Result<(), Error> {
        self.nodes += 1;
        self.depth = self.depth.max(depth);
        if self.nodes > self.max || depth > 512 {
            return Err(too_large("tojson", self.max));
        }
        if let Some(s) = value.as_str() {
            // Escaped, a character takes at most 6 bytes.
            if s.len().saturating_mul(6) > self.max {
                return Err(too_large("tojson", self.max));
            }
            return Ok(());
        }
        match value.kind() {
            minijinja::value::ValueKind::Seq => {
                if let Some(items) = value.downcast_object_ref::<Vec<Value>>() {
                    for item in items.iter() {
                        self.walk(state, item, depth + 1)?;
                    }
                } else {
                    for item in value.try_iter()? {
                        state.consume_fuel(1)?;
                        self.walk(state, &item, depth + 1)?;
                    }
                }
            }
            minijinja::value::ValueKind::Map => {
                if !self.walk_json
                    && value
                        .downcast_object_ref::<super::value::JsonMap>()
                        .is_some()
                {
                    return Ok(());
                }
                for key in value.try_iter()? {
                    state.consume_fuel(1)?;
                    let item = value.get_item(&key)?;
                    self.walk(state, &key, depth + 1)?;
                    self.walk(state, &item, depth + 1)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}
