//! The engine's `SamplingParams` for an OpenAI request, as vLLM builds them.
//!
//! vllm-chat's render mode already resolves a request's sampling parameters as vLLM's
//! `to_sampling_params` does (request values, then `generation_config.json` defaults,
//! then OpenAI defaults; `max_tokens` capped by the context). This module checks them
//! with the messages of vLLM's `SamplingParams._verify_args`, converts them to the wire
//! type and adds what vLLM's input processor adds: the EOS token and the extra EOS ids
//! of `generation_config.json`.

use serde_json::Value as Json;
use vllm_chat::render_mode;
use vllm_client::Map;
use vllm_client::Value;
use vllm_client::protocol::{RequestOutputKind, SamplingParams, StructuredOutputsParams};

use super::error::ApiError;
use super::model::Model;

/// Python's `repr` of a float, for error messages that match vLLM's.
fn py_float(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

fn invalid(message: String, param: &str) -> ApiError {
    ApiError::bad_request(message, Some(param))
}

/// vLLM's `SamplingParams._verify_args` and `verify_logprobs`, on resolved parameters.
fn verify(p: &render_mode::SamplingParams, max_logprobs: i64) -> Result<(), ApiError> {
    if !(-2.0..=2.0).contains(&p.presence_penalty) {
        return Err(invalid(
            format!(
                "presence_penalty must be in [-2, 2], got {}.",
                py_float(p.presence_penalty)
            ),
            "presence_penalty",
        ));
    }
    if !(-2.0..=2.0).contains(&p.frequency_penalty) {
        return Err(invalid(
            format!(
                "frequency_penalty must be in [-2, 2], got {}.",
                py_float(p.frequency_penalty)
            ),
            "frequency_penalty",
        ));
    }
    if !p.repetition_penalty.is_finite() || p.repetition_penalty <= 0.0 {
        return Err(invalid(
            format!(
                "repetition_penalty must be greater than zero, got {}.",
                py_float(p.repetition_penalty)
            ),
            "repetition_penalty",
        ));
    }
    if !p.temperature.is_finite() {
        return Err(invalid(
            format!(
                "temperature must be a finite number, got {}.",
                py_float(p.temperature)
            ),
            "temperature",
        ));
    }
    if p.temperature > 2.0 {
        return Err(invalid(
            format!(
                "temperature must be in [0, 2], got {}.",
                py_float(p.temperature)
            ),
            "temperature",
        ));
    }
    if let Some(top_p) = p.top_p
        && !(top_p > 0.0 && top_p <= 1.0)
    {
        return Err(invalid(
            format!("top_p must be in (0, 1], got {}.", py_float(top_p)),
            "top_p",
        ));
    }
    if p.top_k < -1 {
        return Err(invalid(
            format!("top_k must be 0 (disable), or at least 1, got {}.", p.top_k),
            "top_k",
        ));
    }
    if let Some(min_p) = p.min_p
        && !(0.0..=1.0).contains(&min_p)
    {
        return Err(invalid(
            format!("min_p must be in [0, 1], got {}.", py_float(min_p)),
            "min_p",
        ));
    }
    if p.max_tokens < 1 {
        return Err(invalid(
            format!("max_tokens must be at least 1, got {}.", p.max_tokens),
            "max_tokens",
        ));
    }
    if p.min_tokens < 0 {
        return Err(invalid(
            format!(
                "min_tokens must be greater than or equal to 0, got {}.",
                p.min_tokens
            ),
            "min_tokens",
        ));
    }
    if p.min_tokens > p.max_tokens {
        return Err(invalid(
            format!(
                "min_tokens must be less than or equal to max_tokens={}, got {}.",
                p.max_tokens, p.min_tokens
            ),
            "min_tokens",
        ));
    }
    if let Some(l) = p.logprobs {
        if l < -1 {
            return Err(invalid(
                format!("logprobs must be non-negative or -1, got {l}."),
                "logprobs",
            ));
        }
        let requested = if l == -1 { max_logprobs } else { l };
        if max_logprobs != -1 && requested > max_logprobs {
            return Err(invalid(
                format!(
                    "Requested sample logprobs of {requested}, which is greater than max allowed: {max_logprobs}"
                ),
                "logprobs",
            ));
        }
    }
    if let Some(l) = p.prompt_logprobs {
        // Prompt logprobs are not produced by this server (the engine's prompt logprob
        // tensors are not decoded); refuse rather than answer without them.
        if l != 0 {
            return Err(invalid(
                "prompt_logprobs are not supported by this server.".into(),
                "prompt_logprobs",
            ));
        }
    }
    if p.stop.iter().any(String::is_empty) {
        return Err(invalid(
            "stop cannot contain an empty string.".into(),
            "stop",
        ));
    }
    if p.bad_words.iter().any(String::is_empty) {
        return Err(invalid(
            format!(
                "bad_words cannot contain an empty string. Got bad_words={:?}",
                p.bad_words
            ),
            "bad_words",
        ));
    }
    Ok(())
}

fn json_to_wire(value: &Json) -> Value {
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
    verify(p, max_logprobs)?;
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
        skip_special_tokens: p.skip_special_tokens,
        spaces_between_special_tokens: p.spaces_between_special_tokens,
        include_stop_str_in_output: p.include_stop_str_in_output,
        output_kind: match p.output_kind {
            0 => RequestOutputKind::Cumulative,
            1 => RequestOutputKind::Delta,
            _ => RequestOutputKind::FinalOnly,
        },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python() {
        assert_eq!(py_float(2.0), "2.0");
        assert_eq!(py_float(1.5), "1.5");
        assert_eq!(py_float(-0.25), "-0.25");
    }
}
