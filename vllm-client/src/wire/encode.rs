//! Writing msgpack the way msgspec writes it, with `rmp`'s low-level writers.
//!
//! Every value goes through `rmp::encode`, which picks the smallest form for integers,
//! strings, binaries, arrays and maps, and the fixext forms for extension values, as
//! msgspec does. The one form written by hand is the 16-bit map header msgspec reserves
//! for `omit_defaults` structs ([`Writer::map16_len`]), which `rmp` has no call for.
//!
//! Fast paths, for a measured reason: `rmp::encode`'s calls map every value through a
//! `Marker` and its non-inlined `to_u8`, and return a `Result` per write. Two kinds of
//! values are therefore written here, with the marker bytes taken from `rmp::Marker` at
//! compile time:
//!
//! - the one-byte forms (`nil`, booleans, positive fixints, and the headers of strings
//!   under 32 bytes and of arrays and maps under 16 entries, whose length is in the
//!   marker): an `EngineCoreOutput` is almost only these (a 19-element array, a short
//!   id, a token list, 16 `nil`s);
//! - unsigned integers below 2^32 (`uint8`/`uint16`/`uint32`): every token id.
//!
//! Every other form (negative and 64-bit integers, floats, longer strings and
//! containers, binaries, extensions) goes through `rmp`. Without them the 256-output
//! encode benchmark (`benches/codec.rs`) was 18% slower and the 1,000-token request
//! encode ran 10% more instructions (docs/performance.md, "Codec on rmp").

use rmp::Marker;
use rmp::encode::{self, ByteBuf};

// The one-byte forms written without a call into `rmp` (see the module doc); the bytes
// are `rmp::Marker`'s, evaluated at compile time.
const NIL: u8 = Marker::Null.to_u8();
const TRUE: u8 = Marker::True.to_u8();
const FALSE: u8 = Marker::False.to_u8();
const FIXSTR: u8 = Marker::FixStr(0).to_u8();
const FIXARRAY: u8 = Marker::FixArray(0).to_u8();
const FIXMAP: u8 = Marker::FixMap(0).to_u8();
const U8: u8 = Marker::U8.to_u8();
const U16: u8 = Marker::U16.to_u8();
const U32: u8 = Marker::U32.to_u8();

/// A growable msgpack output buffer.
///
/// Large arrays are not copied into the payload: like vLLM's `MsgpackEncoder`, the writer
/// collects them as extra frames and writes their frame index instead.
#[derive(Debug, Default)]
pub struct Writer {
    buf: ByteBuf,
    frames: Vec<bytes::Bytes>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// A writer that appends to `buf` (reusing its allocation).
    pub fn from_vec(mut buf: Vec<u8>) -> Self {
        buf.clear();
        Self {
            buf: ByteBuf::from_vec(buf),
            frames: Vec::new(),
        }
    }

    /// The payload written so far (frame 0).
    pub fn into_inner(self) -> Vec<u8> {
        self.buf.into_vec()
    }

    /// The payload and the extra frames, in the order they go on the wire.
    pub fn into_frames(self) -> (Vec<u8>, Vec<bytes::Bytes>) {
        (self.buf.into_vec(), self.frames)
    }

    /// Stores `data` as an extra frame and returns the index vLLM writes for it
    /// (frame 0 is the payload itself, so extra frames count from 1).
    pub fn push_frame(&mut self, data: bytes::Bytes) -> usize {
        self.frames.push(data);
        self.frames.len()
    }

    /// Writes `nil`.
    #[inline]
    pub fn nil(&mut self) {
        // Fast path (see the module doc): the marker byte, taken from `rmp`'s `Marker`.
        self.buf.as_mut_vec().push(NIL);
    }

    /// Writes a boolean.
    #[inline]
    pub fn bool(&mut self, v: bool) {
        // Fast path (see the module doc).
        self.buf.as_mut_vec().push(if v { TRUE } else { FALSE });
    }

