//! Render mode against vLLM: `tests/fixtures/render_mode.json` holds the
//! `GenerateRequest`s vLLM 0.33.0's classes build for a few chat and completion
//! requests (scripts/gen_render_fixtures.py); ours must serialize identically.

mod common;

use serde_json::Value;
use vllm_chat::openai::{ChatCompletionRequest, CompletionRequest, ErrorResponse};
use vllm_chat::render_mode::SamplingParams;
use vllm_chat::{ChatRenderer, ModelFiles, RenderError, RendererOptions};

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/render_mode.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture json")
}

fn renderer(model: &str, max_model_len: Option<u64>) -> (common::ModelDir, ChatRenderer) {
    let dir = common::ModelDir::new(model).expect("testdata model");
    let options = RendererOptions {
        served_model_name: Some(model.to_owned()),
        max_model_len,
        ..Default::default()
    };
    let renderer = ChatRenderer::new(ModelFiles::from_dir(&dir.0).expect("model files"), options)
        .expect("renderer");
    (dir, renderer)
}

/// Our answer as vLLM's server writes it: the body, or the error body.
fn answer<T: serde::Serialize>(result: Result<T, RenderError>) -> Value {
    match result {
        Ok(body) => serde_json::to_value(body).unwrap(),
        Err(err) => serde_json::to_value(ErrorResponse::from_render_error(&err)).unwrap(),
    }
}

/// Every case of `kind` rendered by `render`, compared with vLLM's answer (values
/// and field order); returns how many cases were checked.
fn check_cases(kind: &str, render: impl Fn(&ChatRenderer, &Value) -> Value) -> usize {
    let fixture = fixture();
    let model = fixture["model"].as_str().unwrap();
    let (_dir, default_renderer) = renderer(model, None);
    let cases = fixture[kind].as_array().unwrap();
    for case in cases {
        let limited = case["max_model_len"]
            .as_u64()
            .map(|len| renderer(model, Some(len)));
        let renderer = limited.as_ref().map_or(&default_renderer, |(_, r)| r);
        let ours = render(renderer, &case["request"]);
        let id = &case["request"]["request_id"];
        assert_eq!(ours, case["response"], "request {id}");
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&case["response"]).unwrap(),
            "field order, request {id}"
        );
    }
    cases.len()
}

#[test]
fn chat_render_matches_vllm() {
    let checked = check_cases("chat", |renderer, request| {
        let request: ChatCompletionRequest = serde_json::from_value(request.clone()).unwrap();
        answer(renderer.render_chat(&request))
    });
    assert!(checked >= 40, "{checked} chat cases");
}

#[test]
fn completion_render_matches_vllm() {
    let checked = check_cases("completion", |renderer, request| {
        let request: CompletionRequest = serde_json::from_value(request.clone()).unwrap();
        answer(renderer.render_completion(&request))
    });
    assert!(checked >= 15, "{checked} completion cases");
}

