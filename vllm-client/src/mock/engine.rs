//! The engine loop: requests in, steps of generated tokens out.
//!
//! One task owns the state and the output sockets. Each input socket has a reader task
//! that forwards its messages over a channel, so that the loop can wait at once for
//! input, for its next step and for commands from the [`super::MockEngineHandle`].
//! Like vLLM's `EngineCoreProc.run_busy_loop`, the loop handles all queued input before
//! each step, and steps only while there is work.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zeromq::{DealerSocket, PushSocket, SocketRecv, SocketSend, ZmqMessage};

use crate::protocol::{
    Abort, ENGINE_CORE_DEAD, EngineCoreEventType, EngineCoreOutput, EngineCoreOutputs,
    EngineCoreRequest, FinishReason, RequestError, RequestType, SchedulerStats, StartDpWave,
    UtilityCall,
};

use super::kv_cache::KvCache;
use super::kv_publisher::KvPublisher;
use super::lora::Adapters;
use super::startup::Connections;
use super::worker::Worker;
use super::{MockConfig, MockError, OutputMode, Sequence};
use crate::Value;
use crate::kv_events::{BlockHasher, KVEventBatch, NoneHashSeed};

/// Requests from the [`super::MockEngineHandle`].
#[derive(Debug)]
pub(crate) enum Command {
    /// Send `ENGINE_CORE_DEAD` and stop.
    Die,
    /// Stop answering (no input handled, no steps) for this long.
    Stall(Duration),
    /// Abort what runs (with abort outputs, as a vLLM engine on SIGTERM) and stop.
    Shutdown,
}

/// vLLM's scheduler `PauseState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pause {
    /// Scheduling normally.
    Unpaused,
    /// New requests wait; running ones continue.
    PausedNew,
    /// Nothing is stepped.
    PausedAll,
}

/// The engine state.
pub(crate) struct Engine {
    pub(crate) config: MockConfig,
    pub(crate) rank: u16,
    text: Arc<[u32]>,
    outputs: Vec<PushSocket>,
    pub(crate) running: Vec<Sequence>,
    pub(crate) waiting: VecDeque<Sequence>,
    pub(crate) pause: Pause,
    /// Set by `pause_generation`: new requests are refused with a retryable error.
    pub(crate) reject_new_requests: bool,
    /// The executor's sleeping memory (`"weights"`, `"kv_cache"`), as vLLM's
    /// `Executor.sleeping_tags`.
    pub(crate) sleeping_tags: BTreeSet<&'static str>,
    pub(crate) adapters: Adapters,
    pub(crate) worker: Worker,
    /// `EngineCore._weight_version` (`get_weight_version`; `"default"` until set).
    pub(crate) weight_version: String,
    /// Utility calls answered once no request runs (`pause_scheduler(mode="wait")`).
    pub(crate) idle_waiters: Vec<(usize, u64)>,
    /// Finished request ids per client, for `finished_requests`.
    finished: BTreeMap<usize, Vec<String>>,
    /// `(running, waiting)` as last reported in scheduler stats.
    reported_counts: Option<(usize, usize)>,
    /// Data-parallel wave state (`DPEngineCoreProc`).
    current_wave: u64,
    engines_running: bool,
    /// The engine's clock: `timestamp` of outputs and events, in seconds (vLLM uses
    /// `time.monotonic()`; the frontend only compares one engine's times).
    started: std::time::Instant,
    /// The prefix cache, kept when KV events are published.
    kv: Option<KvCache>,
    /// Where its events go.
    kv_publisher: Option<KvPublisher>,
    /// `PrefixCacheStats` since the last scheduler stats: requests, queried tokens,
    /// hit tokens.
    prefix_stats: (u64, u64, u64),
    /// What the emulated KV connector freed and the requests added, shared with
    /// the handle.
    observed: super::ObservedLog,
}

