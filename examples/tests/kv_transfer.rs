//! Prefill/decode disaggregation in `serve`: with `--kv-transfer-config`, a chat or
//! completion request whose `kv_transfer_params` asks for a remote prefill and that fails
//! before reaching the engine sends the engine vLLM 0.33's rejection notice (a
//! pre-aborted request, `AsyncLLM.notify_kv_transfer_request_rejected`), and the engine's
//! KV connector frees the prefill blocks; the mock engine emulates the connector and
//! records what it freed. Failures vLLM raises before its handler (request validation),
//! requests without `do_remote_prefill`, requests that run, and servers without a
//! connector send nothing. `examples/scripts/compare_vllm_frontend.py --modes pd`
//! checks the same cases against vLLM's own frontend.

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use common::*;
use hyper::StatusCode;
use serde_json::{Value, json};
use vllm_client::mock::{FreedRemotePrefill, MockConfig, MockEngine};
use vllm_examples::serve::engine::EngineSource;
use vllm_examples::serve::{RunningServer, ServeConfig};

/// A token id past Qwen3's vocabulary.
const OUT_OF_VOCAB: u64 = 10_000_000;

/// A server whose engine runs (an emulation of) NixlConnector.
fn pd_server() -> &'static RunningServer {
    static SERVER: OnceLock<RunningServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        start(ServeConfig {
            kv_transfer_config: Some(
                json!({"kv_connector": "NixlConnector", "kv_role": "kv_both"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
            ..config(PLAIN_TEXT)
        })
    })
}

/// What a prefill instance answered: the decode instance pulls the prompt's KV from it.
fn remote_prefill() -> Value {
    json!({
        "do_remote_prefill": true,
        "do_remote_decode": false,
        "remote_block_ids": [[0, 1]],
        "remote_engine_id": "prefill-0",
        "remote_host": "10.0.0.1",
        "remote_port": 5600,
        "tp_size": 1
    })
}

fn freed_ids(server: &RunningServer) -> Vec<String> {
    server.mocks[0]
        .freed_remote_prefills()
        .into_iter()
        .map(|f: FreedRemotePrefill| f.request_id)
        .collect()
}

/// Waits until the engine freed the remote prefill of `id` (the notice is sent after the
/// error answer is ready, and the engine handles it in its own time).
async fn freed(server: &RunningServer, id: &str) -> FreedRemotePrefill {
    let mut found = None;
    eventually(
        &format!("the engine frees the remote prefill of {id}"),
        Duration::from_secs(10),
        || {
            found = server.mocks[0]
                .freed_remote_prefills()
                .into_iter()
                .find(|f| f.request_id == id);
            found.is_some()
        },
    )
    .await;
    found.unwrap()
}