/// The sampling parameters vLLM wrote read back into ours and serialize to the same text.
#[test]
fn sampling_params_round_trip() {
    let fixture = fixture();
    let mut checked = 0;
    for kind in ["chat", "completion"] {
        for case in fixture[kind].as_array().unwrap() {
            let responses = match &case["response"] {
                Value::Array(list) => list.clone(),
                one if one.get("error").is_none() => vec![one.clone()],
                _ => continue,
            };
            for response in responses {
                let theirs = &response["sampling_params"];
                let ours: SamplingParams = serde_json::from_value(theirs.clone()).unwrap();
                ours.verify().unwrap();
                assert_eq!(
                    serde_json::to_string(&ours).unwrap(),
                    serde_json::to_string(theirs).unwrap()
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} round trips");
}

#[test]
fn another_model_name_is_refused() {
    let (_dir, renderer) = renderer("qwen3", None);
    let request: ChatCompletionRequest = serde_json::from_str(
        r#"{"model": "other", "messages": [{"role": "user", "content": "hi"}]}"#,
    )
    .unwrap();
    let err = renderer.render_chat(&request).unwrap_err();
    assert!(
        matches!(err, RenderError::ModelNotFound(ref m) if m == "other"),
        "{err}"
    );
}

/// Chunks and bodies built as vLLM's serving code builds them (fixture made by vLLM's
/// pydantic models, dumped as vLLM dumps them).
#[test]
fn response_shapes_match_vllm() {
    use vllm_chat::openai::*;
    let shapes = &fixture()["shapes"];
    let json = |v: &dyn erased::Ser| v.json();
    let first = ChatCompletionChunk::first("chatcmpl-1", 7, "m", 0, None);
    assert_eq!(json(&first), shapes["chunk_first"]);
    let delta = DeltaMessage {
        content: Emit::value("Hi".into()),
        ..Default::default()
    };
    let chunk = ChatCompletionChunk::delta("chatcmpl-1", 7, "m", ChatChunkChoice::new(0, delta));
    assert_eq!(json(&chunk), shapes["chunk_delta"]);
    let echo = ChatCompletionChunk::echo("chatcmpl-1", 7, "m", 0, "Hello".into());
    assert_eq!(json(&echo), shapes["chunk_echo"]);
    let delta = DeltaMessage {
        content: Emit::value("!".into()),
        ..Default::default()
    };
    let mut last = ChatChunkChoice::new(0, delta);
    last.finish_reason = Emit::value("stop".into());
    last.stop_reason = Emit::null();
    last.token_ids = Emit::value(vec![0]);
    last.weight_versions = Emit::null();
    let last = ChatCompletionChunk::delta("chatcmpl-1", 7, "m", last);
    assert_eq!(json(&last), shapes["chunk_last"]);
    let usage = ChatCompletionChunk::usage("chatcmpl-1", 7, "m", Usage::new(3, 2), None);
    assert_eq!(json(&usage), shapes["chunk_usage"]);

    let choice = CompletionChunkChoice {
        index: 0,
        text: "Hi".into(),
        logprobs: None,
        finish_reason: None,
        stop_reason: None,
        prompt_token_ids: Some(vec![1, 2]),
        token_ids: Some(vec![3]),
        weight_versions: None,
    };
    let chunk = CompletionChunk::delta("cmpl-1", 7, "m", choice);
    assert_eq!(json(&chunk), shapes["completion_chunk"]);
    let usage = CompletionChunk::usage("cmpl-1", 7, "m", Usage::new(3, 2), None);
    assert_eq!(json(&usage), shapes["completion_chunk_usage"]);
    let body = CompletionResponse {
        id: "cmpl-1".into(),
        object: "text_completion",
        created: 7,
        model: "m".into(),
        choices: vec![CompletionChoice {
            index: 0,
            text: "Hi!".into(),
            logprobs: None,
            finish_reason: Some("length".into()),
            stop_reason: None,
            token_ids: None,
            prompt_logprobs: None,
            prompt_token_ids: None,
            routed_experts: None,
            weight_versions: None,
        }],
        service_tier: None,
        system_fingerprint: None,
        usage: Usage::new(3, 2),
        kv_transfer_params: None,
        ec_transfer_params: None,
        metrics: None,
    };
    assert_eq!(json(&body), shapes["completion_response"]);
    assert_eq!(
        serde_json::to_string(&body).unwrap(),
        serde_json::to_string(&shapes["completion_response"]).unwrap(),
        "field order"
    );
    let call = ToolCall {
        id: "call_1".into(),
        kind: "function".into(),
        function: FunctionCall {
            name: "f".into(),
            arguments: "{}".into(),
        },
    };
    let body = ChatCompletionResponse {
        id: "chatcmpl-1".into(),
        object: "chat.completion",
        created: 7,
        model: "m".into(),
        choices: vec![ChatChoice {
            index: 0,
            message: ResponseMessage::assistant(None, Some("r".into()), vec![call]),
            logprobs: None,
            finish_reason: Some("tool_calls".into()),
            stop_reason: None,
            token_ids: None,
            routed_experts: None,
            weight_versions: None,
        }],
        service_tier: None,
        system_fingerprint: None,
        usage: Usage::new(3, 2),
        prompt_logprobs: None,
        prompt_token_ids: None,
        prompt_text: None,
        kv_transfer_params: None,
        ec_transfer_params: None,
        metrics: None,
    };
    assert_eq!(json(&body), shapes["chat_response"]);
    assert_eq!(
        serde_json::to_string(&body).unwrap(),
        serde_json::to_string(&shapes["chat_response"]).unwrap(),
        "field order"
    );
}

/// Object-safe "serialize to a JSON value" for the assertions above.
mod erased {
    pub trait Ser {
        fn json(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap()
        }
    }
}

/// `reasoning_ended` as vLLM's `resolve_reasoning_ended` gives it. The renderer alone
/// has no reasoning parser: `null`, or `true` when the request hides reasoning, and no
/// `reasoning_parser_kwargs`.
#[test]
fn without_a_reasoning_parser_reasoning_ends_only_when_hidden() {
    let (_dir, renderer) = renderer("qwen3", None);
    let request: ChatCompletionRequest = serde_json::from_value(serde_json::json!({
        "messages": [{"role": "user", "content": "hi"}],
        "chat_template_kwargs": {"enable_thinking": false}
    }))
    .unwrap();
    let plain = renderer.render_chat(&request).unwrap();
    assert_eq!(plain.reasoning_ended, None);
    assert_eq!(plain.reasoning_parser_kwargs, None);
    let mut hidden = request;
    hidden.include_reasoning = false;
    assert_eq!(
        renderer.render_chat(&hidden).unwrap().reasoning_ended,
        Some(true)
    );
}

/// In front of the server's parsers (`pipeline::render_chat`, the render endpoint and
/// the chat path), `reasoning_parser_kwargs` carries the effective template kwargs and
/// `reasoning_ended` is the reasoning parser's `is_reasoning_end` on the prompt: Qwen3's
/// template closes an empty think block with thinking off, and leaves the turn open
/// with it on; a request hiding reasoning is ended whatever the prompt says.
#[cfg(feature = "pipeline")]
#[test]
fn a_reasoning_parser_resolves_reasoning_ended_from_the_prompt() {
    use serde_json::json;
    use vllm_chat::pipeline::{Model, render_chat};

    let dir = common::ModelDir::new("qwen3").expect("testdata model");
    let model = Model::load(&dir.0, RendererOptions::default()).expect("model");
    let parsers = model
        .serving_parsers(Some("qwen3"), None, false)
        .expect("parsers");
    let request = |kwargs: Value| -> ChatCompletionRequest {
        serde_json::from_value(json!({
            "messages": [{"role": "user", "content": "hi"}],
            "chat_template_kwargs": kwargs,
        }))
        .unwrap()
    };
    for (kwargs, ended) in [
        (json!({"enable_thinking": false}), true),
        (json!({}), false),
    ] {
        let out = render_chat(&model, &parsers, request(kwargs.clone())).unwrap();
        assert_eq!(out.reasoning_ended, Some(ended), "{kwargs}");
        let out = serde_json::to_value(out).unwrap();
        assert_eq!(
            out["reasoning_parser_kwargs"],
            json!({"chat_template_kwargs": out["parse_context"]["chat_template_kwargs"]})
        );
    }
    let mut hidden = request(json!({}));
    hidden.include_reasoning = false;
    let out = render_chat(&model, &parsers, hidden).unwrap();
    assert_eq!(out.reasoning_ended, Some(true));
    // Without parsers: `null`, as the renderer alone answers.
    let none = vllm_chat::pipeline::ServingParsers::none();
    let out = render_chat(&model, &none, request(json!({}))).unwrap();
    assert_eq!(out.reasoning_ended, None);
}

/// An empty encoding reads back to vLLM's defaults, which `Default` also gives.
#[test]
fn sampling_params_default_to_vllms_defaults() {
    let empty: SamplingParams = serde_json::from_str("{}").unwrap();
    assert_eq!(empty, SamplingParams::default());
    assert_eq!((empty.n, empty.max_tokens, empty.temperature), (1, 16, 1.0));
    assert!(empty.skip_special_tokens && empty.spaces_between_special_tokens);
    empty.verify().unwrap();
}
