//! Reading msgpack defensively: bounded, allocation-checked, pickle refused.
//!
//! Markers, lengths and scalars are read by `rmp`'s low-level readers (`rmp::decode`)
//! over the rest of the input. What `rmp` leaves to its caller is done here: checking a
//! declared length against the bytes that remain before anything is allocated for it,
//! bounding the nesting depth, refusing the pickle extension types, borrowing strings
//! and binaries from the input, and resolving out-of-band frames.
//!
//! Fast paths, for a measured reason. `rmp::decode`'s readers go through a cursor, a
//! `Marker` and a `Result` per byte read: about 50 instructions per integer where the
//! previous hand-written reader took about 15 (callgrind on `benches/codec.rs`). Two
//! kinds of values are therefore read here, with the marker bytes taken from
//! `rmp::Marker` at compile time:
//!
//! - the one-byte forms whose value is in the marker: positive fixints and the headers
//!   of fixstrs, fixarrays and fixmaps (an `EngineCoreOutput` is almost only these);
//! - unsigned integers in the `uint8`/`uint16`/`uint32` forms, which is what every token
//!   id is (vocabularies are far below 2^32).
//!
//! Everything else (signed and 64-bit integers, floats, longer strings and containers,
//! binaries, extensions, and every error) goes through `rmp`. Without them the
//! 1,000-token request decode ran 39% more instructions and the 256-output decode was
//! 6% slower (docs/performance.md, "Codec on rmp").

use bytes::Bytes as Frame;
use rmp::Marker;
use rmp::decode::bytes::BytesReadError;
use rmp::decode::{self, Bytes, NumValueReadError, ValueReadError};

use super::{EXT_CLOUDPICKLE, EXT_PICKLE};

// The one-byte forms' ranges (fast path, see the module doc), bounded by `rmp::Marker`'s
// bytes: positive fixints below the fixmaps, then fixmaps, fixarrays, fixstrs, `nil`.
const FIXMAP: u8 = Marker::FixMap(0).to_u8();
const FIXARRAY: u8 = Marker::FixArray(0).to_u8();
const FIXSTR: u8 = Marker::FixStr(0).to_u8();
const NIL: u8 = Marker::Null.to_u8();
const U8: u8 = Marker::U8.to_u8();
const U16: u8 = Marker::U16.to_u8();
const U32: u8 = Marker::U32.to_u8();

/// Deepest nesting of arrays and maps accepted from the wire.
const MAX_DEPTH: u32 = 128;

/// Why a message could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The input ended inside a value.
    #[error("truncated msgpack at byte {0}")]
    Truncated(usize),
    /// A value had a different msgpack type than the field expects.
    #[error("at byte {offset}: expected {expected}, found marker 0x{marker:02x}")]
    Type {
        /// Byte offset of the offending value.
        offset: usize,
        /// What the decoder wanted.
        expected: &'static str,
        /// The msgpack marker byte found instead.
        marker: u8,
    },
    /// An integer did not fit the field's range.
    #[error("at byte {0}: integer out of range")]
    IntRange(usize),
    /// A string was not valid UTF-8.
    #[error("at byte {0}: string is not valid UTF-8")]
    Utf8(usize),
    /// A pickle or cloudpickle extension: never deserialized.
    #[error("at byte {0}: pickle extension type {1} refused")]
    Pickle(usize, i8),
    /// Arrays and maps nested deeper than the decoder allows.
    #[error("at byte {0}: nesting too deep")]
    TooDeep(usize),
    /// Bytes left over after the top-level value.
    #[error("{0} trailing bytes after the message")]
    Trailing(usize),
    /// A value was well-formed msgpack but not a valid protocol value.
    #[error("invalid {what}: {detail}")]
    Invalid {
        /// The field or type concerned.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// An out-of-band frame index pointed past the frames of the message.
    #[error("frame index {0} out of range ({1} frames)")]
    FrameIndex(usize, usize),
}

/// A position of a [`Reader`], see [`Reader::checkpoint`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checkpoint {
    pos: usize,
    depth: u32,
}

/// A cursor over one msgpack message (frame 0) and its out-of-band frames.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    depth: u32,
    frames: &'a [Frame],
}

impl<'a> Reader<'a> {
    /// A reader over a message without extra frames.
    pub fn new(buf: &'a [u8]) -> Self {
        Self::with_frames(buf, &[])
    }

    /// A reader over a message whose arrays may refer to extra frames; `frames[i - 1]` is
    /// the frame vLLM numbers `i` (the payload itself is frame 0).
    pub fn with_frames(buf: &'a [u8], frames: &'a [Frame]) -> Self {
        Self {
            buf,
            pos: 0,
            depth: 0,
            frames,
        }
    }

