//! The KV-cache events: `BlockStored`, `BlockRemoved`, `AllBlocksCleared`.
//!
//! `vllm/distributed/kv_events.py` declares them as msgspec structs with `tag=True` and
//! `omit_defaults=True`, not array-like: each is a map whose first entry is
//! `"type": "<class name>"`, followed by the fields in declaration order. Fields without a
//! Python default are always written (even as `None`); the ones with a default are left
//! out when they equal it. `KVEventBatch.events` is the tagged union of the three.
//!
//! Decoding is tolerant like the rest of the protocol: unknown keys are skipped, missing
//! ones take their defaults, and an event whose tag this version does not know (a newer
//! vLLM's) is kept as [`KVCacheEvent::Unknown`] instead of failing its whole batch.
//!
//! With serde each event is a map of its fields with the tag first (`"type":
//! "BlockStored"`), as msgspec's JSON encoder writes a tagged struct; an unknown event is
//! its value as it arrived, and reading picks the struct by the tag.

use super::ExternalBlockHash;
use crate::wire::{Decode, DecodeError, Encode, Reader, TAG_FIELD, Value, Writer};

/// Where a block lives: vLLM's `MEDIUM_GPU`.
pub const MEDIUM_GPU: &str = "GPU";
/// vLLM's `MEDIUM_CPU` (an offloading tier).
pub const MEDIUM_CPU: &str = "CPU";
/// vLLM's `MEDIUM_STORAGE` (an offloading tier).
pub const MEDIUM_STORAGE: &str = "STORAGE";

wire_map! {
    /// Blocks entered a KV cache (vLLM's `BlockStored`): new full blocks of a request,
    /// or prefix-cache blocks a request reused.
    pub struct BlockStored (omit_defaults, tag = "BlockStored") {
        /// The blocks' hashes, in prefix order.
        pub block_hashes: Vec<ExternalBlockHash> = Vec::new(); always,
        /// The hash of the block before the first one (`None` for a prompt's first block).
        pub parent_block_hash: Option<ExternalBlockHash> = None; always,
        /// The tokens of all the blocks, concatenated.
        pub token_ids: Vec<u32> = Vec::new(); always,
        /// Tokens per block.
        pub block_size: i64 = 0; always,
        /// Deprecated by vLLM in favour of `lora_name`: the adapter's id.
        pub lora_id: Option<i64> = None; always,
        /// Where the blocks are stored ([`MEDIUM_GPU`], …).
        pub medium: Option<String> = None; always,
        /// The LoRA adapter the blocks were computed with.
        pub lora_name: Option<String> = None; always,
        /// One entry per block: the extra keys of its hash, untagged (the LoRA name,
        /// `(mm_identifier, offset)` pairs, the cache salt, prompt-embeds digests).
        pub extra_keys: Option<Vec<Option<Vec<Value>>>> = None,
        /// The KV cache group.
        pub group_idx: Option<i64> = None,
        /// The group's cache-spec kind.
        pub kv_cache_spec_kind: Option<String> = None,
        /// The group's sliding window.
        pub kv_cache_spec_sliding_window: Option<i64> = None,
        /// `LOCAL` or `REMOTE` relative to the publisher.
        pub locality: Option<String> = None,
        /// Secondary offloading tier that generated the event.
        pub ownership: Option<String> = None,
        /// Session of the request that triggered the event.
        pub session_id: Option<String> = None,
        /// Tokens beyond each block used in its hash (lookahead hashing).
        pub lookahead_token_ids: Option<Vec<Vec<u32>>> = None,
    }
}

wire_map! {
    /// Blocks left a KV cache (vLLM's `BlockRemoved`): evicted or replaced.
    pub struct BlockRemoved (omit_defaults, tag = "BlockRemoved") {
        /// The removed blocks' hashes.
        pub block_hashes: Vec<ExternalBlockHash> = Vec::new(); always,
        /// Where they were stored.
        pub medium: Option<String> = None; always,
        /// The KV cache group.
        pub group_idx: Option<i64> = None,
        /// `LOCAL` or `REMOTE` relative to the publisher.
        pub locality: Option<String> = None,
        /// Secondary offloading tier that generated the event.
        pub ownership: Option<String> = None,
    }
}

wire_map! {
    /// Every block of the cache was dropped (vLLM's `AllBlocksCleared`, sent by
    /// `reset_prefix_cache`).
    pub struct AllBlocksCleared (omit_defaults, tag = "AllBlocksCleared") {}
}

/// One event of a [`KVEventBatch`](super::KVEventBatch): vLLM's
/// `BlockStored | BlockRemoved | AllBlocksCleared`.
#[derive(Debug, Clone, PartialEq)]
// Most events are `BlockStored`: boxing it would cost an allocation per event and save
// no memory.
#[allow(clippy::large_enum_variant)]
pub enum KVCacheEvent {
    /// Blocks were stored.
    BlockStored(BlockStored),
    /// Blocks were removed.
    BlockRemoved(BlockRemoved),
    /// The whole cache was cleared.
    AllBlocksCleared(AllBlocksCleared),
    /// An event this version does not know (its tag and fields), kept as it arrived so
    /// that it re-encodes to the same bytes.
    Unknown(Value),
}

impl KVCacheEvent {
    /// The event's tag: its vLLM class name (the `type` key).
    pub fn tag(&self) -> Option<&str> {
        match self {
            KVCacheEvent::BlockStored(_) => BlockStored::TAG,
            KVCacheEvent::BlockRemoved(_) => BlockRemoved::TAG,
            KVCacheEvent::AllBlocksCleared(_) => AllBlocksCleared::TAG,
            KVCacheEvent::Unknown(v) => unknown_tag(v),
        }
    }
}

