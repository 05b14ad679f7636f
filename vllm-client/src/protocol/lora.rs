//! `LoRARequest`.

wire_array! {
    /// A LoRA adapter to apply to a request (`vllm.lora.request.LoRARequest`).
    pub struct LoRARequest {
        /// Adapter name.
        pub lora_name: String = String::new(),
        /// Globally unique adapter id (≥ 1).
        pub lora_int_id: i64 = 0,
        /// Where the engine loads the adapter from.
        pub lora_path: String = String::new(),
        /// The base model the adapter was trained on.
        pub base_model_name: Option<String> = None,
        /// Reload even if an adapter with this id is loaded.
        pub load_inplace: bool = false,
        /// Whether MoE weights use the fused 3D layout.
        pub is_3d_lora_weight: bool = false,
    }
}

impl LoRARequest {
    /// A request for adapter `name` with id `id` at `path`.
    pub fn new(name: impl Into<String>, id: i64, path: impl Into<String>) -> Self {
        Self {
            lora_name: name.into(),
            lora_int_id: id,
            lora_path: path.into(),
            ..Self::default()
        }
    }

    /// The request as the untyped value a utility call carries (`add_lora`).
    pub fn to_value(&self) -> crate::wire::Value {
        // Our own encoding always decodes; a default value is unreachable.
        crate::wire::from_slice(&crate::wire::to_vec(self)).unwrap_or_default()
    }
}
