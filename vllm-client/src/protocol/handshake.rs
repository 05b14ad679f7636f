//! Startup handshake messages.

use crate::wire::{Map, Value};

wire_map! {
    /// HELLO / READY message an engine sends on the handshake socket.
    pub struct HandshakeStatus (sparse) {
        /// `"HELLO"` or `"READY"`.
        pub status: String = String::new() ; always,
        /// Whether the engine is local to the frontend.
        pub local: bool = false ; always,
        /// Whether the engine runs headless.
        pub headless: bool = false ; always,
        /// Hash of the parallel config (data parallel MoE), sent with READY.
        pub parallel_config_hash: Option<String> = None,
        /// Coordination store port (elastic EP), sent with READY.
        pub coord_store_port: Option<i64> = None,
    }
}

wire_map! {
    /// The sockets an engine connects to (`EngineZmqAddresses`).
    pub struct EngineZmqAddresses (all) {
        /// Input (request) addresses, one per frontend.
        pub inputs: Vec<String> = Vec::new(),
        /// Output addresses, one per frontend.
        pub outputs: Vec<String> = Vec::new(),
        /// DP coordinator input address.
        pub coordinator_input: Option<String> = None,
        /// DP coordinator output address.
        pub coordinator_output: Option<String> = None,
        /// Stats publish address for external load balancers.
        pub frontend_stats_publish_address: Option<String> = None,
    }
}

wire_map! {
    /// The frontend's answer to HELLO (`EngineHandshakeMetadata`).
    pub struct EngineHandshakeMetadata (all) {
        /// Where to connect.
        pub addresses: EngineZmqAddresses = EngineZmqAddresses::default(),
        /// Data-parallel settings for coordinated (MoE) data parallelism.
        pub parallel_config: Map<String, Value> = Map::default(),
    }
}

wire_map! {
    /// The first message on an engine's input connection: its configuration after start-up.
    pub struct EngineCoreReadyResponse (all) {
        /// Maximum sequence length.
        pub max_model_len: i64 = 0,
        /// KV cache blocks.
        pub num_gpu_blocks: i64 = 0,
        /// KV block size in tokens.
        pub block_size: i64 = 0,
        /// DP stats address.
        pub dp_stats_address: Option<String> = None,
        /// Model dtype.
        pub dtype: String = String::new(),
        /// The engine's vLLM version.
        pub vllm_version: String = String::new(),
        /// World size.
        pub world_size: i64 = 1,
        /// Data-parallel size.
        pub data_parallel_size: i64 = 1,
        /// Tensor-parallel size.
        pub tensor_parallel_size: i64 = 1,
        /// Pipeline-parallel size.
        pub pipeline_parallel_size: i64 = 1,
        /// Decode context-parallel size.
        pub decode_context_parallel_size: i64 = 1,
        /// This engine's data-parallel rank.
        pub data_parallel_rank: i64 = 0,
        /// Maximum concurrent sequences.
        pub max_num_seqs: i64 = 0,
        /// Maximum tokens per batch.
        pub max_num_batched_tokens: i64 = 0,
        /// Engine instance id.
        pub instance_id: String = String::new(),
        /// Whether LoRA is enabled.
        pub supports_lora: bool = false,
        /// Maximum LoRAs per batch.
        pub max_loras: i64 = 0,
        /// Mamba block size.
        pub mamba_block_size: Option<i64> = None,
        /// KV cache capacity in tokens.
        pub kv_cache_size_tokens: Option<i64> = None,
        /// Maximum concurrency the KV cache allows.
        pub kv_cache_max_concurrency: Option<f64> = None,
        /// KV events configuration.
        pub kv_events_config: Option<Value> = None,
        /// Weight transfer backend.
        pub weight_transfer_backend: Option<String> = None,
        /// Whether sleep mode is enabled.
        pub enable_sleep_mode: bool = false,
        /// Whether draft weights can be updated.
        pub supports_draft_weight_updates: bool = false,
        /// Full-attention block size.
        pub effective_attention_block_size: Option<i64> = None,
        /// Coordination store port.
        pub coord_store_port: i64 = 0,
        /// DP coordinator input address.
        pub coordinator_input_address: Option<String> = None,
        /// DP coordinator output address.
        pub coordinator_output_address: Option<String> = None,
    }
}
