//! What the mock engine generates and how fast.

use std::time::Duration;

use crate::kv_events::{HashAlgo, KVEventsConfig};

/// Where the mock engine's output tokens come from.
///
/// Whatever the source, a model's behaviour is imitated: the text ends with the EOS token
/// (when one is known), `min_tokens` suppresses stop tokens, and generation continues past
/// the end of the text (from its start again) when EOS is ignored or suppressed.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputMode {
    /// These token ids (a fixed text already tokenized with the model's tokenizer).
    FixedText(Vec<u32>),
    /// The request's own prompt tokens.
    Echo,
    /// Uniform random tokens below [`MockConfig::vocab_size`], deterministic for a given
    /// seed and request (the request's `seed` sampling parameter, when set, is mixed in).
    Random {
        /// Seed of the engine.
        seed: u64,
    },
}

/// Configuration of a [`crate::mock::MockEngine`].
///
/// ```
/// use vllm_client::mock::{MockConfig, OutputMode};
///
/// let config = MockConfig {
///     output: OutputMode::FixedText(vec![9707, 11, 1879, 0]),
///     eos_token_id: Some(151645),
///     tokens_per_second: 50.0,
///     prefill_tokens_per_second: 10_000.0,
///     ..MockConfig::default()
/// };
/// assert_eq!(config.step_interval().as_millis(), 20);
/// // A 2,000-token prompt with 1,500 tokens cached: 500 computed, 50 ms.
/// assert_eq!(config.prefill_time(2_000 - 1_500).as_millis(), 50);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MockConfig {
    /// The output tokens.
    pub output: OutputMode,
    /// The model's EOS token, emitted after the fixed text or echoed prompt. When `None`,
    /// the request's `_eos_token_id` (set by the frontend from the tokenizer) is used.
    pub eos_token_id: Option<u32>,
    /// Tokens per second per request; `0` generates as fast as possible.
    pub tokens_per_second: f64,
    /// Prompt tokens the engine computes per second in prefill; `0` makes prefill free.
    /// When set, a step that admits requests first takes `uncached prompt tokens /
    /// rate` (tokens served from the prefix cache cost nothing), delaying every running
    /// request's next token as a real engine's prefill does: time to first token then
    /// depends on prefix-cache hits.
    pub prefill_tokens_per_second: f64,
    /// Tokens generated per request in each engine step, hence per output message
    /// (like multi-token steps); at least 1.
    pub tokens_per_output: usize,
    /// Vocabulary size: bounds random tokens and the alternatives in logprobs.
    pub vocab_size: u32,
    /// Maximum sequence length (prompt + output); longer requests finish with `length`.
    pub max_model_len: usize,
    /// Requests generating at once; further ones wait (and show as waiting in the stats).
    pub max_num_seqs: usize,
    /// Cap on the top-k logprobs a request gets (`logprobs = -1` means this many).
    pub max_logprobs: usize,
    /// Data-parallel size reported in the ready response.
    pub data_parallel_size: usize,
    /// Data-parallel MoE mode (`DPEngineCoreProc`): the engine runs in waves, reports
    /// `wave_complete` when it goes idle after work and honours `START_DP_WAVE`.
    pub dp_waves: bool,
    /// Report the ids of finished requests (aborted ones included) in
    /// `finished_requests`, as vLLM engines do behind a DP coordinator.
    pub include_finished_set: bool,
    /// How long the engine waits for the frontend's answer to HELLO.
    pub handshake_timeout: Duration,
    /// vLLM's `--enable-prefix-caching` (on by default, as in vLLM): with KV events on,
    /// the engine keeps a prefix cache and publishes its changes.
    pub enable_prefix_caching: bool,
    /// vLLM's `--block-size`: tokens per KV-cache block.
    pub block_size: usize,
    /// vLLM's `--num-gpu-blocks-override`: the cache's size in blocks (default: room for
    /// `max_num_seqs` sequences of `max_model_len` tokens).
    pub num_gpu_blocks_override: Option<usize>,
    /// vLLM's `--prefix-caching-hash-algo` (needs the matching hash feature).
    pub prefix_caching_hash_algo: HashAlgo,
    /// The `PYTHONHASHSEED` the engine behaves as if started with (NONE_HASH's seed);
    /// `None` is vLLM's behaviour without it (sha256 only).
    pub python_hash_seed: Option<String>,
    /// vLLM's `--kv-events-config`: publish KV-cache events on ZMQ (endpoints offset by
    /// the engine's data-parallel rank, as vLLM does).
    pub kv_events: Option<KVEventsConfig>,
    /// LoRA adapter slots (`--enable-lora`); `None` refuses LoRA calls as vLLM does
    /// without it.
    pub lora: Option<MockLora>,
    /// The weight-transfer backend the engine reports at its handshake (vLLM's
    /// `--weight-transfer-config '{"backend": …}'`), which frontends such as vllm-rs's
    /// gRPC server require before the weight-transfer calls. The mock's worker follows
    /// vLLM's session rules whatever it reports.
    pub weight_transfer_backend: Option<String>,
    /// Whether the engine reports sleep mode at its handshake (vLLM's
    /// `--enable-sleep-mode`; on by default here), which frontends such as vllm-rs's
    /// gRPC server require before `Sleep` and `WakeUp`. The mock sleeps and wakes on
    /// request whatever it reports.
    pub enable_sleep_mode: bool,
    /// A KV connector for prefill/decode disaggregation (vLLM's
    /// `--kv-transfer-config '{"kv_connector": …}'`), emulated: a request whose
    /// `extra_args["kv_transfer_params"]` asks for a remote decode (`do_remote_decode`)
    /// finishes with the parameters a decode instance needs, shaped as vLLM's
    /// `NixlConnector.request_finished` returns them (this engine's blocks, id and
    /// side channel), so frontends can be tested passing them through.
    pub kv_connector: Option<String>,
}

