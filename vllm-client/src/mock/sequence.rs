//! One request in generation: where its tokens come from, when it stops, its logprobs.
//!
//! The stop rules are vLLM 0.33.0's (`vllm/v1/core/sched/utils.py::check_stop`, in that
//! order): the request's EOS token (`_eos_token_id`, absent with `ignore_eos`), then
//! `stop_token_ids` (reported as the stop reason), then the length limits (`max_tokens`,
//! `max_model_len`). `min_tokens` is a logits mask in vLLM: until that many tokens exist,
//! no token of `_all_stop_token_ids` can be sampled, so the mock skips them in its source.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::protocol::{
    EngineCoreEvent, EngineCoreEventType, EngineCoreOutput, EngineCoreRequest, FinishReason,
    LogprobsLists, LogprobsTensors, PrefillStats, SamplingParams, StopReason,
};

use super::{MockConfig, OutputMode};
use crate::Value;

/// How many candidates are tried before a suppressed token is replaced by a filler.
const MAX_SUPPRESSED_DRAWS: usize = 64;

/// The token stream a request draws from, before stop tokens are suppressed.
enum Source {
    /// A fixed text or the echoed prompt, followed by the model's EOS, cycling.
    Script {
        tokens: Arc<[u32]>,
        eos: Option<u32>,
        cursor: usize,
    },
    /// Seeded uniform random tokens.
    Random { rng: Box<StdRng>, vocab_size: u32 },
}

impl Source {
    fn next(&mut self) -> Option<u32> {
        match self {
            Source::Script {
                tokens,
                eos,
                cursor,
            } => {
                let period = tokens.len() + usize::from(eos.is_some());
                if period == 0 {
                    return None;
                }
                let at = *cursor % period;
                *cursor = at + 1;
                tokens.get(at).copied().or(*eos)
            }
            Source::Random { rng, vocab_size } => Some(rng.random_range(0..(*vocab_size).max(1))),
        }
    }
}

/// The sampling parameters the mock honours, read once from the request.
struct Rules {
    /// `_eos_token_id`: finishes the request (absent with `ignore_eos`).
    eos_token_id: Option<u32>,
    /// `stop_token_ids`: finish the request with the token as stop reason.
    stop_token_ids: Vec<u32>,
    /// `_all_stop_token_ids` ∪ `stop_token_ids` ∪ EOS: masked until `min_tokens`.
    suppressed: Vec<u32>,
    min_tokens: usize,
    max_tokens: Option<usize>,
    /// Top-k logprobs per token, when requested.
    logprobs: Option<usize>,
    /// Top-k logprobs per prompt token, when requested.
    prompt_logprobs: Option<usize>,
}

impl Rules {
    fn new(params: &SamplingParams, model_eos: Option<u32>, max_logprobs: usize) -> Self {
        let id = |v: &i64| u32::try_from(*v).ok();
        let eos_token_id = params.eos_token_id.as_ref().and_then(id);
        let stop_token_ids: Vec<u32> = params.stop_token_ids.iter().filter_map(id).collect();
        let mut suppressed: Vec<u32> = params.all_stop_token_ids.iter().filter_map(id).collect();
        suppressed.extend(stop_token_ids.iter().copied());
        suppressed.extend(eos_token_id);
        if !params.ignore_eos {
            suppressed.extend(model_eos);
        }
        Self {
            eos_token_id,
            stop_token_ids,
            suppressed,
            min_tokens: usize::try_from(params.min_tokens).unwrap_or(0),
            max_tokens: params.max_tokens.map(|m| usize::try_from(m).unwrap_or(0)),
            logprobs: params
                .logprobs
                .map(|k| usize::try_from(k).unwrap_or(max_logprobs).min(max_logprobs)),
            prompt_logprobs: params
                .prompt_logprobs
                .map(|k| usize::try_from(k).unwrap_or(max_logprobs).min(max_logprobs)),
        }
    }
}

