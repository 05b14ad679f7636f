//! `n > 1` through the pipeline in front of a mock engine that samples seeded random
//! tokens, so that the samples differ (the embedded mock of `serve` answers one fixed
//! text): each sample is its own engine request, with vLLM's seed rule, and a stop
//! string ends only the sample it appears in. The answers' bytes are compared with
//! vLLM's own frontend by `examples/scripts/compare_vllm_frontend.py`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use vllm_chat::RendererOptions;
use vllm_chat::openai::CompletionRequest;
use vllm_chat::pipeline::{Accepted, Model, Pipeline, PipelineConfig, Routing, ServingParsers};
use vllm_client::mock::{MockConfig, MockEngine, OutputMode};
use vllm_client::{ClientConfig, EngineCoreClient};

/// A pipeline over `engines` mock engines sampling seeded random tokens.
async fn pipeline(engines: u16) -> (Pipeline, Vec<vllm_client::mock::MockEngineHandle>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/models/qwen3");
    let model = Model::load(dir.as_ref(), RendererOptions::default()).expect("model loads");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = ClientConfig::handshake("127.0.0.1", port, engines)
        .with_ready_timeout(Duration::from_secs(60));
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let mock = MockConfig {
        output: OutputMode::Random { seed: 11 },
        // Within the tokenizer's ordinary tokens, so that texts decode cleanly.
        vocab_size: 20_000,
        data_parallel_size: usize::from(engines),
        ..MockConfig::default()
    };
    let handles = (0..engines)
        .map(|rank| MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), rank, mock.clone()))
        .collect();
    let client = connecting.await.unwrap().expect("engines register");
    let parsers = ServingParsers::none();
    let config = PipelineConfig::new("qwen3", parsers);
    (Pipeline::new(Arc::new(model), client, config), handles)
}

async fn complete(pipeline: &Pipeline, body: Value) -> Value {
    let request: CompletionRequest = serde_json::from_value(body).unwrap();
    let accepted = pipeline
        .completion(request, Routing::default())
        .await
        .expect("accepted");
    serde_json::to_value(accepted.response().await.expect("answered")).unwrap()
}

fn texts(answer: &Value) -> Vec<String> {
    answer["choices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn samples_follow_the_seed_rule_and_a_stop_string_ends_one_sample() {
    let (pipeline, _engines) = pipeline(2).await;
    let body = json!({"prompt": "Once upon a time", "n": 4, "seed": 40, "max_tokens": 12});
    let answer = complete(&pipeline, body.clone()).await;
    let samples = texts(&answer);
    assert_eq!(samples.len(), 4);
    // Sample i is what a single request with seed 40 + i gives.
    for (i, sample) in samples.iter().enumerate() {
        let alone = complete(
            &pipeline,
            json!({"prompt": "Once upon a time", "seed": 40 + i, "max_tokens": 12}),
        )
        .await;
        assert_eq!(&texts(&alone)[0], sample, "sample {i}");
    }
    let usage = &answer["usage"];
    assert_eq!(usage["completion_tokens"], 48, "{usage}");

    // A stop string found in one sample only: that sample stops there, the others
    // run to max_tokens unchanged.
    let (target, stop) = samples
        .iter()
        .enumerate()
        .find_map(|(i, s)| {
            let chars: Vec<char> = s.chars().collect();
            (2..chars.len().saturating_sub(3)).find_map(|at| {
                let stop: String = chars[at..at + 3].iter().collect();
                let unique = samples
                    .iter()
                    .enumerate()
                    .all(|(j, other)| j == i || !other.contains(&stop));
                (unique
                    && !stop.trim().is_empty()
                    && s.find(&stop) == Some(chars[..at].iter().collect::<String>().len()))
                .then_some((i, stop))
            })
        })
        .expect("some sample has a substring of its own");
    let mut with_stop = body;
    with_stop["stop"] = json!([stop]);
    let stopped = complete(&pipeline, with_stop).await;
    for (i, choice) in stopped["choices"].as_array().unwrap().iter().enumerate() {
        if i == target {
            let cut = &samples[i][..samples[i].find(&stop).unwrap()];
            assert_eq!(choice["text"], cut, "the stopped sample");
            assert_eq!(choice["finish_reason"], "stop");
            assert_eq!(choice["stop_reason"], stop.as_str());
        } else {
            assert_eq!(choice["text"], samples[i].as_str(), "sample {i} runs on");
            assert_eq!(choice["finish_reason"], "length");
        }
    }
}
