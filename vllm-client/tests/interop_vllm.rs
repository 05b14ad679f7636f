//! Interop: `EngineCoreClient` against vLLM 0.33.0's real `EngineCoreProc`.
//!
//! Each test binds the client's handshake socket and launches real vLLM engines that dial
//! it, exactly as `vllm serve MODEL --headless --data-parallel-address H
//! --data-parallel-rpc-port P --data-parallel-size N` engines do: vLLM's own handshake,
//! ZMQ threads, scheduler, KV cache manager, aborts, utility calls and ENGINE_CORE_DEAD.
//! Only the model executor is scripted (`scripts/interop_engine_core.py`), so that the
//! engines run on a CPU-only machine: output token `k` of a request whose first prompt
//! token is `p`, served by the engine of rank `r`, is `100 + 2000 r + (p + k) % 1000`.
//!
//! The tests are `#[ignore]`d (they need the Python reference environment) and skip
//! unless `VLLM_REFERENCE_PYTHON` names its interpreter. Run them with
//! `bash scripts/interop.sh` from the repository root, or:
//!
//! ```text
//! VLLM_REFERENCE_PYTHON=$HOME/.cache/vllm-reference/venv/bin/python \
//! VLLM_REFERENCE_MODELS=$HOME/.cache/vllm-reference/models \
//!     cargo test -p vllm-client --test interop_vllm -- --ignored --test-threads=1
//! ```

use std::future::Future;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::StreamExt;
use vllm_client::protocol::{
    EngineCoreOutput, EngineCoreRequest, FinishReason, PauseMode, SamplingParams, StopReason,
};
use vllm_client::{ClientConfig, ClientError, EngineCoreClient, OutputStream, Value};

/// The launcher of real vLLM engines with a scripted executor.
const LAUNCHER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/scripts/interop_engine_core.py"
);
/// Start-up of Python engines (imports torch and vLLM) on a busy 2-core CI machine.
const STARTUP: Duration = Duration::from_secs(300);
/// Any single step of a test: an output, a utility call, an engine's death.
const STEP: Duration = Duration::from_secs(60);
/// A prompt starting with this token makes the scripted executor raise.
const CRASH_TOKEN: u32 = 4242;
/// What the scripted sampler of engine 0 emits instead of a stop token before `min_tokens`.
const MIN_TOKENS_FILLER: u32 = 1100;
/// The EOS token of the Qwen3 model directory the engines load.
const QWEN3_EOS: i64 = 151645;

/// The reference interpreter, or `None` (with a note) when the tests should skip.
fn reference_python() -> Option<String> {
    match std::env::var("VLLM_REFERENCE_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ => {
            eprintln!(
                "skipped: set VLLM_REFERENCE_PYTHON to the reference venv's python \
                 (see scripts/interop.sh) to run the vLLM interop tests"
            );
            None
        }
    }
}

/// vLLM engines started by the launcher; killed (with any children) when dropped.
struct Engines {
    child: Child,
    log: PathBuf,
}

