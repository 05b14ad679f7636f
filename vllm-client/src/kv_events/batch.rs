//! `KVEventBatch`: what an engine publishes once per scheduler step that changed its cache.

use super::KVCacheEvent;

wire_array! {
    /// The events of one scheduler step (vLLM's `KVEventBatch(EventBatch)`, a msgspec
    /// struct with `array_like=True`: `[ts, events, data_parallel_rank]`).
    pub struct KVEventBatch {
        /// Wall-clock time the batch was made (`time.time()` on the engine).
        pub ts: f64 = 0.0,
        /// The events, in the order the engine's block pool produced them.
        pub events: Vec<KVCacheEvent> = Vec::new(),
        /// The publishing engine's data-parallel rank (vLLM's publisher fills it in).
        pub data_parallel_rank: Option<i64> = None,
    }
}