/// The prefix cache and its bound publisher, if the configuration asks for KV-cache
/// events. Called before the engine announces itself: vLLM's scheduler binds the
/// publisher in `EngineCore.__init__`, before the handshake's READY, so a frontend that
/// subscribes once the engine is up finds the sockets there.
pub(crate) async fn start_kv_events(
    config: &MockConfig,
    rank: u16,
) -> Result<Option<(KvCache, KvPublisher)>, MockError> {
    let Some(events) = config.kv_events_for_rank(rank) else {
        return Ok(None);
    };
    if !config.enable_prefix_caching {
        tracing::warn!(
            "KV cache events are on, but prefix caching is not enabled. \
             Use --enable-prefix-caching to enable."
        );
        return Ok(None);
    }
    let seed = NoneHashSeed::from_env_value(config.python_hash_seed.as_deref());
    let hasher = BlockHasher::new(
        config.prefix_caching_hash_algo,
        config.block_size.max(1),
        seed,
    )
    .map_err(|e| MockError::Handshake(format!("KV events: {e}")))?;
    let cache = KvCache::new(hasher, config.num_gpu_blocks());
    Ok(Some((cache, KvPublisher::start(&events).await?)))
}

impl Engine {
    pub(crate) fn new(
        config: MockConfig,
        rank: u16,
        outputs: Vec<PushSocket>,
        kv_events: Option<(KvCache, KvPublisher)>,
        observed: super::ObservedLog,
    ) -> Self {
        let text: Arc<[u32]> = match &config.output {
            OutputMode::FixedText(tokens) => tokens.as_slice().into(),
            _ => Arc::from(Vec::new()),
        };
        let adapters = Adapters::new(config.lora);
        let (kv, kv_publisher) = kv_events.unzip();
        Self {
            config,
            rank,
            text,
            outputs,
            running: Vec::new(),
            waiting: VecDeque::new(),
            pause: Pause::Unpaused,
            reject_new_requests: false,
            sleeping_tags: BTreeSet::new(),
            adapters,
            worker: Worker::default(),
            weight_version: "default".into(),
            idle_waiters: Vec::new(),
            finished: BTreeMap::new(),
            reported_counts: Some((0, 0)),
            current_wave: 0,
            engines_running: false,
            started: std::time::Instant::now(),
            kv,
            kv_publisher,
            prefix_stats: (0, 0, 0),
            observed,
        }
    }

    /// `reset_prefix_cache`: clears the prefix cache (publishing `AllBlocksCleared` with
    /// the next step) unless a request holds blocks; with `reset_running_requests` the
    /// running requests give theirs up first, so it always succeeds. True without a
    /// cache.
    pub(crate) fn reset_prefix_cache(&mut self, reset_running_requests: bool) -> bool {
        self.kv.as_mut().is_none_or(|kv| {
            if reset_running_requests {
                kv.preempt_all();
            }
            kv.reset()
        })
    }

    /// Publishes the cache's events of this step as one batch.
    fn publish_kv_events(&mut self) {
        let (Some(kv), Some(publisher)) = (self.kv.as_mut(), self.kv_publisher.as_ref()) else {
            return;
        };
        let events = kv.take_events();
        if events.is_empty() {
            return;
        }
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        publisher.publish(KVEventBatch {
            ts,
            events,
            data_parallel_rank: Some(i64::from(self.rank)),
        });
    }

    /// Runs the engine until it is told to die or shut down.
    pub(crate) async fn run(
        connections: Connections,
        config: MockConfig,
        rank: u16,
        kv_events: Option<(KvCache, KvPublisher)>,
        mut commands: mpsc::UnboundedReceiver<Command>,
        observed: super::ObservedLog,
    ) -> Result<(), MockError> {
        let Connections {
            inputs,
            outputs,
            handshake: _handshake,
        } = connections;
        let (input_tx, mut input_rx) = mpsc::channel(1024);
        let readers: Vec<JoinHandle<()>> = inputs
            .into_iter()
            .map(|socket| tokio::spawn(read_input(socket, input_tx.clone())))
            .collect();
        drop(input_tx);
        let _abort_readers = AbortOnDrop(readers);

        let mut engine = Engine::new(config, rank, outputs, kv_events, observed);
        let interval = engine.config.step_interval();
        let mut next_step = Instant::now();
        let mut stalled_until: Option<Instant> = None;
        loop {
            let stalled = stalled_until.is_some();
            let stepping = !stalled && engine.has_work();
            if !stepping {
                // Idle: the first step after new work comes at once.
                next_step = Instant::now();
            }
            tokio::select! {
                biased;
                command = commands.recv() => match command {
                    Some(Command::Die) => return engine.die().await,
                    Some(Command::Stall(duration)) => {
                        tracing::info!(?duration, "mock engine stalling");
                        stalled_until = Some(Instant::now() + duration);
                    }
                    Some(Command::Shutdown) | None => return engine.shutdown().await,
                },
                () = sleep_until(stalled_until), if stalled => stalled_until = None,
                frames = input_rx.recv(), if !stalled => match frames {
                    Some(frames) => {
                        let was_idle = !engine.has_work();
                        engine.handle_input(frames).await?;
                        if was_idle {
                            // The first step comes at once and the cadence counts from
                            // it, not from when the engine fell idle (which made the
                            // first two steps come back to back after a pause).
                            next_step = Instant::now();
                        }
                    }
                    None => return Err(MockError::InputClosed),
                },
                () = sleep_until(Some(next_step).filter(|_| !interval.is_zero())), if stepping => {
                    engine.step().await?;
                    // Keep the cadence, without bursts to catch up after a slow step.
                    next_step = (next_step + interval).max(Instant::now());
                    if interval.is_zero() {
                        tokio::task::yield_now().await;
                    }
                }
            }
        }
    }

