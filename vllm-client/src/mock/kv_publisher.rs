//! The mock engine's KV-event publisher: vLLM's `ZmqEventPublisher`, in Rust.
//!
//! Same sockets and frames as `vllm/distributed/kv_events.py`: a PUB socket sending
//! `[topic, seq (8 bytes, big-endian), msgpack KVEventBatch]` with `seq` counted from 0,
//! bound when the endpoint is a wildcard (`tcp://*:P`) or ipc/inproc and connected
//! otherwise; a ROUTER replay socket answering `[id, "", start_seq]` with every buffered
//! `[id, "", topic, seq, payload]` from `start_seq` on, then `[id, "", "", -1, ""]`; the
//! last `buffer_steps` batches buffered; both endpoints offset by the data-parallel rank.
//! Batches wait in a queue of `max_queue_size`; when it is full new ones are dropped
//! (vLLM's publisher blocks the scheduler instead), which subscribers see as a hole.

use std::collections::VecDeque;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use zeromq::{PubSocket, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

use crate::kv_events::{END_SEQ, KVEventBatch, KVEventsConfig};

use super::MockError;

/// A running publisher; dropping it stops the socket task.
pub(crate) struct KvPublisher {
    queue: mpsc::Sender<KVEventBatch>,
    task: JoinHandle<()>,
}

impl Drop for KvPublisher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The address to bind for a wildcard endpoint.
fn bind_address(endpoint: &str) -> String {
    endpoint.replacen("tcp://*:", "tcp://0.0.0.0:", 1)
}

impl KvPublisher {
    /// Binds (or connects) the sockets of `config`, already offset for the engine's rank.
    pub(crate) async fn start(config: &KVEventsConfig) -> Result<Self, MockError> {
        let mut publisher = PubSocket::new();
        if crate::kv_events::publisher_binds(&config.endpoint) {
            publisher.bind(&bind_address(&config.endpoint)).await?;
        } else {
            publisher.connect(&config.endpoint).await?;
        }
        let replay = match &config.replay_endpoint {
            Some(endpoint) => {
                let mut router = RouterSocket::new();
                router.bind(&bind_address(endpoint)).await?;
                Some(router)
            }
            None => None,
        };
        let (queue, batches) =
            mpsc::channel(usize::try_from(config.max_queue_size).unwrap_or(1).max(1));
        let state = State {
            topic: Bytes::copy_from_slice(config.topic.as_bytes()),
            buffer: VecDeque::new(),
            buffer_steps: usize::try_from(config.buffer_steps).unwrap_or(0),
            next_seq: 0,
        };
        let task = tokio::spawn(state.run(publisher, replay, batches));
        Ok(Self { queue, task })
    }

    /// Queues a batch for publishing.
    pub(crate) fn publish(&self, batch: KVEventBatch) {
        if self.queue.try_send(batch).is_err() {
            tracing::warn!("mock engine: KV event queue full, batch dropped");
        }
    }
}

struct State {
    topic: Bytes,
    buffer: VecDeque<(u64, Bytes)>,
    buffer_steps: usize,
    next_seq: u64,
}

impl State {
    async fn run(
        mut self,
        mut publisher: PubSocket,
        mut replay: Option<RouterSocket>,
        mut batches: mpsc::Receiver<KVEventBatch>,
    ) {
        loop {
            tokio::select! {
                batch = batches.recv() => match batch {
                    Some(batch) => self.publish(&mut publisher, &batch).await,
                    None => return,
                },
                request = recv(&mut replay) => match request {
                    Ok(frames) => {
                        if let Some(router) = replay.as_mut() {
                            self.replay(router, frames).await;
                        }
                    }
                    Err(e) => {
                        tracing::warn!("mock engine: replay socket failed: {e}");
                        replay = None;
                    }
                },
            }
        }
    }

    async fn publish(&mut self, publisher: &mut PubSocket, batch: &KVEventBatch) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let payload = Bytes::from(crate::wire::to_vec(batch));
        let mut message = ZmqMessage::from(self.topic.clone());
        message.push_back(Bytes::copy_from_slice(&seq.to_be_bytes()));
        message.push_back(payload.clone());
        if let Err(e) = publisher.send(message).await {
            tracing::warn!("mock engine: KV event publish failed: {e}");
        }
        if self.buffer_steps > 0 {
            if self.buffer.len() == self.buffer_steps {
                self.buffer.pop_front();
            }
            self.buffer.push_back((seq, payload));
        }
    }

    /// `_service_replay`.
    async fn replay(&self, router: &mut RouterSocket, frames: Vec<Bytes>) {
        let [client, _, start] = frames.as_slice() else {
            tracing::warn!(
                "mock engine: invalid replay request of {} frames",
                frames.len()
            );
            return;
        };
        // Python's int.from_bytes(start, "big") reads any length.
        let start = start.iter().fold(0u128, |n, b| (n << 8) | u128::from(*b));
        let send = |frames: [Bytes; 5]| {
            let mut message = ZmqMessage::from(frames[0].clone());
            for frame in &frames[1..] {
                message.push_back(frame.clone());
            }
            message
        };
        for (seq, payload) in &self.buffer {
            if u128::from(*seq) >= start {
                let frames = [
                    client.clone(),
                    Bytes::new(),
                    self.topic.clone(),
                    Bytes::copy_from_slice(&seq.to_be_bytes()),
                    payload.clone(),
                ];
                if router.send(send(frames)).await.is_err() {
                    return;
                }
            }
        }
        let end = [
            client.clone(),
            Bytes::new(),
            Bytes::new(),
            Bytes::copy_from_slice(&END_SEQ),
            Bytes::new(),
        ];
        let _ = router.send(send(end)).await;
    }
}

/// The next replay request, or never without a replay socket.
async fn recv(replay: &mut Option<RouterSocket>) -> Result<Vec<Bytes>, zeromq::ZmqError> {
    match replay {
        Some(router) => router.recv().await.map(ZmqMessage::into_vec),
        None => std::future::pending().await,
    }
}
