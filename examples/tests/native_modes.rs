//! `serve --tokenizer-mode`: chat, render and `/tokenize` go through the mode's
//! renderer, with the token ids vLLM's own renderer produced for the same request
//! (`vllm-chat/tests/fixtures/native.json.gz`, `mistral.json.gz`); a Mistral model
//! directory (tekken vocabulary, no `tokenizer.json`) is served with `auto`; Cohere with
//! `--tokenizer-mode cohere`.

mod common;
/// vllm-chat's vendored model directories (tokenizer overlays applied).
#[path = "../../vllm-chat/tests/common/mod.rs"]
mod vendored;

use std::path::PathBuf;

use common::*;
use hyper::StatusCode;
use serde_json::{Value, json};
use vllm_chat::TokenizerMode;
use vllm_examples::serve::{ServeConfig, Server};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A gzipped file of the repository.
fn gunzip(path: &str) -> Vec<u8> {
    vendored::gunzip(&repo().join(path))
}

fn fixture(mode: &str, case: &str) -> Value {
    let all: Value =
        serde_json::from_slice(&gunzip("vllm-chat/tests/fixtures/native.json.gz")).expect("json");
    all["modes"][mode]["cases"][case].clone()
}

#[test]
fn deepseek_v32_mode_serves_vllms_token_ids() {
    serves_vllms_token_ids(
        "deepseek_v32",
        TokenizerMode::DeepseekV32,
        "deepseek_v3",
        &["tool_calls_results_thinking", "multi_turn", "unicode"],
        "developer_empty",
    );
}

#[test]
fn cohere_mode_serves_vllms_token_ids() {
    serves_vllms_token_ids(
        "cohere",
        TokenizerMode::Cohere,
        "cohere_command_synth",
        &[
            "tool_calls_results",
            "documents_request",
            "thinking_on",
            "unicode",
        ],
        "grounding_bad",
    );
}