/// A request the mock engine is generating for.
pub(crate) struct Sequence {
    /// The request id.
    pub request_id: String,
    /// The frontend that gets the outputs.
    pub client_index: usize,
    prompt_len: usize,
    /// Prompt tokens served from the prefix cache.
    pub cached_tokens: usize,
    /// The prompt, kept until its logprobs are sent (only when they were asked for).
    prompt: Option<Vec<u32>>,
    generated: usize,
    source: Source,
    rules: Rules,
    vocab_size: u32,
    /// Lifecycle events not yet reported (sent with the next output, as vLLM does).
    events: Vec<EngineCoreEvent>,
    /// The emulated KV connector's answer for a prefill-only request
    /// ([`MockConfig::kv_connector`]): set on the finishing output.
    remote_decode: Option<Value>,
    /// A decode request's `kv_transfer_params` while its KV cache is still to be pulled
    /// from the prefill instance (`do_remote_prefill`, with a KV connector): cleared
    /// when the request is scheduled (the connector then pulls the blocks). A request
    /// that finishes with it still set makes the connector free the remote blocks.
    pub remote_prefill: Option<Value>,
}

impl Sequence {
    /// Starts generation for `request`. `text` is the configured fixed text, shared.
    pub fn new(
        request: EngineCoreRequest,
        client_index: usize,
        config: &MockConfig,
        text: &Arc<[u32]>,
    ) -> Self {
        let params = request.sampling_params.unwrap_or_default();
        let prompt: Vec<u32> = request.prompt_token_ids.unwrap_or_default();
        // The model's EOS: configured, or the tokenizer's as the frontend sent it.
        let model_eos = config
            .eos_token_id
            .or_else(|| params.eos_token_id.and_then(|e| u32::try_from(e).ok()));
        let source = match &config.output {
            OutputMode::FixedText(_) => Source::Script {
                tokens: text.clone(),
                eos: model_eos,
                cursor: 0,
            },
            OutputMode::Echo => Source::Script {
                tokens: prompt.as_slice().into(),
                eos: model_eos,
                cursor: 0,
            },
            OutputMode::Random { seed } => {
                let request_seed = params
                    .seed
                    .map_or_else(|| fnv1a(request.request_id.as_bytes()), |s| s as u64);
                Source::Random {
                    rng: Box::new(StdRng::seed_from_u64(seed ^ request_seed)),
                    vocab_size: config.vocab_size,
                }
            }
        };
        let rules = Rules::new(&params, model_eos, config.max_logprobs);
        let kv_transfer_params = params
            .extra_args
            .as_ref()
            .and_then(|extra| extra.get("kv_transfer_params"));
        // NixlConnector's test: `params.get("do_remote_prefill")`, Python-truthy.
        let remote_prefill = kv_transfer_params
            .filter(|kv| {
                config.kv_connector.is_some()
                    && kv.get("do_remote_prefill").is_some_and(Value::is_truthy)
            })
            .cloned();
        let remote_decode = config
            .kv_connector
            .as_ref()
            .filter(|_| {
                params
                    .extra_args
                    .as_ref()
                    .and_then(|extra| extra.get("kv_transfer_params"))
                    .and_then(|kv| kv.get("do_remote_decode"))
                    .and_then(Value::as_bool)
                    == Some(true)
            })
            .map(|_| remote_decode_params(&request.request_id, prompt.len(), config));
        Self {
            request_id: request.request_id,
            client_index,
            prompt_len: prompt.len(),
            cached_tokens: 0,
            prompt: rules.prompt_logprobs.map(|_| prompt),
            generated: 0,
            source,
            rules,
            vocab_size: config.vocab_size.max(1),
            events: Vec::new(),
            remote_decode,
            remote_prefill,
        }
    }

    /// Records a lifecycle event at engine time `timestamp`.
    pub fn record(&mut self, event_type: EngineCoreEventType, timestamp: f64) {
        self.events.push(EngineCoreEvent {
            event_type,
            timestamp,
        });
    }

    /// Prompt tokens the engine has to compute (not served from the cache), while the
    /// prefill is still to come.
    pub fn uncached_prompt_tokens(&self) -> usize {
        if self.generated == 0 {
            self.prompt_len.saturating_sub(self.cached_tokens)
        } else {
            0
        }
    }

    /// The prompt's length.
    pub fn prompt_len(&self) -> usize {
        self.prompt_len
    }

    /// Prompt plus generated tokens: what the request holds in the KV cache.
    pub fn num_tokens(&self) -> usize {
        self.prompt_len + self.generated
    }

