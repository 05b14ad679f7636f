//! Shared pieces of the examples that compose the vllm-frontend-crates family.
//!
//! [`serve`] is the OpenAI-compatible server behind `cargo run --example serve`, kept
//! as a library so that tests (and other programs) can start it in-process.
//! [`kv_json`] renders KV-cache event batches for the `kv-events` example.
#![deny(missing_docs)]

pub mod kv_json;
pub mod serve;

/// The worked examples of `docs/` compile and run as doctests.
#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../../docs/vllm-client.md")]
    struct VllmClient;
    #[doc = include_str!("../../docs/vllm-detok.md")]
    struct VllmDetok;
    #[doc = include_str!("../../docs/vllm-chat.md")]
    struct VllmChat;
    #[doc = include_str!("../../docs/vllm-parser.md")]
    struct VllmParser;
}
