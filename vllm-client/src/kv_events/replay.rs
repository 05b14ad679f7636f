//! The replay protocol of vLLM's `ZmqEventPublisher`.
//!
//! The publisher keeps its last `buffer_steps` batches and answers on a ROUTER socket: a
//! request `["", start_seq as 8 big-endian bytes]` (from a DEALER; the empty frame is the
//! REQ-style delimiter the ROUTER expects) gets one message `["", topic, seq, payload]`
//! per buffered batch with `seq >= start_seq`, in order, then the end marker
//! `["", "", -1 as 8 big-endian bytes, ""]` (`_service_replay`). A request arriving while
//! the buffer no longer holds `start_seq` simply starts later; the caller sees the hole.

use std::time::Duration;

use bytes::Bytes;
use zeromq::{DealerSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

use super::KvEventsError;

/// vLLM's `ZmqEventPublisher.END_SEQ`: `(-1).to_bytes(8, "big", signed=True)`.
pub const END_SEQ: [u8; 8] = [0xff; 8];

/// Asks the replay endpoint for every buffered batch from `start_seq` on and passes each
/// `(seq, payload)` to `each`, in order, until the end marker. Fails if the whole replay
/// does not finish within `timeout`.
pub async fn replay(
    endpoint: &str,
    start_seq: u64,
    timeout: Duration,
    mut each: impl FnMut(u64, Bytes),
) -> Result<(), KvEventsError> {
    let timed_out = || KvEventsError::ReplayTimeout {
        endpoint: endpoint.to_owned(),
        timeout_ms: timeout.as_millis() as u64,
    };
    let run = async {
        let mut socket = DealerSocket::new();
        socket
            .connect(endpoint)
            .await
            .map_err(|e| socket_error("connect", endpoint, e))?;
        let mut request = ZmqMessage::from(Bytes::new());
        request.push_back(Bytes::copy_from_slice(&start_seq.to_be_bytes()));
        socket
            .send(request)
            .await
            .map_err(|e| socket_error("send", endpoint, e))?;
        loop {
            let message = socket
                .recv()
                .await
                .map_err(|e| socket_error("recv", endpoint, e))?;
            let frames = message.into_vec();
            let [_, _, seq, payload] = frames.as_slice() else {
                return Err(KvEventsError::Frames(format!(
                    "replay answered {} frames, expected 4",
                    frames.len()
                )));
            };
            let seq = seq_from_frame(seq)?;
            if seq == u64::MAX {
                // END_SEQ (-1) read as unsigned.
                return Ok(());
            }
            each(seq, payload.clone());
        }
    };
    tokio::time::timeout(timeout, run)
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

/// A sequence frame: 8 big-endian bytes.
pub(crate) fn seq_from_frame(frame: &[u8]) -> Result<u64, KvEventsError> {
    <[u8; 8]>::try_from(frame)
        .map(u64::from_be_bytes)
        .map_err(|_| {
            KvEventsError::Frames(format!(
                "sequence frame of {} bytes, expected 8",
                frame.len()
            ))
        })
}

pub(crate) fn socket_error(
    operation: &'static str,
    endpoint: &str,
    e: zeromq::ZmqError,
) -> KvEventsError {
    KvEventsError::Socket {
        operation,
        endpoint: endpoint.to_owned(),
        detail: e.to_string(),
    }
}
