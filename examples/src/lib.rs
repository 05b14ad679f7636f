//! Shared pieces of the examples that compose the vllm-frontend-crates family.
//!
//! [`serve`] is the OpenAI-compatible server behind `cargo run --example serve`, kept
//! as a library so that tests (and other programs) can start it in-process.
#![deny(missing_docs)]

pub mod serve;
