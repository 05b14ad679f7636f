//! Prints a vLLM engine's KV-cache events, one JSON line per batch, until interrupted.
//!
//! ```sh
//! # The engine: vllm serve MODEL --enable-prefix-caching --kv-events-config \
//! #   '{"enable_kv_cache_events": true, "publisher": "zmq",
//! #     "endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5558", "topic": "kv"}'
//! cargo run --release --example kv-events -- --endpoint tcp://HOST:5557 \
//!     --replay-endpoint tcp://HOST:5558 --topic kv
//! ```
//!
//! Each line is `{"seq": N, "ts": F, "data_parallel_rank": N|null, "events": [...]}`; the
//! events carry vLLM's field names and their `type` tag, with the optional fields left out
//! when unset, as `msgspec.to_builtins` renders them (bytes as hex). Holes in the numbering
//! are filled from the replay endpoint; what cannot be recovered, a slow terminal, a
//! reconnection or a new engine process is reported on stderr.
//!
//! A gateway's view: `--prompt-tokens 1,2,3,…` hashes that prompt's blocks as the engine
//! does (`--block-size`, `--hash-algo`, and the engine's `PYTHONHASHSEED` as
//! `--python-hash-seed`) and reports on stderr, after each batch, how many of its leading
//! blocks the engine holds.

use std::collections::HashSet;

use anyhow::{Context, Result};
use clap::Parser;
use futures::StreamExt;
use vllm_client::kv_events::{
    BlockHasher, ExternalBlockHash, HashAlgo, HashExtras, KVCacheEvent, KVEventBatch,
    KvEventMessage, KvEventSubscriber, NoneHashSeed, StartFrom, SubscriberConfig,
};
use vllm_examples::kv_json::batch_json;

#[derive(Parser)]
struct Args {
    /// The engine's PUB endpoint (its kv_events_config endpoint, wildcard replaced by its host).
    #[arg(long)]
    endpoint: String,
    /// The engine's replay endpoint, to fill holes in the numbering.
    #[arg(long)]
    replay_endpoint: Option<String>,
    /// The topic the engine publishes on.
    #[arg(long, default_value = "")]
    topic: String,
    /// Data-parallel rank of the engine: offsets both ports as vLLM does.
    #[arg(long, default_value_t = 0)]
    data_parallel_rank: u32,
    /// Start with this sequence number, replaying what the engine still buffers
    /// (default: the next batch).
    #[arg(long)]
    from_seq: Option<u64>,
    /// Bind the endpoint (for an engine whose endpoint names a host: it connects).
    #[arg(long)]
    bind: bool,
    /// A prompt (comma-separated token ids) whose cached prefix to report.
    #[arg(long, value_delimiter = ',')]
    prompt_tokens: Vec<u32>,
    /// The engine's --block-size.
    #[arg(long, default_value_t = 16)]
    block_size: usize,
    /// The engine's --prefix-caching-hash-algo.
    #[arg(long, default_value = "sha256")]
    hash_algo: HashAlgo,
    /// The engine's PYTHONHASHSEED (unset: vLLM's fixed seed for sha256).
    #[arg(long)]
    python_hash_seed: Option<String>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut config = SubscriberConfig::new(&args.endpoint).with_topic(&args.topic);
    if let Some(replay) = &args.replay_endpoint {
        config = config.with_replay_endpoint(replay);
    }
    if let Some(seq) = args.from_seq {
        config = config.with_start(StartFrom::Seq(seq));
    }
    config.bind = args.bind;
    let config = config.for_data_parallel_rank(args.data_parallel_rank)?;
    let prompt = if args.prompt_tokens.is_empty() {
        None
    } else {
        let seed = NoneHashSeed::from_env_value(args.python_hash_seed.as_deref());
        let hasher = BlockHasher::new(args.hash_algo, args.block_size, seed)
            .context("hashing --prompt-tokens")?;
        let hashes: Vec<u64> = hasher
            .hash_blocks(&args.prompt_tokens, &HashExtras::none())
            .iter()
            .map(|h| h.to_u64())
            .collect();
        Some(hashes)
    };
    let mut cached: HashSet<ExternalBlockHash> = HashSet::new();

    let mut events = KvEventSubscriber::start(config)?;
    loop {
        let message = tokio::select! {
            message = events.next() => message,
            _ = tokio::signal::ctrl_c() => break,
        };
        let Some(message) = message else { break };
        match message {
            KvEventMessage::Batch { seq, batch } => {
                println!("{}", batch_json(seq, &batch));
                if let Some(prompt) = &prompt {
                    track(&mut cached, &batch);
                    let hit = prompt
                        .iter()
                        .take_while(|h| cached.contains(&ExternalBlockHash::Int(**h)))
                        .count();
                    eprintln!("prompt prefix cached: {hit} of {} blocks", prompt.len());
                }
            }
            KvEventMessage::Lagged { missed } => {
                eprintln!("lagged: {missed} messages dropped (output too slow)")
            }
            KvEventMessage::Gap { first, last } => {
                eprintln!("lost batches {first}..={last} (not in the replay buffer)")
            }
            KvEventMessage::Disconnected => eprintln!("disconnected; reconnecting"),
            KvEventMessage::Restarted { seq } => {
                cached.clear();
                eprintln!("a new engine process publishes (from seq {seq})")
            }
            KvEventMessage::Malformed(e) => eprintln!("skipped a message: {e}"),
        }
    }
    Ok(())
}

/// The blocks the engine holds, as a gateway tracks them.
fn track(cached: &mut HashSet<ExternalBlockHash>, batch: &KVEventBatch) {
    for event in &batch.events {
        match event {
            KVCacheEvent::BlockStored(e) => cached.extend(e.block_hashes.iter().cloned()),
            KVCacheEvent::BlockRemoved(e) => {
                for h in &e.block_hashes {
                    cached.remove(h);
                }
            }
            KVCacheEvent::AllBlocksCleared(_) => cached.clear(),
            KVCacheEvent::Unknown(_) => {}
        }
    }
}
