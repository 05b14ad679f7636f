//! The engine's `SamplingParams` for an OpenAI request, as vLLM builds them.
//!
//! vllm-chat's render mode already resolves a request's sampling parameters as vLLM's
//! `to_sampling_params` does (request values, then `generation_config.json` defaults,
//! then OpenAI defaults; `max_tokens` capped by the context). This module checks them
//! with the messages of vLLM's `SamplingParams._verify_args`, converts them to the wire
//! type and adds what vLLM's input processor adds: the EOS token and the extra EOS ids
//! of `generation_config.json`.

use crate::render_mode;
use serde_json::Value as Json;
use vllm_client::Map;
use vllm_client::Value;
use vllm_client::protocol::{RequestOutputKind, SamplingParams, StructuredOutputsParams};

use super::error::ApiError;
use super::model::Model;

fn invalid(message: String, param: &str) -> ApiError {
    ApiError::bad_request(message, Some(param))
}

/// vLLM's `SamplingParams._verify_args` (vllm-chat's [`render_mode::SamplingParams::verify`],
/// also applied by render mode), then `SamplingParams.verify`'s logprob and vocabulary
/// checks, on resolved parameters: `/inference/v1/generate` takes its parameters without
/// render mode. Token ids outside the model's vocabulary would index past the engine's
/// logits, so they never reach it.
fn verify(
    p: &render_mode::SamplingParams,
    max_logprobs: i64,
    vocab_size: u64,
) -> Result<(), ApiError> {
    p.verify()?;
    check_logprobs("sample", "logprobs", p.logprobs, max_logprobs, vocab_size)?;
    check_logprobs(
        "prompt",
        "prompt_logprobs",
        p.prompt_logprobs,
        max_logprobs,
        vocab_size,
    )?;
    let out_of_vocab = |id: i64| id < 0 || id as u64 >= vocab_size;
    let logit_bias_ids: Vec<i64> = p
        .logit_bias
        .iter()
        .flatten()
        .filter_map(|(key, _)| key.parse::<i64>().ok())
        .filter(|&id| out_of_vocab(id))
        .collect();
    if !logit_bias_ids.is_empty() {
        return Err(vocab_error("logit_bias", &logit_bias_ids, vocab_size));
    }
    let stop_ids: Vec<i64> = p
        .stop_token_ids
        .iter()
        .map(|&id| i64::from(id))
        .filter(|&id| out_of_vocab(id))
        .collect();
    if !stop_ids.is_empty() {
        return Err(vocab_error("stop_token_ids", &stop_ids, vocab_size));
    }
    if let Some(allowed) = &p.allowed_token_ids {
        if allowed.is_empty() {
            return Err(invalid(
                "allowed_token_ids is not None and empty! (parameter=allowed_token_ids, value=[])"
                    .into(),
                "allowed_token_ids",
            ));
        }
        let bad: Vec<i64> = allowed
            .iter()
            .map(|&id| i64::from(id))
            .filter(|&id| out_of_vocab(id))
            .collect();
        if !bad.is_empty() {
            return Err(invalid(
                format!(
                    "allowed_token_ids contains out-of-vocab token id! (parameter=allowed_token_ids, value={})",
                    py_list(&bad)
                ),
                "allowed_token_ids",
            ));
        }
    }
    Ok(())
}

/// vLLM's `SamplingParams._validate_logprobs` for sample or prompt logprobs: -1 asks
/// for the whole vocabulary, which `--max-logprobs` (-1: the vocabulary) must allow.
fn check_logprobs(
    kind: &str,
    param: &str,
    requested: Option<i64>,
    max_logprobs: i64,
    vocab_size: u64,
) -> Result<(), ApiError> {
    let vocab = i64::try_from(vocab_size).unwrap_or(i64::MAX);
    let max = if max_logprobs == -1 {
        vocab
    } else {
        max_logprobs
    };
    match requested {
        Some(0) | None => Ok(()),
        Some(l) => {
            let requested = if l == -1 { vocab } else { l };
            if requested > max {
                Err(invalid(
                    format!(
                        "Requested {kind} logprobs of {requested}, which is greater than max allowed: {max}"
                    ),
                    param,
                ))
            } else {
                Ok(())
            }
        }
    }
}

/// vLLM's `_validate_logit_bias` / `_validate_stop_token_ids` error.
fn vocab_error(param: &str, ids: &[i64], vocab_size: u64) -> ApiError {
    let ids = py_list(ids);
    invalid(
        format!(
            "token_id(s) {ids} in {param} contain out-of-vocab token ids. Vocabulary size: {vocab_size} (parameter={param}, value={ids})"
        ),
        param,
    )
}

