//! `serve`'s control plane over HTTP (`VLLM_SERVER_DEV_MODE=1`): pause modes with a
//! request in flight, sleep and wake-up, the weight-transfer sequence, `collective_rpc`,
//! aborts, and their errors, in front of the embedded mock engine. The answers are
//! checked byte for byte against `vllm-rs serve` by
//! `examples/scripts/control_conformance.py` (run by `scripts/interop.sh`).

mod common;

use common::*;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use vllm_examples::serve::engine::{EngineSource, MockSettings};
use vllm_examples::serve::{RunningServer, ServeConfig};

const LONG_TEXT: &str = "one two three four five six seven eight nine ten eleven twelve thirteen \
fourteen fifteen sixteen seventeen eighteen nineteen twenty";

/// A development-mode server with a slow mock engine, so that requests are in flight
/// when the test acts.
fn dev_server() -> RunningServer {
    start(ServeConfig {
        dev_mode: true,
        engine: EngineSource::Embedded(MockSettings {
            text: LONG_TEXT.into(),
            tokens_per_second: 20.0,
        }),
        ..config(LONG_TEXT)
    })
}

async fn call(addr: std::net::SocketAddr, method: Method, path: &str) -> (StatusCode, Value) {
    let response = send(addr, method, path, None).await;
    let status = response.status;
    let text = response.text().await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn completion(stream: bool, max_tokens: u32) -> Value {
    json!({"model": "qwen3", "prompt": "Count", "stream": stream, "max_tokens": max_tokens,
           "ignore_eos": true})
}

/// A streamed completion of `max_tokens` tokens, once its first event is in (the
/// request is running on the engine).
async fn first_event(addr: std::net::SocketAddr, max_tokens: u32) -> Events {
    let body = completion(true, max_tokens).to_string();
    let mut events = send(addr, Method::POST, "/v1/completions", Some(body))
        .await
        .events();
    assert!(matches!(events.next().await, Some(Event::Data(_))));
    events
}

/// Reads a stream's events until `[DONE]`; the last finish reason.
async fn finish_reason(events: &mut Events) -> Option<String> {
    let mut finish = None;
    while let Some(Event::Data(event)) = events.next().await {
        if let Some(reason) = event["choices"][0]["finish_reason"].as_str() {
            finish = Some(reason.to_owned());
        }
    }
    finish
}

#[test]
fn the_development_endpoints_need_dev_mode() {
    run(async {
        let addr = plain();
        let (status, _) = call(addr, Method::POST, "/pause").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, version) = call(addr, Method::GET, "/version").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(version["version"], "0.33.0");
        let (_, load) = call(addr, Method::GET, "/load").await;
        assert_eq!(load, json!({"server_load": 0}));
        let (_, sources) = call(addr, Method::GET, "/kv_event_sources").await;
        assert_eq!(sources, json!({}));
    });
}