    /// Current byte offset.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Where the reader is, to come back to with [`Reader::rewind`].
    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            pos: self.pos,
            depth: self.depth,
        }
    }

    /// Goes back to a checkpoint taken on this reader, to read the same bytes again
    /// another way (a fast path that met something it does not handle).
    pub(crate) fn rewind(&mut self, to: Checkpoint) {
        self.pos = to.pos;
        self.depth = to.depth;
    }

    /// Fails if bytes remain after the value just read.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.buf.len() - self.pos {
            0 => Ok(()),
            n => Err(DecodeError::Trailing(n)),
        }
    }

    /// The extra frame vLLM numbers `index`.
    pub fn frame(&self, index: usize) -> Result<Frame, DecodeError> {
        index
            .checked_sub(1)
            .and_then(|i| self.frames.get(i))
            .cloned()
            .ok_or(DecodeError::FrameIndex(index, self.frames.len() + 1))
    }

    /// The next marker byte, without consuming it.
    pub fn peek(&self) -> Result<u8, DecodeError> {
        self.buf
            .get(self.pos)
            .copied()
            .ok_or(DecodeError::Truncated(self.pos))
    }

    /// The next marker, without consuming it.
    fn marker(&self) -> Result<Marker, DecodeError> {
        self.peek().map(Marker::from_u8)
    }

    /// If the next byte is in `range` (a one-byte form), consumes it and returns it.
    #[inline(always)]
    fn one_byte(&mut self, range: std::ops::Range<u8>) -> Option<u8> {
        match self.buf.get(self.pos) {
            Some(&b) if range.contains(&b) => {
                self.pos += 1;
                Some(b - range.start)
            }
            _ => None,
        }
    }

    /// Runs one `rmp` read on the rest of the input and advances past what it consumed;
    /// its errors are mapped to [`DecodeError`]s at the value's offset, `expected` naming
    /// the type on a mismatch.
    #[inline(always)]
    fn read<T, E: RmpError>(
        &mut self,
        expected: &'static str,
        f: impl FnOnce(&mut Bytes<'a>) -> Result<T, E>,
    ) -> Result<T, DecodeError> {
        let at = self.pos;
        let mut rd = Bytes::new(&self.buf[at..]);
        match f(&mut rd) {
            Ok(v) => {
                self.pos = self.buf.len() - rd.remaining_slice().len();
                Ok(v)
            }
            Err(e) => Err(e.into_decode_error(at, expected)),
        }
    }

    /// Takes the next `n` bytes (the payload of a string, binary or extension value).
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(DecodeError::Truncated(self.pos))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn type_error(&self, offset: usize, expected: &'static str) -> DecodeError {
        DecodeError::Type {
            offset,
            expected,
            marker: self.buf.get(offset).copied().unwrap_or(0),
        }
    }

    /// Consumes a `nil` if one is next; returns whether it did.
    pub fn nil(&mut self) -> Result<bool, DecodeError> {
        if self.peek()? == NIL {
            self.pos += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Reads a boolean.
    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        self.read("bool", decode::read_bool)
    }

    /// Reads any integer as an `i128`, so that every msgpack integer fits.
    pub fn integer(&mut self) -> Result<i128, DecodeError> {
        self.int_of()
    }

    /// Reads an integer into a primitive `T` with `rmp`'s range-checked `read_int`,
    /// without going through `i128`: the path of the [`Decode`] impls and of token ids.
    #[inline]
    pub(crate) fn int_of<T: num_traits::FromPrimitive>(&mut self) -> Result<T, DecodeError> {
        let at = self.pos;
        let rest = &self.buf[at..];
        // Fast path (module doc): the unsigned forms token ids take.
        let (v, len) = match *rest {
            [b, ..] if b < FIXMAP => (u32::from(b), 1),
            [U8, b, ..] => (u32::from(b), 2),
            [U16, a, b, ..] => (u32::from(u16::from_be_bytes([a, b])), 3),
            [U32, a, b, c, d, ..] => (u32::from_be_bytes([a, b, c, d]), 5),
            _ => return self.read("integer", decode::read_int::<T, _>),
        };
        self.pos += len;
        T::from_u32(v).ok_or(DecodeError::IntRange(at))
    }

    /// Reads an integer into `T`, failing if it does not fit.
    pub fn int<T: TryFrom<i128>>(&mut self) -> Result<T, DecodeError> {
        let at = self.pos;
        let v = self.integer()?;
        T::try_from(v).map_err(|_| DecodeError::IntRange(at))
    }

    /// Reads a float; integers are accepted too, as msgspec accepts them for float fields.
    pub fn f64(&mut self) -> Result<f64, DecodeError> {
        let at = self.pos;
        match self.marker()? {
            Marker::F64 => self.read("float", decode::read_f64),
            Marker::F32 => self.read("float", decode::read_f32).map(f64::from),
            _ => self
                .integer()
                .map(|v| v as f64)
                .map_err(|_| self.type_error(at, "float")),
        }
    }

    /// Reads a string, borrowed from the input.
    #[inline]
    pub fn str(&mut self) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let n = match self.one_byte(FIXSTR..NIL) {
            Some(n) => u32::from(n),
            None => self.read("string", decode::read_str_len)?,
        };
        std::str::from_utf8(self.take(n as usize)?).map_err(|_| DecodeError::Utf8(at))
    }

    /// Reads a binary blob, borrowed from the input.
    pub fn bin(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.read("binary", decode::read_bin_len)?;
        self.take(n as usize)
    }

    /// Whether the next value is an extension value.
    pub fn is_ext(&self) -> Result<bool, DecodeError> {
        Ok(matches!(
            self.marker()?,
            Marker::FixExt1
                | Marker::FixExt2
                | Marker::FixExt4
                | Marker::FixExt8
                | Marker::FixExt16
                | Marker::Ext8
                | Marker::Ext16
                | Marker::Ext32
        ))
    }

    /// Reads an extension value as `(type, data)`; pickle types are refused.
    pub fn ext(&mut self) -> Result<(i8, &'a [u8]), DecodeError> {
        let at = self.pos;
        let meta = self.read("extension", decode::read_ext_meta)?;
        if meta.typeid == EXT_PICKLE || meta.typeid == EXT_CLOUDPICKLE {
            return Err(DecodeError::Pickle(at, meta.typeid));
        }
        Ok((meta.typeid, self.take(meta.size as usize)?))
    }

    /// Reads an array header and enters it; call [`Reader::leave`] after its elements.
    #[inline]
    pub fn array(&mut self) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = match self.one_byte(FIXARRAY..FIXSTR) {
            Some(n) => u32::from(n),
            None => self.read("array", decode::read_array_len)?,
        };
        self.enter(at, n as usize)
    }

    /// Reads a map header and enters it; call [`Reader::leave`] after its entries.
    #[inline]
    pub fn map(&mut self) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = match self.one_byte(FIXMAP..FIXARRAY) {
            Some(n) => u32::from(n),
            None => self.read("map", decode::read_map_len)?,
        };
        self.enter(at, n as usize)
    }

    fn enter(&mut self, at: usize, n: usize) -> Result<usize, DecodeError> {
        // Every element takes at least one byte: a length beyond the input is a lie, and
        // checking it here keeps hostile lengths from driving allocations.
        if n > self.buf.len() - self.pos {
            return Err(DecodeError::Truncated(at));
        }
        if self.depth >= MAX_DEPTH {
            return Err(DecodeError::TooDeep(at));
        }
        self.depth += 1;
        Ok(n)
    }

    /// Leaves an array or map entered with [`Reader::array`] or [`Reader::map`].
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Skips one value of any type (used for unknown fields).
    pub fn skip(&mut self) -> Result<(), DecodeError> {
        let at = self.pos;
        match self.marker()? {
            Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True | Marker::False => {
                self.pos += 1
            }
            Marker::U8
            | Marker::U16
            | Marker::U32
            | Marker::U64
            | Marker::I8
            | Marker::I16
            | Marker::I32
            | Marker::I64 => {
                self.integer()?;
            }
            Marker::F32 | Marker::F64 => {
                self.f64()?;
            }
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                self.str()?;
            }
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                self.bin()?;
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                self.ext()?;
            }
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                let n = self.array()?;
                for _ in 0..n {
                    self.skip()?;
                }
                self.leave();
            }
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => {
                let n = self.map()?;
                for _ in 0..n * 2 {
                    self.skip()?;
                }
                self.leave();
            }
            Marker::Reserved => return Err(self.type_error(at, "msgpack value")),
        }
        Ok(())
    }
}

