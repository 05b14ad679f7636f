//! `PrefixIndex`: which blocks each engine's prefix cache holds, mirrored from its events.
//!
//! A cache-aware router keeps, per engine, the set of block hashes the engine's GPU cache
//! holds, applying each engine's [`KvEventMessage`]s in order: [`BlockStored`] adds its
//! hashes, [`BlockRemoved`] drops them, [`AllBlocksCleared`] empties the view. A prompt's
//! block hashes ([`BlockHasher`](super::BlockHasher)) then give, per engine, the number of
//! leading blocks it holds ([`PrefixIndex::match_lengths`]): the prefix that engine would
//! not have to compute again.
//!
//! What counts, following vLLM 0.33.0 (`vllm/distributed/kv_events.py`,
//! `vllm/v1/core/block_pool.py`):
//!
//! - Only the GPU cache: events whose `medium` is `GPU` (or unset). Offloading connectors
//!   publish `CPU`/`STORAGE` tiers on the same stream; those blocks would have to be
//!   loaded back first.
//! - Only one KV-cache group (group 0 by default, [`PrefixIndex::with_group`]); an event
//!   without `group_idx` counts for it. Hybrid models cache per group; group 0 is the
//!   first full-attention group in vLLM's layout.
//! - Only `LOCAL` blocks (or unset `locality`).
//! - Presence is a set, not a count: vLLM also publishes `BlockStored` for blocks a
//!   request *reused* from the cache (`emit_cached_block_events`), so stores and removals
//!   do not pair up.
//! - Hashes are compared by their low 64 bits ([`PrefixIndex::key`]), which is what vLLM
//!   publishes by default (`VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1`); byte hashes
//!   (`=0`) are reduced the same way, so both settings work without configuration.
//!
//! A view that may have missed events is emptied rather than trusted: a [`Gap`], a
//! [`Restarted`] engine, a [`Lagged`] consumer or a batch that did not decode clears
//! that engine's view (it fills again as the engine works). A [`Disconnected`]
//! subscriber keeps it: the subscriber replays what it missed, or reports a gap.
//!
//! Memory is bounded: an engine's view holds at most the configured number of blocks (a
//! mirror of a consistent cache never holds more than the engine's `num_gpu_blocks`);
//! a view that grows past it can only be stale, or fed by a hostile publisher, and is
//! cleared.
//!
//! [`Gap`]: KvEventMessage::Gap
//! [`Restarted`]: KvEventMessage::Restarted
//! [`Lagged`]: KvEventMessage::Lagged
//! [`Disconnected`]: KvEventMessage::Disconnected

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::{
    BlockHash, ExternalBlockHash, KVCacheEvent, KVEventBatch, KvEventMessage, KvEventsError,
    MEDIUM_GPU,
};

/// vLLM's `locality` value for blocks of the publishing engine itself.
const LOCALITY_LOCAL: &str = "LOCAL";

/// One engine's cached blocks.
#[derive(Debug, Clone, Default)]
struct View {
    blocks: HashSet<u64>,
    /// Blocks expected soon (a request holding them was just sent to the engine), until
    /// when.
    pending: HashMap<u64, Instant>,
    clears: u64,
}

/// Per-engine sets of cached block hashes, fed by KV events; answers "how many leading
/// blocks of this prompt does each engine hold".
///
/// ```
/// use vllm_client::kv_events::{BlockStored, ExternalBlockHash, KVCacheEvent, PrefixIndex};
///
/// let mut index = PrefixIndex::new(2, 1024);
/// let stored = BlockStored {
///     block_hashes: vec![ExternalBlockHash::Int(11), ExternalBlockHash::Int(12)],
///     medium: Some("GPU".into()),
///     ..BlockStored::default()
/// };
/// index.apply_event(1, &KVCacheEvent::BlockStored(stored));
/// // A prompt whose blocks hash to 11, 12, 13: engine 1 holds its first two blocks.
/// assert_eq!(index.match_lengths(&[11, 12, 13]), vec![0, 2]);
/// ```
#[derive(Debug, Clone)]
pub struct PrefixIndex {
    views: Vec<View>,
    max_blocks: usize,
    group: i64,
}

impl PrefixIndex {
    /// An empty index of `engines` engines (by index, as the client numbers them), each
    /// view holding at most `max_blocks_per_engine` blocks (at least 1).
    pub fn new(engines: usize, max_blocks_per_engine: usize) -> Self {
        Self {
            views: vec![View::default(); engines],
            max_blocks: max_blocks_per_engine.max(1),
            group: 0,
        }
    }

    /// Counts the blocks of KV-cache group `group_idx` (default 0).
    pub fn with_group(mut self, group_idx: i64) -> Self {
        self.group = group_idx;
        self
    }

