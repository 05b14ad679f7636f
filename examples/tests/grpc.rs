//! `serve --grpc-port`: vLLM's `vllm.Inference` and `vllm.Control` through the
//! generated tonic clients, in front of the embedded mock engine (and an external mock
//! engine reporting a weight-transfer backend): every RPC, tokens in and out, unary and
//! streamed, health, reflection, and the refusals with vllm-rs's status codes and
//! messages. The answers are checked against `vllm-rs serve --grpc-port` by
//! `examples/scripts/grpc_conformance.py` (run by `scripts/interop.sh`).

mod common;

use std::net::SocketAddr;
use std::sync::OnceLock;

use common::*;
use futures::StreamExt;
use tonic::Code;
use tonic::transport::Channel;
use vllm_client::mock::{MockConfig, MockEngine, MockLora, OutputMode};
use vllm_examples::serve::engine::{EngineSource, MockSettings};
use vllm_examples::serve::grpc::pb;
use vllm_examples::serve::grpc::pb::control_client::ControlClient;
use vllm_examples::serve::grpc::pb::inference_client::InferenceClient;
use vllm_examples::serve::{LoraSettings, RunningServer, ServeConfig};

const TEXT: &str = "Hello! I am a mock engine. The end.";

/// A server with gRPC, LoRA slots and a mock engine at 50 tokens per second (requests
/// stay in flight long enough to pause or abort them).
fn server() -> &'static RunningServer {
    static SERVER: OnceLock<RunningServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        start(ServeConfig {
            grpc_port: Some(0),
            engine: EngineSource::Embedded(MockSettings {
                text: TEXT.into(),
                tokens_per_second: 50.0,
            }),
            lora: LoraSettings {
                mock: Some(MockLora {
                    max_loras: 4,
                    max_cpu_loras: None,
                }),
                ..LoraSettings::default()
            },
            ..config(TEXT)
        })
    })
}

async fn channel(addr: SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .expect("gRPC connection")
}

async fn clients(server: &RunningServer) -> (ControlClient<Channel>, InferenceClient<Channel>) {
    let channel = channel(server.grpc_addr.expect("gRPC is served")).await;
    (
        ControlClient::new(channel.clone()),
        InferenceClient::new(channel),
    )
}

/// A plain hyper HTTP/2 client as the transport.
type PlainHttp2 = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    tonic::body::Body,
>;

/// An Inference client whose transport keeps no timer of its own: tonic's `Channel` races
/// a call's `grpc-timeout` on the client side (answering `CANCELLED` "Timeout expired"
/// itself), so only a plain HTTP/2 client shows what the server answers past a deadline.
fn inference_without_client_timer(server: &RunningServer) -> InferenceClient<PlainHttp2> {
    let addr = server.grpc_addr.expect("gRPC is served");
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http();
    InferenceClient::with_origin(client, format!("http://{addr}").parse().expect("origin"))
}

fn tokens(ids: &[u32]) -> Option<pb::generate_request::Prompt> {
    Some(pb::generate_request::Prompt::TokenIds(pb::TokenIds {
        ids: ids.to_vec(),
    }))
}