    /// Dispatches one message from a frontend: `[request type, payload, extra frames…]`.
    async fn handle_input(&mut self, frames: Vec<Bytes>) -> Result<(), MockError> {
        let Some(kind) = frames.first().and_then(|f| RequestType::from_frame(f)) else {
            tracing::warn!(
                frames = frames.len(),
                "skipping input without a valid request type"
            );
            return Ok(());
        };
        let (payload, extra) = match frames.get(1) {
            Some(payload) => (payload, &frames[2..]),
            None => {
                tracing::warn!(?kind, "skipping input without a payload");
                return Ok(());
            }
        };
        match kind {
            RequestType::Add => match crate::decode::<EngineCoreRequest>(payload, extra) {
                Ok(request) => self.add(request).await,
                Err(error) => {
                    tracing::warn!(%error, "skipping malformed ADD");
                    Ok(())
                }
            },
            RequestType::Abort => {
                match crate::decode::<Abort>(payload, extra) {
                    Ok(Abort(ids)) => self.abort(&ids),
                    Err(error) => tracing::warn!(%error, "skipping malformed ABORT"),
                }
                Ok(())
            }
            RequestType::StartDpWave => {
                match crate::decode::<StartDpWave>(payload, extra) {
                    Ok(wave) => self.start_dp_wave(wave),
                    Err(error) => tracing::warn!(%error, "skipping malformed START_DP_WAVE"),
                }
                Ok(())
            }
            RequestType::Utility => match crate::decode::<UtilityCall>(payload, extra) {
                Ok(call) => self.utility(call).await,
                Err(error) => {
                    tracing::warn!(%error, "skipping malformed UTILITY call");
                    Ok(())
                }
            },
        }
    }

    /// The output socket of a client; unknown clients fall back to the first frontend.
    pub(crate) fn client(&self, client_index: i64) -> usize {
        match usize::try_from(client_index) {
            Ok(c) if c < self.outputs.len() => c,
            _ => {
                tracing::warn!(client_index, "unknown client index, answering client 0");
                0
            }
        }
    }

