//! Errors of the engine client.

use std::sync::Arc;

/// What can go wrong talking to EngineCore processes.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    /// A ZMQ socket could not be bound or used.
    #[error("zmq transport error: {0}")]
    Transport(Arc<str>),
    /// Not every engine registered before the start-up timeout.
    #[error("engines not ready after {timeout_secs:.1}s: missing data-parallel ranks {missing:?}")]
    EnginesNotReady {
        /// Ranks that did not complete the handshake.
        missing: Vec<u16>,
        /// The timeout that expired.
        timeout_secs: f64,
    },
    /// The start-up handshake went wrong (unexpected message or rank).
    #[error("engine handshake failed: {0}")]
    Handshake(Arc<str>),
    /// An engine died (`ENGINE_CORE_DEAD` or a lost connection); the client is unusable.
    #[error("engine core died: {0}")]
    EngineDead(Arc<str>),
    /// A message from an engine could not be decoded; only what it belonged to fails.
    #[error("malformed message from engine: {0}")]
    Protocol(Arc<str>),
    /// A utility call failed on the engine; carries vLLM's message.
    #[error("utility call `{method}` failed (call_id={call_id}): {message}")]
    Utility {
        /// The method called.
        method: String,
        /// The call's id (as in the engine's log).
        call_id: u64,
        /// vLLM's failure message.
        message: String,
    },
    /// A utility result did not have the expected shape.
    #[error("utility call {method} returned an unexpected result: {detail}")]
    UnexpectedResult {
        /// The method called.
        method: String,
        /// What was wrong.
        detail: String,
    },
    /// The request is invalid for this client (e.g. its data-parallel rank is unknown).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The client's configuration does not fit the engines (e.g. prefix routing with
    /// engines that publish no KV-cache events).
    #[error("configuration error: {0}")]
    Config(String),
    /// A request with this id is already in flight.
    #[error("request id {0} is already in flight")]
    DuplicateRequestId(String),
    /// The client was shut down.
    #[error("client is shut down")]
    Shutdown,
}

impl ClientError {
    pub(crate) fn transport(e: impl std::fmt::Display) -> Self {
        ClientError::Transport(e.to_string().into())
    }
}
