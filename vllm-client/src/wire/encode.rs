//! Writing msgpack the way msgspec writes it.

/// A growable msgpack output buffer.
///
/// Large arrays are not copied into the payload: like vLLM's `MsgpackEncoder`, the writer
/// collects them as extra frames and writes their frame index instead.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
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
            buf,
            frames: Vec::new(),
        }
    }

    /// The payload written so far (frame 0).
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    /// The payload and the extra frames, in the order they go on the wire.
    pub fn into_frames(self) -> (Vec<u8>, Vec<bytes::Bytes>) {
        (self.buf, self.frames)
    }

    /// Stores `data` as an extra frame and returns the index vLLM writes for it
    /// (frame 0 is the payload itself, so extra frames count from 1).
    pub fn push_frame(&mut self, data: bytes::Bytes) -> usize {
        self.frames.push(data);
        self.frames.len()
    }

    /// Writes `nil`.
    pub fn nil(&mut self) {
        self.buf.push(0xc0);
    }

    /// Writes a boolean.
    pub fn bool(&mut self, v: bool) {
        self.buf.push(if v { 0xc3 } else { 0xc2 });
    }

    /// Writes an unsigned integer in its smallest form.
    pub fn uint(&mut self, v: u64) {
        if v < 128 {
            self.buf.push(v as u8);
        } else if v < 256 {
            self.buf.extend_from_slice(&[0xcc, v as u8]);
        } else if v < 65536 {
            self.buf.push(0xcd);
            self.buf.extend_from_slice(&(v as u16).to_be_bytes());
        } else if v < 1 << 32 {
            self.buf.push(0xce);
            self.buf.extend_from_slice(&(v as u32).to_be_bytes());
        } else {
            self.buf.push(0xcf);
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// Writes a signed integer in its smallest form (non-negative values as unsigned).
    pub fn int(&mut self, v: i64) {
        if v >= 0 {
            self.uint(v as u64);
        } else if v >= -32 {
            self.buf.push(v as i8 as u8);
        } else if v >= -128 {
            self.buf.extend_from_slice(&[0xd0, v as i8 as u8]);
        } else if v >= -32768 {
            self.buf.push(0xd1);
            self.buf.extend_from_slice(&(v as i16).to_be_bytes());
        } else if v >= -(1 << 31) {
            self.buf.push(0xd2);
            self.buf.extend_from_slice(&(v as i32).to_be_bytes());
        } else {
            self.buf.push(0xd3);
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// Writes a float64 (Python floats are always float64 on the wire).
    pub fn f64(&mut self, v: f64) {
        self.buf.push(0xcb);
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Writes a float32.
    pub fn f32(&mut self, v: f32) {
        self.buf.push(0xca);
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Writes a string.
    pub fn str(&mut self, s: &str) {
        let n = s.len();
        if n < 32 {
            self.buf.push(0xa0 | n as u8);
        } else if n < 256 {
            self.buf.extend_from_slice(&[0xd9, n as u8]);
        } else if n < 65536 {
            self.buf.push(0xda);
            self.buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.buf.push(0xdb);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        }
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Writes a binary blob.
    pub fn bin(&mut self, b: &[u8]) {
        let n = b.len();
        if n < 256 {
            self.buf.extend_from_slice(&[0xc4, n as u8]);
        } else if n < 65536 {
            self.buf.push(0xc5);
            self.buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.buf.push(0xc6);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        }
        self.buf.extend_from_slice(b);
    }

    /// Writes an extension value, using the fixext forms where msgpack has them.
    pub fn ext(&mut self, ty: i8, data: &[u8]) {
        let n = data.len();
        match n {
            1 => self.buf.push(0xd4),
            2 => self.buf.push(0xd5),
            4 => self.buf.push(0xd6),
            8 => self.buf.push(0xd7),
            16 => self.buf.push(0xd8),
            0..=255 => self.buf.extend_from_slice(&[0xc7, n as u8]),
            256..=65535 => {
                self.buf.push(0xc8);
                self.buf.extend_from_slice(&(n as u16).to_be_bytes());
            }
            _ => {
                self.buf.push(0xc9);
                self.buf.extend_from_slice(&(n as u32).to_be_bytes());
            }
        }
        self.buf.push(ty as u8);
        self.buf.extend_from_slice(data);
    }

    /// Writes an array header for `n` elements.
    pub fn array_len(&mut self, n: usize) {
        self.container_len(n, 0x90, 0xdc, 0xdd);
    }

    /// Writes a map header in the 16-bit form whatever `n` is, as msgspec does for
    /// `omit_defaults` structs (it reserves the header before knowing the count).
    pub fn map16_len(&mut self, n: usize) {
        if n < 65536 {
            self.buf.push(0xde);
            self.buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.map_len(n);
        }
    }

    /// Writes a map header for `n` entries.
    pub fn map_len(&mut self, n: usize) {
        self.container_len(n, 0x80, 0xde, 0xdf);
    }

    fn container_len(&mut self, n: usize, fix: u8, m16: u8, m32: u8) {
        if n < 16 {
            self.buf.push(fix | n as u8);
        } else if n < 65536 {
            self.buf.push(m16);
            self.buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.buf.push(m32);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
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
