//! `EngineCoreClient`: the frontend side of vLLM's engine protocol.
//!
//! Layering: `startup` binds the sockets and runs the handshake; `shared` holds the
//! state of requests, utility calls and engine load; `io` runs the tasks that write to
//! and read from the engines, reading each output message with `batch` and delivering
//! its outputs to per-request `mailbox`es; `stream` is what `generate` returns
//! ([`OutputStream`]); `engines` makes the routing decision, with `prefix` (opt-in)
//! telling it which engines hold a request's prompt prefix.

mod batch;
mod control;
mod engines;
mod error;
mod io;
mod mailbox;
mod parallel;
mod prefix;
mod shared;
mod startup;
pub mod stats;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use zeromq::{RouterSocket, Socket, SocketEvent};

pub use engines::{ADAPTER_AFFINITY_SLACK, EngineInfo, EngineLoad};
pub use error::ClientError;
pub use parallel::{ParallelStream, child_request_id, child_requests};
pub use prefix::{PREFIX_AFFINITY_SLACK, PrefixRouting, PrefixRoutingStats};
pub use stream::{OutputStream, WeightVersionSpan};

use crate::protocol::{
    EngineCoreOutput, EngineCoreRequest, EngineZmqAddresses, RequestOutputKind, RequestType,
    UtilityCall, engine_identity,
};
use crate::wire::Value;
use engines::{Fleet, PrefixHint};
use prefix::{PrefixDecision, PrefixLookup, PrefixRouter};
use shared::{Command, RequestEntry, Shared, UtilityEntry};

/// How engines find the frontend.
#[derive(Debug, Clone)]
pub enum Startup {
    /// Bind a handshake ROUTER at `address` that engines dial, as engines started with
    /// `vllm serve MODEL --headless --data-parallel-address H --data-parallel-rpc-port P`
    /// do (`address` = `tcp://H:P`). Input and output sockets are bound at
    /// `input_address` / `output_address` (default: `tcp://H:0`, a free port on the same
    /// host) and announced to the engines in the handshake.
    Handshake {
        /// The handshake address, `tcp://host:port` or `ipc://path`.
        address: String,
        /// Where to bind the input ROUTER; `None` picks a free port on the handshake host.
        input_address: Option<String>,
        /// Where to bind the output PULL; `None` picks a free port on the handshake host.
        output_address: Option<String>,
    },
    /// No handshake: bind the input ROUTER and output PULL at these addresses; engines
    /// that already know them connect directly and send their ready responses.
    Direct {
        /// Input ROUTER address.
        input_address: String,
        /// Output PULL address.
        output_address: String,
    },
}

/// Configuration of an [`EngineCoreClient`].
#[derive(Clone)]
pub struct ClientConfig {
    /// How engines connect.
    pub startup: Startup,
    /// Number of data-parallel engines to wait for (`--data-parallel-size`).
    pub engine_count: u16,
    /// Rank of the first engine (`--data-parallel-start-rank`).
    pub start_rank: u16,
    /// How long to wait for every engine to be ready.
    pub ready_timeout: Duration,
    /// This frontend's index among several frontends sharing the engines.
    pub client_index: i64,
    /// Receives request and scheduler statistics ([`ClientConfig::with_stats`]).
    pub stats: Option<Arc<dyn stats::StatsObserver>>,
    /// Prefix-aware routing from the engines' KV-cache events
    /// ([`ClientConfig::with_prefix_routing`]); `None`: vLLM's load-based routing.
    pub prefix_routing: Option<PrefixRouting>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("startup", &self.startup)
            .field("engine_count", &self.engine_count)
            .field("start_rank", &self.start_rank)
            .field("ready_timeout", &self.ready_timeout)
            .field("client_index", &self.client_index)
            .field("stats", &self.stats.is_some())
            .field("prefix_routing", &self.prefix_routing)
            .finish()
    }
}

impl ClientConfig {
    /// Engines dial `tcp://host:port`, like headless vLLM engines.
    pub fn handshake(host: &str, port: u16, engine_count: u16) -> Self {
        Self {
            startup: Startup::Handshake {
                address: format!("tcp://{host}:{port}"),
                input_address: None,
                output_address: None,
            },
            engine_count,
            start_rank: 0,
            ready_timeout: Duration::from_secs(600),
            client_index: 0,
            stats: None,
            prefix_routing: None,
        }
    }

