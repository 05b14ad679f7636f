//! `vllm.Control`: each RPC reads its message, calls what the HTTP control routes call
//! (`vllm_chat::pipeline::control`, the LoRA registry) and answers with vllm-rs's
//! message, or vllm-rs's status for a failure.
//!
//! vllm-rs's rules kept here, where its gRPC answers differ from its HTTP ones:
//! - the weight-transfer RPCs (`InitWeightTransferEngine` … `FinishWeightUpdate`) are
//!   `FAILED_PRECONDITION` unless every engine reported a weight-transfer backend
//!   (`StartDraftWeightUpdate` also needs engines with a draft model); their JSON
//!   payloads must be objects;
//! - the LoRA RPCs are `FAILED_PRECONDITION` when an engine runs without LoRA; names
//!   that clash are `ALREADY_EXISTS`, unknown ones `NOT_FOUND`;
//! - `Abort` with no ids aborts nothing (`/abort_requests` aborts everything);
//! - `Sleep` and `WakeUp` are `FAILED_PRECONDITION` (before their request is read)
//!   unless every engine reported sleep mode at its handshake; `UnloadLora` refuses an
//!   empty name before it looks at the engines;
//! - `PauseGeneration` and `Sleep` take `PAUSE_MODE_UNSPECIFIED` as `abort`; `Sleep`
//!   defaults to level 1 and takes any level above 2 as 2 (discard everything, as
//!   vLLM's workers treat every level but 1);
//! - `WakeUp` passes its tags on as they are (unknown tags wake nothing).

use serde_json::Value as Json;
use tonic::{Request, Response, Status};
use vllm_chat::pipeline::control::{engine, lifecycle, weights};
use vllm_chat::pipeline::lora::LoraError;
use vllm_client::EngineCoreClient;
use vllm_client::Value;
use vllm_client::protocol::{EngineCoreReadyResponse, LoRARequest, PauseMode, SleepLevel};

use super::pb;
use super::{GrpcState, PROTO_VERSION, status};

/// The `vllm.Control` service.
#[derive(Debug, Clone)]
pub struct Control {
    /// What it serves.
    pub state: GrpcState,
}

type Answer<T> = Result<Response<T>, Status>;

impl Control {
    fn client(&self) -> &EngineCoreClient {
        self.state.app.pipeline.client()
    }

    /// The engines' handshakes (the first one speaks for settings they share).
    fn ready(&self) -> Vec<EngineCoreReadyResponse> {
        self.client()
            .engines()
            .iter()
            .map(|e| e.ready.clone())
            .collect()
    }

    /// The backend every engine reported, `None` when one has none or they differ.
    fn weight_transfer_backend(&self) -> Option<String> {
        let ready = self.ready();
        let backend = ready.first()?.weight_transfer_backend.clone()?;
        ready
            .iter()
            .all(|r| r.weight_transfer_backend.as_deref() == Some(backend.as_str()))
            .then_some(backend)
    }

    /// vllm-rs refuses the LoRA RPCs when an engine runs without LoRA.
    fn require_lora(&self) -> Result<(), Status> {
        let ready = self.ready();
        if !ready.is_empty() && ready.iter().all(|r| r.supports_lora) {
            Ok(())
        } else {
            Err(Status::failed_precondition(
                "engine was not started with LoRA enabled",
            ))
        }
    }

    /// vllm-rs refuses `Sleep` and `WakeUp` (before reading the request) when an engine
    /// was started without sleep mode.
    fn require_sleep_mode(&self) -> Result<(), Status> {
        let ready = self.ready();
        if !ready.is_empty() && ready.iter().all(|r| r.enable_sleep_mode) {
            Ok(())
        } else {
            Err(Status::failed_precondition(
                "sleep mode is not configured; start vLLM with --enable-sleep-mode",
            ))
        }
    }

