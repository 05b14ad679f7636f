//! `KvEventSubscriber` against hostile or broken publishers (no Python needed): every
//! malformed message is reported and skipped, nothing panics, and the stream goes on.
//! Its behaviour against vLLM's real publisher is in `interop_kv_events.rs`.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use vllm_client::kv_events::*;
use zeromq::{PubSocket, Socket, SocketSend, ZmqMessage};

fn message(frames: &[&[u8]]) -> ZmqMessage {
    let mut m = ZmqMessage::from(Bytes::copy_from_slice(frames[0]));
    for f in &frames[1..] {
        m.push_back(Bytes::copy_from_slice(f));
    }
    m
}

fn batch_bytes(n: u64) -> Vec<u8> {
    vllm_client::wire::to_vec(&KVEventBatch {
        ts: n as f64,
        events: vec![
            BlockStored {
                block_hashes: vec![ExternalBlockHash::Int(n)],
                token_ids: vec![1, 2],
                block_size: 2,
                ..BlockStored::default()
            }
            .into(),
        ],
        data_parallel_rank: Some(0),
    })
}

async fn next(sub: &mut KvEventSubscriber) -> KvEventMessage {
    tokio::time::timeout(Duration::from_secs(10), sub.next())
        .await
        .expect("a message within 10 s")
        .expect("the stream never ends")
}

/// A bound PUB socket and a subscriber that receives from it.
async fn pair(topic: &str) -> (PubSocket, KvEventSubscriber) {
    let mut publisher = PubSocket::new();
    let endpoint = publisher.bind("tcp://127.0.0.1:0").await.unwrap();
    let mut sub =
        KvEventSubscriber::start(SubscriberConfig::new(endpoint.to_string()).with_topic(topic))
            .unwrap();
    // Publish until the subscription has landed.
    let mut seq = 0u64;
    loop {
        publisher
            .send(message(&[
                topic.as_bytes(),
                &seq.to_be_bytes(),
                &batch_bytes(seq),
            ]))
            .await
            .unwrap();
        if let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(100), sub.next()).await {
            assert!(matches!(item, KvEventMessage::Batch { .. }), "{item:?}");
            break;
        }
        seq += 1;
    }
    // Drain anything still in flight, then start from a known number.
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(200), sub.next()).await {}
    (publisher, sub)
}

#[tokio::test]
async fn malformed_messages_are_reported_and_skipped() {
    let (mut publisher, mut sub) = pair("kv").await;
    let base = 1_000u64;
    let good = |n: u64| message(&[b"kv", &n.to_be_bytes(), &batch_bytes(n)]);
    publisher.send(good(base)).await.unwrap();
    // The numbering jumped and there is no replay endpoint: a gap, then the batch.
    let mut items = vec![next(&mut sub).await];
    assert!(matches!(items[0], KvEventMessage::Gap { last, .. } if last == base - 1));
    while !matches!(items.last(), Some(KvEventMessage::Batch { seq, .. }) if *seq == base) {
        items.push(next(&mut sub).await);
    }
    // Two frames, a 3-byte sequence, garbage msgpack, a pickle extension.
    publisher
        .send(message(&[b"kv", &(base + 1).to_be_bytes()]))
        .await
        .unwrap();
    publisher
        .send(message(&[b"kv", &[0, 0, 1], &batch_bytes(1)]))
        .await
        .unwrap();
    publisher
        .send(message(&[
            b"kv",
            &(base + 1).to_be_bytes(),
            &[0x93, 0xff, 0xc1],
        ]))
        .await
        .unwrap();
    publisher
        .send(message(&[
            b"kv",
            &(base + 2).to_be_bytes(),
            &[0x93, 0xd4, 0x01, 0x00, 0x90, 0xc0],
        ]))
        .await
        .unwrap();
    // Another topic sharing the prefix is ignored.
    publisher
        .send(message(&[
            b"kv2",
            &(base + 3).to_be_bytes(),
            &batch_bytes(9),
        ]))
        .await
        .unwrap();
    publisher.send(good(base + 3)).await.unwrap();

    let mut items = Vec::new();
    while !matches!(items.last(), Some(KvEventMessage::Batch { seq, .. }) if *seq == base + 3) {
        items.push(next(&mut sub).await);
    }
    let malformed: Vec<&KvEventsError> = items
        .iter()
        .filter_map(|i| match i {
            KvEventMessage::Malformed(e) => Some(e),
            _ => None,
        })
        .collect();
    assert!(
        matches!(malformed[0], KvEventsError::Frames(_)),
        "{items:?}"
    );
    assert!(
        matches!(malformed[1], KvEventsError::Frames(_)),
        "{items:?}"
    );
    assert!(
        matches!(malformed[2], KvEventsError::Decode { seq, .. } if *seq == base + 1),
        "{items:?}"
    );
    assert!(
        matches!(malformed[3], KvEventsError::Decode { seq, .. } if *seq == base + 2),
        "{items:?}"
    );
    assert_eq!(malformed.len(), 4, "{items:?}");
    assert!(
        !items
            .iter()
            .any(|i| matches!(i, KvEventMessage::Batch { seq, .. } if *seq != base + 3)),
        "the other topic's batch leaked: {items:?}"
    );
}

