//! Binding the frontend's sockets and waiting for engines to register.
//!
//! Mirrors vLLM's `wait_for_engine_startup`: engines dial the handshake ROUTER and say
//! HELLO; the frontend answers with the input and output addresses; each engine then
//! connects to the input ROUTER (sending its `EngineCoreReadyResponse` first) and to the
//! output PULL, and says READY on the handshake socket.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use zeromq::{PullSocket, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

use super::ClientError;
use crate::protocol::{
    EngineCoreReadyResponse, EngineHandshakeMetadata, EngineZmqAddresses, HandshakeStatus,
};

/// The bound sockets of a frontend.
pub(crate) struct Sockets {
    pub input: RouterSocket,
    pub output: PullSocket,
    pub input_address: String,
    pub output_address: String,
}

/// Binds the input ROUTER and output PULL sockets.
pub(crate) async fn bind(input: &str, output: &str) -> Result<Sockets, ClientError> {
    let mut input_socket = RouterSocket::new();
    let input_address = input_socket
        .bind(input)
        .await
        .map_err(|e| ClientError::transport(format!("bind {input}: {e}")))?
        .to_string();
    let mut output_socket = PullSocket::new();
    let output_address = output_socket
        .bind(output)
        .await
        .map_err(|e| ClientError::transport(format!("bind {output}: {e}")))?
        .to_string();
    Ok(Sockets {
        input: input_socket,
        output: output_socket,
        input_address,
        output_address,
    })
}

/// Engine rank from a 2-byte little-endian ZMQ identity.
pub(crate) fn rank_of(identity: &[u8]) -> Option<u16> {
    <[u8; 2]>::try_from(identity).ok().map(u16::from_le_bytes)
}

/// Per-rank start-up progress.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Stage {
    #[default]
    New,
    Connected,
    Ready,
}

/// Runs the handshake on an already-bound ROUTER until every rank in `ranks` said
/// READY, answering HELLOs with `addresses`.
pub(crate) async fn handshake(
    handshake: &mut RouterSocket,
    ranks: &[u16],
    addresses: &EngineZmqAddresses,
    deadline: Instant,
    timeout: Duration,
) -> Result<(), ClientError> {
    let mut stages: BTreeMap<u16, Stage> = ranks.iter().map(|&r| (r, Stage::New)).collect();
    let init = crate::wire::to_vec(&EngineHandshakeMetadata {
        addresses: addresses.clone(),
        parallel_config: Default::default(),
    });
    while stages.values().any(|s| *s != Stage::Ready) {
        let msg = match tokio::time::timeout_at(deadline, handshake.recv()).await {
            Ok(Ok(msg)) => msg,
            Ok(Err(e)) => return Err(ClientError::transport(e)),
            Err(_) => return Err(not_ready(&stages, Stage::Ready, timeout)),
        };
        let frames = msg.into_vec();
        let (Some(identity), Some(payload)) = (frames.first(), frames.get(1)) else {
            tracing::warn!("handshake message without identity and payload; ignored");
            continue;
        };
        let Some(rank) = rank_of(identity).filter(|r| stages.contains_key(r)) else {
            return Err(ClientError::Handshake(
                format!("message from engine with unexpected identity {identity:?}").into(),
            ));
        };
        let status: HandshakeStatus = crate::wire::from_slice(payload).map_err(|e| {
            ClientError::Handshake(format!("bad handshake message from rank {rank}: {e}").into())
        })?;
        let stage = stages.get_mut(&rank).expect("rank checked above");
        match (status.status.as_str(), *stage) {
            ("HELLO", Stage::New) => {
                tracing::debug!(rank, "engine said HELLO");
                let reply: ZmqMessage = vec![identity.clone(), Bytes::from(init.clone())]
                    .try_into()
                    .expect("two frames");
                handshake
                    .send(reply)
                    .await
                    .map_err(ClientError::transport)?;
                *stage = Stage::Connected;
            }
            ("READY", Stage::Connected) => {
                tracing::info!(rank, "engine ready");
                *stage = Stage::Ready;
            }
            (other, s) => {
                return Err(ClientError::Handshake(
                    format!("unexpected {other} from rank {rank} in state {s:?}").into(),
                ));
            }
        }
    }
    Ok(())
}

/// Reads each engine's `EngineCoreReadyResponse`, the first message on its input
/// connection, until every rank has sent one.
pub(crate) async fn ready_responses(
    input: &mut RouterSocket,
    ranks: &[u16],
    deadline: Instant,
    timeout: Duration,
) -> Result<BTreeMap<u16, EngineCoreReadyResponse>, ClientError> {
    let mut ready = BTreeMap::new();
    while ready.len() < ranks.len() {
        let msg = match tokio::time::timeout_at(deadline, input.recv()).await {
            Ok(Ok(msg)) => msg,
            Ok(Err(e)) => return Err(ClientError::transport(e)),
            Err(_) => {
                let missing = ranks
                    .iter()
                    .copied()
                    .filter(|r| !ready.contains_key(r))
                    .collect();
                return Err(ClientError::EnginesNotReady {
                    missing,
                    timeout_secs: timeout.as_secs_f64(),
                });
            }
        };
        let frames = msg.into_vec();
        let (Some(identity), Some(payload)) = (frames.first(), frames.get(1)) else {
            continue;
        };
        let Some(rank) = rank_of(identity).filter(|r| ranks.contains(r)) else {
            tracing::warn!(
                ?identity,
                "input connection from an unknown engine; ignored"
            );
            continue;
        };
        let response: EngineCoreReadyResponse = crate::wire::from_slice(payload).map_err(|e| {
            ClientError::Handshake(format!("bad ready response from rank {rank}: {e}").into())
        })?;
        ready.insert(rank, response);
    }
    Ok(ready)
}

fn not_ready(stages: &BTreeMap<u16, Stage>, want: Stage, timeout: Duration) -> ClientError {
    ClientError::EnginesNotReady {
        missing: stages
            .iter()
            .filter(|(_, s)| **s != want)
            .map(|(r, _)| *r)
            .collect(),
        timeout_secs: timeout.as_secs_f64(),
    }
}
