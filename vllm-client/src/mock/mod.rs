//! A mock EngineCore: the engine side of vLLM 0.33.0's protocol, for tests, examples and
//! benchmarks of frontends without a GPU.
//!
//! The mock dials a frontend's handshake address exactly like a headless vLLM engine
//! (`vllm serve MODEL --headless …`), registers with a ready response, then serves ADD,
//! ABORT, START_DP_WAVE and UTILITY messages. It generates tokens from a
//! [`OutputMode`] (a fixed tokenized text, an echo of the prompt or seeded random
//! tokens) at a configurable rate, honouring `max_tokens`, `min_tokens`,
//! `stop_token_ids`, EOS and `ignore_eos` with vLLM's rules, and attaches logprobs when
//! asked. Its [`MockEngineHandle`] injects faults: the engine can be told to die (it
//! sends `ENGINE_CORE_DEAD`, as a crashing vLLM engine does) or to stall.
//!
//! ```no_run
//! use vllm_client::mock::{MockConfig, MockEngine, OutputMode};
//!
//! # async fn example() -> Result<(), vllm_client::mock::MockError> {
//! let config = MockConfig { output: OutputMode::Echo, ..MockConfig::default() };
//! // A frontend is waiting for engine 0 on this handshake address.
//! let engine = MockEngine::spawn("tcp://127.0.0.1:5570", 0, config);
//! // … use the frontend; then:
//! engine.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! With [`MockConfig::kv_events`] (vLLM's `--kv-events-config`) the engine keeps a prefix
//! cache of [`MockConfig::num_gpu_blocks`] blocks of [`MockConfig::block_size`] tokens
//! and publishes, on vLLM's PUB and replay sockets, the KV-cache events a vLLM engine
//! publishes for the same requests: stores of computed full blocks (hashed as vLLM
//! hashes them), LRU evictions. Each request's first output reports the prompt tokens it
//! found cached (`PrefillStats`), and scheduler statistics carry vLLM's
//! `prefix_cache_stats`. With [`MockConfig::prefill_tokens_per_second`] prefill costs
//! time for the uncached tokens only, so time to first token depends on cache hits. The
//! `reset_prefix_cache` utility call clears an idle cache (`AllBlocksCleared`, published
//! with the next step) and answers `false` while a request holds blocks; with
//! `reset_running_requests` the running requests give up their blocks first, as vLLM
//! preempts them, and cache them anew at their next step.
//!
//! Malformed input from the frontend is logged and skipped, never a panic.

mod config;
mod engine;
mod kv_cache;
mod kv_publisher;
mod lora;
mod sequence;
mod startup;
mod utility;
mod worker;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use config::{MockConfig, MockLora, OutputMode};

/// What the emulated KV connector ([`MockConfig::kv_connector`]) did for a decode
/// request that finished before its remote prefill was pulled (a frontend's pre-aborted
/// rejection notice, an abort while it waited, a refusal while paused): it freed the
/// prefill instance's blocks, as NixlConnector's `request_finished` has its worker tell
/// the prefill instance.
#[derive(Debug, Clone, PartialEq)]
pub struct FreedRemotePrefill {
    /// The engine request id.
    pub request_id: String,
    /// The request's `kv_transfer_params` (`do_remote_prefill`, the prefill instance's
    /// engine id, blocks and address).
    pub kv_transfer_params: crate::Value,
}

/// What an engine shares with its handle for tests to read.
#[derive(Debug, Default)]
struct Observed {
    /// The [`FreedRemotePrefill`]s, oldest first.
    freed: Vec<FreedRemotePrefill>,
    /// The last [`ADDED_KEPT`] requests added, oldest first.
    added: VecDeque<crate::protocol::EngineCoreRequest>,
}

/// How many added requests [`MockEngineHandle::added_requests`] keeps.
const ADDED_KEPT: usize = 256;

type ObservedLog = Arc<Mutex<Observed>>;

