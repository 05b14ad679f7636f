//! `POST /inference/v1/generate`: vLLM's tokens-in endpoint. A client that rendered a
//! request itself (e.g. with `/v1/chat/completions/render`) sends prompt token ids and
//! resolved sampling parameters; the answer carries token ids (`output_mode: "tokens"`,
//! the default) or also text (`"text"`). `"derender"` is not supported.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use vllm_chat::openai::{StopParam, StreamOptions};
use vllm_chat::render_mode;
use vllm_client::protocol::EngineCoreRequest;

use super::error::ApiError;
use super::generation::{Generation, PositionLogprobs};
use super::state::AppState;
use super::tokens::check_model;
use super::{ids, logprobs, sampling, sse};

/// vLLM's `SamplingParams` as JSON, with its defaults.
#[derive(Debug, Deserialize)]
#[serde(default)]
struct WireSamplingParams {
    n: u32,
    presence_penalty: f64,
    frequency_penalty: f64,
    repetition_penalty: f64,
    temperature: f64,
    top_p: f64,
    top_k: i64,
    min_p: f64,
    seed: Option<i64>,
    stop: Option<StopParam>,
    stop_token_ids: Option<Vec<u32>>,
    ignore_eos: bool,
    max_tokens: Option<i64>,
    min_tokens: i64,
    logprobs: Option<i64>,
    prompt_logprobs: Option<i64>,
    skip_special_tokens: bool,
    spaces_between_special_tokens: bool,
    include_stop_str_in_output: bool,
    structured_outputs: Option<render_mode::StructuredOutputsParams>,
    logit_bias: Option<Map<String, Value>>,
    allowed_token_ids: Option<Vec<u32>>,
    extra_args: Option<Map<String, Value>>,
    bad_words: Option<Vec<String>>,
}

impl Default for WireSamplingParams {
    fn default() -> Self {
        Self {
            n: 1,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            repetition_penalty: 1.0,
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            seed: None,
            stop: None,
            stop_token_ids: None,
            ignore_eos: false,
            max_tokens: Some(16),
            min_tokens: 0,
            logprobs: None,
            prompt_logprobs: None,
            skip_special_tokens: true,
            spaces_between_special_tokens: true,
            include_stop_str_in_output: false,
            structured_outputs: None,
            logit_bias: None,
            allowed_token_ids: None,
            extra_args: None,
            bad_words: None,
        }
    }
}

#[derive(Debug, Deserialize)]
struct GenerateRequest {
    #[serde(default)]
    request_id: Option<String>,
    token_ids: Vec<u32>,
    #[serde(default)]
    sampling_params: WireSamplingParams,
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    return_token_ids: Option<bool>,
    #[serde(default = "tokens_mode")]
    output_mode: String,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    cache_salt: Option<String>,
    #[serde(default)]
    priority: i64,
}

fn tokens_mode() -> String {
    "tokens".into()
}

impl WireSamplingParams {
    fn resolve(self, stream: bool, room: i64) -> render_mode::SamplingParams {
        render_mode::SamplingParams {
            n: self.n,
            presence_penalty: self.presence_penalty,
            frequency_penalty: self.frequency_penalty,
            repetition_penalty: self.repetition_penalty,
            temperature: self.temperature,
            top_p: Some(self.top_p),
            top_k: self.top_k,
            min_p: Some(self.min_p),
            seed: self.seed,
            stop: self
                .stop
                .as_ref()
                .map(StopParam::to_vec)
                .unwrap_or_default(),
            stop_token_ids: self.stop_token_ids.unwrap_or_default(),
            ignore_eos: self.ignore_eos,
            max_tokens: self.max_tokens.map_or(room, |m| m.min(room)),
            min_tokens: self.min_tokens,
            logprobs: self.logprobs,
            prompt_logprobs: self.prompt_logprobs,
            skip_special_tokens: self.skip_special_tokens,
            spaces_between_special_tokens: self.spaces_between_special_tokens,
            include_stop_str_in_output: self.include_stop_str_in_output,
            output_kind: if stream { 1 } else { 2 },
            structured_outputs: self.structured_outputs,
            logit_bias: self.logit_bias,
            allowed_token_ids: self.allowed_token_ids,
            extra_args: self.extra_args,
            bad_words: self.bad_words.unwrap_or_default(),
            ..render_mode::SamplingParams::default()
        }
    }
}

