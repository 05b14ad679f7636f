//! `KvEventSubscriber`: an engine's KV-cache events as a `Stream`, without holes.
//!
//! vLLM's `ZmqEventPublisher` sends each batch as `[topic, seq (8 bytes, big-endian),
//! msgpack KVEventBatch]` on a PUB socket, numbering batches from 0 per engine process.
//! PUB/SUB drops messages when a subscriber falls behind or reconnects, so the
//! subscriber checks the numbers: when one is skipped it asks the replay endpoint for
//! the missing batches and delivers them in order before the live ones; a hole the
//! replay buffer no longer covers is reported as a [`KvEventMessage::Gap`]. When the
//! connection drops it reconnects (with a capped backoff); numbers that start again from
//! below mean a new engine process ([`KvEventMessage::Restarted`]).
//!
//! Memory is bounded: one socket task reads and decodes, and hands messages to a bounded
//! channel. It never waits for the consumer; when the channel is full it drops the
//! message and later tells the consumer how many it lost ([`KvEventMessage::Lagged`]).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use zeromq::{Socket, SocketEvent, SocketRecv, SubSocket};

use super::replay::{replay, seq_from_frame, socket_error};
use super::{KVEventBatch, KVEventsConfig, KvEventsError, connect_endpoint, offset_endpoint_port};

/// Where a new subscription starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFrom {
    /// With the next batch the engine publishes.
    Latest,
    /// With batch `seq`: everything from it that the engine's replay buffer still holds
    /// is replayed first (needs a replay endpoint; `0` asks for the whole buffer).
    Seq(u64),
}

/// How to subscribe to one engine's KV events.
#[derive(Debug, Clone)]
pub struct SubscriberConfig {
    /// The engine's PUB endpoint (`tcp://HOST:PORT`).
    pub endpoint: String,
    /// The engine's replay endpoint, used to fill holes.
    pub replay_endpoint: Option<String>,
    /// The topic (the engine's `kv_events_config.topic`; `""` takes every message).
    pub topic: String,
    /// Where to start.
    pub start: StartFrom,
    /// Messages buffered for the consumer before the oldest undelivered are counted as lost.
    pub capacity: usize,
    /// How long one replay may take.
    pub replay_timeout: Duration,
    /// The longest wait between reconnection attempts.
    pub max_reconnect_interval: Duration,
    /// Bind the endpoint instead of connecting to it: for engines whose `endpoint` names
    /// a host (vLLM's publisher connects to those and binds only wildcards).
    pub bind: bool,
}

impl SubscriberConfig {
    /// Subscribes to `endpoint`, every topic, from the next batch, no replay.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            replay_endpoint: None,
            topic: String::new(),
            start: StartFrom::Latest,
            capacity: 1024,
            replay_timeout: Duration::from_secs(5),
            max_reconnect_interval: Duration::from_secs(2),
            bind: false,
        }
    }

    /// The subscription to an engine that reported `config` (its ready response's
    /// `kv_events_config`, already offset for its rank) and runs on `host`: wildcard
    /// endpoints become `host`; an endpoint the engine's publisher connects to (a host
    /// address, see [`publisher_binds`](super::publisher_binds)) is bound.
    pub fn from_engine_config(config: &KVEventsConfig, host: &str) -> Self {
        let binds = super::publisher_binds(&config.endpoint);
        let mut this = Self::new(if binds {
            connect_endpoint(&config.endpoint, host)
        } else {
            config.endpoint.clone()
        });
        this.bind = !binds;
        this.replay_endpoint = config
            .replay_endpoint
            .as_deref()
            .map(|e| connect_endpoint(e, host));
        this.topic = config.topic.clone();
        this
    }

    /// With a replay endpoint.
    pub fn with_replay_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.replay_endpoint = Some(endpoint.into());
        self
    }

    /// With a topic.
    pub fn with_topic(mut self, topic: impl Into<String>) -> Self {
        self.topic = topic.into();
        self
    }

    /// Starting where `start` says.
    pub fn with_start(mut self, start: StartFrom) -> Self {
        self.start = start;
        self
    }

    /// With a consumer buffer of `capacity` messages (at least 1).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// With a replay timeout.
    pub fn with_replay_timeout(mut self, timeout: Duration) -> Self {
        self.replay_timeout = timeout;
        self
    }

    /// The endpoints of data-parallel rank `rank` of an engine fleet configured with these
    /// (rank 0's) endpoints: both ports offset as vLLM's publisher offsets them.
    pub fn for_data_parallel_rank(mut self, rank: u32) -> Result<Self, KvEventsError> {
        self.endpoint = offset_endpoint_port(&self.endpoint, rank)?;
        self.replay_endpoint = self
            .replay_endpoint
            .as_deref()
            .map(|e| offset_endpoint_port(e, rank))
            .transpose()?;
        Ok(self)
    }
}

