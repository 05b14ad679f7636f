//! The HTTP accept loop, with the limits `axum::serve` does not have: a cap on open
//! connections, a header-read timeout that also closes idle keep-alive connections
//! (hyper starts it again after every response), `TCP_NODELAY`, and a shutdown
//! deadline after which requests in flight are aborted. It listens on TCP or a Unix
//! socket (`--uds`), with or without TLS (the handshake runs in the connection's task,
//! bounded by the same header-read timeout).
//!
//! Without them ~20,000 idle TCP connections stopped the server, slowloris connections
//! were never closed, and one long stream held shutdown forever.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

/// Where the server listens.
#[derive(Debug)]
pub enum Listener {
    /// A TCP socket (`--host`, `--port`).
    Tcp(TcpListener),
    /// A Unix domain socket (`--uds PATH`; the file is removed when the server stops).
    Unix(UnixListener, std::path::PathBuf),
}

/// A connection's byte stream, whatever it runs on.
trait Connection: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Connection for T {}

impl Listener {
    async fn accept(&self) -> std::io::Result<Box<dyn Connection>> {
        match self {
            Listener::Tcp(listener) => {
                let (tcp, _) = listener.accept().await?;
                // SSE frames are small writes: without TCP_NODELAY each would wait for
                // the client's delayed ACK of the previous one (up to 40 ms).
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::debug!("TCP_NODELAY: {e}");
                }
                Ok(Box::new(tcp))
            }
            Listener::Unix(listener, _) => Ok(Box::new(listener.accept().await?.0)),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Connection limits and timeouts (flags of `serve`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpLimits {
    /// `--http-timeout-keep-alive`: how long a connection may sit without sending a
    /// complete request header, between requests or in the middle of one (vLLM's
    /// `VLLM_HTTP_TIMEOUT_KEEP_ALIVE`, default 5 s); on the gRPC port, how long a
    /// new connection may take to send HTTP/2's client preface.
    pub keep_alive_timeout: Duration,
    /// `--max-connections`: open connections beyond this are closed at once.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            keep_alive_timeout: Duration::from_secs(5),
            max_connections: 8192,
        }
    }
}

/// What happens to requests in flight when the server stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    /// Wait for them, however long they take.
    Unbounded,
    /// Wait at most this long, then abort them (`--shutdown-timeout`; 0 aborts at
    /// once, as vLLM does by default).
    For(Duration),
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains as `drain`
/// says; `force` (e.g. a second signal) cuts a drain short. `abort` is called when a
/// drain is cut: it should end the requests in flight (their streams then finish).
#[allow(clippy::too_many_arguments)]
pub async fn serve(
    listener: Listener,
    tls: Option<TlsAcceptor>,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
    drain: Drain,
    force: impl Future<Output = ()>,
    abort: impl FnOnce(),
) {
    // HTTP/1.1 only, as vLLM's server: a protocol-sniffing builder would wait for a
    // silent connection's first bytes with no timeout.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.keep_alive_timeout);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(stream) => stream,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before accept:
                    // wait a moment instead of spinning.
                    tracing::debug!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!("connection cap reached: closing a new connection");
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let handshake_timeout = limits.keep_alive_timeout;
        tokio::spawn(async move {
            let stream: Box<dyn Connection> = match tls {
                None => stream,
                Some(acceptor) => {
                    match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => Box::new(tls),
                        Ok(Err(e)) => {
                            tracing::debug!("TLS handshake: {e}");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!("TLS handshake timed out");
                            return;
                        }
                    }
                }
            };
            let connection = watcher.watch(builder.serve_connection(TokioIo::new(stream), service));
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    let drained = graceful.shutdown();
    let deadline = async {
        match drain {
            Drain::Unbounded => std::future::pending::<()>().await,
            Drain::For(limit) => tokio::time::sleep(limit).await,
        }
    };
    tokio::select! {
        () = drained => return,
        () = deadline => tracing::info!("shutdown: aborting the requests still in flight"),
        () = force => tracing::info!("second signal: aborting the requests in flight"),
    }
    abort();
    // The aborted streams send their last frames; give them a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
}
