//! The mock engine's prefix cache: the KV-cache events a vLLM engine would publish.
//!
//! A small model of vLLM's `BlockPool` with prefix caching (`vllm/v1/core/block_pool.py`):
//! `capacity` blocks of `block_size` tokens, hashed with [`BlockHasher`] exactly as the
//! engine hashes them. A request first reuses the cached blocks its prompt starts with
//! (no event, as in vLLM); each step then caches the full blocks of what it computed (its
//! tokens except the last sampled one), and one [`BlockStored`] per request and step names
//! the new run of blocks with its parent, tokens, LoRA and per-block extra keys. Finished
//! requests release their blocks, which stay cached until the least recently released
//! one is needed for a new block ([`BlockRemoved`]). `reset` clears an idle cache
//! ([`AllBlocksCleared`]) and refuses while a request holds blocks, as vLLM does;
//! `preempt_all` first frees the running requests' blocks (`reset_running_requests`).
//!
//! Stores carry the group's spec kind (`full_attention`), as `KVCacheManager.take_events`
//! annotates them. Simplifications: no preemption when blocks run out (a request that
//! finds no evictable block leaves its further blocks uncached), one KV-cache group (`group_idx` 0), medium `GPU`, integer
//! hashes (vLLM's default `VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1`), no multimodal keys.

use std::collections::HashMap;

use crate::kv_events::{
    AllBlocksCleared, BlockHash, BlockHasher, BlockRemoved, BlockStored, HashExtras, KVCacheEvent,
    MEDIUM_GPU,
};
use crate::protocol::{LoRARequest, Value};

/// `KVCacheSpecKind.FULL_ATTENTION.value`: the kind of the mock's one KV-cache group.
const FULL_ATTENTION: &str = "full_attention";

/// A cached block.
struct Block {
    /// Requests holding it.
    refs: usize,
    /// When it was last released (for LRU eviction).
    released: u64,
}

/// What the cache knows about a running request.
struct Request {
    tokens: Vec<u32>,
    extras: HashExtras,
    lora: Option<(String, i64)>,
    /// Hashes of its full blocks so far.
    hashes: Vec<BlockHash>,
    /// Its leading blocks it holds in the cache.
    held: usize,
    /// Set when a block could not be cached: nothing after it is.
    stalled: bool,
}

/// The prefix cache of a mock engine.
pub(crate) struct KvCache {
    hasher: BlockHasher,
    capacity: usize,
    blocks: HashMap<BlockHash, Block>,
    requests: HashMap<String, Request>,
    clock: u64,
    events: Vec<KVCacheEvent>,
}

impl KvCache {
    pub(crate) fn new(hasher: BlockHasher, capacity: usize) -> Self {
        Self {
            hasher,
            capacity,
            blocks: HashMap::new(),
            requests: HashMap::new(),
            clock: 0,
            events: Vec::new(),
        }
    }

    /// Registers a request and takes the cached blocks its prompt starts with; returns
    /// the prompt tokens served from the cache. Like vLLM's `get_computed_blocks`, the
    /// last prompt token is always computed, so a hit covers at most the full blocks
    /// before it.
    pub(crate) fn add(
        &mut self,
        id: &str,
        prompt: &[u32],
        lora: Option<&LoRARequest>,
        cache_salt: Option<&str>,
    ) -> usize {
        let mut extras = HashExtras::none();
        if let Some(l) = lora {
            extras = extras.with_lora(&l.lora_name, &l.lora_path);
        }
        if let Some(salt) = cache_salt {
            extras = extras.with_cache_salt(salt);
        }
        let hashes = self.hasher.hash_blocks(prompt, &extras);
        let mut held = 0;
        for hash in &hashes {
            match self.blocks.get_mut(hash) {
                Some(block) => block.refs += 1,
                None => break,
            }
            held += 1;
        }
        let size = self.hasher.block_size();
        let hit_blocks = held.min(prompt.len().saturating_sub(1) / size);
        self.requests.insert(
            id.to_owned(),
            Request {
                tokens: prompt.to_vec(),
                extras,
                lora: lora.map(|l| (l.lora_name.clone(), l.lora_int_id)),
                hashes,
                held,
                stalled: false,
            },
        );
        hit_blocks * size
    }