    async fn add(&mut self, request: EngineCoreRequest) -> Result<(), MockError> {
        {
            let mut observed = super::observed(&self.observed);
            if observed.added.len() == super::ADDED_KEPT {
                observed.added.pop_front();
            }
            observed.added.push_back(request.clone());
        }
        let client = self.client(request.client_index);
        if request.sampling_params.is_none() {
            // Pooling requests: the mock only generates, so this is a request error.
            return self
                .send_finished(client, vec![request.request_id], FinishReason::Error, None)
                .await;
        }
        if self.reject_new_requests && !request.abort_immediately {
            let error = RequestError {
                code: "engine_paused".into(),
                message: "Generation is paused. Please retry after it resumes.".into(),
                retryable: true,
            };
            // vLLM's `_reject_add_while_paused`: the KV connector still frees what it
            // holds for the request (the request goes through `abort_immediately`).
            let seq = Sequence::new(request, client, &self.config, &self.text);
            self.connector_finished(&seq);
            let ids = vec![seq.request_id];
            return self
                .send_finished(client, ids, FinishReason::Error, Some(error))
                .await;
        }
        if request.abort_immediately {
            // vLLM's `EngineCore.add_request` with `abort_immediately` (a frontend's
            // KV-transfer rejection notice): the scheduler takes the request and
            // finishes it as aborted at once, so the KV connector's `request_finished`
            // runs; it is never scheduled, so nothing is generated, no cache block or
            // adapter is touched, and no output is sent (aborts only show in
            // `finished_requests`).
            let seq = Sequence::new(request, client, &self.config, &self.text);
            self.connector_finished(&seq);
            self.finish_aborted(vec![seq]);
            return Ok(());
        }
        if self.config.dp_waves {
            self.current_wave = self.current_wave.max(request.current_wave);
            self.engines_running |= self.pause == Pause::Unpaused;
        }
        if let Some(lora) = &request.lora_request {
            self.adapters.use_for_request(lora.lora_int_id);
        }
        let mut cached_tokens = 0;
        if let (Some(kv), Some(prompt)) = (self.kv.as_mut(), request.prompt_token_ids.as_ref()) {
            let salt = request.cache_salt.as_deref();
            cached_tokens = kv.add(
                &request.request_id,
                prompt,
                request.lora_request.as_ref(),
                salt,
            );
        }
        let mut seq = Sequence::new(request, client, &self.config, &self.text);
        seq.cached_tokens = cached_tokens;
        seq.record(EngineCoreEventType::Queued, self.now());
        self.waiting.push_back(seq);
        Ok(())
    }

    /// A client's ABORT: like `Scheduler.finish_requests`, the requests just end; their
    /// ids are reported only in `finished_requests` (when enabled).
    fn abort(&mut self, ids: &[String]) {
        let aborted = self.remove(|s| ids.contains(&s.request_id));
        self.finish_aborted(aborted);
    }

    /// Requests finished as aborted without an output (their ids reported in
    /// `finished_requests` when enabled); the connector has seen them finish.
    fn finish_aborted(&mut self, aborted: Vec<Sequence>) {
        if self.config.include_finished_set {
            for seq in aborted {
                self.finished
                    .entry(seq.client_index)
                    .or_default()
                    .push(seq.request_id);
            }
        }
    }

    /// The emulated KV connector's `request_finished` for a request that ends: one
    /// still waiting for its remote prefill (never scheduled) makes the connector free
    /// the prefill instance's blocks, as NixlConnector does (its worker tells the
    /// prefill instance). Recorded for [`super::MockEngineHandle::freed_remote_prefills`]
    /// and logged.
    pub(crate) fn connector_finished(&self, seq: &Sequence) {
        let Some(params) = &seq.remote_prefill else {
            return;
        };
        tracing::info!(
            target: "vllm_client::mock::kv_connector",
            request_id = %seq.request_id,
            kv_transfer_params = ?params,
            "KV connector: request finished before its remote prefill was pulled; freeing the remote blocks"
        );
        super::observed(&self.observed)
            .freed
            .push(super::FreedRemotePrefill {
                request_id: seq.request_id.clone(),
                kv_transfer_params: params.clone(),
            });
    }

    /// Removes the requests that match, running and waiting.
    fn remove(&mut self, matches: impl Fn(&Sequence) -> bool) -> Vec<Sequence> {
        let (mut removed, running): (Vec<_>, Vec<_>) = std::mem::take(&mut self.running)
            .into_iter()
            .partition(&matches);
        let (removed_waiting, waiting): (VecDeque<_>, VecDeque<_>) =
            std::mem::take(&mut self.waiting)
                .into_iter()
                .partition(&matches);
        self.running = running;
        self.waiting = waiting;
        removed.extend(removed_waiting);
        for seq in &removed {
            self.connector_finished(seq);
        }
        if let Some(kv) = self.kv.as_mut() {
            for seq in &removed {
                kv.release(&seq.request_id);
            }
        }
        removed
    }

    /// Aborts every request and tells their clients, as vLLM does when it pauses with
    /// `mode="abort"` or shuts down (`_send_abort_outputs`).
    pub(crate) async fn abort_all(&mut self) -> Result<(), MockError> {
        let mut by_client: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for seq in self.remove(|_| true) {
            by_client
                .entry(seq.client_index)
                .or_default()
                .push(seq.request_id);
        }
        for (client, ids) in by_client {
            self.send_finished(client, ids, FinishReason::Abort, None)
                .await?;
        }
        Ok(())
    }