/// `Hello, world` (Qwen3) with at most `max` new tokens.
fn request(max: u32) -> pb::GenerateRequest {
    pb::GenerateRequest {
        prompt: tokens(&[9707, 11, 1879]),
        stopping: Some(pb::StoppingCriteria {
            max_new_tokens: max,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A request that runs for seconds (400 tokens at 50 per second).
fn long_request(id: &str) -> pb::GenerateRequest {
    pb::GenerateRequest {
        request_id: id.into(),
        stopping: Some(pb::StoppingCriteria {
            max_new_tokens: 400,
            ignore_eos: true,
            ..Default::default()
        }),
        ..request(0)
    }
}

fn finish(response: &pb::GenerateResponse) -> pb::FinishInfo {
    response
        .outputs
        .as_ref()
        .and_then(|o| o.finish_info.clone())
        .expect("finish info")
}

fn assert_status<T: std::fmt::Debug>(result: Result<T, tonic::Status>, code: Code, message: &str) {
    let status = result.expect_err("a refusal");
    assert_eq!((status.code(), status.message()), (code, message));
}

/// The last finish reason of a stream (its messages read to the end).
async fn stream_finish(mut stream: tonic::Streaming<pb::GenerateResponse>) -> i32 {
    let mut reason = 0;
    while let Some(Ok(message)) = stream.next().await {
        if let Some(info) = message.outputs.and_then(|o| o.finish_info) {
            reason = info.finish_reason;
        }
    }
    reason
}

#[test]
fn server_and_model_info_describe_the_engines() {
    let server = server();
    run(async {
        let (mut control, _) = clients(server).await;
        let info = control
            .get_server_info(pb::GetServerInfoRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(info.proto_version, "0.6.0");
        assert_eq!(info.api_version, "vllm");
        assert_eq!(info.engine_version, "0.33.0");
        assert_eq!(info.max_model_len, 32_768);
        assert_eq!(info.max_loras, 4);
        let rl = info.rl_capabilities.unwrap();
        assert!(rl.sleep_mode_enabled && !rl.weight_transfer_enabled);
        assert_eq!(info.parallelism.unwrap().data_parallel_size, 1);
        let model = control
            .get_model_info(pb::GetModelInfoRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(model.served_model_name, "qwen3");
        assert!(model.supports_token_ids_input && model.supports_text_input);
        assert!(model.supports_lora && !model.supports_multimodal);
        let sources = control
            .get_kv_event_sources(pb::GetKvEventSourcesRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(sources.sources.is_empty());
    });
}

#[test]
fn generate_takes_tokens_and_answers_tokens_text_and_logprobs() {
    let server = server();
    run(async {
        let (_, mut inference) = clients(server).await;
        let answer = inference
            .generate(pb::GenerateRequest {
                response: Some(pb::ResponseOptions {
                    output_token_ids: true,
                    output_logprobs: true,
                    output_candidates: Some(pb::CandidateTokens {
                        select: Some(pb::candidate_tokens::Select::TopN(2)),
                    }),
                    prompt_token_ids: true,
                    prompt_logprobs: true,
                    ..Default::default()
                }),
                ..request(4)
            })
            .await
            .unwrap()
            .into_inner();
        let prompt = answer.prompt_info.clone().unwrap();
        assert_eq!(prompt.num_prompt_tokens, 3);
        assert_eq!(prompt.token_ids, [9707, 11, 1879]);
        // The first prompt token has nothing predicting it.
        assert_eq!((prompt.logprobs.len(), prompt.ranks[0]), (3, 0));
        let outputs = answer.outputs.clone().unwrap();
        assert_eq!(outputs.num_tokens, 4);
        assert_eq!(outputs.token_ids.len(), 4);
        assert!(TEXT.starts_with(&outputs.text) && !outputs.text.is_empty());
        assert_eq!(outputs.logprobs.len(), 4);
        for position in &outputs.candidate_tokens {
            let ranks: Vec<u32> = position.tokens.iter().map(|t| t.rank).collect();
            assert_eq!(ranks, [1, 2]);
        }
        let info = finish(&answer);
        assert_eq!(
            info.finish_reason,
            pb::finish_info::FinishReason::Length as i32
        );
        assert_eq!(info.num_output_tokens, 4);

        // Text in; a stop string ends it, its text held back.
        let answer = inference
            .generate(pb::GenerateRequest {
                prompt: Some(pb::generate_request::Prompt::Text("Hello".into())),
                stopping: Some(pb::StoppingCriteria {
                    max_new_tokens: 20,
                    stop_strings: vec![" am".into()],
                    ..Default::default()
                }),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answer.outputs.as_ref().unwrap().text, "Hello! I");
        let info = finish(&answer);
        assert_eq!(
            info.finish_reason,
            pb::finish_info::FinishReason::Stop as i32
        );
        assert_eq!(
            info.stop_reason,
            Some(pb::finish_info::StopReason::StopString(" am".into()))
        );

        // To the end: the EOS token is the stop reason.
        let answer = inference.generate(request(0)).await.unwrap().into_inner();
        assert_eq!(answer.outputs.as_ref().unwrap().text, TEXT);
        assert!(matches!(
            finish(&answer).stop_reason,
            Some(pb::finish_info::StopReason::EosTokenId(_))
        ));
    });
}

#[test]
fn generate_stream_sends_the_prompt_info_then_one_message_per_step() {
    let server = server();
    run(async {
        let (_, mut inference) = clients(server).await;
        let unary = inference.generate(request(6)).await.unwrap().into_inner();
        let mut stream = inference
            .generate_stream(pb::GenerateRequest {
                response: Some(pb::ResponseOptions {
                    output_token_ids: true,
                    ..Default::default()
                }),
                ..request(6)
            })
            .await
            .unwrap()
            .into_inner();
        let first = stream.next().await.unwrap().unwrap();
        assert!(first.outputs.is_none());
        assert_eq!(first.prompt_info.unwrap().num_prompt_tokens, 3);
        let (mut text, mut count, mut ids, mut last) = (String::new(), 0, Vec::new(), None);
        while let Some(message) = stream.next().await {
            let outputs = message.unwrap().outputs.unwrap();
            text.push_str(&outputs.text);
            count += outputs.num_tokens;
            ids.extend(outputs.token_ids);
            last = outputs.finish_info;
        }
        assert_eq!(text, unary.outputs.unwrap().text);
        assert_eq!((count, ids.len()), (6, 6));
        assert_eq!(last.unwrap().num_output_tokens, 6);
    });
}

#[test]
fn generate_refuses_what_vllm_rs_refuses() {
    let server = server();
    run(async {
        let (_, mut inference) = clients(server).await;
        let cases: Vec<(pb::GenerateRequest, Code, &str)> = vec![
            (
                pb::GenerateRequest::default(),
                Code::InvalidArgument,
                "prompt is required",
            ),
            (
                pb::GenerateRequest {
                    prompt: tokens(&[1, 1_000_000_000]),
                    ..Default::default()
                },
                Code::InvalidArgument,
                "token_id(s) [1000000000] in prompt are out of vocabulary. Vocabulary size: 151936",
            ),
            (
                pb::GenerateRequest {
                    sampling: Some(pb::RandomSampling {
                        num_sequences: 2,
                        ..Default::default()
                    }),
                    ..request(1)
                },
                Code::InvalidArgument,
                "num_sequences > 1 is not supported",
            ),
            (
                pb::GenerateRequest {
                    temperature: Some(3.0),
                    ..request(1)
                },
                Code::InvalidArgument,
                "temperature must be in [0, 2], got 3",
            ),
            (
                pb::GenerateRequest {
                    response: Some(pb::ResponseOptions {
                        output_logprobs: true,
                        output_candidates: Some(pb::CandidateTokens {
                            select: Some(pb::candidate_tokens::Select::TopN(30)),
                        }),
                        ..Default::default()
                    }),
                    ..request(1)
                },
                Code::InvalidArgument,
                "requested logprobs of 30, which is greater than max allowed: 20",
            ),
            (
                pb::GenerateRequest {
                    lora_name: "nope".into(),
                    ..request(1)
                },
                Code::NotFound,
                "LoRA adapter `nope` is not loaded",
            ),
            (
                pb::GenerateRequest {
                    model: "nope".into(),
                    ..request(1)
                },
                Code::NotFound,
                "model `nope` not found",
            ),
        ];
        for (request, code, message) in cases {
            assert_status(inference.generate(request.clone()).await, code, message);
            assert_status(inference.generate_stream(request).await, code, message);
        }
    });
}

#[test]
fn lora_adapters_load_list_serve_and_unload() {
    let server = server();
    run(async {
        let (mut control, mut inference) = clients(server).await;
        let loaded = control
            .load_lora(pb::LoadLoraRequest {
                lora_name: "hub".into(),
                source_path: "org/hub-adapter".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .adapter
            .unwrap();
        assert_eq!(
            (loaded.lora_name.as_str(), loaded.source_path.as_str()),
            ("hub", "org/hub-adapter")
        );
        assert_status(
            control
                .load_lora(pb::LoadLoraRequest {
                    lora_name: "hub".into(),
                    source_path: "org/other".into(),
                })
                .await,
            Code::AlreadyExists,
            "LoRA adapter `hub` is already loaded",
        );
        assert_status(
            control
                .load_lora(pb::LoadLoraRequest {
                    lora_name: "local".into(),
                    source_path: "/etc".into(),
                })
                .await,
            Code::InvalidArgument,
            "Local LoRA adapter paths require VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES to be configured.",
        );
        let listed = control
            .list_loras(pb::ListLorasRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(listed.adapters.contains(&loaded));
        let answer = inference
            .generate(pb::GenerateRequest {
                lora_name: "hub".into(),
                ..request(2)
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(finish(&answer).num_output_tokens, 2);
        let unloaded = control
            .unload_lora(pb::UnloadLoraRequest {
                lora_name: "hub".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(unloaded.adapter, Some(loaded));
        assert_status(
            control
                .unload_lora(pb::UnloadLoraRequest {
                    lora_name: "hub".into(),
                })
                .await,
            Code::NotFound,
            "LoRA adapter `hub` is not loaded",
        );
        assert_status(
            control.unload_lora(pb::UnloadLoraRequest::default()).await,
            Code::InvalidArgument,
            "lora_name is required",
        );
    });
}

#[test]
fn pause_abort_and_sleep_act_on_the_requests_in_flight() {
    // Its own server: pausing must not disturb the other tests' requests.
    let server = start(ServeConfig {
        grpc_port: Some(0),
        engine: EngineSource::Embedded(MockSettings {
            text: TEXT.into(),
            tokens_per_second: 50.0,
        }),
        ..config(TEXT)
    });
    run(async {
        let (mut control, mut inference) = clients(&server).await;
        use pb::finish_info::FinishReason;
        // Abort by id: the stream ends ABORTED; no ids aborts nothing.
        let stream = inference
            .generate_stream(long_request("abort-me"))
            .await
            .unwrap()
            .into_inner();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        control
            .abort(pb::AbortRequest {
                request_ids: vec![],
            })
            .await
            .unwrap();
        control
            .abort(pb::AbortRequest {
                request_ids: vec!["abort-me".into()],
            })
            .await
            .unwrap();
        assert_eq!(stream_finish(stream).await, FinishReason::Aborted as i32);

        // Pause (abort mode) with a request in flight, then a refused request.
        let stream = inference
            .generate_stream(long_request("paused"))
            .await
            .unwrap()
            .into_inner();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        control
            .pause_generation(pb::PauseGenerationRequest::default())
            .await
            .unwrap();
        assert_eq!(stream_finish(stream).await, FinishReason::Aborted as i32);
        assert!(
            control
                .is_paused(pb::IsPausedRequest {})
                .await
                .unwrap()
                .into_inner()
                .paused
        );
        let refused = inference.generate(request(1)).await.expect_err("paused");
        assert_eq!(refused.code(), Code::Unavailable);
        assert_status(
            control
                .pause_generation(pb::PauseGenerationRequest {
                    mode: 9,
                    clear_cache: None,
                })
                .await,
            Code::InvalidArgument,
            "invalid pause mode",
        );
        control
            .resume_generation(pb::ResumeGenerationRequest {})
            .await
            .unwrap();
        assert!(
            !control
                .is_paused(pb::IsPausedRequest {})
                .await
                .unwrap()
                .into_inner()
                .paused
        );

        // Keep mode freezes the request; it finishes after the resume.
        let running = tokio::spawn({
            let mut inference = inference.clone();
            let mut request = long_request("kept");
            request.stopping.as_mut().unwrap().max_new_tokens = 20;
            async move { inference.generate(request).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        control
            .pause_generation(pb::PauseGenerationRequest {
                mode: pb::PauseMode::Keep as i32,
                clear_cache: Some(false),
            })
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        control
            .resume_generation(pb::ResumeGenerationRequest {})
            .await
            .unwrap();
        let answer = running.await.unwrap().unwrap().into_inner();
        let info = finish(&answer);
        assert_eq!(info.finish_reason, FinishReason::Length as i32);
        assert_eq!(info.num_output_tokens, 20);

        // Sleep and wake up, tag by tag.
        control.sleep(pb::SleepRequest::default()).await.unwrap();
        let sleeping = |c: &mut ControlClient<Channel>| {
            let mut c = c.clone();
            async move {
                c.is_sleeping(pb::IsSleepingRequest {})
                    .await
                    .unwrap()
                    .into_inner()
                    .sleeping
            }
        };
        assert!(sleeping(&mut control).await);
        control
            .wake_up(pb::WakeUpRequest {
                tags: vec!["weights".into()],
            })
            .await
            .unwrap();
        assert!(sleeping(&mut control).await);
        control.wake_up(pb::WakeUpRequest::default()).await.unwrap();
        assert!(!sleeping(&mut control).await);
    });
    run(server.stop());
}

#[test]
fn weight_transfer_needs_a_backend_and_the_version_follows_updates() {
    let server = server();
    run(async {
        let (mut control, _) = clients(server).await;
        let refused = "weight transfer is not configured; start vLLM with --weight-transfer-config";
        assert_status(
            control
                .start_weight_update(pb::StartWeightUpdateRequest {})
                .await,
            Code::FailedPrecondition,
            refused,
        );
        assert_status(
            control
                .init_weight_transfer_engine(pb::InitWeightTransferEngineRequest {
                    init_info_json: b"{}".to_vec(),
                })
                .await,
            Code::FailedPrecondition,
            refused,
        );
        assert_status(
            control
                .update_weight_version(pb::UpdateWeightVersionRequest::default())
                .await,
            Code::InvalidArgument,
            "weight_version must not be empty",
        );
    });

    // An external engine reporting a backend: the whole sequence, and `Shutdown` is
    // refused (this server did not start the engine).
    let rpc_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let engine = std::thread::spawn(move || {
        runtime().block_on(async move {
            MockEngine::spawn(
                format!("tcp://127.0.0.1:{rpc_port}"),
                0,
                MockConfig {
                    output: OutputMode::Random { seed: 1 },
                    weight_transfer_backend: Some("nccl".into()),
                    // An engine without sleep mode (and without LoRA).
                    enable_sleep_mode: false,
                    ..MockConfig::default()
                },
            )
        })
    });
    let server = start(ServeConfig {
        grpc_port: Some(0),
        engine: EngineSource::External {
            address: "127.0.0.1".into(),
            rpc_port,
        },
        ..config(TEXT)
    });
    let engine = engine.join().unwrap();
    run(async {
        let (mut control, mut inference) = clients(&server).await;
        let info = control
            .get_server_info(pb::GetServerInfoRequest {})
            .await
            .unwrap()
            .into_inner();
        let rl = info.rl_capabilities.clone().unwrap();
        assert_eq!(
            (
                rl.weight_transfer_enabled,
                rl.weight_transfer_backend.as_str()
            ),
            (true, "nccl")
        );
        assert_status(
            control
                .init_weight_transfer_engine(pb::InitWeightTransferEngineRequest {
                    init_info_json: b"{".to_vec(),
                })
                .await,
            Code::InvalidArgument,
            "init_info_json must contain valid JSON: EOF while parsing an object at line 1 column 1",
        );
        control
            .init_weight_transfer_engine(pb::InitWeightTransferEngineRequest {
                init_info_json: br#"{"master_address": "127.0.0.1", "world_size": 2}"#.to_vec(),
            })
            .await
            .unwrap();
        control
            .start_weight_update(pb::StartWeightUpdateRequest {})
            .await
            .unwrap();
        control
            .update_weights(pb::UpdateWeightsRequest {
                update_info_json: br#"{"names": ["w"]}"#.to_vec(),
            })
            .await
            .unwrap();
        control
            .finish_weight_update(pb::FinishWeightUpdateRequest {
                weight_version: Some("step-1".into()),
            })
            .await
            .unwrap();
        let version = |c: &ControlClient<Channel>| {
            let mut c = c.clone();
            async move {
                c.get_weight_version(pb::GetWeightVersionRequest {})
                    .await
                    .unwrap()
                    .into_inner()
                    .weight_version
            }
        };
        assert_eq!(version(&control).await, "step-1");
        control
            .update_weight_version(pb::UpdateWeightVersionRequest {
                weight_version: "v9".into(),
            })
            .await
            .unwrap();
        assert_eq!(version(&control).await, "v9");
        let answer = inference.generate(request(2)).await.unwrap().into_inner();
        assert_eq!(finish(&answer).num_output_tokens, 2);
        assert_status(
            control.shutdown(pb::ShutdownRequest {}).await,
            Code::FailedPrecondition,
            "this server does not manage the engine process",
        );

        // Without sleep mode, `Sleep` and `WakeUp` are refused before their request is
        // read (a bad mode included).
        let no_sleep = "sleep mode is not configured; start vLLM with --enable-sleep-mode";
        let rl = info.rl_capabilities.as_ref().unwrap();
        assert!(!rl.sleep_mode_enabled);
        assert_status(
            control
                .sleep(pb::SleepRequest {
                    mode: 9,
                    ..Default::default()
                })
                .await,
            Code::FailedPrecondition,
            no_sleep,
        );
        assert_status(
            control.sleep(pb::SleepRequest::default()).await,
            Code::FailedPrecondition,
            no_sleep,
        );
        assert_status(
            control.wake_up(pb::WakeUpRequest::default()).await,
            Code::FailedPrecondition,
            no_sleep,
        );
        let sleeping = control
            .is_sleeping(pb::IsSleepingRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(!sleeping.sleeping);

        // Without LoRA: an adapter in `Generate` is a precondition failure; an unnamed
        // `UnloadLora` is refused for its name first.
        assert_eq!(info.max_loras, 0);
        let no_lora = "engine was not started with LoRA enabled";
        assert_status(
            inference
                .generate(pb::GenerateRequest {
                    lora_name: "nope".into(),
                    ..request(1)
                })
                .await,
            Code::FailedPrecondition,
            no_lora,
        );
        assert_status(
            control
                .unload_lora(pb::UnloadLoraRequest {
                    lora_name: String::new(),
                })
                .await,
            Code::InvalidArgument,
            "lora_name is required",
        );
        assert_status(
            control
                .unload_lora(pb::UnloadLoraRequest {
                    lora_name: "a".into(),
                })
                .await,
            Code::FailedPrecondition,
            no_lora,
        );
    });
    run(server.stop());
    let _ = runtime().block_on(engine.shutdown());
}

#[test]
fn health_and_reflection_list_the_services() {
    let server = server();
    run(async {
        let channel = channel(server.grpc_addr.unwrap()).await;
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        for service in ["", "vllm.Inference", "vllm.Control"] {
            let answer = health
                .check(tonic_health::pb::HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(
                answer.status,
                tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
                "{service}"
            );
        }
        let unknown = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "nope".into(),
            })
            .await
            .expect_err("unknown service");
        assert_eq!(unknown.code(), Code::NotFound);

        use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
        use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};
        let mut reflection = ServerReflectionClient::new(channel);
        let ask = |request: MessageRequest| {
            futures::stream::iter([ServerReflectionRequest {
                host: String::new(),
                message_request: Some(request),
            }])
        };
        let answer = |mut replies: tonic::Streaming<ServerReflectionResponse>| async move {
            replies
                .next()
                .await
                .unwrap()
                .unwrap()
                .message_response
                .unwrap()
        };
        let replies = reflection
            .server_reflection_info(ask(MessageRequest::ListServices(String::new())))
            .await
            .unwrap()
            .into_inner();
        let MessageResponse::ListServicesResponse(list) = answer(replies).await else {
            panic!("a service list");
        };
        let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        names.sort();
        for service in ["grpc.health.v1.Health", "vllm.Control", "vllm.Inference"] {
            assert!(names.iter().any(|n| n == service), "{service} in {names:?}");
        }
        // The schema resolves with its imports (google/protobuf/struct.proto).
        let replies = reflection
            .server_reflection_info(ask(MessageRequest::FileContainingSymbol(
                "vllm.Inference".into(),
            )))
            .await
            .unwrap()
            .into_inner();
        assert!(matches!(
            answer(replies).await,
            MessageResponse::FileDescriptorResponse(files) if !files.file_descriptor_proto.is_empty()
        ));
    });
}

#[test]
fn shutdown_stops_a_server_that_runs_its_engines() {
    // `--api-key` guards HTTP only, as in vllm-rs: gRPC calls need no key.
    let server = start(ServeConfig {
        grpc_port: Some(0),
        ops: vllm_examples::serve::ops::Operations {
            api_keys: vec!["sekret".into()],
            ..Default::default()
        },
        ..config(TEXT)
    });
    let addr = server.addr;
    run(async {
        let (mut control, mut inference) = clients(&server).await;
        let answer = inference.generate(request(1)).await.unwrap().into_inner();
        assert_eq!(finish(&answer).num_output_tokens, 1);
        let refused = get(addr, "/v1/models").await;
        assert_eq!(refused.status, hyper::StatusCode::UNAUTHORIZED);
        control.shutdown(pb::ShutdownRequest {}).await.unwrap();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the server still listens"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    run(server.stop());
}

#[test]
fn health_turns_not_serving_when_the_engine_dies() {
    let server = start(ServeConfig {
        grpc_port: Some(0),
        ..config(TEXT)
    });
    run(async {
        let channel = channel(server.grpc_addr.unwrap()).await;
        let health = tonic_health::pb::health_client::HealthClient::new(channel);
        let status = |health: &tonic_health::pb::health_client::HealthClient<Channel>,
                      service: &str| {
            let mut health = health.clone();
            let service = service.to_owned();
            async move {
                health
                    .check(tonic_health::pb::HealthCheckRequest { service })
                    .await
                    .unwrap()
                    .into_inner()
                    .status
            }
        };
        use tonic_health::pb::health_check_response::ServingStatus;
        assert_eq!(
            status(&health, "vllm.Inference").await,
            ServingStatus::Serving as i32
        );
        server.mocks[0].die();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while status(&health, "vllm.Inference").await != ServingStatus::NotServing as i32 {
            assert!(tokio::time::Instant::now() < deadline, "still SERVING");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(status(&health, "").await, ServingStatus::NotServing as i32);
    });
    run(server.stop());
}

/// A call past its `grpc-timeout` ends `DEADLINE_EXCEEDED` "Deadline Exceeded", unary or
/// streamed, and its engine request is aborted. The client's transport keeps no timer, so
/// what comes back is the server's own answer: not tonic's `CANCELLED` "Timeout expired",
/// and a stream does not run on past its deadline.
#[test]
fn calls_past_their_deadline_end_deadline_exceeded_and_abort() {
    let server = server();
    run(async {
        let mut inference = inference_without_client_timer(server);
        let deadline = std::time::Duration::from_millis(400);
        let mut unary = tonic::Request::new(long_request("deadline-unary"));
        unary.set_timeout(deadline);
        let started = std::time::Instant::now();
        assert_status(
            inference.generate(unary).await,
            Code::DeadlineExceeded,
            "Deadline Exceeded",
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(3));

        let mut streamed = tonic::Request::new(long_request("deadline-stream"));
        streamed.set_timeout(deadline);
        let started = std::time::Instant::now();
        let mut stream = inference
            .generate_stream(streamed)
            .await
            .unwrap()
            .into_inner();
        let mut messages = 0;
        let status = loop {
            match stream.next().await {
                Some(Ok(_)) => messages += 1,
                Some(Err(status)) => break status,
                None => panic!("the stream ended OK after {messages} messages"),
            }
        };
        assert_eq!(
            (status.code(), status.message()),
            (Code::DeadlineExceeded, "Deadline Exceeded")
        );
        // The prompt info and some tokens came first (50 tokens per second).
        assert!(messages >= 2, "{messages} messages");
        assert!(started.elapsed() < std::time::Duration::from_secs(3));

        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while server
            .client
            .in_flight_request_ids()
            .iter()
            .any(|id| id.contains("deadline-"))
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "engine requests still in flight"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
}

/// `--max-connections` caps the gRPC port too: a connection beyond the cap is closed at
/// once, and a free slot serves again.
#[test]
fn grpc_connections_beyond_the_cap_are_closed() {
    let server = start(ServeConfig {
        grpc_port: Some(0),
        http: vllm_examples::serve::http::HttpLimits {
            max_connections: 1,
            ..Default::default()
        },
        ..config(TEXT)
    });
    let addr = server.grpc_addr.expect("gRPC is served");
    run(async {
        let first = channel(addr).await;
        let mut control = ControlClient::new(first.clone());
        control
            .is_paused(pb::IsPausedRequest {})
            .await
            .expect("the first connection is served");
        let second = Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await;
        if let Ok(second) = second {
            ControlClient::new(second)
                .is_paused(pb::IsPausedRequest {})
                .await
                .expect_err("a second connection is closed");
        }
        drop(control);
        drop(first);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let mut again = ControlClient::new(channel(addr).await);
        again
            .is_paused(pb::IsPausedRequest {})
            .await
            .expect("a free slot serves again");
    });
}

/// A connection that never sends HTTP/2's client preface (or sends something else) is
/// closed after `--http-timeout-keep-alive`, so silent peers cannot hold the gRPC
/// port's connection slots.
#[test]
fn grpc_connections_without_a_preface_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start(ServeConfig {
        grpc_port: Some(0),
        http: vllm_examples::serve::http::HttpLimits {
            max_connections: 1,
            keep_alive_timeout: std::time::Duration::from_millis(300),
        },
        ..config(TEXT)
    });
    let addr = server.grpc_addr.expect("gRPC is served");
    run(async {
        for sent in [
            &b""[..],
            b"PRI * HTTP/2.0",
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        ] {
            let mut silent = tokio::net::TcpStream::connect(addr).await.expect("connect");
            silent.write_all(sent).await.expect("write");
            let mut buf = [0u8; 64];
            let closed = tokio::time::timeout(std::time::Duration::from_secs(5), async {
                loop {
                    match silent.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            })
            .await;
            assert!(closed.is_ok(), "{sent:?}: the connection stays open");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            // Its slot is free again: the one allowed connection is served.
            let mut control = ControlClient::new(channel(addr).await);
            control
                .is_paused(pb::IsPausedRequest {})
                .await
                .expect("served after the silent peer was closed");
        }
    });
}
