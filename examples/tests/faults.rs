//! `serve` when things go wrong or are cut short: a client that disconnects, a stop
//! string matched in the frontend, an engine that dies; and several engines (DP).
//! Each test runs its own server with a slow mock engine so that requests are still
//! running when the test acts.

mod common;

use std::time::Duration;

use common::*;
use hyper::{Method, StatusCode};
use serde_json::json;
use vllm_examples::serve::ServeConfig;
use vllm_examples::serve::engine::{EngineSource, MockSettings};
use vllm_examples::serve::error::ENGINE_DEAD_CLIENT_MESSAGE;

const LONG_TEXT: &str = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen \
fifteen sixteen seventeen eighteen nineteen twenty";

fn slow(engines: u16) -> ServeConfig {
    ServeConfig {
        engine: EngineSource::Embedded(MockSettings {
            text: LONG_TEXT.into(),
            tokens_per_second: 20.0,
        }),
        data_parallel_size: engines,
        ..config(LONG_TEXT)
    }
}

fn chat(stream: bool) -> serde_json::Value {
    json!({"messages": [{"role": "user", "content": "Count"}], "stream": stream, "max_tokens": 1000})
}

#[test]
fn a_disconnecting_client_and_a_stop_string_abort_the_engine_request() {
    let server = start(slow(1));
    run(async {
        let response = send(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            Some(chat(true).to_string()),
        )
        .await;
        let mut events = response.events();
        for _ in 0..3 {
            assert!(matches!(events.next().await, Some(Event::Data(_))));
        }
        assert_eq!(
            server.client.inflight(),
            vec![1],
            "the request runs while the client reads"
        );
        events.disconnect();
        let client = server.client.clone();
        eventually(
            "the engine request is aborted",
            Duration::from_secs(5),
            || client.inflight() == vec![0],
        )
        .await;

        // A stop string early in a long answer ends the request at once, in the
        // frontend, and frees the engine.
        let mut request = chat(false);
        request["stop"] = json!(["three"]);
        let (status, body) = post(server.addr, "/v1/chat/completions", request).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["choices"][0]["message"]["content"], "one two ");
        assert_eq!(body["choices"][0]["stop_reason"], "three");
        assert_eq!(server.client.inflight(), vec![0]);
    });
    run(server.stop());
}

#[test]
fn a_dead_engine_errors_open_streams_and_refuses_new_requests() {
    let server = start(slow(1));
    run(async {
        let response = send(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            Some(chat(true).to_string()),
        )
        .await;
        let mut events = response.events();
        assert!(matches!(events.next().await, Some(Event::Data(_))));
        server.mocks[0].die();
        let mut error = None;
        loop {
            match events.next().await {
                Some(Event::Data(value)) if value.get("error").is_some() => error = Some(value),
                Some(Event::Data(_)) => {}
                Some(Event::Done) => break,
                None => panic!("stream ended without [DONE]"),
            }
        }
        // vLLM's answer to `EngineDeadError`: 500, InternalServerError, its client message.
        let error = error.expect("an error event");
        assert_eq!(error["error"]["code"], 500, "{error}");
        assert_eq!(error["error"]["type"], "InternalServerError", "{error}");
        assert_eq!(
            error["error"]["message"], ENGINE_DEAD_CLIENT_MESSAGE,
            "{error}"
        );

        let (status, body) = post(server.addr, "/v1/chat/completions", chat(false)).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
        assert_eq!(body["error"]["code"], 500);
        assert_eq!(body["error"]["message"], ENGINE_DEAD_CLIENT_MESSAGE);
        let (status, _) = post(server.addr, "/v1/completions", json!({"prompt": "x"})).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            get(server.addr, "/health").await.status,
            StatusCode::SERVICE_UNAVAILABLE
        );
        // Engine-free endpoints keep working.
        let (status, _) = post(server.addr, "/tokenize", json!({"prompt": "x"})).await;
        assert_eq!(status, StatusCode::OK);
    });
    run(server.stop());
}

