//! Template values built from JSON, with Python's `None`.
//!
//! minijinja's `none` iterates as an empty sequence and has a length of 0; Python's
//! `None` is neither iterable nor sized, and jinja2 templates rely on that:
//! `{% for tool in tools %}` with `tools=None` fails in transformers, and
//! `tools is iterable` is false. JSON nulls from the request therefore become
//! [`PyNone`], an object that prints `None`, is falsy, passes the `none` test,
//! serializes to `null` and refuses iteration.

use std::sync::Arc;

use indexmap::IndexMap;
use minijinja::Value;
use minijinja::value::{Enumerator, Object, ObjectExt, ObjectRepr};

/// Python's `None` as a template value.
#[derive(Debug)]
pub(crate) struct PyNone;

impl Object for PyNone {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::NonEnumerable
    }

    fn is_true(self: &Arc<Self>) -> bool {
        false
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("None")
    }
}

/// True for minijinja's `none` and for [`PyNone`].
pub(crate) fn is_none(value: &Value) -> bool {
    value.is_none() || value.downcast_object_ref::<PyNone>().is_some()
}

/// Converts request JSON into a template value (maps keep their key order).
pub(crate) fn from_json(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::from_object(PyNone),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => {
            Value::from(items.iter().map(from_json).collect::<Vec<_>>())
        }
        serde_json::Value::Object(map) => {
            let map: IndexMap<Value, Value> = map
                .iter()
                .map(|(k, v)| (Value::from(k.as_str()), from_json(v)))
                .collect();
            Value::from_object(map)
        }
    }
}

/// The result of jinja2's `map`, `select`, `reject`, `selectattr` and `rejectattr`:
/// a Python generator. It iterates, is always truthy, has no length and is not
/// JSON-serializable, as in Python (so `tools | map(...) | tojson` fails there and here).
#[derive(Debug)]
pub(crate) struct Generator(pub(crate) Vec<Value>);

impl Object for Generator {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Iterable
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.mapped_enumerator(|this| Box::new(this.0.iter().cloned()))
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        None
    }

    fn is_true(self: &Arc<Self>) -> bool {
        true
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<generator object>")
    }
}
