//! serde support for the wire's own building blocks: [`Value`], [`Map`] and raw array bytes.
//!
//! These are what the protocol types are made of besides plain Rust types, so that
//! `#[derive(Serialize, Deserialize)]` works on every wire struct. Field names, not field
//! order, are what serde sees: this is the path to JSON and other self-describing
//! formats. vLLM's msgpack bytes come only from [`Encode`](super::Encode).
//!
//! - [`Value`] serializes as the value it holds (`nil` as unit, `Bin` as bytes, `Map` as a
//!   map, entries in order); an extension value as the newtype struct `_ExtStruct`
//!   holding `(type, bytes)`, the convention of `rmp-serde`. Formats without bytes (JSON)
//!   write bytes as arrays of integers, which read back as an `Array`, and an extension
//!   as `[type, [bytes…]]`: JSON round trips keep the numbers, not the msgpack types.
//! - [`Map`] serializes as a map in entry order and reads back in the order given.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::{Map, Value};

/// The newtype-struct name `rmp-serde` uses for msgpack extension values.
const EXT_STRUCT: &str = "_ExtStruct";

/// Bytes as serde bytes (msgpack bin, JSON array of numbers).
struct AsBytes<'a>(&'a [u8]);

impl Serialize for AsBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Nil => s.serialize_unit(),
            Value::Bool(v) => s.serialize_bool(*v),
            Value::Int(v) => s.serialize_i64(*v),
            Value::UInt(v) => s.serialize_u64(*v),
            Value::F64(v) => s.serialize_f64(*v),
            Value::F32(v) => s.serialize_f32(*v),
            Value::Str(v) => s.serialize_str(v),
            Value::Bin(v) => s.serialize_bytes(v),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Value::Ext(ty, data) => s.serialize_newtype_struct(EXT_STRUCT, &(ty, AsBytes(data))),
        }
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::UInt(v))
    }

    fn visit_f32<E>(self, v: f32) -> Result<Value, E> {
        Ok(Value::F32(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::F64(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }

    fn visit_bytes<E>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::Bin(v.to_vec()))
    }

    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Value, E> {
        Ok(Value::Bin(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        // An extension value written by `rmp-serde`'s convention: `(type, bytes)`.
        let (ty, data) = <(i8, serde_bytes_vec::ByteVec)>::deserialize(d)?;
        Ok(Value::Ext(ty, data.0))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // The size hint comes from the input: cap what it may allocate up front.
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Value::Map(entries))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl<K: Serialize, V: Serialize> Serialize for Map<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Deserialize<'de> for Map<K, V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<K, V>(std::marker::PhantomData<(K, V)>);

        impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for MapVisitor<K, V> {
            type Value = Map<K, V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Map<K, V>, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Map(entries))
            }
        }

        d.deserialize_map(MapVisitor(std::marker::PhantomData))
    }
}

/// A byte vector read from serde bytes or from a sequence of integers (how JSON writes
/// bytes).
pub(crate) mod serde_bytes_vec {
    use super::*;

    /// Bytes read back from any serde representation of bytes.
    pub(crate) struct ByteVec(pub Vec<u8>);

    impl<'de> Deserialize<'de> for ByteVec {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct BytesVisitor;

            impl<'de> Visitor<'de> for BytesVisitor {
                type Value = ByteVec;

                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("bytes or a sequence of byte values")
                }

                fn visit_bytes<E>(self, v: &[u8]) -> Result<ByteVec, E> {
                    Ok(ByteVec(v.to_vec()))
                }

                fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<ByteVec, E> {
                    Ok(ByteVec(v))
                }

                fn visit_str<E>(self, v: &str) -> Result<ByteVec, E> {
                    Ok(ByteVec(v.as_bytes().to_vec()))
                }

                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ByteVec, A::Error> {
                    let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
                    while let Some(b) = seq.next_element::<u8>()? {
                        out.push(b);
                    }
                    Ok(ByteVec(out))
                }
            }

            d.deserialize_byte_buf(BytesVisitor)
        }
    }
}

/// `#[serde(with = "…")]` for a [`bytes::Bytes`] field: written as serde bytes, read back
/// from bytes or a sequence of integers.
pub(crate) mod frame_bytes {
    use super::serde_bytes_vec::ByteVec;
    use super::*;

    pub(crate) fn serialize<S: Serializer>(b: &bytes::Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bytes::Bytes, D::Error> {
        ByteVec::deserialize(d).map(|b| bytes::Bytes::from(b.0))
    }
}

/// `#[serde(with = "…")]` for a `Vec<u8>` field: written as serde bytes (msgpack bin,
/// JSON array of numbers), read back from either.
pub(crate) mod vec_bytes {
    use super::serde_bytes_vec::ByteVec;
    use super::*;

    pub(crate) fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        ByteVec::deserialize(d).map(|b| b.0)
    }
}

/// Fails deserialization with a message naming the protocol type.
pub(crate) fn invalid<E: de::Error>(what: &str, detail: impl fmt::Display) -> E {
    E::custom(format_args!("invalid {what}: {detail}"))
}
