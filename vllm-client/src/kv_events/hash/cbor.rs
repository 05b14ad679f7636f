//! `cbor2.dumps(obj, canonical=True)` for the objects block hashing serializes.
//!
//! vLLM's `sha256_cbor` and `xxhash_cbor` algorithms hash the canonical CBOR encoding of
//! the key: tuples are arrays, `bytes` byte strings, `str` text strings, `None` is
//! `0xf6`, and every length and integer takes its shortest head (RFC 8949 §4.2.1).
//! Canonical mode only changes maps, sets and floats, which block keys never contain.

use super::object::Object;

/// `cbor2.dumps(object, canonical=True)`.
pub(crate) fn dumps(object: &Object<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    write(&mut out, object);
    out
}

fn head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    if n < 24 {
        out.push(m | n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[m | 24, n as u8]);
    } else if n <= 0xffff {
        out.push(m | 25);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else if n <= 0xffff_ffff {
        out.push(m | 26);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn int(out: &mut Vec<u8>, v: i64) {
    if v >= 0 {
        head(out, 0, v as u64);
    } else {
        head(out, 1, (-1 - v) as u64);
    }
}

fn write(out: &mut Vec<u8>, object: &Object<'_>) {
    match *object {
        Object::None => out.push(0xf6),
        Object::Int(v) => int(out, v),
        Object::Bytes(b) => {
            head(out, 2, b.len() as u64);
            out.extend_from_slice(b);
        }
        Object::Str(s) => {
            head(out, 3, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Object::Tokens(tokens) => {
            head(out, 4, tokens.len() as u64);
            for &t in tokens {
                head(out, 0, u64::from(t));
            }
        }
        Object::Tuple(items) => {
            head(out, 4, items.len() as u64);
            for item in items {
                write(out, item);
            }
        }
    }
}
