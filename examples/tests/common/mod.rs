//! Test support: servers with the embedded mock engine, started once per configuration
//! on a shared runtime, and a small HTTP/1.1 client (hyper) that reads JSON bodies and
//! server-sent events frame by frame.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use bytes_util::Frames;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::runtime::Runtime;
use vllm_examples::serve::engine::{EngineSource, MockSettings};
use vllm_examples::serve::{ParserChoice, RunningServer, ServeConfig, Server};

/// The runtime every test and shared server runs on.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

/// Runs a test body on the shared runtime.
pub fn run<F: Future<Output = ()>>(body: F) {
    runtime().block_on(body);
}

/// A server configuration: the vendored Qwen3 model, an embedded mock engine that
/// answers `text` as fast as it can, and a free port.
pub fn config(text: &str) -> ServeConfig {
    ServeConfig {
        port: 0,
        engine: EngineSource::Embedded(MockSettings {
            text: text.into(),
            tokens_per_second: 0.0,
        }),
        engine_ready_timeout: Duration::from_secs(60),
        ..ServeConfig::embedded_default()
    }
}

/// Starts a server on the shared runtime (from another thread, so that it can be
/// called from inside a test's `block_on`).
pub fn start(config: ServeConfig) -> RunningServer {
    std::thread::spawn(move || {
        runtime().block_on(async { Server::bind(config).await.expect("server starts").spawn() })
    })
    .join()
    .expect("server start-up thread")
}

/// The answer of [`PLAIN`] servers: no parsers.
pub const PLAIN_TEXT: &str = "Hello! I am a mock engine. The end.";

/// A shared server without parsers answering [`PLAIN_TEXT`].
pub fn plain() -> SocketAddr {
    static SERVER: OnceLock<RunningServer> = OnceLock::new();
    SERVER.get_or_init(|| start(config(PLAIN_TEXT))).addr
}

/// The answer of the reasoning server.
pub const THINK_TEXT: &str = "<think>\nThe user greets me.\n</think>\n\nHello there!";

/// A shared server with `--reasoning-parser qwen3` answering [`THINK_TEXT`].
pub fn reasoning() -> SocketAddr {
    static SERVER: OnceLock<RunningServer> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            start(ServeConfig {
                reasoning_parser: ParserChoice::Named("qwen3".into()),
                ..config(THINK_TEXT)
            })
        })
        .addr
}

/// The answer of the tool server: a Hermes tool call.
pub const TOOL_TEXT: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

/// A shared server with `--tool-call-parser hermes --enable-auto-tool-choice`
/// answering [`TOOL_TEXT`].
pub fn tools() -> SocketAddr {
    static SERVER: OnceLock<RunningServer> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            start(ServeConfig {
                tool_call_parser: ParserChoice::Named("hermes".into()),
                enable_auto_tool_choice: true,
                ..config(TOOL_TEXT)
            })
        })
        .addr
}

/// The answer of the `required` server: the JSON array a model held to
/// `tool_choice: "required"`'s schema writes.
pub const REQUIRED_TEXT: &str =
    "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}]";

/// A shared server with `--tool-call-parser pythonic --enable-auto-tool-choice`
/// answering [`REQUIRED_TEXT`]. vLLM 0.33 holds `required` and named choices to a JSON
/// schema (and reads the output as JSON) only for parsers without a structural tag,
/// such as `pythonic`; `hermes` gets xgrammar's structural tag and its own format.
pub fn required() -> SocketAddr {
    static SERVER: OnceLock<RunningServer> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            start(ServeConfig {
                tool_call_parser: ParserChoice::Named("pythonic".into()),
                enable_auto_tool_choice: true,
                ..config(REQUIRED_TEXT)
            })
        })
        .addr
}

/// The `tools` of a request offering `get_weather`.
pub fn weather_tool() -> Value {
    serde_json::json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        }
    }])
}

/// An HTTP response whose body has not been read.
pub struct Response {
    pub status: StatusCode,
    pub content_type: String,
    /// The response headers, names lower-case, values as text.
    pub headers: std::collections::HashMap<String, String>,
    body: Incoming,
    /// The connection task; aborting it closes the socket.
    connection: tokio::task::JoinHandle<()>,
}

/// Sends one request on a new connection.
pub async fn send(addr: SocketAddr, method: Method, path: &str, body: Option<String>) -> Response {
    send_with(addr, method, path, body, &[]).await
}

