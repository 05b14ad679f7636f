//! `EngineCoreClient` against the mock engine over real ZMQ sockets: handshake, streaming,
//! aborts, utility calls, data-parallel routing, engine death.

use std::time::Duration;

use futures::StreamExt;
use vllm_client::mock::{MockConfig, MockEngine, MockEngineHandle, OutputMode};
use vllm_client::protocol::{
    EngineCoreRequest, EngineZmqAddresses, FinishReason, PauseMode, SamplingParams, SleepLevel,
};
use vllm_client::{ClientConfig, ClientError, EngineCoreClient, Startup};

const EOS: i64 = 2;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn request(id: &str, max_tokens: i64) -> EngineCoreRequest {
    let mut sp = SamplingParams {
        max_tokens: Some(max_tokens),
        ..SamplingParams::default()
    };
    sp.set_eos_token_id(EOS);
    sp.apply_post_init();
    EngineCoreRequest::new(id, vec![10, 11, 12], sp)
}

/// A client and `n` mock engines that registered through the handshake.
async fn fleet(n: u16, config: MockConfig) -> (EngineCoreClient, Vec<MockEngineHandle>) {
    let port = free_port();
    let client_config =
        ClientConfig::handshake("127.0.0.1", port, n).with_ready_timeout(Duration::from_secs(30));
    let connecting = tokio::spawn(EngineCoreClient::connect(client_config));
    let engines = (0..n)
        .map(|rank| {
            MockEngine::spawn(
                format!("tcp://127.0.0.1:{port}"),
                rank,
                MockConfig {
                    data_parallel_size: n as usize,
                    ..config.clone()
                },
            )
        })
        .collect();
    let client = connecting.await.unwrap().expect("engines register");
    (client, engines)
}

fn slow() -> MockConfig {
    MockConfig {
        output: OutputMode::Random { seed: 7 },
        tokens_per_second: 50.0,
        ..MockConfig::default()
    }
}

#[tokio::test]
async fn handshake_then_stream_until_max_tokens() {
    let (client, _engines) = fleet(1, MockConfig::default()).await;
    assert_eq!(client.engines().len(), 1);
    assert_eq!(client.engines()[0].ready.vllm_version, "0.33.0");
    assert!(!client.is_dead());
    let outputs = client.generate_all(request("r1", 9)).await.unwrap();
    let tokens: usize = outputs.iter().map(|o| o.new_token_ids.len()).sum();
    assert_eq!(tokens, 9);
    assert_eq!(
        outputs.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );
    assert!(outputs[..outputs.len() - 1].iter().all(|o| !o.finished()));
    assert_eq!(client.inflight(), vec![0]);
}