    /// Finishes requests without tokens (`_send_finish_outputs_to_client`).
    async fn send_finished(
        &mut self,
        client: usize,
        ids: Vec<String>,
        reason: FinishReason,
        error: Option<RequestError>,
    ) -> Result<(), MockError> {
        let outputs = ids
            .iter()
            .map(|id| EngineCoreOutput {
                request_id: id.clone(),
                finish_reason: Some(reason),
                error: error.clone().map(Box::new),
                ..EngineCoreOutput::default()
            })
            .collect();
        let message = EngineCoreOutputs {
            outputs,
            finished_requests: Some(ids),
            ..EngineCoreOutputs::default()
        };
        self.send(client, message).await
    }

    /// `DPEngineCoreProc._handle_client_request(START_DP_WAVE)`.
    fn start_dp_wave(
        &mut self,
        StartDpWave {
            wave,
            exclude_engine_index,
        }: StartDpWave,
    ) {
        if !self.config.dp_waves {
            tracing::debug!(
                wave,
                "START_DP_WAVE ignored: not in data-parallel wave mode"
            );
            return;
        }
        if exclude_engine_index != i64::from(self.rank) && wave >= self.current_wave {
            self.current_wave = wave;
            self.engines_running = true;
        }
    }

    fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn counts(&self) -> (usize, usize) {
        (self.running.len(), self.waiting.len())
    }

    fn can_step(&self) -> bool {
        match self.pause {
            Pause::PausedAll => false,
            Pause::PausedNew => !self.running.is_empty(),
            Pause::Unpaused => !self.running.is_empty() || !self.waiting.is_empty(),
        }
    }

    /// Whether a step has something to do or report.
    fn has_work(&self) -> bool {
        self.can_step()
            || !self.finished.is_empty()
            || self.reported_counts != Some(self.counts())
            || (self.config.dp_waves && self.engines_running)
            || (!self.idle_waiters.is_empty() && self.running.is_empty())
    }

    /// One engine step: admit waiting requests, generate for every running one, send each
    /// client its outputs with the finished ids and scheduler statistics.
    async fn step(&mut self) -> Result<(), MockError> {
        let mut prefill = 0;
        if self.pause == Pause::Unpaused {
            while self.running.len() < self.config.max_num_seqs.max(1) {
                let Some(mut seq) = self.waiting.pop_front() else {
                    break;
                };
                seq.record(EngineCoreEventType::Scheduled, self.now());
                // Scheduled: the connector pulls the remote prefill's blocks.
                seq.remote_prefill = None;
                prefill += seq.uncached_prompt_tokens();
                if self.kv.is_some() {
                    let stats = &mut self.prefix_stats;
                    stats.0 += 1;
                    stats.1 += seq.prompt_len() as u64;
                    stats.2 += seq.cached_tokens as u64;
                }
                self.running.push(seq);
            }
        }
        // The step computes the new requests' prompts (whole, no chunking).
        let prefill_time = self.config.prefill_time(prefill);
        if !prefill_time.is_zero() {
            tokio::time::sleep(prefill_time).await;
        }
        let mut messages: BTreeMap<usize, EngineCoreOutputs> = BTreeMap::new();
        if self.pause != Pause::PausedAll {
            let (n, max_len) = (self.config.tokens_per_output, self.config.max_model_len);
            let mut finished = Vec::new();
            for (i, seq) in self.running.iter_mut().enumerate() {
                let output = seq.step(n, max_len);
                if let Some(kv) = self.kv.as_mut() {
                    kv.advance(&seq.request_id, &output.new_token_ids);
                }
                if output.finished() {
                    finished.push(i);
                }
                messages
                    .entry(seq.client_index)
                    .or_default()
                    .outputs
                    .push(output);
            }
            for i in finished.into_iter().rev() {
                let seq = self.running.remove(i);
                if let Some(kv) = self.kv.as_mut() {
                    kv.release(&seq.request_id);
                }
                if self.config.include_finished_set {
                    self.finished
                        .entry(seq.client_index)
                        .or_default()
                        .push(seq.request_id);
                }
            }
        }
        for (client, ids) in std::mem::take(&mut self.finished) {
            messages.entry(client).or_default().finished_requests = Some(ids);
        }
        self.publish_kv_events();
        let counts = self.counts();
        if !messages.is_empty() || self.reported_counts != Some(counts) {
            self.reported_counts = Some(counts);
            let stats = self.scheduler_stats();
            messages.entry(0).or_default().scheduler_stats = Some(stats);
        }
        // Like vLLM's `_attach_weight_version`: every step's outputs carry the version.
        for (client, mut message) in messages {
            message.weight_version = Some(self.weight_version.clone());
            self.send(client, message).await?;
        }
        if self.running.is_empty() {
            for (client, call_id) in std::mem::take(&mut self.idle_waiters) {
                self.send_utility(client, call_id, Ok(Value::Nil)).await?;
            }
        }
        if self.config.dp_waves && self.engines_running && !self.can_step() {
            // The wave is over: tell the frontend and pause the loop until the next one.
            let message = EngineCoreOutputs {
                wave_complete: Some(self.current_wave),
                ..EngineCoreOutputs::default()
            };
            self.send(0, message).await?;
            self.current_wave += 1;
            self.engines_running = false;
        }
        Ok(())
    }