    /// Appends a request's generated tokens and caches its newly computed full blocks
    /// (all its tokens but the last sampled one, whose KV is computed next step).
    pub(crate) fn advance(&mut self, id: &str, new_tokens: &[u32]) {
        let Some(mut request) = self.requests.remove(id) else {
            return;
        };
        request.tokens.extend_from_slice(new_tokens);
        let computed = request.tokens.len().saturating_sub(1);
        let mut hashes = std::mem::take(&mut request.hashes);
        self.hasher
            .extend_hashes(&mut hashes, &request.tokens[..computed], &request.extras);
        request.hashes = hashes;
        self.cache(&mut request);
        self.requests.insert(id.to_owned(), request);
    }

    /// Caches the request's full blocks past those it holds; one event for the new run.
    fn cache(&mut self, request: &mut Request) {
        let first = request.held;
        while !request.stalled && request.held < request.hashes.len() {
            let hash = &request.hashes[request.held];
            if let Some(block) = self.blocks.get_mut(hash) {
                block.refs += 1;
            } else if self.blocks.len() < self.capacity || self.evict_one() {
                self.blocks.insert(
                    hash.clone(),
                    Block {
                        refs: 1,
                        released: 0,
                    },
                );
            } else {
                request.stalled = true;
                break;
            }
            request.held += 1;
        }
        if request.held > first {
            self.events
                .push(self.stored_event(request, first, request.held).into());
        }
    }

    /// `_build_block_stored_event` for blocks `first..end` of a request.
    fn stored_event(&self, request: &Request, first: usize, end: usize) -> BlockStored {
        let size = self.hasher.block_size();
        let extra_keys = (first..end)
            .map(|i| {
                // to_event_extra_keys: the untagged keys of each block's hash.
                let mut keys = Vec::new();
                if let Some((name, _)) = &request.extras.lora {
                    keys.push(Value::from(name.as_str()));
                }
                if let Some(salt) = request.extras.cache_salt.as_deref()
                    && i == 0
                    && !salt.is_empty()
                {
                    keys.push(Value::from(salt));
                }
                (!keys.is_empty()).then_some(keys)
            })
            .collect();
        BlockStored {
            block_hashes: request.hashes[first..end]
                .iter()
                .map(|h| h.external(true))
                .collect(),
            parent_block_hash: first
                .checked_sub(1)
                .map(|p| request.hashes[p].external(true)),
            token_ids: request.tokens[first * size..end * size].to_vec(),
            block_size: size as i64,
            lora_id: request.lora.as_ref().map(|(_, id)| *id),
            medium: Some(MEDIUM_GPU.to_owned()),
            lora_name: request.lora.as_ref().map(|(name, _)| name.clone()),
            extra_keys: Some(extra_keys),
            group_idx: Some(0),
            // KVCacheManager.take_events annotates stores with the group's spec.
            kv_cache_spec_kind: Some(FULL_ATTENTION.to_owned()),
            ..BlockStored::default()
        }
    }

    /// Evicts the least recently released unused block; false when every block is in use.
    fn evict_one(&mut self) -> bool {
        let victim = self
            .blocks
            .iter()
            .filter(|(_, b)| b.refs == 0)
            .min_by_key(|(_, b)| b.released)
            .map(|(h, _)| h.clone());
        let Some(hash) = victim else {
            return false;
        };
        self.blocks.remove(&hash);
        self.events.push(
            BlockRemoved {
                block_hashes: vec![hash.external(true)],
                medium: Some(MEDIUM_GPU.to_owned()),
                group_idx: Some(0),
                ..BlockRemoved::default()
            }
            .into(),
        );
        true
    }

