//! Scheduler statistics.

use crate::wire::{Map, Value};

wire_map! {
    /// An engine's scheduler statistics (`vllm.v1.metrics.stats.SchedulerStats`, a
    /// dataclass). The counters used for load balancing are typed; the nested parts are
    /// kept as values. Keys this version does not know are ignored, never an error.
    pub struct SchedulerStats (all) {
        /// Requests running.
        pub num_running_reqs: i64 = 0,
        /// Requests waiting.
        pub num_waiting_reqs: i64 = 0,
        /// Waiting requests skipped this step.
        pub num_skipped_waiting_reqs: i64 = 0,
        /// KV-fetching requests by stage.
        pub num_kv_fetch_reqs_by_stage: Map<String, i64> = Map::default(),
        /// Step counter (data parallel lockstep).
        pub step_counter: i64 = 0,
        /// Current data-parallel wave.
        pub current_wave: i64 = 0,
        /// Fraction of KV cache in use.
        pub kv_cache_usage: f64 = 0.0,
        /// Per-iteration details.
        pub iteration_details: Value = Value::Nil,
        /// Prefix cache statistics (a `PrefixCacheStats` map; vLLM never sends nil here).
        pub prefix_cache_stats: Value = empty_prefix_cache_stats(),
        /// Connector prefix cache statistics.
        pub connector_prefix_cache_stats: Value = Value::Nil,
        /// KV cache eviction events.
        pub kv_cache_eviction_events: Value = Value::Array(Vec::new()),
        /// Speculative decoding statistics.
        pub spec_decoding_stats: Value = Value::Nil,
        /// KV connector statistics.
        pub kv_connector_stats: Value = Value::Nil,
        /// Encoder-cache connector statistics.
        pub ec_connector_stats: Value = Value::Nil,
        /// LoRA adapters of waiting requests.
        pub waiting_lora_adapters: Map<String, i64> = Map::default(),
        /// LoRA adapters of running requests.
        pub running_lora_adapters: Map<String, i64> = Map::default(),
        /// CUDA graph statistics.
        pub cudagraph_stats: Value = Value::Nil,
        /// Performance statistics.
        pub perf_stats: Value = Value::Nil,
    }
}

/// vLLM's default `PrefixCacheStats`, as its dataclass encodes it: all counters zero.
fn empty_prefix_cache_stats() -> Value {
    let zero = |k: &str| (Value::from(k), Value::UInt(0));
    Value::Map(vec![
        (Value::from("reset"), Value::Bool(false)),
        zero("requests"),
        zero("queries"),
        zero("hits"),
        zero("preempted_requests"),
        zero("preempted_queries"),
        zero("preempted_hits"),
        (Value::from("hits_by_source"), Value::Map(Vec::new())),
    ])
}