/// `serve --tokenizer-mode MODE` on `testdata/models/MODEL`: `/tokenize`, render and
/// chat give the ids vLLM's renderer gave for each of `cases`, and the request vLLM
/// refused (`refused`) is a 400 with its message.
fn serves_vllms_token_ids(
    mode_name: &str,
    mode: TokenizerMode,
    model: &str,
    cases: &[&str],
    refused: &str,
) {
    let dir = vendored::ModelDir::new(model).expect("vendored model");
    let server = start(ServeConfig {
        model_dir: dir.0.clone(),
        served_model_name: "m".into(),
        tokenizer_mode: mode,
        ..config("Hi.")
    });
    let addr = server.addr;
    run(async move {
        for case in cases {
            let case = fixture(mode_name, case);
            let want: Vec<u64> = serde_json::from_value(case["ids"].clone()).expect("ids");
            let mut body = case["request"].clone();
            body["model"] = json!("m");

            let (status, tokenized) = post(addr, "/tokenize", body.clone()).await;
            assert_eq!(status, StatusCode::OK, "{tokenized}");
            assert_eq!(tokenized["tokens"], json!(want));

            if body.get("tools").is_some() {
                // For render and chat (as in vLLM), `auto` needs a tool parser; `none`
                // renders the same prompt.
                body["tool_choice"] = json!("none");
            }
            let (status, rendered) = post(addr, "/v1/chat/completions/render", body.clone()).await;
            assert_eq!(status, StatusCode::OK, "{rendered}");
            assert_eq!(rendered["token_ids"], json!(want));

            body["max_tokens"] = json!(4);
            let (status, answer) = post(addr, "/v1/chat/completions", body).await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            assert_eq!(answer["usage"]["prompt_tokens"], json!(want.len()));
        }
        // vLLM's encoder errors are 400s with its message.
        let case = fixture(mode_name, refused);
        let mut body = case["request"].clone();
        body["model"] = json!("m");
        let (status, error) = post(addr, "/v1/chat/completions", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
        let want = case["error"].as_str().expect("error");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(want.ends_with(message) && !message.is_empty(), "{error}");
    });
}

#[test]
fn gpt_oss_starts_with_harmony() {
    let config = ServeConfig {
        model_dir: repo().join("testdata/models/gptoss"),
        ..config("Hi.")
    };
    if let Err(error) = runtime().block_on(Server::bind(config)) {
        panic!("gpt-oss serves with Harmony: {error:#}");
    }
}

/// The Mistral case `name` of `vllm-chat/tests/fixtures/mistral.json.gz` on the
/// vendored tekken v3 vocabulary (vLLM's `MistralRenderer` through mistral-common).
fn mistral_case(name: &str) -> Value {
    let all: Value =
        serde_json::from_slice(&gunzip("vllm-chat/tests/fixtures/mistral.json.gz")).expect("json");
    all["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|case| case["vocab"] == "tekken_v3" && case["name"] == name)
        .unwrap_or_else(|| panic!("no tekken_v3 case {name}"))
        .clone()
}

/// A Mistral model directory (only `tekken.json`, no `tokenizer.json`) is served
/// with vLLM's Mistral renderer: chat, render and `/tokenize` give mistral-common's
/// ids, the reply is decoded with the same vocabulary, and mistral-common's
/// refusals are 400s with its message.
#[test]
fn mistral_directory_serves_mistral_commons_token_ids() {
    let dir = std::env::temp_dir().join(format!("serve-mistral-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tekken = gunzip("testdata/models/mistral_tekken/tekken.json.gz");
    std::fs::write(dir.join("tekken.json"), tekken).expect("write tekken");

    let server = start(ServeConfig {
        model_dir: dir.clone(),
        served_model_name: "mistral".into(),
        ..config("Bonjour — ça va ? 🙂")
    });
    let addr = server.addr;
    run(async move {
        for name in [
            "system_multi_turn",
            "tools_call_result",
            "unicode",
            "continue_final_message",
        ] {
            let case = mistral_case(name);
            let want: Vec<u64> = serde_json::from_value(case["token_ids"].clone()).expect("ids");
            let mut body = case["request"].clone();
            body["model"] = json!("mistral");

            let (status, tokenized) = post(addr, "/tokenize", body.clone()).await;
            assert_eq!(status, StatusCode::OK, "{name}: {tokenized}");
            assert_eq!(tokenized["tokens"], json!(want), "{name}");

            let (status, rendered) = post(addr, "/v1/chat/completions/render", body.clone()).await;
            assert_eq!(status, StatusCode::OK, "{name}: {rendered}");
            assert_eq!(rendered["token_ids"], json!(want), "{name}");

            body["max_tokens"] = json!(64);
            if body.get("tools").is_some() {
                body["tool_choice"] = json!("none");
            }
            let (status, answer) = post(addr, "/v1/chat/completions", body).await;
            assert_eq!(status, StatusCode::OK, "{name}: {answer}");
            assert_eq!(
                answer["usage"]["prompt_tokens"],
                json!(want.len()),
                "{name}"
            );
            assert_eq!(
                answer["choices"][0]["message"]["content"],
                json!("Bonjour — ça va ? 🙂"),
                "{name}: {answer}"
            );
        }
        for name in ["err_chat_template", "assistant_last_no_generation_prompt"] {
            let case = mistral_case(name);
            let mut body = case["request"].clone();
            body["model"] = json!("mistral");
            let (status, error) = post(addr, "/v1/chat/completions", body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {error}");
            let want = case["error"].as_str().expect("error");
            assert_eq!(error["error"]["message"], json!(want), "{name}: {error}");
        }
    });
    std::fs::remove_dir_all(&dir).ok();
}

/// `--tokenizer-mode mistral` with the Mistral parsers on a tekken v13 vocabulary: the
/// engine request carries mistral-common's Lark grammar for the whole reply, as vLLM's
/// `MistralParser.adjust_request` builds it (`vllm-parser/tests/fixtures/mistral_grammars.json.gz`),
/// with `reasoning_ended: true` (the grammar covers the reasoning) and the reasoning
/// parser's kwargs.
#[tokio::test]
async fn mistral_parsers_constrain_with_mistral_commons_grammar() {
    use vllm_chat::RendererOptions;
    use vllm_chat::pipeline::Model;

    let fixture: Value = serde_json::from_slice(&gunzip(
        "vllm-parser/tests/fixtures/mistral_grammars.json.gz",
    ))
    .expect("json");
    let case = fixture["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| {
            c["tokenizer"] == "tekken_v13"
                && c["tool_parser"] == "mistral"
                && c["reasoning_parser"] == "mistral"
                && c["name"] == "tools_named"
        })
        .expect("case")
        .clone();
    let dir = std::env::temp_dir().join(format!("mistral-grammar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let base: Value = serde_json::from_slice(&vendored::tekken_v3()).expect("tekken");
    std::fs::write(
        dir.join("tekken.json"),
        vendored::synthetic_tekken(&base, "v13"),
    )
    .unwrap();
    let model = Model::load_with_mode(&dir, TokenizerMode::Mistral, RendererOptions::default())
        .expect("model loads");
    std::fs::remove_dir_all(&dir).ok();
    let parsers = model
        .serving_parsers(Some("mistral"), Some("mistral"), true)
        .expect("parsers");

    let sent = engine_request(model, parsers, &case["request"]).await;
    let grammar = sent
        .sampling_params
        .as_ref()
        .and_then(|p| p.structured_outputs.as_ref())
        .and_then(|s| s.grammar.clone());
    assert_eq!(
        grammar.as_deref(),
        case["adjusted"]["structured_outputs"]["grammar"].as_str()
    );
    assert_eq!(sent.reasoning_ended, Some(true));
    assert!(sent.reasoning_parser_kwargs.is_some());
}

/// `serve --tool-call-parser mistral --enable-auto-tool-choice` on a pre-v11 Mistral
/// directory (tekken v3): vLLM's `MistralParser` reads its calls as the legacy
/// `[TOOL_CALLS][{"name": …, "arguments": …}]` JSON array, whole and streamed, with
/// Mistral's 9-alphanumeric call ids.
#[test]
fn pre_v11_mistral_directory_parses_json_array_tool_calls() {
    use vllm_examples::serve::ParserChoice;
    let dir = std::env::temp_dir().join(format!("serve-mistral-v3-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tekken = gunzip("testdata/models/mistral_tekken/tekken.json.gz");
    std::fs::write(dir.join("tekken.json"), tekken).expect("write tekken");

    let reply =
        r#"Let me check.[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]"#;
    let server = start(ServeConfig {
        model_dir: dir.clone(),
        served_model_name: "mistral".into(),
        tool_call_parser: ParserChoice::Named("mistral".into()),
        enable_auto_tool_choice: true,
        ..config(reply)
    });
    let addr = server.addr;
    run(async move {
        let body = json!({
            "model": "mistral",
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
            }}],
            "max_tokens": 64,
        });
        let (status, answer) = post(addr, "/v1/chat/completions", body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let choice = &answer["choices"][0];
        assert_eq!(choice["finish_reason"], json!("tool_calls"), "{answer}");
        assert_eq!(
            choice["message"]["content"],
            json!("Let me check."),
            "{answer}"
        );
        let call = &choice["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], json!("get_weather"), "{answer}");
        assert_eq!(
            call["function"]["arguments"],
            json!(r#"{"city": "Paris"}"#),
            "{answer}"
        );
        let id = call["id"].as_str().expect("call id");
        assert!(
            id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()),
            "{id}"
        );
        // Streamed: the content first, then the call, the same message merged.
        let mut streamed = body;
        streamed["stream"] = json!(true);
        let (mut content, mut name, mut arguments) = (String::new(), String::new(), String::new());
        for chunk in stream_all(addr, "/v1/chat/completions", streamed).await {
            let Some(delta) = chunk["choices"][0].get("delta") else {
                continue;
            };
            content += delta["content"].as_str().unwrap_or_default();
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                name += call["function"]["name"].as_str().unwrap_or_default();
                arguments += call["function"]["arguments"].as_str().unwrap_or_default();
            }
        }
        assert_eq!(content, "Let me check.");
        assert_eq!(name, "get_weather");
        assert_eq!(arguments, r#"{"city": "Paris"}"#);
    });
    std::fs::remove_dir_all(&dir).ok();
}