#[tokio::test]
async fn a_hole_without_a_replay_endpoint_is_a_gap() {
    let (mut publisher, mut sub) = pair("").await;
    let good = |n: u64| message(&[b"", &n.to_be_bytes(), &batch_bytes(n)]);
    publisher.send(good(500)).await.unwrap();
    let mut items = vec![next(&mut sub).await];
    while !matches!(items.last(), Some(KvEventMessage::Batch { seq: 500, .. })) {
        items.push(next(&mut sub).await);
    }
    publisher.send(good(503)).await.unwrap();
    assert_eq!(
        next(&mut sub).await,
        KvEventMessage::Gap {
            first: 501,
            last: 502
        }
    );
    let KvEventMessage::Batch { seq, batch } = next(&mut sub).await else {
        panic!()
    };
    assert_eq!(seq, 503);
    assert_eq!(batch.ts, 503.0);
    // A lower number without a reconnection is a duplicate, not a restart: dropped.
    publisher.send(good(503)).await.unwrap();
    publisher.send(good(504)).await.unwrap();
    let KvEventMessage::Batch { seq, .. } = next(&mut sub).await else {
        panic!()
    };
    assert_eq!(seq, 504);
}

#[tokio::test]
async fn bad_endpoints_are_refused_up_front() {
    assert!(matches!(
        KvEventSubscriber::start(SubscriberConfig::new("localhost:5557")),
        Err(KvEventsError::Endpoint { .. })
    ));
    assert!(matches!(
        SubscriberConfig::new("ipc:///tmp/kv").for_data_parallel_rank(1),
        Err(KvEventsError::RankOffset(EndpointError::Transport(_)))
    ));
}

#[test]
fn starting_outside_a_runtime_is_an_error_not_a_panic() {
    assert!(matches!(
        KvEventSubscriber::start(SubscriberConfig::new("tcp://127.0.0.1:1")),
        Err(KvEventsError::NoRuntime)
    ));
}