    fn scheduler_stats(&mut self) -> SchedulerStats {
        let used: usize = self.running.iter().map(Sequence::num_tokens).sum();
        let capacity = self.config.max_model_len.max(1) * self.config.max_num_seqs.max(1);
        SchedulerStats {
            num_running_reqs: self.running.len() as i64,
            num_waiting_reqs: self.waiting.len() as i64,
            current_wave: self.current_wave as i64,
            kv_cache_usage: (used as f64 / capacity as f64).min(1.0),
            prefix_cache_stats: self.take_prefix_cache_stats(),
            ..SchedulerStats::default()
        }
    }

    /// vLLM's `PrefixCacheStats` since the last report (`make_prefix_cache_stats`
    /// resets them): all zero without a prefix cache (the mock keeps one only when it
    /// publishes KV events).
    fn take_prefix_cache_stats(&mut self) -> Value {
        let (requests, queries, hits) = std::mem::take(&mut self.prefix_stats);
        let count = |k: &str, v: u64| (Value::from(k), Value::UInt(v));
        Value::Map(vec![
            (Value::from("reset"), Value::Bool(false)),
            count("requests", requests),
            count("queries", queries),
            count("hits", hits),
            count("preempted_requests", 0),
            count("preempted_queries", 0),
            count("preempted_hits", 0),
            (Value::from("hits_by_source"), Value::Map(Vec::new())),
        ])
    }

    /// Sends a message to a client's output socket, stamped with the engine index.
    pub(crate) async fn send(
        &mut self,
        client: usize,
        mut message: EngineCoreOutputs,
    ) -> Result<(), MockError> {
        message.engine_index = i64::from(self.rank);
        message.timestamp = self.now();
        let (payload, extra) = crate::encode(&message);
        let Some(socket) = self.outputs.get_mut(client) else {
            tracing::warn!(client, "no output socket for client");
            return Ok(());
        };
        let mut message = ZmqMessage::from(payload);
        for frame in extra {
            message.push_back(frame);
        }
        socket.send(message).await?;
        Ok(())
    }

    /// Sends `ENGINE_CORE_DEAD` to every frontend and stops.
    async fn die(&mut self) -> Result<(), MockError> {
        tracing::warn!("mock engine dying on request");
        for socket in &mut self.outputs {
            socket
                .send(ZmqMessage::from(ENGINE_CORE_DEAD.to_vec()))
                .await?;
        }
        // Give the sockets a moment to flush before they are dropped.
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(())
    }

    /// Shuts down like a vLLM engine with `shutdown_timeout = 0`: in-flight requests
    /// are aborted, with abort outputs.
    async fn shutdown(&mut self) -> Result<(), MockError> {
        self.abort_all().await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(())
    }
}

/// Forwards the messages of one input socket to the engine loop.
async fn read_input(mut socket: DealerSocket, tx: mpsc::Sender<Vec<Bytes>>) {
    loop {
        match socket.recv().await {
            Ok(message) => {
                if tx.send(message.into_vec()).await.is_err() {
                    return;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "input socket failed");
                return;
            }
        }
    }
}

/// Sleeps until the deadline, or not at all without one.
async fn sleep_until(deadline: Option<Instant>) {
    if let Some(deadline) = deadline {
        tokio::time::sleep_until(deadline).await;
    }
}

/// Aborts the reader tasks (closing their sockets) when the engine stops.
struct AbortOnDrop(Vec<JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}
