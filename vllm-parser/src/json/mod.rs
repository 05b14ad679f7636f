//! JSON with Python's semantics, because vLLM's parsers round-trip tool-call
//! arguments through `json.loads` and `json.dumps(..., ensure_ascii=False)`.
//!
//! The differences from serde_json that matter for exact output: `NaN`,
//! `Infinity` and `-Infinity` are accepted and written back; integers keep every
//! digit (Python ints are unbounded, up to 4300 digits); floats are written like
//! Python's `repr` (`1e+16`, `1e-05`, `1.0`); `-0` reads as the integer `0`; a
//! repeated key keeps its first position and its last value; separators are
//! `", "` and `": "`.

mod dump;
mod extent;
mod load;
mod partial;

pub use dump::{dumps, dumps_ascii, write_string};
pub use extent::Extent;
pub use load::{JsonError, loads, loads_lenient, loads_prefix};
pub use partial::loads_partial;

/// A JSON value as Python's `json.loads` returns it.
#[derive(Debug, Clone, PartialEq)]
pub enum PyJson {
    /// `None`.
    Null,
    /// `True` / `False`.
    Bool(bool),
    /// An `int`, as its decimal text (`-` and digits, no leading zeros).
    Int(String),
    /// A `float` (may be infinite or NaN).
    Float(f64),
    /// A `str`.
    Str(String),
    /// A `list`.
    List(Vec<PyJson>),
    /// A `dict`, in insertion order.
    Dict(Vec<(String, PyJson)>),
}

impl PyJson {
    /// The value of `key` if this is a dict holding it.
    pub fn get(&self, key: &str) -> Option<&PyJson> {
        match self {
            PyJson::Dict(items) => items.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Python's `bool(value)`.
    pub fn is_truthy(&self) -> bool {
        match self {
            PyJson::Null => false,
            PyJson::Bool(b) => *b,
            PyJson::Int(digits) => digits != "0",
            PyJson::Float(f) => *f != 0.0,
            PyJson::Str(s) => !s.is_empty(),
            PyJson::List(items) => !items.is_empty(),
            PyJson::Dict(items) => !items.is_empty(),
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PyJson::Str(s) => Some(s),
            _ => None,
        }
    }
}
