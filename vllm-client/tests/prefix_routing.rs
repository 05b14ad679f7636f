//! Prefix-aware routing against four mock engines publishing KV-cache events over TCP:
//! a request sharing a long prefix with an earlier one goes to the engine that served
//! the earlier one (vLLM's load-based routing sends it elsewhere), and a holder that is
//! too busy loses the request to the least loaded engine.

use std::time::Duration;

use futures::StreamExt;
use vllm_client::client::PrefixRouting;
use vllm_client::kv_events::{HashAlgo, KVEventsConfig, NoneHashSeed};
use vllm_client::mock::{MockConfig, MockEngine, MockEngineHandle, OutputMode};
use vllm_client::protocol::{EngineCoreRequest, SamplingParams};
use vllm_client::{ClientConfig, EngineCoreClient, OutputStream};

const ENGINES: u16 = 4;
const BLOCK: usize = 16;

/// A port `p` with `p..p + n` all free (data-parallel ranks offset the event ports).
fn free_ports(n: u16) -> u16 {
    loop {
        let base = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if base.checked_add(n).is_none() {
            continue;
        }
        let all_free = (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok());
        if all_free {
            return base;
        }
    }
}

/// Held by a test from picking its ports until its engines are gone (they bind their
/// event ports only after registering), so that tests running at once never pick the
/// same free ports.
static PORTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A client registered with [`ENGINES`] mock engines, and the hold on their ports.
type Fleet = (
    EngineCoreClient,
    Vec<MockEngineHandle>,
    tokio::sync::MutexGuard<'static, ()>,
);

/// The engines' configuration, their KV-event ports from `events` on: publishers
/// at `events..events + ENGINES`, replay routers after them.
fn engine_config(events: u16) -> MockConfig {
    MockConfig {
        output: OutputMode::Random { seed: 1 },
        // Slow enough that a request is still in flight when the test looks.
        tokens_per_second: 20.0,
        block_size: BLOCK,
        python_hash_seed: Some("0".into()),
        data_parallel_size: ENGINES as usize,
        kv_events: Some(KVEventsConfig {
            enable_kv_cache_events: true,
            publisher: Some("zmq".into()),
            endpoint: format!("tcp://*:{events}"),
            replay_endpoint: Some(format!("tcp://*:{}", events + ENGINES)),
            topic: "kv".into(),
            ..KVEventsConfig::default()
        }),
        ..MockConfig::default()
    }
}

async fn fleet(routing: Option<PrefixRouting>) -> Fleet {
    let ports = PORTS.lock().await;
    // One block: the handshake port, then the engines' event ports.
    let port = free_ports(1 + 2 * ENGINES);
    let mut config = ClientConfig::handshake("127.0.0.1", port, ENGINES)
        .with_ready_timeout(Duration::from_secs(30));
    config.prefix_routing = routing;
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let engine = engine_config(port + 1);
    let engines = (0..ENGINES)
        .map(|rank| MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), rank, engine.clone()))
        .collect();
    let client = connecting.await.unwrap().expect("engines register");
    (client, engines, ports)
}

fn routing() -> PrefixRouting {
    PrefixRouting::new(HashAlgo::Sha256, NoneHashSeed::PythonHashSeed("0".into()))
}

fn request(id: &str, prompt: Vec<u32>, max_tokens: i64, rank: Option<i64>) -> EngineCoreRequest {
    let params = SamplingParams {
        max_tokens: Some(max_tokens),
        ignore_eos: true,
        ..SamplingParams::default()
    };
    let mut request = EngineCoreRequest::new(id, prompt, params);
    request.data_parallel_rank = rank;
    request
}

/// A long prompt: 10 full blocks and a bit.
fn system_prompt() -> Vec<u32> {
    (0..(10 * BLOCK as u32 + 5)).map(|t| 1000 + t).collect()
}