#[tokio::test]
async fn outputs_queued_for_a_lagging_consumer_arrive_merged() {
    let (client, _engines) = fleet(1, MockConfig::default()).await;
    // The same request twice (random tokens depend on the engine's seed and the request),
    // read eagerly, then read only once the engine has finished it.
    let eager = client.generate_all(request("lagging", 20)).await.unwrap();
    let mut stream = client.generate(request("lagging", 20)).await.unwrap();
    // The last output removes the request from the in-flight count when it is delivered
    // to the stream, so once the count is back to zero everything is queued.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while client.inflight() != vec![0] {
        assert!(
            tokio::time::Instant::now() < deadline,
            "request never finished"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut lagging = Vec::new();
    while let Some(output) = stream.next().await {
        lagging.push(output.unwrap());
    }
    // The first output carries the engine's lifecycle events and is delivered as it
    // is; the 19 outputs of one token each that queued behind it arrive as one.
    assert_eq!(lagging.len(), 2, "{lagging:?}");
    assert!(lagging[0].events.is_some());
    assert_eq!(lagging[0].new_token_ids.len(), 1);
    assert_eq!(lagging[1].new_token_ids.len(), 19);
    assert_eq!(lagging[1].request_id, "lagging");
    assert_eq!(lagging[1].finish_reason, Some(FinishReason::Length));
    let tokens = |outputs: &[vllm_client::protocol::EngineCoreOutput]| {
        outputs
            .iter()
            .flat_map(|o| o.new_token_ids.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(tokens(&lagging), tokens(&eager));
}

#[tokio::test]
async fn echo_stops_at_eos_and_stop_tokens_report_their_reason() {
    let config = MockConfig {
        output: OutputMode::Echo,
        ..MockConfig::default()
    };
    let (client, _engines) = fleet(1, config).await;
    // The echo ends with EOS: prompt tokens then EOS, finish "stop" with stop_reason EOS.
    let outputs = client.generate_all(request("echo", 50)).await.unwrap();
    let tokens: Vec<u32> = outputs
        .iter()
        .flat_map(|o| o.new_token_ids.clone())
        .collect();
    assert_eq!(tokens, vec![10, 11, 12, EOS as u32]);
    assert_eq!(
        outputs.last().unwrap().finish_reason,
        Some(FinishReason::Stop)
    );

    let mut req = request("stop-id", 50);
    let sp = req.sampling_params.as_mut().unwrap();
    sp.stop_token_ids = vec![11];
    sp.all_stop_token_ids.push(11);
    let outputs = client.generate_all(req).await.unwrap();
    let last = outputs.last().unwrap();
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        last.stop_reason,
        Some(vllm_client::protocol::StopReason::Token(11))
    );
}

#[tokio::test]
async fn dropping_a_stream_aborts_the_request_on_the_engine() {
    let (client, _engines) = fleet(1, slow()).await;
    let mut stream = client.generate(request("dropped", 10_000)).await.unwrap();
    // Wait until the engine's scheduler stats show the request running, so that the
    // check below observes the engine and not a default.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while client.loads()[0].running != 1 {
        stream.next().await.unwrap().unwrap();
        assert!(tokio::time::Instant::now() < deadline, "no scheduler stats");
    }
    assert_eq!(client.inflight(), vec![1]);
    drop(stream);
    assert_eq!(client.inflight(), vec![0]);
    // The engine reports no running request once the abort arrived.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        // Keep the engine stepping so that it publishes its scheduler stats.
        client.generate_all(request("probe", 1)).await.unwrap();
        if client.loads()[0].running == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "abort never reached the engine"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The client still serves new requests.
    assert_eq!(
        client
            .generate_all(request("after", 3))
            .await
            .unwrap()
            .len(),
        3
    );
}

#[tokio::test]
async fn explicit_abort_ends_the_stream_with_abort() {
    let (client, _engines) = fleet(1, slow()).await;
    let mut stream = client.generate(request("to-abort", 10_000)).await.unwrap();
    stream.next().await.unwrap().unwrap();
    client.abort(&["to-abort", "unknown-id"]);
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item.unwrap());
    }
    assert_eq!(last.unwrap().finish_reason, Some(FinishReason::Abort));
    assert!(stream.is_finished());
}

#[tokio::test]
async fn utility_calls_return_typed_results_and_vllm_failures() {
    let (client, _engines) = fleet(2, MockConfig::default()).await;
    assert_eq!(
        client.get_supported_tasks().await.unwrap(),
        vec!["generate"]
    );
    assert!(!client.is_sleeping().await.unwrap());
    client
        .sleep(SleepLevel::OffloadWeights, PauseMode::Abort)
        .await
        .unwrap();
    assert!(client.is_sleeping().await.unwrap());
    client.wake_up(None).await.unwrap();
    assert!(!client.is_sleeping().await.unwrap());
    let err = client
        .call_utility("no_such_method", vec![])
        .await
        .unwrap_err();
    match err {
        ClientError::Utility {
            method, message, ..
        } => {
            assert_eq!(method, "no_such_method");
            assert!(message.contains("no_such_method"), "{message}");
        }
        other => panic!("expected a utility failure, got {other:?}"),
    }
}

#[tokio::test]
async fn data_parallel_requests_spread_and_explicit_ranks_are_honoured() {
    let (client, _engines) = fleet(2, slow()).await;
    let mut streams = Vec::new();
    for i in 0..4 {
        streams.push(
            client
                .generate(request(&format!("dp-{i}"), 10_000))
                .await
                .unwrap(),
        );
    }
    assert_eq!(client.inflight(), vec![2, 2]);
    let mut pinned = request("pinned", 10_000);
    pinned.data_parallel_rank = Some(1);
    let mut stream = client.generate(pinned).await.unwrap();
    assert_eq!(client.inflight(), vec![2, 3]);
    // Both engines produce outputs.
    for s in streams.iter_mut().chain(std::iter::once(&mut stream)) {
        assert!(!s.next().await.unwrap().unwrap().new_token_ids.is_empty());
    }
    let mut bad = request("bad-rank", 1);
    bad.data_parallel_rank = Some(7);
    assert!(matches!(
        client.generate(bad).await,
        Err(ClientError::InvalidRequest(_))
    ));
}

