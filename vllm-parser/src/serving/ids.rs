//! Tool-call ids as vLLM's `make_tool_call_id` makes them, and Mistral's.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// 32 random hex digits, from the process's randomly keyed hasher and a
/// counter (std only; unique within the process, unpredictable across runs).
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

/// A tool-call id as vLLM's `make_tool_call_id()` makes it:
/// `chatcmpl-tool-` and 32 random hex digits.
pub fn tool_call_id() -> String {
    format!("chatcmpl-tool-{}", random_hex())
}

/// A Mistral tool-call id as vLLM's `MistralToolCall.generate_random_id()`
/// makes it: 9 random ASCII letters and digits (mistral-common refuses other
/// ids when the call comes back in a later request).
pub fn mistral_tool_call_id() -> String {
    const ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let random = random_hex();
    (0..9)
        .map(|i| {
            let byte = u8::from_str_radix(&random[2 * i..2 * i + 2], 16).unwrap_or(0);
            char::from(ALPHANUMERIC[usize::from(byte) % ALPHANUMERIC.len()])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_have_vllms_shape_and_differ() {
        let (a, b) = (super::tool_call_id(), super::tool_call_id());
        assert_ne!(a, b);
        let hex = a.strip_prefix("chatcmpl-tool-").unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex.bytes().all(|c| c.is_ascii_hexdigit()));
        let mistral = super::mistral_tool_call_id();
        assert_eq!(mistral.len(), 9);
        assert!(mistral.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(mistral, super::mistral_tool_call_id());
    }
}
