//! The msgpack codec of vLLM's engine protocol.
//!
//! vLLM encodes its messages with `msgspec`: structs declared `array_like` become msgpack
//! arrays in field order, plain structs and dataclasses become maps keyed by field name,
//! Python floats are always float64 and integers take the smallest msgpack form. This
//! module is a small, allocation-light codec that reproduces those bytes exactly and reads
//! them back defensively: every length is checked against the remaining input, nesting is
//! bounded, and the pickle extension types are refused.
//!
//! The codec is deliberately not serde: the protocol needs exact control over integer
//! widths, ext types, tolerant arrays (missing trailing fields take defaults, unknown
//! trailing fields are skipped) and default omission in maps, which is simpler to state
//! directly than to coax out of a generic serializer.

mod decode;
mod encode;
#[macro_use]
mod macros;
mod value;

pub use decode::{Decode, DecodeError, Reader};
pub use encode::{Encode, Map, Writer};
pub(crate) use macros::field_index;
pub use value::Value;

/// msgpack extension type used by vLLM for raw array bytes (`CUSTOM_TYPE_RAW_VIEW`).
pub const EXT_RAW_VIEW: i8 = 3;
/// msgpack extension type for pickled objects (`CUSTOM_TYPE_PICKLE`); always refused.
pub const EXT_PICKLE: i8 = 1;
/// msgpack extension type for cloudpickled functions (`CUSTOM_TYPE_CLOUDPICKLE`); always refused.
pub const EXT_CLOUDPICKLE: i8 = 2;

/// The key of a msgspec tagged struct's tag (msgspec's default `tag_field`).
pub const TAG_FIELD: &str = "type";

/// Encodes a value into a fresh buffer.
pub fn to_vec<T: Encode + ?Sized>(value: &T) -> Vec<u8> {
    let mut w = Writer::new();
    value.encode(&mut w);
    w.into_inner()
}

/// Decodes a whole buffer as one value; trailing bytes are an error.
pub fn from_slice<T: Decode>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut r = Reader::new(bytes);
    let value = T::decode(&mut r)?;
    r.finish()?;
    Ok(value)
}
