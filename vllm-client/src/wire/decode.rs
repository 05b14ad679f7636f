//! Reading msgpack defensively: bounded, allocation-checked, pickle refused.

use bytes::Bytes;

use super::{EXT_CLOUDPICKLE, EXT_PICKLE};

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
    frames: &'a [Bytes],
}

impl<'a> Reader<'a> {
    /// A reader over a message without extra frames.
    pub fn new(buf: &'a [u8]) -> Self {
        Self::with_frames(buf, &[])
    }

    /// A reader over a message whose arrays may refer to extra frames; `frames[i - 1]` is
    /// the frame vLLM numbers `i` (the payload itself is frame 0).
    pub fn with_frames(buf: &'a [u8], frames: &'a [Bytes]) -> Self {
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
    pub fn frame(&self, index: usize) -> Result<Bytes, DecodeError> {
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

    fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = self.peek()?;
        self.pos += 1;
        Ok(b)
    }

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

    fn be<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
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
        if self.peek()? == 0xc0 {
            self.pos += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Reads a boolean.
    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.byte()? {
            0xc2 => Ok(false),
            0xc3 => Ok(true),
            _ => Err(self.type_error(at, "bool")),
        }
    }

    /// Reads any integer as an `i128`, so that every msgpack integer fits.
    pub fn integer(&mut self) -> Result<i128, DecodeError> {
        let at = self.pos;
        let m = self.byte()?;
        Ok(match m {
            0x00..=0x7f => m as i128,
            0xe0..=0xff => m as i8 as i128,
            0xcc => self.byte()? as i128,
            0xcd => u16::from_be_bytes(self.be()?) as i128,
            0xce => u32::from_be_bytes(self.be()?) as i128,
            0xcf => u64::from_be_bytes(self.be()?) as i128,
            0xd0 => self.byte()? as i8 as i128,
            0xd1 => i16::from_be_bytes(self.be()?) as i128,
            0xd2 => i32::from_be_bytes(self.be()?) as i128,
            0xd3 => i64::from_be_bytes(self.be()?) as i128,
            _ => return Err(self.type_error(at, "integer")),
        })
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
        match self.peek()? {
            0xcb => {
                self.pos += 1;
                Ok(f64::from_be_bytes(self.be()?))
            }
            0xca => {
                self.pos += 1;
                Ok(f32::from_be_bytes(self.be()?) as f64)
            }
            _ => self
                .integer()
                .map(|v| v as f64)
                .map_err(|_| self.type_error(at, "float")),
        }
    }

    /// Reads a string, borrowed from the input.
    pub fn str(&mut self) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let n = match self.byte()? {
            m @ 0xa0..=0xbf => (m & 0x1f) as usize,
            0xd9 => self.byte()? as usize,
            0xda => u16::from_be_bytes(self.be()?) as usize,
            0xdb => u32::from_be_bytes(self.be()?) as usize,
            _ => return Err(self.type_error(at, "string")),
        };
        std::str::from_utf8(self.take(n)?).map_err(|_| DecodeError::Utf8(at))
    }

    /// Reads a binary blob, borrowed from the input.
    pub fn bin(&mut self) -> Result<&'a [u8], DecodeError> {
        let at = self.pos;
        let n = match self.byte()? {
            0xc4 => self.byte()? as usize,
            0xc5 => u16::from_be_bytes(self.be()?) as usize,
            0xc6 => u32::from_be_bytes(self.be()?) as usize,
            _ => return Err(self.type_error(at, "binary")),
        };
        self.take(n)
    }

    /// Whether the next value is an extension value.
    pub fn is_ext(&self) -> Result<bool, DecodeError> {
        Ok(matches!(self.peek()?, 0xc7..=0xc9 | 0xd4..=0xd8))
    }

    /// Reads an extension value as `(type, data)`; pickle types are refused.
    pub fn ext(&mut self) -> Result<(i8, &'a [u8]), DecodeError> {
        let at = self.pos;
        let n = match self.byte()? {
            0xd4 => 1,
            0xd5 => 2,
            0xd6 => 4,
            0xd7 => 8,
            0xd8 => 16,
            0xc7 => self.byte()? as usize,
            0xc8 => u16::from_be_bytes(self.be()?) as usize,
            0xc9 => u32::from_be_bytes(self.be()?) as usize,
            _ => return Err(self.type_error(at, "extension")),
        };
        let ty = self.byte()? as i8;
        if ty == EXT_PICKLE || ty == EXT_CLOUDPICKLE {
            return Err(DecodeError::Pickle(at, ty));
        }
        Ok((ty, self.take(n)?))
    }

    /// Reads an array header and enters it; call [`Reader::leave`] after its elements.
    pub fn array(&mut self) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = match self.byte()? {
            m @ 0x90..=0x9f => (m & 0x0f) as usize,
            0xdc => u16::from_be_bytes(self.be()?) as usize,
            0xdd => u32::from_be_bytes(self.be()?) as usize,
            _ => return Err(self.type_error(at, "array")),
        };
        self.enter(at, n)
    }

    /// Reads a map header and enters it; call [`Reader::leave`] after its entries.
    pub fn map(&mut self) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = match self.byte()? {
            m @ 0x80..=0x8f => (m & 0x0f) as usize,
            0xde => u16::from_be_bytes(self.be()?) as usize,
            0xdf => u32::from_be_bytes(self.be()?) as usize,
            _ => return Err(self.type_error(at, "map")),
        };
        self.enter(at, n)
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
        let m = self.peek()?;
        match m {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => self.pos += 1,
            0xcc..=0xd3 => {
                self.integer()?;
            }
            0xca | 0xcb => {
                self.f64()?;
            }
            0xa0..=0xbf | 0xd9..=0xdb => {
                self.str()?;
            }
            0xc4..=0xc6 => {
                self.bin()?;
            }
            0xc7..=0xc9 | 0xd4..=0xd8 => {
                self.ext()?;
            }
            0x90..=0x9f | 0xdc | 0xdd => {
                let n = self.array()?;
                for _ in 0..n {
                    self.skip()?;
                }
                self.leave();
            }
            0x80..=0x8f | 0xde | 0xdf => {
                let n = self.map()?;
                for _ in 0..n * 2 {
                    self.skip()?;
                }
                self.leave();
            }
            _ => return Err(self.type_error(at, "msgpack value")),
        }
        Ok(())
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
                r.int()
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