#[test]
fn pause_modes_treat_the_request_in_flight_as_vllm_does() {
    let server = dev_server();
    let addr = server.addr;
    run(async {
        // abort: the streamed request ends with `abort`; new requests get vLLM's 503.
        let mut events = first_event(addr, 1000).await;
        assert_eq!(
            call(addr, Method::POST, "/pause").await,
            (StatusCode::OK, json!({"status": "paused"}))
        );
        assert_eq!(finish_reason(&mut events).await.as_deref(), Some("abort"));
        assert_eq!(
            call(addr, Method::GET, "/is_paused").await.1,
            json!({"is_paused": true})
        );
        let (status, refused) = post(addr, "/v1/completions", completion(false, 3)).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            refused["error"]["message"],
            "Generation is paused. Please retry after it resumes."
        );
        assert_eq!(refused["error"]["type"], "ServiceUnavailableError");
        assert_eq!(
            call(addr, Method::POST, "/resume").await,
            (StatusCode::OK, json!({"status": "resumed"}))
        );

        // keep: the request freezes, then finishes after the resume.
        let mut events = first_event(addr, 8).await;
        call(addr, Method::POST, "/pause?mode=keep").await;
        call(addr, Method::POST, "/resume").await;
        assert_eq!(finish_reason(&mut events).await.as_deref(), Some("length"));

        // wait: the pause answers once the request has finished by itself.
        let mut events = first_event(addr, 6).await;
        let (status, _) = call(addr, Method::POST, "/pause?mode=wait").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(finish_reason(&mut events).await.as_deref(), Some("length"));
        call(addr, Method::POST, "/resume").await;

        // A bad mode is refused with vllm-rs's message.
        let (status, error) = call(addr, Method::POST, "/pause?mode=bogus").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            error["error"]["message"],
            "Failed to deserialize query string: mode: invalid pause mode `bogus`; \
             expected one of: abort, wait, keep"
        );

        // /abort_requests without ids aborts everything in flight.
        let mut events = first_event(addr, 1000).await;
        let (status, _) = post_status(addr, "/abort_requests", json!({})).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(finish_reason(&mut events).await.as_deref(), Some("abort"));
    });
    drop(server);
}

async fn post_status(addr: std::net::SocketAddr, path: &str, body: Value) -> (StatusCode, String) {
    let response = send(addr, Method::POST, path, Some(body.to_string())).await;
    let status = response.status;
    (status, response.text().await)
}

