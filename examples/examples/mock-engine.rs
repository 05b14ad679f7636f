//! A mock vLLM engine that stands in for `vllm serve MODEL --headless` behind any vLLM
//! frontend (vLLM's own, `vllm-rs serve --python WRAPPER`, or one built on `vllm-client`).
//!
//! ```text
//! cargo run --release --example mock-engine -- MODEL --headless \
//!     --data-parallel-address 127.0.0.1 --data-parallel-rpc-port 5570 \
//!     --data-parallel-size 1 [--data-parallel-start-rank 0] [--mock-text "Hi there!"]
//! ```
//!
//! It starts one mock engine per local data-parallel rank (`--data-parallel-size-local`,
//! by default all ranks from the start rank on; only `--data-parallel-rank` if given;
//! vLLM's short forms `-dp`, `-dpn`, `-dpr`, `-dpl`, `-dpa`, `-dpp` work too); each dials
//! `tcp://ADDRESS:RPC_PORT` like a headless vLLM engine. Other vLLM flags are ignored
//! with a warning (an unknown `--flag` takes the next argument as its value unless that
//! starts with `-`), and a leading `-m vllm.entrypoints.cli.main serve` is skipped, so
//! the binary also works as the `PY` of a frontend that runs `PY -m … serve MODEL …`.
//!
//! SIGTERM or Ctrl-C shut the engines down (in-flight requests get abort outputs); SIGUSR1
//! makes them die as a crashing vLLM engine does (`ENGINE_CORE_DEAD`, exit status 1).
//!
//! LoRA: `--enable-lora [--max-loras N] [--max-cpu-loras N]` as in vLLM (adapter slots
//! with LRU eviction; no weights are read).
//!
//! KV-cache events: vLLM's `--kv-events-config JSON` with `--block-size`,
//! `--num-gpu-blocks-override`, `--prefix-caching-hash-algo` (and `PYTHONHASHSEED`) make
//! each engine keep a prefix cache and publish what a vLLM engine would (see
//! `vllm_client::mock`); `cargo run --example kv-events` reads them.
//!
//! Output: `--mock-text` (tokenized with MODEL's `tokenizer.json`), `--mock-token-ids`,
//! `--mock-output echo|random`; by default a short fixed text, or random tokens when
//! MODEL has no tokenizer.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{CommandFactory, Parser, ValueEnum};
use tokio::signal::unix::{SignalKind, signal};
use vllm_client::kv_events::{HashAlgo, KVEventsConfig};
use vllm_client::mock::{MockConfig, MockEngine, MockLora, OutputMode};

const DEFAULT_TEXT: &str = "Hello! I am a mock engine, answering without a GPU.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    /// `--mock-text` or `--mock-token-ids` (default text when neither is given).
    Text,
    /// The prompt, echoed.
    Echo,
    /// Seeded random tokens.
    Random,
}

