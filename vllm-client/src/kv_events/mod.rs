//! KV-cache events: what each engine's prefix cache holds, as it changes.
//!
//! An engine started with `--enable-prefix-caching` and a `--kv-events-config` whose
//! publisher is `zmq` publishes, once per scheduler step that changed its cache, a
//! [`KVEventBatch`] of [`BlockStored`], [`BlockRemoved`] and [`AllBlocksCleared`] events
//! (`vllm/distributed/kv_events.py`). A cache-aware router subscribes to every engine
//! ([`KvEventSubscriber`]), keeps a map of block hash → engines, and hashes each new
//! prompt's blocks the way the engines do ([`BlockHasher`]) to find the engine holding
//! the longest prefix.
//!
//! - Wire types: [`KVEventBatch`], [`KVCacheEvent`] and the three events, declared once
//!   with the crate's wire macros and checked against golden vectors from vLLM's encoder.
//! - Endpoints: [`KVEventsConfig`] (what the engine reports at start-up),
//!   [`offset_endpoint_port`] (per data-parallel rank), [`connect_endpoint`].
//! - [`KvEventSubscriber`]: a `Stream` of sequence-checked batches, holes filled from the
//!   engine's replay endpoint ([`replay`]), reconnection, bounded memory.
//! - [`BlockHasher`]: prefix block hashes for every `--prefix-caching-hash-algo`
//!   (features `sha256` and `xxhash`).
//! - [`PrefixIndex`]: per-engine sets of cached blocks fed by the events, answering how
//!   many leading blocks of a prompt each engine holds. [`EngineCoreClient`] routes by
//!   it when asked to ([`ClientConfig::with_prefix_routing`]).
//!
//! [`EngineCoreClient`]: crate::EngineCoreClient
//! [`ClientConfig::with_prefix_routing`]: crate::ClientConfig::with_prefix_routing

mod batch;
mod block_hash;
mod config;
mod error;
mod events;
mod hash;
mod index;
mod replay;
mod subscriber;

pub use batch::KVEventBatch;
pub use block_hash::ExternalBlockHash;
pub use config::{
    EndpointError, KVEventsConfig, connect_endpoint, offset_endpoint_port, publisher_binds,
};
pub use error::KvEventsError;
pub use events::{
    AllBlocksCleared, BlockRemoved, BlockStored, KVCacheEvent, MEDIUM_CPU, MEDIUM_GPU,
    MEDIUM_STORAGE,
};
pub use hash::{BlockHash, BlockHasher, HashAlgo, HashError, HashExtras, NoneHashSeed};
pub use index::PrefixIndex;
pub use replay::{END_SEQ, replay};
pub use subscriber::{KvEventMessage, KvEventSubscriber, StartFrom, SubscriberConfig};
