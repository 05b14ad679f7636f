//! `pickle.dumps(obj, protocol=5)` for the objects block hashing serializes.
//!
//! vLLM's `sha256` and `xxhash` algorithms hash `pickle.dumps(input,
//! protocol=pickle.HIGHEST_PROTOCOL)` (protocol 5 on every Python vLLM supports). This
//! writes the same bytes as CPython's C pickler for `None`, `bytes`, `str`, `int` and
//! tuples of them:
//!
//! - `PROTO 5`, then the body in frames (`FRAME` + 8-byte little-endian length). A frame
//!   is committed once it holds 64 KiB, checked before each object is saved
//!   (`_Pickler_OpcodeBoundary` at the start of `save`); a final frame under 4 bytes gets
//!   no header. `bytes` and `str` payloads of 64 KiB or more are written outside frames.
//! - the smallest opcode for each value (`BININT1`/`BININT2`/`BININT`/`LONG1`,
//!   `SHORT_BINBYTES`/`BINBYTES`, `SHORT_BINUNICODE`/`BINUNICODE`, `TUPLE1..3` or
//!   `MARK … TUPLE`, `EMPTY_TUPLE`), and `MEMOIZE` after every `bytes`, `str` and
//!   non-empty tuple.
//!
//! Not covered, because block hashing never produces it: an object pickled twice by
//! identity in one dump (the pickler would write a memo `BINGET`). vLLM's keys hold
//! distinct objects, except multimodal keys, whose repeated `"mm"` literal is one
//! interned object; multimodal hashing is not implemented here.

use super::object::Object;

const FRAME_SIZE_TARGET: usize = 64 * 1024;
const FRAME_SIZE_MIN: usize = 4;
const FRAME_HEADER_SIZE: usize = 9;

const PROTO: u8 = 0x80;
const FRAME: u8 = 0x95;
const STOP: u8 = b'.';
const NONE: u8 = b'N';
const BININT: u8 = b'J';
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const LONG1: u8 = 0x8a;
const SHORT_BINBYTES: u8 = b'C';
const BINBYTES: u8 = b'B';
const BINBYTES8: u8 = 0x8e;
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE: u8 = b'X';
const BINUNICODE8: u8 = 0x8d;
const EMPTY_TUPLE: u8 = b')';
const MARK: u8 = b'(';
const TUPLE: u8 = b't';
const TUPLE1: u8 = 0x85;
const MEMOIZE: u8 = 0x94;

/// `pickle.dumps(object, protocol=5)`.
pub(crate) fn dumps(object: &Object<'_>) -> Vec<u8> {
    let mut p = Pickler {
        out: Vec::with_capacity(64),
        frame_start: None,
        framing: false,
    };
    p.write(&[PROTO, 5]);
    p.framing = true;
    p.save(object);
    p.write(&[STOP]);
    p.commit_frame();
    p.out
}

struct Pickler {
    out: Vec<u8>,
    frame_start: Option<usize>,
    framing: bool,
}

impl Pickler {
    fn write(&mut self, data: &[u8]) {
        if self.framing && self.frame_start.is_none() {
            self.frame_start = Some(self.out.len());
            self.out.extend_from_slice(&[0; FRAME_HEADER_SIZE]);
        }
        self.out.extend_from_slice(data);
    }

    fn commit_frame(&mut self) {
        let Some(start) = self.frame_start.take() else {
            return;
        };
        let len = self.out.len() - start - FRAME_HEADER_SIZE;
        if len >= FRAME_SIZE_MIN {
            self.out[start] = FRAME;
            self.out[start + 1..start + FRAME_HEADER_SIZE]
                .copy_from_slice(&(len as u64).to_le_bytes());
        } else {
            self.out.drain(start..start + FRAME_HEADER_SIZE);
        }
    }

    /// `_Pickler_OpcodeBoundary`: commits a frame that reached the target size.
    fn opcode_boundary(&mut self) {
        if let Some(start) = self.frame_start
            && self.out.len() - start - FRAME_HEADER_SIZE >= FRAME_SIZE_TARGET
        {
            self.commit_frame();
        }
    }

    fn save(&mut self, object: &Object<'_>) {
        self.opcode_boundary();
        match *object {
            Object::None => self.write(&[NONE]),
            Object::Int(v) => self.save_int(v),
            Object::Bytes(b) => {
                self.save_sized(b, SHORT_BINBYTES, BINBYTES, BINBYTES8);
                self.write(&[MEMOIZE]);
            }
            Object::Str(s) => {
                self.save_sized(s.as_bytes(), SHORT_BINUNICODE, BINUNICODE, BINUNICODE8);
                self.write(&[MEMOIZE]);
            }
            Object::Tokens(tokens) => self.save_tuple(tokens.len(), |p, i| {
                p.save(&Object::Int(i64::from(tokens[i])));
            }),
            Object::Tuple(items) => self.save_tuple(items.len(), |p, i| p.save(&items[i])),
        }
    }

    fn save_tuple(&mut self, len: usize, mut item: impl FnMut(&mut Self, usize)) {
        if len == 0 {
            self.write(&[EMPTY_TUPLE]);
            return;
        }
        if len > 3 {
            self.write(&[MARK]);
        }
        for i in 0..len {
            item(self, i);
        }
        if len <= 3 {
            self.write(&[TUPLE1 + (len as u8 - 1)]);
        } else {
            self.write(&[TUPLE]);
        }
        self.write(&[MEMOIZE]);
    }

    fn save_int(&mut self, v: i64) {
        if (0..=0xff).contains(&v) {
            self.write(&[BININT1, v as u8]);
        } else if (0..=0xffff).contains(&v) {
            let b = (v as u16).to_le_bytes();
            self.write(&[BININT2, b[0], b[1]]);
        } else if let Ok(v) = i32::try_from(v) {
            let mut op = vec![BININT];
            op.extend_from_slice(&v.to_le_bytes());
            self.write(&op);
        } else {
            // LONG1: the shortest two's-complement little-endian form.
            let bytes = v.to_le_bytes();
            let mut n = 8;
            while n > 1 {
                let (last, prev) = (bytes[n - 1], bytes[n - 2]);
                let redundant =
                    (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0);
                if !redundant {
                    break;
                }
                n -= 1;
            }
            let mut op = vec![LONG1, n as u8];
            op.extend_from_slice(&bytes[..n]);
            self.write(&op);
        }
    }

    /// A `bytes` or `str` payload with the smallest length opcode; payloads of a frame's
    /// size or more bypass framing (`_Pickler_write_bytes`).
    fn save_sized(&mut self, data: &[u8], short: u8, long: u8, huge: u8) {
        let mut header = Vec::with_capacity(9);
        if data.len() < 256 {
            header.extend_from_slice(&[short, data.len() as u8]);
        } else if let Ok(n) = u32::try_from(data.len()) {
            header.push(long);
            header.extend_from_slice(&n.to_le_bytes());
        } else {
            header.push(huge);
            header.extend_from_slice(&(data.len() as u64).to_le_bytes());
        }
        if data.len() >= FRAME_SIZE_TARGET {
            self.commit_frame();
            self.framing = false;
            self.write(&header);
            self.write(data);
            self.framing = true;
        } else {
            self.write(&header);
            self.write(data);
        }
    }
}