/// The flags of `vllm serve --headless` that matter to the engine, and the mock's own.
#[derive(Debug, Parser)]
#[command(about = "Mock vLLM engine: stands in for `vllm serve MODEL --headless`")]
struct Args {
    /// Model name or directory (its tokenizer.json tokenizes --mock-text).
    model: String,
    /// Accepted for compatibility: the mock always runs headless.
    #[arg(long)]
    headless: bool,
    /// Host of the frontend's handshake socket.
    #[arg(long, default_value = "127.0.0.1")]
    data_parallel_address: String,
    /// Port of the frontend's handshake socket.
    #[arg(long)]
    data_parallel_rpc_port: u16,
    /// Data-parallel size (engines in the deployment).
    #[arg(long, default_value_t = 1)]
    data_parallel_size: u16,
    /// First data-parallel rank started here.
    #[arg(long, default_value_t = 0)]
    data_parallel_start_rank: u16,
    /// The one rank started here (external load balancing).
    #[arg(long, conflicts_with = "data_parallel_start_rank")]
    data_parallel_rank: Option<u16>,
    /// Engines started here (default: every rank from the start rank on).
    #[arg(long)]
    data_parallel_size_local: Option<u16>,
    /// Maximum sequence length.
    #[arg(long, default_value_t = 32_768)]
    max_model_len: usize,
    /// Maximum concurrent requests per engine.
    #[arg(long, default_value_t = 256)]
    max_num_seqs: usize,
    /// Where output tokens come from.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    mock_output: Output,
    /// Fixed output text, tokenized with MODEL's tokenizer.
    #[arg(long)]
    mock_text: Option<String>,
    /// Fixed output as comma-separated token ids.
    #[arg(long, value_delimiter = ',')]
    mock_token_ids: Option<Vec<u32>>,
    /// Seed of random outputs.
    #[arg(long, default_value_t = 0)]
    mock_seed: u64,
    /// Tokens per second per request (0: as fast as possible).
    #[arg(long, default_value_t = 0.0)]
    mock_tokens_per_second: f64,
    /// Prompt tokens computed per second in prefill (0: prefill is free). Tokens served
    /// from the prefix cache cost nothing, so time to first token follows cache hits.
    #[arg(long, default_value_t = 0.0)]
    mock_prefill_tokens_per_second: f64,
    /// Tokens per output message.
    #[arg(long, default_value_t = 1)]
    mock_tokens_per_output: usize,
    /// The model's EOS token (default: the one the frontend sends with each request).
    #[arg(long)]
    mock_eos_token_id: Option<u32>,
    /// Vocabulary size for random tokens and logprob alternatives.
    #[arg(long, default_value_t = 32_000)]
    mock_vocab_size: u32,
    /// Data-parallel MoE mode: run in waves (wave_complete, START_DP_WAVE).
    #[arg(long)]
    mock_dp_waves: bool,
    /// Accept LoRA adapters (add_lora, requests with a lora_request).
    #[arg(long)]
    enable_lora: bool,
    /// LoRA adapters in one batch.
    #[arg(long, default_value_t = 1)]
    max_loras: usize,
    /// LoRA adapters kept loaded (default: --max-loras); the least recently used
    /// unpinned one is evicted for a new one.
    #[arg(long)]
    max_cpu_loras: Option<usize>,
    /// Prefix caching is on by default, as in vLLM (accepted for compatibility).
    #[arg(long)]
    enable_prefix_caching: bool,
    /// Turns prefix caching off (no KV-cache events then).
    #[arg(long)]
    no_enable_prefix_caching: bool,
    /// Tokens per KV-cache block.
    #[arg(long, default_value_t = 16)]
    block_size: usize,
    /// KV-cache size in blocks (default: max-num-seqs sequences of max-model-len tokens).
    #[arg(long)]
    num_gpu_blocks_override: Option<usize>,
    /// Block hash algorithm: sha256, sha256_cbor, xxhash, xxhash_cbor.
    #[arg(long, default_value = "sha256")]
    prefix_caching_hash_algo: HashAlgo,
    /// KV-cache event publishing, as vLLM's JSON (`{"enable_kv_cache_events": true,
    /// "publisher": "zmq", "endpoint": "tcp://*:5557", "replay_endpoint": …, "topic": …}`).
    #[arg(long)]
    kv_events_config: Option<String>,
    /// Weight transfer, as vLLM's JSON (`{"backend": "nccl"}`): the engine reports the
    /// backend at its handshake (the weight-transfer calls work without it too).
    #[arg(long)]
    weight_transfer_config: Option<String>,
    /// A KV connector for prefill/decode disaggregation, as vLLM's JSON
    /// (`{"kv_connector": "NixlConnector", "kv_role": "kv_both"}`), emulated: a request
    /// with `kv_transfer_params: {"do_remote_decode": true}` finishes with the
    /// parameters its decode instance needs, shaped as NixlConnector's.
    #[arg(long)]
    kv_transfer_config: Option<String>,
}

/// `--weight-transfer-config`: the `backend` of vLLM's `WeightTransferConfig` JSON
/// (default `nccl`, as vLLM's).
fn weight_transfer_backend(json: &str) -> anyhow::Result<String> {
    let value: serde_json::Value =
        serde_json::from_str(json).context("--weight-transfer-config is not JSON")?;
    let object = value
        .as_object()
        .context("--weight-transfer-config must be a JSON object")?;
    match object.get("backend") {
        None => Ok("nccl".to_owned()),
        Some(serde_json::Value::String(backend)) => Ok(backend.clone()),
        Some(_) => anyhow::bail!("--weight-transfer-config: backend must be a string"),
    }
}