/// A Python list of ints as `repr` writes it.
fn py_list(ids: &[i64]) -> String {
    let items: Vec<String> = ids.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// A JSON value as the msgpack value vLLM's encoder writes for it.
pub(crate) fn json_to_wire(value: &Json) -> Value {
    match value {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Value::UInt(u),
            (None, Some(i)) => Value::Int(i),
            _ => Value::F64(n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(json_to_wire).collect()),
        Json::Object(map) => Value::Map(
            map.iter()
                .map(|(k, v)| (Value::Str(k.clone()), json_to_wire(v)))
                .collect(),
        ),
    }
}

/// The engine's `StructuredOutputsParams` for the resolved constraints.
fn structured_outputs(
    p: &render_mode::StructuredOutputsParams,
) -> Result<StructuredOutputsParams, ApiError> {
    p.verify()?;
    p.verify_content()?;
    Ok(StructuredOutputsParams {
        json: p.json.as_ref().map_or(Value::Nil, json_to_wire),
        regex: p.regex.clone(),
        choice: p.choice.clone(),
        grammar: p.grammar.clone(),
        json_object: p.json_object,
        disable_any_whitespace: p.disable_any_whitespace,
        disable_additional_properties: p.disable_additional_properties,
        whitespace_pattern: p.whitespace_pattern.clone(),
        structural_tag: p.structural_tag.clone(),
        ..StructuredOutputsParams::default()
    })
}

/// The engine's sampling parameters for resolved render-mode parameters.
///
/// `max_logprobs` is the server's `--max-logprobs`.
pub fn engine_params(
    p: &render_mode::SamplingParams,
    model: &Model,
    max_logprobs: i64,
) -> Result<SamplingParams, ApiError> {
    verify(p, max_logprobs, model.vocab_size)?;
    let mut sp = SamplingParams {
        n: i64::from(p.n),
        presence_penalty: p.presence_penalty,
        frequency_penalty: p.frequency_penalty,
        repetition_penalty: p.repetition_penalty,
        temperature: p.temperature,
        top_p: p.top_p.unwrap_or(1.0),
        top_k: p.top_k,
        min_p: p.min_p.unwrap_or(0.0),
        seed: p.seed,
        stop: p.stop.clone(),
        stop_token_ids: p.stop_token_ids.iter().map(|&id| i64::from(id)).collect(),
        ignore_eos: p.ignore_eos,
        max_tokens: Some(p.max_tokens),
        min_tokens: p.min_tokens,
        logprobs: p.logprobs.map(|l| if l == -1 { max_logprobs } else { l }),
        prompt_logprobs: p
            .prompt_logprobs
            .map(|l| if l == -1 { max_logprobs } else { l }),
        skip_special_tokens: p.skip_special_tokens,
        spaces_between_special_tokens: p.spaces_between_special_tokens,
        include_stop_str_in_output: p.include_stop_str_in_output,
        output_kind: match p.output_kind {
            0 => RequestOutputKind::Cumulative,
            1 => RequestOutputKind::Delta,
            _ => RequestOutputKind::FinalOnly,
        },
        stream_interval: p.stream_interval,
        skip_clone: true,
        structured_outputs: p
            .structured_outputs
            .as_ref()
            .map(structured_outputs)
            .transpose()?,
        logit_bias: p.logit_bias.as_ref().map(logit_bias).transpose()?,
        allowed_token_ids: p
            .allowed_token_ids
            .as_ref()
            .map(|ids| ids.iter().map(|&id| i64::from(id)).collect()),
        extra_args: p
            .extra_args
            .as_ref()
            .map(|m| json_to_wire(&Json::Object(m.clone()))),
        bad_words: p.bad_words.clone(),
        ..SamplingParams::default()
    };
    sp.apply_post_init();
    if let Some(eos) = model.eos_token_id {
        sp.set_eos_token_id(i64::from(eos));
    }
    // `update_from_generation_config`: the other EOS ids stop generation too.
    for &id in &model.extra_eos_token_ids {
        let id = i64::from(id);
        if !sp.all_stop_token_ids.contains(&id) {
            sp.all_stop_token_ids.push(id);
        }
        if !sp.ignore_eos && !sp.stop_token_ids.contains(&id) {
            sp.stop_token_ids.push(id);
        }
    }
    Ok(sp)
}

fn logit_bias(map: &serde_json::Map<String, Json>) -> Result<Map<i64, f64>, ApiError> {
    let mut out = Vec::with_capacity(map.len());
    for (token, bias) in map {
        let id = token.parse::<i64>().map_err(|_| {
            ApiError::bad_request(
                format!("logit_bias key {token:?} is not a token id"),
                Some("logit_bias"),
            )
        })?;
        let bias = bias.as_f64().ok_or_else(|| {
            ApiError::bad_request(
                format!("logit_bias value for {token} is not a number"),
                Some("logit_bias"),
            )
        })?;
        out.push((id, bias.clamp(-100.0, 100.0)));
    }
    Ok(Map(out))
}