    /// Routes requests without an explicit data-parallel rank to the engine holding
    /// the longest cached prefix of their prompt, within a load slack of the least
    /// loaded engine (beyond vLLM; see [`PrefixRouting`]). Every engine must publish
    /// KV-cache events (`--kv-events-config` with the `zmq` publisher);
    /// [`EngineCoreClient::connect`] subscribes to them and fails with
    /// [`ClientError::Config`] when an engine does not.
    pub fn with_prefix_routing(mut self, routing: PrefixRouting) -> Self {
        self.prefix_routing = Some(routing);
        self
    }

    /// Computes request and scheduler statistics as vLLM's frontend does and hands
    /// them to `observer` (for a metrics exporter; see [`stats`]).
    pub fn with_stats(mut self, observer: Arc<dyn stats::StatsObserver>) -> Self {
        self.stats = Some(observer);
        self
    }

    /// Sets the start-up timeout.
    pub fn with_ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }
}

/// A typed async client for one or more vLLM EngineCore processes (data parallel).
///
/// Cheap to clone; all clones share the connection. Dropping the last clone (or
/// calling [`EngineCoreClient::shutdown`]) stops the I/O tasks.
#[derive(Clone)]
pub struct EngineCoreClient {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    engines: Vec<EngineInfo>,
    input_address: String,
    output_address: String,
    client_index: i64,
    prefix: Option<PrefixRouter>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for EngineCoreClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineCoreClient")
            .field("engines", &self.inner.engines.len())
            .field("input_address", &self.inner.input_address)
            .field("output_address", &self.inner.output_address)
            .field("dead", &self.dead_reason())
            .finish()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.kill(ClientError::Shutdown);
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl EngineCoreClient {
    /// Binds the frontend sockets and waits until all engines are ready.
    pub async fn connect(config: ClientConfig) -> Result<Self, ClientError> {
        let deadline = tokio::time::Instant::now() + config.ready_timeout;
        let ranks: Vec<u16> = (0..config.engine_count)
            .map(|i| config.start_rank + i)
            .collect();
        if ranks.is_empty() {
            return Err(ClientError::InvalidRequest(
                "engine_count must be ≥ 1".into(),
            ));
        }
        let mut sockets = match &config.startup {
            Startup::Handshake {
                address,
                input_address,
                output_address,
            } => {
                let host = tcp_host(address);
                // Unset addresses: a free port on the handshake host, or for ipc a path
                // next to the handshake socket's, one per role.
                let default = |given: &Option<String>, role: &str| {
                    given.clone().unwrap_or_else(|| match &host {
                        Some(h) => format!("tcp://{h}:0"),
                        None => format!("{address}-{role}-{}", std::process::id()),
                    })
                };
                let mut handshake = RouterSocket::new();
                handshake
                    .bind(address)
                    .await
                    .map_err(|e| ClientError::transport(format!("bind {address}: {e}")))?;
                let sockets = startup::bind(
                    &default(input_address, "input"),
                    &default(output_address, "output"),
                )
                .await?;
                let addresses = EngineZmqAddresses {
                    inputs: vec![sockets.input_address.clone()],
                    outputs: vec![sockets.output_address.clone()],
                    ..Default::default()
                };
                tracing::info!(%address, engines = ranks.len(), "waiting for engines to register");
                startup::handshake(
                    &mut handshake,
                    &ranks,
                    &addresses,
                    deadline,
                    config.ready_timeout,
                )
                .await?;
                sockets
            }
            Startup::Direct {
                input_address,
                output_address,
            } => startup::bind(input_address, output_address).await?,
        };
        let ready =
            startup::ready_responses(&mut sockets.input, &ranks, deadline, config.ready_timeout)
                .await?;
        let engines: Vec<EngineInfo> = ready
            .into_iter()
            .map(|(rank, ready)| EngineInfo { rank, ready })
            .collect();

        let (prefix, prefix_tasks) = match &config.prefix_routing {
            Some(routing) => {
                let (router, tasks) = PrefixRouter::start(routing, &engines)?;
                (Some(router), tasks)
            }
            None => (None, Vec::new()),
        };

        let monitor = sockets.input.monitor();
        let (sender, receiver) = sockets.input.split();
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        let identities = ranks
            .iter()
            .map(|r| Bytes::copy_from_slice(&engine_identity(*r)))
            .collect();
        let rotation = (config.engine_count as usize * config.client_index.max(0) as usize)
            % config.engine_count as usize;
        let shared = Shared::new(
            Fleet::new(ranks.len(), config.start_rank, rotation),
            commands_tx,
            identities,
            config.stats.clone(),
        );
        let mut tasks = vec![
            tokio::spawn(io::input_task(shared.clone(), sender, commands_rx)),
            tokio::spawn(io::output_task(shared.clone(), sockets.output)),
            tokio::spawn(watch_disconnects(shared.clone(), monitor)),
            tokio::spawn(io::input_watch_task(receiver)),
        ];
        tasks.extend(prefix_tasks);
        Ok(Self {
            inner: Arc::new(Inner {
                shared,
                engines,
                input_address: sockets.input_address,
                output_address: sockets.output_address,
                client_index: config.client_index,
                prefix,
                tasks,
            }),
        })
    }

    /// Why the client no longer works (an engine died, or it was shut down), or `None`
    /// while it is healthy. A server's health check can answer from this without
    /// calling the engines.
    pub fn dead_reason(&self) -> Option<ClientError> {
        self.inner.shared.lock().dead.clone()
    }

    /// Whether an engine died or the client was shut down.
    pub fn is_dead(&self) -> bool {
        self.dead_reason().is_some()
    }

    /// The engines, in rank order, with what each reported when ready.
    pub fn engines(&self) -> &[EngineInfo] {
        &self.inner.engines
    }

    /// The bound input (ROUTER) address.
    pub fn input_address(&self) -> &str {
        &self.inner.input_address
    }

    /// The bound output (PULL) address.
    pub fn output_address(&self) -> &str {
        &self.inner.output_address
    }

    /// Sends a request to an engine and returns the stream of its outputs (token-only
    /// outputs that queue up while the consumer is busy arrive merged, see
    /// [`OutputStream`]).
    ///
    /// The engine is `request.data_parallel_rank` if set, otherwise the least loaded
    /// (for a request with a LoRA adapter, preferably one that holds it already; with
    /// [`ClientConfig::with_prefix_routing`], preferably one that holds a prefix of its
    /// prompt).
    /// `client_index` and `current_wave` are filled in as vLLM's client does.
    pub async fn generate(
        &self,
        mut request: EngineCoreRequest,
    ) -> Result<OutputStream, ClientError> {
        let shared = &self.inner.shared;
        let adapter = request.lora_request.as_ref().map(|l| l.lora_int_id);
        let (tx, mailbox) = mailbox::Mailbox::new();
        // Hashing and the index lookup happen before the routing lock is taken.
        let lookup = match &self.inner.prefix {
            Some(router) if request.data_parallel_rank.is_none() => Some(router.lookup(&request)),
            Some(_) => Some(PrefixLookup::NotConsidered),
            None => None,
        };
        let hint = match (&lookup, &self.inner.prefix) {
            (Some(PrefixLookup::Matches { matches, .. }), Some(router)) => Some(PrefixHint {
                matches,
                slack: router.load_slack,
            }),
            _ => None,
        };
        let (engine, wake, decision) = {
            let mut state = shared.lock();
            if let Some(e) = &state.dead {
                return Err(e.clone());
            }
            if state.requests.contains_key(&request.request_id) {
                return Err(ClientError::DuplicateRequestId(request.request_id));
            }
            let (engine, decision) = match request.data_parallel_rank {
                Some(rank) => (
                    state.fleet.index_of_rank(rank).ok_or_else(|| {
                        ClientError::InvalidRequest(format!(
                            "no engine with data-parallel rank {rank}"
                        ))
                    })?,
                    None,
                ),
                None => state.fleet.choose(adapter, hint),
            };
            if let Some(id) = adapter {
                state.fleet.adapter_on(engine, id);
            }
            state.fleet.loads[engine].inflight += 1;
            request.client_index = self.inner.client_index;
            request.current_wave = state.fleet.current_wave;
            // Engines paused between waves need a wake-up, as vLLM's coordinator sends.
            let wake = (state.fleet.waves_seen && !state.fleet.engines_running).then(|| {
                state.fleet.engines_running = true;
                state.fleet.current_wave
            });
            let stats = state
                .observer
                .is_some()
                .then(|| Box::new(stats::RequestStats::new(&request)));
            state.requests.insert(
                request.request_id.clone(),
                RequestEntry { engine, tx, stats },
            );
            (engine, wake, decision)
        };
        if let Some(router) = &self.inner.prefix {
            router.record(decision.unwrap_or(PrefixDecision::NotConsidered));
            if let Some(PrefixLookup::Matches { keys, .. }) = &lookup {
                router.sent(engine, keys);
            }
        }
        let request_id = request.request_id.clone();
        let (payload, extra) = crate::encode(&request);
        let mut frames = Vec::with_capacity(1 + extra.len());
        frames.push(Bytes::from(payload));
        frames.extend(extra);
        tracing::trace!(%request_id, engine, "add request");
        if shared
            .commands
            .send(Command::Send {
                engine,
                kind: RequestType::Add,
                frames,
            })
            .is_err()
        {
            shared.lock().requests.remove(&request_id);
            return Err(ClientError::Shutdown);
        }
        if let Some(wave) = wake {
            let rank = engine as i64 + shared.lock().fleet.start_rank as i64;
            io::wake_engines(shared, wave, rank);
        }
        Ok(OutputStream::new(request_id, mailbox, shared.clone()))
    }

    /// Tells the engines' KV connector that a prefill/decode request was rejected before
    /// it reached them, as vLLM's `AsyncLLM.notify_kv_transfer_request_rejected` does:
    /// sends [`EngineCoreRequest::kv_transfer_rejected`] (a pre-aborted request carrying
    /// `kv_transfer_params`), so that the connector frees what it holds for the request
    /// (the remote prefill blocks a decode instance was to pull). The engine is
    /// `data_parallel_rank` if given, else the least loaded one, as for
    /// [`generate`](Self::generate). Nothing comes back: the call returns once the
    /// request is queued for sending.
    ///
    /// A server calls this for a request whose `kv_transfer_params` has a truthy
    /// `do_remote_prefill` and that failed before its engine request was sent, when
    /// the engines run a KV connector (vLLM's `--kv-transfer-config`); the `pipeline`
    /// of `vllm-chat` applies that rule.
    ///
    /// # Errors
    /// [`ClientError::EngineDead`] once the engines are gone,
    /// [`ClientError::InvalidRequest`] for a rank no engine has,
    /// [`ClientError::Shutdown`] after [`shutdown`](Self::shutdown).
    pub async fn notify_kv_transfer_request_rejected(
        &self,
        request_id: impl Into<String>,
        kv_transfer_params: Value,
        data_parallel_rank: Option<i64>,
    ) -> Result<(), ClientError> {
        let mut request = EngineCoreRequest::kv_transfer_rejected(
            request_id,
            kv_transfer_params,
            data_parallel_rank,
        );
        let shared = &self.inner.shared;
        let engine = {
            let mut state = shared.lock();
            if let Some(e) = &state.dead {
                return Err(e.clone());
            }
            let engine = match data_parallel_rank {
                Some(rank) => state.fleet.index_of_rank(rank).ok_or_else(|| {
                    ClientError::InvalidRequest(format!("no engine with data-parallel rank {rank}"))
                })?,
                // vLLM's load-balancing client counts it as waiting, like any request.
                None => state.fleet.choose(None, None).0,
            };
            request.client_index = self.inner.client_index;
            request.current_wave = state.fleet.current_wave;
            engine
        };
        let (payload, extra) = crate::encode(&request);
        let mut frames = Vec::with_capacity(1 + extra.len());
        frames.push(Bytes::from(payload));
        frames.extend(extra);
        tracing::debug!(request_id = %request.request_id, engine, "KV-transfer rejection");
        shared
            .commands
            .send(Command::Send {
                engine,
                kind: RequestType::Add,
                frames,
            })
            .map_err(|_| ClientError::Shutdown)
    }

    /// Sends a request with `n` samples (`sampling_params.n`) as vLLM's parallel
    /// sampling does, and returns the stream of `(index, output)` of its children
    /// ([`ParallelStream`]; the rules are [`child_requests`]'). A request with `n = 1`
    /// is sent unchanged and its outputs come with index 0.
    ///
    /// The children are routed one by one (spread over data-parallel engines, least
    /// loaded first, unless the request pins a rank). If one cannot be sent, those
    /// already sent are aborted and the error returned.
    ///
    /// ```no_run
    /// use futures::StreamExt;
    /// use vllm_client::EngineCoreClient;
    /// use vllm_client::protocol::{EngineCoreRequest, SamplingParams};
    ///
    /// # async fn rollout(client: EngineCoreClient) -> Result<(), vllm_client::ClientError> {
    /// // RL rollout: token ids in, 8 samples with their logprobs out.
    /// let params = SamplingParams {
    ///     n: 8,
    ///     temperature: 1.0,
    ///     seed: Some(1234), // child i samples with seed 1234 + i
    ///     max_tokens: Some(256),
    ///     logprobs: Some(0), // the sampled token's logprob only
    ///     ..SamplingParams::default()
    /// };
    /// let request = EngineCoreRequest::new("rollout-17", vec![151644, 872, 198], params);
    /// let mut samples = vec![Vec::new(); 8];
    /// let mut stream = client.generate_n(request).await?;
    /// while let Some((index, output)) = stream.next().await {
    ///     let output = output?;
    ///     samples[index].extend_from_slice(&output.new_token_ids);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn generate_n(
        &self,
        request: EngineCoreRequest,
    ) -> Result<ParallelStream, ClientError> {
        let parent_id = request.request_id.clone();
        let output_kind = request
            .sampling_params
            .as_ref()
            .map_or(RequestOutputKind::Cumulative, |p| p.output_kind);
        let children = child_requests(request)?;
        let child_ids: Vec<String> = children.iter().map(|c| c.request_id.clone()).collect();
        if children.len() > 1 {
            let mut state = self.inner.shared.lock();
            if state.parents.contains_key(&parent_id) {
                return Err(ClientError::DuplicateRequestId(parent_id));
            }
            state.parents.insert(parent_id.clone(), child_ids);
        }
        let mut streams = Vec::with_capacity(children.len());
        for child in children {
            match self.generate(child).await {
                Ok(stream) => streams.push(stream),
                Err(error) => {
                    // Dropping the streams sent so far aborts them.
                    self.inner.shared.lock().parents.remove(&parent_id);
                    return Err(error);
                }
            }
        }
        Ok(ParallelStream::new(
            parent_id,
            output_kind,
            streams,
            self.inner.shared.clone(),
        ))
    }