    /// A request finished or was aborted: its blocks stay cached, free to evict. Like
    /// vLLM's free queue, its last block goes first.
    pub(crate) fn release(&mut self, id: &str) {
        let Some(request) = self.requests.remove(id) else {
            return;
        };
        // Tail first: a request's last blocks are evicted before the prefix they extend.
        for hash in request.hashes[..request.held].iter().rev() {
            self.clock += 1;
            if let Some(block) = self.blocks.get_mut(hash) {
                block.refs = block.refs.saturating_sub(1);
                block.released = self.clock;
            }
        }
    }

    /// `reset_prefix_cache(reset_running_requests=True)`'s preemption: every running
    /// request frees its blocks, and caches them anew (one store from its first block)
    /// at its next step, as a preempted request recomputes all its tokens when it is
    /// scheduled again.
    pub(crate) fn preempt_all(&mut self) {
        for request in self.requests.values_mut() {
            for hash in &request.hashes[..request.held] {
                if let Some(block) = self.blocks.get_mut(hash) {
                    block.refs = block.refs.saturating_sub(1);
                }
            }
            request.held = 0;
            request.stalled = false;
        }
    }

    /// `reset_prefix_cache`: drops every cached block if none is in use.
    pub(crate) fn reset(&mut self) -> bool {
        if self.blocks.values().any(|b| b.refs > 0) {
            return false;
        }
        self.blocks.clear();
        self.events.push(AllBlocksCleared {}.into());
        true
    }

