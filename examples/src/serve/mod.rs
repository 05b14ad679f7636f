//! `serve`: an OpenAI-compatible HTTP server composed from the four crates.
//!
//! ```text
//! request ──► vllm-chat (render, sampling params) ──► vllm-client (engines)
//!                                                        │ token ids
//! SSE/JSON ◄── vllm-parser (reasoning, tools) ◄── vllm-detok (text, stop strings)
//! ```
//!
//! Layout: [`cli`] parses vLLM's flags into a [`ServeConfig`]; [`Server::bind`] loads
//! the [`model`], connects the [`engine`]s (or starts embedded mock engines) and binds
//! the HTTP socket. Everything between the HTTP body and the answer is vllm-chat's
//! request pipeline (`vllm_chat::pipeline`, feature `pipeline`): the handlers in
//! [`generation`] parse the body, call the pipeline and frame its answer as JSON or
//! server-sent events ([`sse`]); [`tokens`] serves the engine-free endpoints. Errors
//! have vLLM's shape ([`error`]). With `--grpc-port`, [`grpc`] serves vLLM's
//! `vllm.Inference` and `vllm.Control` beside HTTP, over the same pipeline and
//! control functions; a `Shutdown` RPC stops both servers.
//!
//! Engine failure: a request whose engine died gets an error event on its open stream,
//! and new requests get vLLM's 500 for a dead engine (`/health` answers 503). A client that disconnects drops its
//! response body, which drops the engine stream and aborts the engine request.

pub mod cli;
pub mod control;
pub mod engine;
pub mod error;
pub mod generation;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod model;
pub mod ops;
pub mod routing;
pub mod server_info;
pub mod sse;
pub mod state;
pub mod tls;
pub mod tokens;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value};
use vllm_chat::RendererOptions;
use vllm_chat::pipeline::lora::LoraRegistry;
use vllm_chat::pipeline::{ApiError, Offload, Pipeline, PipelineConfig, ServingParsers};
use vllm_client::mock::MockEngineHandle;
use vllm_client::{ClientError, EngineCoreClient};
use vllm_parser::registry;

use engine::EngineSource;
use http::{Drain, HttpLimits};
use model::Model;
use state::{AppState, ModelApi};

/// A `--tool-call-parser` / `--reasoning-parser` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParserChoice {
    /// No parser.
    None,
    /// The parser vllm-parser picks for the model name.
    Auto,
    /// A vLLM parser name.
    Named(String),
}

