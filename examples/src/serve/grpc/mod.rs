//! gRPC (`--grpc-port P`), as `vllm-rs serve --grpc-port` 0.33.0 serves it: vLLM's
//! `vllm.Inference` (tokens or text in, tokens and text out, unary or streamed) and
//! `vllm.Control` (server and model information, shutdown, aborts, LoRA adapters, KV
//! event sources, pause / sleep, the weight-transfer sequence and the weight version),
//! plus `grpc.health.v1.Health` (`NOT_SERVING` once the engines are dead) and server
//! reflection (`grpc.reflection.v1` and `v1alpha`; vllm-rs has no reflection: ours is
//! an addition).
//!
//! The schema is vLLM's `rust/proto/{control,inference}.proto` as published in the
//! `vllm-proto` 0.6.0 crate that vllm-rs 0.33.0 is built with (`ServerInfo.proto_version`
//! says `0.6.0`), kept in `examples/proto/` and compiled by `build.rs` (protox, no
//! `protoc`). The answers and failures (status codes and messages) are vllm-rs's,
//! checked side by side by `examples/scripts/grpc_conformance.py`.
//!
//! Everything an RPC does is done by the functions the HTTP routes call
//! (`vllm_chat::pipeline::control`, [`LoraRegistry`](vllm_chat::pipeline::lora::LoraRegistry),
//! [`Pipeline::start_tokens`](vllm_chat::pipeline::Pipeline::start_tokens)); these modules
//! only translate protobuf messages and statuses. As in vllm-rs, `--api-key` does not
//! apply to the gRPC port: bind it where only trusted clients reach it.

pub mod control;
pub mod deadline;
pub mod inference;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tonic::Status;
use vllm_chat::pipeline::ApiError;

use super::state::AppState;

/// The generated messages, servers and clients of vLLM's `vllm` package.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("vllm");
}

/// The encoded descriptor set of `proto/*.proto` (for reflection, and for clients that
/// want it).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/vllm_descriptor.bin"));

/// The schema version reported as `ServerInfo.proto_version` (the `vllm-proto` crate's
/// version that vllm-rs 0.33.0 reports).
pub const PROTO_VERSION: &str = "0.6.0";

/// What the gRPC services share with the HTTP server.
#[derive(Clone, Debug)]
pub struct GrpcState {
    /// The HTTP server's state: model, pipeline, LoRA registry.
    pub app: AppState,
    /// The model as given on the command line (`ModelInfo.model_id`).
    pub model_id: String,
    /// `--reasoning-parser` as resolved (empty: none).
    pub reasoning_parser: String,
    /// `--tool-call-parser` as resolved (empty: none).
    pub tool_call_parser: String,
    /// Whether this server started its engines (the embedded mock engines): then
    /// `Shutdown` stops it; with external engines it is refused, as vllm-rs refuses
    /// it when it does not manage the engine process.
    pub manages_engines: bool,
    /// Set by `Shutdown`: the server stops as on SIGTERM.
    pub shutdown: watch::Sender<bool>,
}

impl GrpcState {
    /// The context length as the engines report it (vllm-rs's `max_model_len`), else
    /// the model's.
    pub fn max_model_len(&self) -> u64 {
        self.app
            .pipeline
            .client()
            .engines()
            .first()
            .and_then(|e| u64::try_from(e.ready.max_model_len).ok())
            .filter(|&len| len > 0)
            .unwrap_or_else(|| self.app.api.max_model_len())
    }
}

/// A vLLM API error as a gRPC status: 400 is `INVALID_ARGUMENT`, 404 `NOT_FOUND`, 503
/// `UNAVAILABLE`, anything else `INTERNAL`; the message is kept.
pub fn status(error: &ApiError) -> Status {
    match error.status {
        400 => Status::invalid_argument(error.message.clone()),
        404 => Status::not_found(error.message.clone()),
        503 => Status::unavailable(error.message.clone()),
        _ => Status::internal(error.message.clone()),
    }
}

/// How often the health service looks at the engines.
const ENGINE_WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// Binds the gRPC port (`host:port`, port 0: any free one).
pub async fn bind(host: &str, port: u16) -> anyhow::Result<TcpListener> {
    let addr = format!("{host}:{port}");
    TcpListener::bind(&addr)
        .await
        .map_err(|e| anyhow::anyhow!("binding the gRPC port {addr}: {e}"))
}

