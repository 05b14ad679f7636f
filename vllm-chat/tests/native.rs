//! vLLM's native renderers against vLLM itself: every case of
//! `tests/fixtures/native.json.gz` (written by `scripts/gen_native_fixtures.py`
//! from vLLM 0.33.0's `DeepseekV32Renderer`, `DeepseekV4Renderer`,
//! `DeepseekV41Renderer`, `KimiK3Renderer`, `InklingRenderer` and `CohereRenderer`) rendered through `ChatRenderer::from_dir_with_mode` must give
//! the same token ids (and prompt text, where the renderer has one) or the same
//! error message. Also: how `--tokenizer-mode` resolves.

use std::str::FromStr;

use serde_json::{Value, json};
use vllm_chat::openai::ChatCompletionRequest;
use vllm_chat::{ChatRenderer, RendererKind, RendererOptions, TokenizerMode};

mod common;

fn fixtures() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/native.json.gz");
    serde_json::from_slice(&common::gunzip(&path)).expect("native.json.gz")
}

/// vLLM records `"{ExceptionType}: {message}"`; the message is what clients see.
fn message_of(recorded: &str) -> &str {
    recorded.split_once(": ").map_or(recorded, |(_, m)| m)
}

#[test]
fn native_renderers_match_vllm() {
    let fixtures = fixtures();
    let modes = fixtures["modes"].as_object().expect("modes");
    let mut checked = 0;
    let mut failures = Vec::new();
    for (mode_name, mode) in modes {
        let mode_value = TokenizerMode::from_str(mode_name).expect("mode name");
        let model = mode["model"].as_str().expect("model");
        let dir = common::ModelDir::new(model).unwrap_or_else(|| panic!("testdata/models/{model}"));
        let renderer =
            ChatRenderer::from_dir_with_mode(&dir.0, mode_value, RendererOptions::default())
                .unwrap_or_else(|e| panic!("{mode_name}: {e}"));
        let cases = mode["cases"].as_object().expect("cases");
        assert!(cases.len() >= 25, "{mode_name}: {} cases", cases.len());
        for (name, case) in cases {
            checked += 1;
            let rendered = serde_json::from_value::<ChatCompletionRequest>(case["request"].clone())
                .map_err(|e| e.to_string())
                .and_then(|request| renderer.render(&request).map_err(|e| e.to_string()));
            let ok = match (&rendered, case.get("error")) {
                (Err(got), Some(want)) => got == message_of(want.as_str().unwrap_or_default()),
                (Ok(prompt), None) => {
                    let ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).expect("ids");
                    prompt.token_ids == ids
                        && case
                            .get("text")
                            .and_then(Value::as_str)
                            .is_none_or(|t| t == prompt.text)
                }
                _ => false,
            };
            if !ok {
                let got = rendered.map(|p| json!({"text": p.text, "ids": p.token_ids}));
                failures.push(format!(
                    "{mode_name}/{name}:\n  want {}\n  got  {got:?}",
                    json!({"text": case.get("text"), "error": case.get("error")})
                ));
            }
        }
    }
    assert!(checked > 0);
    assert!(
        failures.is_empty(),
        "{} of {checked} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn renderers_refuse_tokenizers_as_vllm_does() {
    let fixtures = fixtures();
    let errors = fixtures["construct_errors"]
        .as_object()
        .expect("construct_errors");
    assert!(!errors.is_empty());
    for (mode, case) in errors {
        let model = case["model"].as_str().expect("model");
        let dir = common::ModelDir::new(model).unwrap_or_else(|| panic!("testdata/models/{model}"));
        let mode = TokenizerMode::from_str(mode).expect("mode");
        let err = ChatRenderer::from_dir_with_mode(&dir.0, mode, RendererOptions::default())
            .expect_err("vLLM refuses this tokenizer");
        let want = message_of(case["error"].as_str().expect("error"));
        assert!(err.to_string().ends_with(want), "{err}\n  want {want}");
    }
}

#[test]
fn modes_parse_like_vllms_flag() {
    for mode in TokenizerMode::ALL {
        assert_eq!(TokenizerMode::from_str(mode.as_str()), Ok(mode));
        assert_eq!(mode.to_string(), mode.as_str());
    }
    // vLLM lowercases the flag.
    assert_eq!(
        TokenizerMode::from_str("DeepSeek_V32"),
        Ok(TokenizerMode::DeepseekV32)
    );
    let err = TokenizerMode::from_str("slow").unwrap_err();
    assert!(err.to_string().contains("\"slow\""), "{err}");
    assert!(err.to_string().contains("deepseek_v41"), "{err}");
}