#[test]
fn requests_are_spread_over_data_parallel_engines() {
    let server = start(slow(2));
    run(async {
        let first = send(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            Some(chat(true).to_string()),
        )
        .await;
        let second = send(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            Some(chat(true).to_string()),
        )
        .await;
        let (mut a, mut b) = (first.events(), second.events());
        assert!(matches!(a.next().await, Some(Event::Data(_))));
        assert!(matches!(b.next().await, Some(Event::Data(_))));
        assert_eq!(
            server.client.inflight(),
            vec![1, 1],
            "one request per engine"
        );
        a.disconnect();
        b.disconnect();
        let client = server.client.clone();
        eventually("both aborted", Duration::from_secs(5), || {
            client.inflight() == vec![0, 0]
        })
        .await;

        // A router pins requests to an engine with `X-data-parallel-rank`.
        let pinned = |_| {
            send_with(
                server.addr,
                Method::POST,
                "/v1/chat/completions",
                Some(chat(true).to_string()),
                &[("x-data-parallel-rank", "1")],
            )
        };
        let (c, d) = (pinned(0).await.events(), pinned(1).await.events());
        let (mut c, mut d) = (c, d);
        assert!(matches!(c.next().await, Some(Event::Data(_))));
        assert!(matches!(d.next().await, Some(Event::Data(_))));
        assert_eq!(server.client.inflight(), vec![0, 2], "both on rank 1");
        c.disconnect();
        d.disconnect();
        let bad = send_with(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            Some(chat(false).to_string()),
            &[("x-data-parallel-rank", "7")],
        )
        .await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "no engine of rank 7");

        let mut request = chat(false);
        request["max_tokens"] = json!(4);
        let (status, body) = post(server.addr, "/v1/chat/completions", request).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["choices"][0]["message"]["content"],
            "one two three four"
        );
    });
    run(server.stop());
}

#[test]
fn shutdown_is_graceful_for_requests_in_flight() {
    let server = start(slow(1));
    let addr = server.addr;
    run(async move {
        let mut request = chat(true);
        request["max_tokens"] = json!(10);
        let response = send(
            addr,
            Method::POST,
            "/v1/chat/completions",
            Some(request.to_string()),
        )
        .await;
        let mut events = response.events();
        assert!(matches!(events.next().await, Some(Event::Data(_))));
        // Stop while the answer is streaming: it still completes.
        let stopping = tokio::spawn(server.stop());
        let mut content = Vec::new();
        loop {
            match events.next().await {
                Some(Event::Data(v)) => content.push(v),
                Some(Event::Done) => break,
                None => panic!("the stream was cut by the shutdown"),
            }
        }
        assert_eq!(final_choice(&content)["finish_reason"], "length");
        stopping.await.unwrap();
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "no longer accepting"
        );
    });
}

#[test]
fn a_shutdown_deadline_aborts_requests_still_running() {
    let server = start(ServeConfig {
        shutdown_timeout: Some(Duration::from_millis(300)),
        ..slow(1)
    });
    let addr = server.addr;
    run(async move {
        let response = send(
            addr,
            Method::POST,
            "/v1/chat/completions",
            Some(chat(true).to_string()),
        )
        .await;
        let mut events = response.events();
        assert!(matches!(events.next().await, Some(Event::Data(_))));
        // 1,000 tokens at 20/s would take 50 s; the deadline ends the stream.
        let started = std::time::Instant::now();
        let stopping = tokio::spawn(server.stop());
        let mut last = None;
        while let Some(event) = events.next().await {
            if let Event::Data(v) = event {
                last = Some(v);
            }
        }
        stopping.await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let last = last.expect("frames before the abort");
        assert!(
            last.get("error").is_some(),
            "the stream ends with an error event: {last}"
        );
    });
}

#[test]
fn idle_and_slow_connections_are_closed_and_connections_are_capped() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start(ServeConfig {
        http: vllm_examples::serve::http::HttpLimits {
            keep_alive_timeout: Duration::from_millis(500),
            max_connections: 3,
        },
        ..slow(1)
    });
    let addr = server.addr;
    run(async move {
        let closed_within = |mut tcp: tokio::net::TcpStream, limit: Duration| async move {
            let mut buf = [0u8; 256];
            let read = tokio::time::timeout(limit, async {
                loop {
                    match tcp.read(&mut buf).await {
                        Ok(0) | Err(_) => return true,
                        Ok(_) => {}
                    }
                }
            });
            read.await.unwrap_or(false)
        };
        // Idle: never sends a byte.
        let idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        // Slowloris: a header that never ends.
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let third = tokio::net::TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Over the cap of 3: closed at once.
        let fourth = tokio::net::TcpStream::connect(addr).await.unwrap();
        assert!(closed_within(fourth, Duration::from_millis(300)).await);
        for tcp in [idle, slow, third] {
            assert!(closed_within(tcp, Duration::from_secs(3)).await);
        }
        // Slots are free again: requests are served.
        let (status, _) = post(addr, "/tokenize", json!({"prompt": "x"})).await;
        assert_eq!(status, StatusCode::OK);
    });
    run(server.stop());
}
