//! Engine-to-frontend outputs.

use super::{LogprobsLists, LogprobsTensors, NdArray, SchedulerStats, UtilityOutput};
use crate::wire::{Decode, DecodeError, Encode, Map, Reader, Value, Writer};

wire_int_enum! {
    /// Why a request finished (`vllm.v1.engine.FinishReason`, an int on the wire).
    pub enum FinishReason {
        /// A stop token or stop string.
        Stop = 0,
        /// `max_tokens` or the model length.
        Length = 1,
        /// Aborted by the client.
        Abort = 2,
        /// A retryable request-level error.
        Error = 3,
        /// A repetitive pattern was detected.
        Repetition = 4,
    }
}

impl FinishReason {
    /// The OpenAI / vLLM string form (`"stop"`, `"length"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Abort => "abort",
            FinishReason::Error => "error",
            FinishReason::Repetition => "repetition",
        }
    }
}

/// What stopped a request: the stop token id or the stop string.
///
/// On the wire and with serde it is the bare integer or string (`int | str` in vLLM).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum StopReason {
    /// A stop token id.
    Token(i64),
    /// A stop string.
    Text(String),
}

impl Encode for StopReason {
    fn encode(&self, w: &mut Writer) {
        match self {
            StopReason::Token(t) => w.int(*t),
            StopReason::Text(s) => w.str(s),
        }
    }
}

impl Decode for StopReason {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match r.peek()? {
            0xa0..=0xbf | 0xd9..=0xdb => String::decode(r).map(StopReason::Text),
            _ => r.int().map(StopReason::Token),
        }
    }
}

wire_int_enum! {
    /// Kind of a request lifecycle event.
    pub enum EngineCoreEventType {
        /// Entered the waiting queue.
        Queued = 1,
        /// Scheduled for the first time (or again after preemption).
        Scheduled = 2,
        /// Preempted.
        Preempted = 3,
    }
}

wire_map! {
    /// A timestamped request event (a plain msgspec struct: a map).
    pub struct EngineCoreEvent (all) {
        /// What happened.
        pub event_type: EngineCoreEventType = EngineCoreEventType::Queued => "type",
        /// Engine-local monotonic time in seconds.
        pub timestamp: f64 = 0.0,
    }
}

wire_map! {
    /// Prefill statistics of a request (a dataclass: every field on the wire).
    pub struct PrefillStats (all) {
        /// Prompt tokens.
        pub num_prompt_tokens: i64 = 0,
        /// Prompt tokens computed.
        pub num_computed_tokens: i64 = 0,
        /// Prompt tokens served from cache.
        pub num_cached_tokens: i64 = 0,
        /// Of those, from the local cache.
        pub num_local_cached_tokens: i64 = 0,
        /// Of those, from an external cache.
        pub num_external_cached_tokens: i64 = 0,
        /// Tokens written to a cache.
        pub num_cache_creation_tokens: i64 = 0,
    }
}

wire_map! {
    /// A request-level error that leaves the engine healthy.
    pub struct RequestError (all) {
        /// Error code (`"validation_error"`, …).
        pub code: String = String::new(),
        /// Human-readable message.
        pub message: String = String::new(),
        /// Whether a retry may succeed.
        pub retryable: bool = false,
    }
}