/// Sends `request` and returns its stream and the engine it went to.
async fn send(client: &EngineCoreClient, request: EngineCoreRequest) -> (OutputStream, usize) {
    let before = client.inflight();
    let stream = client.generate(request).await.unwrap();
    let after = client.inflight();
    let engine = (0..after.len())
        .find(|&i| after[i] > before[i])
        .expect("the request is in flight on some engine");
    (stream, engine)
}

/// The prompt tokens the engine served from its prefix cache (first output's
/// prefill statistics); drains the stream.
async fn cached_tokens(mut stream: OutputStream) -> i64 {
    let mut cached = None;
    while let Some(output) = stream.next().await {
        let output = output.unwrap();
        if let Some(prefill) = &output.prefill_stats {
            cached.get_or_insert(prefill.num_cached_tokens);
        }
    }
    cached.expect("the first output reports the prefill")
}

/// Waits until the client's view shows `engine` holding `blocks` leading blocks of
/// `request`'s prompt (events travel asynchronously).
async fn wait_for_view(
    client: &EngineCoreClient,
    request: &EngineCoreRequest,
    engine: usize,
    blocks: usize,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let matches = client.prefix_matches(request).expect("routing is on");
        if matches[engine] >= blocks {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the view never showed {blocks} blocks on engine {engine}: {matches:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_continued_conversation_returns_to_the_engine_holding_its_prefix() {
    let (client, _engines, _ports) = fleet(Some(routing())).await;
    // The first turn, on engine 2.
    let first = system_prompt();
    let (stream, engine) = send(&client, request("turn-1", first.clone(), 3, Some(2))).await;
    assert_eq!(engine, 2);
    assert_eq!(cached_tokens(stream).await, 0);

    // The second turn extends the first (prompt + answer + new user message).
    let mut second = first.clone();
    second.extend(5000..5040);
    let turn2 = request("turn-2", second, 3, None);
    wait_for_view(&client, &turn2, 2, 10).await;
    assert_eq!(client.prefix_matches(&turn2).unwrap(), vec![0, 0, 10, 0]);
    let (stream, engine) = send(&client, turn2).await;
    assert_eq!(engine, 2, "an idle fleet would have taken engine 0");
    assert_eq!(cached_tokens(stream).await, 10 * BLOCK as i64);

    // A different cache salt shares nothing; neither does another prompt.
    let mut salted = request("salted", first.clone(), 3, None);
    salted.cache_salt = Some("tenant-b".into());
    assert_eq!(client.prefix_matches(&salted).unwrap(), vec![0; 4]);
    let other = request("other", (0..200).collect(), 3, None);
    assert_eq!(client.prefix_matches(&other).unwrap(), vec![0; 4]);
    // An explicit rank is not routed; a request that skips the cache is not considered.
    let mut skipping = request("skip", first.clone(), 3, None);
    skipping
        .sampling_params
        .as_mut()
        .unwrap()
        .skip_reading_prefix_cache = Some(true);
    assert_eq!(client.prefix_matches(&skipping), None);

    let stats = client.prefix_routing_stats().unwrap();
    assert_eq!(stats.routed_by_prefix, 1, "{stats:?}");
    assert_eq!(stats.not_considered, 1, "{stats:?}"); // turn-1's explicit rank
    assert!(stats.blocks[2] >= 10, "{stats:?}");
    assert_eq!(stats.view_clears, vec![0; 4], "{stats:?}");
}

#[tokio::test]
async fn without_prefix_routing_the_least_loaded_engine_recomputes_the_prefix() {
    let (client, _engines, _ports) = fleet(None).await;
    assert!(client.prefix_routing_stats().is_none());
    let first = system_prompt();
    let (stream, _) = send(&client, request("turn-1", first.clone(), 3, Some(2))).await;
    cached_tokens(stream).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut second = first;
    second.extend(5000..5040);
    let (stream, engine) = send(&client, request("turn-2", second, 3, None)).await;
    assert_eq!(engine, 0);
    assert_eq!(cached_tokens(stream).await, 0);
}

#[tokio::test]
async fn a_holder_past_the_load_slack_loses_the_request_to_the_least_loaded_engine() {
    let (client, _engines, _ports) = fleet(Some(routing().with_load_slack(4.0))).await;
    let first = system_prompt();
    let (stream, _) = send(&client, request("turn-1", first.clone(), 3, Some(1))).await;
    cached_tokens(stream).await;
    let mut second = first.clone();
    second.extend(5000..5040);
    let probe = request("probe", second.clone(), 3, None);
    wait_for_view(&client, &probe, 1, 10).await;

    // Four long requests on engine 1: within the slack, the holder still wins.
    let mut busy = Vec::new();
    for i in 0..4 {
        let (stream, _) = send(
            &client,
            request(&format!("busy-{i}"), vec![7; 8], 10_000, Some(1)),
        )
        .await;
        busy.push(stream);
    }
    let (stream, engine) = send(&client, request("turn-2a", second.clone(), 3, None)).await;
    assert_eq!(engine, 1);
    assert_eq!(cached_tokens(stream).await, 10 * BLOCK as i64);

    // Two more: engine 1 scores 6, the idle engines 0; 6 > 0 + 4.
    for i in 4..6 {
        let (stream, _) = send(
            &client,
            request(&format!("busy-{i}"), vec![7; 8], 10_000, Some(1)),
        )
        .await;
        busy.push(stream);
    }
    let (stream, engine) = send(&client, request("turn-2b", second, 3, None)).await;
    assert_ne!(engine, 1);
    assert_eq!(cached_tokens(stream).await, 0);
    let stats = client.prefix_routing_stats().unwrap();
    assert_eq!(
        (stats.routed_by_prefix, stats.load_fallbacks),
        (1, 1),
        "{stats:?}"
    );
    let ids: Vec<String> = (0..6).map(|i| format!("busy-{i}")).collect();
    client.abort(&ids.iter().map(String::as_str).collect::<Vec<_>>());
}

#[tokio::test]
async fn engines_without_kv_events_refuse_prefix_routing() {
    let _ports = PORTS.lock().await;
    let port = free_ports(1);
    let config = ClientConfig::handshake("127.0.0.1", port, 1)
        .with_ready_timeout(Duration::from_secs(30))
        .with_prefix_routing(routing());
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let _engine = MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), 0, MockConfig::default());
    match connecting.await.unwrap() {
        Err(vllm_client::ClientError::Config(message)) => {
            assert!(
                message.contains("publishes no KV-cache events"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn with_predictions_a_burst_sharing_a_new_prefix_follows_its_first_request() {
    for (predict, expected) in [(false, vec![0, 1, 2]), (true, vec![0, 0, 0])] {
        let mut routing = routing();
        if predict {
            routing = routing.with_prediction(Duration::from_secs(30));
        }
        let (client, _engines, _ports) = fleet(Some(routing)).await;
        // Three requests sent at once, before any engine has reported a block.
        let mut sent = Vec::new();
        for i in 0..3u32 {
            let mut prompt = system_prompt();
            prompt.push(9000 + i);
            sent.push(send(&client, request(&format!("burst-{i}"), prompt, 3, None)).await);
        }
        let engines: Vec<usize> = sent.iter().map(|(_, engine)| *engine).collect();
        assert_eq!(engines, expected, "predictions {predict}");
        let mut cached = Vec::new();
        for (stream, _) in sent {
            cached.push(cached_tokens(stream).await);
        }
        let stats = client.prefix_routing_stats().unwrap();
        if predict {
            assert_eq!(stats.routed_by_prefix, 2, "{stats:?}");
        } else {
            assert_eq!(cached, vec![0, 0, 0]);
            assert_eq!(stats.no_match, 3, "{stats:?}");
        }
    }
}