#[test]
fn failed_requests_with_a_remote_prefill_free_its_blocks() {
    run(async {
        let server = pd_server();
        let addr = server.addr;
        // A completion whose prompt holds an out-of-vocabulary token (refused inside
        // vLLM's handler; streamed, vLLM refuses it inside the stream: no notice).
        let (status, body) = post(
            addr,
            "/v1/completions",
            json!({"model": "qwen3", "prompt": [9707, OUT_OF_VOCAB], "max_tokens": 4,
                   "request_id": "pd-oov", "kv_transfer_params": remote_prefill()}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let notice = freed(server, "pd-oov").await;
        // The parameters the client sent, as they were (msgpack of the same JSON).
        let params = serde_json::to_value(&notice.kv_transfer_params).unwrap();
        assert_eq!(params, remote_prefill());
        // A chat request asking for more tokens than the context holds, whole and
        // streamed (refused before its stream starts).
        for (id, stream) in [("pd-too-long", false), ("pd-too-long-stream", true)] {
            let (status, body) = post(
                addr,
                "/v1/chat/completions",
                json!({"model": "qwen3", "messages": [{"role": "user", "content": "Hi"}],
                       "max_tokens": 100_000_000, "request_id": id, "stream": stream,
                       "kv_transfer_params": remote_prefill()}),
            )
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            freed(server, id).await;
        }
        // Without a request id, vLLM's notice names the request by the random id that
        // also names its answer; the engine frees it all the same.
        let (status, _) = post(
            addr,
            "/v1/chat/completions",
            json!({"model": "nope", "messages": [{"role": "user", "content": "Hi"}],
                   "kv_transfer_params": remote_prefill()}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        eventually(
            "a notice for the unnamed request",
            Duration::from_secs(10),
            || {
                freed_ids(server)
                    .iter()
                    .any(|id| id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()))
            },
        )
        .await;
    });
}

#[test]
fn requests_that_run_or_fail_before_the_handler_send_nothing() {
    run(async {
        let server = pd_server();
        let addr = server.addr;
        let chat = |id: &str, extra: Value| {
            let mut body = json!({"model": "qwen3", "max_tokens": 3, "request_id": id,
                                  "messages": [{"role": "user", "content": "Hi"}]});
            for (k, v) in extra.as_object().unwrap() {
                body[k] = v.clone();
            }
            body
        };
        // Request validation (vLLM's pydantic validators run before its handler).
        let (status, _) = post(
            addr,
            "/v1/chat/completions",
            chat(
                "pd-invalid",
                json!({"top_logprobs": 2, "kv_transfer_params": remote_prefill()}),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // A failure without a remote prefill (a prefill instance's request).
        let (status, _) = post(
            addr,
            "/v1/chat/completions",
            chat(
                "pd-decode-side",
                json!({"max_tokens": 100_000_000,
                       "kv_transfer_params": {"do_remote_decode": true, "do_remote_prefill": false}}),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // A request that runs: the connector pulls its prefill when it is scheduled.
        let (status, body) = post(
            addr,
            "/v1/chat/completions",
            chat("pd-runs", json!({"kv_transfer_params": remote_prefill()})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // A streamed request that runs.
        let events = stream_all(
            addr,
            "/v1/chat/completions",
            chat(
                "pd-runs-stream",
                json!({"stream": true, "kv_transfer_params": remote_prefill()}),
            ),
        )
        .await;
        assert!(!events.is_empty());
        // Then one that sends a notice: everything before it was handled by then.
        let (status, _) = post(
            addr,
            "/v1/chat/completions",
            chat(
                "pd-marker",
                json!({"max_tokens": 100_000_000, "kv_transfer_params": remote_prefill()}),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        freed(server, "pd-marker").await;
        let ids = freed_ids(server);
        for id in ["pd-invalid", "pd-decode-side", "pd-runs", "pd-runs-stream"] {
            assert!(!ids.iter().any(|f| f.starts_with(id)), "{id} in {ids:?}");
        }
    });
}

#[test]
fn without_a_kv_connector_nothing_is_sent() {
    // The engine runs a connector, the server is not told so (no --kv-transfer-config).
    let rpc_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let engine = std::thread::spawn(move || {
        runtime().block_on(async move {
            MockEngine::spawn(
                format!("tcp://127.0.0.1:{rpc_port}"),
                0,
                MockConfig {
                    kv_connector: Some("NixlConnector".into()),
                    ..MockConfig::default()
                },
            )
        })
    });
    let server = start(ServeConfig {
        engine: EngineSource::External {
            address: "127.0.0.1".into(),
            rpc_port,
        },
        ..config(PLAIN_TEXT)
    });
    let engine = engine.join().unwrap();
    run(async {
        let (status, _) = post(
            server.addr,
            "/v1/completions",
            json!({"model": "qwen3", "prompt": [OUT_OF_VOCAB], "request_id": "no-connector",
                   "kv_transfer_params": remote_prefill()}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // A request the engine frees (refused while paused) marks where the input was.
        server
            .client
            .pause_generation(vllm_client::protocol::PauseMode::Abort, false)
            .await
            .unwrap();
        let (status, _) = post(
            server.addr,
            "/v1/completions",
            json!({"model": "qwen3", "prompt": [9707], "request_id": "paused",
                   "kv_transfer_params": remote_prefill()}),
        )
        .await;
        assert!(!status.is_success());
        let mut ids = Vec::new();
        eventually(
            "the paused engine frees the refused request",
            Duration::from_secs(10),
            || {
                ids = engine
                    .freed_remote_prefills()
                    .into_iter()
                    .map(|f| f.request_id)
                    .collect();
                !ids.is_empty()
            },
        )
        .await;
        assert!(
            ids.iter().all(|id| id.starts_with("cmpl-paused")),
            "{ids:?}"
        );
    });
}
