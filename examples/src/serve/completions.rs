//! `POST /v1/completions`, streamed and whole, as vLLM's `OpenAIServingCompletion`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use vllm_chat::openai::{
    CompletionChoice, CompletionChunk, CompletionChunkChoice, CompletionPrompt, CompletionRequest,
    CompletionResponse, Emit, Usage,
};
use vllm_client::protocol::EngineCoreRequest;

use super::error::ApiError;
use super::generation::Generation;
use super::logprobs::CompletionLogprobs;
use super::state::AppState;
use super::{ids, routing, sampling, sse};

struct Accepted {
    request: CompletionRequest,
    id: String,
    prompt_token_ids: Vec<u32>,
    /// The prompt's text, for `echo`.
    prompt_text: String,
    generation: Generation,
}

/// The handler.
pub async fn create(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let accepted = match accept(&state, &headers, &body).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    if accepted.request.stream == Some(true) {
        sse::response(stream(state, accepted))
    } else {
        match whole(&state, accepted).await {
            Ok(response) => axum::Json(response).into_response(),
            Err(e) => e.into_response(),
        }
    }
}

async fn accept(state: &AppState, headers: &HeaderMap, body: &Bytes) -> Result<Accepted, ApiError> {
    let request: CompletionRequest = serde_json::from_slice(body)?;
    if request.n.is_some_and(|n| n > 1) {
        return Err(ApiError::bad_request(
            "n > 1 is not supported by this server.",
            Some("n"),
        ));
    }
    if matches!(&request.prompt, CompletionPrompt::Texts(v) if v.len() > 1)
        || matches!(&request.prompt, CompletionPrompt::TokenBatches(v) if v.len() > 1)
    {
        return Err(ApiError::bad_request(
            "batched prompts are not supported by this server; send one prompt per request.",
            Some("prompt"),
        ));
    }
    if request.echo && request.max_tokens == Some(0) {
        return Err(ApiError::bad_request(
            "echo with max_tokens=0 is not supported by this server.",
            Some("max_tokens"),
        ));
    }
    let mut generated = state.api.model.renderer.render_completion(&request)?;
    let generate = generated
        .pop()
        .ok_or_else(|| ApiError::bad_request("Prompt cannot be empty", Some("prompt")))?;
    let params = sampling::engine_params(
        &generate.sampling_params,
        &state.api.model,
        state.max_logprobs,
    )?;
    let prompt_text = match request.prompt.prompts().first() {
        Some(vllm_chat::openai::PromptInput::Text(text)) => (*text).to_owned(),
        _ => state
            .api
            .model
            .tokenizer
            .decode(&generate.token_ids, false)
            .unwrap_or_default(),
    };
    let prompt_token_ids = generate.token_ids.clone();
    let mut engine_request = EngineCoreRequest::new(
        ids::engine_request_id(&generate.request_id),
        generate.token_ids,
        params,
    );
    engine_request.external_req_id = Some(generate.request_id.clone());
    engine_request.priority = request.priority;
    engine_request.cache_salt = request.cache_salt.clone();
    engine_request.data_parallel_rank = routing::data_parallel_rank(headers)?;
    let generation = Generation::start(&state.client, &state.api.model, engine_request).await?;
    Ok(Accepted {
        request,
        id: generate.request_id,
        prompt_token_ids,
        prompt_text,
        generation,
    })
}