/// Sends one request with extra headers on a new connection.
pub async fn send_with(
    addr: SocketAddr,
    method: Method,
    path: &str,
    body: Option<String>,
    headers: &[(&str, &str)],
) -> Response {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
    {
        request = request.header("content-type", "application/json");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(body.unwrap_or_default()).expect("request");
    let response = sender.send_request(request).await.expect("response");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    Response {
        status: response.status(),
        content_type,
        headers,
        body: response.into_body(),
        connection,
    }
}

impl Response {
    /// The whole body as text.
    pub async fn text(self) -> String {
        let bytes = self.body.collect().await.expect("body").to_bytes();
        self.connection.abort();
        String::from_utf8(bytes.to_vec()).expect("utf-8 body")
    }

    /// The whole body as JSON.
    pub async fn json(self) -> Value {
        let text = self.text().await;
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    /// The body as server-sent events, read frame by frame.
    pub fn events(self) -> Events {
        Events {
            body: self.body,
            frames: Frames::default(),
            connection: self.connection,
        }
    }
}

/// POSTs JSON and returns the status and the JSON answer.
pub async fn post(addr: SocketAddr, path: &str, body: Value) -> (StatusCode, Value) {
    let response = send(addr, Method::POST, path, Some(body.to_string())).await;
    let status = response.status;
    (status, response.json().await)
}

/// POSTs raw text.
pub async fn post_raw(addr: SocketAddr, path: &str, body: &str) -> (StatusCode, Value) {
    let response = send(addr, Method::POST, path, Some(body.to_owned())).await;
    let status = response.status;
    (status, response.json().await)
}

/// GETs a path.
pub async fn get(addr: SocketAddr, path: &str) -> Response {
    send(addr, Method::GET, path, None).await
}

/// POSTs a streaming request and reads every event until `[DONE]`.
pub async fn stream_all(addr: SocketAddr, path: &str, body: Value) -> Vec<Value> {
    let response = send(addr, Method::POST, path, Some(body.to_string())).await;
    assert_eq!(response.status, StatusCode::OK);
    assert!(
        response.content_type.starts_with("text/event-stream"),
        "{}",
        response.content_type
    );
    let mut events = response.events();
    let mut out = Vec::new();
    loop {
        match events.next().await {
            Some(Event::Data(v)) => out.push(v),
            Some(Event::Done) => return out,
            None => panic!("stream ended without [DONE] after {out:?}"),
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A JSON `data:` frame.
    Data(Value),
    /// `data: [DONE]`.
    Done,
}

/// Reads server-sent events from a response body.
pub struct Events {
    body: Incoming,
    frames: Frames,
    connection: tokio::task::JoinHandle<()>,
}

impl Events {
    /// The next event, `None` at the end of the body.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(frame) = self.frames.pop() {
                let data = frame
                    .strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("not a data frame: {frame:?}"));
                return Some(if data == "[DONE]" {
                    Event::Done
                } else {
                    Event::Data(
                        serde_json::from_str(data)
                            .unwrap_or_else(|e| panic!("bad JSON ({e}): {data}")),
                    )
                });
            }
            let frame = self.body.frame().await?.expect("body frame");
            if let Ok(bytes) = frame.into_data() {
                self.frames.push(&bytes);
            }
        }
    }

    /// Closes the connection mid-stream, as a client that goes away.
    pub fn disconnect(self) {
        self.connection.abort();
        drop(self.body);
    }
}

mod bytes_util {
    /// Splits a byte stream into `\n\n`-terminated frames.
    #[derive(Default)]
    pub struct Frames {
        buffer: String,
        ready: std::collections::VecDeque<String>,
    }

    impl Frames {
        pub fn push(&mut self, bytes: &[u8]) {
            self.buffer
                .push_str(std::str::from_utf8(bytes).expect("utf-8 SSE"));
            while let Some(end) = self.buffer.find("\n\n") {
                let frame = self.buffer[..end].to_owned();
                self.buffer.drain(..end + 2);
                self.ready.push_back(frame);
            }
        }

        pub fn pop(&mut self) -> Option<String> {
            self.ready.pop_front()
        }
    }
}

/// Concatenates the chat deltas' `field` (content or reasoning) over stream events.
pub fn concat_delta(events: &[Value], field: &str) -> String {
    events
        .iter()
        .filter_map(|e| {
            e["choices"].get(0)?["delta"][field]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// The `finish_reason` of the last chunk that has one.
pub fn final_choice(events: &[Value]) -> Value {
    events
        .iter()
        .rev()
        .find_map(|e| {
            let choice = e["choices"].get(0)?;
            (!choice["finish_reason"].is_null()).then(|| choice.clone())
        })
        .expect("a chunk with a finish_reason")
}

/// Waits until `check` holds (polling), or panics after `timeout`.
pub async fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The engine request `Pipeline::chat` puts on the wire for `request` (an OpenAI chat
/// body) with `model` served behind `parsers`, as a mock engine receives it.
pub async fn engine_request(
    model: vllm_chat::pipeline::Model,
    parsers: vllm_parser::serving::ServingParsers,
    request: &Value,
) -> vllm_client::protocol::EngineCoreRequest {
    use std::sync::Arc;
    use vllm_chat::pipeline::{Accepted, Pipeline, PipelineConfig, Routing};
    use vllm_client::mock::{MockConfig, MockEngine};
    use vllm_client::{ClientConfig, EngineCoreClient};

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config =
        ClientConfig::handshake("127.0.0.1", port, 1).with_ready_timeout(Duration::from_secs(60));
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let engine = MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), 0, MockConfig::default());
    let client = connecting.await.unwrap().expect("engine registers");
    let pipeline = Pipeline::new(Arc::new(model), client, PipelineConfig::new("m", parsers));
    let request = serde_json::from_value(request.clone()).expect("request");
    let accepted = pipeline
        .chat(request, Routing::default())
        .await
        .expect("accepted");
    accepted.response().await.expect("answered");
    engine
        .added_requests()
        .into_iter()
        .next()
        .expect("the engine got the request")
}
