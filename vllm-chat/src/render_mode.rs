//! Render mode: vLLM's `/v1/chat/completions/render` and `/v1/completions/render`.
pub(crate) fn _x() {}