    /// Sends a request and collects all its outputs (for tests and simple callers).
    pub async fn generate_all(
        &self,
        request: EngineCoreRequest,
    ) -> Result<Vec<EngineCoreOutput>, ClientError> {
        let mut stream = self.generate(request).await?;
        let mut outputs = Vec::new();
        while let Some(item) = stream.next().await {
            outputs.push(item?);
        }
        Ok(outputs)
    }

    /// Aborts requests. Their streams receive a final output with
    /// [`FinishReason::Abort`](crate::protocol::FinishReason::Abort); unknown or
    /// finished ids are ignored. The request id of a request sent with
    /// [`generate_n`](Self::generate_n) aborts all its unfinished children, as vLLM
    /// aborts a parent request.
    pub fn abort(&self, request_ids: &[&str]) {
        self.inner.shared.abort(request_ids);
    }

    /// The ids of this client's requests in flight (a snapshot).
    pub fn in_flight_request_ids(&self) -> Vec<String> {
        self.inner.shared.lock().requests.keys().cloned().collect()
    }

    /// Number of requests in flight on each engine (by index), as this client counts them.
    pub fn inflight(&self) -> Vec<usize> {
        self.loads().iter().map(|l| l.inflight).collect()
    }

    /// Prefix routing's counters and the size of each engine's view, or `None` when
    /// prefix routing is off ([`ClientConfig::with_prefix_routing`]).
    pub fn prefix_routing_stats(&self) -> Option<PrefixRoutingStats> {
        self.inner.prefix.as_ref().map(PrefixRouter::stats)
    }

