//! `ExternalBlockHash`: a block hash as KV events carry it.
//!
//! vLLM hashes blocks to bytes (32 for sha256, 16 for xxhash) and, with
//! `VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1` (its default), publishes the low 64 bits as an
//! integer (`int.from_bytes(hash, "big") & (2**64 - 1)`, `maybe_convert_block_hash` in
//! `vllm/v1/core/kv_cache_utils.py`); with `0` it publishes the bytes. The Python type is
//! `bytes | int`, so a publisher other than vLLM's block pool (a KV connector) may send
//! any integer.

use crate::wire::{Decode, DecodeError, Encode, Reader, Writer};

/// A block hash as published in [`BlockStored`](super::BlockStored) and
/// [`BlockRemoved`](super::BlockRemoved) events (vLLM's `ExternalBlockHash = bytes | int`).
///
/// With serde it is the bare integer or bytes (a JSON array of numbers), as on the wire.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(untagged)]
pub enum ExternalBlockHash {
    /// An integer hash: what vLLM's block pool sends by default (the low 64 bits of the
    /// block hash).
    Int(u64),
    /// A negative integer hash: never produced by vLLM's block pool; kept so that any
    /// Python `int` a connector publishes decodes.
    NegativeInt(i64),
    /// The block hash bytes (`VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0`).
    Bytes(#[serde(with = "crate::wire::vec_bytes")] Vec<u8>),
}

impl ExternalBlockHash {
    /// The integer form of a block hash, as `maybe_convert_block_hash` computes it: the
    /// low 64 bits of the big-endian number.
    pub fn int_from_hash(hash: &[u8]) -> u64 {
        let mut low = [0u8; 8];
        let tail = &hash[hash.len().saturating_sub(8)..];
        low[8 - tail.len()..].copy_from_slice(tail);
        u64::from_be_bytes(low)
    }
}

impl Encode for ExternalBlockHash {
    fn encode(&self, w: &mut Writer) {
        match self {
            ExternalBlockHash::Int(v) => w.uint(*v),
            ExternalBlockHash::NegativeInt(v) => w.int(*v),
            ExternalBlockHash::Bytes(b) => w.bin(b),
        }
    }
}

impl Decode for ExternalBlockHash {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match r.peek()? {
            0xc4..=0xc6 => Ok(ExternalBlockHash::Bytes(r.bin()?.to_vec())),
            _ => {
                let at = r.position();
                let v = r.integer()?;
                if let Ok(u) = u64::try_from(v) {
                    Ok(ExternalBlockHash::Int(u))
                } else {
                    i64::try_from(v)
                        .map(ExternalBlockHash::NegativeInt)
                        .map_err(|_| DecodeError::IntRange(at))
                }
            }
        }
    }
}

impl std::fmt::Display for ExternalBlockHash {
    /// Integers in decimal, bytes in lowercase hex.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExternalBlockHash::Int(v) => write!(f, "{v}"),
            ExternalBlockHash::NegativeInt(v) => write!(f, "{v}"),
            ExternalBlockHash::Bytes(b) => b.iter().try_for_each(|x| write!(f, "{x:02x}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_int_form_keeps_the_low_64_bits() {
        let mut hash = [0u8; 32];
        hash[23] = 0xff; // above the low 64 bits
        hash[24] = 0x01;
        hash[31] = 0x02;
        assert_eq!(
            ExternalBlockHash::int_from_hash(&hash),
            0x0100_0000_0000_0002
        );
        assert_eq!(ExternalBlockHash::int_from_hash(&[1, 2]), 0x0102);
    }

    #[test]
    fn integers_and_bytes_decode_and_hostile_input_fails_cleanly() {
        for h in [
            ExternalBlockHash::Int(u64::MAX),
            ExternalBlockHash::Int(0),
            ExternalBlockHash::NegativeInt(-5),
            ExternalBlockHash::Bytes(vec![1, 2, 3]),
        ] {
            let bytes = crate::wire::to_vec(&h);
            assert_eq!(crate::wire::from_slice::<ExternalBlockHash>(&bytes), Ok(h));
        }
        assert!(crate::wire::from_slice::<ExternalBlockHash>(&[0xa1, b'x']).is_err());
        assert!(crate::wire::from_slice::<ExternalBlockHash>(&[0xc4, 9, 1]).is_err());
    }
}
