//! The control plane over HTTP: what vLLM 0.33's servers answer on their RL, sleep,
//! cache, RPC and information endpoints (`/pause`, `/sleep`, `/update_weights`,
//! `/collective_rpc`, `/weight_info`, …), as `vllm-rs serve` answers them, independent of
//! any HTTP framework.
//!
//! Each endpoint is a function of the [`EngineCoreClient`](vllm_client::EngineCoreClient) and its typed query or body
//! (serde types, so that a server parses them with its own extractors) returning the
//! JSON body of the answer ([`ControlAnswer`]) or an [`ApiError`]. Failed engine calls
//! are 500s whose message names the operation and carries vLLM's failure message.
//!
//! - [`lifecycle`]: pause / resume, sleep / wake up.
//! - [`weights`]: the weight-transfer sequence, the weight version and the checker.
//! - [`engine`]: caches, `collective_rpc`, aborts, world size.

pub mod engine;
pub(crate) mod json;
pub mod lifecycle;
pub mod weights;

pub use json::{json_to_value, value_to_json};

use vllm_client::ClientError;

use super::ApiError;

/// A successful answer: a JSON body, or an empty `200` (what vLLM sends for the cache
/// resets and aborts).
#[derive(Debug, Clone, PartialEq)]
pub enum ControlAnswer {
    /// `200` with this JSON body.
    Json(serde_json::Value),
    /// `200` with this plain text (the LoRA endpoints' success messages).
    Text(String),
    /// `200` without a body.
    Empty,
}

/// The error of a failed engine call for operation `op`: vLLM's answer for a dead engine,
/// else a 500 naming the operation and carrying the engine's message.
fn engine_error(op: &str, error: &ClientError) -> ApiError {
    match error {
        ClientError::EngineDead(_) | ClientError::Shutdown => ApiError::from_client(error),
        _ => ApiError::internal(format!("failed to call {op}: {error}")),
    }
}
