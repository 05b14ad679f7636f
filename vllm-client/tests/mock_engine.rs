//! The mock engine against a minimal frontend written here with zeromq, mirroring
//! vLLM's: a handshake ROUTER, an input ROUTER and an output PULL.
#![cfg(feature = "mock")]

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use vllm_client::mock::{MockConfig, MockEngine, MockEngineHandle, MockLora, OutputMode};
use vllm_client::protocol::{
    Abort, ENGINE_CORE_DEAD, EngineCoreEventType, EngineCoreOutput, EngineCoreOutputs,
    EngineCoreReadyResponse, EngineCoreRequest, EngineHandshakeMetadata, EngineZmqAddresses,
    FinishReason, HandshakeStatus, LoRARequest, RequestType, SamplingParams, StartDpWave,
    StopReason, UtilityCall, UtilityOutput, engine_identity,
};
use vllm_client::{Value, decode, encode};
use zeromq::{PullSocket, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

const EOS: u32 = 99;
const TIMEOUT: Duration = Duration::from_secs(10);

/// The frontend side: bound sockets, as vLLM's `MPClient` and `launch_core_engines` bind them.
struct Frontend {
    handshake: RouterSocket,
    input: RouterSocket,
    output: PullSocket,
    addresses: EngineZmqAddresses,
    handshake_address: String,
}

impl Frontend {
    async fn bind() -> Self {
        let mut handshake = RouterSocket::new();
        let mut input = RouterSocket::new();
        let mut output = PullSocket::new();
        let handshake_address = handshake
            .bind("tcp://127.0.0.1:0")
            .await
            .unwrap()
            .to_string();
        let input_address = input.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        let output_address = output.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        Self {
            handshake,
            input,
            output,
            addresses: EngineZmqAddresses {
                inputs: vec![input_address],
                outputs: vec![output_address],
                ..EngineZmqAddresses::default()
            },
            handshake_address,
        }
    }

    async fn recv_from(socket: &mut RouterSocket) -> Vec<Bytes> {
        tokio::time::timeout(TIMEOUT, socket.recv())
            .await
            .expect("timed out")
            .unwrap()
            .into_vec()
    }

    /// vLLM's `wait_for_engine_startup` for one remote headless engine, then the ready
    /// response on the input socket (`MPClient.__init__`).
    async fn accept(&mut self, rank: u16) -> EngineCoreReadyResponse {
        let hello = Self::recv_from(&mut self.handshake).await;
        assert_eq!(hello[0].as_ref(), engine_identity(rank));
        let status: HandshakeStatus = decode(&hello[1], &[]).unwrap();
        assert_eq!(
            (status.status.as_str(), status.local, status.headless),
            ("HELLO", false, true)
        );
        let metadata = EngineHandshakeMetadata {
            addresses: self.addresses.clone(),
            ..EngineHandshakeMetadata::default()
        };
        let reply = vec![hello[0].clone(), Bytes::from(encode(&metadata).0)];
        self.handshake
            .send(ZmqMessage::try_from(reply).unwrap())
            .await
            .unwrap();
        let ready = self.ready(rank).await;
        let done = Self::recv_from(&mut self.handshake).await;
        let status: HandshakeStatus = decode(&done[1], &[]).unwrap();
        assert_eq!(status.status, "READY");
        ready
    }

    async fn ready(&mut self, rank: u16) -> EngineCoreReadyResponse {
        let first = Self::recv_from(&mut self.input).await;
        assert_eq!(first[0].as_ref(), engine_identity(rank));
        decode(&first[1], &[]).unwrap()
    }

    async fn send_frames(&mut self, rank: u16, frames: Vec<Bytes>) {
        let mut message = vec![Bytes::copy_from_slice(&engine_identity(rank))];
        message.extend(frames);
        self.input
            .send(ZmqMessage::try_from(message).unwrap())
            .await
            .unwrap();
    }

    async fn send<T: vllm_client::wire::Encode>(
        &mut self,
        rank: u16,
        kind: RequestType,
        payload: &T,
    ) {
        let (payload, extra) = encode(payload);
        let mut frames = vec![Bytes::from_static(kind.as_frame()), Bytes::from(payload)];
        frames.extend(extra);
        self.send_frames(rank, frames).await;
    }

    async fn add(&mut self, rank: u16, request: &EngineCoreRequest) {
        self.send(rank, RequestType::Add, request).await;
    }

    async fn recv_raw(&mut self, timeout: Duration) -> Option<Vec<Bytes>> {
        tokio::time::timeout(timeout, self.output.recv())
            .await
            .ok()
            .map(|m| m.unwrap().into_vec())
    }

    async fn recv(&mut self) -> EngineCoreOutputs {
        let frames = self.recv_raw(TIMEOUT).await.expect("no output");
        decode(&frames[0], &frames[1..]).expect("decodable outputs")
    }

    /// Collects outputs until every listed request finished: tokens and last output per id.
    async fn run(&mut self, ids: &[&str]) -> BTreeMap<String, (Vec<u32>, EngineCoreOutput)> {
        let mut tokens: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        let mut done = BTreeMap::new();
        while done.len() < ids.len() {
            for output in self.recv().await.outputs {
                let seen = tokens.entry(output.request_id.clone()).or_default();
                seen.extend(&output.new_token_ids);
                if output.finished() {
                    done.insert(output.request_id.clone(), (seen.clone(), output));
                }
            }
        }
        done
    }

    async fn call(
        &mut self,
        rank: u16,
        call_id: u64,
        method: &str,
        args: Vec<Value>,
    ) -> UtilityOutput {
        let call = UtilityCall {
            client_index: 0,
            call_id,
            method: method.into(),
            args,
        };
        self.send(rank, RequestType::Utility, &call).await;
        loop {
            if let Some(output) = self.recv().await.utility_output {
                assert_eq!(output.call_id, call_id);
                return output;
            }
        }
    }
}

fn fixed_text() -> MockConfig {
    MockConfig {
        output: OutputMode::FixedText(vec![1, 2, 3]),
        eos_token_id: Some(EOS),
        ..MockConfig::default()
    }
}

/// A request as vLLM's input processor sends it: EOS from the tokenizer, post-init applied.
fn request(id: &str, edit: impl FnOnce(&mut SamplingParams)) -> EngineCoreRequest {
    let mut params = SamplingParams::default();
    edit(&mut params);
    params.apply_post_init();
    params.set_eos_token_id(EOS.into());
    EngineCoreRequest::new(id, vec![10, 11, 12], params)
}

async fn start(
    rank: u16,
    config: MockConfig,
) -> (Frontend, MockEngineHandle, EngineCoreReadyResponse) {
    let mut frontend = Frontend::bind().await;
    let engine = MockEngine::spawn(frontend.handshake_address.clone(), rank, config);
    let ready = frontend.accept(rank).await;
    (frontend, engine, ready)
}

fn result(output: &UtilityOutput) -> &Value {
    assert_eq!(output.failure_message, None);
    &output.result.as_ref().expect("a result").0
}

#[tokio::test]
async fn handshake_then_text_until_eos() {
    let (mut frontend, engine, ready) = start(3, fixed_text()).await;
    assert_eq!(ready.data_parallel_rank, 3);
    assert_eq!(ready.vllm_version, vllm_client::protocol::VLLM_VERSION);

    frontend.add(3, &request("a", |_| {})).await;
    let first = frontend.recv().await;
    assert_eq!(first.engine_index, 3);
    assert_eq!(
        first.scheduler_stats.as_ref().map(|s| s.num_running_reqs),
        Some(1)
    );
    // The first output reports the request's QUEUED and SCHEDULED events.
    let events = first.outputs[0].events.as_ref().expect("events");
    let kinds: Vec<_> = events.iter().map(|e| e.event_type).collect();
    assert_eq!(
        kinds,
        [EngineCoreEventType::Queued, EngineCoreEventType::Scheduled]
    );
    assert!(events[0].timestamp <= events[1].timestamp);
    assert!(events[1].timestamp <= first.timestamp);
    let second = frontend.recv().await;
    assert_eq!(second.outputs[0].events, None);
    let mut tokens = first.outputs[0].new_token_ids.clone();
    tokens.extend(&second.outputs[0].new_token_ids);
    let done = frontend.run(&["a"]).await;
    tokens.extend(&done["a"].0);
    assert_eq!(tokens, [1, 2, 3, EOS]);
    assert_eq!(done["a"].1.finish_reason, Some(FinishReason::Stop));
    assert_eq!(done["a"].1.stop_reason, None);
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn sampling_limits_are_honoured() {
    let config = MockConfig {
        tokens_per_output: 2,
        ..fixed_text()
    };
    let (mut frontend, engine, _) = start(0, config).await;
    let requests = [
        request("length", |p| p.max_tokens = Some(2)),
        request("stop-id", |p| p.stop_token_ids = vec![3]),
        request("min", |p| p.min_tokens = 6),
        request("ignore", |p| {
            p.ignore_eos = true;
            p.max_tokens = Some(6);
        }),
        request("logprobs", |p| {
            p.logprobs = Some(2);
            p.max_tokens = Some(1);
        }),
    ];
    for r in &requests {
        frontend.add(0, r).await;
    }
    let done = frontend
        .run(&["length", "stop-id", "min", "ignore", "logprobs"])
        .await;
    let tokens = |id: &str| done[id].0.clone();
    let last = |id: &str| &done[id].1;

    assert_eq!(tokens("length"), [1, 2]);
    assert_eq!(last("length").finish_reason, Some(FinishReason::Length));
    assert_eq!(tokens("stop-id"), [1, 2, 3]);
    assert_eq!(last("stop-id").stop_reason, Some(StopReason::Token(3)));
    assert_eq!(tokens("min"), [1, 2, 3, 1, 2, 3, EOS]);
    assert_eq!(last("min").finish_reason, Some(FinishReason::Stop));
    assert_eq!(tokens("ignore"), [1, 2, 3, EOS, 1, 2]);
    assert_eq!(last("ignore").finish_reason, Some(FinishReason::Length));

    let logprobs = last("logprobs").new_logprobs.as_ref().expect("logprobs");
    logprobs.validate().unwrap();
    assert_eq!((logprobs.rows(), logprobs.cols()), (1, 3));
    assert_eq!(logprobs.entry(0, 0).map(|e| e.0), Some(1));
    assert_eq!(logprobs.rank(0), Some(1));
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn abort_ends_a_request_and_reports_it_finished() {
    let config = MockConfig {
        tokens_per_second: 50.0,
        include_finished_set: true,
        ..MockConfig::default()
    };
    let (mut frontend, engine, _) = start(0, config).await;
    frontend
        .add(0, &request("long", |p| p.max_tokens = None))
        .await;
    frontend
        .add(0, &request("other", |p| p.max_tokens = Some(1000)))
        .await;
    assert!(!frontend.recv().await.outputs.is_empty());

    frontend
        .send(0, RequestType::Abort, &Abort(vec!["long".into()]))
        .await;
    // The aborted id shows in `finished_requests`, with no output of its own after it.
    loop {
        let outputs = frontend.recv().await;
        if let Some(finished) = outputs.finished_requests {
            assert_eq!(finished, ["long"]);
            break;
        }
    }
    for _ in 0..5 {
        let outputs = frontend.recv().await;
        assert!(outputs.outputs.iter().all(|o| o.request_id == "other"));
        let stats = outputs.scheduler_stats.expect("stats");
        assert_eq!(stats.num_running_reqs, 1);
    }
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn utility_calls_answer_like_vllm() {
    let config = MockConfig {
        tokens_per_second: 50.0,
        lora: Some(MockLora::default()),
        ..MockConfig::default()
    };
    let (mut frontend, engine, _) = start(0, config).await;
    assert_eq!(
        result(&frontend.call(0, 1, "is_sleeping", vec![]).await),
        &Value::Bool(false)
    );
    let tasks = frontend.call(0, 2, "get_supported_tasks", vec![]).await;
    assert_eq!(result(&tasks), &Value::from(vec!["generate"]));

    let lora = LoRARequest::new("adapter", 7, "/loras/adapter");
    let lora: Value = vllm_client::wire::from_slice(&encode(&lora).0).unwrap();
    assert_eq!(
        result(&frontend.call(0, 3, "add_lora", vec![lora]).await),
        &Value::Bool(true)
    );
    let loras = frontend.call(0, 4, "list_loras", vec![]).await;
    assert_eq!(result(&loras), &Value::from(vec![7i64]));
    let removed = frontend
        .call(0, 5, "remove_lora", vec![Value::from(7i64)])
        .await;
    assert_eq!(result(&removed), &Value::Bool(true));

    let unknown = frontend.call(0, 6, "no_such_method", vec![]).await;
    assert_eq!(
        unknown.failure_message.as_deref(),
        Some(
            "Call to no_such_method method failed: 'EngineCoreProc' object has no attribute 'no_such_method'"
        )
    );
    assert_eq!(unknown.result, None);

    // Sleeping (pause mode "abort") aborts what runs, with abort outputs.
    frontend
        .add(0, &request("running", |p| p.max_tokens = None))
        .await;
    assert!(!frontend.recv().await.outputs.is_empty());
    let call = UtilityCall {
        client_index: 0,
        call_id: 7,
        method: "sleep".into(),
        args: vec![Value::from(1i64)],
    };
    frontend.send(0, RequestType::Utility, &call).await;
    let (mut aborted, mut answered) = (false, false);
    while !(aborted && answered) {
        let outputs = frontend.recv().await;
        if let Some(output) = outputs.outputs.iter().find(|o| o.finished()) {
            assert_eq!(output.finish_reason, Some(FinishReason::Abort));
            assert_eq!(
                outputs.finished_requests.as_deref(),
                Some(&["running".to_string()][..])
            );
            aborted = true;
        }
        if let Some(utility) = outputs.utility_output {
            assert!(aborted, "the abort outputs come first");
            assert_eq!(result(&utility), &Value::Nil);
            answered = true;
        }
    }
    assert_eq!(
        result(&frontend.call(0, 8, "is_sleeping", vec![]).await),
        &Value::Bool(true)
    );
    assert_eq!(
        result(&frontend.call(0, 9, "wake_up", vec![]).await),
        &Value::Bool(true)
    );
    assert_eq!(
        result(&frontend.call(0, 10, "is_sleeping", vec![]).await),
        &Value::Bool(false)
    );
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn die_sends_engine_core_dead() {
    let (mut frontend, engine, _) = start(0, fixed_text()).await;
    engine.die();
    loop {
        let frames = frontend.recv_raw(TIMEOUT).await.expect("a message");
        if frames.len() == 1 && frames[0].as_ref() == ENGINE_CORE_DEAD {
            break;
        }
    }
    engine.wait().await.unwrap();
}

#[tokio::test]
async fn stall_delays_answers_and_bad_frames_are_skipped() {
    let (mut frontend, engine, _) = start(0, fixed_text()).await;
    engine.stall(Duration::from_millis(1000));
    tokio::time::sleep(Duration::from_millis(50)).await;
    frontend
        .send_frames(
            0,
            vec![Bytes::from_static(b"\x07"), Bytes::from_static(b"?")],
        )
        .await;
    frontend
        .send_frames(
            0,
            vec![Bytes::from_static(b"\x00"), Bytes::from_static(b"\xc1")],
        )
        .await;
    frontend
        .send_frames(0, vec![Bytes::from_static(b"\x03")])
        .await;
    frontend.add(0, &request("after", |_| {})).await;
    assert!(
        frontend
            .recv_raw(Duration::from_millis(200))
            .await
            .is_none(),
        "answered while stalled"
    );
    let done = frontend.run(&["after"]).await;
    assert_eq!(done["after"].1.finish_reason, Some(FinishReason::Stop));
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn connects_without_handshake_and_runs_dp_waves() {
    let mut frontend = Frontend::bind().await;
    let config = MockConfig {
        dp_waves: true,
        ..fixed_text()
    };
    let engine = MockEngine::spawn_connected(frontend.addresses.clone(), 1, config);
    assert_eq!(frontend.ready(1).await.data_parallel_rank, 1);

    frontend.add(1, &request("w", |_| {})).await;
    frontend.run(&["w"]).await;
    let wave = loop {
        if let Some(wave) = frontend.recv().await.wave_complete {
            break wave;
        }
    };
    assert_eq!(wave, 0);
    // Another engine started wave 1: this one runs it too and reports it complete.
    let start = StartDpWave {
        wave: 1,
        exclude_engine_index: 0,
    };
    frontend.send(1, RequestType::StartDpWave, &start).await;
    loop {
        if let Some(wave) = frontend.recv().await.wave_complete {
            assert_eq!(wave, 1);
            break;
        }
    }
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn data_parallel_ranks_share_a_frontend() {
    let mut frontend = Frontend::bind().await;
    let address = frontend.handshake_address.clone();
    let engines = [0, 1].map(|rank| MockEngine::spawn(address.clone(), rank, fixed_text()));
    // HELLOs arrive in any order; answer each, then collect both ready responses.
    let metadata = EngineHandshakeMetadata {
        addresses: frontend.addresses.clone(),
        ..EngineHandshakeMetadata::default()
    };
    let mut statuses = Vec::new();
    while statuses.len() < 4 {
        let message = Frontend::recv_from(&mut frontend.handshake).await;
        let status: HandshakeStatus = decode(&message[1], &[]).unwrap();
        if status.status == "HELLO" {
            let reply = vec![message[0].clone(), Bytes::from(encode(&metadata).0)];
            frontend
                .handshake
                .send(ZmqMessage::try_from(reply).unwrap())
                .await
                .unwrap();
        }
        statuses.push((message[0].clone(), status.status));
    }
    let mut ranks = Vec::new();
    for _ in 0..2 {
        let first = Frontend::recv_from(&mut frontend.input).await;
        let ready: EngineCoreReadyResponse = decode(&first[1], &[]).unwrap();
        assert_eq!(
            first[0].as_ref(),
            engine_identity(ready.data_parallel_rank as u16)
        );
        ranks.push(ready.data_parallel_rank);
    }
    ranks.sort();
    assert_eq!(ranks, [0, 1]);

    // Requests are routed by identity; outputs carry the engine index.
    frontend.add(1, &request("on-1", |_| {})).await;
    let outputs = frontend.recv().await;
    assert_eq!(
        (outputs.engine_index, outputs.outputs[0].request_id.as_str()),
        (1, "on-1")
    );
    frontend.add(0, &request("on-0", |_| {})).await;
    loop {
        let outputs = frontend.recv().await;
        if let Some(output) = outputs.outputs.iter().find(|o| o.request_id == "on-0") {
            assert_eq!(outputs.engine_index, 0);
            assert_eq!(output.new_token_ids[0], 1);
            break;
        }
    }
    for engine in engines {
        engine.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn pausing_generation_refuses_and_wait_mode_answers_once_idle() {
    let config = MockConfig {
        tokens_per_second: 200.0,
        ..fixed_text()
    };
    let (mut frontend, engine, _) = start(0, config).await;
    let echo = frontend
        .call(
            0,
            1,
            "collective_rpc",
            vec![Value::from("ping"), Value::Nil, Value::from(vec![1i64, 2])],
        )
        .await;
    // The mock's worker answers an unknown method with what reached it.
    assert_eq!(
        result(&echo),
        &Value::from(vec![Value::from(vec![
            Value::from("ping"),
            Value::from(vec![1i64, 2]),
            Value::Nil
        ])])
    );

    // pause_generation("keep"): running requests freeze, new ones are still queued.
    let keep = frontend
        .call(0, 2, "pause_generation", vec![Value::from("keep")])
        .await;
    assert_eq!(result(&keep), &Value::Nil);
    let paused = frontend.call(0, 3, "is_scheduler_paused", vec![]).await;
    assert_eq!(result(&paused), &Value::Bool(true));
    frontend
        .add(0, &request("queued", |p| p.max_tokens = Some(4)))
        .await;
    let stats = loop {
        let outputs = frontend.recv().await;
        assert!(outputs.outputs.is_empty(), "generated while paused");
        if let Some(stats) = outputs.scheduler_stats {
            break stats;
        }
    };
    assert_eq!((stats.num_running_reqs, stats.num_waiting_reqs), (0, 1));
    assert_eq!(
        result(&frontend.call(0, 4, "resume_scheduler", vec![]).await),
        &Value::Nil
    );
    assert_eq!(frontend.run(&["queued"]).await["queued"].0, [1, 2, 3, EOS]);

    // pause_generation("wait"): the answer comes once running requests are done, and new
    // requests are refused with vLLM's retryable error meanwhile.
    frontend
        .add(0, &request("draining", |p| p.max_tokens = Some(3)))
        .await;
    assert!(!frontend.recv().await.outputs.is_empty());
    let call = UtilityCall {
        client_index: 0,
        call_id: 5,
        method: "pause_generation".into(),
        args: vec![Value::from("wait")],
    };
    frontend.send(0, RequestType::Utility, &call).await;
    frontend.add(0, &request("refused", |_| {})).await;
    let (mut drained, mut refused, mut answered) = (false, false, false);
    while !(refused && answered) {
        let outputs = frontend.recv().await;
        for output in &outputs.outputs {
            match output.request_id.as_str() {
                "draining" if output.finished() => drained = true,
                "refused" => {
                    let error = output.error.as_ref().expect("an error");
                    assert_eq!(output.finish_reason, Some(FinishReason::Error));
                    assert_eq!(
                        (error.code.as_str(), error.retryable),
                        ("engine_paused", true)
                    );
                    refused = true;
                }
                _ => {}
            }
        }
        if let Some(utility) = outputs.utility_output {
            assert!(drained, "answered before the running request finished");
            assert_eq!(result(&utility), &Value::Nil);
            answered = true;
        }
    }
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn engine_waits_for_a_late_frontend_and_stops_while_waiting() {
    let free_port = || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    // Nobody listens: shutting down ends the wait at once.
    let engine = MockEngine::spawn(format!("tcp://127.0.0.1:{}", free_port()), 0, fixed_text());
    tokio::time::sleep(Duration::from_millis(100)).await;
    tokio::time::timeout(Duration::from_secs(2), engine.shutdown())
        .await
        .expect("stopped while waiting")
        .unwrap();

    // The frontend binds after the engine started dialing.
    let port = free_port();
    let engine = MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), 0, fixed_text());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut frontend = Frontend::bind().await;
    frontend.handshake = RouterSocket::new();
    frontend
        .handshake
        .bind(&format!("tcp://127.0.0.1:{port}"))
        .await
        .unwrap();
    frontend.accept(0).await;
    frontend.add(0, &request("late", |_| {})).await;
    assert_eq!(frontend.run(&["late"]).await["late"].0, [1, 2, 3, EOS]);
    engine.shutdown().await.unwrap();
}