    /// Writes an unsigned integer in its smallest form.
    #[inline]
    pub fn uint(&mut self, v: u64) {
        // Fast path (module doc): the forms token ids take; 64-bit values through `rmp`.
        let buf = self.buf.as_mut_vec();
        match v {
            0..0x80 => buf.push(v as u8),
            0x80..0x100 => buf.extend_from_slice(&[U8, v as u8]),
            0x100..0x1_0000 => {
                buf.push(U16);
                buf.extend_from_slice(&(v as u16).to_be_bytes());
            }
            0x1_0000..0x1_0000_0000 => {
                buf.push(U32);
                buf.extend_from_slice(&(v as u32).to_be_bytes());
            }
            _ => done(encode::write_uint(&mut self.buf, v)),
        }
    }

    /// Writes a signed integer in its smallest form (non-negative values as unsigned, as
    /// msgspec writes them).
    #[inline]
    pub fn int(&mut self, v: i64) {
        if (0..128).contains(&v) {
            self.buf.as_mut_vec().push(v as u8);
        } else {
            done(encode::write_sint(&mut self.buf, v));
        }
    }

    /// Writes a float64 (Python floats are always float64 on the wire).
    pub fn f64(&mut self, v: f64) {
        done(encode::write_f64(&mut self.buf, v));
    }

    /// Writes a float32.
    pub fn f32(&mut self, v: f32) {
        done(encode::write_f32(&mut self.buf, v));
    }

    /// Writes a string.
    #[inline]
    pub fn str(&mut self, s: &str) {
        if s.len() < 32 {
            let buf = self.buf.as_mut_vec();
            buf.push(FIXSTR | s.len() as u8);
            buf.extend_from_slice(s.as_bytes());
        } else {
            done(encode::write_str(&mut self.buf, s));
        }
    }

    /// Writes a binary blob.
    pub fn bin(&mut self, b: &[u8]) {
        done(encode::write_bin(&mut self.buf, b));
    }

    /// Writes an extension value, using the fixext forms where msgpack has them.
    pub fn ext(&mut self, ty: i8, data: &[u8]) {
        done(encode::write_ext_meta(&mut self.buf, len32(data.len()), ty));
        self.buf.as_mut_vec().extend_from_slice(data);
    }

    /// Writes an array header for `n` elements.
    #[inline]
    pub fn array_len(&mut self, n: usize) {
        if n < 16 {
            self.buf.as_mut_vec().push(FIXARRAY | n as u8);
        } else {
            done(encode::write_array_len(&mut self.buf, len32(n)));
        }
    }

    /// Writes a map header in the 16-bit form whatever `n` is, as msgspec does for
    /// `omit_defaults` structs (it reserves the header before knowing the count).
    ///
    /// `rmp` always picks the smallest header, so this one form is written here.
    pub fn map16_len(&mut self, n: usize) {
        match u16::try_from(n) {
            Ok(n) => {
                self.buf.as_mut_vec().push(Marker::Map16.to_u8());
                self.buf.as_mut_vec().extend_from_slice(&n.to_be_bytes());
            }
            Err(_) => self.map_len(n),
        }
    }

    /// Writes a map header for `n` entries.
    #[inline]
    pub fn map_len(&mut self, n: usize) {
        if n < 16 {
            self.buf.as_mut_vec().push(FIXMAP | n as u8);
        } else {
            done(encode::write_map_len(&mut self.buf, len32(n)));
        }
    }
}

/// Ends an `rmp` write into the writer's `ByteBuf`, which cannot fail (its error type is
/// `Infallible`).
#[inline(always)]
fn done<T, E>(result: Result<T, E>) {
    debug_assert!(result.is_ok(), "writing msgpack into a Vec failed");
}

/// A msgpack length: msgpack has no form for more than `u32::MAX` elements or bytes, and
/// a message that large cannot be sent to an engine.
#[inline(always)]
fn len32(n: usize) -> u32 {
    u32::try_from(n).expect("msgpack lengths are at most u32::MAX")
}

/// A type that has one msgpack encoding, the one vLLM produces for it.
pub trait Encode {
    /// Appends this value's msgpack encoding.
    fn encode(&self, w: &mut Writer);

    /// Whether this value equals its Python default, so that `omit_defaults` maps skip it.
    /// Only meaningful for fields of map-encoded structs; see `wire_map!`.
    fn is_default_value(&self) -> bool {
        false
    }
}

