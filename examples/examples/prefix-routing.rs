//! Prefix-aware routing against vLLM's least-loaded routing: a multi-turn chat workload
//! on data-parallel mock engines, prefix-cache hit rate and time to first token.
//!
//! ```sh
//! cargo run --release --example prefix-routing -- --engines 4 --conversations 96 \
//!     --concurrency 32 --turns 6
//! ```
//!
//! The workload: `--system-prompts` shared system prompts of `--system-len` tokens;
//! `--conversations` conversations, each on one of them, each running `--turns` turns in
//! order. A turn's prompt is the previous turn's prompt, the engine's answer to it
//! (`--output-len` tokens) and a new user message (`--user-len` tokens), as a chat
//! template renders a growing conversation, after a pause (`--think-ms`: the user
//! reading and typing). `--concurrency` conversations run at once (closed loop). Without
//! pauses a closed loop flatters least-loaded routing: the engine that just finished a
//! conversation's turn is the least loaded one when its next turn arrives. Token ids and the choice of system prompt are seeded (`--seed`), so
//! every routing mode sees the same prompts.
//!
//! Each mode gets fresh engines (empty caches) in this process: `--engines` mock engines
//! with a prefix cache of `--blocks` blocks of `--block-size` tokens each, publishing
//! KV-cache events over TCP, decoding at `--decode-rate` tokens per second per request
//! and computing prompts at `--prefill-rate` tokens per second, so that a cached prefix
//! shortens the time to first token (`MockConfig::prefill_tokens_per_second`). The hit
//! rate is the engines' own count: prompt tokens served from the cache
//! (`PrefillStats.num_cached_tokens` of each request's first output) over prompt tokens.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use futures::StreamExt;
use tokio::sync::Mutex;
use vllm_client::client::PrefixRouting;
use vllm_client::kv_events::{HashAlgo, KVEventsConfig, NoneHashSeed};
use vllm_client::mock::{MockConfig, MockEngine, MockEngineHandle, OutputMode};
use vllm_client::protocol::{EngineCoreRequest, SamplingParams};
use vllm_client::{ClientConfig, EngineCoreClient};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// vLLM's routing: least loaded engine.
    LeastLoaded,
    /// Prefix-aware routing (`ClientConfig::with_prefix_routing`).
    Prefix,
    /// Both, one after the other, on fresh engines.
    Both,
}

#[derive(Debug, Parser)]
#[command(about = "Prefix-aware vs least-loaded data-parallel routing on mock engines")]
struct Args {
    /// Routing mode(s) to run.
    #[arg(long, value_enum, default_value_t = Mode::Both)]
    mode: Mode,
    /// Data-parallel engines.
    #[arg(long, default_value_t = 4)]
    engines: u16,
    /// Shared system prompts.
    #[arg(long, default_value_t = 8)]
    system_prompts: usize,
    /// Tokens per system prompt.
    #[arg(long, default_value_t = 1024)]
    system_len: usize,
    /// Conversations.
    #[arg(long, default_value_t = 96)]
    conversations: usize,
    /// Turns per conversation.
    #[arg(long, default_value_t = 6)]
    turns: usize,
    /// Tokens per user message.
    #[arg(long, default_value_t = 64)]
    user_len: usize,
    /// Tokens per answer.
    #[arg(long, default_value_t = 32)]
    output_len: usize,
    /// Conversations in flight at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Mean pause between a conversation's turns (the user reading and typing), in ms:
    /// drawn uniformly from `[0, 2·think_ms]`, seeded.
    #[arg(long, default_value_t = 100)]
    think_ms: u64,
    /// KV-cache blocks per engine (`--num-gpu-blocks-override`).
    #[arg(long, default_value_t = 4096)]
    blocks: usize,
    /// Tokens per block.
    #[arg(long, default_value_t = 16)]
    block_size: usize,
    /// Decode speed per request, tokens per second.
    #[arg(long, default_value_t = 100.0)]
    decode_rate: f64,
    /// Prefill speed, prompt tokens per second per engine.
    #[arg(long, default_value_t = 50_000.0)]
    prefill_rate: f64,
    /// Prefix routing's load slack (score units, about one request each).
    #[arg(long, default_value_t = vllm_client::client::PREFIX_AFFINITY_SLACK)]
    load_slack: f64,
    /// Prefix routing also expects an engine to hold a prompt's blocks for this long
    /// after sending it a request (`PrefixRouting::with_prediction`); 0: off.
    #[arg(long, default_value_t = 0)]
    predict_ms: u64,
    /// Seed of the workload.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// A tiny deterministic generator (splitmix64), so the workload is the same per mode.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn tokens(&mut self, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| 100 + (self.next() % 30_000) as u32)
            .collect()
    }
}