    /// vllm-rs refuses the weight-transfer RPCs without a backend on every engine.
    fn require_weight_transfer(&self) -> Result<(), Status> {
        match self.weight_transfer_backend() {
            Some(_) => Ok(()),
            None => Err(Status::failed_precondition(
                "weight transfer is not configured; start vLLM with --weight-transfer-config",
            )),
        }
    }
}

fn ok<T>(message: T) -> Answer<T> {
    Ok(Response::new(message))
}

/// A control answer's error as a status (the answer itself is not needed: the RPCs
/// answer with their own messages). A failed engine call, which the HTTP routes report
/// as `failed to call {op}: {error}`, reads `{op} failed: {error}` as in vllm-rs.
fn done<T>(result: Result<T, vllm_chat::pipeline::ApiError>) -> Result<T, Status> {
    result.map_err(|e| {
        match e
            .message
            .strip_prefix("failed to call ")
            .and_then(|rest| rest.split_once(": "))
        {
            Some((op, error)) if e.status == 500 => {
                Status::internal(format!("{op} failed: {error}"))
            }
            _ => status(&e),
        }
    })
}

fn pause_mode(mode: i32) -> Result<PauseMode, Status> {
    match pb::PauseMode::try_from(mode) {
        Ok(pb::PauseMode::Unspecified | pb::PauseMode::Abort) => Ok(PauseMode::Abort),
        Ok(pb::PauseMode::Wait) => Ok(PauseMode::Wait),
        Ok(pb::PauseMode::Keep) => Ok(PauseMode::Keep),
        Err(_) => Err(Status::invalid_argument("invalid pause mode")),
    }
}

/// A JSON object payload of the weight-transfer RPCs (vllm-rs takes no list).
fn json_payload(field: &str, bytes: &[u8]) -> Result<Json, Status> {
    match serde_json::from_slice(bytes) {
        Ok(object @ Json::Object(_)) => Ok(object),
        Ok(_) => Err(Status::invalid_argument(format!(
            "{field} must contain a JSON object"
        ))),
        Err(e) => Err(Status::invalid_argument(format!(
            "{field} must contain valid JSON: {e}"
        ))),
    }
}

fn adapter(request: &LoRARequest) -> pb::LoraAdapter {
    pb::LoraAdapter {
        lora_id: request.lora_int_id,
        lora_name: request.lora_name.clone(),
        source_path: request.lora_path.clone(),
    }
}

/// A LoRA refusal as vllm-rs's gRPC status.
fn lora_status(error: LoraError) -> Status {
    match error {
        LoraError::EmptyName => Status::invalid_argument("lora_name must not be empty"),
        LoraError::EmptyPath => Status::invalid_argument("lora_path must not be empty"),
        LoraError::MissingName => Status::invalid_argument("lora_name is required"),
        LoraError::ConflictsWithBase(name) => Status::already_exists(format!(
            "LoRA adapter `{name}` conflicts with a served base model"
        )),
        LoraError::AlreadyLoaded(name) => {
            Status::already_exists(format!("LoRA adapter `{name}` is already loaded"))
        }
        LoraError::NotLoaded(name) => {
            Status::not_found(format!("LoRA adapter `{name}` is not loaded"))
        }
        LoraError::Path(message) => Status::invalid_argument(message),
        LoraError::Engine(error) => status(&error),
    }
}