fn unknown_tag(v: &Value) -> Option<&str> {
    match v {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(TAG_FIELD))
            .and_then(|(_, v)| v.as_str()),
        _ => None,
    }
}

impl Encode for KVCacheEvent {
    fn encode(&self, w: &mut Writer) {
        match self {
            KVCacheEvent::BlockStored(e) => e.encode(w),
            KVCacheEvent::BlockRemoved(e) => e.encode(w),
            KVCacheEvent::AllBlocksCleared(e) => e.encode(w),
            KVCacheEvent::Unknown(v) => v.encode(w),
        }
    }
}

impl Decode for KVCacheEvent {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        // msgspec writes the tag first, but a map may hold it anywhere: find it, then
        // read the map again as the struct it names.
        let start = r.checkpoint();
        let len = r.map()?;
        let mut tag = None;
        for _ in 0..len {
            let is_tag = r.str()? == TAG_FIELD;
            if is_tag && r.peek().map(|m| matches!(m, 0xa0..=0xbf | 0xd9..=0xdb))? {
                tag = Some(r.str()?);
                break;
            }
            r.skip()?;
        }
        r.rewind(start);
        Ok(match tag {
            Some(t) if Some(t) == BlockStored::TAG => KVCacheEvent::BlockStored(Decode::decode(r)?),
            Some(t) if Some(t) == BlockRemoved::TAG => {
                KVCacheEvent::BlockRemoved(Decode::decode(r)?)
            }
            Some(t) if Some(t) == AllBlocksCleared::TAG => {
                KVCacheEvent::AllBlocksCleared(Decode::decode(r)?)
            }
            _ => KVCacheEvent::Unknown(Decode::decode(r)?),
        })
    }
}

impl serde::Serialize for KVCacheEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Each struct writes its own tag (`#[serde(tag)]` from `wire_map!`).
        match self {
            KVCacheEvent::BlockStored(e) => e.serialize(s),
            KVCacheEvent::BlockRemoved(e) => e.serialize(s),
            KVCacheEvent::AllBlocksCleared(e) => e.serialize(s),
            KVCacheEvent::Unknown(v) => v.serialize(s),
        }
    }
}

/// The union as serde reads it: the tag picks the struct (the struct's own fields are
/// the rest of the map), anything else is kept as a value.
#[derive(serde::Deserialize)]
#[serde(tag = "type")]
#[allow(clippy::large_enum_variant)] // Only lives until converted.
enum TaggedEvent {
    BlockStored(BlockStored),
    BlockRemoved(BlockRemoved),
    AllBlocksCleared(AllBlocksCleared),
    #[serde(untagged)]
    Unknown(Value),
}

impl<'de> serde::Deserialize<'de> for KVCacheEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match TaggedEvent::deserialize(d)? {
            TaggedEvent::BlockStored(e) => KVCacheEvent::BlockStored(e),
            TaggedEvent::BlockRemoved(e) => KVCacheEvent::BlockRemoved(e),
            TaggedEvent::AllBlocksCleared(e) => KVCacheEvent::AllBlocksCleared(e),
            TaggedEvent::Unknown(v) => KVCacheEvent::Unknown(v),
        })
    }
}

impl From<BlockStored> for KVCacheEvent {
    fn from(e: BlockStored) -> Self {
        KVCacheEvent::BlockStored(e)
    }
}

impl From<BlockRemoved> for KVCacheEvent {
    fn from(e: BlockRemoved) -> Self {
        KVCacheEvent::BlockRemoved(e)
    }
}

impl From<AllBlocksCleared> for KVCacheEvent {
    fn from(e: AllBlocksCleared) -> Self {
        KVCacheEvent::AllBlocksCleared(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{from_slice, to_vec};

    #[test]
    fn an_unknown_tag_is_kept_and_re_encodes_identically() {
        let v = Value::Map(vec![
            (Value::from("type"), Value::from("BlockReused")),
            (Value::from("n"), Value::UInt(3)),
        ]);
        let bytes = to_vec(&v);
        let e: KVCacheEvent = from_slice(&bytes).unwrap();
        assert_eq!(e.tag(), Some("BlockReused"));
        assert_eq!(to_vec(&e), bytes);
    }

    #[test]
    fn the_tag_may_come_last_and_unknown_keys_are_skipped() {
        let v = Value::Map(vec![
            (Value::from("medium"), Value::from("GPU")),
            (Value::from("future"), Value::Array(vec![Value::UInt(1)])),
            (
                Value::from("block_hashes"),
                Value::Array(vec![Value::UInt(9)]),
            ),
            (Value::from("type"), Value::from("BlockRemoved")),
        ]);
        let e: KVCacheEvent = from_slice(&to_vec(&v)).unwrap();
        assert_eq!(
            e,
            KVCacheEvent::BlockRemoved(BlockRemoved {
                block_hashes: vec![ExternalBlockHash::Int(9)],
                medium: Some("GPU".into()),
                ..BlockRemoved::default()
            })
        );
    }

    #[test]
    fn a_struct_refuses_another_structs_tag() {
        let bytes = to_vec(&AllBlocksCleared {});
        assert!(from_slice::<BlockStored>(&bytes).is_err());
        assert!(from_slice::<KVCacheEvent>(&[0x91, 0x01]).is_err());
    }
}