/// The mock engine publishes its prefix cache's events; a late subscriber gets them
/// from its replay socket; the hashes are `BlockHasher`'s.
#[cfg(feature = "mock")]
#[tokio::test]
async fn the_mock_engine_publishes_and_replays_its_cache_events() {
    use vllm_client::mock::{MockConfig, MockEngine, OutputMode};
    use vllm_client::protocol::{EngineCoreRequest, SamplingParams};
    use vllm_client::{ClientConfig, EngineCoreClient};

    let port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (handshake, publish, replay) = (port(), port(), port());
    let config = MockConfig {
        output: OutputMode::FixedText((1000..1100).collect()),
        block_size: 4,
        num_gpu_blocks_override: Some(6),
        python_hash_seed: Some("7".into()),
        kv_events: Some(KVEventsConfig {
            enable_kv_cache_events: true,
            publisher: Some("zmq".into()),
            endpoint: format!("tcp://*:{publish}"),
            replay_endpoint: Some(format!("tcp://*:{replay}")),
            topic: "kv".into(),
            ..KVEventsConfig::default()
        }),
        ..MockConfig::default()
    };
    let connecting = tokio::spawn(EngineCoreClient::connect(ClientConfig::handshake(
        "127.0.0.1",
        handshake,
        1,
    )));
    let _engine = MockEngine::spawn(format!("tcp://127.0.0.1:{handshake}"), 0, config);
    let client = connecting.await.unwrap().unwrap();
    let reported = client.engines()[0].kv_events_config().expect("reported");
    assert_eq!(reported.topic, "kv");
    // As in vLLM (whose scheduler binds them in `EngineCore.__init__`), the sockets are
    // bound before the engine reports READY.
    for port in [publish, replay] {
        std::net::TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("port {port} not bound once the engine is up: {e}"));
    }

    let request = |id: &str, prompt: Vec<u32>| {
        let params = SamplingParams {
            max_tokens: Some(3),
            ..SamplingParams::default()
        };
        EngineCoreRequest::new(id, prompt, params)
    };
    // 10 prompt tokens + 3 generated, 12 computed: 3 blocks each; 6 blocks in all, so
    // the second request's blocks evict the first's.
    let first: Vec<u32> = (0..10).collect();
    let second: Vec<u32> = (50..60).collect();
    for (id, prompt) in [("a", &first), ("b", &second), ("c", &(90..100).collect())] {
        client
            .generate_all(request(id, prompt.clone()))
            .await
            .unwrap();
    }

    // Subscribed after the fact: everything comes from the replay buffer.
    let mut sub = KvEventSubscriber::start(
        SubscriberConfig::from_engine_config(&reported, "127.0.0.1").with_start(StartFrom::Seq(0)),
    )
    .unwrap();
    let hasher = BlockHasher::new(
        HashAlgo::Sha256,
        4,
        NoneHashSeed::PythonHashSeed("7".into()),
    )
    .unwrap();
    let computed = |prompt: &[u32]| {
        let mut tokens = prompt.to_vec();
        tokens.extend([1000, 1001]); // the last sampled token (1002) is not computed
        hasher
            .hash_blocks(&tokens, &HashExtras::none())
            .iter()
            .map(|h| h.external(true))
            .collect::<Vec<_>>()
    };
    let mut stored = Vec::new();
    let mut removed = Vec::new();
    // An idle cache is cleared; the engine publishes that with its next step.
    assert!(client.reset_prefix_cache(false, false).await.unwrap());
    client.generate_all(request("d", vec![7; 2])).await.unwrap();
    let mut cleared = false;
    while !cleared {
        match next(&mut sub).await {
            KvEventMessage::Batch { batch, .. } => {
                assert_eq!(batch.data_parallel_rank, Some(0));
                for event in batch.events {
                    match event {
                        KVCacheEvent::BlockStored(e) => stored.extend(e.block_hashes),
                        KVCacheEvent::BlockRemoved(e) => removed.extend(e.block_hashes),
                        KVCacheEvent::AllBlocksCleared(_) => cleared = true,
                        other => panic!("{other:?}"),
                    }
                }
            }
            other => panic!("{other:?}"),
        }
    }
    let expected: Vec<ExternalBlockHash> = [&first, &second, &(90..100).collect()]
        .into_iter()
        .flat_map(|p| computed(p))
        .collect();
    assert_eq!(stored, expected);
    // The third request needed 3 blocks of a full cache: the first's, tail first.
    let mut first_blocks = computed(&first);
    first_blocks.reverse();
    assert_eq!(removed, first_blocks);
}
