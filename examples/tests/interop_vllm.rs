//! `serve` in front of vLLM 0.33.0's real `EngineCoreProc`s (real handshake, scheduler,
//! aborts), whose model executor is scripted so that they run without a GPU
//! (`vllm-client/scripts/interop_engine_core.py`): output token `k` of a request whose
//! first prompt token is `p`, on the engine of rank `r`, is `100 + 2000 r + (p + k) % 1000`.
//!
//! `#[ignore]`d: it needs the Python reference environment. Run it with
//!
//! ```text
//! VLLM_REFERENCE_PYTHON=$HOME/.cache/vllm-reference/venv/bin/python \
//! VLLM_REFERENCE_MODELS=$HOME/.cache/vllm-reference/models \
//!     cargo test -p vllm-examples --test interop_vllm -- --ignored
//! ```

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use hyper::{Method, StatusCode};
use serde_json::json;
use vllm_examples::serve::ServeConfig;
use vllm_examples::serve::engine::EngineSource;

const LAUNCHER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../vllm-client/scripts/interop_engine_core.py"
);

/// The launched engines; killed with their process group when dropped.
struct Engines(Child);

impl Drop for Engines {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn launch(python: &str, port: u16, dp_size: u16) -> Engines {
    let mut command = Command::new(python);
    command
        .arg(LAUNCHER)
        .args(["--handshake-address", &format!("tcp://127.0.0.1:{port}")])
        .args([
            "--dp-size",
            &dp_size.to_string(),
            "--local-count",
            &dp_size.to_string(),
        ])
        .args(["--step-delay-ms", "20"])
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0);
    if let Ok(models) = std::env::var("VLLM_REFERENCE_MODELS") {
        command.arg("--model").arg(format!("{models}/qwen3"));
    }
    Engines(command.spawn().expect("launch the vLLM engines"))
}

/// The token the scripted engine of rank `rank` emits at output position `k`.
fn scripted(first_prompt_token: u64, k: u64, rank: u64) -> u64 {
    100 + 2000 * rank + (first_prompt_token + k) % 1000
}

#[test]
#[ignore = "needs the Python reference environment (VLLM_REFERENCE_PYTHON)"]
fn serve_in_front_of_real_vllm_engines() {
    let Ok(python) = std::env::var("VLLM_REFERENCE_PYTHON") else {
        eprintln!("skipped: set VLLM_REFERENCE_PYTHON");
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _engines = launch(&python, port, 2);
    let server = start(ServeConfig {
        engine: EngineSource::External {
            address: "127.0.0.1".into(),
            rpc_port: port,
        },
        data_parallel_size: 2,
        engine_ready_timeout: Duration::from_secs(300),
        ..config("")
    });
    run(async {
        assert_eq!(get(server.addr, "/health").await.status, StatusCode::OK);
        // Tokens in, tokens out: the scripted tokens, from whichever engine served it.
        let (status, body) = post(
            server.addr,
            "/inference/v1/generate",
            json!({"token_ids": [7, 8, 9], "sampling_params": {"max_tokens": 5, "ignore_eos": true}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let ids: Vec<u64> = body["choices"][0]["token_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap())
            .collect();
        let rank = u64::from(ids[0] >= 2000);
        assert_eq!(
            ids,
            (0..5).map(|k| scripted(7, k, rank)).collect::<Vec<_>>()
        );
        assert_eq!(body["choices"][0]["finish_reason"], "length");

        // n = 4 samples of two prompts: eight engine requests (vLLM's child requests),
        // spread over both engines, each choice the scripted tokens of its engine.
        let (status, body) = post(
            server.addr,
            "/v1/completions",
            json!({"prompt": [[7, 8], [30]], "n": 4, "seed": 1, "max_tokens": 3,
                   "ignore_eos": true, "return_token_ids": true}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let choices = body["choices"].as_array().unwrap();
        assert_eq!(choices.len(), 8);
        let mut ranks = [0; 2];
        for (i, choice) in choices.iter().enumerate() {
            assert_eq!(choice["index"], i);
            let first = if i < 4 { 7 } else { 30 };
            let ids: Vec<u64> = choice["token_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_u64().unwrap())
                .collect();
            let rank = u64::from(ids[0] >= 2000);
            ranks[rank as usize] += 1;
            assert_eq!(
                ids,
                (0..3).map(|k| scripted(first, k, rank)).collect::<Vec<_>>()
            );
        }
        assert_eq!(ranks, [4, 4], "samples per engine");
        assert_eq!(body["usage"]["prompt_tokens"], 3);
        assert_eq!(body["usage"]["completion_tokens"], 24);

        // Completions, streamed, with the text of those tokens.
        let events = stream_all(
            server.addr,
            "/v1/completions",
            json!({"prompt": [7, 8, 9], "max_tokens": 6, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}),
        )
        .await;
        assert_eq!(events.last().unwrap()["usage"]["completion_tokens"], 6);
        assert_eq!(final_choice(&events)["finish_reason"], "length");

        // Chat on both engines at once, then a client that goes away mid-stream: the
        // real engines' requests are aborted.
        let chat = json!({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 500, "ignore_eos": true, "stream": true});
        let a = send(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            Some(chat.to_string()),
        )
        .await
        .events();
        let b = send(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            Some(chat.to_string()),
        )
        .await
        .events();
        let (mut a, mut b) = (a, b);
        for _ in 0..3 {
            assert!(matches!(a.next().await, Some(Event::Data(_))));
            assert!(matches!(b.next().await, Some(Event::Data(_))));
        }
        assert_eq!(server.client.inflight(), vec![1, 1]);
        a.disconnect();
        b.disconnect();
        let client = server.client.clone();
        eventually("aborted on the engines", Duration::from_secs(30), || {
            client.inflight() == vec![0, 0]
        })
        .await;
    });
    run(server.stop());
}
