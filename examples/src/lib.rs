//! Shared pieces of the examples that compose the vllm-frontend-crates family.