#[test]
fn sleep_weights_and_rpc_answer_as_vllm_does() {
    let server = dev_server();
    let addr = server.addr;
    run(async {
        assert_eq!(
            call(addr, Method::POST, "/sleep?level=1").await.1,
            json!({"status": "sleeping", "level": 1})
        );
        assert_eq!(
            call(addr, Method::GET, "/is_sleeping").await.1,
            json!({"is_sleeping": true})
        );
        assert_eq!(
            call(addr, Method::POST, "/wake_up?tags=weights").await.1,
            json!({"status": "sleeping", "tags": ["weights"]}),
            "the KV cache still sleeps"
        );
        assert_eq!(
            call(addr, Method::POST, "/wake_up?tags=kv_cache").await.1,
            json!({"status": "awake", "tags": ["kv_cache"]})
        );
        let (status, error) = call(addr, Method::POST, "/sleep?level=7").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error["error"]["message"], "level must be between 0 and 2");

        // The weight-transfer sequence, its session rules and the version.
        let (status, error) = call(addr, Method::POST, "/start_weight_update").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("failed to call start_weight_update: utility call `collective_rpc` failed (call_id=")
                && message.ends_with("Weight transfer not configured. Please set weight_transfer_config to enable weight transfer."),
            "{message}"
        );
        let (status, _) = post(
            addr,
            "/init_weight_transfer_engine",
            json!({"init_info": {"world_size": 2}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            call(addr, Method::POST, "/start_weight_update").await.1,
            json!({"message": "Weight update started"})
        );
        let (status, _) = post(
            addr,
            "/update_weights",
            json!({"update_info": {"names": ["w"]}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = post(
            addr,
            "/finish_weight_update",
            json!({"weight_version": "step-1"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            call(addr, Method::GET, "/weight_info").await.1,
            json!({"weight_version": "step-1"})
        );
        let (_, checksums) = post(addr, "/weight_checker", json!({"action": "checksum"})).await;
        assert_eq!(
            checksums,
            json!({"checksums": {"mock.weight": "0000000000000001"}})
        );
        let (_, compared) = post(
            addr,
            "/weight_checker",
            json!({"action": "compare", "baseline": {"mock.weight": "0000000000000000"}}),
        )
        .await;
        assert_eq!(
            compared,
            json!({"match": false, "mismatches": ["mock.weight"]})
        );

        // collective_rpc reaches the worker with the body's arguments.
        let (status, answer) = post(
            addr,
            "/collective_rpc",
            json!({"method": "echo", "args": [1], "kwargs": {"x": 2}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(answer, json!({"results": [["echo", [1], {"x": 2}]]}));
        let (status, error) = post(addr, "/collective_rpc", json!({"args": []})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            error["error"]["message"],
            "Missing 'method' in request body"
        );

        assert_eq!(
            call(addr, Method::POST, "/reset_prefix_cache").await.1,
            json!({"success": true})
        );
        assert_eq!(
            call(addr, Method::GET, "/get_world_size").await.1,
            json!({"world_size": 1})
        );
    });
    drop(server);
}

#[test]
fn api_key_request_ids_and_cors_wrap_every_route() {
    use vllm_examples::serve::ops::{Cors, Operations};
    let server = start(ServeConfig {
        ops: Operations {
            api_keys: vec!["sekret".into()],
            request_id_headers: true,
            cors: Some(Cors {
                origins: vec!["http://a.example".into()],
                methods: vec!["*".into()],
                headers: vec!["*".into()],
                credentials: false,
            }),
        },
        ..config(LONG_TEXT)
    });
    let addr = server.addr;
    run(async {
        // The OpenAI and tokens-in paths need the key; health and version do not.
        let denied = send(addr, Method::GET, "/v1/models", None).await;
        assert_eq!(denied.status, StatusCode::UNAUTHORIZED);
        assert_eq!(denied.json().await, json!({"error": "Unauthorized"}));
        let with_key = [("authorization", "Bearer sekret")];
        let allowed = send_with(addr, Method::GET, "/v1/models", None, &with_key).await;
        assert_eq!(allowed.status, StatusCode::OK);
        assert_eq!(get(addr, "/health").await.status, StatusCode::OK);
        let generate = send(
            addr,
            Method::POST,
            "/inference/v1/generate",
            Some("{}".into()),
        )
        .await;
        assert_eq!(generate.status, StatusCode::UNAUTHORIZED);

        // X-Request-Id: the request's own, else a new one.
        let echoed = send_with(
            addr,
            Method::GET,
            "/version",
            None,
            &[("x-request-id", "abc")],
        )
        .await;
        assert_eq!(echoed.headers["x-request-id"], "abc");
        let fresh = send(addr, Method::GET, "/version", None).await;
        assert_eq!(fresh.headers["x-request-id"].len(), 32);

        // CORS: a preflight from an allowed origin needs no key.
        let preflight = send_with(
            addr,
            Method::OPTIONS,
            "/v1/chat/completions",
            None,
            &[
                ("origin", "http://a.example"),
                ("access-control-request-method", "POST"),
                ("access-control-request-headers", "authorization"),
            ],
        )
        .await;
        assert_eq!(preflight.status, StatusCode::OK);
        assert_eq!(
            preflight.headers["access-control-allow-origin"],
            "http://a.example"
        );
        assert_eq!(
            preflight.headers["access-control-allow-headers"],
            "authorization"
        );
        assert_eq!(
            preflight.headers["access-control-allow-methods"],
            "DELETE,GET,HEAD,OPTIONS,PATCH,POST,PUT"
        );
        let other = send_with(
            addr,
            Method::GET,
            "/version",
            None,
            &[("origin", "http://b.example")],
        )
        .await;
        assert!(!other.headers.contains_key("access-control-allow-origin"));
        assert_eq!(other.headers["vary"], "origin");
    });
    drop(server);
}

#[test]
fn metrics_count_tokens_requests_and_latencies_with_vllm_names() {
    let addr = plain();
    run(async {
        let before = get(addr, "/metrics").await;
        assert_eq!(
            before.content_type,
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        let before = before.text().await;
        let value = |text: &str, series: &str| -> f64 {
            text.lines()
                .find(|l| l.starts_with(series))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0)
        };
        let generation = r#"vllm:generation_tokens_total{model_name="qwen3",engine="0"}"#;
        let success =
            r#"vllm:request_success_total{model_name="qwen3",engine="0",finished_reason="length"}"#;
        let ttft = r#"vllm:time_to_first_token_seconds_count{model_name="qwen3",engine="0"}"#;
        let (status, _) = post(addr, "/v1/completions", completion(false, 4)).await;
        assert_eq!(status, StatusCode::OK);
        // The statistics of the last engine step arrive with its outputs.
        let mut after = String::new();
        for _ in 0..50 {
            after = get(addr, "/metrics").await.text().await;
            if value(&after, success) > value(&before, success) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(value(&after, generation) - value(&before, generation), 4.0);
        assert_eq!(value(&after, success) - value(&before, success), 1.0);
        assert_eq!(value(&after, ttft) - value(&before, ttft), 1.0);
        assert!(after.contains("# TYPE vllm:num_requests_running gauge"));
        assert!(after.ends_with("# EOF\n"));
    });
}

#[test]
fn lora_adapters_load_list_serve_and_unload() {
    use vllm_chat::pipeline::lora::LoraModule;
    use vllm_client::mock::MockLora;
    use vllm_examples::serve::LoraSettings;

    let dir = std::env::temp_dir().join(format!("serve-loras-{}", std::process::id()));
    for name in ["static", "runtime"] {
        std::fs::create_dir_all(dir.join(name)).unwrap();
    }
    let server = start(ServeConfig {
        lora: LoraSettings {
            modules: vec![LoraModule::parse(&format!("sql={}/static", dir.display())).unwrap()],
            runtime_updates: true,
            allowed_prefixes: Some(vec![dir.clone()]),
            mock: Some(MockLora {
                max_loras: 4,
                max_cpu_loras: None,
            }),
        },
        ..config(LONG_TEXT)
    });
    let addr = server.addr;
    let client = server.client.clone();
    run(async {
        let ids = |models: &Value| -> Vec<String> {
            models["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_owned())
                .collect()
        };
        let models = get(addr, "/v1/models").await.json().await;
        assert_eq!(ids(&models), ["qwen3", "sql"]);
        assert_eq!(models["data"][1]["parent"], "qwen3");
        assert_eq!(
            client.list_loras().await.unwrap(),
            vec![1],
            "loaded at start-up"
        );

        let path = dir.join("runtime").display().to_string();
        let response = send(
            addr,
            Method::POST,
            "/v1/load_lora_adapter",
            Some(json!({"lora_name": "chat", "lora_path": path}).to_string()),
        )
        .await;
        assert_eq!(response.status, StatusCode::OK);
        assert_eq!(
            response.text().await,
            "Success: LoRA adapter 'chat' added successfully."
        );
        let (status, error) = post(
            addr,
            "/v1/load_lora_adapter",
            json!({"lora_name": "x", "lora_path": "/etc"}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            error["error"]["message"],
            "Local LoRA adapter path is outside the configured allowed prefixes."
        );

        // A request naming the adapter runs on it and answers with its name.
        let (status, answer) = post(
            addr,
            "/v1/completions",
            json!({"model": "chat", "prompt": "Hi", "max_tokens": 2}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["model"], "chat");
        assert_eq!(client.list_loras().await.unwrap(), vec![1, 2]);
        let (status, _) = post(
            addr,
            "/v1/chat/completions",
            json!({"model": "sql", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}),
        )
        .await;
        assert_eq!(status, StatusCode::OK);

        let response = send(
            addr,
            Method::POST,
            "/v1/unload_lora_adapter",
            Some(json!({"lora_name": "chat"}).to_string()),
        )
        .await;
        assert_eq!(response.status, StatusCode::OK);
        assert_eq!(client.list_loras().await.unwrap(), vec![1]);
        let (status, error) = post(
            addr,
            "/v1/completions",
            json!({"model": "chat", "prompt": "Hi", "max_tokens": 2}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(
            error["error"]["message"],
            "The model `chat` does not exist."
        );
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