/// One item of a [`KvEventSubscriber`].
#[derive(Debug, Clone, PartialEq)]
pub enum KvEventMessage {
    /// A batch of events, with the sequence number the engine gave it. Batches arrive in
    /// sequence order; replayed ones are indistinguishable from live ones.
    Batch {
        /// The engine's sequence number.
        seq: u64,
        /// The events.
        batch: KVEventBatch,
    },
    /// The consumer fell behind: this many messages were dropped since the last one it
    /// received (reported, in order, before the next message that finds room in the
    /// buffer). The cache state it tracks may be stale.
    Lagged {
        /// Messages dropped.
        missed: u64,
    },
    /// Batches `first..=last` were lost for good (no replay endpoint, or the engine's
    /// replay buffer no longer had them). The cache state it tracks may be stale.
    Gap {
        /// The first missing sequence number.
        first: u64,
        /// The last missing sequence number.
        last: u64,
    },
    /// The connection to the engine dropped; the subscriber is reconnecting.
    Disconnected,
    /// A new engine process publishes now (its numbering started again): forget the old
    /// one's blocks. Its batches from 0 on follow (replayed when possible).
    Restarted {
        /// The first sequence number seen from the new process.
        seq: u64,
    },
    /// A message that could not be used (wrong frames, undecodable payload); the stream
    /// goes on.
    Malformed(KvEventsError),
}

/// A subscription to one engine's KV events: a [`Stream`] of [`KvEventMessage`]s that
/// ends only when dropped. Its socket task stops when it is dropped.
///
/// ```no_run
/// # async fn run() -> Result<(), vllm_client::kv_events::KvEventsError> {
/// use futures::StreamExt;
/// use vllm_client::kv_events::{KvEventMessage, KvEventSubscriber, StartFrom, SubscriberConfig};
///
/// let config = SubscriberConfig::new("tcp://127.0.0.1:5557")
///     .with_replay_endpoint("tcp://127.0.0.1:5558")
///     .with_topic("kv")
///     .with_start(StartFrom::Seq(0));
/// let mut events = KvEventSubscriber::start(config)?;
/// while let Some(message) = events.next().await {
///     if let KvEventMessage::Batch { seq, batch } = message {
///         println!("{seq}: {} events", batch.events.len());
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct KvEventSubscriber {
    rx: mpsc::Receiver<KvEventMessage>,
    task: tokio::task::JoinHandle<()>,
}

impl KvEventSubscriber {
    /// Starts subscribing on the current Tokio runtime. The engine need not be up: the
    /// subscriber connects when it appears.
    pub fn start(config: SubscriberConfig) -> Result<Self, KvEventsError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| KvEventsError::NoRuntime)?;
        for endpoint in std::iter::once(&config.endpoint).chain(config.replay_endpoint.as_ref()) {
            endpoint
                .parse::<zeromq::Endpoint>()
                .map_err(|e| KvEventsError::Endpoint {
                    endpoint: endpoint.clone(),
                    detail: e.to_string(),
                })?;
        }
        let (tx, rx) = mpsc::channel(config.capacity.max(1));
        let task = runtime.spawn(Reader::new(config, tx).run());
        Ok(Self { rx, task })
    }
}

impl Drop for KvEventSubscriber {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Stream for KvEventSubscriber {
    type Item = KvEventMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// The socket task.
struct Reader {
    config: SubscriberConfig,
    tx: mpsc::Sender<KvEventMessage>,
    /// Messages dropped since the consumer last had room.
    lagged: u64,
    /// The sequence number the next batch should have, once known.
    next: Option<u64>,
    /// Set by a disconnection: a lower number than expected then means a new engine
    /// process rather than a duplicate of a replayed batch.
    reconnected: bool,
}

/// Whether the consumer is gone.
struct Closed;

impl Reader {
    fn new(config: SubscriberConfig, tx: mpsc::Sender<KvEventMessage>) -> Self {
        let next = match config.start {
            StartFrom::Latest => None,
            StartFrom::Seq(seq) => Some(seq),
        };
        Self {
            config,
            tx,
            lagged: 0,
            next,
            reconnected: false,
        }
    }

    async fn run(mut self) {
        let mut first = true;
        loop {
            let Ok((socket, monitor)) = self.connect().await else {
                return;
            };
            if first && matches!(self.config.start, StartFrom::Seq(_)) {
                // Catch up with what the engine published before we came.
                let start = self.next.unwrap_or(0);
                if self.fill(start, None).await.is_err() {
                    return;
                }
            }
            first = false;
            if self.read(socket, monitor).await.is_err() {
                return;
            }
            self.reconnected = true;
            if self.emit(KvEventMessage::Disconnected).is_err() {
                return;
            }
        }
    }

