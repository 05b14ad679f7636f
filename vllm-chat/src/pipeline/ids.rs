//! Random ids: vLLM uses UUID4 hex strings for request and tool-call ids.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// 32 random hex digits (from the process's randomly keyed hasher and a counter).
pub fn random_hex() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = std::collections::hash_map::RandomState::new();
    let mut parts = [0u64; 2];
    for (k, part) in parts.iter_mut().enumerate() {
        let mut h = state.build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_usize(k);
        *part = h.finish();
    }
    format!("{:016x}{:016x}", parts[0], parts[1])
}

/// A tool-call id as vLLM's `make_tool_call_id` makes it.
pub fn tool_call_id() -> String {
    format!("chatcmpl-tool-{}", random_hex())
}

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
