//! The engine side of start-up: vLLM's `EngineCoreProc._perform_handshake` and the first
//! steps of its input and output socket threads.
//!
//! 1. A DEALER with the engine's identity dials the frontend's handshake ROUTER and sends
//!    `HELLO`; the frontend answers with the addresses to use.
//! 2. A DEALER (same identity) connects to each input address and sends the
//!    `EngineCoreReadyResponse` first, so that the frontend's ROUTER learns the identity
//!    and can route requests to it.
//! 3. A PUSH connects to each output address (one per frontend, by client index).
//! 4. `READY` goes out on the handshake socket.

use std::time::Duration;

use bytes::Bytes;
use zeromq::{DealerSocket, PushSocket, Socket, SocketOptions, SocketRecv, SocketSend, ZmqMessage};

use crate::protocol::{
    EngineCoreReadyResponse, EngineHandshakeMetadata, EngineZmqAddresses, HandshakeStatus,
    engine_identity,
};

use super::MockError;

/// The engine's sockets once connected.
pub(crate) struct Connections {
    /// One DEALER per frontend input address.
    pub inputs: Vec<DealerSocket>,
    /// One PUSH per frontend output address, indexed by client index.
    pub outputs: Vec<PushSocket>,
    /// The handshake DEALER, kept open so that READY is surely delivered.
    pub handshake: Option<DealerSocket>,
}

/// A socket that presents the engine's identity (its data-parallel rank) and keeps
/// trying to connect for `connect_timeout`.
fn dealer(rank: u16, connect_timeout: Duration) -> Result<DealerSocket, MockError> {
    let mut options = SocketOptions::default();
    options.peer_identity(engine_identity(rank).as_slice().try_into()?);
    options.connect_timeout(connect_timeout);
    Ok(DealerSocket::with_options(options))
}

fn message(payload: Vec<u8>) -> ZmqMessage {
    ZmqMessage::from(Bytes::from(payload))
}

fn status(status: &str) -> HandshakeStatus {
    HandshakeStatus {
        status: status.into(),
        local: false,
        headless: true,
        ..HandshakeStatus::default()
    }
}

/// Performs the handshake with the frontend at `address`, then connects to the addresses
/// it gives. `ready` builds the ready response from those addresses. Like a vLLM engine,
/// this waits up to `timeout` for the frontend, which may start after the engine.
pub(crate) async fn handshake(
    address: &str,
    rank: u16,
    timeout: Duration,
    ready: impl FnOnce(&EngineZmqAddresses) -> EngineCoreReadyResponse,
) -> Result<(Connections, EngineZmqAddresses), MockError> {
    let mut socket = dealer(rank, timeout)?;
    socket.connect(address).await?;
    socket
        .send(message(crate::wire::to_vec(&status("HELLO"))))
        .await?;
    let reply = tokio::time::timeout(timeout, socket.recv())
        .await
        .map_err(|_| {
            MockError::Handshake(format!(
                "no answer to HELLO from {address} within {timeout:?}"
            ))
        })??;
    let payload = reply.get(0).cloned().unwrap_or_default();
    let metadata: EngineHandshakeMetadata = crate::wire::from_slice(&payload)?;
    let addresses = metadata.addresses;
    tracing::debug!(?addresses, "handshake metadata received");
    let mut connections = connect(&addresses, rank, &ready(&addresses)).await?;
    socket
        .send(message(crate::wire::to_vec(&status("READY"))))
        .await?;
    connections.handshake = Some(socket);
    Ok((connections, addresses))
}

/// Connects to the frontend's input and output addresses and announces the engine with
/// its ready response on every input connection.
pub(crate) async fn connect(
    addresses: &EngineZmqAddresses,
    rank: u16,
    ready: &EngineCoreReadyResponse,
) -> Result<Connections, MockError> {
    if addresses.inputs.is_empty() || addresses.outputs.is_empty() {
        return Err(MockError::Handshake(
            "the frontend gave no input or output address".into(),
        ));
    }
    let ready = crate::wire::to_vec(ready);
    let mut inputs = Vec::with_capacity(addresses.inputs.len());
    for address in &addresses.inputs {
        let mut socket = dealer(rank, zeromq::DEFAULT_CONNECT_TIMEOUT)?;
        socket.connect(address).await?;
        socket.send(message(ready.clone())).await?;
        inputs.push(socket);
    }
    let mut outputs = Vec::with_capacity(addresses.outputs.len());
    for address in &addresses.outputs {
        let mut socket = PushSocket::new();
        socket.connect(address).await?;
        outputs.push(socket);
    }
    Ok(Connections {
        inputs,
        outputs,
        handshake: None,
    })
}