    /// Generates up to `n` tokens (fewer when the request finishes) as one output.
    pub fn step(&mut self, n: usize, max_model_len: usize) -> EngineCoreOutput {
        let mut output = EngineCoreOutput {
            request_id: self.request_id.clone(),
            events: (!self.events.is_empty()).then(|| std::mem::take(&mut self.events)),
            // The first output reports the prefill, as vLLM's scheduler does (hits come
            // from the prefix cache the mock keeps when it publishes KV events).
            prefill_stats: (self.generated == 0).then(|| {
                let cached = self.cached_tokens.min(self.prompt_len);
                Box::new(PrefillStats {
                    num_prompt_tokens: self.prompt_len as i64,
                    num_computed_tokens: (self.prompt_len - cached) as i64,
                    num_cached_tokens: cached as i64,
                    num_local_cached_tokens: cached as i64,
                    ..PrefillStats::default()
                })
            }),
            ..EngineCoreOutput::default()
        };
        if let (Some(prompt), Some(k)) = (self.prompt.take(), self.rules.prompt_logprobs) {
            // As vLLM's model runner: once the prefill completes, one row per prompt
            // token after the first (the token itself, then the top-k).
            let rows: Vec<Vec<(i32, f32)>> = prompt
                .iter()
                .enumerate()
                .skip(1)
                .map(|(i, &token)| logprob_row(token, i, k, self.vocab_size))
                .collect();
            let ranks = vec![1; rows.len()];
            output.new_prompt_logprobs_tensors =
                Some(Box::new(LogprobsTensors::from_rows(&rows, &ranks)));
        }
        let mut rows = Vec::new();
        for _ in 0..n.max(1) {
            let token = self.next_token();
            if let Some(k) = self.rules.logprobs {
                rows.push(logprob_row(token, self.generated, k, self.vocab_size));
            }
            output.new_token_ids.push(token);
            self.generated += 1;
            if let Some((reason, stop)) = self.check_stop(token, max_model_len) {
                output.finish_reason = Some(reason);
                output.stop_reason = stop;
                output.kv_transfer_params = self.remote_decode.take().map(Box::new);
                break;
            }
        }
        if !rows.is_empty() {
            // The sampled token is always the most likely one: rank 1.
            output.new_logprobs = Some(Box::new(LogprobsLists::from_rows(
                &rows,
                &vec![1; rows.len()],
            )));
        }
        output
    }

    /// The next token, skipping stop tokens while `min_tokens` is not reached.
    fn next_token(&mut self) -> u32 {
        let masked = self.generated < self.rules.min_tokens;
        for _ in 0..MAX_SUPPRESSED_DRAWS {
            match self.source.next() {
                Some(t) if !(masked && self.rules.suppressed.contains(&t)) => return t,
                Some(_) => continue,
                None => break,
            }
        }
        // Nothing usable in the source: the smallest id that is not a stop token.
        (0..)
            .find(|t| !self.rules.suppressed.contains(t))
            .unwrap_or(0)
    }

    /// vLLM's `check_stop`, after `token` was appended.
    fn check_stop(
        &self,
        token: u32,
        max_model_len: usize,
    ) -> Option<(FinishReason, Option<StopReason>)> {
        if self.rules.eos_token_id == Some(token) {
            return Some((FinishReason::Stop, None));
        }
        if self.rules.stop_token_ids.contains(&token) {
            return Some((FinishReason::Stop, Some(StopReason::Token(token.into()))));
        }
        let max_tokens_reached = self.rules.max_tokens.is_some_and(|m| self.generated >= m);
        if self.num_tokens() >= max_model_len || max_tokens_reached {
            return Some((FinishReason::Length, None));
        }
        None
    }
}

/// A logprobs row for `token` at output position `position`: the sampled token first,
/// then the top-`k` (the sampled token being the most likely, then `k - 1` others). The
/// values are deterministic, decreasing, and their probabilities sum below 1.
fn logprob_row(token: u32, position: usize, k: usize, vocab_size: u32) -> Vec<(i32, f32)> {
    let noise = |salt: u64| {
        (mix(((token as u64) << 32) ^ position as u64 ^ salt) >> 40) as f32 / (1u64 << 24) as f32
    };
    let sampled = (token as i32, -(0.1 + 0.3 * noise(0)));
    let mut row = vec![sampled];
    if k > 0 {
        row.push(sampled);
    }
    for j in 1..k {
        let alternative = (token as u64 + j as u64 * 7919) % vocab_size as u64;
        row.push((
            alternative as i32,
            -(2.0 + j as f32 + 0.5 * noise(j as u64)),
        ));
    }
    row
}