async fn whole(state: &AppState, mut a: Accepted) -> Result<CompletionResponse, ApiError> {
    let mut text = if a.request.echo {
        a.prompt_text.clone()
    } else {
        String::new()
    };
    let mut logprobs = CompletionLogprobs::starting_at(0);
    let mut token_ids = Vec::new();
    let mut finish = None;
    while let Some(step) = a.generation.next().await {
        let step = step.map_err(|e| e.0)?;
        text.push_str(&step.text);
        token_ids.extend_from_slice(&step.token_ids);
        if let (Some(positions), Some(n)) = (&step.logprobs, a.request.logprobs) {
            logprobs.extend(positions, n);
        }
        if step.finish.is_some() {
            finish = step.finish;
            break;
        }
    }
    let finish = finish.ok_or_else(|| ApiError::internal("the request ended without a finish"))?;
    let return_token_ids = a.request.return_token_ids == Some(true);
    Ok(CompletionResponse {
        id: a.id,
        object: "text_completion",
        created: ids::now_secs(),
        model: state.api.served_model_name.clone(),
        choices: vec![CompletionChoice {
            index: 0,
            text,
            logprobs: a.request.logprobs.map(|_| logprobs.take()),
            finish_reason: Some(finish.reason.into()),
            stop_reason: finish.stop_reason,
            token_ids: return_token_ids.then_some(token_ids),
            prompt_logprobs: None,
            prompt_token_ids: return_token_ids.then_some(a.prompt_token_ids),
            routed_experts: None,
            weight_versions: None,
        }],
        service_tier: None,
        system_fingerprint: None,
        usage: Usage::new(
            a.generation.num_prompt_tokens as u64,
            a.generation.num_output_tokens as u64,
        ),
        kv_transfer_params: None,
        ec_transfer_params: None,
        metrics: None,
    })
}

fn stream(state: AppState, a: Accepted) -> impl Stream<Item = String> + Send + 'static {
    let options = a.request.stream_options.clone().unwrap_or_default();
    let include_usage = options.include_usage == Some(true);
    let continuous_usage = include_usage && options.continuous_usage_stats == Some(true);
    let model = state.api.served_model_name.clone();
    let created = ids::now_secs();
    let Accepted {
        request,
        id,
        prompt_token_ids,
        prompt_text,
        mut generation,
    } = a;
    let return_token_ids = request.return_token_ids == Some(true);
    sse::frames(move |tx| async move {
        let mut echo = request.echo.then_some(prompt_text);
        let mut prompt_ids_sent = false;
        let mut logprobs = CompletionLogprobs::starting_at(0);
        while let Some(step) = generation.next().await {
            let step = match step {
                Ok(step) => step,
                Err(error) => {
                    tx.send(format!("data: {}\n\n", error.0.to_json()));
                    break;
                }
            };
            let mut text = echo.take().unwrap_or_default();
            text.push_str(&step.text);
            if text.is_empty()
                && step.token_ids.is_empty()
                && generation.num_output_tokens == 0
                && step.finish.is_none()
            {
                continue;
            }
            let chunk_logprobs = match (&step.logprobs, request.logprobs) {
                (Some(positions), Some(n)) => {
                    logprobs.extend(positions, n);
                    Some(logprobs.take())
                }
                _ => None,
            };
            let send_prompt_ids = return_token_ids && !prompt_ids_sent;
            prompt_ids_sent |= send_prompt_ids;
            let finished = step.finish.is_some();
            let mut chunk = CompletionChunk::delta(
                &id,
                created,
                &model,
                CompletionChunkChoice {
                    index: 0,
                    text,
                    logprobs: chunk_logprobs,
                    finish_reason: step.finish.as_ref().map(|f| f.reason.to_owned()),
                    stop_reason: step.finish.and_then(|f| f.stop_reason),
                    prompt_token_ids: send_prompt_ids.then(|| prompt_token_ids.clone()),
                    token_ids: return_token_ids.then_some(step.token_ids),
                    weight_versions: None,
                },
            );
            if continuous_usage {
                chunk.usage = Emit::value(Usage::new(
                    generation.num_prompt_tokens as u64,
                    generation.num_output_tokens as u64,
                ));
            }
            tx.send(sse::frame(&chunk, &[]));
            if finished {
                if include_usage {
                    let chunk = CompletionChunk::usage(
                        &id,
                        created,
                        &model,
                        Usage::new(
                            generation.num_prompt_tokens as u64,
                            generation.num_output_tokens as u64,
                        ),
                        None,
                    );
                    tx.send(sse::frame(&chunk, &[]));
                }
                break;
            }
        }
        tx.send(sse::DONE.to_owned());
    })
}