wire_array! {
    /// New output of one request in one engine step.
    ///
    /// The fields that are usually absent and large when present are boxed, so that the
    /// struct stays small: one is moved through a channel per token, and its size is the
    /// per-token copy cost.
    pub struct EngineCoreOutput {
        /// The request.
        pub request_id: String = String::new(),
        /// Tokens generated in this step (several with speculative decoding).
        pub new_token_ids: Vec<u32> = Vec::new(),
        /// Their log probabilities, when requested.
        pub new_logprobs: Option<Box<LogprobsLists>> = None,
        /// Prompt log probabilities, sent once when the prefill completes.
        pub new_prompt_logprobs_tensors: Option<Box<LogprobsTensors>> = None,
        /// Pooling output tensor.
        pub pooling_output: Option<Box<NdArray>> = None,
        /// Set when the request finished.
        pub finish_reason: Option<FinishReason> = None,
        /// The stop token or string that finished it.
        pub stop_reason: Option<StopReason> = None,
        /// Lifecycle events.
        pub events: Option<Vec<EngineCoreEvent>> = None,
        /// KV-transfer parameters for disaggregated prefill.
        pub kv_transfer_params: Option<Box<Value>> = None,
        /// Encoder-cache transfer parameters.
        pub ec_transfer_params: Option<Box<Value>> = None,
        /// Tracing headers.
        pub trace_headers: Option<Map<String, String>> = None,
        /// Prefill statistics.
        pub prefill_stats: Option<Box<PrefillStats>> = None,
        /// Routed experts array (debugging / RL).
        pub routed_experts: Option<Box<NdArray>> = None,
        /// NaNs seen in the logits (> 0 means corrupted output).
        pub num_nans_in_logits: i64 = 0,
        /// Multimodal cache misses (retryable).
        pub mm_cache_miss_hashes: Option<Vec<String>> = None,
        /// Sampling mask (kept undecoded).
        pub new_sampling_mask: Option<Box<Value>> = None,
        /// Speculative-decoding metrics of the request (kept undecoded).
        pub spec_decode_metrics: Option<Box<Value>> = None,
        /// Prompt token-id logprobs tensor.
        pub prompt_token_id_logprobs: Option<Box<NdArray>> = None,
        /// A request-level error, with `FinishReason::Error`.
        pub error: Option<Box<RequestError>> = None,
    }
}

impl EngineCoreOutput {
    /// Whether this is the request's last output.
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Folds a later output of the same request into this one, as vLLM's
    /// `RequestOutput.add` aggregates: tokens and their logprobs appended, events
    /// appended, the prompt logprobs kept (they come once), and for everything else
    /// (finish and stop reasons, transfer parameters, statistics, routed experts, …)
    /// the later value when it has one. Fails, leaving `self` unchanged, when the two
    /// logprob tables do not fit together.
    pub fn merge(&mut self, later: EngineCoreOutput) -> Result<(), DecodeError> {
        if let (Some(lists), Some(more)) = (&mut self.new_logprobs, &later.new_logprobs) {
            lists.append(more)?;
        } else if later.new_logprobs.is_some() {
            self.new_logprobs = later.new_logprobs;
        }
        self.new_token_ids.extend(later.new_token_ids);
        if self.new_prompt_logprobs_tensors.is_none() {
            self.new_prompt_logprobs_tensors = later.new_prompt_logprobs_tensors;
        }
        if let Some(events) = later.events {
            self.events.get_or_insert_default().extend(events);
        }
        self.finish_reason = later.finish_reason.or(self.finish_reason);
        self.stop_reason = later.stop_reason.or(self.stop_reason.take());
        self.num_nans_in_logits = self.num_nans_in_logits.max(later.num_nans_in_logits);
        macro_rules! later_if_set {
            ($($field:ident),*) => {$(
                if later.$field.is_some() {
                    self.$field = later.$field;
                }
            )*};
        }
        later_if_set!(
            pooling_output,
            kv_transfer_params,
            ec_transfer_params,
            trace_headers,
            prefill_stats,
            routed_experts,
            mm_cache_miss_hashes,
            new_sampling_mask,
            spec_decode_metrics,
            prompt_token_id_logprobs,
            error
        );
        Ok(())
    }
}

wire_array! {
    /// One message from an engine: outputs of a step, statistics, a utility result, or
    /// a data-parallel wave notification.
    pub struct EngineCoreOutputs {
        /// The engine's data-parallel index.
        pub engine_index: i64 = 0,
        /// Per-request outputs.
        pub outputs: Vec<EngineCoreOutput> = Vec::new(),
        /// Scheduler statistics.
        pub scheduler_stats: Option<SchedulerStats> = None,
        /// Engine-local monotonic time.
        pub timestamp: f64 = 0.0,
        /// The result of a utility call.
        pub utility_output: Option<UtilityOutput> = None,
        /// Requests finished in the engine (a Python set).
        pub finished_requests: Option<Vec<String>> = None,
        /// The engines finished wave N and paused.
        pub wave_complete: Option<u64> = None,
        /// A request arrived for an old wave: wave N must start on the other engines.
        pub start_wave: Option<u64> = None,
        /// Weight version of this step.
        pub weight_version: Option<String> = None,
    }
}