    /// A subscribed socket, retrying with a capped backoff until the engine is there.
    async fn connect(
        &mut self,
    ) -> Result<(SubSocket, futures::channel::mpsc::Receiver<SocketEvent>), Closed> {
        let mut wait = Duration::from_millis(50);
        loop {
            let mut socket = SubSocket::new();
            let monitor = socket.monitor();
            let endpoint = self.config.endpoint.clone();
            let result = async {
                socket
                    .subscribe(&self.config.topic)
                    .await
                    .map_err(|e| socket_error("subscribe", &endpoint, e))?;
                if self.config.bind {
                    socket
                        .bind(&endpoint)
                        .await
                        .map(drop)
                        .map_err(|e| socket_error("bind", &endpoint, e))
                } else {
                    tokio::time::timeout(
                        self.config.max_reconnect_interval,
                        socket.connect(&endpoint),
                    )
                    .await
                    .unwrap_or(Err(zeromq::ZmqError::NoMessage))
                    .map_err(|e| socket_error("connect", &endpoint, e))
                }
            }
            .await;
            match result {
                Ok(()) => return Ok((socket, monitor)),
                Err(e) => {
                    tracing::debug!("KV events: {e}; retrying in {wait:?}");
                    if self.tx.is_closed() {
                        return Err(Closed);
                    }
                    drop(socket);
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(self.config.max_reconnect_interval);
                }
            }
        }
    }

    /// Reads until the connection drops (`Ok`) or the consumer goes away.
    async fn read(
        &mut self,
        mut socket: SubSocket,
        mut monitor: futures::channel::mpsc::Receiver<SocketEvent>,
    ) -> Result<(), Closed> {
        loop {
            tokio::select! {
                event = monitor.next() => match event {
                    Some(SocketEvent::Disconnected(_)) if !self.config.bind => return Ok(()),
                    Some(SocketEvent::Disconnected(_)) => self.reconnected = true,
                    Some(_) => {}
                    None => return Ok(()),
                },
                message = socket.recv() => match message {
                    Ok(message) => self.on_message(message.into_vec()).await?,
                    Err(e) => {
                        tracing::debug!("KV events: receive failed: {e}");
                        if !self.config.bind {
                            return Ok(());
                        }
                    }
                },
                () = self.tx.closed() => return Err(Closed),
            }
        }
    }

    async fn on_message(&mut self, frames: Vec<Bytes>) -> Result<(), Closed> {
        let [topic, seq, payload] = frames.as_slice() else {
            return self.emit(KvEventMessage::Malformed(KvEventsError::Frames(format!(
                "{} frames, expected [topic, seq, payload]",
                frames.len()
            ))));
        };
        if topic.as_ref() != self.config.topic.as_bytes() {
            return Ok(()); // Another topic sharing the prefix we subscribed to.
        }
        let seq = match seq_from_frame(seq) {
            Ok(seq) => seq,
            Err(e) => return self.emit(KvEventMessage::Malformed(e)),
        };
        if let Some(next) = self.next
            && seq < next
        {
            if !self.reconnected {
                return Ok(()); // Already delivered by a replay.
            }
            self.emit(KvEventMessage::Restarted { seq })?;
            self.next = Some(0);
        }
        self.reconnected = false;
        match self.next {
            Some(next) if seq > next => self.fill(next, Some(seq)).await?,
            _ => {}
        }
        if self.next.is_none_or(|next| seq >= next) {
            self.deliver(seq, payload);
        }
        Ok(())
    }

    /// Replays from `from`; `until` is the live batch that revealed the hole (delivered
    /// by the caller). Reports what the replay could not provide as a gap.
    async fn fill(&mut self, from: u64, until: Option<u64>) -> Result<(), Closed> {
        if let Some(endpoint) = self.config.replay_endpoint.clone() {
            // Each replayed batch is handed on as it arrives: memory stays bounded by the
            // consumer's buffer, whatever the engine's replay buffer holds.
            let timeout = self.config.replay_timeout;
            let result = replay(&endpoint, from, timeout, |seq, payload| {
                let next = self.next.unwrap_or(from);
                if seq < next || until.is_some_and(|u| seq >= u) {
                    return;
                }
                if seq > next {
                    // A closed consumer is noticed by the read loop.
                    let _ = self.emit(KvEventMessage::Gap {
                        first: next,
                        last: seq - 1,
                    });
                }
                self.deliver(seq, &payload);
            })
            .await;
            if let Err(e) = result {
                tracing::warn!("KV events: {e}");
            }
            if self.tx.is_closed() {
                return Err(Closed);
            }
        }
        let next = self.next.unwrap_or(from);
        if let Some(until) = until
            && until > next
        {
            self.emit(KvEventMessage::Gap {
                first: next,
                last: until - 1,
            })?;
        }
        Ok(())
    }

    fn deliver(&mut self, seq: u64, payload: &[u8]) {
        self.next = Some(seq.saturating_add(1));
        let message = match crate::wire::from_slice::<KVEventBatch>(payload) {
            Ok(batch) => KvEventMessage::Batch { seq, batch },
            Err(error) => KvEventMessage::Malformed(KvEventsError::Decode { seq, error }),
        };
        // A closed consumer is noticed by the read loop.
        let _ = self.emit(message);
    }

    /// Hands a message to the consumer without waiting: a full buffer drops it (counted).
    fn emit(&mut self, message: KvEventMessage) -> Result<(), Closed> {
        if self.lagged > 0 {
            match self.tx.try_send(KvEventMessage::Lagged {
                missed: self.lagged,
            }) {
                Ok(()) => self.lagged = 0,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.lagged += 1;
                    return Ok(());
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return Err(Closed),
            }
        }
        match self.tx.try_send(message) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.lagged += 1;
                Ok(())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Closed),
        }
    }
}
