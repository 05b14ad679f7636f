//! Ids and times of a request: vLLM uses UUID4 hex strings for request and tool-call
//! ids and Unix seconds for `created`.

pub use crate::render_mode::random_hex_id as random_hex;
pub use vllm_parser::serving::tool_call_id;

/// The engine request id for a user-facing id: vLLM appends a random suffix so that
/// ids chosen by clients never collide in the engine.
pub fn engine_request_id(external: &str) -> String {
    format!("{external}-{}", &random_hex()[..8])
}

/// Unix seconds now.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
