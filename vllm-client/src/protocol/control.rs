//! Frontend-to-engine control payloads: request types, ABORT and START_DP_WAVE.

use crate::wire::{Decode, DecodeError, Encode, Reader, Writer};

/// The request-type frame that precedes each payload sent to an engine.
///
/// With serde it is the variant name (`"Add"`, `"Abort"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum RequestType {
    /// `\x00`: an [`crate::protocol::EngineCoreRequest`].
    Add,
    /// `\x01`: an [`Abort`].
    Abort,
    /// `\x02`: a [`StartDpWave`].
    StartDpWave,
    /// `\x03`: a [`crate::protocol::UtilityCall`].
    Utility,
}

impl RequestType {
    /// The one-byte frame vLLM sends.
    pub fn as_frame(self) -> &'static [u8] {
        match self {
            RequestType::Add => b"\x00",
            RequestType::Abort => b"\x01",
            RequestType::StartDpWave => b"\x02",
            RequestType::Utility => b"\x03",
        }
    }

    /// Parses a request-type frame.
    pub fn from_frame(frame: &[u8]) -> Option<Self> {
        match frame {
            b"\x00" => Some(RequestType::Add),
            b"\x01" => Some(RequestType::Abort),
            b"\x02" => Some(RequestType::StartDpWave),
            b"\x03" => Some(RequestType::Utility),
            _ => None,
        }
    }
}

/// ABORT payload: the ids of the requests to abort (a msgpack array of strings; with
/// serde, the bare list).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Abort(pub Vec<String>);

impl Encode for Abort {
    fn encode(&self, w: &mut Writer) {
        self.0.encode(w)
    }
}

impl Decode for Abort {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Vec::decode(r).map(Abort)
    }
}

/// START_DP_WAVE payload `(wave, exclude_engine_index)`: wakes idle data-parallel engines
/// into `wave`, except the engine that already runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct StartDpWave {
    /// The wave to start.
    pub wave: u64,
    /// The engine that needs no wake-up (it triggered the wave).
    pub exclude_engine_index: i64,
}

impl Encode for StartDpWave {
    fn encode(&self, w: &mut Writer) {
        w.array_len(2);
        w.uint(self.wave);
        w.int(self.exclude_engine_index);
    }
}

impl Decode for StartDpWave {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.array()?;
        if n != 2 {
            return Err(DecodeError::Invalid {
                what: "StartDpWave",
                detail: format!("expected 2 elements, found {n}"),
            });
        }
        let value = StartDpWave {
            wave: r.int()?,
            exclude_engine_index: r.int()?,
        };
        r.leave();
        Ok(value)
    }
}
