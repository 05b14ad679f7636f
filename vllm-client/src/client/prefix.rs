//! Prefix-aware data-parallel routing (opt-in, beyond vLLM).
//!
//! vLLM's data-parallel client routes by load only, so a conversation's next turn lands
//! on whichever engine is least loaded and recomputes a prefix another engine holds.
//! With [`ClientConfig::with_prefix_routing`](super::ClientConfig::with_prefix_routing)
//! the client subscribes to every engine's KV-cache events (one [`KvEventSubscriber`]
//! per data-parallel rank, at the endpoints the engine reported in its ready response),
//! mirrors what each engine's cache holds in a [`PrefixIndex`], and sends a request to
//! the engine holding the longest run of its leading blocks, hashed as the engines hash
//! them ([`BlockHasher`]), as long as that engine is not more than
//! [`PrefixRouting::load_slack`] busier than the least loaded one.
//!
//! The prompt is hashed and the index read before the client's routing lock is taken;
//! the lock only compares per-engine match lengths and loads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::task::JoinHandle;

use super::{ClientError, EngineInfo};
use crate::kv_events::{
    BlockHasher, HashAlgo, HashExtras, KvEventSubscriber, NoneHashSeed, PrefixIndex, StartFrom,
    SubscriberConfig,
};
use crate::protocol::EngineCoreRequest;

/// How much more loaded (in load-score units, about one request each) the engine with
/// the longest cached prefix may be than the least loaded engine and still get the
/// request: [`PrefixRouting::load_slack`]'s default.
pub const PREFIX_AFFINITY_SLACK: f64 = 4.0;

/// Configuration of prefix-aware routing ([`ClientConfig::with_prefix_routing`]).
///
/// The hashing parameters must be the engines' own (`--prefix-caching-hash-algo`,
/// `PYTHONHASHSEED`, `--block-size`); with other values no prompt ever matches and
/// routing stays least-loaded.
///
/// ```
/// use vllm_client::ClientConfig;
/// use vllm_client::client::PrefixRouting;
/// use vllm_client::kv_events::{HashAlgo, NoneHashSeed};
///
/// // Engines started with --enable-prefix-caching --kv-events-config '{"enable_kv_cache_events":
/// // true,"publisher":"zmq","endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5558"}',
/// // the default sha256 hashes and no PYTHONHASHSEED, on host 10.0.0.2.
/// let routing = PrefixRouting::new(HashAlgo::Sha256, NoneHashSeed::Unset)
///     .with_engine_host("10.0.0.2")
///     .with_load_slack(8.0);
/// let config = ClientConfig::handshake("0.0.0.0", 13345, 4).with_prefix_routing(routing);
/// ```
///
/// [`ClientConfig::with_prefix_routing`]: super::ClientConfig::with_prefix_routing
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixRouting {
    /// The engines' `--prefix-caching-hash-algo` (vLLM's default: sha256).
    pub hash_algo: HashAlgo,
    /// The engines' NONE_HASH seed: their `PYTHONHASHSEED`, or unset.
    pub none_hash_seed: NoneHashSeed,
    /// Tokens per block; `None` takes the `block_size` the engines reported when ready
    /// (they must agree).
    pub block_size: Option<usize>,
    /// How much more loaded than the least loaded engine (in load-score units: about
    /// one request each, see [`EngineLoad`](super::EngineLoad)) an engine holding a
    /// prefix may be and still be chosen for it. Among the engines within the slack the
    /// one with the longest match wins; `0.0` only breaks ties between equally loaded
    /// engines, `f64::INFINITY` ignores load.
    pub load_slack: f64,
    /// The shortest match, in blocks, worth routing for; shorter ones route by load.
    pub min_match_blocks: usize,
    /// The KV-cache group whose blocks count (vLLM's `group_idx`; 0 for models with one
    /// group).
    pub kv_cache_group: i64,
    /// The host of each engine (by index), for event endpoints that bind a wildcard
    /// (`tcp://*:5557`); the last one is used for engines past the list's end. Empty:
    /// `127.0.0.1`.
    pub engine_hosts: Vec<String>,
    /// Blocks an engine's view may hold before it is considered stale and cleared;
    /// `None`: twice the `num_gpu_blocks` the engine reported (a mirror of a consistent
    /// cache never holds more than once that).
    pub max_blocks_per_engine: Option<usize>,
    /// Event messages buffered per engine before the subscriber reports lag (after
    /// which that engine's view is rebuilt from scratch).
    pub subscriber_capacity: usize,
    /// Expect an engine to hold a request's prompt blocks for this long after the
    /// request is sent to it, before its events say so ([`PrefixIndex::predict`]): a
    /// burst of requests sharing a prefix no engine holds yet then follows the first
    /// one (within the load slack) instead of being spread by load. `None` (the
    /// default): only blocks the engines reported count.
    pub predict_for: Option<Duration>,
}