/// One conversation's script: its system prompt and user messages.
struct Script {
    system: usize,
    users: Vec<Vec<u32>>,
}

/// One request's measurements.
#[derive(Debug, Clone, Copy)]
struct Sample {
    turn: usize,
    prompt: usize,
    cached: usize,
    ttft: Duration,
    engine: usize,
}

/// A mode's results.
struct Report {
    mode: &'static str,
    samples: Vec<Sample>,
    elapsed: Duration,
    routing: Option<vllm_client::client::PrefixRoutingStats>,
    /// Time spent hashing prompts and reading the index, in all.
    lookup: Duration,
}

/// A port `p` with `p..p + n` free (data-parallel ranks offset the event ports).
fn free_ports(n: u16) -> Result<u16> {
    for _ in 0..100 {
        let base = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        if base.checked_add(n).is_some()
            && (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok())
        {
            return Ok(base);
        }
    }
    bail!("no run of {n} free ports")
}

async fn run(
    args: &Args,
    prefix: bool,
    systems: &[Vec<u32>],
    scripts: &[Script],
) -> Result<Report> {
    let n = args.engines;
    let engine = MockConfig {
        output: OutputMode::Random { seed: 1 },
        tokens_per_second: args.decode_rate,
        prefill_tokens_per_second: args.prefill_rate,
        block_size: args.block_size,
        num_gpu_blocks_override: Some(args.blocks),
        python_hash_seed: Some("0".into()),
        data_parallel_size: n as usize,
        kv_events: Some(KVEventsConfig {
            enable_kv_cache_events: true,
            publisher: Some("zmq".into()),
            endpoint: format!("tcp://*:{}", free_ports(n)?),
            replay_endpoint: Some(format!("tcp://*:{}", free_ports(n)?)),
            topic: "kv".into(),
            ..KVEventsConfig::default()
        }),
        ..MockConfig::default()
    };
    let port = free_ports(1)?;
    let mut config =
        ClientConfig::handshake("127.0.0.1", port, n).with_ready_timeout(Duration::from_secs(30));
    if prefix {
        let mut routing =
            PrefixRouting::new(HashAlgo::Sha256, NoneHashSeed::PythonHashSeed("0".into()))
                .with_load_slack(args.load_slack);
        if args.predict_ms > 0 {
            routing = routing.with_prediction(Duration::from_millis(args.predict_ms));
        }
        config = config.with_prefix_routing(routing);
    }
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let engines: Vec<MockEngineHandle> = (0..n)
        .map(|rank| MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), rank, engine.clone()))
        .collect();
    let client = connecting.await?.context("engines register")?;

    let next = Arc::new(AtomicUsize::new(0));
    let lookup_ns = Arc::new(AtomicU64::new(0));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let workers = (0..args.concurrency.max(1)).map(|_| {
        let (client, next, samples) = (client.clone(), next.clone(), samples.clone());
        let lookup_ns = lookup_ns.clone();
        async move {
            loop {
                let c = next.fetch_add(1, Ordering::Relaxed);
                let Some(script) = scripts.get(c) else {
                    return Ok::<_, anyhow::Error>(());
                };
                let mut think = Rng(args.seed ^ (c as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
                let mut prompt = systems[script.system].clone();
                for (turn, user) in script.users.iter().enumerate() {
                    prompt.extend(user);
                    let params = SamplingParams {
                        max_tokens: Some(args.output_len as i64),
                        ignore_eos: true,
                        ..SamplingParams::default()
                    };
                    let request =
                        EngineCoreRequest::new(format!("c{c}-t{turn}"), prompt.clone(), params);
                    if prefix {
                        // What `generate` does before routing, timed on its own.
                        let start = Instant::now();
                        let _ = client.prefix_matches(&request);
                        let spent = start.elapsed().as_nanos() as u64;
                        lookup_ns.fetch_add(spent, Ordering::Relaxed);
                    }
                    let before = client.inflight();
                    let sent = Instant::now();
                    let mut stream = client.generate(request).await?;
                    let after = client.inflight();
                    let engine = (0..after.len())
                        .find(|&i| after[i] > before[i])
                        .unwrap_or(0);
                    let mut ttft = None;
                    let mut cached = 0;
                    let mut answer = Vec::new();
                    while let Some(output) = stream.next().await {
                        let output = output?;
                        if let Some(prefill) = &output.prefill_stats {
                            cached = prefill.num_cached_tokens as usize;
                        }
                        if ttft.is_none() && !output.new_token_ids.is_empty() {
                            ttft = Some(sent.elapsed());
                        }
                        answer.extend(output.new_token_ids);
                    }
                    samples.lock().await.push(Sample {
                        turn,
                        prompt: prompt.len(),
                        cached,
                        ttft: ttft.unwrap_or_default(),
                        engine,
                    });
                    prompt.extend(answer);
                    if args.think_ms > 0 && turn + 1 < script.users.len() {
                        let pause = think.next() % (2 * args.think_ms + 1);
                        tokio::time::sleep(Duration::from_millis(pause)).await;
                    }
                }
            }
        }
    });
    for result in futures::future::join_all(workers).await {
        result?;
    }
    let elapsed = started.elapsed();
    let routing = client.prefix_routing_stats();
    client.shutdown();
    for engine in engines {
        let _ = engine.shutdown().await;
    }
    let samples = std::mem::take(&mut *samples.lock().await);
    Ok(Report {
        mode: match (prefix, args.predict_ms > 0) {
            (false, _) => "least-loaded",
            (true, false) => "prefix-aware",
            (true, true) => "prefix-aware + predictions",
        },
        samples,
        elapsed,
        routing,
        lookup: Duration::from_nanos(lookup_ns.load(Ordering::Relaxed)),
    })
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn print(reports: &[Report], engines: usize) {
    println!(
        "| routing | requests | hit rate (all) | hit rate (turns ≥ 2) | TTFT mean ms | TTFT p50 | TTFT p90 | TTFT p99 | wall s | requests per engine |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in reports {
        let rate = |filter: &dyn Fn(&Sample) -> bool| {
            let (cached, prompt) = r
                .samples
                .iter()
                .filter(|s| filter(s))
                .fold((0, 0), |(c, p), s| (c + s.cached, p + s.prompt));
            100.0 * cached as f64 / prompt.max(1) as f64
        };
        let mut ttfts: Vec<Duration> = r.samples.iter().map(|s| s.ttft).collect();
        ttfts.sort();
        let mean =
            ttfts.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3 / ttfts.len().max(1) as f64;
        let mut per_engine = vec![0; engines];
        for s in &r.samples {
            if let Some(n) = per_engine.get_mut(s.engine) {
                *n += 1;
            }
        }
        println!(
            "| {} | {} | {:.1}% | {:.1}% | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:?} |",
            r.mode,
            r.samples.len(),
            rate(&|_| true),
            rate(&|s| s.turn > 0),
            mean,
            percentile(&ttfts, 0.5),
            percentile(&ttfts, 0.9),
            percentile(&ttfts, 0.99),
            r.elapsed.as_secs_f64(),
            per_engine,
        );
    }
    for r in reports {
        if let Some(stats) = &r.routing {
            let prompts = r.samples.len().max(1);
            let tokens: usize = r.samples.iter().map(|s| s.prompt).sum();
            println!(
                "\n{}: routed by prefix {}, load fallbacks {}, no match {}, view clears {:?}; \
                 hashing + index lookup {:.1} µs per request (prompts of {} tokens on average)",
                r.mode,
                stats.routed_by_prefix,
                stats.load_fallbacks,
                stats.no_match,
                stats.view_clears,
                r.lookup.as_secs_f64() * 1e6 / prompts as f64,
                tokens / prompts,
            );
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    if args.engines == 0 || args.system_prompts == 0 {
        bail!("--engines and --system-prompts must be at least 1");
    }
    let mut rng = Rng(args.seed);
    let systems: Vec<Vec<u32>> = (0..args.system_prompts)
        .map(|_| rng.tokens(args.system_len))
        .collect();
    let scripts: Vec<Script> = (0..args.conversations)
        .map(|_| Script {
            system: (rng.next() % args.system_prompts as u64) as usize,
            users: (0..args.turns).map(|_| rng.tokens(args.user_len)).collect(),
        })
        .collect();
    let modes: &[bool] = match args.mode {
        Mode::LeastLoaded => &[false],
        Mode::Prefix => &[true],
        Mode::Both => &[false, true],
    };
    let mut reports = Vec::new();
    for &prefix in modes {
        reports.push(run(&args, prefix, &systems, &scripts).await?);
    }
    print(&reports, args.engines as usize);
    Ok(())
}
