//! Interop: KV-cache events from vLLM 0.33.0's real publisher, read by `KvEventSubscriber`.
//!
//! - A real `EngineCoreProc` (scripted executor, `scripts/interop_engine_core.py`) with
//!   `--enable-prefix-caching` and a `--kv-events-config`, driven by our
//!   `EngineCoreClient`: our subscriber must see the same batches, in the same order, with
//!   the same bytes, as vLLM's own classes decode (`scripts/kv_events_subscriber.py`), and
//!   our `BlockHasher` must reproduce the block hashes the engine published; the mock
//!   engine, given the same requests and tokens, must publish the same events, and after
//!   `reset_prefix_cache(reset_running_requests=True)` in the middle of a request, store
//!   the same blocks again.
//! - vLLM's `ZmqEventPublisher` with scripted batches (`scripts/kv_events_publisher.py`):
//!   holes in the numbering filled from its replay buffer, holes it no longer covers
//!   reported, a slow consumer told what it lost, a restarted publisher followed, the
//!   per-rank endpoint offsets.
//!
//! `#[ignore]`d like `interop_vllm.rs` (they need the Python reference environment) and
//! skipped unless `VLLM_REFERENCE_PYTHON` is set; `scripts/interop.sh` runs them:
//!
//! ```text
//! VLLM_REFERENCE_PYTHON=$HOME/.cache/vllm-reference/venv/bin/python \
//! VLLM_REFERENCE_MODELS=$HOME/.cache/vllm-reference/models \
//!     cargo test -p vllm-client --all-features --test interop_kv_events -- --ignored --test-threads=1
//! ```

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use vllm_client::kv_events::*;
use vllm_client::mock::{MockConfig, MockEngine, MockEngineHandle, OutputMode};
use vllm_client::protocol::{EngineCoreRequest, SamplingParams};
use vllm_client::{ClientConfig, EngineCoreClient};

const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts");
/// Start-up of Python processes (imports torch and vLLM) on a busy 2-core machine.
const STARTUP: Duration = Duration::from_secs(300);
/// Any single step of a test.
const STEP: Duration = Duration::from_secs(60);
const QWEN3_EOS: i64 = 151645;
/// The engine's PYTHONHASHSEED, so that its NONE_HASH is reproducible.
const HASH_SEED: &str = "0";