impl PrefixRouting {
    /// Routing for engines hashing with `hash_algo` from `none_hash_seed`, with the
    /// defaults for everything else.
    pub fn new(hash_algo: HashAlgo, none_hash_seed: NoneHashSeed) -> Self {
        Self {
            hash_algo,
            none_hash_seed,
            block_size: None,
            load_slack: PREFIX_AFFINITY_SLACK,
            min_match_blocks: 1,
            kv_cache_group: 0,
            engine_hosts: Vec::new(),
            max_blocks_per_engine: None,
            subscriber_capacity: 4096,
            predict_for: None,
        }
    }

    /// Sets [`PrefixRouting::predict_for`].
    pub fn with_prediction(mut self, ttl: Duration) -> Self {
        self.predict_for = Some(ttl);
        self
    }

    /// Sets [`PrefixRouting::load_slack`].
    pub fn with_load_slack(mut self, slack: f64) -> Self {
        self.load_slack = slack;
        self
    }

    /// Sets [`PrefixRouting::block_size`].
    pub fn with_block_size(mut self, block_size: usize) -> Self {
        self.block_size = Some(block_size);
        self
    }

    /// Sets [`PrefixRouting::min_match_blocks`].
    pub fn with_min_match_blocks(mut self, blocks: usize) -> Self {
        self.min_match_blocks = blocks;
        self
    }

    /// All engines run on `host`.
    pub fn with_engine_host(mut self, host: impl Into<String>) -> Self {
        self.engine_hosts = vec![host.into()];
        self
    }

    /// Sets [`PrefixRouting::engine_hosts`].
    pub fn with_engine_hosts(mut self, hosts: Vec<String>) -> Self {
        self.engine_hosts = hosts;
        self
    }

    fn host(&self, engine: usize) -> &str {
        self.engine_hosts
            .get(engine)
            .or(self.engine_hosts.last())
            .map_or("127.0.0.1", String::as_str)
    }
}

/// Counters of prefix-aware routing decisions
/// ([`EngineCoreClient::prefix_routing_stats`](super::EngineCoreClient::prefix_routing_stats)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrefixRoutingStats {
    /// Requests sent to an engine holding a prefix of theirs.
    pub routed_by_prefix: u64,
    /// Requests with a cached prefix somewhere that went to the least loaded engine
    /// instead, because every holder was past the load slack.
    pub load_fallbacks: u64,
    /// Requests no engine held a prefix of (or too short a one).
    pub no_match: u64,
    /// Requests not considered: no prompt tokens, multimodal or embedded prompts,
    /// `skip_reading_prefix_cache`, or an explicit data-parallel rank.
    pub not_considered: u64,
    /// Blocks each engine is known to hold now (by index).
    pub blocks: Vec<usize>,
    /// How often each engine's view was cleared because it could be stale.
    pub view_clears: Vec<u64>,
}

/// The routing state: the hasher, the index and the tasks feeding it.
pub(crate) struct PrefixRouter {
    hasher: BlockHasher,
    index: Arc<RwLock<PrefixIndex>>,
    pub load_slack: f64,
    min_match_blocks: usize,
    predict_for: Option<Duration>,
    routed: AtomicU64,
    fallbacks: AtomicU64,
    no_match: AtomicU64,
    not_considered: AtomicU64,
}

