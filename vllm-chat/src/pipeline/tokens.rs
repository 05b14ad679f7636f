//! The engine-free requests of vLLM's server: `/tokenize`, `/detokenize` and the model
//! list, answered from the [`Model`] alone (a render-only server needs no engine).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::ApiError;
use super::{Model, check_model, ids};
use crate::openai::ChatCompletionRequest;

/// The answer of `/tokenize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenizeResponse {
    /// How many tokens.
    pub count: usize,
    /// The model's context length.
    pub max_model_len: u64,
    /// The token ids.
    pub tokens: Vec<u32>,
    /// Their vocabulary pieces, with `return_token_strs`.
    pub token_strs: Option<Vec<String>>,
}

/// The answer of `/detokenize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DetokenizeResponse {
    /// The text.
    pub prompt: String,
}

/// `/tokenize`: a completion-style `{"prompt"}` or chat-style `{"messages"}` JSON body,
/// tokenized (chat bodies rendered first) by `model` served as `served_model_name`.
pub fn tokenize(
    model: &Model,
    served_model_name: &str,
    body: &[u8],
) -> Result<TokenizeResponse, ApiError> {
    /// The fields that decide the request's shape; a chat body is then parsed once
    /// more, straight into its type (no `Value` tree of a huge prompt).
    #[derive(Deserialize)]
    struct Shape<'a> {
        #[serde(default)]
        model: Option<Value>,
        #[serde(default)]
        messages: Option<serde::de::IgnoredAny>,
        #[serde(default, borrow)]
        prompt: Option<PromptField<'a>>,
        #[serde(default)]
        add_special_tokens: Option<Value>,
        #[serde(default)]
        return_token_strs: Option<Value>,
    }
    /// `prompt`, borrowed from the body when it has no escapes.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum PromptField<'a> {
        Text(#[serde(borrow)] std::borrow::Cow<'a, str>),
        Other(serde::de::IgnoredAny),
    }
    let shape: Shape = serde_json::from_slice(body)?;
    check_model(served_model_name, shape.model.as_ref())?;
    let return_token_strs = shape
        .return_token_strs
        .as_ref()
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let renderer = &model.renderer;
    let tokens = if shape.messages.is_some() {
        let request: ChatCompletionRequest = serde_json::from_slice(body)?;
        renderer.render_token_ids(&request)?
    } else {
        let Some(PromptField::Text(prompt)) = &shape.prompt else {
            return Err(ApiError::bad_request(
                "`prompt` (a string) or `messages` is required",
                Some("prompt"),
            ));
        };
        let add_special_tokens = shape
            .add_special_tokens
            .as_ref()
            .and_then(Value::as_bool)
            .unwrap_or(true);
        renderer.encode(prompt, add_special_tokens)?
    };
    let token_strs = return_token_strs.then(|| {
        tokens
            .iter()
            .map(|&t| model.tokenizer.token_piece(t).unwrap_or_default())
            .collect()
    });
    Ok(TokenizeResponse {
        count: tokens.len(),
        max_model_len: model.max_model_len(),
        tokens,
        token_strs,
    })
}

/// `/detokenize`: `{"tokens": [...]}` decoded (special tokens kept), ids outside the
/// vocabulary refused.
pub fn detokenize(
    model: &Model,
    served_model_name: &str,
    body: &[u8],
) -> Result<DetokenizeResponse, ApiError> {
    #[derive(Deserialize)]
    struct Request {
        #[serde(default)]
        model: Option<Value>,
        tokens: Vec<u32>,
    }
    let request: Request = serde_json::from_slice(body)?;
    check_model(served_model_name, request.model.as_ref())?;
    if let Some(bad) = request
        .tokens
        .iter()
        .find(|&&t| t as usize >= model.tokenizer.vocab_size())
    {
        return Err(ApiError::bad_request(
            format!("Token id {bad} is out of vocabulary"),
            Some("tokens"),
        ));
    }
    let prompt = model
        .tokenizer
        .decode(&request.tokens, false)
        .map_err(|e| ApiError::bad_request(e.to_string(), Some("tokens")))?;
    Ok(DetokenizeResponse { prompt })
}

/// `/v1/models`: vLLM's `ModelList`: the served model (`root` is the model directory
/// as the server reports it), then one card per LoRA adapter (`root` its path, `parent`
/// its base model or the served model), as `OpenAIServingModels.show_available_models`.
pub fn model_list(
    served_model_name: &str,
    root: &str,
    max_model_len: u64,
    adapters: &[vllm_client::protocol::LoRARequest],
) -> Value {
    let created = ids::now_secs();
    let card = |id: &str, root: &str, parent: Value, max_model_len: Value| {
        json!({
            "id": id,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": root,
            "parent": parent,
            "max_model_len": max_model_len,
            "permission": [{
                "id": format!("modelperm-{}", ids::random_hex()),
                "object": "model_permission",
                "created": created,
                "allow_create_engine": false,
                "allow_sampling": true,
                "allow_logprobs": true,
                "allow_search_indices": false,
                "allow_view": true,
                "allow_fine_tuning": false,
                "organization": "*",
                "group": null,
                "is_blocking": false,
            }],
        })
    };
    let mut data = vec![card(
        served_model_name,
        root,
        Value::Null,
        json!(max_model_len),
    )];
    for adapter in adapters {
        let parent = adapter
            .base_model_name
            .clone()
            .unwrap_or_else(|| served_model_name.to_owned());
        data.push(card(
            &adapter.lora_name,
            &adapter.lora_path,
            json!(parent),
            Value::Null,
        ));
    }
    json!({ "object": "list", "data": data })
}