/// The errors of `rmp`'s readers, as [`DecodeError`]s.
trait RmpError {
    /// This error for a value starting at byte `at` that should have been `expected`.
    fn into_decode_error(self, at: usize, expected: &'static str) -> DecodeError;
}

/// Running out of input at `position` bytes into the value at `at`.
fn truncated(at: usize, e: BytesReadError) -> DecodeError {
    match e {
        BytesReadError::InsufficientBytes { position, .. } => {
            DecodeError::Truncated(at + position as usize)
        }
        // `BytesReadError` is non-exhaustive; running out is all it can say today.
        #[allow(unreachable_patterns)]
        _ => DecodeError::Truncated(at),
    }
}

fn mismatch(at: usize, expected: &'static str, marker: Marker) -> DecodeError {
    DecodeError::Type {
        offset: at,
        expected,
        marker: marker.to_u8(),
    }
}

impl RmpError for ValueReadError<BytesReadError> {
    fn into_decode_error(self, at: usize, expected: &'static str) -> DecodeError {
        match self {
            ValueReadError::InvalidMarkerRead(e) | ValueReadError::InvalidDataRead(e) => {
                truncated(at, e)
            }
            ValueReadError::TypeMismatch(marker) => mismatch(at, expected, marker),
        }
    }
}

impl RmpError for NumValueReadError<BytesReadError> {
    fn into_decode_error(self, at: usize, expected: &'static str) -> DecodeError {
        match self {
            NumValueReadError::InvalidMarkerRead(e) | NumValueReadError::InvalidDataRead(e) => {
                truncated(at, e)
            }
            NumValueReadError::TypeMismatch(marker) => mismatch(at, expected, marker),
            NumValueReadError::OutOfRange => DecodeError::IntRange(at),
        }
    }
}

/// A type that can be read from vLLM's msgpack encoding.
pub trait Decode: Sized {
    /// Reads one value.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

impl Decode for bool {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.bool()
    }
}

macro_rules! decode_int {
    ($($t:ty),*) => {$(
        impl Decode for $t {
            fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                r.int_of()
            }
        }
    )*};
}
decode_int!(u8, u16, u32, u64, usize, i8, i16, i32, i64);