/// What a request's prefix looks like to the router.
pub(crate) enum PrefixLookup {
    /// Not a candidate for prefix routing.
    NotConsidered,
    /// A candidate.
    Matches {
        /// Leading blocks each engine holds (below the minimum counts as zero; empty
        /// when the prompt has fewer full blocks than the minimum).
        matches: Vec<usize>,
        /// The index keys of the prompt's blocks.
        keys: Vec<u64>,
    },
}

impl PrefixRouter {
    /// Builds the router for `engines` and starts one subscriber per engine; the tasks
    /// are returned for the client to stop with the rest.
    pub(crate) fn start(
        config: &PrefixRouting,
        engines: &[EngineInfo],
    ) -> Result<(Self, Vec<JoinHandle<()>>), ClientError> {
        let invalid = |detail: String| ClientError::Config(format!("prefix routing: {detail}"));
        let block_size =
            match config.block_size {
                Some(size) => size,
                None => {
                    let sizes: Vec<i64> = engines.iter().map(|e| e.ready.block_size).collect();
                    if sizes.windows(2).any(|w| w[0] != w[1]) {
                        return Err(invalid(format!(
                            "the engines report different block sizes {sizes:?}; set \
                         PrefixRouting::block_size"
                        )));
                    }
                    let size = sizes.first().copied().unwrap_or(0);
                    usize::try_from(size).ok().filter(|&s| s > 0).ok_or_else(|| {
                    invalid(format!(
                        "the engines report block size {size}; set PrefixRouting::block_size"
                    ))
                })?
                }
            };
        let hasher = BlockHasher::new(config.hash_algo, block_size, config.none_hash_seed.clone())
            .map_err(|e| invalid(e.to_string()))?;
        let mut subscriptions = Vec::with_capacity(engines.len());
        for (i, engine) in engines.iter().enumerate() {
            let Some(events) = engine.kv_events_config() else {
                return Err(invalid(format!(
                    "engine rank {} publishes no KV-cache events (start it with \
                     --enable-prefix-caching and a zmq --kv-events-config)",
                    engine.rank
                )));
            };
            let mut subscription = SubscriberConfig::from_engine_config(&events, config.host(i))
                .with_capacity(config.subscriber_capacity);
            if subscription.replay_endpoint.is_some() {
                // Learn what the engine cached before this client came.
                subscription = subscription.with_start(StartFrom::Seq(0));
            }
            subscriptions.push(subscription);
        }
        let max_blocks = config.max_blocks_per_engine.unwrap_or_else(|| {
            engines
                .iter()
                .map(|e| usize::try_from(e.ready.num_gpu_blocks).unwrap_or(0))
                .max()
                .unwrap_or(0)
                .saturating_mul(2)
        });
        let index = Arc::new(RwLock::new(
            PrefixIndex::new(engines.len(), max_blocks).with_group(config.kv_cache_group),
        ));
        let mut tasks = Vec::with_capacity(subscriptions.len());
        for (engine, subscription) in subscriptions.into_iter().enumerate() {
            let endpoint = subscription.endpoint.clone();
            let mut subscriber = KvEventSubscriber::start(subscription)
                .map_err(|e| invalid(format!("subscribing to {endpoint}: {e}")))?;
            let index = index.clone();
            tasks.push(tokio::spawn(async move {
                while let Some(message) = subscriber.next().await {
                    if !matches!(message, crate::kv_events::KvEventMessage::Batch { .. }) {
                        tracing::debug!(engine, ?message, "prefix routing: KV events");
                    }
                    write(&index).apply(engine, &message);
                }
            }));
        }
        let router = Self {
            hasher,
            index,
            load_slack: config.load_slack,
            min_match_blocks: config.min_match_blocks.max(1),
            predict_for: config.predict_for,
            routed: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
            no_match: AtomicU64::new(0),
            not_considered: AtomicU64::new(0),
        };
        Ok((router, tasks))
    }