    /// The number of engines.
    pub fn engines(&self) -> usize {
        self.views.len()
    }

    /// The key a block hash has in the index: its low 64 bits, as vLLM publishes it by
    /// default ([`ExternalBlockHash::Int`]); byte hashes are reduced the same way.
    pub fn key(hash: &ExternalBlockHash) -> u64 {
        match hash {
            ExternalBlockHash::Int(v) => *v,
            // Never produced by vLLM's block pool; any stable mapping will do.
            ExternalBlockHash::NegativeInt(v) => *v as u64,
            ExternalBlockHash::Bytes(b) => ExternalBlockHash::int_from_hash(b),
        }
    }

    /// The keys of a prompt's block hashes (as [`BlockHasher`](super::BlockHasher)
    /// computes them), for [`PrefixIndex::match_lengths`].
    pub fn keys(hashes: &[BlockHash]) -> Vec<u64> {
        hashes.iter().map(BlockHash::to_u64).collect()
    }

    /// Applies one item of engine `engine`'s subscription. Batches update the view;
    /// gaps, restarts, lag and undecodable batches clear it; a disconnection leaves it
    /// as it is. Out-of-range engines are ignored.
    pub fn apply(&mut self, engine: usize, message: &KvEventMessage) {
        match message {
            KvEventMessage::Batch { batch, .. } => self.apply_batch(engine, batch),
            KvEventMessage::Gap { .. }
            | KvEventMessage::Restarted { .. }
            | KvEventMessage::Lagged { .. }
            | KvEventMessage::Malformed(KvEventsError::Decode { .. }) => self.clear(engine),
            // Other malformed messages (wrong frames, a bad sequence number) carry no
            // batch; if one hid a batch, the next number reveals the hole.
            KvEventMessage::Malformed(_) | KvEventMessage::Disconnected => {}
        }
    }

    /// Applies the events of one batch of engine `engine`, in order.
    pub fn apply_batch(&mut self, engine: usize, batch: &KVEventBatch) {
        for event in &batch.events {
            self.apply_event(engine, event);
        }
    }

    /// Applies one event of engine `engine`. Events of other media, groups or
    /// localities, and unknown events, are ignored.
    pub fn apply_event(&mut self, engine: usize, event: &KVCacheEvent) {
        let group = self.group;
        let max_blocks = self.max_blocks;
        let Some(view) = self.views.get_mut(engine) else {
            return;
        };
        let counts =
            |medium: &Option<String>, group_idx: Option<i64>, locality: &Option<String>| {
                medium.as_deref().is_none_or(|m| m == MEDIUM_GPU)
                    && group_idx.unwrap_or(0) == group
                    && locality.as_deref().is_none_or(|l| l == LOCALITY_LOCAL)
            };
        match event {
            KVCacheEvent::BlockStored(e) if counts(&e.medium, e.group_idx, &e.locality) => {
                for hash in &e.block_hashes {
                    if view.blocks.len() >= max_blocks && !view.blocks.contains(&Self::key(hash)) {
                        tracing::warn!(
                            engine,
                            max_blocks,
                            "prefix index: more blocks than the engine can hold; the view \
                             was stale, clearing it"
                        );
                        view.blocks.clear();
                        view.clears += 1;
                    }
                    let key = Self::key(hash);
                    view.pending.remove(&key);
                    view.blocks.insert(key);
                }
            }
            KVCacheEvent::BlockRemoved(e) if counts(&e.medium, e.group_idx, &e.locality) => {
                for hash in &e.block_hashes {
                    let key = Self::key(hash);
                    view.blocks.remove(&key);
                    view.pending.remove(&key);
                }
            }
            KVCacheEvent::AllBlocksCleared(_) => {
                view.blocks.clear();
                view.pending.clear();
            }
            _ => {}
        }
    }

    /// Forgets what engine `engine` holds (its view may be stale).
    pub fn clear(&mut self, engine: usize) {
        if let Some(view) = self.views.get_mut(engine) {
            view.blocks.clear();
            view.pending.clear();
            view.clears += 1;
        }
    }

    /// Expects engine `engine` to hold the blocks with these keys until `until` (or
    /// until events confirm or remove them): a request with that prompt was just sent
    /// to it, and its prefill will store them. Lets a burst of requests sharing a new
    /// prefix follow the first one before the engine has reported anything. Pending
    /// blocks count toward the view's bound; when it is reached, expired ones are
    /// dropped and, if that is not enough, the prediction is not recorded.
    pub fn predict(&mut self, engine: usize, keys: &[u64], until: Instant) {
        let max_blocks = self.max_blocks;
        let Some(view) = self.views.get_mut(engine) else {
            return;
        };
        if view.blocks.len() + view.pending.len() + keys.len() > max_blocks {
            let now = Instant::now();
            view.pending.retain(|_, expiry| *expiry > now);
            if view.blocks.len() + view.pending.len() + keys.len() > max_blocks {
                return;
            }
        }
        for key in keys {
            if !view.blocks.contains(key) {
                let expiry = view.pending.entry(*key).or_insert(until);
                *expiry = (*expiry).max(until);
            }
        }
    }