/// Everything the server is configured with.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The model directory.
    pub model_dir: PathBuf,
    /// The model name of the API.
    pub served_model_name: String,
    /// HTTP bind host.
    pub host: String,
    /// HTTP bind port (0: any free port).
    pub port: u16,
    /// `--grpc-port`: serve vLLM's gRPC services on `host:P` too (0: any free port).
    pub grpc_port: Option<u16>,
    /// `--tool-call-parser`.
    pub tool_call_parser: ParserChoice,
    /// `--reasoning-parser`.
    pub reasoning_parser: ParserChoice,
    /// `--enable-auto-tool-choice`.
    pub enable_auto_tool_choice: bool,
    /// `--tool-strict-level`: the server's floor for tool-call structural tags
    /// (`None`: each tool parser's default level).
    pub tool_strict_level: Option<vllm_parser::serving::ToolStrictLevel>,
    /// `--chat-template` (the template source).
    pub chat_template: Option<String>,
    /// `--default-chat-template-kwargs`.
    pub default_chat_template_kwargs: Map<String, Value>,
    /// `--tokenizer-mode`: which renderer chat, render and `/tokenize` requests use.
    pub tokenizer_mode: vllm_chat::TokenizerMode,
    /// `--trust-request-chat-template`.
    pub trust_request_chat_template: bool,
    /// `--max-model-len`.
    pub max_model_len: Option<u64>,
    /// `--max-logprobs`.
    pub max_logprobs: i64,
    /// `--data-parallel-size`.
    pub data_parallel_size: u16,
    /// Where the engines come from.
    pub engine: EngineSource,
    /// `--engine-ready-timeout-secs`.
    pub engine_ready_timeout: Duration,
    /// `--http-timeout-keep-alive`, `--max-connections`.
    pub http: HttpLimits,
    /// `--shutdown-timeout`: how long a stopping server waits for requests in flight
    /// before aborting them (`None`: as long as they take).
    pub shutdown_timeout: Option<Duration>,
    /// `--renderer-num-workers`: threads that render and tokenize large requests at
    /// the same time (`None`: one per core).
    pub renderer_num_workers: Option<usize>,
    /// `VLLM_SERVER_DEV_MODE=1`: serve the development endpoints (pause, sleep, weight
    /// transfer, cache resets, `collective_rpc`, …).
    pub dev_mode: bool,
    /// `--api-key`, `--enable-request-id-headers`, CORS.
    pub ops: ops::Operations,
    /// `--disable-log-stats`: no request or scheduler statistics (`/metrics` shows the
    /// families at their idle values).
    pub disable_log_stats: bool,
    /// `--enable-prompt-tokens-details`: usage reports the prompt tokens served from
    /// the engines' prefix caches.
    pub enable_prompt_tokens_details: bool,
    /// `--stream-interval`: output tokens batched into each streamed chunk.
    pub stream_interval: u32,
    /// `--enable-log-requests`: an INFO line per finished request.
    pub enable_log_requests: bool,
    /// `--uds PATH`: listen on this Unix socket instead of `host:port`.
    pub uds: Option<PathBuf>,
    /// `--ssl-certfile` and friends: HTTPS.
    pub tls: Option<tls::TlsSettings>,
    /// LoRA adapters: `--lora-modules`, run-time loading, the embedded mock's slots.
    pub lora: LoraSettings,
    /// `--kv-transfer-config JSON` (vLLM's `KVTransferConfig`): the engines run a KV
    /// connector for prefill/decode disaggregation, so a request with
    /// `kv_transfer_params.do_remote_prefill` that fails before reaching them sends
    /// vLLM's rejection notice. The embedded mock engines emulate its `kv_connector`.
    pub kv_transfer_config: Option<Map<String, Value>>,
}

/// The LoRA settings of a server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoraSettings {
    /// `--lora-modules`: adapters loaded at start-up (a failure stops the start-up).
    pub modules: Vec<vllm_chat::pipeline::lora::LoraModule>,
    /// `VLLM_ALLOW_RUNTIME_LORA_UPDATING`: serve `/v1/load_lora_adapter` and
    /// `/v1/unload_lora_adapter`.
    pub runtime_updates: bool,
    /// `VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES`: where run-time adapters may be read.
    pub allowed_prefixes: Option<Vec<PathBuf>>,
    /// `--enable-lora --max-loras N --max-cpu-loras N` for the embedded mock engine.
    pub mock: Option<vllm_client::mock::MockLora>,
}

impl ServeConfig {
    /// The defaults of the command line: the vendored Qwen3 tokenizer, an embedded mock
    /// engine, no parsers, `127.0.0.1:8000`.
    pub fn embedded_default() -> Self {
        Self {
            model_dir: model::default_model_dir(),
            served_model_name: "qwen3".into(),
            host: "127.0.0.1".into(),
            port: 8000,
            grpc_port: None,
            tool_call_parser: ParserChoice::None,
            reasoning_parser: ParserChoice::None,
            enable_auto_tool_choice: false,
            tool_strict_level: None,
            chat_template: None,
            default_chat_template_kwargs: Map::new(),
            tokenizer_mode: vllm_chat::TokenizerMode::Auto,
            trust_request_chat_template: false,
            max_model_len: None,
            max_logprobs: 20,
            data_parallel_size: 1,
            engine: EngineSource::Embedded(engine::MockSettings::default()),
            engine_ready_timeout: Duration::from_secs(600),
            http: HttpLimits::default(),
            shutdown_timeout: None,
            renderer_num_workers: None,
            dev_mode: false,
            ops: ops::Operations::default(),
            disable_log_stats: false,
            enable_prompt_tokens_details: false,
            stream_interval: 1,
            enable_log_requests: false,
            uds: None,
            tls: None,
            lora: LoraSettings::default(),
            kv_transfer_config: None,
        }
    }