/// LoRA settings of the mock engine, vLLM's `--max-loras` and `--max-cpu-loras`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MockLora {
    /// Adapters in one batch (`--max-loras`, vLLM's default 1).
    pub max_loras: usize,
    /// Adapters kept loaded (`--max-cpu-loras`; default `max_loras`); the least
    /// recently used unpinned one is evicted for a new one.
    pub max_cpu_loras: Option<usize>,
}

impl Default for MockLora {
    fn default() -> Self {
        Self {
            max_loras: 1,
            max_cpu_loras: None,
        }
    }
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            output: OutputMode::Random { seed: 0 },
            eos_token_id: None,
            tokens_per_second: 0.0,
            prefill_tokens_per_second: 0.0,
            tokens_per_output: 1,
            vocab_size: 32_000,
            max_model_len: 32_768,
            max_num_seqs: 256,
            max_logprobs: 20,
            data_parallel_size: 1,
            dp_waves: false,
            include_finished_set: false,
            handshake_timeout: Duration::from_secs(300),
            lora: None,
            enable_prefix_caching: true,
            block_size: 16,
            num_gpu_blocks_override: None,
            prefix_caching_hash_algo: HashAlgo::Sha256,
            python_hash_seed: None,
            kv_events: None,
            weight_transfer_backend: None,
            enable_sleep_mode: true,
            kv_connector: None,
        }
    }
}

impl MockConfig {
    /// KV-cache blocks: the override, or room for `max_num_seqs` sequences of
    /// `max_model_len` tokens.
    pub fn num_gpu_blocks(&self) -> usize {
        self.num_gpu_blocks_override.unwrap_or_else(|| {
            self.max_model_len
                .saturating_mul(self.max_num_seqs.max(1))
                .div_ceil(self.block_size.max(1))
        })
    }

    /// The KV events configuration engine `rank` publishes with, when it publishes.
    pub fn kv_events_for_rank(&self, rank: u16) -> Option<KVEventsConfig> {
        let config = self.kv_events.as_ref()?;
        let enabled =
            config.enable_kv_cache_events && config.publisher.as_deref().unwrap_or("zmq") == "zmq";
        if !enabled {
            return None;
        }
        let mut config = config.for_rank(u32::from(rank)).ok()?;
        config.publisher = Some("zmq".to_owned());
        Some(config)
    }
    /// How long the prefill of `tokens` uncomputed prompt tokens takes
    /// ([`MockConfig::prefill_tokens_per_second`]).
    pub fn prefill_time(&self, tokens: usize) -> Duration {
        let rate = self.prefill_tokens_per_second;
        if tokens > 0 && rate > 0.0 && rate.is_finite() {
            Duration::from_secs_f64(tokens as f64 / rate)
        } else {
            Duration::ZERO
        }
    }

    /// Time between two engine steps: `tokens_per_output / tokens_per_second`, zero when
    /// the rate is unlimited.
    pub fn step_interval(&self) -> Duration {
        if self.tokens_per_second > 0.0 && self.tokens_per_second.is_finite() {
            Duration::from_secs_f64(self.tokens_per_output.max(1) as f64 / self.tokens_per_second)
        } else {
            Duration::ZERO
        }
    }
}
