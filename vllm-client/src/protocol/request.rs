//! `EngineCoreRequest`.

use super::{LoRARequest, NdArray, SamplingParams};
use crate::wire::{Map, Value};

wire_array! {
    /// A request sent to an engine (ADD): 22 fields in vLLM 0.33.0.
    pub struct EngineCoreRequest {
        /// Engine-internal request id (unique per engine).
        pub request_id: String = String::new(),
        /// Prompt token ids.
        pub prompt_token_ids: Option<Vec<u32>> = None,
        /// Multimodal features (kept undecoded).
        pub mm_features: Option<Value> = None,
        /// Sampling parameters (generation requests).
        pub sampling_params: Option<SamplingParams> = None,
        /// Pooling parameters (kept undecoded).
        pub pooling_params: Option<Value> = None,
        /// Arrival time, seconds since the epoch.
        pub arrival_time: f64 = 0.0,
        /// LoRA adapter.
        pub lora_request: Option<LoRARequest> = None,
        /// Prefix-cache salt.
        pub cache_salt: Option<String> = None,
        /// Engine to route to, if fixed.
        pub data_parallel_rank: Option<i64> = None,
        /// Prompt embeddings tensor.
        pub prompt_embeds: Option<NdArray> = None,
        /// Per-position token/embedding mask.
        pub prompt_is_token_ids: Option<Vec<bool>> = None,
        /// The frontend that gets the outputs.
        pub client_index: i64 = 0,
        /// Data-parallel wave the request belongs to.
        pub current_wave: u64 = 0,
        /// Scheduling priority (lower first).
        pub priority: i64 = 0,
        /// Tracing headers.
        pub trace_headers: Option<Map<String, String>> = None,
        /// Streaming-input session.
        pub resumable: bool = false,
        /// The user-facing request id.
        pub external_req_id: Option<String> = None,
        /// Whether reasoning already ended in the prompt.
        pub reasoning_ended: Option<bool> = None,
        /// Reasoning-parser arguments.
        pub reasoning_parser_kwargs: Option<Value> = None,
        /// Add then abort at once (KV-transfer cleanup).
        pub abort_immediately: bool = false,
        /// Session id.
        pub session_id: Option<String> = None,
        /// KV cache hints (kept undecoded).
        pub kv_hints: Option<Value> = None,
    }
}

impl EngineCoreRequest {
    /// A generation request for `prompt_token_ids` with `sampling_params`, arriving now.
    pub fn new(
        request_id: impl Into<String>,
        prompt_token_ids: Vec<u32>,
        sampling_params: SamplingParams,
    ) -> Self {
        let arrival_time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Self {
            request_id: request_id.into(),
            prompt_token_ids: Some(prompt_token_ids),
            sampling_params: Some(sampling_params),
            arrival_time,
            ..Self::default()
        }
    }

    /// The pre-aborted request vLLM's frontend sends when a prefill/decode request is
    /// rejected before it reaches the engine (`AsyncLLM.notify_kv_transfer_request_rejected`
    /// in vLLM 0.33.0): prompt `[0]`, `max_tokens = 1`, `watermarking = false`, the
    /// request's `kv_transfer_params` in `extra_args` and
    /// [`abort_immediately`](Self::abort_immediately) set. The engine adds it to its
    /// scheduler and aborts it at once, so that its KV connector's `request_finished`
    /// frees what it pinned for the request (e.g. the prefill blocks a NIXL decode
    /// instance would have pulled); nothing is generated and no output comes back.
    ///
    /// `kv_transfer_params` is the request's map as the client sent it;
    /// `data_parallel_rank` the engine the request was pinned to, if any.
    pub fn kv_transfer_rejected(
        request_id: impl Into<String>,
        kv_transfer_params: Value,
        data_parallel_rank: Option<i64>,
    ) -> Self {
        let mut params = SamplingParams {
            max_tokens: Some(1),
            extra_args: Some(Value::Map(vec![(
                Value::Str("kv_transfer_params".into()),
                kv_transfer_params,
            )])),
            watermarking: Some(false),
            ..SamplingParams::default()
        };
        params.apply_post_init();
        Self {
            data_parallel_rank,
            abort_immediately: true,
            ..Self::new(request_id, vec![0], params)
        }
    }
}