struct Accepted {
    request_id: String,
    text_mode: bool,
    return_token_ids: bool,
    prompt_token_ids: Vec<u32>,
    include_usage: bool,
    continuous_usage: bool,
    generation: Generation,
}

/// The handler.
pub async fn generate(State(state): State<AppState>, body: Bytes) -> Response {
    let (accepted, stream) = match accept(&state, &body).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    if stream {
        sse::response(stream_frames(accepted))
    } else {
        match whole(&state, accepted).await {
            Ok(v) => Json(v).into_response(),
            Err(e) => e.into_response(),
        }
    }
}

async fn accept(state: &AppState, body: &Bytes) -> Result<(Accepted, bool), ApiError> {
    let request: GenerateRequest = serde_json::from_slice(body)?;
    check_model(&state.api, request.model.as_ref())?;
    let text_mode = match request.output_mode.as_str() {
        "tokens" => false,
        "text" => true,
        other => {
            return Err(ApiError::bad_request(
                format!("output_mode {other:?} is not supported by this server"),
                Some("output_mode"),
            ));
        }
    };
    if request.token_ids.is_empty() {
        return Err(ApiError::bad_request(
            "token_ids must not be empty",
            Some("token_ids"),
        ));
    }
    if request.sampling_params.n > 1 {
        return Err(ApiError::bad_request(
            "n > 1 is not supported by this server.",
            Some("n"),
        ));
    }
    let max_model_len = i64::try_from(state.api.max_model_len()).unwrap_or(i64::MAX);
    let prompt_len = request.token_ids.len() as i64;
    if prompt_len > max_model_len {
        return Err(ApiError::bad_request(
            format!(
                "Input length ({prompt_len}) exceeds model's maximum context length ({max_model_len})."
            ),
            Some("token_ids"),
        ));
    }
    let stream = request.stream == Some(true);
    let resolved = request
        .sampling_params
        .resolve(stream, max_model_len - prompt_len);
    let params = sampling::engine_params(&resolved, &state.api.model, state.max_logprobs)?;
    let request_id = request.request_id.unwrap_or_else(ids::random_hex);
    let mut engine_request = EngineCoreRequest::new(
        ids::engine_request_id(&request_id),
        request.token_ids.clone(),
        params,
    );
    engine_request.external_req_id = Some(request_id.clone());
    engine_request.priority = request.priority;
    engine_request.cache_salt = request.cache_salt;
    let generation = Generation::start(&state.client, &state.api.model, engine_request).await?;
    let options = request.stream_options.unwrap_or_default();
    let include_usage = options.include_usage == Some(true);
    Ok((
        Accepted {
            request_id,
            text_mode,
            return_token_ids: request.return_token_ids == Some(true),
            prompt_token_ids: request.token_ids,
            include_usage,
            continuous_usage: include_usage && options.continuous_usage_stats == Some(true),
            generation,
        },
        stream,
    ))
}

/// `GenerateLogProbs`: token ids, logprobs and ranks (tokens mode).
fn token_logprobs(positions: &[PositionLogprobs]) -> Value {
    let entry = |c: &super::generation::Candidate| json!({"token_id": c.id, "logprob": c.logprob, "rank": c.rank});
    let content: Vec<Value> = positions
        .iter()
        .map(|p| {
            let mut e = entry(&p.sampled);
            e["top_logprobs"] = Value::Array(p.candidates.iter().map(entry).collect());
            e
        })
        .collect();
    json!({ "content": content })
}

fn step_logprobs(positions: Option<Vec<PositionLogprobs>>, text_mode: bool) -> Value {
    match positions {
        Some(positions) if text_mode => json!(logprobs::chat(positions, Some(-1))),
        Some(positions) => token_logprobs(&positions),
        None => Value::Null,
    }
}

fn usage(generation: &Generation) -> Value {
    let (p, c) = (generation.num_prompt_tokens, generation.num_output_tokens);
    json!({"prompt_tokens": p, "total_tokens": p + c, "completion_tokens": c, "prompt_tokens_details": null})
}