    /// How many leading blocks of `request`'s prompt each engine (by index) holds, as
    /// far as prefix routing knows (matches shorter than
    /// [`PrefixRouting::min_match_blocks`] count as 0); `None` when prefix routing is
    /// off or the request is not a candidate for it (no prompt tokens, multimodal,
    /// prompt embeddings, `skip_reading_prefix_cache`).
    pub fn prefix_matches(&self, request: &EngineCoreRequest) -> Option<Vec<usize>> {
        match self.inner.prefix.as_ref()?.lookup(request) {
            PrefixLookup::Matches { matches, .. } if matches.is_empty() => {
                Some(vec![0; self.inner.engines.len()])
            }
            PrefixLookup::Matches { matches, .. } => Some(matches),
            PrefixLookup::NotConsidered => None,
        }
    }

    /// The load of each engine (by index): this client's in-flight requests and the
    /// engine's last reported scheduler counts.
    pub fn loads(&self) -> Vec<EngineLoad> {
        self.inner.shared.lock().fleet.loads.clone()
    }

    /// Calls `method(*args)` on every engine and returns the first engine's result, as
    /// vLLM's data-parallel client does (`call_utility_async`); a failure on any engine
    /// fails the call with vLLM's message.
    pub async fn call_utility(&self, method: &str, args: Vec<Value>) -> Result<Value, ClientError> {
        let results = self.call_utility_all(method, args).await?;
        Ok(results.into_iter().next().unwrap_or_default())
    }