/// SplitMix64 finaliser: a well-spread hash of a 64-bit value.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a: a stable hash of a request id, to seed its random tokens.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What vLLM's `NixlConnector.request_finished` returns for a prefill-only request
/// that finished normally: where a decode instance reads the prompt's KV blocks.
fn remote_decode_params(request_id: &str, prompt_len: usize, config: &MockConfig) -> Value {
    let block_size = config.block_size.max(1);
    let blocks = (0..prompt_len.div_ceil(block_size) as u64)
        .map(Value::UInt)
        .collect();
    let entries = [
        ("do_remote_prefill", Value::Bool(true)),
        ("do_remote_decode", Value::Bool(false)),
        ("remote_block_ids", Value::Array(vec![Value::Array(blocks)])),
        ("remote_engine_id", Value::Str("mock-engine".into())),
        ("remote_request_id", Value::Str(request_id.into())),
        ("remote_host", Value::Str("localhost".into())),
        ("remote_port", Value::UInt(5600)),
        ("tp_size", Value::UInt(1)),
        ("dcp_size", Value::UInt(1)),
        ("pp_size", Value::UInt(1)),
        ("remote_num_tokens", Value::UInt(prompt_len as u64)),
        ("remote_blocks_expiry_time", Value::Nil),
        ("remote_registration_generation", Value::UInt(0)),
        ("transfer_mode", Value::Str("pull".into())),
    ];
    Value::Map(
        entries
            .into_iter()
            .map(|(key, value)| (Value::Str(key.into()), value))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(params: SamplingParams, prompt: Vec<u32>) -> EngineCoreRequest {
        EngineCoreRequest::new("r", prompt, params)
    }

    fn run(config: &MockConfig, params: SamplingParams) -> (Vec<u32>, EngineCoreOutput) {
        let text: Arc<[u32]> = match &config.output {
            OutputMode::FixedText(t) => t.as_slice().into(),
            _ => Arc::from(Vec::new()),
        };
        let mut seq = Sequence::new(request(params, vec![5, 6, 7]), 0, config, &text);
        let mut tokens = Vec::new();
        loop {
            let out = seq.step(1, config.max_model_len);
            tokens.extend(&out.new_token_ids);
            if out.finished() {
                return (tokens, out);
            }
        }
    }

    fn fixed(text: &[u32], eos: u32) -> MockConfig {
        MockConfig {
            output: OutputMode::FixedText(text.to_vec()),
            eos_token_id: Some(eos),
            ..MockConfig::default()
        }
    }

    fn params_with_eos(eos: i64) -> SamplingParams {
        let mut p = SamplingParams::default();
        p.set_eos_token_id(eos);
        p
    }

    #[test]
    fn a_prefill_request_finishes_with_its_decode_parameters() {
        let kv = |remote_decode: bool| {
            let mut p = params_with_eos(99);
            let mut kv = std::collections::BTreeMap::new();
            kv.insert("do_remote_decode", Value::Bool(remote_decode));
            p.extra_args = Some(Value::Map(vec![(
                Value::Str("kv_transfer_params".into()),
                Value::Map(
                    kv.into_iter()
                        .map(|(k, v)| (Value::Str(k.into()), v))
                        .collect(),
                ),
            )]));
            p
        };
        let config = MockConfig {
            kv_connector: Some("NixlConnector".into()),
            block_size: 2,
            ..fixed(&[1, 2, 3], 99)
        };
        let (_, last) = run(&config, kv(true));
        let params = last.kv_transfer_params.expect("decode parameters");
        assert_eq!(params.get("do_remote_prefill"), Some(&Value::Bool(true)));
        assert_eq!(
            params.get("remote_request_id").and_then(Value::as_str),
            Some("r")
        );
        // Three prompt tokens in blocks of two: blocks 0 and 1.
        assert_eq!(
            params.get("remote_block_ids"),
            Some(&Value::Array(vec![Value::Array(vec![
                Value::UInt(0),
                Value::UInt(1)
            ])]))
        );
        // A decode-side request, or an engine without a connector: nothing.
        assert_eq!(run(&config, kv(false)).1.kv_transfer_params, None);
        assert_eq!(
            run(&fixed(&[1, 2, 3], 99), kv(true)).1.kv_transfer_params,
            None
        );
    }

    #[test]
    fn text_then_eos_stops() {
        let (tokens, last) = run(&fixed(&[1, 2, 3], 99), params_with_eos(99));
        assert_eq!(tokens, [1, 2, 3, 99]);
        assert_eq!(last.finish_reason, Some(FinishReason::Stop));
        assert_eq!(last.stop_reason, None);
    }

    #[test]
    fn min_tokens_suppresses_eos_and_ignore_eos_keeps_it() {
        let mut p = params_with_eos(99);
        p.min_tokens = 5;
        let (tokens, _) = run(&fixed(&[1, 2, 3], 99), p);
        assert_eq!(tokens, [1, 2, 3, 1, 2, 3, 99]);

        let mut p = SamplingParams {
            ignore_eos: true,
            max_tokens: Some(6),
            ..SamplingParams::default()
        };
        p.set_eos_token_id(99);
        let (tokens, last) = run(&fixed(&[1, 2, 3], 99), p);
        assert_eq!(tokens, [1, 2, 3, 99, 1, 2]);
        assert_eq!(last.finish_reason, Some(FinishReason::Length));
    }

    #[test]
    fn echo_repeats_the_prompt_then_eos() {
        let config = MockConfig {
            output: OutputMode::Echo,
            ..MockConfig::default()
        };
        // No configured EOS: the request's `_eos_token_id` ends the echo.
        let (tokens, last) = run(&config, params_with_eos(99));
        assert_eq!(tokens, [5, 6, 7, 99]);
        assert_eq!(last.finish_reason, Some(FinishReason::Stop));
    }

    #[test]
    fn stop_token_ids_report_the_token() {
        let mut p = params_with_eos(99);
        p.stop_token_ids = vec![2];
        p.apply_post_init();
        let (tokens, last) = run(&fixed(&[1, 2, 3], 99), p);
        assert_eq!(tokens, [1, 2]);
        assert_eq!(last.stop_reason, Some(StopReason::Token(2)));
    }

    #[test]
    fn random_is_deterministic_and_logprobs_are_distributions() {
        let config = MockConfig::default();
        let p = SamplingParams {
            logprobs: Some(3),
            max_tokens: Some(8),
            ..SamplingParams::default()
        };
        let (a, _) = run(&config, p.clone());
        let (b, last) = run(&config, p);
        assert_eq!(a, b);
        let lp = last.new_logprobs.expect("logprobs");
        lp.validate().expect("valid");
        assert_eq!(lp.cols(), 4);
        let total: f32 = (1..4).map(|c| lp.entry(0, c).expect("entry").1.exp()).sum();
        assert!(total < 1.0);
        assert_eq!(lp.entry(0, 0), lp.entry(0, 1));
    }

    #[test]
    fn prompt_logprobs_come_once_with_a_row_per_prompt_token_after_the_first() {
        let config = MockConfig::default();
        let p = SamplingParams {
            prompt_logprobs: Some(2),
            max_tokens: Some(3),
            ..SamplingParams::default()
        };
        let text: Arc<[u32]> = Arc::from(Vec::new());
        let mut seq = Sequence::new(request(p, vec![5, 6, 7]), 0, &config, &text);
        let first = seq.step(1, config.max_model_len);
        let tensors = first.new_prompt_logprobs_tensors.expect("prompt logprobs");
        tensors.validate().expect("valid");
        let lists = tensors.to_lists();
        assert_eq!((lists.rows(), lists.cols()), (2, 3));
        assert_eq!(lists.entry(0, 0).map(|e| e.0), Some(6));
        assert_eq!(lists.entry(1, 0).map(|e| e.0), Some(7));
        let second = seq.step(1, config.max_model_len);
        assert!(second.new_prompt_logprobs_tensors.is_none());
    }
}