/// Serves Inference, Control, health and reflection on `listener` (HTTP/2, at most
/// `max_connections` connections: more are closed at once, as on the HTTP port; a
/// connection that has not sent HTTP/2's client preface within `preface_timeout` is
/// closed, as the HTTP port closes one that has not sent its headers) until
/// `shutdown` resolves; then the connections are closed gracefully (HTTP/2 `GOAWAY`)
/// and calls still in flight are given up a moment later (their engine requests are
/// aborted when their streams drop).
///
/// tonic's `Server` is not used: its timeout layer answers a call past its deadline
/// with `CANCELLED` and lets streams run past theirs; [`deadline`] enforces the
/// caller's `grpc-timeout` as gRPC specifies it.
pub async fn serve(
    listener: TcpListener,
    state: GrpcState,
    max_connections: usize,
    preface_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr: Option<SocketAddr> = listener.local_addr().ok();
    let inference = pb::inference_server::InferenceServer::new(inference::Inference {
        state: state.clone(),
    });
    let control = pb::control_server::ControlServer::new(control::Control {
        state: state.clone(),
    });
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<pb::inference_server::InferenceServer<inference::Inference>>()
        .await;
    reporter
        .set_serving::<pb::control_server::ControlServer<control::Control>>()
        .await;
    // Once the engines are dead (as HTTP's `/health` then answers 503), every service
    // reports NOT_SERVING.
    let client = state.app.pipeline.client().clone();
    let watcher = tokio::spawn(async move {
        while !client.is_dead() {
            tokio::time::sleep(ENGINE_WATCH_INTERVAL).await;
        }
        for service in ["", "vllm.Inference", "vllm.Control"] {
            reporter
                .set_service_status(service, tonic_health::ServingStatus::NotServing)
                .await;
        }
    });
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    if let Some(addr) = addr {
        tracing::info!("gRPC on {addr}: vllm.Inference, vllm.Control, health, reflection");
    }
    let router = tonic::service::Routes::new(health)
        .add_service(reflection)
        .add_service(reflection_alpha)
        .add_service(inference)
        .add_service(control)
        .prepare()
        .into_axum_router();
    accept_loop(listener, router, max_connections, preface_timeout, shutdown).await;
    watcher.abort();
    Ok(())
}

/// How long calls in flight may finish after the server started to shut down.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

/// HTTP/2's client connection preface (RFC 9113, section 3.4).
const CLIENT_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Reads the client preface off `tcp` and gives back the connection with those
/// bytes in front again, for hyper to read; `None` if the peer sent anything else or
/// closed first. Without this step a peer that connects and sends nothing held a
/// connection slot for as long as it liked (hyper waits for the preface forever).
async fn after_preface(tcp: TcpStream) -> Option<impl AsyncRead + AsyncWrite + Unpin> {
    let (mut read, write) = tcp.into_split();
    let mut preface = [0u8; CLIENT_PREFACE.len()];
    read.read_exact(&mut preface).await.ok()?;
    (&preface == CLIENT_PREFACE)
        .then(|| tokio::io::join(std::io::Cursor::new(preface).chain(read), write))
}

/// The HTTP/2 accept loop: `TCP_NODELAY`, the connection cap, the preface timeout,
/// each call under its deadline ([`deadline::call`]), graceful shutdown.
async fn accept_loop(
    listener: TcpListener,
    router: axum::Router,
    max_connections: usize,
    preface_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder.timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(max_connections.max(1)));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before accept:
                    // wait a moment instead of spinning.
                    tracing::debug!("gRPC accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!("gRPC connection cap reached: closing a new connection");
            continue;
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
        let router = router.clone();
        let service =
            hyper::service::service_fn(move |request| deadline::call(router.clone(), request));
        let watcher = graceful.watcher();
        let builder = builder.clone();
        tokio::spawn(async move {
            let Ok(Some(io)) = tokio::time::timeout(preface_timeout, after_preface(tcp)).await
            else {
                tracing::debug!("gRPC connection closed: no HTTP/2 preface in time");
                return;
            };
            let connection = watcher.watch(builder.serve_connection(TokioIo::new(io), service));
            if let Err(e) = connection.await {
                tracing::debug!("gRPC connection: {e}");
            }
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {}
    }
}