impl Engines {
    /// Launches `local_count` engines of a `dp_size` fleet dialling `port`, with the
    /// launcher's `extra` flags.
    fn launch(python: &str, port: u16, dp_size: u16, local_count: u16, extra: &[&str]) -> Engines {
        use std::os::unix::process::CommandExt;
        let log = std::env::temp_dir().join(format!("vllm-client-interop-{port}.log"));
        let _ = std::fs::remove_file(&log);
        let mut command = Command::new(python);
        command
            .arg(LAUNCHER)
            .arg("--handshake-address")
            .arg(format!("tcp://127.0.0.1:{port}"))
            .arg("--dp-size")
            .arg(dp_size.to_string())
            .arg("--local-count")
            .arg(local_count.to_string())
            .arg("--log-file")
            .arg(&log)
            .args(extra)
            .env("HF_HUB_OFFLINE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // Its own process group, so that dropping kills forked engines too.
            .process_group(0);
        if let Ok(models) = std::env::var("VLLM_REFERENCE_MODELS") {
            command
                .arg("--model")
                .arg(PathBuf::from(models).join("qwen3"));
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python} {LAUNCHER}: {e}"));
        Engines { child, log }
    }

    /// Kills the launcher and every engine it started, at once (SIGKILL).
    fn kill(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The end of the engines' log, for failure messages.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!("--- {} (last 40 lines) ---\n{tail}", self.log.display())
    }
}

impl Drop for Engines {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("{}", self.log_tail());
        } else {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// A free TCP port on the loopback interface.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Binds the client and launches `count` engines concurrently; returns once all are ready.
async fn start(python: &str, count: u16, local_count: u16) -> (EngineCoreClient, Engines) {
    start_with(python, count, local_count, &[]).await
}

/// [`start`] with extra launcher flags.
async fn start_with(
    python: &str,
    count: u16,
    local_count: u16,
    extra: &[&str],
) -> (EngineCoreClient, Engines) {
    let port = free_port();
    let config = ClientConfig::handshake("127.0.0.1", port, count).with_ready_timeout(STARTUP);
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let engines = Engines::launch(python, port, count, local_count, extra);
    match connecting.await.expect("connect task") {
        Ok(client) => (client, engines),
        Err(e) => panic!("engines did not start: {e}\n{}", engines.log_tail()),
    }
}

/// Awaits `future`, failing the test after [`STEP`].
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {STEP:?} waiting for {what}"))
}

/// A generation request for `prompt` with `max_tokens`, built as vLLM's frontend does.
fn request(
    id: &str,
    prompt: Vec<u32>,
    max_tokens: i64,
    edit: impl FnOnce(&mut SamplingParams),
) -> EngineCoreRequest {
    let mut sp = SamplingParams {
        max_tokens: Some(max_tokens),
        temperature: 0.0,
        ..SamplingParams::default()
    };
    edit(&mut sp);
    sp.set_eos_token_id(QWEN3_EOS);
    sp.apply_post_init();
    EngineCoreRequest::new(id, prompt, sp)
}

/// The tokens the scripted executor of engine `rank` gives a request whose prompt starts
/// with `first`.
fn expected_tokens(rank: u32, first: u32, count: u32) -> Vec<u32> {
    (0..count)
        .map(|k| 100 + 2000 * rank + (first + k) % 1000)
        .collect()
}

fn tokens(outputs: &[EngineCoreOutput]) -> Vec<u32> {
    outputs
        .iter()
        .flat_map(|o| o.new_token_ids.iter().copied())
        .collect()
}

/// Reads `n` outputs of a running request, checking none is final.
async fn read_some(stream: &mut OutputStream, n: usize) -> Vec<EngineCoreOutput> {
    let mut outputs = Vec::new();
    while outputs.len() < n {
        let output = within("an output", stream.next())
            .await
            .expect("stream ended early")
            .expect("output");
        assert!(output.finish_reason.is_none(), "finished early: {output:?}");
        outputs.push(output);
    }
    outputs
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn handshake_registers_a_ready_vllm_engine() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, _engines) = start(&python, 1, 1).await;
    let engines = client.engines();
    assert_eq!(engines.len(), 1);
    let ready = &engines[0].ready;
    assert_eq!(engines[0].rank, 0);
    assert_eq!(ready.vllm_version, "0.33.0");
    assert_eq!(ready.data_parallel_rank, 0);
    // What vLLM's KV cache manager made of the scripted executor's memory and model.
    assert_eq!(ready.max_model_len, 4096);
    assert_eq!(ready.block_size, 16);
    assert_eq!(ready.num_gpu_blocks, 1024);
    assert_eq!(ready.kv_cache_size_tokens, Some(16 * 1024));
    assert_eq!(ready.dtype, "float32");
    assert!(!ready.supports_lora);
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn streams_tokens_until_the_scheduler_finishes_the_request() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, engines) = start(&python, 1, 1).await;

    // max_tokens: one token per engine step, streamed across several outputs.
    let outputs = within(
        "a length-limited request",
        client.generate_all(request("len", vec![5, 6, 7], 8, |_| {})),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", engines.log_tail()));
    assert!(outputs.len() > 1, "one output for 8 tokens: {outputs:?}");
    assert_eq!(tokens(&outputs), expected_tokens(0, 5, 8));
    let last = outputs.last().unwrap();
    assert_eq!(last.finish_reason, Some(FinishReason::Length));
    assert_eq!(last.stop_reason, None);
    assert!(outputs[..outputs.len() - 1].iter().all(|o| !o.finished()));

    // A stop token id: the engine stops on it and names it.
    let stop = expected_tokens(0, 5, 4)[3] as i64;
    let outputs = within(
        "a stop-token request",
        client.generate_all(request("stop", vec![5, 6], 50, |sp| {
            sp.stop_token_ids = vec![stop]
        })),
    )
    .await
    .unwrap();
    assert_eq!(tokens(&outputs), expected_tokens(0, 5, 4));
    let last = outputs.last().unwrap();
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));
    assert_eq!(last.stop_reason, Some(StopReason::Token(stop)));

    // EOS: Stop without a stop reason, as vLLM reports it.
    let eos = expected_tokens(0, 9, 3)[2] as i64;
    let mut eos_request = request("eos", vec![9], 50, |_| {});
    eos_request
        .sampling_params
        .as_mut()
        .unwrap()
        .set_eos_token_id(eos);
    let outputs = within("an EOS request", client.generate_all(eos_request))
        .await
        .unwrap();
    assert_eq!(tokens(&outputs), expected_tokens(0, 9, 3));
    let last = outputs.last().unwrap();
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));
    assert_eq!(last.stop_reason, None);

    // min_tokens: the sampler may not pick a stop token before it (vLLM's logits
    // processor; the scripted one substitutes a filler token), so max_tokens ends it.
    let outputs = within(
        "a min_tokens request",
        client.generate_all(request("min", vec![5], 6, |sp| {
            sp.stop_token_ids = vec![stop];
            sp.min_tokens = 5;
        })),
    )
    .await
    .unwrap();
    let mut held_back = expected_tokens(0, 5, 6);
    held_back[3] = MIN_TOKENS_FILLER;
    assert_eq!(tokens(&outputs), held_back);
    assert_eq!(
        outputs.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );

    // A prompt longer than the step's token budget (2048) is prefilled in chunks; the
    // first token comes after the last chunk.
    let long_prompt: Vec<u32> = (0..3000).map(|i| 11 + i % 500).collect();
    let outputs = within(
        "a chunked-prefill request",
        client.generate_all(request("long", long_prompt, 3, |_| {})),
    )
    .await
    .unwrap();
    assert_eq!(tokens(&outputs), expected_tokens(0, 11, 3));

    // Concurrent requests are batched by the scheduler; each stream gets only its own.
    let runs = (0..4u32).map(|i| {
        let client = client.clone();
        async move {
            let outputs = client
                .generate_all(request(&format!("c{i}"), vec![10 * i, 1, 2], 5, |_| {}))
                .await
                .unwrap();
            assert!(outputs.iter().all(|o| o.request_id == format!("c{i}")));
            assert_eq!(tokens(&outputs), expected_tokens(0, 10 * i, 5));
        }
    });
    within("concurrent requests", futures::future::join_all(runs)).await;
    assert_eq!(client.inflight(), vec![0]);
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn aborted_requests_stop_on_the_engine() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, engines) = start(&python, 1, 1).await;
    // The prefix cache can only be reset while no request holds KV blocks: vLLM's own
    // view of whether a request is still running.
    assert!(
        within(
            "reset_prefix_cache",
            client.reset_prefix_cache(false, false)
        )
        .await
        .unwrap()
    );

    // Dropping a stream mid-way aborts the request on the engine.
    let mut stream = client
        .generate(request("dropped", vec![1, 2, 3], 2000, |_| {}))
        .await
        .unwrap();
    let first = read_some(&mut stream, 3).await;
    assert_eq!(tokens(&first), expected_tokens(0, 1, 3));
    assert!(
        !within(
            "reset_prefix_cache",
            client.reset_prefix_cache(false, false)
        )
        .await
        .unwrap(),
        "a running request holds KV blocks"
    );
    drop(stream);
    assert_eq!(client.inflight(), vec![0]);
    let freed = within(
        "reset_prefix_cache",
        client.reset_prefix_cache(false, false),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", engines.log_tail()));
    assert!(freed, "the engine still runs the dropped request");

    // New requests still work, including one reusing the dropped request's id.
    let outputs = within(
        "a request after the abort",
        client.generate_all(request("dropped", vec![7], 3, |_| {})),
    )
    .await
    .unwrap();
    assert_eq!(tokens(&outputs), expected_tokens(0, 7, 3));

    // An explicit abort ends the stream with Abort and stops the engine too.
    let mut stream = client
        .generate(request("explicit", vec![2], 2000, |_| {}))
        .await
        .unwrap();
    read_some(&mut stream, 2).await;
    client.abort(&["explicit"]);
    let mut rest = Vec::new();
    while let Some(item) = within("the aborted stream", stream.next()).await {
        rest.push(item.unwrap());
    }
    assert_eq!(
        rest.last().and_then(|o| o.finish_reason),
        Some(FinishReason::Abort),
        "{rest:?}"
    );
    assert!(
        within(
            "reset_prefix_cache",
            client.reset_prefix_cache(false, false)
        )
        .await
        .unwrap(),
        "the engine still runs the aborted request"
    );
    let outputs = within(
        "a request after the explicit abort",
        client.generate_all(request("after", vec![3], 2, |_| {})),
    )
    .await
    .unwrap();
    assert_eq!(tokens(&outputs), expected_tokens(0, 3, 2));
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn a_dropped_request_id_can_be_reused_at_once() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, engines) = start(&python, 1, 1).await;
    let mut stream = client
        .generate(request("again", vec![1], 2000, |_| {}))
        .await
        .unwrap();
    read_some(&mut stream, 2).await;
    // The ABORT of the dropped request must reach the engine before the new ADD with
    // the same id, or the engine aborts the new request (or rejects a duplicate id).
    drop(stream);
    let outputs = within(
        "the request that reuses the id",
        client.generate_all(request("again", vec![8], 3, |_| {})),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", engines.log_tail()));
    assert_eq!(tokens(&outputs), expected_tokens(0, 8, 3));
    assert_eq!(
        outputs.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn utility_calls_reach_vllm_methods() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, _engines) = start(&python, 1, 1).await;
    let tasks = within("get_supported_tasks", client.get_supported_tasks())
        .await
        .unwrap();
    assert_eq!(tasks, vec!["generate".to_owned()]);
    assert!(!within("is_sleeping", client.is_sleeping()).await.unwrap());
    assert!(
        within(
            "reset_prefix_cache",
            client.reset_prefix_cache(false, false)
        )
        .await
        .unwrap()
    );
    // Without --enable-lora the workers refuse LoRA calls.
    match within("list_loras", client.list_loras()).await {
        Err(ClientError::Utility { message, .. }) => assert_eq!(
            message,
            "Call to list_loras method failed: \
             LoRA is not enabled. Use --enable-lora to enable LoRA."
        ),
        other => panic!("expected LoRA to be disabled, got {other:?}"),
    }

    // A paused scheduler counts as sleeping in vLLM (`is_sleeping`).
    within(
        "pause_scheduler",
        client.pause_scheduler(PauseMode::Keep, false),
    )
    .await
    .unwrap();
    assert!(within("is_sleeping", client.is_sleeping()).await.unwrap());
    within("resume_scheduler", client.resume_scheduler())
        .await
        .unwrap();
    assert!(!within("is_sleeping", client.is_sleeping()).await.unwrap());

    // A failing call carries vLLM's message.
    match within(
        "a missing method",
        client.call_utility("no_such_method", vec![]),
    )
    .await
    {
        Err(ClientError::Utility {
            method, message, ..
        }) => {
            assert_eq!(method, "no_such_method");
            assert_eq!(
                message,
                "Call to no_such_method method failed: \
                 'EngineCoreProc' object has no attribute 'no_such_method'"
            );
        }
        other => panic!("expected a utility failure, got {other:?}"),
    }
    match within(
        "a bad pause mode",
        client.call_utility("pause_scheduler", vec!["sideways".into(), false.into()]),
    )
    .await
    {
        Err(ClientError::Utility { message, .. }) => assert_eq!(
            message,
            "Call to pause_scheduler method failed: Invalid pause mode: sideways"
        ),
        other => panic!("expected a utility failure, got {other:?}"),
    }
    // The engine is still fine.
    assert!(!within("is_sleeping", client.is_sleeping()).await.unwrap());
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn data_parallel_engines_share_the_requests() {
    let Some(python) = reference_python() else {
        return;
    };
    // Two engines started by vLLM's CoreEngineProcManager, as `--data-parallel-size 2`.
    let (client, engines) = start(&python, 2, 2).await;
    let ranks: Vec<(u16, i64)> = client
        .engines()
        .iter()
        .map(|e| (e.rank, e.ready.data_parallel_rank))
        .collect();
    assert_eq!(ranks, vec![(0, 0), (1, 1)]);
    assert!(
        client
            .engines()
            .iter()
            .all(|e| e.ready.vllm_version == "0.33.0")
    );

    // Least-loaded routing spreads requests over both engines.
    let mut streams = Vec::new();
    for i in 0..4u32 {
        let id = format!("dp{i}");
        streams.push(
            client
                .generate(request(&id, vec![20 + i], 4, |_| {}))
                .await
                .unwrap(),
        );
    }
    assert_eq!(client.inflight(), vec![2, 2]);
    let mut served = [0; 2];
    for (i, mut stream) in streams.into_iter().enumerate() {
        let mut outputs = Vec::new();
        while let Some(item) = within("a data-parallel stream", stream.next()).await {
            outputs.push(item.unwrap_or_else(|e| panic!("{e}\n{}", engines.log_tail())));
        }
        let got = tokens(&outputs);
        let rank = got[0] / 2000;
        assert_eq!(got, expected_tokens(rank, 20 + i as u32, 4));
        served[rank as usize] += 1;
    }
    assert_eq!(served, [2, 2], "requests per engine");
    assert_eq!(client.inflight(), vec![0, 0]);

    // An explicit data_parallel_rank wins.
    for rank in [1, 0, 1] {
        let mut req = request(&format!("pinned{rank}"), vec![3], 3, |_| {});
        req.data_parallel_rank = Some(rank as i64);
        let outputs = within("a pinned request", client.generate_all(req))
            .await
            .unwrap();
        assert_eq!(tokens(&outputs), expected_tokens(rank, 3, 3));
    }

    // Utility calls go to every engine.
    let tasks = within("get_supported_tasks", client.get_supported_tasks())
        .await
        .unwrap();
    assert_eq!(tasks, vec!["generate".to_owned()]);
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn a_killed_engine_fails_everything_with_engine_dead() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, mut engines) = start(&python, 1, 1).await;
    let mut stream = client
        .generate(request("doomed", vec![1], 2000, |_| {}))
        .await
        .unwrap();
    read_some(&mut stream, 2).await;

    engines.kill();
    let mut last = None;
    while let Some(item) = within("the stream of a killed engine", stream.next()).await {
        match item {
            Ok(output) => assert!(!output.finished(), "finished normally: {output:?}"),
            Err(e) => last = Some(e),
        }
    }
    assert!(
        matches!(last, Some(ClientError::EngineDead(_))),
        "expected EngineDead, got {last:?}"
    );
    assert!(matches!(
        client.generate(request("later", vec![1], 2, |_| {})).await,
        Err(ClientError::EngineDead(_))
    ));
    assert!(matches!(
        within("a utility call", client.is_sleeping()).await,
        Err(ClientError::EngineDead(_))
    ));
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn a_crashing_engine_reports_engine_core_dead() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, engines) = start(&python, 1, 1).await;
    let mut running = client
        .generate(request("bystander", vec![1], 2000, |_| {}))
        .await
        .unwrap();
    read_some(&mut running, 2).await;

    // The executor raises: vLLM's run_engine_core sends ENGINE_CORE_DEAD and exits.
    let mut crashing = client
        .generate(request("crash", vec![CRASH_TOKEN, 1], 5, |_| {}))
        .await
        .unwrap();
    for stream in [&mut crashing, &mut running] {
        let mut last = None;
        while let Some(item) = within("the stream of a crashed engine", stream.next()).await {
            if let Err(e) = item {
                last = Some(e);
            }
        }
        match last {
            Some(ClientError::EngineDead(why)) => {
                assert!(why.contains("ENGINE_CORE_DEAD"), "{why}")
            }
            other => panic!("expected EngineDead, got {other:?}\n{}", engines.log_tail()),
        }
    }
    assert!(matches!(
        client.generate(request("later", vec![1], 2, |_| {})).await,
        Err(ClientError::EngineDead(_))
    ));
}