#[test]
fn auto_resolves_as_vllm_does() {
    let config = |v: Value| v.as_object().cloned();
    let resolve =
        |mode: TokenizerMode, c: Option<serde_json::Map<String, Value>>, files: &[&str]| {
            mode.resolve_with(c.as_ref(), files.iter().copied())
        };
    let arch = |a: &str| config(json!({"architectures": [a], "model_type": "x"}));
    let cases = [
        (
            "DeepseekV32ForCausalLM",
            TokenizerMode::DeepseekV32,
            RendererKind::DeepseekV32,
        ),
        (
            "DeepseekV4ForCausalLM",
            TokenizerMode::DeepseekV4,
            RendererKind::DeepseekV4,
        ),
        (
            "DeepseekV4ForConditionalGeneration",
            TokenizerMode::DeepseekV4,
            RendererKind::DeepseekV4,
        ),
        (
            "DeepseekV41ForCausalLM",
            TokenizerMode::DeepseekV41,
            RendererKind::DeepseekV41,
        ),
        (
            "KimiK3ForConditionalGeneration",
            TokenizerMode::KimiK3,
            RendererKind::KimiK3,
        ),
        (
            "InklingForCausalLM",
            TokenizerMode::Inkling,
            RendererKind::Inkling,
        ),
        (
            "Qwen3ForCausalLM",
            TokenizerMode::Hf,
            RendererKind::Template,
        ),
    ];
    for (architecture, mode, renderer) in cases {
        let r = resolve(TokenizerMode::Auto, arch(architecture), &["tokenizer.json"]);
        assert_eq!((r.mode, r.renderer), (mode, renderer), "{architecture}");
    }
    // An explicit mode wins over the architecture.
    let r = resolve(
        TokenizerMode::Hf,
        arch("DeepseekV32ForCausalLM"),
        &["tokenizer.json"],
    );
    assert_eq!(r.renderer, RendererKind::Template);
    // Mistral: a consolidated checkpoint with a mistral-common vocabulary, or such a
    // vocabulary with no tokenizer.json at all.
    for files in [
        &["consolidated.safetensors", "tekken.json", "tokenizer.json"][..],
        &["tokenizer.model.v7"][..],
        &["tekken.json"][..],
    ] {
        let r = resolve(TokenizerMode::Auto, None, files);
        assert_eq!(r.renderer, RendererKind::Mistral, "{files:?}");
    }
    let r = resolve(
        TokenizerMode::Auto,
        None,
        &["tekken.json", "tokenizer.json"],
    );
    assert_eq!(r.renderer, RendererKind::Template);
    // gpt-oss chats are Harmony whatever the mode.
    let gpt_oss = config(json!({"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"]}));
    for mode in [TokenizerMode::Auto, TokenizerMode::Hf] {
        assert_eq!(
            resolve(mode, gpt_oss.clone(), &["tokenizer.json"]).renderer,
            RendererKind::Harmony
        );
    }
}

#[test]
fn unported_renderers_are_refused_by_name() {
    // gpt-oss: Harmony (vllm_chat::harmony), the same ids as the Harmony renderer.
    let dir = common::ModelDir::new("gptoss").expect("testdata/models/gptoss");
    let renderer =
        ChatRenderer::from_dir_with_mode(&dir.0, TokenizerMode::Auto, RendererOptions::default())
            .expect("gpt-oss renders with Harmony");
    assert_eq!(renderer.renderer_kind(), RendererKind::Harmony);
    let request: vllm_chat::openai::ChatCompletionRequest =
        serde_json::from_value(json!({"messages": [{"role": "user", "content": "Hi"}]})).unwrap();
    let harmony = vllm_chat::harmony::HarmonyRenderer::new(
        vllm_chat::harmony::HarmonyOptions::from_env().unwrap(),
    )
    .unwrap();
    assert_eq!(
        renderer.render(&request).unwrap().token_ids,
        harmony.render(&request).unwrap().token_ids
    );
    let dir = common::ModelDir::new("qwen3").expect("testdata/models/qwen3");
    let err = ChatRenderer::from_dir_with_mode(
        &dir.0,
        TokenizerMode::Mistral,
        RendererOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("mistral"), "{err}");
    // `cohere` is never detected, and renders any Hugging Face tokenizer's model when asked.
    let renderer =
        ChatRenderer::from_dir_with_mode(&dir.0, TokenizerMode::Cohere, RendererOptions::default())
            .expect("cohere");
    assert_eq!(renderer.renderer_kind(), RendererKind::Cohere);
    // `hf` and `auto` on a template model: the template path.
    let renderer =
        ChatRenderer::from_dir_with_mode(&dir.0, TokenizerMode::Auto, RendererOptions::default())
            .expect("qwen3");
    assert_eq!(renderer.renderer_kind(), RendererKind::Template);
}