async fn whole(state: &AppState, mut a: Accepted) -> Result<Value, ApiError> {
    let mut token_ids = Vec::new();
    let mut text = String::new();
    let mut positions = Vec::new();
    let mut wants_logprobs = false;
    let mut finish = None;
    while let Some(step) = a.generation.next().await {
        let step = step.map_err(|e| e.0)?;
        token_ids.extend_from_slice(&step.token_ids);
        text.push_str(&step.text);
        if let Some(p) = step.logprobs {
            wants_logprobs = true;
            positions.extend(p);
        }
        if step.finish.is_some() {
            finish = step.finish;
            break;
        }
    }
    let finish = finish.ok_or_else(|| ApiError::internal("the request ended without a finish"))?;
    let mut choice = json!({
        "index": 0,
        "finish_reason": finish.reason,
        "stop_reason": finish.stop_reason,
        "token_ids": token_ids,
        "routed_experts": null,
        "sampling_mask": null,
        "weight_versions": null,
    });
    if a.text_mode {
        choice["text"] = Value::String(text);
    }
    choice["logprobs"] = step_logprobs(wants_logprobs.then_some(positions), a.text_mode);
    Ok(json!({
        "request_id": a.request_id,
        "model": state.api.served_model_name,
        "created": ids::now_secs(),
        "usage": usage(&a.generation),
        "prompt_logprobs": null,
        "prompt_token_id_logprobs": null,
        "prompt_token_ids": a.return_token_ids.then_some(&a.prompt_token_ids),
        "mm_placeholders": null,
        "metrics": null,
        "kv_transfer_params": null,
        "ec_transfer_params": null,
        "output_mode": if a.text_mode { "text" } else { "tokens" },
        "choices": [choice],
    }))
}

fn stream_frames(a: Accepted) -> impl Stream<Item = String> + Send + 'static {
    let Accepted {
        request_id,
        text_mode,
        return_token_ids,
        prompt_token_ids,
        include_usage,
        continuous_usage,
        mut generation,
    } = a;
    let mode = if text_mode { "text" } else { "tokens" };
    sse::frames(move |tx| async move {
        let mut prompt = return_token_ids.then_some(prompt_token_ids);
        while let Some(step) = generation.next().await {
            let mut step = match step {
                Ok(step) => step,
                Err(error) => {
                    tx.send(format!("data: {}\n\n", error.0.to_json()));
                    break;
                }
            };
            let finished = step.finish.is_some();
            // Terminal outputs always go out; text mode also sends text held back
            // for stop strings, which can arrive without tokens.
            let has_text = text_mode && !step.text.is_empty();
            if step.token_ids.is_empty() && !finished && !has_text {
                continue;
            }
            let mut choice = json!({"index": 0});
            if text_mode {
                choice["text"] = Value::String(step.text.clone());
            }
            choice["finish_reason"] = step
                .finish
                .as_ref()
                .map_or(Value::Null, |f| Value::from(f.reason));
            choice["stop_reason"] = step
                .finish
                .as_ref()
                .and_then(|f| f.stop_reason.clone())
                .unwrap_or(Value::Null);
            choice["token_ids"] = json!(step.token_ids);
            choice["routed_experts"] = Value::Null;
            choice["sampling_mask"] = Value::Null;
            choice["weight_versions"] = Value::Null;
            choice["logprobs"] = step_logprobs(step.logprobs.take(), text_mode);
            let mut chunk = json!({
                "request_id": request_id,
                "usage": if continuous_usage { usage(&generation) } else { Value::Null },
            });
            if let Some(ids) = prompt.take() {
                chunk["prompt_token_ids"] = json!(ids);
                chunk["mm_placeholders"] = Value::Null;
            }
            chunk["output_mode"] = Value::from(mode);
            chunk["choices"] = json!([choice]);
            tx.send(format!("data: {chunk}\n\n"));
            if finished {
                if include_usage {
                    let mut u = usage(&generation);
                    if let Some(map) = u.as_object_mut() {
                        map.remove("prompt_tokens_details");
                    }
                    tx.send(format!(
                        "data: {}\n\n",
                        json!({"request_id": request_id, "usage": u, "output_mode": mode, "choices": []})
                    ));
                }
                break;
            }
        }
        tx.send(sse::DONE.to_owned());
    })
}
