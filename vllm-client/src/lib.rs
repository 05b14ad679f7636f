//! A typed async client for vLLM EngineCore processes.
//!
//! vLLM splits serving into a GPU-side **EngineCore** and a frontend. This crate is the
//! frontend's engine link, speaking vLLM 0.33.0's protocol (ZMQ + msgpack) exactly:
//!
//! - [`protocol`]: every message of the protocol as Rust types that encode to the bytes
//!   vLLM produces and decode what vLLM sends, checked against golden vectors made by
//!   vLLM's own encoder.
//! - [`client`]: [`EngineCoreClient`], which binds the frontend sockets, waits for
//!   data-parallel engines, routes requests, streams their outputs, batches aborts,
//!   makes utility calls and turns an engine's death into one clear error;
//!   [`EngineCoreClient::generate_n`] runs `n > 1` as vLLM's parallel sampling.
//! - [`kv_events`]: engines' KV-cache events (typed, sequence-checked, replayed over
//!   holes), prefix block hashes computed as vLLM computes them, and a per-engine index
//!   of cached blocks, for cache-aware routing; the client routes by it when asked to
//!   ([`ClientConfig::with_prefix_routing`]).
//!
//! Features: `mock` (a mock EngineCore), `sha256` and `xxhash` (the block-hash
//! algorithms of [`kv_events::BlockHasher`]).
#![deny(missing_docs)]

#[macro_use]
pub mod wire;

pub mod client;
pub mod kv_events;
pub mod protocol;

#[cfg(feature = "mock")]
pub mod mock;

pub use client::{
    ClientConfig, ClientError, EngineCoreClient, EngineInfo, EngineLoad, OutputStream,
    ParallelStream, PrefixRouting, Startup,
};

pub use wire::{DecodeError, Map, Value};

/// Encodes a protocol message to its msgpack payload and extra frames.
pub fn encode<T: wire::Encode + ?Sized>(message: &T) -> (Vec<u8>, Vec<bytes::Bytes>) {
    let mut w = wire::Writer::new();
    message.encode(&mut w);
    w.into_frames()
}

/// Decodes a protocol message from its payload and the extra frames that followed it.
pub fn decode<T: wire::Decode>(payload: &[u8], frames: &[bytes::Bytes]) -> Result<T, DecodeError> {
    let mut r = wire::Reader::with_frames(payload, frames);
    let value = T::decode(&mut r)?;
    r.finish()?;
    Ok(value)
}

/// The README's example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
