//! vLLM 0.33.0's EngineCore protocol: every message, as Rust types that encode to the
//! bytes vLLM's `MsgpackEncoder` produces and decode what vLLM sends.
//!
//! Frames to an engine are `[engine identity, request type, msgpack payload, extra
//! frames…]` ([`RequestType`]); outputs arrive as `[payload, extra frames…]` holding an
//! [`EngineCoreOutputs`], or the single frame [`ENGINE_CORE_DEAD`].

mod array;
mod control;
mod handshake;
mod lifecycle;
mod lora;
mod outputs;
mod request;
mod sampling;
mod stats;
mod utility;

pub use array::{LogprobsLists, LogprobsTensors, NdArray};
pub use control::{Abort, RequestType, StartDpWave};
pub use handshake::{
    EngineCoreReadyResponse, EngineHandshakeMetadata, EngineZmqAddresses, HandshakeStatus,
};
pub use lifecycle::{PauseMode, SleepLevel, WakeTag};
pub use lora::LoRARequest;
pub use outputs::{
    EngineCoreEvent, EngineCoreEventType, EngineCoreOutput, EngineCoreOutputs, FinishReason,
    PrefillStats, RequestError, StopReason,
};
pub use request::EngineCoreRequest;
pub use sampling::{
    RepetitionDetectionParams, RequestOutputKind, SamplingParams, StructuredOutputsParams,
};
pub use stats::SchedulerStats;
pub use utility::{UtilityCall, UtilityOutput, UtilityResult};

pub use crate::wire::{Map, Value};

/// The single frame an engine sends on its output socket when it dies.
pub const ENGINE_CORE_DEAD: &[u8] = b"ENGINE_CORE_DEAD";

/// The vLLM version whose protocol these types speak.
pub const VLLM_VERSION: &str = "0.33.0";

/// The ZMQ identity of the engine with data-parallel rank `rank`: 2 little-endian bytes.
pub fn engine_identity(rank: u16) -> [u8; 2] {
    rank.to_le_bytes()
}