/// No input makes a native renderer panic: every fixture request, mutated (a
/// message dropped, roles swapped, odd tool-call arguments, kwargs of the wrong
/// type), renders or returns an error.
#[test]
fn native_renderers_never_panic() {
    let fixtures = fixtures();
    let odd_kwargs = [
        json!({"thinking": "yes", "drop_thinking": 0}),
        json!({"reasoning_effort": [1], "enable_thinking": {}}),
        json!({"reasoning_effort": 101, "thinking": true}),
        json!({"reasoning_effort": -0.5}),
        json!({"reasoning_effort": true}),
        json!({"tools": "x"}),
        json!({"tools": [1, {"function": 2}, {"function": {"name": 3}}]}),
        json!({"thinking_effort": "max", "continue_final_message": true}),
    ];
    let odd_arguments = [
        json!("[1]"),
        json!("not json"),
        json!(7),
        json!("\"{}\""),
        json!(null),
    ];
    let roles = [
        "system",
        "developer",
        "user",
        "assistant",
        "tool",
        "latest_reminder",
        "bogus",
    ];
    let mut renders = 0;
    for (mode_name, mode) in fixtures["modes"].as_object().expect("modes") {
        let model = mode["model"].as_str().expect("model");
        let dir = common::ModelDir::new(model).expect("model");
        let renderer = ChatRenderer::from_dir_with_mode(
            &dir.0,
            TokenizerMode::from_str(mode_name).expect("mode"),
            RendererOptions::default(),
        )
        .expect("renderer");
        let mut render = |body: &Value| {
            if let Ok(request) = serde_json::from_value::<ChatCompletionRequest>(body.clone()) {
                let _ = renderer.render(&request);
                let _ = renderer.render_text(&request);
                renders += 1;
            }
        };
        for case in mode["cases"].as_object().expect("cases").values() {
            let request = &case["request"];
            let messages = request["messages"].as_array().cloned().unwrap_or_default();
            for i in 0..messages.len() {
                let mut body = request.clone();
                let mut fewer = messages.clone();
                fewer.remove(i);
                body["messages"] = Value::Array(fewer);
                render(&body);
                for role in roles {
                    let mut body = request.clone();
                    body["messages"][i]["role"] = json!(role);
                    render(&body);
                }
                if messages[i].get("tool_calls").is_some() {
                    for args in &odd_arguments {
                        let mut body = request.clone();
                        body["messages"][i]["tool_calls"][0]["function"]["arguments"] =
                            args.clone();
                        render(&body);
                    }
                }
            }
            for kwargs in &odd_kwargs {
                let mut body = request.clone();
                body["chat_template_kwargs"] = kwargs.clone();
                render(&body);
            }
        }
    }
    assert!(renders > 1000, "{renders}");
}

/// A chat template reaches vLLM's Cohere renderer as a raw melody template; this port
/// refuses it by name (the request's, with `--trust-request-chat-template`, and the
/// server's `--chat-template`) rather than rendering something else.
#[test]
fn cohere_refuses_chat_templates() {
    let dir = common::ModelDir::new("cohere_command_synth").expect("cohere_command_synth");
    let request = |template: Option<&str>| {
        let mut body = json!({"messages": [{"role": "user", "content": "Hi"}]});
        if let Some(t) = template {
            body["chat_template"] = json!(t);
        }
        serde_json::from_value::<ChatCompletionRequest>(body).unwrap()
    };
    let trusting = RendererOptions {
        trust_request_chat_template: true,
        ..RendererOptions::default()
    };
    let renderer =
        ChatRenderer::from_dir_with_mode(&dir.0, TokenizerMode::Cohere, trusting).expect("cohere");
    let err = renderer.render(&request(Some("{{ x }}"))).unwrap_err();
    assert!(err.is_client_error(), "{err}");
    assert_eq!(
        err.to_string(),
        vllm_chat::cohere::CohereUnsupported::ChatTemplate.to_string()
    );
    // An empty template is no template (vLLM's `if chat_template:`).
    assert!(renderer.render(&request(Some(""))).is_ok());
    let server = RendererOptions {
        chat_template: Some("{{ messages }}".into()),
        ..RendererOptions::default()
    };
    let renderer =
        ChatRenderer::from_dir_with_mode(&dir.0, TokenizerMode::Cohere, server).expect("cohere");
    let err = renderer.render(&request(None)).unwrap_err();
    assert!(err.to_string().contains("chat template"), "{err}");
}

/// The pipeline's model takes the same path: `--tokenizer-mode cohere` loads the
/// Cohere renderer, and chats render as `ChatRenderer` renders them.
#[cfg(feature = "pipeline")]
#[test]
fn pipeline_model_loads_cohere_mode() {
    use vllm_chat::pipeline::Model;
    let fixtures = fixtures();
    let case = &fixtures["modes"]["cohere"]["cases"]["tool_calls_results"];
    let dir = common::ModelDir::new("cohere_command_synth").expect("cohere_command_synth");
    let model = Model::load_with_mode(&dir.0, TokenizerMode::Cohere, RendererOptions::default())
        .expect("cohere model");
    assert_eq!(model.renderer.renderer_kind(), RendererKind::Cohere);
    let request: ChatCompletionRequest = serde_json::from_value(case["request"].clone()).unwrap();
    let prompt = model.renderer.render(&request).unwrap();
    assert_eq!(Some(prompt.text.as_str()), case["text"].as_str());
    let ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
    assert_eq!(prompt.token_ids, ids);
}