fn reference_python() -> Option<String> {
    match std::env::var("VLLM_REFERENCE_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ => {
            eprintln!("skipped: set VLLM_REFERENCE_PYTHON (see scripts/interop.sh)");
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(STEP, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {STEP:?} waiting for {what}"))
}

/// A Python helper process: killed with its process group when dropped; its stderr goes
/// to a log file shown when a test fails.
struct Python {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    log: PathBuf,
}

impl Python {
    fn spawn(python: &str, script: &str, args: &[String], env: &[(&str, &str)]) -> Python {
        let log = std::env::temp_dir().join(format!(
            "vllm-client-kv-{}-{}.log",
            script.trim_end_matches(".py"),
            free_port()
        ));
        let stderr = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new(python);
        command
            .arg(format!("{SCRIPTS}/{script}"))
            .args(args)
            .env("HF_HUB_OFFLINE", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python} {script}: {e}"));
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Python {
            child,
            stdin,
            stdout,
            log,
        }
    }

    /// The next JSON line it prints (`None` at its exit).
    async fn line(&mut self) -> Option<serde_json::Value> {
        let line = self.stdout.next_line().await.expect("read stdout")?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
    }

    async fn expect_line(&mut self, what: &str, timeout: Duration) -> serde_json::Value {
        match tokio::time::timeout(timeout, self.line()).await {
            Ok(Some(v)) => v,
            Ok(None) => panic!("{what}: the process exited\n{}", self.log_tail()),
            Err(_) => panic!("{what}: timed out\n{}", self.log_tail()),
        }
    }

    async fn command(&mut self, line: &str) -> serde_json::Value {
        let stdin = self.stdin.as_mut().expect("stdin");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        self.expect_line(line, STEP).await
    }

    fn kill(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.start_kill();
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.contains("deprecated")).collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        format!("--- {} ---\n{tail}", self.log.display())
    }
}

impl Drop for Python {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("{}", self.log_tail());
        } else {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The next item of a subscriber.
async fn next(sub: &mut KvEventSubscriber) -> KvEventMessage {
    within("a KV event", sub.next())
        .await
        .expect("the subscriber stream never ends")
}

/// Batches of a subscriber until `n` have arrived; other items are returned beside them.
async fn batches(
    sub: &mut KvEventSubscriber,
    n: usize,
) -> (Vec<(u64, KVEventBatch)>, Vec<KvEventMessage>) {
    let (mut batches, mut others) = (Vec::new(), Vec::new());
    while batches.len() < n {
        match next(sub).await {
            KvEventMessage::Batch { seq, batch } => batches.push((seq, batch)),
            other => others.push(other),
        }
    }
    (batches, others)
}

fn seqs(batches: &[(u64, KVEventBatch)]) -> Vec<u64> {
    batches.iter().map(|(s, _)| *s).collect()
}

/// Every batch re-encodes to the bytes vLLM's publisher sent for its sequence number.
fn assert_same_bytes(ours: &[(u64, KVEventBatch)], published: &[serde_json::Value]) {
    for (seq, batch) in ours {
        let theirs = published
            .iter()
            .find(|p| p["seq"].as_u64() == Some(*seq))
            .unwrap_or_else(|| panic!("batch {seq} was not published"));
        assert_eq!(
            hex(&vllm_client::wire::to_vec(batch)),
            theirs["payload"].as_str().unwrap(),
            "batch {seq}"
        );
    }
}

// --- a real engine ---------------------------------------------------------------------

fn request(id: &str, prompt: Vec<u32>, max_tokens: i64, salt: Option<&str>) -> EngineCoreRequest {
    let mut sp = SamplingParams {
        max_tokens: Some(max_tokens),
        temperature: 0.0,
        ..SamplingParams::default()
    };
    sp.set_eos_token_id(QWEN3_EOS);
    sp.apply_post_init();
    let mut request = EngineCoreRequest::new(id, prompt, sp);
    request.cache_salt = salt.map(str::to_owned);
    request
}

/// vLLM's `EngineCoreProc` (scripted executor, blocks of 16 tokens, prefix caching)
/// publishing KV events on `publish` / `replay`, and our client connected to it.
async fn real_engine(python: &str, publish: u16, replay: u16) -> (Python, EngineCoreClient) {
    let handshake = free_port();
    let kv_config = format!(
        r#"{{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:{publish}", "replay_endpoint": "tcp://*:{replay}", "topic": "kv"}}"#
    );
    let mut args = vec![
        "--handshake-address".to_owned(),
        format!("tcp://127.0.0.1:{handshake}"),
        "--enable-prefix-caching".to_owned(),
        "--block-size".to_owned(),
        "16".to_owned(),
        "--kv-events-config".to_owned(),
        kv_config,
    ];
    if let Ok(models) = std::env::var("VLLM_REFERENCE_MODELS") {
        args.push("--model".to_owned());
        args.push(format!("{models}/qwen3"));
    }
    let config = ClientConfig::handshake("127.0.0.1", handshake, 1).with_ready_timeout(STARTUP);
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let engine = Python::spawn(
        python,
        "interop_engine_core.py",
        &args,
        &[("PYTHONHASHSEED", HASH_SEED)],
    );
    let client = match connecting.await.unwrap() {
        Ok(client) => client,
        Err(e) => panic!("engine did not start: {e}\n{}", engine.log_tail()),
    };
    (engine, client)
}

/// The mock engine with `config` publishing its KV events on free ports, our client
/// connected to it, and a subscriber from its first batch.
async fn mock_engine(
    config: MockConfig,
) -> (MockEngineHandle, EngineCoreClient, KvEventSubscriber) {
    let handshake = free_port();
    let config = MockConfig {
        block_size: 16,
        python_hash_seed: Some(HASH_SEED.into()),
        kv_events: Some(KVEventsConfig {
            enable_kv_cache_events: true,
            publisher: Some("zmq".into()),
            endpoint: format!("tcp://*:{}", free_port()),
            replay_endpoint: Some(format!("tcp://*:{}", free_port())),
            topic: "kv".into(),
            ..KVEventsConfig::default()
        }),
        ..config
    };
    let connecting = tokio::spawn(EngineCoreClient::connect(ClientConfig::handshake(
        "127.0.0.1",
        handshake,
        1,
    )));
    let engine = MockEngine::spawn(format!("tcp://127.0.0.1:{handshake}"), 0, config);
    let client = connecting.await.unwrap().unwrap();
    let events = subscribe(&client);
    (engine, client, events)
}

/// A subscriber to the events the client's engine reports it publishes, from the first.
fn subscribe(client: &EngineCoreClient) -> KvEventSubscriber {
    let reported = client.engines()[0].kv_events_config().unwrap();
    KvEventSubscriber::start(
        SubscriberConfig::from_engine_config(&reported, "127.0.0.1").with_start(StartFrom::Seq(0)),
    )
    .unwrap()
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn engine_events_match_vllm_s_subscriber_and_our_block_hashes() {
    let Some(python) = reference_python() else {
        return;
    };
    let (publish, replay) = (free_port(), free_port());
    let (engine, client) = real_engine(&python, publish, replay).await;

    // The engine reports where it publishes (its rank's endpoints, wildcards unresolved).
    let reported = client.engines()[0]
        .kv_events_config()
        .expect("the engine reports its KV events config");
    assert_eq!(reported.endpoint, format!("tcp://*:{publish}"));
    assert_eq!(reported.replay_endpoint, Some(format!("tcp://*:{replay}")));
    assert_eq!(reported.topic, "kv");
    let subscription =
        SubscriberConfig::from_engine_config(&reported, "127.0.0.1").with_start(StartFrom::Seq(0));
    assert_eq!(subscription.endpoint, format!("tcp://127.0.0.1:{publish}"));
    let mut ours = KvEventSubscriber::start(subscription.clone()).unwrap();

    // vLLM's own classes on the same stream.
    let mut reference = Python::spawn(
        &python,
        "kv_events_subscriber.py",
        &[
            "--endpoint".into(),
            subscription.endpoint.clone(),
            "--replay-endpoint".into(),
            subscription.replay_endpoint.clone().unwrap(),
            "--topic".into(),
            "kv".into(),
            "--from-seq".into(),
            "0".into(),
            "--until-cleared".into(),
        ],
        &[],
    );
    assert_eq!(
        reference
            .expect_line("the reference subscriber", STARTUP)
            .await["ready"],
        true
    );

    // Three prompts: two sharing their first two blocks, and the first again with a salt.
    let a: Vec<u32> = (1..=40).collect();
    let mut b: Vec<u32> = a[..32].to_vec();
    b.extend(500..520);
    let prompts = [
        ("a", a.clone(), None),
        ("b", b, None),
        ("a-salted", a, Some("tenant-1")),
    ];
    let mut sequences = Vec::new();
    for (id, prompt, salt) in &prompts {
        let outputs = within(
            id,
            client.generate_all(request(id, prompt.clone(), 10, *salt)),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", engine.log_tail()));
        let mut all = prompt.clone();
        all.extend(outputs.iter().flat_map(|o| o.new_token_ids.iter().copied()));
        sequences.push((all, *salt));
    }
    assert!(
        within(
            "reset_prefix_cache",
            client.reset_prefix_cache(false, false)
        )
        .await
        .unwrap()
    );
    // The engine publishes what its block pool queued at its next scheduler step: a
    // request shorter than a block (it stores nothing) makes one.
    within(
        "a request after the reset",
        client.generate_all(request("after", vec![7; 5], 2, None)),
    )
    .await
    .unwrap();

    // Ours, up to the AllBlocksCleared of the reset.
    let mut got = Vec::new();
    loop {
        match next(&mut ours).await {
            KvEventMessage::Batch { seq, batch } => {
                let cleared = batch
                    .events
                    .iter()
                    .any(|e| matches!(e, KVCacheEvent::AllBlocksCleared(_)));
                got.push((seq, batch));
                if cleared {
                    break;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // vLLM's, to the same point.
    let mut theirs = Vec::new();
    while let Some(line) = within("the reference subscriber", reference.line()).await {
        theirs.push(line);
    }
    assert_eq!(
        seqs(&got),
        theirs
            .iter()
            .map(|l| l["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        "the same batches in the same order"
    );
    assert_eq!(seqs(&got), (0..got.len() as u64).collect::<Vec<_>>());
    assert_same_bytes(&got, &theirs);
    for ((seq, batch), line) in got.iter().zip(&theirs) {
        assert_eq!(batch.data_parallel_rank, Some(0));
        let events = line["batch"][1].as_array().unwrap();
        assert_eq!(events.len(), batch.events.len(), "batch {seq}");
        for (ours, theirs) in batch.events.iter().zip(events) {
            assert_eq!(ours.tag(), theirs["type"].as_str(), "batch {seq}");
            let hashes = match ours {
                KVCacheEvent::BlockStored(e) => &e.block_hashes,
                KVCacheEvent::BlockRemoved(e) => &e.block_hashes,
                _ => continue,
            };
            let theirs: Vec<u64> = theirs["block_hashes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_u64().unwrap())
                .collect();
            let ours: Vec<u64> = hashes
                .iter()
                .map(|h| match h {
                    ExternalBlockHash::Int(v) => *v,
                    other => panic!("vLLM publishes int hashes by default: {other:?}"),
                })
                .collect();
            assert_eq!(ours, theirs, "batch {seq}");
        }
    }

    // Our hashes of each request's computed tokens are exactly what the engine stored:
    // its prompt's blocks and the full blocks of its output.
    let hasher = BlockHasher::new(
        HashAlgo::Sha256,
        16,
        NoneHashSeed::PythonHashSeed(HASH_SEED.into()),
    )
    .unwrap();
    let mut stored: Vec<(Vec<u64>, Option<u64>, Vec<u32>)> = Vec::new();
    for (_, batch) in &got {
        for event in &batch.events {
            if let KVCacheEvent::BlockStored(e) = event {
                assert_eq!(e.block_size, 16);
                assert_eq!(e.medium.as_deref(), Some(MEDIUM_GPU));
                let ints = e
                    .block_hashes
                    .iter()
                    .map(|h| match h {
                        ExternalBlockHash::Int(v) => *v,
                        other => panic!("{other:?}"),
                    })
                    .collect();
                let parent = e.parent_block_hash.as_ref().map(|h| match h {
                    ExternalBlockHash::Int(v) => *v,
                    other => panic!("{other:?}"),
                });
                stored.push((ints, parent, e.token_ids.clone()));
            }
        }
    }
    let mut expected = HashSet::new();
    for (tokens, salt) in &sequences {
        let extras = match salt {
            Some(s) => HashExtras::none().with_cache_salt(*s),
            None => HashExtras::none(),
        };
        // The last sampled token has no KV yet: the engine caches what it computed.
        let computed = &tokens[..tokens.len() - 1];
        let ours: Vec<u64> = hasher
            .hash_blocks(computed, &extras)
            .iter()
            .map(BlockHash::to_u64)
            .collect();
        // Each stored run of blocks is a run of our chain, parent included.
        for (hashes, parent, token_ids) in &stored {
            if let Some(i) = ours.iter().position(|h| *h == hashes[0]) {
                assert_eq!(&ours[i..i + hashes.len()], hashes.as_slice());
                assert_eq!(*parent, i.checked_sub(1).map(|p| ours[p]));
                assert_eq!(
                    token_ids.as_slice(),
                    &computed[i * 16..(i + hashes.len()) * 16]
                );
            }
        }
        expected.extend(ours);
    }
    let published: HashSet<u64> = stored.iter().flat_map(|(h, _, _)| h.clone()).collect();
    assert_eq!(
        published, expected,
        "the engine stored exactly the blocks our BlockHasher computes"
    );
    assert!(published.len() >= 6, "{published:?}");

    // A subscriber that comes late gets the whole history from the replay buffer.
    let mut late = KvEventSubscriber::start(subscription).unwrap();
    let (replayed, others) = batches(&mut late, got.len()).await;
    assert!(others.is_empty(), "{others:?}");
    assert_eq!(replayed, got);
    drop(reference);
    drop(engine);

    // The mock engine, given the same requests and the scripted executor's tokens (a
    // prompt starting with 1 gets 101, 102, …), publishes the same events.
    let (_mock, mock_client, mut mock_events) = mock_engine(MockConfig {
        output: OutputMode::FixedText((101..=110).collect()),
        ..MockConfig::default()
    })
    .await;
    for (id, prompt, salt) in &prompts {
        within(
            id,
            mock_client.generate_all(request(id, prompt.clone(), 10, *salt)),
        )
        .await
        .unwrap();
    }
    assert!(
        within(
            "the mock's reset_prefix_cache",
            mock_client.reset_prefix_cache(false, false)
        )
        .await
        .unwrap()
    );
    within(
        "a request after the mock's reset",
        mock_client.generate_all(request("after", vec![7; 5], 2, None)),
    )
    .await
    .unwrap();
    // vLLM's batches, the reset's AllBlocksCleared included.
    let (mocked, others) = batches(&mut mock_events, got.len()).await;
    assert!(others.is_empty(), "{others:?}");
    for ((seq, vllm), (mock_seq, mock)) in got.iter().zip(&mocked) {
        assert_eq!(seq, mock_seq);
        assert_eq!(vllm.events, mock.events, "batch {seq}");
        assert_eq!(vllm.data_parallel_rank, mock.data_parallel_rank);
    }
}

/// The blocks stored after a reset's `AllBlocksCleared`, in order, up to the first store
/// of the request whose prompt starts with `until` (which tells the stream is drained):
/// their hashes, the first store's parent and their tokens.
async fn stores_after_clear(
    sub: &mut KvEventSubscriber,
    until: u32,
) -> (Vec<ExternalBlockHash>, Option<ExternalBlockHash>, Vec<u32>) {
    let (mut cleared, mut hashes, mut parent, mut tokens) = (false, Vec::new(), None, Vec::new());
    loop {
        let KvEventMessage::Batch { batch, .. } = next(sub).await else {
            continue;
        };
        for event in batch.events {
            match event {
                KVCacheEvent::AllBlocksCleared(_) => cleared = true,
                KVCacheEvent::BlockStored(e) if e.token_ids.first() == Some(&until) => {
                    assert!(cleared, "the reset was published before the next request");
                    return (hashes, parent, tokens);
                }
                KVCacheEvent::BlockStored(e) if cleared => {
                    if hashes.is_empty() {
                        parent = e.parent_block_hash;
                    }
                    hashes.extend(e.block_hashes);
                    tokens.extend(e.token_ids);
                }
                _ => {}
            }
        }
    }
}

/// Runs `long` until it has streamed a few tokens, resets the prefix cache with
/// `reset_running_requests`, lets it finish, then runs a short request starting with
/// token 2 (the end marker of [`stores_after_clear`]); returns the long request's
/// sequence.
async fn reset_while_running(client: &EngineCoreClient) -> Vec<u32> {
    let prompt: Vec<u32> = (1..=40).collect();
    let mut stream = within(
        "the long request",
        client.generate(request("long", prompt.clone(), 60, None)),
    )
    .await
    .unwrap();
    let mut tokens = prompt;
    while tokens.len() < 45 {
        let output = within("an output", stream.next()).await.unwrap().unwrap();
        tokens.extend(output.new_token_ids);
    }
    assert!(
        within(
            "reset_prefix_cache(reset_running_requests)",
            client.reset_prefix_cache(true, false)
        )
        .await
        .unwrap(),
        "with reset_running_requests the reset succeeds while a request runs"
    );
    while let Some(output) = within("an output", stream.next()).await {
        tokens.extend(output.unwrap().new_token_ids);
    }
    assert_eq!(
        tokens.len(),
        100,
        "the preempted request finished: {tokens:?}"
    );
    within(
        "the request after the reset",
        client.generate_all(request("after", (2..=21).collect(), 1, None)),
    )
    .await
    .unwrap();
    tokens
}

/// `reset_prefix_cache(reset_running_requests=True)` preempts the running request; it
/// caches its blocks anew, from its first, as it recomputes: the mock engine stores the
/// same blocks as vLLM's engine after the reset, wherever in the request the reset
/// lands.
#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn a_reset_of_running_requests_restores_their_blocks_as_vllm_does() {
    let Some(python) = reference_python() else {
        return;
    };
    let (engine, client) = real_engine(&python, free_port(), free_port()).await;
    let mut events = subscribe(&client);
    let sequence = reset_while_running(&client).await;
    let (hashes, parent, tokens) = stores_after_clear(&mut events, 2).await;
    drop(engine);

    // After the reset the engine stored the request's whole chain again, from its first
    // block: every full block of what it computed (all but the last sampled token).
    let hasher = BlockHasher::new(
        HashAlgo::Sha256,
        16,
        NoneHashSeed::PythonHashSeed(HASH_SEED.into()),
    )
    .unwrap();
    let computed = &sequence[..sequence.len() - 1];
    let chain: Vec<ExternalBlockHash> = hasher
        .hash_blocks(computed, &HashExtras::none())
        .iter()
        .map(|h| h.external(true))
        .collect();
    assert_eq!(parent, None);
    assert_eq!(hashes, chain);
    assert_eq!(tokens, computed[..chain.len() * 16]);

    // The mock engine, at the scripted executor's pace, does the same.
    let (_mock, mock_client, mut mock_events) = mock_engine(MockConfig {
        output: OutputMode::FixedText((101..=160).collect()),
        tokens_per_second: 50.0,
        ..MockConfig::default()
    })
    .await;
    assert_eq!(reset_while_running(&mock_client).await, sequence);
    assert_eq!(
        stores_after_clear(&mut mock_events, 2).await,
        (hashes, parent, tokens)
    );
}

// --- vLLM's publisher with scripted batches ----------------------------------------------

/// `scripts/kv_events_publisher.py` bound on `publish`/`replay` (offset for `rank`).
async fn publisher(
    python: &str,
    publish: u16,
    replay: u16,
    buffer_steps: u32,
    rank: u32,
) -> Python {
    let mut p = Python::spawn(
        python,
        "kv_events_publisher.py",
        &[
            "--endpoint".into(),
            format!("tcp://*:{publish}"),
            "--replay-endpoint".into(),
            format!("tcp://*:{replay}"),
            "--topic".into(),
            "kv".into(),
            "--buffer-steps".into(),
            buffer_steps.to_string(),
            "--data-parallel-rank".into(),
            rank.to_string(),
        ],
        &[],
    );
    p.expect_line("the publisher", STARTUP).await;
    p
}

fn seqs_of(published: &[serde_json::Value]) -> Vec<u64> {
    published
        .iter()
        .map(|p| p["seq"].as_u64().unwrap())
        .collect()
}

fn published(answer: &serde_json::Value) -> Vec<serde_json::Value> {
    answer["published"].as_array().unwrap().clone()
}

/// Waits until a fresh subscriber receives live batches: publishes one at a time until
/// one arrives (a PUB socket drops what it sends before the subscription lands), then
/// reads up to the last one published.
async fn sync(publisher: &mut Python, sub: &mut KvEventSubscriber) -> Vec<serde_json::Value> {
    let mut all = Vec::new();
    loop {
        all.extend(published(&publisher.command("publish 1").await));
        let last = all.last().unwrap()["seq"].as_u64().unwrap();
        if let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(500), sub.next()).await {
            let KvEventMessage::Batch { mut seq, .. } = item else {
                panic!("{item:?}");
            };
            while seq < last {
                match next(sub).await {
                    KvEventMessage::Batch { seq: s, .. } => seq = s,
                    other => panic!("{other:?}"),
                }
            }
            return all;
        }
    }
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn holes_are_filled_from_vllm_s_replay_buffer_or_reported() {
    let Some(python) = reference_python() else {
        return;
    };
    let (publish, replay) = (free_port(), free_port());
    let mut vllm = publisher(&python, publish, replay, 4, 0).await;
    let config = SubscriberConfig::new(format!("tcp://127.0.0.1:{publish}"))
        .with_replay_endpoint(format!("tcp://127.0.0.1:{replay}"))
        .with_topic("kv");
    let mut sub = KvEventSubscriber::start(config.clone()).unwrap();
    let mut sent = sync(&mut vllm, &mut sub).await;
    let first = sent.last().unwrap()["seq"].as_u64().unwrap();

    // A lossy link: two batches never reach the PUB socket; the next live one reveals the
    // hole and the replay buffer (4 batches) fills it.
    sent.extend(published(&vllm.command("publish 1").await));
    sent.extend(published(&vllm.command("lose 2").await));
    sent.extend(published(&vllm.command("publish 1").await));
    let (got, others) = batches(&mut sub, 4).await;
    assert!(others.is_empty(), "{others:?}");
    assert_eq!(seqs(&got), (first + 1..first + 5).collect::<Vec<_>>());
    assert_same_bytes(&got, &sent);

    // A hole longer than the replay buffer: what it still has is replayed, the rest is
    // reported as lost.
    sent.extend(published(&vllm.command("lose 6").await));
    sent.extend(published(&vllm.command("publish 1").await));
    let live = first + 11;
    let mut items = Vec::new();
    while !matches!(items.last(), Some(KvEventMessage::Batch { seq, .. }) if *seq == live) {
        items.push(next(&mut sub).await);
    }
    assert_eq!(
        items[0],
        KvEventMessage::Gap {
            first: first + 5,
            last: first + 7
        }
    );
    let got: Vec<(u64, KVEventBatch)> = items[1..]
        .iter()
        .map(|i| match i {
            KvEventMessage::Batch { seq, batch } => (*seq, batch.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(seqs(&got), (first + 8..=live).collect::<Vec<_>>());
    assert_same_bytes(&got, &sent);

    // A consumer that does not read: the socket task keeps reading, the buffer keeps
    // the oldest, and the consumer learns how many it lost.
    let mut slow = KvEventSubscriber::start(config.with_capacity(2)).unwrap();
    sync(&mut vllm, &mut slow).await;
    let burst = published(&vllm.command("publish 10").await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (kept, others) = batches(&mut slow, 2).await;
    assert!(others.is_empty(), "{others:?}");
    assert_eq!(seqs(&kept), seqs_of(&burst[..2]));
    // The loss is reported in order, before the next message that finds room.
    let after = published(&vllm.command("publish 1").await);
    assert_eq!(next(&mut slow).await, KvEventMessage::Lagged { missed: 8 });
    let (got, _) = batches(&mut slow, 1).await;
    assert_eq!(seqs(&got), seqs_of(&after));
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn a_restarted_publisher_is_followed_and_announced() {
    let Some(python) = reference_python() else {
        return;
    };
    let (publish, replay) = (free_port(), free_port());
    let mut vllm = publisher(&python, publish, replay, 100, 0).await;
    let config = SubscriberConfig::new(format!("tcp://127.0.0.1:{publish}"))
        .with_replay_endpoint(format!("tcp://127.0.0.1:{replay}"))
        .with_topic("kv");
    let mut sub = KvEventSubscriber::start(config).unwrap();
    sync(&mut vllm, &mut sub).await;
    vllm.command("publish 3").await;
    batches(&mut sub, 3).await;

    // The engine dies; a new one takes its ports and publishes from 0 again.
    drop(vllm);
    assert_eq!(next(&mut sub).await, KvEventMessage::Disconnected);
    let mut vllm = publisher(&python, publish, replay, 100, 0).await;
    tokio::time::sleep(Duration::from_secs(3)).await; // reconnected by then
    let sent = published(&vllm.command("publish 2").await);
    assert_eq!(sent[0]["seq"], 0);
    let mut items = Vec::new();
    while !matches!(items.last(), Some(KvEventMessage::Batch { seq: 1, .. })) {
        items.push(next(&mut sub).await);
    }
    assert!(
        matches!(items[0], KvEventMessage::Restarted { .. }),
        "{items:?}"
    );
    let got: Vec<(u64, KVEventBatch)> = items
        .iter()
        .filter_map(|i| match i {
            KvEventMessage::Batch { seq, batch } => Some((*seq, batch.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(seqs(&got), vec![0, 1], "{items:?}");
    assert_same_bytes(&got, &sent);
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn data_parallel_ranks_publish_on_vllm_s_offset_ports() {
    let Some(python) = reference_python() else {
        return;
    };
    // Rank 2 of a fleet configured with base ports P and R binds P + 2 and R + 2.
    let (publish, replay) = (free_port(), free_port());
    let mut vllm = publisher(&python, publish, replay, 100, 2).await;
    let config = SubscriberConfig::new(format!("tcp://127.0.0.1:{publish}"))
        .with_replay_endpoint(format!("tcp://127.0.0.1:{replay}"))
        .with_topic("kv")
        .with_start(StartFrom::Seq(0))
        .for_data_parallel_rank(2)
        .unwrap();
    assert_eq!(config.endpoint, format!("tcp://127.0.0.1:{}", publish + 2));
    let sent = published(&vllm.command("publish 2").await);
    let mut sub = KvEventSubscriber::start(config).unwrap();
    let (got, others) = batches(&mut sub, 2).await;
    assert!(others.is_empty(), "{others:?}");
    assert_eq!(seqs(&got), vec![0, 1]);
    assert_same_bytes(&got, &sent);
    assert!(got.iter().all(|(_, b)| b.data_parallel_rank == Some(2)));
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn a_publisher_configured_with_a_host_connects_to_a_binding_subscriber() {
    let Some(python) = reference_python() else {
        return;
    };
    // vLLM's publisher binds only wildcard endpoints; given a host it connects, so the
    // subscriber binds.
    let (publish, replay) = (free_port(), free_port());
    let config = SubscriberConfig {
        bind: true,
        ..SubscriberConfig::new(format!("tcp://127.0.0.1:{publish}"))
            .with_replay_endpoint(format!("tcp://127.0.0.1:{replay}"))
            .with_topic("kv")
            .with_start(StartFrom::Seq(0))
    };
    let mut sub = KvEventSubscriber::start(config).unwrap();
    let mut vllm = Python::spawn(
        &python,
        "kv_events_publisher.py",
        &[
            "--endpoint".into(),
            format!("tcp://127.0.0.1:{publish}"),
            "--replay-endpoint".into(),
            format!("tcp://*:{replay}"),
            "--topic".into(),
            "kv".into(),
        ],
        &[],
    );
    vllm.expect_line("the publisher", STARTUP).await;
    let mut sent = Vec::new();
    let mut got = Vec::new();
    // The first batches may go out before the connection is up; the next live one
    // reveals the hole and the replay fills it.
    for _ in 0..5 {
        sent.extend(published(&vllm.command("publish 1").await));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    while got.len() < 5 {
        match next(&mut sub).await {
            KvEventMessage::Batch { seq, batch } => got.push((seq, batch)),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seqs(&got), vec![0, 1, 2, 3, 4]);
    assert_same_bytes(&got, &sent);
}

// --- prefix routing's view of a real engine ---------------------------------------------

/// The prompt tokens the engine served from its prefix cache, as its first output's
/// prefill statistics report them.
fn cached_tokens(outputs: &[vllm_client::protocol::EngineCoreOutput]) -> i64 {
    outputs
        .iter()
        .find_map(|o| o.prefill_stats.as_ref())
        .expect("the first output reports the prefill")
        .num_cached_tokens
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn prefix_routing_s_view_of_a_real_engine_predicts_its_cache_hits() {
    let Some(python) = reference_python() else {
        return;
    };
    let (handshake, publish, replay) = (free_port(), free_port(), free_port());
    let kv_config = format!(
        r#"{{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:{publish}", "replay_endpoint": "tcp://*:{replay}", "topic": "kv"}}"#
    );
    let mut args = vec![
        "--handshake-address".to_owned(),
        format!("tcp://127.0.0.1:{handshake}"),
        "--enable-prefix-caching".to_owned(),
        "--block-size".to_owned(),
        "16".to_owned(),
        "--kv-events-config".to_owned(),
        kv_config,
    ];
    if let Ok(models) = std::env::var("VLLM_REFERENCE_MODELS") {
        args.push("--model".to_owned());
        args.push(format!("{models}/qwen3"));
    }
    // The block size comes from the engine's ready response.
    let routing = vllm_client::PrefixRouting::new(
        HashAlgo::Sha256,
        NoneHashSeed::PythonHashSeed(HASH_SEED.into()),
    );
    let config = ClientConfig::handshake("127.0.0.1", handshake, 1)
        .with_ready_timeout(STARTUP)
        .with_prefix_routing(routing);
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let engine = Python::spawn(
        &python,
        "interop_engine_core.py",
        &args,
        &[("PYTHONHASHSEED", HASH_SEED)],
    );
    let client = match connecting.await.unwrap() {
        Ok(client) => client,
        Err(e) => panic!("engine did not start: {e}\n{}", engine.log_tail()),
    };

    // 70 prompt tokens and 10 generated: the engine computes 79, 4 full blocks.
    let a: Vec<u32> = (1..=70).collect();
    let outputs = within("a", client.generate_all(request("a", a.clone(), 10, None)))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", engine.log_tail()));
    assert_eq!(cached_tokens(&outputs), 0);
    let mut conversation = a.clone();
    conversation.extend(outputs.iter().flat_map(|o| o.new_token_ids.iter().copied()));

    // The conversation continued: the whole first turn is a prefix.
    let mut next_turn = conversation.clone();
    next_turn.extend(900..930);
    // A prompt sharing 50 tokens (3 full blocks) with the first.
    let mut sibling = a[..50].to_vec();
    sibling.extend(600..640);
    let probe = request("probe", next_turn.clone(), 1, None);
    within("the first request's blocks in the view", async {
        while client.prefix_matches(&probe).unwrap()[0] < 4 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    for (id, prompt, salt, blocks) in [
        ("next-turn", next_turn.clone(), None, 4),
        ("sibling", sibling, None, 3),
        ("salted", next_turn, Some("tenant-1"), 0),
    ] {
        let request = request(id, prompt, 2, salt);
        let predicted = client.prefix_matches(&request).unwrap()[0];
        assert_eq!(predicted, blocks, "{id}");
        let outputs = within(id, client.generate_all(request))
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", engine.log_tail()));
        // What the view predicted is what the engine served from its cache.
        assert_eq!(cached_tokens(&outputs), predicted as i64 * 16, "{id}");
    }
    let stats = client.prefix_routing_stats().unwrap();
    // The first request and the salted one matched nothing.
    assert_eq!(
        (stats.routed_by_prefix, stats.no_match),
        (2, 2),
        "{stats:?}"
    );
    assert_eq!(stats.view_clears, vec![0], "{stats:?}");
}