#[tokio::test]
async fn engine_death_fails_in_flight_and_later_requests() {
    let (client, engines) = fleet(1, slow()).await;
    let mut stream = client.generate(request("doomed", 10_000)).await.unwrap();
    stream.next().await.unwrap().unwrap();
    engines[0].die();
    let mut saw_error = false;
    while let Some(item) = stream.next().await {
        if let Err(e) = item {
            assert!(matches!(e, ClientError::EngineDead(_)), "{e:?}");
            saw_error = true;
        }
    }
    assert!(saw_error);
    assert!(client.is_dead());
    assert!(matches!(
        client.dead_reason(),
        Some(ClientError::EngineDead(_))
    ));
    assert!(matches!(
        client.generate(request("later", 1)).await,
        Err(ClientError::EngineDead(_))
    ));
    assert!(matches!(
        client.is_sleeping().await,
        Err(ClientError::EngineDead(_))
    ));
}

#[tokio::test]
async fn missing_engines_are_named_after_the_timeout() {
    let port = free_port();
    let config =
        ClientConfig::handshake("127.0.0.1", port, 2).with_ready_timeout(Duration::from_secs(2));
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let _engine = MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), 0, MockConfig::default());
    match connecting.await.unwrap() {
        Err(ClientError::EnginesNotReady { missing, .. }) => assert_eq!(missing, vec![1]),
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("connected without engine 1"),
    }
}

