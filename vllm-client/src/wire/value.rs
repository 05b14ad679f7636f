//! Untyped msgpack values, for the protocol's `Any`-typed fields.

use rmp::Marker;

use super::{Decode, DecodeError, Encode, Reader, Writer};

/// Any msgpack value, kept exactly as it arrived so that it re-encodes to the same bytes.
///
/// Used where vLLM's field is `Any` (`extra_args`, `kv_transfer_params`, utility call
/// arguments and results, the nested parts of scheduler statistics).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// `nil` (Python `None`).
    #[default]
    Nil,
    /// A boolean.
    Bool(bool),
    /// A negative integer.
    Int(i64),
    /// A non-negative integer.
    UInt(u64),
    /// A float64 (Python `float`).
    F64(f64),
    /// A float32 (not produced by vLLM, kept for exact round trips).
    F32(f32),
    /// A UTF-8 string.
    Str(String),
    /// Raw bytes.
    Bin(Vec<u8>),
    /// An array (Python list or tuple).
    Array(Vec<Value>),
    /// A map, entries in wire order.
    Map(Vec<(Value, Value)>),
    /// An extension value other than pickle.
    Ext(i8, Vec<u8>),
}

impl Value {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(v) => Some(v),
            Value::UInt(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The number as a float, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F64(v) => Some(v),
            Value::F32(v) => Some(v as f64),
            Value::Int(v) => Some(v as f64),
            Value::UInt(v) => Some(v as f64),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(v) => Some(v),
            _ => None,
        }
    }

    /// The value under string key `key`, if this is a map that has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether this is `nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// Python's truth value of the decoded object (`bool(x)`): false for `None`,
    /// `False`, zero, and empty strings, bytes, lists and dicts; true otherwise
    /// (vLLM tests flags such as `do_remote_prefill` this way).
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(v) => *v != 0,
            Value::UInt(v) => *v != 0,
            Value::F64(v) => *v != 0.0,
            Value::F32(v) => *v != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bin(b) => !b.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Ext(..) => true,
        }
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        if v >= 0 {
            Value::UInt(v as u64)
        } else {
            Value::Int(v)
        }
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::UInt(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::F64(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Self {
        Value::Array(v.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Nil, Into::into)
    }
}

impl Encode for Value {
    fn encode(&self, w: &mut Writer) {
        match self {
            Value::Nil => w.nil(),
            Value::Bool(v) => w.bool(*v),
            Value::Int(v) => w.int(*v),
            Value::UInt(v) => w.uint(*v),
            Value::F64(v) => w.f64(*v),
            Value::F32(v) => w.f32(*v),
            Value::Str(v) => w.str(v),
            Value::Bin(v) => w.bin(v),
            Value::Array(v) => v.encode(w),
            Value::Map(entries) => {
                w.map_len(entries.len());
                for (k, v) in entries {
                    k.encode(w);
                    v.encode(w);
                }
            }
            Value::Ext(ty, data) => w.ext(*ty, data),
        }
    }

    fn is_default_value(&self) -> bool {
        self.is_nil()
    }
}

impl Decode for Value {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.position();
        Ok(match Marker::from_u8(r.peek()?) {
            Marker::Null => {
                r.nil()?;
                Value::Nil
            }
            Marker::True | Marker::False => Value::Bool(r.bool()?),
            Marker::FixPos(_)
            | Marker::FixNeg(_)
            | Marker::U8
            | Marker::U16
            | Marker::U32
            | Marker::U64
            | Marker::I8
            | Marker::I16
            | Marker::I32
            | Marker::I64 => {
                let v = r.integer()?;
                if v >= 0 {
                    Value::UInt(u64::try_from(v).map_err(|_| DecodeError::IntRange(at))?)
                } else {
                    Value::Int(i64::try_from(v).map_err(|_| DecodeError::IntRange(at))?)
                }
            }
            Marker::F32 => Value::F32(r.f64()? as f32),
            Marker::F64 => Value::F64(r.f64()?),
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                Value::Str(r.str()?.to_owned())
            }
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => Value::Bin(r.bin()?.to_vec()),
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                let (ty, data) = r.ext()?;
                Value::Ext(ty, data.to_vec())
            }
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                Value::Array(Vec::decode(r)?)
            }
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => {
                let n = r.map()?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = Value::decode(r)?;
                    entries.push((k, Value::decode(r)?));
                }
                r.leave();
                Value::Map(entries)
            }
            Marker::Reserved => {
                return Err(DecodeError::Type {
                    offset: at,
                    expected: "msgpack value",
                    marker: Marker::Reserved.to_u8(),
                });
            }
        })
    }
}