impl Encode for bool {
    fn encode(&self, w: &mut Writer) {
        w.bool(*self)
    }
}

macro_rules! encode_uint {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn encode(&self, w: &mut Writer) {
                w.uint(*self as u64)
            }
        }
    )*};
}
encode_uint!(u8, u16, u32, u64, usize);

macro_rules! encode_int {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn encode(&self, w: &mut Writer) {
                w.int(*self as i64)
            }
        }
    )*};
}
encode_int!(i8, i16, i32, i64);

impl Encode for f64 {
    fn encode(&self, w: &mut Writer) {
        w.f64(*self)
    }
}

impl Encode for str {
    fn encode(&self, w: &mut Writer) {
        w.str(self)
    }
}

impl Encode for String {
    fn encode(&self, w: &mut Writer) {
        w.str(self)
    }
}

impl<T: Encode> Encode for Option<T> {
    fn encode(&self, w: &mut Writer) {
        match self {
            Some(v) => v.encode(w),
            None => w.nil(),
        }
    }
}

impl<T: Encode + ?Sized> Encode for Box<T> {
    fn encode(&self, w: &mut Writer) {
        (**self).encode(w)
    }
}

impl<T: Encode> Encode for [T] {
    fn encode(&self, w: &mut Writer) {
        w.array_len(self.len());
        for v in self {
            v.encode(w);
        }
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, w: &mut Writer) {
        self.as_slice().encode(w)
    }
}

/// A msgpack map kept as an ordered list of entries.
///
/// msgspec writes dict entries in insertion order, so byte-exact re-encoding needs the
/// order a map arrived in; a `Vec` of pairs keeps it and is cheap for the small maps of
/// the protocol.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Map<K, V>(pub Vec<(K, V)>);

impl<K, V> Map<K, V> {
    /// The value of the first entry whose key equals `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        self.0
            .iter()
            .find(|(k, _)| k.borrow() == key)
            .map(|(_, v)| v)
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Encode, V: Encode> Encode for Map<K, V> {
    fn encode(&self, w: &mut Writer) {
        w.map_len(self.0.len());
        for (k, v) in &self.0 {
            k.encode(w);
            v.encode(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast paths write exactly what `rmp` writes, at every boundary.
    #[test]
    fn fast_paths_write_rmp_s_bytes() {
        let bounds: [u64; 12] = [
            0,
            127,
            128,
            255,
            256,
            65535,
            65536,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            151_645,
            u64::MAX - 1,
            u64::MAX,
        ];
        for v in bounds {
            let mut ours = Writer::new();
            ours.uint(v);
            let mut theirs = Vec::new();
            encode::write_uint(&mut theirs, v).unwrap();
            assert_eq!(ours.into_inner(), theirs, "uint {v}");
        }
        for v in [
            0i64,
            1,
            127,
            128,
            -1,
            -32,
            -33,
            -128,
            -129,
            i64::MIN,
            i64::MAX,
        ] {
            let mut ours = Writer::new();
            ours.int(v);
            let mut theirs = Vec::new();
            encode::write_sint(&mut theirs, v).unwrap();
            assert_eq!(ours.into_inner(), theirs, "int {v}");
        }
        for n in [0usize, 1, 15, 16, 31, 32, 255, 256, 65535, 65536] {
            let s = "x".repeat(n);
            let mut ours = Writer::new();
            ours.str(&s);
            ours.array_len(n);
            ours.map_len(n);
            ours.nil();
            ours.bool(true);
            ours.bool(false);
            let mut theirs = Vec::new();
            encode::write_str(&mut theirs, &s).unwrap();
            encode::write_array_len(&mut theirs, n as u32).unwrap();
            encode::write_map_len(&mut theirs, n as u32).unwrap();
            encode::write_nil(&mut theirs).unwrap();
            encode::write_bool(&mut theirs, true).unwrap();
            encode::write_bool(&mut theirs, false).unwrap();
            assert_eq!(ours.into_inner(), theirs, "length {n}");
        }
    }
}