    /// The parser names the choices resolve to (reasoning, tool call).
    fn parser_names(&self) -> Result<(Option<&str>, Option<&str>)> {
        let auto_name = self
            .model_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let auto = || {
            registry::auto_parsers(&self.served_model_name)
                .or_else(|_| registry::auto_parsers(&auto_name))
        };
        let tool = match &self.tool_call_parser {
            ParserChoice::None => None,
            ParserChoice::Auto => Some(auto()?.0),
            ParserChoice::Named(name) => Some(name.as_str()),
        };
        let reasoning = match &self.reasoning_parser {
            ParserChoice::None => None,
            ParserChoice::Auto => auto()?.1,
            ParserChoice::Named(name) => Some(name.as_str()),
        };
        Ok((reasoning, tool))
    }

    /// The parsers the choices resolve to, with vLLM's start-up checks.
    fn parsers(&self, model: &Model) -> Result<ServingParsers> {
        let (reasoning, tool) = self.parser_names()?;
        let mut parsers = model.serving_parsers(reasoning, tool, self.enable_auto_tool_choice)?;
        if let Some(level) = self.tool_strict_level {
            parsers = parsers.with_tool_strict_level(level);
        }
        Ok(parsers)
    }
}

/// A bound server, not yet serving.
pub struct Server {
    state: AppState,
    grpc: Option<(tokio::net::TcpListener, grpc::GrpcState)>,
    stop_requested: tokio::sync::watch::Sender<bool>,
    ops: ops::Operations,
    listener: http::Listener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mocks: Vec<MockEngineHandle>,
    http: HttpLimits,
    drain: Drain,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("endpoint", &self.endpoint())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Loads the model, connects the engines and binds the HTTP socket.
    pub async fn bind(config: ServeConfig) -> Result<Self> {
        let options = RendererOptions {
            chat_template: config.chat_template.clone(),
            default_chat_template_kwargs: config.default_chat_template_kwargs.clone(),
            trust_request_chat_template: config.trust_request_chat_template,
            served_model_name: Some(config.served_model_name.clone()),
            max_model_len: config.max_model_len,
            ..RendererOptions::default()
        };
        let model = Arc::new(Model::load_with_mode(
            &config.model_dir,
            config.tokenizer_mode,
            options,
        )?);
        let parsers = config.parsers(&model)?;
        let metrics = Arc::new(metrics::Metrics::new(&config.served_model_name)?);
        let observer: Option<Arc<dyn vllm_client::client::stats::StatsObserver>> =
            (!config.disable_log_stats).then(|| metrics.clone() as _);
        let engines = engine::connect(
            &config.engine,
            config.data_parallel_size.max(1),
            config.engine_ready_timeout,
            &model,
            observer,
            config.lora.mock,
            config
                .kv_transfer_config
                .as_ref()
                .and_then(|c| c.get("kv_connector"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        )
        .await?;
        metrics.init_engines(engines.client.engines());
        let tls = config
            .tls
            .as_ref()
            .map(tls::TlsSettings::acceptor)
            .transpose()?;
        let listener = match &config.uds {
            Some(path) => {
                // A socket file left by a server that did not stop cleanly.
                let _ = std::fs::remove_file(path);
                let listener = tokio::net::UnixListener::bind(path)
                    .with_context(|| format!("binding the Unix socket {}", path.display()))?;
                http::Listener::Unix(listener, path.clone())
            }
            None => {
                let addr = format!("{}:{}", config.host, config.port);
                let listener = tokio::net::TcpListener::bind(&addr).await.with_context(|| {
                    format!("binding {addr} (is another server on this port? choose one with --port)")
                })?;
                http::Listener::Tcp(listener)
            }
        };
        let api = Arc::new(ModelApi {
            model,
            served_model_name: config.served_model_name.clone(),
            model_root: config.model_dir.display().to_string(),
            offload: match config.renderer_num_workers {
                Some(workers) => Offload::new(
                    workers,
                    vllm_chat::pipeline::offload_defaults::INLINE_BELOW_BYTES,
                ),
                None => Offload::default(),
            },
            loras: Arc::new(LoraRegistry::new(
                config.served_model_name.clone(),
                config.lora.allowed_prefixes.clone(),
            )),
            parsers: parsers.clone(),
        });
        for module in &config.lora.modules {
            api.loras
                .load_static(&engines.client, module)
                .await
                .map_err(|e| anyhow::anyhow!("--lora-modules {}: {}", module.name, e.message))?;
        }
        let pipeline = Pipeline::new(
            api.model.clone(),
            engines.client,
            PipelineConfig {
                served_model_name: api.served_model_name.clone(),
                parsers,
                max_logprobs: config.max_logprobs,
                offload: api.offload.clone(),
                loras: Some(api.loras.clone()),
                enable_prompt_tokens_details: config.enable_prompt_tokens_details,
                stream_interval: config.stream_interval,
                log_requests: config.enable_log_requests,
                kv_connector: config.kv_transfer_config.is_some(),
            },
        );
        let state = AppState {
            server_settings: Arc::new(server_info::settings(&config)),
            api,
            pipeline,
            dev_mode: config.dev_mode,
            runtime_lora: config.lora.runtime_updates,
            metrics,
        };
        let (stop_requested, _) = tokio::sync::watch::channel(false);
        let grpc = match config.grpc_port {
            None => None,
            Some(port) => {
                let (reasoning, tool) = config.parser_names()?;
                let grpc_state = grpc::GrpcState {
                    app: state.clone(),
                    model_id: config.model_dir.display().to_string(),
                    reasoning_parser: reasoning.unwrap_or_default().to_owned(),
                    tool_call_parser: tool.unwrap_or_default().to_owned(),
                    manages_engines: !engines.mocks.is_empty(),
                    shutdown: stop_requested.clone(),
                };
                Some((grpc::bind(&config.host, port).await?, grpc_state))
            }
        };
        Ok(Self {
            state,
            grpc,
            stop_requested,
            ops: config.ops.clone(),
            listener,
            tls,
            mocks: engines.mocks,
            http: config.http,
            drain: config.shutdown_timeout.map_or(Drain::Unbounded, Drain::For),
        })
    }

    /// The bound TCP address (unspecified on a Unix socket).
    pub fn local_addr(&self) -> SocketAddr {
        match &self.listener {
            http::Listener::Tcp(listener) => listener
                .local_addr()
                .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
            http::Listener::Unix(..) => SocketAddr::from(([0, 0, 0, 0], 0)),
        }
    }

    /// The bound gRPC address (`--grpc-port`), if gRPC is served.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc
            .as_ref()
            .and_then(|(listener, _)| listener.local_addr().ok())
    }

    /// Starts the gRPC server (if any) in a background task and returns the HTTP
    /// server's shutdown: `shutdown`, or a `Shutdown` RPC. Either stops both servers.
    fn start_grpc(
        &mut self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let stop = self.stop_requested.clone();
        let mut requested = stop.subscribe();
        if let Some((listener, state)) = self.grpc.take() {
            let mut grpc_stop = stop.subscribe();
            let max_connections = self.http.max_connections;
            let preface_timeout = self.http.keep_alive_timeout;
            tokio::spawn(async move {
                let stopped = async move {
                    let _ = grpc_stop.wait_for(|stop| *stop).await;
                };
                if let Err(e) =
                    grpc::serve(listener, state, max_connections, preface_timeout, stopped).await
                {
                    tracing::error!("gRPC server: {e}");
                }
            });
        }
        async move {
            tokio::select! {
                () = shutdown => {}
                _ = requested.wait_for(|stop| *stop) => {
                    tracing::info!("shutting down: requested over gRPC");
                }
            }
            let _ = stop.send(true);
        }
    }

    /// Where clients reach the server: `http(s)://HOST:PORT` or `unix:PATH`.
    pub fn endpoint(&self) -> String {
        match &self.listener {
            http::Listener::Unix(_, path) => format!("unix:{}", path.display()),
            http::Listener::Tcp(_) => {
                let scheme = if self.tls.is_some() { "https" } else { "http" };
                format!("{scheme}://{}", self.local_addr())
            }
        }
    }

    /// The engine link.
    pub fn client(&self) -> &EngineCoreClient {
        self.state.pipeline.client()
    }

    /// Serves until `shutdown` completes, then lets the requests in flight finish
    /// within `--shutdown-timeout` (a second SIGINT/SIGTERM cuts that short), aborts
    /// the rest and stops the engines' link.
    pub async fn serve(
        mut self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let shutdown = self.start_grpc(shutdown);
        let router = self.ops.apply(router(self.state.clone()));
        let client = self.state.pipeline.client().clone();
        http::serve(
            self.listener,
            self.tls,
            router,
            self.http,
            shutdown,
            self.drain,
            shutdown_signal(),
            move || client.shutdown(),
        )
        .await;
        self.state.pipeline.client().shutdown();
        for mock in self.mocks {
            let _ = mock.shutdown().await;
        }
        Ok(())
    }

    /// Serves in a background task (for tests and embedding): returns the address, the
    /// embedded mock engines and a handle that stops the server.
    pub fn spawn(mut self) -> RunningServer {
        let addr = self.local_addr();
        let grpc_addr = self.grpc_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = self.start_grpc(async {
            let _ = stopped.await;
        });
        let client = self.state.pipeline.client().clone();
        let router = self.ops.apply(router(self.state.clone()));
        let aborting = client.clone();
        let task = tokio::spawn(http::serve(
            self.listener,
            self.tls,
            router,
            self.http,
            shutdown,
            self.drain,
            std::future::pending(),
            move || aborting.shutdown(),
        ));
        RunningServer {
            addr,
            grpc_addr,
            client,
            mocks: self.mocks,
            stop: Some(stop),
            task,
        }
    }
}

/// A server running in a background task.
pub struct RunningServer {
    /// The HTTP address.
    pub addr: SocketAddr,
    /// The gRPC address (`--grpc-port`), if gRPC is served.
    pub grpc_addr: Option<SocketAddr>,
    /// The engine link (e.g. to look at requests in flight).
    pub client: EngineCoreClient,
    /// The embedded mock engines, by rank (to inject faults).
    pub mocks: Vec<MockEngineHandle>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RunningServer {
    /// Stops accepting connections and waits for the requests in flight.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
        self.client.shutdown();
    }
}

/// Every route.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new()
        .route("/v1/chat/completions", post(generation::chat))
        .route("/v1/completions", post(generation::completions))
        .route("/inference/v1/generate", post(generation::generate))
        .layer(axum::middleware::from_fn(error::require_json))
        .merge(tokens::routes())
        .merge(control::routes())
        .route("/health", get(health))
        // vLLM's SageMaker ping (its Python server always serves it; vllm-rs 0.33 has
        // none): the health check under another name, GET or POST.
        .route("/ping", get(health).post(health))
        .route("/metrics", get(metrics_text));
    if state.dev_mode {
        router = router
            .merge(control::dev_routes())
            .route("/server_info", get(server_info::server_info));
    }
    if state.runtime_lora {
        router = router.merge(control::lora_routes());
    }
    let metrics = state.metrics.clone();
    router
        .layer(axum::middleware::from_fn_with_state(metrics, count_http))
        .with_state(state)
}