/// Collects the rest of a stream.
async fn drain(stream: &mut OutputStream) -> Vec<EngineCoreOutput> {
    let mut outputs = Vec::new();
    while let Some(item) = within("the rest of a stream", stream.next()).await {
        outputs.push(item.expect("output"));
    }
    outputs
}

/// Whether a stream stays silent for a while (a paused engine).
async fn stays_silent(stream: &mut OutputStream) -> bool {
    tokio::time::timeout(Duration::from_millis(400), stream.next())
        .await
        .is_err()
}

/// A map value with string keys, as Python sends a `dict`.
fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn the_typed_control_plane_drives_vllm_engine_core() {
    use vllm_client::protocol::{LoRARequest, SleepLevel, WakeTag};
    let Some(python) = reference_python() else {
        return;
    };
    let (client, engines) = start_with(&python, 1, 1, &["--max-loras", "2"]).await;
    let log = || engines.log_tail();

    // --- pause modes with a request in flight ----------------------------------------
    // abort: the request ends with `abort`; a new one is queued until the resume.
    let mut running = client
        .generate(request("p-abort", vec![1, 2, 3], 2000, |_| {}))
        .await
        .unwrap();
    read_some(&mut running, 2).await;
    within(
        "pause abort",
        client.pause_scheduler(PauseMode::Abort, false),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", log()));
    let rest = drain(&mut running).await;
    assert_eq!(
        rest.last().unwrap().finish_reason,
        Some(FinishReason::Abort)
    );
    assert!(client.is_scheduler_paused().await.unwrap());
    let mut queued = client
        .generate(request("p-queued", vec![5], 3, |_| {}))
        .await
        .unwrap();
    assert!(
        stays_silent(&mut queued).await,
        "a paused engine runs nothing"
    );
    client.resume_scheduler().await.unwrap();
    assert_eq!(tokens(&drain(&mut queued).await), expected_tokens(0, 5, 3));

    // wait: the pause completes once the running request has finished by itself.
    let mut finishing = client
        .generate(request("p-wait", vec![7], 6, |_| {}))
        .await
        .unwrap();
    let first = read_some(&mut finishing, 1).await;
    within("pause wait", client.pause_scheduler(PauseMode::Wait, false))
        .await
        .unwrap();
    let rest = drain(&mut finishing).await;
    assert_eq!(
        rest.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );
    assert_eq!(tokens(&[first, rest].concat()), expected_tokens(0, 7, 6));
    client.resume_scheduler().await.unwrap();

    // keep: the request freezes and continues where it stopped after the resume.
    let mut frozen = client
        .generate(request("p-keep", vec![9], 8, |_| {}))
        .await
        .unwrap();
    let mut seen = read_some(&mut frozen, 2).await;
    within("pause keep", client.pause_scheduler(PauseMode::Keep, false))
        .await
        .unwrap();
    while let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(400), frozen.next()).await
    {
        seen.push(item.unwrap());
    }
    assert!(
        seen.last().unwrap().finish_reason.is_none(),
        "kept, not finished"
    );
    client.resume_scheduler().await.unwrap();
    seen.extend(drain(&mut frozen).await);
    assert_eq!(
        seen.last().unwrap().finish_reason,
        Some(FinishReason::Length)
    );
    assert_eq!(
        tokens(&seen),
        expected_tokens(0, 9, 8),
        "nothing lost or repeated"
    );

    // pause_generation (what /pause calls) refuses new requests until the resume.
    client
        .pause_generation(PauseMode::Abort, true)
        .await
        .unwrap();
    let refused = drain(
        &mut client
            .generate(request("p-refused", vec![4], 3, |_| {}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        refused.last().unwrap().finish_reason,
        Some(FinishReason::Error)
    );
    client.resume_scheduler().await.unwrap();

    // --- sleep and partial wake-ups (vLLM's Executor keeps the sleeping tags) --------
    client
        .sleep(SleepLevel::OffloadWeights, PauseMode::Abort)
        .await
        .unwrap();
    assert!(client.is_sleeping().await.unwrap());
    assert!(!client.wake_up(Some(&[WakeTag::Weights])).await.unwrap());
    assert!(client.is_sleeping().await.unwrap());
    assert!(client.wake_up(Some(&[WakeTag::KvCache])).await.unwrap());
    assert!(!client.is_sleeping().await.unwrap());
    client
        .sleep(SleepLevel::Scheduling, PauseMode::Keep)
        .await
        .unwrap();
    assert!(client.is_sleeping().await.unwrap());
    assert!(client.wake_up(Some(&[WakeTag::Scheduling])).await.unwrap());
    assert!(!client.is_sleeping().await.unwrap());

    // --- weight version and the weight-transfer sequence ------------------------------
    assert_eq!(client.get_weight_version().await.unwrap(), "default");
    let init_info = map(vec![
        ("master_address", "127.0.0.1".into()),
        ("world_size", 2i64.into()),
    ]);
    let update_info = map(vec![
        ("names", Value::from(vec!["w"])),
        ("dtype_names", Value::from(vec!["float32"])),
        ("shapes", Value::from(vec![Value::from(vec![2i64])])),
    ]);
    client
        .init_weight_transfer_engine(init_info.clone())
        .await
        .unwrap();
    client.start_weight_update().await.unwrap();
    client.update_weights(update_info.clone()).await.unwrap();
    client.finish_weight_update(Some("step-1")).await.unwrap();
    assert_eq!(client.get_weight_version().await.unwrap(), "step-1");
    // What vLLM's EngineCore handed its workers: AsyncLLM's calls, keyword for keyword.
    let calls = client
        .collective_rpc("scripted_worker_calls", None, vec![], None)
        .await
        .unwrap();
    let call = |method: &str, kwargs: Vec<(&str, Value)>| {
        Value::from(vec![Value::from(method), Value::Array(vec![]), map(kwargs)])
    };
    assert_eq!(
        calls,
        vec![Value::from(vec![
            call("sleep", vec![("level", 1i64.into())]),
            call("wake_up", vec![("tags", Value::from(vec!["weights"]))]),
            call("wake_up", vec![("tags", Value::from(vec!["kv_cache"]))]),
            call(
                "init_weight_transfer_engine",
                vec![("init_info", init_info)]
            ),
            call("start_weight_update", vec![]),
            call("update_weights", vec![("update_info", update_info)]),
            call("finish_weight_update", vec![]),
        ])]
    );

    // --- caches -----------------------------------------------------------------------
    assert!(client.reset_prefix_cache(true, false).await.unwrap());
    client.reset_mm_cache().await.unwrap();
    client.reset_encoder_cache().await.unwrap();

    // --- LoRA: vLLM's LRU slots and adapter validation --------------------------------
    let dir = std::env::temp_dir().join(format!("vllm-client-lora-{}", std::process::id()));
    let adapter = |name: &str| {
        let path = dir.join(name);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(
            path.join("adapter_config.json"),
            r#"{"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],
                "peft_type": "LORA", "bias": "none"}"#,
        )
        .unwrap();
        path.to_string_lossy().into_owned()
    };
    for (id, name) in [(1, "one"), (2, "two"), (3, "three")] {
        let lora = LoRARequest::new(name, id, adapter(name));
        assert!(
            client
                .add_lora(&lora)
                .await
                .unwrap_or_else(|e| panic!("{e}\n{}", log()))
        );
    }
    assert_eq!(
        client.list_loras().await.unwrap(),
        vec![2, 3],
        "1 was evicted"
    );
    assert!(client.pin_lora(2).await.unwrap());
    match client.pin_lora(9).await {
        Err(ClientError::Utility { message, .. }) => assert_eq!(
            message,
            "Call to pin_lora method failed: Pinning failed. LoRA 9 is not registered."
        ),
        other => panic!("expected vLLM's refusal, got {other:?}"),
    }
    let missing = LoRARequest::new("missing", 4, dir.join("missing").to_string_lossy());
    assert!(client.add_lora(&missing).await.is_err(), "no adapter there");
    // A request for an adapter loads it on the engine (evicting the unpinned 3).
    let mut with_lora = request("l-request", vec![11], 2, |_| {});
    with_lora.lora_request = Some(LoRARequest::new("five", 5, adapter("five")));
    let outputs = within("a LoRA request", client.generate_all(with_lora))
        .await
        .unwrap();
    assert_eq!(tokens(&outputs), expected_tokens(0, 11, 2));
    assert_eq!(client.list_loras().await.unwrap(), vec![2, 5]);
    assert!(client.remove_lora(5).await.unwrap());
    assert!(!client.remove_lora(5).await.unwrap());
    assert_eq!(client.list_loras().await.unwrap(), vec![2]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Parallel sampling against the real scheduler: vLLM's child ids and seeds are what
/// its engines accept, children spread over two engines, a parent abort ends them all.
#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn parallel_sampling_children_run_on_vllm_engines() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, engines) = start(&python, 2, 2).await;
    let parent = request("par-1", vec![40, 41, 42], 5, |sp| {
        sp.n = 4;
        sp.seed = Some(7);
        sp.temperature = 1.0;
    });
    let mut stream = client.generate_n(parent).await.unwrap();
    assert_eq!(client.inflight(), vec![2, 2]);
    let mut children = vec![Vec::new(); 4];
    let mut finishes = vec![None; 4];
    while let Some((index, item)) = within("a child output", stream.next()).await {
        let output = item.unwrap_or_else(|e| panic!("{e}\n{}", engines.log_tail()));
        assert_eq!(output.request_id, format!("{index}_par-1"));
        children[index].extend(output.new_token_ids.iter().copied());
        if output.finished() {
            finishes[index] = output.finish_reason;
        }
    }
    let mut served = [0; 2];
    for tokens in &children {
        let rank = tokens[0] / 2000;
        assert_eq!(tokens, &expected_tokens(rank, 40, 5));
        served[rank as usize] += 1;
    }
    assert_eq!(served, [2, 2], "children per engine");
    assert_eq!(finishes, vec![Some(FinishReason::Length); 4]);
    drop(stream);

    // Aborting the parent aborts every child on its engine.
    let parent = request("par-2", vec![50], 10_000, |sp| sp.n = 3);
    let mut stream = client.generate_n(parent).await.unwrap();
    within("a first child output", stream.next())
        .await
        .unwrap()
        .1
        .unwrap();
    client.abort(&["par-2"]);
    let mut aborted = 0;
    while let Some((_, item)) = within("the aborted children", stream.next()).await {
        if item.unwrap().finish_reason == Some(FinishReason::Abort) {
            aborted += 1;
        }
    }
    assert_eq!(aborted, 3);
    assert_eq!(client.inflight(), vec![0, 0]);
}

/// Prompt logprobs as vLLM's scheduler forwards the model runner's tensors: decoded
/// inline (short prompt) and from extra frames (long prompt).
#[tokio::test]
#[ignore = "needs the vLLM reference environment: run scripts/interop.sh"]
async fn prompt_logprobs_arrive_from_vllm_engines() {
    let Some(python) = reference_python() else {
        return;
    };
    let (client, engines) = start(&python, 1, 1).await;
    for (prompt_len, k) in [(4u32, 2i64), (90, 5)] {
        let prompt: Vec<u32> = (0..prompt_len).map(|i| 300 + i).collect();
        let r = request(&format!("plp-{prompt_len}"), prompt.clone(), 2, |sp| {
            sp.prompt_logprobs = Some(k);
        });
        let outputs = within("prompt logprobs", client.generate_all(r))
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", engines.log_tail()));
        let with_prompt: Vec<_> = outputs
            .iter()
            .filter_map(|o| o.new_prompt_logprobs_tensors.as_deref())
            .collect();
        assert_eq!(with_prompt.len(), 1, "prompt logprobs come once");
        let lists = with_prompt[0].to_lists();
        lists.validate().unwrap();
        let k = k as usize;
        assert_eq!(
            (lists.rows(), lists.cols()),
            (prompt_len as usize - 1, k + 1)
        );
        for row in 0..lists.rows() {
            let t = prompt[row + 1];
            let base = -((row + 1) as f32) / 8.0;
            assert_eq!(lists.entry(row, 0), Some((t as i32, base)));
            assert_eq!(lists.rank(row), Some(1 + (row as i32) % 3));
            for j in 1..=k {
                let expected = (((t as usize + j) % 1000) as i32, base - j as f32);
                assert_eq!(lists.entry(row, j), Some(expected));
            }
        }
    }
}