    /// Hashes the request's prompt and reads, per engine, how many of its leading
    /// blocks the engine holds. Runs outside the client's routing lock.
    pub(crate) fn lookup(&self, request: &EngineCoreRequest) -> PrefixLookup {
        let skips_cache = request
            .sampling_params
            .as_ref()
            .and_then(|p| p.skip_reading_prefix_cache)
            .unwrap_or(false);
        let Some(prompt) = request.prompt_token_ids.as_deref() else {
            return PrefixLookup::NotConsidered;
        };
        // Multimodal items and prompt embeddings enter the engine's hashes in ways the
        // hasher does not reproduce.
        if skips_cache || request.mm_features.is_some() || request.prompt_embeds.is_some() {
            return PrefixLookup::NotConsidered;
        }
        let mut extras = HashExtras::none();
        if let Some(lora) = &request.lora_request {
            extras = extras.with_lora(&lora.lora_name, &lora.lora_path);
        }
        if let Some(salt) = &request.cache_salt {
            extras = extras.with_cache_salt(salt);
        }
        // The engine never serves the last prompt token from the cache (it must compute
        // it to sample), so a block ending there cannot be a hit.
        let usable = &prompt[..prompt.len().saturating_sub(1)];
        let hashes = self.hasher.hash_blocks(usable, &extras);
        let keys = PrefixIndex::keys(&hashes);
        if hashes.len() < self.min_match_blocks {
            return PrefixLookup::Matches {
                matches: Vec::new(),
                keys,
            };
        }
        let mut matches = read(&self.index).match_lengths(&keys);
        for m in &mut matches {
            if *m < self.min_match_blocks {
                *m = 0;
            }
        }
        PrefixLookup::Matches { matches, keys }
    }

    /// Records that a request whose prompt blocks have these keys went to `engine`, when
    /// predictions are on ([`PrefixRouting::predict_for`]).
    pub(crate) fn sent(&self, engine: usize, keys: &[u64]) {
        if let Some(ttl) = self.predict_for
            && !keys.is_empty()
        {
            write(&self.index).predict(engine, keys, Instant::now() + ttl);
        }
    }

    /// Counts a routing decision.
    pub(crate) fn record(&self, decision: PrefixDecision) {
        let counter = match decision {
            PrefixDecision::Routed => &self.routed,
            PrefixDecision::LoadFallback => &self.fallbacks,
            PrefixDecision::NoMatch => &self.no_match,
            PrefixDecision::NotConsidered => &self.not_considered,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> PrefixRoutingStats {
        let index = read(&self.index);
        let engines = 0..index.engines();
        PrefixRoutingStats {
            routed_by_prefix: self.routed.load(Ordering::Relaxed),
            load_fallbacks: self.fallbacks.load(Ordering::Relaxed),
            no_match: self.no_match.load(Ordering::Relaxed),
            not_considered: self.not_considered.load(Ordering::Relaxed),
            blocks: engines.clone().map(|e| index.len(e)).collect(),
            view_clears: engines.map(|e| index.clears(e)).collect(),
        }
    }
}

/// What prefix routing decided for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrefixDecision {
    /// Sent to an engine holding a prefix.
    Routed,
    /// A prefix was held, but only by engines past the load slack.
    LoadFallback,
    /// No engine held a prefix.
    NoMatch,
    /// The request was not a candidate.
    NotConsidered,
}

// A panic while holding the index lock leaves a consistent index (each update is one
// set operation), so a poisoned lock is used as it is.
fn read(index: &RwLock<PrefixIndex>) -> std::sync::RwLockReadGuard<'_, PrefixIndex> {
    index.read().unwrap_or_else(|e| e.into_inner())
}

fn write(index: &RwLock<PrefixIndex>) -> std::sync::RwLockWriteGuard<'_, PrefixIndex> {
    index.write().unwrap_or_else(|e| e.into_inner())
}