/// `--kv-transfer-config`: the `kv_connector` of vLLM's `KVTransferConfig` JSON.
fn kv_connector(json: &str) -> anyhow::Result<String> {
    let value: serde_json::Value =
        serde_json::from_str(json).context("--kv-transfer-config is not JSON")?;
    match value.get("kv_connector") {
        Some(serde_json::Value::String(connector)) => Ok(connector.clone()),
        _ => anyhow::bail!("--kv-transfer-config needs a \"kv_connector\" name"),
    }
}

/// `--kv-events-config`: vLLM's `KVEventsConfig` fields, unknown keys refused as vLLM does.
fn kv_events_config(json: &str) -> anyhow::Result<KVEventsConfig> {
    let value: serde_json::Value =
        serde_json::from_str(json).context("--kv-events-config is not JSON")?;
    let object = value
        .as_object()
        .context("--kv-events-config must be a JSON object")?;
    let mut config = KVEventsConfig::default();
    let text = |v: &serde_json::Value, key: &str| -> anyhow::Result<String> {
        v.as_str()
            .map(str::to_owned)
            .with_context(|| format!("--kv-events-config: {key} must be a string"))
    };
    let int = |v: &serde_json::Value, key: &str| -> anyhow::Result<i64> {
        v.as_i64()
            .with_context(|| format!("--kv-events-config: {key} must be an integer"))
    };
    for (key, v) in object {
        match key.as_str() {
            "enable_kv_cache_events" => {
                config.enable_kv_cache_events = v
                    .as_bool()
                    .context("--kv-events-config: enable_kv_cache_events must be a boolean")?
            }
            "publisher" if v.is_null() => config.publisher = None,
            "publisher" => config.publisher = Some(text(v, key)?),
            "endpoint" => config.endpoint = text(v, key)?,
            "replay_endpoint" if v.is_null() => config.replay_endpoint = None,
            "replay_endpoint" => config.replay_endpoint = Some(text(v, key)?),
            "buffer_steps" => config.buffer_steps = int(v, key)?,
            "hwm" => config.hwm = int(v, key)?,
            "max_queue_size" => config.max_queue_size = int(v, key)?,
            "topic" => config.topic = text(v, key)?,
            other => bail!("--kv-events-config: unknown field {other:?}"),
        }
    }
    // KVEventsConfig.__post_init__
    if config.publisher.is_none() {
        let publisher = if config.enable_kv_cache_events {
            "zmq"
        } else {
            "null"
        };
        config.publisher = Some(publisher.to_owned());
    }
    Ok(config)
}

/// vLLM's short forms of the data-parallel flags.
const SHORT_FLAGS: [(&str, &str); 6] = [
    ("-dp", "--data-parallel-size"),
    ("-dpn", "--data-parallel-rank"),
    ("-dpr", "--data-parallel-start-rank"),
    ("-dpl", "--data-parallel-size-local"),
    ("-dpa", "--data-parallel-address"),
    ("-dpp", "--data-parallel-rpc-port"),
];

/// Drops a leading `-m MODULE [serve]` and the flags this binary does not know, with a
/// warning, so that any `vllm serve` command line is accepted.
fn known_args(raw: Vec<String>) -> Vec<String> {
    let command = Args::command();
    let known: Vec<String> = command
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .chain(["--help".into(), "--version".into()])
        .collect();
    let mut raw = raw.into_iter().peekable();
    let mut args: Vec<String> = raw.next().into_iter().collect();
    if raw.peek().is_some_and(|a| a == "-m") {
        raw.next();
        raw.next();
        raw.next_if(|a| a == "serve");
    }
    while let Some(mut arg) = raw.next() {
        if let Some((_, long)) = SHORT_FLAGS.iter().find(|(short, _)| *short == arg) {
            arg = (*long).to_owned();
        }
        let name = arg.split('=').next().unwrap_or_default();
        if !arg.starts_with("--") || known.iter().any(|k| k == name) || arg == "-h" {
            args.push(arg);
            continue;
        }
        let value = if arg.contains('=') {
            None
        } else {
            raw.next_if(|v| !v.starts_with('-'))
        };
        tracing::warn!(
            flag = arg,
            ?value,
            "ignoring vLLM flag the mock engine does not use"
        );
    }
    args
}

fn tokenize(model: &str, text: &str) -> anyhow::Result<Vec<u32>> {
    let tokenizer = vllm_detok::HfTokenizer::from_dir(Path::new(model))
        .with_context(|| format!("loading {model}/tokenizer.json"))?;
    let encoding = tokenizer
        .inner()
        .encode(text, false)
        .map_err(|e| anyhow::anyhow!("tokenizing --mock-text: {e}"))?;
    Ok(encoding.get_ids().to_vec())
}

