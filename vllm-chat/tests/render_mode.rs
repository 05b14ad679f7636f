//! Render mode against vLLM: `tests/fixtures/render_mode.json` holds the
//! `GenerateRequest`s vLLM 0.33.0's classes build for a few chat and completion
//! requests (scripts/gen_render_fixtures.py); ours must serialize identically.

mod common;

use serde_json::Value;
use vllm_chat::openai::{ChatCompletionRequest, CompletionRequest};
use vllm_chat::{ChatRenderer, ModelFiles, RenderError, RendererOptions};

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/render_mode.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture json")
}

fn renderer(model: &str) -> (common::ModelDir, ChatRenderer) {
    let dir = common::ModelDir::new(model).expect("testdata model");
    let options = RendererOptions {
        served_model_name: Some(model.to_owned()),
        ..Default::default()
    };
    let renderer = ChatRenderer::new(ModelFiles::from_dir(&dir.0).expect("model files"), options)
        .expect("renderer");
    (dir, renderer)
}

#[test]
fn chat_render_matches_vllm() {
    let fixture = fixture();
    let (_dir, renderer) = renderer(fixture["model"].as_str().unwrap());
    for case in fixture["chat"].as_array().unwrap() {
        let request: ChatCompletionRequest =
            serde_json::from_value(case["request"].clone()).unwrap();
        let ours = serde_json::to_value(renderer.render_chat(&request).unwrap()).unwrap();
        assert_eq!(
            ours, case["response"],
            "request {}",
            case["request"]["request_id"]
        );
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&case["response"]).unwrap(),
            "field order"
        );
    }
}

#[test]
fn completion_render_matches_vllm() {
    let fixture = fixture();
    let (_dir, renderer) = renderer(fixture["model"].as_str().unwrap());
    for case in fixture["completion"].as_array().unwrap() {
        let request: CompletionRequest = serde_json::from_value(case["request"].clone()).unwrap();
        let ours = serde_json::to_value(renderer.render_completion(&request).unwrap()).unwrap();
        assert_eq!(
            ours, case["response"],
            "request {}",
            case["request"]["request_id"]
        );
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&case["response"]).unwrap(),
            "field order"
        );
    }
}

#[test]
fn another_model_name_is_refused() {
    let (_dir, renderer) = renderer("qwen3");
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
    let usage = ChatCompletionChunk::usage("chatcmpl-1", 7, "m", Usage::new(3, 2), None);
    assert_eq!(json(&usage), shapes["chunk_usage"]);
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