/// vLLM's HTTP instrumentation: every answered request to a route, by method, status
/// class and route (`metrics::http`).
async fn count_http(
    State(metrics): State<Arc<metrics::Metrics>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let handler = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|path| path.as_str().to_owned());
    let response = next.run(request).await;
    if let Some(handler) = handler {
        metrics.http.observe(
            method.as_str(),
            response.status().as_u16(),
            &handler,
            started.elapsed().as_secs_f64(),
        );
    }
    response
}

/// `GET /health`: 200 while the engines answer, 503 (empty, as vLLM) once they are dead.
async fn health(State(state): State<AppState>) -> Response {
    let probe = state
        .pipeline
        .client()
        .call_utility("is_sleeping", Vec::new());
    match tokio::time::timeout(Duration::from_secs(10), probe).await {
        Ok(Err(ClientError::EngineDead(_) | ClientError::Shutdown)) => {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Ok(_) => StatusCode::OK.into_response(),
        Err(_) => error::error_response(&ApiError::unavailable(
            "the engines did not answer within 10 s",
        )),
    }
}

/// `GET /metrics`: the Prometheus exposition (OpenMetrics text).
async fn metrics_text(State(state): State<AppState>) -> Response {
    match state.metrics.encode() {
        Ok(text) => (
            [(axum::http::header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
            text,
        )
            .into_response(),
        Err(_) => error::error_response(&ApiError::internal("the metrics did not encode")),
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!(
        "shutting down: no new connections; requests in flight get --shutdown-timeout to finish"
    );
}