fn output_mode(args: &Args) -> anyhow::Result<OutputMode> {
    Ok(match args.mock_output {
        Output::Echo => OutputMode::Echo,
        Output::Random => OutputMode::Random {
            seed: args.mock_seed,
        },
        Output::Text => match (&args.mock_token_ids, &args.mock_text) {
            (Some(ids), _) => OutputMode::FixedText(ids.clone()),
            (None, Some(text)) => OutputMode::FixedText(tokenize(&args.model, text)?),
            (None, None) => match tokenize(&args.model, DEFAULT_TEXT) {
                Ok(ids) => OutputMode::FixedText(ids),
                Err(error) => {
                    tracing::warn!(%error, "no tokenizer for the default text; generating random tokens");
                    OutputMode::Random {
                        seed: args.mock_seed,
                    }
                }
            },
        },
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse_from(known_args(std::env::args().collect()));
    let config = MockConfig {
        output: output_mode(&args)?,
        eos_token_id: args.mock_eos_token_id,
        tokens_per_second: args.mock_tokens_per_second,
        prefill_tokens_per_second: args.mock_prefill_tokens_per_second,
        tokens_per_output: args.mock_tokens_per_output.max(1),
        vocab_size: args.mock_vocab_size,
        max_model_len: args.max_model_len,
        max_num_seqs: args.max_num_seqs,
        data_parallel_size: args.data_parallel_size.into(),
        dp_waves: args.mock_dp_waves,
        lora: args.enable_lora.then_some(MockLora {
            max_loras: args.max_loras,
            max_cpu_loras: args.max_cpu_loras,
        }),
        enable_prefix_caching: !args.no_enable_prefix_caching,
        block_size: args.block_size.max(1),
        num_gpu_blocks_override: args.num_gpu_blocks_override,
        prefix_caching_hash_algo: args.prefix_caching_hash_algo,
        // Like a vLLM engine, NONE_HASH follows this process's PYTHONHASHSEED.
        python_hash_seed: std::env::var("PYTHONHASHSEED").ok(),
        kv_events: args
            .kv_events_config
            .as_deref()
            .map(kv_events_config)
            .transpose()?,
        weight_transfer_backend: args
            .weight_transfer_config
            .as_deref()
            .map(weight_transfer_backend)
            .transpose()?,
        kv_connector: args
            .kv_transfer_config
            .as_deref()
            .map(kv_connector)
            .transpose()?,
        ..MockConfig::default()
    };
    let (start, local) = match args.data_parallel_rank {
        Some(rank) => (rank, 1),
        None => {
            let start = args.data_parallel_start_rank;
            let all_from_start = args.data_parallel_size.saturating_sub(start);
            (
                start,
                args.data_parallel_size_local.unwrap_or(all_from_start),
            )
        }
    };
    if local == 0 {
        bail!("no local data-parallel rank to start");
    }
    let address = format!(
        "tcp://{}:{}",
        args.data_parallel_address, args.data_parallel_rpc_port
    );
    let end = start
        .checked_add(local)
        .context("data-parallel rank out of range")?;
    tracing::info!(%address, ranks = ?(start..end), model = args.model, "starting mock engines");
    let engines: Vec<_> = (start..end)
        .map(|rank| MockEngine::spawn(address.clone(), rank, config.clone()))
        .collect();

    let mut terminate = signal(SignalKind::terminate())?;
    let mut die = signal(SignalKind::user_defined1())?;
    let stopped = async {
        while !engines.iter().any(|e| e.is_finished()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let dying = tokio::select! {
        _ = tokio::signal::ctrl_c() => false,
        _ = terminate.recv() => false,
        _ = die.recv() => true,
        () = stopped => false,
    };
    if dying {
        tracing::warn!("SIGUSR1: the engines die (ENGINE_CORE_DEAD)");
        engines.iter().for_each(|e| e.die());
    }
    let mut failed = dying;
    for engine in engines {
        let ended = if dying {
            engine.wait().await
        } else {
            engine.shutdown().await
        };
        if let Err(error) = ended {
            tracing::error!(%error, "mock engine failed");
            failed = true;
        }
    }
    if failed {
        bail!("mock engine stopped abnormally");
    }
    Ok(())
}