    /// Calls `method(*args)` on every engine and returns their results in engine order
    /// (vLLM's `call_utility_all_async`).
    pub async fn call_utility_all(
        &self,
        method: &str,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, ClientError> {
        let engines: Vec<usize> = (0..self.inner.engines.len()).collect();
        self.call_utility_on(&engines, method, args).await
    }

    /// Calls `method(*args)` on every engine and returns their common result; engines
    /// that disagree fail the call with vLLM's message (`call_utility_consensus_async`).
    pub async fn call_utility_consensus(
        &self,
        method: &str,
        args: Vec<Value>,
    ) -> Result<Value, ClientError> {
        let results = self.call_utility_all(method, args).await?;
        let first = results.first().cloned().unwrap_or_default();
        if results.iter().any(|r| *r != first) {
            return Err(ClientError::UnexpectedResult {
                method: method.to_owned(),
                detail: format!("Engines returned different {method} results: {results:?}"),
            });
        }
        Ok(first)
    }

    /// Calls `method(*args)` on the engines with the given indices and returns their
    /// results in that order.
    pub async fn call_utility_on(
        &self,
        engines: &[usize],
        method: &str,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, ClientError> {
        if let Some(&engine) = engines.iter().find(|&&e| e >= self.inner.engines.len()) {
            return Err(ClientError::InvalidRequest(format!("no engine {engine}")));
        }
        if engines.is_empty() {
            return Ok(Vec::new());
        }
        let shared = &self.inner.shared;
        let call_id = control::next_call_id();
        let (tx, rx) = oneshot::channel();
        {
            let mut state = shared.lock();
            if let Some(e) = &state.dead {
                return Err(e.clone());
            }
            state.utilities.insert(
                call_id,
                UtilityEntry {
                    method: method.to_owned(),
                    engines: engines.to_vec(),
                    results: vec![None; engines.len()],
                    pending: engines.len(),
                    tx: Some(tx),
                },
            );
        }
        let (payload, _) = crate::encode(&UtilityCall {
            client_index: self.inner.client_index,
            call_id,
            method: method.to_owned(),
            args,
        });
        let payload = Bytes::from(payload);
        for &engine in engines {
            tracing::debug!(method, call_id, engine, "utility call");
            let _ = shared.commands.send(Command::Send {
                engine,
                kind: RequestType::Utility,
                frames: vec![payload.clone()],
            });
        }
        rx.await.unwrap_or(Err(ClientError::Shutdown))
    }

    /// Stops the client: in-flight requests end with [`ClientError::Shutdown`].
    pub fn shutdown(&self) {
        self.inner.shared.kill(ClientError::Shutdown);
        for task in &self.inner.tasks {
            task.abort();
        }
    }
}

/// The host of a `tcp://host:port` address.
fn tcp_host(address: &str) -> Option<String> {
    let rest = address.strip_prefix("tcp://")?;
    let (host, _port) = rest.rsplit_once(':')?;
    Some(host.to_owned())
}

/// Treats a lost engine connection as the engine's death, as vLLM does.
async fn watch_disconnects(
    shared: Arc<Shared>,
    mut monitor: futures::channel::mpsc::Receiver<SocketEvent>,
) {
    while let Some(event) = monitor.next().await {
        if let SocketEvent::Disconnected(peer) = event {
            let rank = startup::rank_of(&peer);
            shared.kill(ClientError::EngineDead(
                format!("lost the connection to engine rank {rank:?}").into(),
            ));
        }
    }
}