    /// The number of blocks engine `engine` is expected to hold soon
    /// ([`PrefixIndex::predict`]), expired ones included until they are dropped.
    pub fn pending(&self, engine: usize) -> usize {
        self.views.get(engine).map_or(0, |v| v.pending.len())
    }

    /// The number of blocks engine `engine` is known to hold (0 for unknown engines).
    pub fn len(&self, engine: usize) -> usize {
        self.views.get(engine).map_or(0, |v| v.blocks.len())
    }

    /// Whether no engine is known to hold any block.
    pub fn is_empty(&self) -> bool {
        self.views.iter().all(|v| v.blocks.is_empty())
    }

    /// How many times engine `engine`'s view was cleared because it could be stale (gap,
    /// restart, lag, undecodable batch, overflow, or [`PrefixIndex::clear`]).
    pub fn clears(&self, engine: usize) -> u64 {
        self.views.get(engine).map_or(0, |v| v.clears)
    }

    /// Whether engine `engine` holds the block with key `key`.
    pub fn contains(&self, engine: usize, key: u64) -> bool {
        self.views
            .get(engine)
            .is_some_and(|v| v.blocks.contains(&key))
    }

    /// For each engine, how many leading blocks of a prompt (the keys of its block
    /// hashes, in order) it holds, or is expected to hold soon
    /// ([`PrefixIndex::predict`]). Costs one lookup per engine plus one per matched
    /// block.
    pub fn match_lengths(&self, keys: &[u64]) -> Vec<usize> {
        let now = Instant::now();
        self.views
            .iter()
            .map(|v| {
                let held = |k: &u64| {
                    v.blocks.contains(k) || v.pending.get(k).is_some_and(|&until| until > now)
                };
                keys.iter().take_while(|k| held(k)).count()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv_events::{AllBlocksCleared, BlockRemoved, BlockStored};

    fn stored(hashes: &[u64]) -> KVCacheEvent {
        BlockStored {
            block_hashes: hashes.iter().map(|&h| ExternalBlockHash::Int(h)).collect(),
            medium: Some(MEDIUM_GPU.into()),
            group_idx: Some(0),
            ..BlockStored::default()
        }
        .into()
    }

    fn removed(hashes: &[u64]) -> KVCacheEvent {
        BlockRemoved {
            block_hashes: hashes.iter().map(|&h| ExternalBlockHash::Int(h)).collect(),
            medium: Some(MEDIUM_GPU.into()),
            ..BlockRemoved::default()
        }
        .into()
    }

    fn batch(events: Vec<KVCacheEvent>) -> KvEventMessage {
        KvEventMessage::Batch {
            seq: 0,
            batch: KVEventBatch {
                ts: 0.0,
                events,
                data_parallel_rank: None,
            },
        }
    }

    #[test]
    fn leading_blocks_match_per_engine_and_removals_cut_the_run() {
        let mut index = PrefixIndex::new(3, 100);
        index.apply(0, &batch(vec![stored(&[1, 2, 3])]));
        index.apply(1, &batch(vec![stored(&[1, 2]), stored(&[3, 4])]));
        // Engine 2 holds block 2 but not block 1: no leading run.
        index.apply(2, &batch(vec![stored(&[2, 3])]));
        assert_eq!(index.match_lengths(&[1, 2, 3, 4, 5]), vec![3, 4, 0]);
        index.apply(1, &batch(vec![removed(&[2])]));
        assert_eq!(index.match_lengths(&[1, 2, 3, 4, 5]), vec![3, 1, 0]);
        assert_eq!(index.match_lengths(&[]), vec![0, 0, 0]);
        // A reuse report stores a block again; one removal still removes it.
        index.apply(0, &batch(vec![stored(&[1]), stored(&[1]), removed(&[1])]));
        assert!(!index.contains(0, 1));
        assert_eq!(index.len(1), 3);
    }

    #[test]
    fn only_gpu_blocks_of_the_main_group_held_locally_count() {
        let mut index = PrefixIndex::new(1, 100);
        let mut cpu = BlockStored {
            block_hashes: vec![ExternalBlockHash::Int(1)],
            medium: Some("CPU".into()),
            ..BlockStored::default()
        };
        index.apply_event(0, &cpu.clone().into());
        cpu.medium = Some(MEDIUM_GPU.into());
        cpu.group_idx = Some(1);
        index.apply_event(0, &cpu.clone().into());
        cpu.group_idx = None;
        cpu.locality = Some("REMOTE".into());
        index.apply_event(0, &cpu.clone().into());
        assert!(index.is_empty());
        cpu.locality = Some(LOCALITY_LOCAL.into());
        index.apply_event(0, &cpu.clone().into());
        assert!(index.contains(0, 1));
        // A CPU-tier removal of the same hash leaves the GPU block alone.
        index.apply_event(
            0,
            &BlockRemoved {
                block_hashes: vec![ExternalBlockHash::Int(1)],
                medium: Some("CPU".into()),
                ..BlockRemoved::default()
            }
            .into(),
        );
        assert!(index.contains(0, 1));
        // Group 1's view, when asked for.
        let mut group1 = PrefixIndex::new(1, 100).with_group(1);
        cpu.group_idx = Some(1);
        group1.apply_event(0, &cpu.into());
        assert!(group1.contains(0, 1));
    }

    #[test]
    fn byte_hashes_match_by_their_low_64_bits() {
        let mut index = PrefixIndex::new(1, 100);
        let hash = BlockHash((0u8..32).collect());
        index.apply_event(
            0,
            &BlockStored {
                block_hashes: vec![hash.external(false)],
                ..BlockStored::default()
            }
            .into(),
        );
        assert_eq!(index.match_lengths(&PrefixIndex::keys(&[hash])), vec![1]);
    }

    #[test]
    fn views_that_may_be_stale_are_cleared() {
        let mut index = PrefixIndex::new(2, 100);
        for message in [
            KvEventMessage::Gap { first: 1, last: 2 },
            KvEventMessage::Restarted { seq: 0 },
            KvEventMessage::Lagged { missed: 3 },
            KvEventMessage::Malformed(KvEventsError::Decode {
                seq: 4,
                error: crate::DecodeError::Truncated(0),
            }),
            batch(vec![AllBlocksCleared {}.into()]),
        ] {
            index.apply(0, &batch(vec![stored(&[1, 2])]));
            index.apply(1, &batch(vec![stored(&[1])]));
            index.apply(0, &message);
            assert_eq!(index.match_lengths(&[1, 2]), vec![0, 1], "{message:?}");
        }
        assert_eq!(index.clears(0), 4);
        // A disconnection keeps the view: replay or a gap follows.
        index.apply(0, &batch(vec![stored(&[1, 2])]));
        index.apply(0, &KvEventMessage::Disconnected);
        assert_eq!(index.len(0), 2);
        // Unknown engines are ignored.
        index.apply(7, &batch(vec![stored(&[1])]));
        index.clear(7);
        assert_eq!(index.len(7), 0);
    }

    #[test]
    fn predicted_blocks_count_until_they_expire_or_events_settle_them() {
        let mut index = PrefixIndex::new(2, 8);
        let soon = Instant::now() + std::time::Duration::from_secs(60);
        index.predict(1, &[1, 2, 3], soon);
        assert_eq!(index.match_lengths(&[1, 2, 3, 4]), vec![0, 3]);
        // Stored: confirmed; removed: gone.
        index.apply(1, &batch(vec![stored(&[1]), removed(&[3])]));
        assert_eq!((index.len(1), index.pending(1)), (1, 1));
        assert_eq!(index.match_lengths(&[1, 2, 3]), vec![0, 2]);
        // Expired predictions do not count, and make room when the bound is reached.
        let past = Instant::now() - std::time::Duration::from_millis(1);
        index.predict(0, &[1, 2, 3, 4, 5, 6, 7, 8], past);
        assert_eq!(index.match_lengths(&[1]), vec![0, 1]);
        index.predict(0, &[9, 10], soon);
        assert_eq!(
            (index.pending(0), index.match_lengths(&[9])),
            (2, vec![1, 0])
        );
        // Past the bound with live predictions: not recorded.
        index.predict(0, &[11, 12, 13, 14, 15, 16, 17], soon);
        assert_eq!(index.pending(0), 2);
        // A clear drops predictions too.
        index.clear(0);
        assert_eq!(index.pending(0), 0);
    }

    #[test]
    fn a_view_never_outgrows_its_bound() {
        let mut index = PrefixIndex::new(1, 4);
        index.apply(0, &batch(vec![stored(&[1, 2, 3, 4])]));
        // Storing a known block again is fine.
        index.apply(0, &batch(vec![stored(&[4])]));
        assert_eq!((index.len(0), index.clears(0)), (4, 0));
        // A fifth distinct block: the view was stale.
        index.apply(0, &batch(vec![stored(&[5, 6])]));
        assert_eq!((index.len(0), index.clears(0)), (2, 1));
        assert!(index.contains(0, 6));
    }
}