    /// The events since the last call, in order.
    pub(crate) fn take_events(&mut self) -> Vec<KVCacheEvent> {
        std::mem::take(&mut self.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv_events::{ExternalBlockHash, HashAlgo, NoneHashSeed};

    fn cache(capacity: usize) -> KvCache {
        let hasher = BlockHasher::new(
            HashAlgo::Sha256,
            4,
            NoneHashSeed::PythonHashSeed("0".into()),
        )
        .unwrap();
        KvCache::new(hasher, capacity)
    }

    fn stored(e: &KVCacheEvent) -> &BlockStored {
        match e {
            KVCacheEvent::BlockStored(s) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn computed_blocks_are_stored_once_and_shared_prefixes_are_reused() {
        let mut kv = cache(100);
        let prompt: Vec<u32> = (0..10).collect();
        kv.add("a", &prompt, None, None);
        kv.advance("a", &[100]); // prefill: 10 computed, 2 full blocks
        let events = kv.take_events();
        assert_eq!(events.len(), 1);
        let e = stored(&events[0]);
        let hashes = kv.hasher.hash_blocks(&prompt, &HashExtras::none());
        assert_eq!(
            e.block_hashes,
            vec![hashes[0].external(true), hashes[1].external(true)]
        );
        assert_eq!(e.parent_block_hash, None);
        assert_eq!(e.token_ids, (0..8).collect::<Vec<u32>>());
        assert_eq!(e.extra_keys, Some(vec![None, None]));
        kv.advance("a", &[101, 102]); // 12 computed: block 3
        let events = kv.take_events();
        assert_eq!(
            stored(&events[0]).parent_block_hash,
            Some(hashes[1].external(true))
        );
        // A second request with the same first 8 tokens reuses them: only its own block.
        kv.add(
            "b",
            &[0, 1, 2, 3, 4, 5, 6, 7, 50, 51, 52, 53, 54],
            None,
            None,
        );
        kv.advance("b", &[1]);
        let events = kv.take_events();
        assert_eq!(events.len(), 1);
        // 8 cached tokens; a block-aligned prompt still computes its last token.
        let a_tokens = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102];
        assert_eq!(kv.add("c", &a_tokens, None, None), 12);
        assert_eq!(kv.add("d", &a_tokens[..12], None, None), 8);
        kv.release("c");
        kv.release("d");
        assert_eq!(stored(&events[0]).block_hashes.len(), 1);
        assert_eq!(stored(&events[0]).token_ids, vec![50, 51, 52, 53]);
        // Blocks in use cannot be cleared.
        assert!(!kv.reset());
        kv.release("a");
        kv.release("b");
        assert!(kv.reset());
        assert_eq!(kv.take_events(), vec![AllBlocksCleared {}.into()]);
    }

    #[test]
    fn preempted_requests_store_their_blocks_anew_from_the_first() {
        let mut kv = cache(100);
        let prompt: Vec<u32> = (0..10).collect();
        kv.add("a", &prompt, None, None);
        kv.advance("a", &[100, 101, 102]); // 12 computed: 3 blocks
        kv.take_events();
        assert!(!kv.reset(), "a running request holds its blocks");
        kv.preempt_all();
        assert!(kv.reset());
        assert_eq!(kv.take_events(), vec![AllBlocksCleared {}.into()]);
        kv.advance("a", &[103]);
        let events = kv.take_events();
        assert_eq!(events.len(), 1, "{events:?}");
        let e = stored(&events[0]);
        let mut tokens = prompt.clone();
        tokens.extend([100, 101, 102]);
        let hashes = kv.hasher.hash_blocks(&tokens[..12], &HashExtras::none());
        assert_eq!(e.parent_block_hash, None);
        assert_eq!(
            e.block_hashes,
            hashes.iter().map(|h| h.external(true)).collect::<Vec<_>>()
        );
        assert_eq!(e.token_ids, tokens[..12].to_vec());
    }

    #[test]
    fn a_full_cache_evicts_the_least_recently_released_tail_first() {
        let mut kv = cache(3);
        kv.add("a", &(0..9).collect::<Vec<u32>>(), None, None);
        kv.advance("a", &[9]); // blocks a0 a1
        kv.release("a");
        kv.add("b", &(100..109).collect::<Vec<u32>>(), None, None);
        kv.advance("b", &[9]); // b0 fits, b1 evicts a's tail (a1)
        let events = kv.take_events();
        let a = kv
            .hasher
            .hash_blocks(&(0..8).collect::<Vec<u32>>(), &HashExtras::none());
        let removed: Vec<&ExternalBlockHash> = events
            .iter()
            .filter_map(|e| match e {
                KVCacheEvent::BlockRemoved(r) => Some(&r.block_hashes[0]),
                _ => None,
            })
            .collect();
        assert_eq!(removed, vec![&a[1].external(true)]);
        // Everything in use: the next block is left uncached rather than stealing one.
        kv.add("c", &(200..209).collect::<Vec<u32>>(), None, None);
        kv.advance("c", &[1]);
        let events = kv.take_events();
        assert_eq!(events.len(), 2, "{events:?}"); // a0 evicted, c0 stored
        assert_eq!(stored(&events[1]).block_hashes.len(), 1);
    }

    #[test]
    fn lora_and_salt_enter_hashes_and_event_keys() {
        let mut kv = cache(10);
        let lora = LoRARequest::new("sql", 3, "/adapters/sql");
        kv.add("a", &(0..9).collect::<Vec<u32>>(), Some(&lora), Some("s"));
        kv.advance("a", &[1]);
        let events = kv.take_events();
        let e = stored(&events[0]);
        assert_eq!(e.lora_id, Some(3));
        assert_eq!(e.lora_name.as_deref(), Some("sql"));
        assert_eq!(
            e.extra_keys,
            Some(vec![
                Some(vec![Value::from("sql"), Value::from("s")]),
                Some(vec![Value::from("sql")]),
            ])
        );
        let extras = HashExtras::none()
            .with_lora("sql", "/adapters/sql")
            .with_cache_salt("s");
        let hashes = kv
            .hasher
            .hash_blocks(&(0..8).collect::<Vec<u32>>(), &extras);
        assert_eq!(e.block_hashes[0], hashes[0].external(true));
    }
}