impl Decode for f64 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.f64()
    }
}

impl Decode for String {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.str().map(str::to_owned)
    }
}

impl<T: Decode> Decode for Option<T> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        if r.nil()? {
            Ok(None)
        } else {
            T::decode(r).map(Some)
        }
    }
}

impl<T: Decode> Decode for Box<T> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        T::decode(r).map(Box::new)
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.array()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(T::decode(r)?);
        }
        r.leave();
        Ok(v)
    }
}

impl<K: Decode, V: Decode> Decode for super::Map<K, V> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.map()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let k = K::decode(r)?;
            v.push((k, V::decode(r)?));
        }
        r.leave();
        Ok(super::Map(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Value, Writer};

    /// Every integer form, read by the fast paths and by `rmp` alone, gives the same
    /// value or the same verdict, whole and truncated.
    #[test]
    fn integers_read_as_rmp_reads_them() {
        let mut values: Vec<i64> = vec![0, 1, 127, 128, 255, 256, 65535, 65536, -1, -32, -33];
        values.extend([
            -128,
            -129,
            -32768,
            -32769,
            i64::from(i32::MIN),
            i64::MIN,
            i64::MAX,
        ]);
        values.extend([u32::MAX as i64, u32::MAX as i64 + 1, 151_645]);
        for v in values {
            let mut w = Writer::new();
            w.int(v);
            let bytes = w.into_inner();
            let ours = Reader::new(&bytes).int_of::<i64>();
            let theirs: Result<i64, _> = decode::read_int(&mut Bytes::new(&bytes));
            assert_eq!(ours.as_ref().ok(), theirs.as_ref().ok(), "{v}");
            assert_eq!(
                Reader::new(&bytes).int_of::<u32>().ok(),
                u32::try_from(v).ok(),
                "{v}"
            );
            assert_eq!(
                Reader::new(&bytes).int::<u32>().ok(),
                u32::try_from(v).ok(),
                "{v}"
            );
            for cut in 0..bytes.len() {
                assert_eq!(
                    Reader::new(&bytes[..cut]).int_of::<i64>(),
                    Err(DecodeError::Truncated(cut.min(1))),
                    "{v} cut at {cut}"
                );
            }
        }
        let u = u64::MAX;
        let mut w = Writer::new();
        w.uint(u);
        let bytes = w.into_inner();
        assert_eq!(Reader::new(&bytes).int_of::<u64>(), Ok(u));
        assert_eq!(
            Reader::new(&bytes).int_of::<i64>(),
            Err(DecodeError::IntRange(0))
        );
    }

    /// Random bytes never panic the decoders and never allocate past the input.
    #[test]
    fn random_input_fails_cleanly() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let len = (next() % 48) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let _ = crate::wire::from_slice::<Value>(&bytes);
            let _ = crate::wire::from_slice::<crate::protocol::EngineCoreOutputs>(&bytes);
            let _ = crate::wire::from_slice::<crate::protocol::EngineCoreRequest>(&bytes);
            let _ = crate::wire::from_slice::<crate::kv_events::KVEventBatch>(&bytes);
        }
    }
}
