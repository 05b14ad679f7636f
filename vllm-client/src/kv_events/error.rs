//! Errors of the KV-event subscriber.

use crate::wire::DecodeError;

use super::EndpointError;

/// What went wrong subscribing to KV events, or with one message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KvEventsError {
    /// The endpoint is not a ZMQ endpoint this crate can use.
    #[error(
        "invalid KV events endpoint {endpoint:?}: {detail} (use tcp://HOST:PORT or ipc://PATH)"
    )]
    Endpoint {
        /// The endpoint given.
        endpoint: String,
        /// Why it was refused.
        detail: String,
    },
    /// A data-parallel rank's endpoint could not be derived.
    #[error(transparent)]
    RankOffset(#[from] EndpointError),
    /// No Tokio runtime to run the subscriber on.
    #[error("KvEventSubscriber::start must be called within a Tokio runtime")]
    NoRuntime,
    /// A socket operation failed.
    #[error("ZMQ {operation} on {endpoint} failed: {detail}")]
    Socket {
        /// What was attempted (`connect`, `bind`, `send`, …).
        operation: &'static str,
        /// The endpoint concerned.
        endpoint: String,
        /// The transport's error.
        detail: String,
    },
    /// A published message did not have vLLM's three frames `[topic, seq, payload]`
    /// (or a replayed one its four `["", topic, seq, payload]`).
    #[error("malformed KV events message: {0}")]
    Frames(String),
    /// A batch's payload is not a valid `KVEventBatch`.
    #[error("KV event batch {seq} does not decode: {error}")]
    Decode {
        /// Its sequence number.
        seq: u64,
        /// The decoder's error.
        error: DecodeError,
    },
    /// The replay endpoint did not finish answering in time.
    #[error(
        "replay from {endpoint} timed out after {timeout_ms} ms (is replay_endpoint set on the engine's --kv-events-config?)"
    )]
    ReplayTimeout {
        /// The replay endpoint.
        endpoint: String,
        /// The timeout.
        timeout_ms: u64,
    },
}