fn u32_of(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

fn u64_of(v: i64) -> u64 {
    u64::try_from(v.max(0)).unwrap_or(0)
}

/// One KV-event publisher as `KvEventSource` (vLLM's `KVEventsConfig` defaults for
/// what the engine left out).
fn kv_event_source(rank: u16, config: &Value) -> pb::KvEventSource {
    let text = |key: &str| {
        config
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let count = |key: &str, default: i64| {
        u32_of(config.get(key).and_then(Value::as_i64).unwrap_or(default))
    };
    pb::KvEventSource {
        transport: config
            .get("publisher")
            .and_then(Value::as_str)
            .unwrap_or("zmq")
            .to_owned(),
        endpoint: text("endpoint"),
        topic: text("topic"),
        replay_endpoint: text("replay_endpoint"),
        data_parallel_rank: Some(u32::from(rank)),
        encoding: "msgpack".into(),
        schema_version: 1,
        buffer_steps: count("buffer_steps", 10_000),
        hwm: count("hwm", 100_000),
        max_queue_size: count("max_queue_size", 100_000),
    }
}

#[tonic::async_trait]
impl pb::control_server::Control for Control {
    async fn get_server_info(
        &self,
        _: Request<pb::GetServerInfoRequest>,
    ) -> Answer<pb::ServerInfo> {
        let ready = self.ready();
        let first = ready.first().cloned().unwrap_or_default();
        let all =
            |f: fn(&EngineCoreReadyResponse) -> bool| !ready.is_empty() && ready.iter().all(f);
        let backend = self.weight_transfer_backend();
        ok(pb::ServerInfo {
            engine_version: first.vllm_version.clone(),
            api_version: "vllm".into(),
            instance_id: first.instance_id.clone(),
            parallelism: Some(pb::ParallelismInfo {
                tensor_parallel_size: u32_of(first.tensor_parallel_size),
                pipeline_parallel_size: u32_of(first.pipeline_parallel_size),
                data_parallel_size: u32_of(first.data_parallel_size),
                data_parallel_rank: u32_of(first.data_parallel_rank),
                decode_context_parallel_size: u32_of(first.decode_context_parallel_size),
                world_size: u64_of(first.world_size),
                data_parallel_size_local: u32::try_from(ready.len()).unwrap_or(u32::MAX),
            }),
            max_model_len: u32::try_from(self.state.max_model_len()).unwrap_or(u32::MAX),
            kv_block_size: u32_of(first.block_size),
            total_kv_blocks: ready.iter().map(|r| u64_of(r.num_gpu_blocks)).sum(),
            max_running_requests: u64_of(first.max_num_seqs),
            max_batched_tokens: u64_of(first.max_num_batched_tokens),
            max_loras: u32_of(first.max_loras),
            rl_capabilities: Some(pb::RlCapabilities {
                weight_transfer_enabled: backend.is_some(),
                weight_transfer_backend: backend.unwrap_or_default(),
                sleep_mode_enabled: all(|r| r.enable_sleep_mode),
                draft_weight_updates_enabled: all(|r| r.supports_draft_weight_updates),
            }),
            proto_version: PROTO_VERSION.into(),
            effective_attention_block_size: first.effective_attention_block_size.map(u64_of),
        })
    }

    async fn get_model_info(&self, _: Request<pb::GetModelInfoRequest>) -> Answer<pb::ModelInfo> {
        let ready = self.ready();
        ok(pb::ModelInfo {
            model_id: self.state.model_id.clone(),
            served_model_name: self.state.app.api.served_model_name.clone(),
            served_model_aliases: Vec::new(),
            supports_text_input: true,
            supports_token_ids_input: true,
            supports_lora: !ready.is_empty() && ready.iter().all(|r| r.supports_lora),
            supports_multimodal: false,
            reasoning_parser: self.state.reasoning_parser.clone(),
            tool_call_parser: self.state.tool_call_parser.clone(),
        })
    }

    async fn shutdown(&self, _: Request<pb::ShutdownRequest>) -> Answer<pb::ShutdownResponse> {
        if !self.state.manages_engines {
            return Err(Status::failed_precondition(
                "this server does not manage the engine process",
            ));
        }
        // Answer first: the shutdown may close this connection.
        let shutdown = self.state.shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let _ = shutdown.send(true);
        });
        ok(pb::ShutdownResponse {})
    }

    async fn abort(&self, request: Request<pb::AbortRequest>) -> Answer<pb::AbortResponse> {
        let request_ids = request.into_inner().request_ids;
        // Unlike `/abort_requests`, no ids aborts nothing.
        if !request_ids.is_empty() {
            let body = engine::AbortRequestsBody {
                request_ids: Some(request_ids),
            };
            done(engine::abort_requests(self.client(), &body).await)?;
        }
        ok(pb::AbortResponse {})
    }

    async fn load_lora(
        &self,
        request: Request<pb::LoadLoraRequest>,
    ) -> Answer<pb::LoadLoraResponse> {
        self.require_lora()?;
        let request = request.into_inner();
        let loaded = self
            .state
            .app
            .api
            .loras
            .load_adapter(
                self.client(),
                &request.lora_name,
                &request.source_path,
                false,
            )
            .await
            .map_err(lora_status)?;
        ok(pb::LoadLoraResponse {
            adapter: Some(adapter(&loaded)),
        })
    }

    async fn unload_lora(
        &self,
        request: Request<pb::UnloadLoraRequest>,
    ) -> Answer<pb::UnloadLoraResponse> {
        let name = request.into_inner().lora_name;
        // vllm-rs wants a name before it looks at the engines.
        if name.is_empty() {
            return Err(lora_status(LoraError::MissingName));
        }
        self.require_lora()?;
        let unloaded = self
            .state
            .app
            .api
            .loras
            .unload_adapter(self.client(), &name)
            .await
            .map_err(lora_status)?;
        ok(pb::UnloadLoraResponse {
            adapter: Some(adapter(&unloaded)),
        })
    }

    async fn list_loras(&self, _: Request<pb::ListLorasRequest>) -> Answer<pb::ListLorasResponse> {
        self.require_lora()?;
        ok(pb::ListLorasResponse {
            adapters: self
                .state
                .app
                .api
                .loras
                .list()
                .iter()
                .map(adapter)
                .collect(),
        })
    }

    async fn get_kv_event_sources(
        &self,
        _: Request<pb::GetKvEventSourcesRequest>,
    ) -> Answer<pb::GetKvEventSourcesResponse> {
        let sources = engine::kv_event_publishers(self.client())
            .iter()
            .map(|(rank, config)| kv_event_source(*rank, config))
            .collect();
        ok(pb::GetKvEventSourcesResponse { sources })
    }

    async fn pause_generation(
        &self,
        request: Request<pb::PauseGenerationRequest>,
    ) -> Answer<pb::PauseGenerationResponse> {
        let request = request.into_inner();
        let query = lifecycle::PauseQuery {
            mode: pause_mode(request.mode)?,
            clear_cache: request.clear_cache.unwrap_or(true),
        };
        done(lifecycle::pause(self.client(), &query).await)?;
        ok(pb::PauseGenerationResponse {})
    }

    async fn resume_generation(
        &self,
        _: Request<pb::ResumeGenerationRequest>,
    ) -> Answer<pb::ResumeGenerationResponse> {
        done(lifecycle::resume(self.client()).await)?;
        ok(pb::ResumeGenerationResponse {})
    }

    async fn is_paused(&self, _: Request<pb::IsPausedRequest>) -> Answer<pb::IsPausedResponse> {
        let paused = done(lifecycle::paused(self.client()).await)?;
        ok(pb::IsPausedResponse { paused })
    }

    async fn sleep(&self, request: Request<pb::SleepRequest>) -> Answer<pb::SleepResponse> {
        self.require_sleep_mode()?;
        let request = request.into_inner();
        let level = match request.level.unwrap_or(1) {
            0 => SleepLevel::Scheduling,
            1 => SleepLevel::OffloadWeights,
            _ => SleepLevel::DiscardAll,
        };
        let mode = pause_mode(request.mode)?;
        done(lifecycle::sleep_at(self.client(), level, mode).await)?;
        ok(pb::SleepResponse {})
    }

    async fn wake_up(&self, request: Request<pb::WakeUpRequest>) -> Answer<pb::WakeUpResponse> {
        self.require_sleep_mode()?;
        let tags = request.into_inner().tags;
        let tags = (!tags.is_empty()).then_some(tags);
        done(lifecycle::wake(self.client(), tags.as_deref()).await)?;
        ok(pb::WakeUpResponse {})
    }

    async fn is_sleeping(
        &self,
        _: Request<pb::IsSleepingRequest>,
    ) -> Answer<pb::IsSleepingResponse> {
        let sleeping = done(lifecycle::sleeping(self.client()).await)?;
        ok(pb::IsSleepingResponse { sleeping })
    }

    async fn init_weight_transfer_engine(
        &self,
        request: Request<pb::InitWeightTransferEngineRequest>,
    ) -> Answer<pb::InitWeightTransferEngineResponse> {
        self.require_weight_transfer()?;
        let info = json_payload("init_info_json", &request.into_inner().init_info_json)?;
        let body = weights::InitWeightTransferBody {
            init_info: Some(info),
        };
        done(weights::init_weight_transfer_engine(self.client(), &body).await)?;
        ok(pb::InitWeightTransferEngineResponse {})
    }

    async fn start_weight_update(
        &self,
        _: Request<pb::StartWeightUpdateRequest>,
    ) -> Answer<pb::StartWeightUpdateResponse> {
        self.require_weight_transfer()?;
        done(weights::start_weight_update(self.client()).await)?;
        ok(pb::StartWeightUpdateResponse {})
    }

    async fn start_draft_weight_update(
        &self,
        _: Request<pb::StartDraftWeightUpdateRequest>,
    ) -> Answer<pb::StartDraftWeightUpdateResponse> {
        self.require_weight_transfer()?;
        let ready = self.ready();
        if !ready.iter().all(|r| r.supports_draft_weight_updates) {
            return Err(Status::failed_precondition(
                "draft weight updates require a configured speculative draft model",
            ));
        }
        done(weights::start_draft_weight_update(self.client()).await)?;
        ok(pb::StartDraftWeightUpdateResponse {})
    }

    async fn update_weights(
        &self,
        request: Request<pb::UpdateWeightsRequest>,
    ) -> Answer<pb::UpdateWeightsResponse> {
        self.require_weight_transfer()?;
        let info = json_payload("update_info_json", &request.into_inner().update_info_json)?;
        let body = weights::UpdateWeightsBody {
            update_info: Some(info),
        };
        done(weights::update_weights(self.client(), &body).await)?;
        ok(pb::UpdateWeightsResponse {})
    }

    async fn finish_weight_update(
        &self,
        request: Request<pb::FinishWeightUpdateRequest>,
    ) -> Answer<pb::FinishWeightUpdateResponse> {
        self.require_weight_transfer()?;
        let body = weights::FinishWeightUpdateBody {
            weight_version: request.into_inner().weight_version,
        };
        done(weights::finish_weight_update(self.client(), &body).await)?;
        ok(pb::FinishWeightUpdateResponse {})
    }

    async fn update_weight_version(
        &self,
        request: Request<pb::UpdateWeightVersionRequest>,
    ) -> Answer<pb::UpdateWeightVersionResponse> {
        let version = request.into_inner().weight_version;
        if version.is_empty() {
            return Err(Status::invalid_argument("weight_version must not be empty"));
        }
        let body = weights::UpdateWeightVersionBody {
            new_version: version,
        };
        done(weights::update_weight_version(self.client(), &body).await)?;
        ok(pb::UpdateWeightVersionResponse {})
    }

    async fn get_weight_version(
        &self,
        _: Request<pb::GetWeightVersionRequest>,
    ) -> Answer<pb::GetWeightVersionResponse> {
        let weight_version = done(weights::weight_version(self.client()).await)?;
        ok(pb::GetWeightVersionResponse { weight_version })
    }
}
