//! Template values built from JSON, with Python's `None`.
//!
//! minijinja's `none` iterates as an empty sequence and has a length of 0; Python's
//! `None` is neither iterable nor sized, and jinja2 templates rely on that:
//! `{% for tool in tools %}` with `tools=None` fails in transformers, and
//! `tools is iterable` is false. JSON nulls from the request therefore become
//! [`PyNone`], an object that prints `None`, is falsy, passes the `none` test,
//! serializes to `null` and refuses iteration.

use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use minijinja::Value;
use minijinja::value::{Enumerator, Object, ObjectExt, ObjectRepr};

use super::pyjson::DumpOptions;

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
        serde_json::Value::Object(map) => Value::from_object(JsonMap::new(
            map.iter()
                .map(|(k, v)| (Value::from(k.as_str()), from_json(v)))
                .collect(),
        )),
    }
}

/// Maps up to this size are searched by scanning rather than hashing.
const SCANNED_MAP_LEN: usize = 12;

/// Most `tojson` texts one [`JsonMap`] remembers (one per set of options).
const DUMPS_PER_MAP: usize = 4;

/// A JSON object as a template value: a map in key order (as Python's dict) that
/// remembers its `tojson` text.
///
/// Values are immutable, so a map's text for given options never changes. Templates
/// serialize the same objects over and over (each tool of a cached tool list, on
/// every request), and Python-style serialization is the costliest step of
/// rendering such templates.
#[derive(Debug)]
pub(crate) struct JsonMap {
    entries: IndexMap<Value, Value>,
    dumps: Mutex<Vec<(DumpOptions, Arc<str>)>>,
}

impl JsonMap {
    pub(crate) fn new(entries: IndexMap<Value, Value>) -> Self {
        JsonMap {
            entries,
            dumps: Mutex::new(Vec::new()),
        }
    }

    /// The entries in order.
    pub(crate) fn entries(&self) -> &IndexMap<Value, Value> {
        &self.entries
    }

    /// The value of a string key, borrowed.
    pub(crate) fn get_str(&self, key: &str) -> Option<&Value> {
        // A scan beats hashing for small maps (minijinja's own maps do the same for
        // attributes; `message['role']` subscripts come here too).
        if self.entries.len() <= SCANNED_MAP_LEN {
            self.entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v)
        } else {
            self.entries.get(&Value::from(key))
        }
    }

    /// The `tojson` text for `opts`, made by `make` the first time.
    pub(crate) fn dumps_with(
        &self,
        opts: &DumpOptions,
        make: impl FnOnce() -> Result<String, minijinja::Error>,
    ) -> Result<Arc<str>, minijinja::Error> {
        if let Ok(cache) = self.dumps.lock()
            && let Some((_, text)) = cache.iter().find(|(o, _)| o == opts)
        {
            return Ok(text.clone());
        }
        let text: Arc<str> = make()?.into();
        if let Ok(mut cache) = self.dumps.lock()
            && cache.len() < DUMPS_PER_MAP
        {
            cache.push((opts.clone(), text.clone()));
        }
        Ok(text)
    }
}

impl Object for JsonMap {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        match key.as_str() {
            Some(key) => self.get_value_by_str(key),
            None => self.entries.get(key).cloned(),
        }
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        self.get_str(key).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.mapped_rev_key_value_enumerator(|this| {
            Box::new(this.entries.iter().map(|(k, v)| (k.clone(), v.clone())))
        })
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.entries.len())
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