#[tokio::test]
async fn direct_mode_without_handshake_over_ipc() {
    let dir = std::env::temp_dir().join(format!("vllm-client-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = format!("ipc://{}/input", dir.display());
    let output = format!("ipc://{}/output", dir.display());
    let config = ClientConfig {
        startup: Startup::Direct {
            input_address: input.clone(),
            output_address: output.clone(),
        },
        engine_count: 1,
        start_rank: 0,
        ready_timeout: Duration::from_secs(20),
        client_index: 0,
        stats: None,
        prefix_routing: None,
    };
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _engine = MockEngine::spawn_connected(
        EngineZmqAddresses {
            inputs: vec![input],
            outputs: vec![output],
            ..Default::default()
        },
        0,
        MockConfig::default(),
    );
    let client = connecting.await.unwrap().unwrap();
    let outputs = client.generate_all(request("ipc", 4)).await.unwrap();
    assert_eq!(
        outputs.iter().map(|o| o.new_token_ids.len()).sum::<usize>(),
        4
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_lost_engine_connection_is_the_engine_s_death() {
    let (client, mut engines) = fleet(1, MockConfig::default()).await;
    assert_eq!(
        client
            .generate_all(request("before", 2))
            .await
            .unwrap()
            .len(),
        2
    );
    // The engine goes away without saying ENGINE_CORE_DEAD (a crash, a network cut).
    engines.pop().unwrap().shutdown().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match client.generate(request("after", 2)).await {
            Err(ClientError::EngineDead(_)) => break,
            _ => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the lost connection was not noticed"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[tokio::test]
async fn handshake_over_ipc_picks_distinct_socket_paths() {
    let dir = std::env::temp_dir().join(format!("vllm-client-hs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let address = format!("ipc://{}/handshake", dir.display());
    let config = ClientConfig {
        startup: Startup::Handshake {
            address: address.clone(),
            input_address: None,
            output_address: None,
        },
        engine_count: 1,
        start_rank: 0,
        ready_timeout: Duration::from_secs(20),
        client_index: 0,
        stats: None,
        prefix_routing: None,
    };
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _engine = MockEngine::spawn(address, 0, MockConfig::default());
    let client = connecting.await.unwrap().unwrap();
    assert_ne!(client.input_address(), client.output_address());
    let outputs = client.generate_all(request("ipc-hs", 3)).await.unwrap();
    assert_eq!(
        outputs.iter().map(|o| o.new_token_ids.len()).sum::<usize>(),
        3
    );
    let _ = std::fs::remove_dir_all(dir);
}

// --- the control plane (pause, sleep, weights, LoRA), typed -------------------------

/// Collects a stream's outputs until it ends.
async fn drain(
    stream: &mut vllm_client::OutputStream,
) -> Vec<vllm_client::protocol::EngineCoreOutput> {
    let mut outputs = Vec::new();
    while let Some(item) = stream.next().await {
        outputs.push(item.unwrap());
    }
    outputs
}

/// Whether the stream stays silent for a while.
async fn silent(stream: &mut vllm_client::OutputStream) -> bool {
    tokio::time::timeout(Duration::from_millis(150), stream.next())
        .await
        .is_err()
}

#[tokio::test]
async fn pause_modes_treat_requests_in_flight_as_vllm_does() {
    let (client, _engines) = fleet(1, slow()).await;

    // abort: the request in flight ends with `abort`; a new one waits for the resume.
    let mut running = client.generate(request("a-running", 10_000)).await.unwrap();
    running.next().await.unwrap().unwrap();
    client
        .pause_scheduler(PauseMode::Abort, false)
        .await
        .unwrap();
    let rest = drain(&mut running).await;
    assert_eq!(
        rest.last().unwrap().finish_reason,
        Some(FinishReason::Abort)
    );
    assert!(client.is_scheduler_paused().await.unwrap());
    let mut queued = client.generate(request("a-queued", 3)).await.unwrap();
    assert!(
        silent(&mut queued).await,
        "a paused engine queues new requests"
    );
    client.resume_scheduler().await.unwrap();
    assert!(!client.is_scheduler_paused().await.unwrap());
    let outputs = drain(&mut queued).await;
    assert_eq!(
        outputs.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );

    // wait: the call returns once the running request has finished on its own.
    let mut finishing = client.generate(request("w-running", 5)).await.unwrap();
    finishing.next().await.unwrap().unwrap();
    client
        .pause_scheduler(PauseMode::Wait, false)
        .await
        .unwrap();
    let rest = drain(&mut finishing).await;
    assert_eq!(
        rest.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );
    client.resume_scheduler().await.unwrap();

    // keep: the request freezes and continues after the resume.
    let mut frozen = client.generate(request("k-running", 10)).await.unwrap();
    frozen.next().await.unwrap().unwrap();
    client
        .pause_scheduler(PauseMode::Keep, false)
        .await
        .unwrap();
    // Outputs already on their way may still arrive; then nothing.
    while !silent(&mut frozen).await {}
    client.resume_scheduler().await.unwrap();
    let rest = drain(&mut frozen).await;
    assert_eq!(
        rest.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );

    // pause_generation (vLLM's /pause) refuses new requests with a retryable error.
    client
        .pause_generation(PauseMode::Abort, true)
        .await
        .unwrap();
    let refused = drain(&mut client.generate(request("refused", 3)).await.unwrap()).await;
    assert_eq!(
        refused.last().unwrap().finish_reason,
        Some(FinishReason::Error)
    );
    client.resume_scheduler().await.unwrap();
    let outputs = drain(&mut client.generate(request("after", 2)).await.unwrap()).await;
    assert_eq!(
        outputs.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );
}

#[tokio::test]
async fn sleep_levels_and_partial_wake_ups_follow_vllm() {
    use vllm_client::protocol::WakeTag;
    let (client, _engines) = fleet(2, slow()).await;

    // Level 0 pauses scheduling only; waking "scheduling" resumes it.
    client
        .sleep(SleepLevel::Scheduling, PauseMode::Keep)
        .await
        .unwrap();
    assert!(client.is_sleeping().await.unwrap());
    assert!(client.wake_up(Some(&[WakeTag::Scheduling])).await.unwrap());
    assert!(!client.is_sleeping().await.unwrap());

    // Level 1 frees weights and KV cache: each must be woken before scheduling resumes.
    client
        .sleep(SleepLevel::OffloadWeights, PauseMode::Abort)
        .await
        .unwrap();
    assert!(!client.wake_up(Some(&[WakeTag::Weights])).await.unwrap());
    assert!(client.is_sleeping().await.unwrap());
    assert!(client.is_scheduler_paused().await.unwrap());
    assert!(client.wake_up(Some(&[WakeTag::KvCache])).await.unwrap());
    assert!(!client.is_sleeping().await.unwrap());

    // Releasing the KV cache needs a completed pause first.
    match client.release_kv_cache_memory().await {
        Err(ClientError::Utility { message, .. }) => assert_eq!(
            message,
            "Call to release_kv_cache_memory method failed: \
             release_kv_cache_memory() requires a completed pause first"
        ),
        other => panic!("expected vLLM's refusal, got {other:?}"),
    }
    client
        .pause_scheduler(PauseMode::Abort, true)
        .await
        .unwrap();
    client.release_kv_cache_memory().await.unwrap();
    assert!(!client.wake_up(Some(&[WakeTag::Scheduling])).await.unwrap());
    assert!(client.wake_up(None).await.unwrap());
    assert!(!client.is_sleeping().await.unwrap());

    // Engines that disagree fail a consensus query with vLLM's message.
    client
        .call_utility_on(&[1], "pause_scheduler", vec!["keep".into(), false.into()])
        .await
        .unwrap();
    match client.is_sleeping().await {
        Err(ClientError::UnexpectedResult { detail, .. }) => assert!(
            detail.starts_with("Engines returned different is_sleeping results: "),
            "{detail}"
        ),
        other => panic!("expected a disagreement, got {other:?}"),
    }
    assert_eq!(
        client
            .call_utility_all("is_scheduler_paused", vec![])
            .await
            .unwrap(),
        vec![false.into(), true.into()]
    );
}

#[tokio::test]
async fn weight_updates_follow_vllms_session_rules() {
    let (client, _engines) = fleet(2, slow()).await;
    assert_eq!(client.get_weight_version().await.unwrap(), "default");
    let not_configured = client.start_weight_update().await.unwrap_err();
    assert!(
        not_configured
            .to_string()
            .contains("Weight transfer not configured."),
        "{not_configured}"
    );
    let info = |key: &str| vllm_client::Value::Map(vec![(key.into(), 1i64.into())]);
    client
        .init_weight_transfer_engine(info("master_port"))
        .await
        .unwrap();
    let early = client.update_weights(info("names")).await.unwrap_err();
    assert!(
        early
            .to_string()
            .contains("start_weight_update must be called before update_weights."),
        "{early}"
    );
    client
        .pause_generation(PauseMode::Wait, true)
        .await
        .unwrap();
    client.start_weight_update().await.unwrap();
    client.update_weights(info("names")).await.unwrap();
    client.update_weights(info("names")).await.unwrap();
    client.finish_weight_update(Some("step-2")).await.unwrap();
    client.resume_scheduler().await.unwrap();
    assert_eq!(client.get_weight_version().await.unwrap(), "step-2");
    let checksums = client.compute_weight_checksums().await.unwrap();
    assert_eq!(checksums.len(), 2, "one worker per engine");
    assert!(
        checksums
            .iter()
            .all(|c| c.get("mock.weight").map(String::as_str) == Some("0000000000000002"))
    );
    assert!(client.finish_weight_update(None).await.is_err());
    client.shutdown_weight_transfer_engine().await.unwrap();
}

#[tokio::test]
async fn lora_slots_evict_the_least_recently_used_and_requests_follow_their_adapter() {
    use vllm_client::mock::MockLora;
    use vllm_client::protocol::LoRARequest;
    let (disabled, _disabled_engine) = fleet(1, slow()).await;
    match disabled.add_lora(&LoRARequest::new("a", 1, "/a")).await {
        Err(ClientError::Utility { message, .. }) => assert_eq!(
            message,
            "Call to add_lora method failed: LoRA is not enabled. Use --enable-lora to enable LoRA."
        ),
        other => panic!("expected vLLM's refusal, got {other:?}"),
    }

    let config = MockConfig {
        lora: Some(MockLora {
            max_loras: 2,
            max_cpu_loras: None,
        }),
        ..slow()
    };
    let (client, _engines) = fleet(2, config).await;
    for id in [1, 2] {
        let added = client
            .add_lora(&LoRARequest::new(format!("a{id}"), id, format!("/a{id}")))
            .await
            .unwrap();
        assert!(added);
    }
    assert_eq!(client.list_loras().await.unwrap(), vec![1, 2]);
    client
        .add_lora(&LoRARequest::new("a3", 3, "/a3"))
        .await
        .unwrap();
    assert_eq!(
        client.list_loras().await.unwrap(),
        vec![2, 3],
        "1 was the oldest"
    );
    assert!(client.pin_lora(2).await.unwrap());
    assert!(client.pin_lora(9).await.is_err());
    assert!(client.remove_lora(3).await.unwrap());
    assert!(!client.remove_lora(3).await.unwrap());

    // A new adapter lands on the least loaded engine, and its next requests follow it
    // there while the other engine is idle.
    let with_adapter = |id: &str| {
        let mut r = request(id, 10_000);
        r.lora_request = Some(LoRARequest::new("fresh", 5, "/fresh"));
        r
    };
    let _first = client.generate(with_adapter("l-1")).await.unwrap();
    let holder = client.inflight().iter().position(|&n| n == 1).unwrap();
    let _second = client.generate(with_adapter("l-2")).await.unwrap();
    assert_eq!(client.inflight()[holder], 2, "{:?}", client.inflight());
    let _plain = client.generate(request("plain", 10_000)).await.unwrap();
    assert_eq!(
        client.inflight()[1 - holder],
        1,
        "plain requests go by load"
    );
}

#[tokio::test]
async fn statistics_reach_the_observer_as_vllm_computes_them() {
    use std::sync::{Arc, Mutex};
    use vllm_client::client::stats::{IterationStats, StatsObserver};
    use vllm_client::protocol::SchedulerStats;

    #[derive(Default)]
    struct Collect {
        iterations: Mutex<Vec<IterationStats>>,
        schedulers: Mutex<Vec<SchedulerStats>>,
    }
    impl StatsObserver for Collect {
        fn iteration(&self, _engine: i64, stats: &IterationStats) {
            self.iterations.lock().unwrap().push(stats.clone());
        }
        fn scheduler(&self, _engine: i64, stats: &SchedulerStats) {
            self.schedulers.lock().unwrap().push(stats.clone());
        }
    }

    let port = free_port();
    let collect = Arc::new(Collect::default());
    let config = ClientConfig::handshake("127.0.0.1", port, 1)
        .with_ready_timeout(Duration::from_secs(30))
        .with_stats(collect.clone());
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let _engine = MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), 0, slow());
    let client = connecting.await.unwrap().unwrap();
    for id in ["s-1", "s-2"] {
        let outputs = client.generate_all(request(id, 5)).await.unwrap();
        assert_eq!(
            outputs.last().unwrap().finish_reason,
            Some(FinishReason::Length)
        );
    }
    let iterations = collect.iterations.lock().unwrap().clone();
    let ttfts: Vec<f64> = iterations
        .iter()
        .flat_map(|i| i.time_to_first_tokens.clone())
        .collect();
    let itls: Vec<f64> = iterations
        .iter()
        .flat_map(|i| i.inter_token_latencies.clone())
        .collect();
    let finished: Vec<_> = iterations.iter().flat_map(|i| i.finished.clone()).collect();
    assert_eq!(ttfts.len(), 2, "one first token per request");
    assert!(ttfts.iter().all(|t| *t >= 0.0 && *t < 10.0), "{ttfts:?}");
    // 5 tokens, one per step: 4 inter-token gaps per request, at the mock's 50 tokens/s.
    assert_eq!(itls.len(), 8);
    assert!(itls.iter().all(|t| *t > 0.005 && *t < 1.0), "{itls:?}");
    assert_eq!(
        iterations
            .iter()
            .map(|i| i.num_generation_tokens)
            .sum::<u64>(),
        10
    );
    assert_eq!(
        iterations
            .iter()
            .map(|i| i.prompt_tokens.total)
            .sum::<u64>(),
        6,
        "the mock reports each 3-token prefill"
    );
    assert_eq!(finished.len(), 2);
    for done in &finished {
        assert_eq!(done.finish_reason, FinishReason::Length);
        assert_eq!((done.num_prompt_tokens, done.num_generation_tokens), (3, 5));
        assert_eq!(done.max_tokens_param, Some(5));
        assert!(done.queued_time >= 0.0 && done.prefill_time >= 0.0);
        assert!(done.decode_time > 0.0);
        assert!((done.inference_time - (done.prefill_time + done.decode_time)).abs() < 1e-9);
        assert!(done.e2e_latency >= done.decode_time);
    }
    assert!(!collect.schedulers.lock().unwrap().is_empty());
}

/// A request with `n` samples, seeded or not, for `generate_n`.
fn sampled(id: &str, n: i64, seed: Option<i64>, max_tokens: i64) -> EngineCoreRequest {
    let mut r = request(id, max_tokens);
    let sp = r.sampling_params.as_mut().unwrap();
    sp.n = n;
    sp.seed = seed;
    r
}

/// Collects a parallel stream: each child's tokens by index, and its last output.
async fn collect_n(
    mut stream: vllm_client::ParallelStream,
) -> Vec<(Vec<u32>, vllm_client::protocol::EngineCoreOutput)> {
    let mut children: Vec<(Vec<u32>, Option<_>)> = vec![(Vec::new(), None); stream.n()];
    while let Some((index, output)) = stream.next().await {
        let output = output.unwrap();
        assert!(
            children[index].1.is_none(),
            "child {index} went on after its end"
        );
        children[index].0.extend(&output.new_token_ids);
        if output.finished() {
            children[index].1 = Some(output);
        }
    }
    children
        .into_iter()
        .map(|(tokens, last)| (tokens, last.expect("every child finishes")))
        .collect()
}

#[tokio::test]
async fn parallel_sampling_children_are_vllm_s_children_spread_over_engines() {
    let (client, _engines) = fleet(2, slow()).await;
    // Seeded: child i samples exactly as a single request with seed + i would.
    let stream = client
        .generate_n(sampled("par", 4, Some(100), 6))
        .await
        .unwrap();
    assert_eq!(
        stream.child_request_ids(),
        ["0_par", "1_par", "2_par", "3_par"]
    );
    assert_eq!(
        client.inflight(),
        vec![2, 2],
        "children spread over engines"
    );
    let children = collect_n(stream).await;
    for (i, (tokens, last)) in children.iter().enumerate() {
        assert_eq!(last.request_id, format!("{i}_par"));
        let alone = client
            .generate_all(sampled(&format!("alone-{i}"), 1, Some(100 + i as i64), 6))
            .await
            .unwrap();
        let expected: Vec<u32> = alone.iter().flat_map(|o| o.new_token_ids.clone()).collect();
        assert_eq!(tokens, &expected, "child {i} uses seed 100 + {i}");
    }
    assert_ne!(children[0].0, children[1].0);
    // Unseeded: each child is its own request (the mock seeds by request id).
    let children = collect_n(client.generate_n(sampled("u", 3, None, 5)).await.unwrap()).await;
    for (i, (tokens, _)) in children.iter().enumerate() {
        let alone = client
            .generate_all(sampled(&format!("{i}_u"), 1, None, 5))
            .await
            .unwrap();
        let expected: Vec<u32> = alone.iter().flat_map(|o| o.new_token_ids.clone()).collect();
        assert_eq!(tokens, &expected);
    }
    assert_eq!(client.inflight(), vec![0, 0]);
}

#[tokio::test]
async fn final_only_yields_the_n_merged_outputs_in_index_order() {
    let (client, _engines) = fleet(1, MockConfig::default()).await;
    let mut r = sampled("fin", 3, Some(1), 7);
    let sp = r.sampling_params.as_mut().unwrap();
    sp.output_kind = vllm_client::protocol::RequestOutputKind::FinalOnly;
    sp.logprobs = Some(2);
    sp.prompt_logprobs = Some(1);
    let mut stream = client.generate_n(r).await.unwrap();
    let mut items = Vec::new();
    while let Some((index, output)) = stream.next().await {
        items.push((index, output.unwrap()));
    }
    assert_eq!(items.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1, 2]);
    for (index, output) in &items {
        assert_eq!(output.request_id, format!("{index}_fin"));
        assert_eq!(output.new_token_ids.len(), 7, "every token, merged");
        assert_eq!(output.finish_reason, Some(FinishReason::Length));
        let lp = output.new_logprobs.as_ref().unwrap();
        lp.validate().unwrap();
        assert_eq!((lp.rows(), lp.cols()), (7, 3));
        for (row, token) in output.new_token_ids.iter().enumerate() {
            assert_eq!(lp.entry(row, 0).unwrap().0 as u32, *token);
        }
        let prompt = output
            .new_prompt_logprobs_tensors
            .as_ref()
            .unwrap()
            .to_lists();
        assert_eq!((prompt.rows(), prompt.cols()), (2, 2), "prompt of 3 tokens");
        assert_eq!(prompt.entry(0, 0).unwrap().0, 11);
    }
}

#[tokio::test]
async fn aborting_the_parent_aborts_every_child_and_dropping_too() {
    let (client, _engines) = fleet(2, slow()).await;
    let mut stream = client
        .generate_n(sampled("p", 3, None, 10_000))
        .await
        .unwrap();
    stream.next().await.unwrap().1.unwrap();
    client.abort(&["p"]);
    let mut aborted = [false; 3];
    while let Some((index, output)) = stream.next().await {
        if output.unwrap().finish_reason == Some(FinishReason::Abort) {
            aborted[index] = true;
        }
    }
    assert_eq!(aborted, [true; 3]);
    assert_eq!(client.inflight(), vec![0, 0]);
    drop(stream);
    // The parent id is free again; dropping the stream aborts the children.
    let mut stream = client
        .generate_n(sampled("p", 4, None, 10_000))
        .await
        .unwrap();
    stream.next().await.unwrap().1.unwrap();
    assert_eq!(client.inflight(), vec![2, 2]);
    drop(stream);
    assert_eq!(client.inflight(), vec![0, 0]);
}

#[tokio::test]
async fn one_child_aborted_alone_leaves_its_siblings_running() {
    let (client, _engines) = fleet(1, slow()).await;
    let mut stream = client
        .generate_n(sampled("one", 3, Some(5), 20))
        .await
        .unwrap();
    stream.abort_child(1);
    let children = collect_n(stream).await;
    assert_eq!(children[1].1.finish_reason, Some(FinishReason::Abort));
    for i in [0, 2] {
        assert_eq!(children[i].1.finish_reason, Some(FinishReason::Length));
        assert_eq!(children[i].0.len(), 20);
    }
}

#[tokio::test]
async fn a_duplicate_parent_id_is_refused_while_in_flight() {
    let (client, _engines) = fleet(1, slow()).await;
    let _first = client
        .generate_n(sampled("dup", 2, None, 10_000))
        .await
        .unwrap();
    assert!(matches!(
        client.generate_n(sampled("dup", 2, None, 1)).await,
        Err(ClientError::DuplicateRequestId(id)) if id == "dup"
    ));
}

/// `kv_transfer_params` with `do_remote_prefill`, as a NIXL prefill instance answers them.
fn remote_prefill_params() -> vllm_client::Value {
    use vllm_client::Value;
    Value::Map(vec![
        (Value::Str("do_remote_prefill".into()), Value::Bool(true)),
        (Value::Str("remote_engine_id".into()), "prefill-0".into()),
    ])
}

fn with_kv_connector(config: MockConfig) -> MockConfig {
    MockConfig {
        kv_connector: Some("NixlConnector".into()),
        ..config
    }
}

/// vLLM's KV-transfer rejection notice (`notify_kv_transfer_request_rejected`): the engine
/// it is routed to adds the pre-aborted request and finishes it at once, so its connector
/// frees the remote prefill; nothing is generated, no output comes back, and the client
/// keeps nothing in flight. Without a connector the engine frees nothing.
#[tokio::test]
async fn kv_transfer_rejection_frees_the_remote_prefill_on_the_pinned_engine() {
    let (client, engines) = fleet(2, with_kv_connector(MockConfig::default())).await;
    client
        .notify_kv_transfer_request_rejected("rejected-1", remote_prefill_params(), Some(1))
        .await
        .unwrap();
    // An engine handles its input in order: once a later request to rank 1 finished,
    // the notice has been handled.
    let mut after = request("after", 2);
    after.data_parallel_rank = Some(1);
    client.generate_all(after).await.unwrap();
    let freed = engines[1].freed_remote_prefills();
    assert_eq!(freed.len(), 1);
    assert_eq!(freed[0].request_id, "rejected-1");
    assert_eq!(freed[0].kv_transfer_params, remote_prefill_params());
    assert!(engines[0].freed_remote_prefills().is_empty());
    assert!(client.in_flight_request_ids().is_empty());
    assert!(matches!(
        client
            .notify_kv_transfer_request_rejected("rejected-2", remote_prefill_params(), Some(7))
            .await,
        Err(ClientError::InvalidRequest(_))
    ));

    let (client, engines) = fleet(1, MockConfig::default()).await;
    client
        .notify_kv_transfer_request_rejected("rejected-3", remote_prefill_params(), None)
        .await
        .unwrap();
    client.generate_all(request("after", 2)).await.unwrap();
    assert!(engines[0].freed_remote_prefills().is_empty());
}

/// The emulated connector's `request_finished`: a decode request that is scheduled pulls
/// its prefill (nothing to free when it finishes); one aborted while it still waits, or
/// refused while the engine is paused, frees the remote blocks as vLLM's engine does.
#[tokio::test]
async fn connector_frees_remote_prefills_of_requests_never_scheduled() {
    let config = with_kv_connector(MockConfig {
        max_num_seqs: 1,
        ..slow()
    });
    let (client, engines) = fleet(1, config).await;
    let decode = |id: &str, max_tokens| {
        let mut r = request(id, max_tokens);
        if let Some(sp) = r.sampling_params.as_mut() {
            sp.extra_args = Some(vllm_client::Value::Map(vec![(
                vllm_client::Value::Str("kv_transfer_params".into()),
                remote_prefill_params(),
            )]));
        }
        r
    };
    client.generate_all(decode("scheduled", 2)).await.unwrap();
    assert!(engines[0].freed_remote_prefills().is_empty());
    // One sequence at a time: the second waits behind the first, then is aborted.
    let running = client.generate(request("running", 1000)).await.unwrap();
    let waiting = client.generate(decode("waiting", 4)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(waiting);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let freed = engines[0].freed_remote_prefills();
    assert_eq!(freed.len(), 1, "{freed:?}");
    assert_eq!(freed[0].request_id, "waiting");
    drop(running);
    client
        .pause_generation(PauseMode::Abort, false)
        .await
        .unwrap();
    // Refused with vLLM's retryable `engine_paused` error (what the stream makes of it
    // is tested elsewhere).
    let _ = client.generate_all(decode("paused", 2)).await;
    let freed = engines[0].freed_remote_prefills();
    assert_eq!(freed.len(), 2, "{freed:?}");
    assert_eq!(freed[1].request_id, "paused");
}