/// Locks the log, whatever panicked while holding it.
fn observed(log: &ObservedLog) -> std::sync::MutexGuard<'_, Observed> {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

use crate::protocol::{EngineCoreReadyResponse, EngineZmqAddresses, VLLM_VERSION};
use engine::{Command, Engine};
use sequence::Sequence;

/// Why a mock engine stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// A ZMQ socket failed.
    #[error("zmq: {0}")]
    Zmq(#[from] zeromq::ZmqError),
    /// A start-up message could not be decoded.
    #[error("decode: {0}")]
    Decode(#[from] crate::DecodeError),
    /// The start-up handshake failed.
    #[error("handshake: {0}")]
    Handshake(String),
    /// Every input connection is gone.
    #[error("all input sockets closed")]
    InputClosed,
    /// The engine task panicked or was cancelled.
    #[error("engine task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Entry points that start a mock engine on the current tokio runtime.
#[derive(Debug, Clone, Copy)]
pub struct MockEngine;

impl MockEngine {
    /// Starts an engine with data-parallel rank `rank` that performs the start-up
    /// handshake with the frontend bound at `handshake_address` (e.g.
    /// `tcp://127.0.0.1:5570`), then serves it. Must be called within a tokio runtime.
    pub fn spawn(
        handshake_address: impl Into<String>,
        rank: u16,
        config: MockConfig,
    ) -> MockEngineHandle {
        let address = handshake_address.into();
        MockEngineHandle::start(move |mut commands, observed| async move {
            let timeout = config.handshake_timeout;
            let startup = async {
                let kv_events = engine::start_kv_events(&config, rank).await?;
                let (connections, _) = startup::handshake(&address, rank, timeout, |a| {
                    ready_response(&config, rank, a)
                })
                .await?;
                Ok((connections, kv_events))
            };
            match starting(&mut commands, startup).await? {
                Some((connections, kv_events)) => {
                    Engine::run(connections, config, rank, kv_events, commands, observed).await
                }
                None => Ok(()),
            }
        })
    }

    /// Starts an engine that skips the handshake and connects straight to a frontend's
    /// input and output addresses (sending its ready response on each input first).
    pub fn spawn_connected(
        addresses: EngineZmqAddresses,
        rank: u16,
        config: MockConfig,
    ) -> MockEngineHandle {
        MockEngineHandle::start(move |mut commands, observed| async move {
            let ready = ready_response(&config, rank, &addresses);
            let startup = async {
                let kv_events = engine::start_kv_events(&config, rank).await?;
                let connections = startup::connect(&addresses, rank, &ready).await?;
                Ok((connections, kv_events))
            };
            match starting(&mut commands, startup).await? {
                Some((connections, kv_events)) => {
                    Engine::run(connections, config, rank, kv_events, commands, observed).await
                }
                None => Ok(()),
            }
        })
    }
}

/// Runs start-up to its end, unless the handle stops the engine first (`None`): an
/// engine still waiting for its frontend then stops at once.
async fn starting<T>(
    commands: &mut mpsc::UnboundedReceiver<Command>,
    startup: impl Future<Output = Result<T, MockError>>,
) -> Result<Option<T>, MockError> {
    tokio::pin!(startup);
    loop {
        tokio::select! {
            result = &mut startup => return result.map(Some),
            command = commands.recv() => match command {
                Some(Command::Stall(_)) => tracing::debug!("stall ignored during start-up"),
                _ => return Ok(None),
            },
        }
    }
}

/// Controls a running mock engine. Dropping the handle shuts the engine down.
#[derive(Debug)]
pub struct MockEngineHandle {
    commands: mpsc::UnboundedSender<Command>,
    task: JoinHandle<Result<(), MockError>>,
    observed: ObservedLog,
}

impl MockEngineHandle {
    fn start<F, Fut>(run: F) -> Self
    where
        F: FnOnce(mpsc::UnboundedReceiver<Command>, ObservedLog) -> Fut,
        Fut: Future<Output = Result<(), MockError>> + Send + 'static,
    {
        let (commands, receiver) = mpsc::unbounded_channel();
        let observed = ObservedLog::default();
        let task = tokio::spawn(run(receiver, observed.clone()));
        Self {
            commands,
            task,
            observed,
        }
    }

    /// The remote prefills the emulated KV connector freed so far, oldest first: the
    /// decode requests that finished before they were scheduled, e.g. a frontend's
    /// pre-aborted KV-transfer rejection notice
    /// ([`EngineCoreRequest::kv_transfer_rejected`](crate::protocol::EngineCoreRequest::kv_transfer_rejected)).
    /// Always empty without [`MockConfig::kv_connector`].
    pub fn freed_remote_prefills(&self) -> Vec<FreedRemotePrefill> {
        observed(&self.observed).freed.clone()
    }

    /// The requests the engine was asked to add, as it decoded them (the last 256,
    /// oldest first): what a frontend put on the wire, for tests of its request
    /// building.
    pub fn added_requests(&self) -> Vec<crate::protocol::EngineCoreRequest> {
        observed(&self.observed).added.iter().cloned().collect()
    }

    /// Makes the engine die: it sends `ENGINE_CORE_DEAD` to every frontend and stops.
    pub fn die(&self) {
        let _ = self.commands.send(Command::Die);
    }

    /// Makes the engine stop answering for `duration`: no input is read and no token
    /// generated meanwhile; what arrived is handled afterwards.
    pub fn stall(&self, duration: Duration) {
        let _ = self.commands.send(Command::Stall(duration));
    }

    /// Whether the engine has stopped.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Aborts the requests in flight (with abort outputs, like a vLLM engine on
    /// SIGTERM), stops the engine and returns how it ended.
    pub async fn shutdown(self) -> Result<(), MockError> {
        let _ = self.commands.send(Command::Shutdown);
        self.wait().await
    }

    /// Waits until the engine stops (after [`Self::die`], or on an error) and returns
    /// how it ended.
    pub async fn wait(mut self) -> Result<(), MockError> {
        (&mut self.task).await?
    }
}

/// The `EngineCoreReadyResponse` of a mock engine with this configuration.
fn ready_response(
    config: &MockConfig,
    rank: u16,
    addresses: &EngineZmqAddresses,
) -> EngineCoreReadyResponse {
    let block_size = config.block_size.max(1);
    let num_blocks = config.num_gpu_blocks();
    EngineCoreReadyResponse {
        max_model_len: config.max_model_len as i64,
        num_gpu_blocks: num_blocks as i64,
        block_size: block_size as i64,
        dp_stats_address: addresses.frontend_stats_publish_address.clone(),
        dtype: "bfloat16".into(),
        vllm_version: VLLM_VERSION.into(),
        data_parallel_size: config.data_parallel_size.max(1) as i64,
        data_parallel_rank: i64::from(rank),
        max_num_seqs: config.max_num_seqs as i64,
        max_num_batched_tokens: 8192,
        instance_id: format!("mock-engine-{rank}-{}", std::process::id()),
        supports_lora: config.lora.is_some(),
        max_loras: config.lora.map_or(0, |l| l.max_loras as i64),
        kv_cache_size_tokens: Some(num_blocks.saturating_mul(block_size) as i64),
        kv_events_config: config
            .kv_events_for_rank(rank)
            .map(|c| crate::wire::from_slice(&crate::wire::to_vec(&c)).unwrap_or_default()),
        kv_cache_max_concurrency: Some(config.max_num_seqs as f64),
        enable_sleep_mode: config.enable_sleep_mode,
        weight_transfer_backend: config.weight_transfer_backend.clone(),
        coordinator_input_address: addresses.coordinator_input.clone(),
        coordinator_output_address: addresses.coordinator_output.clone(),
        ..EngineCoreReadyResponse::default()
    }
}
