//! Renderer behaviour around the templates: named-template selection (transformers'
//! `get_chat_template`), server options and request errors.

mod common;

use serde_json::json;
use vllm_chat::openai::ChatCompletionRequest;
use vllm_chat::tokenizer::ParallelEncoding;
use vllm_chat::{ChatRenderer, ChatTemplates, ModelFiles, RenderError, RendererOptions};

fn named_renderer(options: RendererOptions) -> ChatRenderer {
    let files = ModelFiles {
        chat_templates: Some(ChatTemplates::Named(vec![
            ("default".into(), "default:{{ messages[0].content }}".into()),
            ("tool_use".into(), "tool_use:{{ tools | length }}".into()),
            ("rag".into(), "rag:{{ documents | length }}".into()),
        ])),
        ..Default::default()
    };
    ChatRenderer::new(files, options).unwrap()
}

fn request(body: serde_json::Value) -> ChatCompletionRequest {
    serde_json::from_value(body).unwrap()
}

const TOOL: &str = r#"{"type": "function", "function": {"name": "f"}}"#;

#[test]
fn named_templates_are_chosen_like_transformers() {
    let r = named_renderer(RendererOptions::default());
    let tool: serde_json::Value = serde_json::from_str(TOOL).unwrap();
    let plain = request(json!({"messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(r.render_text(&plain).unwrap(), "default:hi");
    let with_tools =
        request(json!({"messages": [{"role": "user", "content": "hi"}], "tools": [tool]}));
    assert_eq!(r.render_text(&with_tools).unwrap(), "tool_use:1");
    let by_name = RendererOptions {
        chat_template: Some("rag".into()),
        ..Default::default()
    };
    let docs = request(
        json!({"messages": [{"role": "user", "content": "hi"}], "documents": [{"title": "t", "text": "x"}]}),
    );
    assert_eq!(named_renderer(by_name).render_text(&docs).unwrap(), "rag:1");
}

#[test]
fn tools_can_be_excluded_when_tool_choice_is_none() {
    let tool: serde_json::Value = serde_json::from_str(TOOL).unwrap();
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "tools": [tool], "tool_choice": "none"});
    let options = RendererOptions {
        exclude_tools_when_tool_choice_none: true,
        ..Default::default()
    };
    assert_eq!(
        named_renderer(options)
            .render_text(&request(body.clone()))
            .unwrap(),
        "default:hi"
    );
    assert_eq!(
        named_renderer(RendererOptions::default())
            .render_text(&request(body))
            .unwrap(),
        "tool_use:1"
    );
}

#[test]
fn request_templates_need_trust() {
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "chat_template": "T:{{ messages | length }}"});
    let err = named_renderer(RendererOptions::default())
        .render_text(&request(body.clone()))
        .unwrap_err();
    assert!(
        matches!(&err, RenderError::InvalidRequest { param: Some(p), .. } if p == "chat_template"),
        "{err:?}"
    );
    let trusted = RendererOptions {
        trust_request_chat_template: true,
        ..Default::default()
    };
    assert_eq!(
        named_renderer(trusted.clone())
            .render_text(&request(body))
            .unwrap(),
        "T:1"
    );
    // A request template cannot include itself (an unchecked copy) by its internal name.
    let body = json!({"messages": [{"role": "user", "content": "hi"}],
        "chat_template": "{% include '\\u0000request' %}{% include '\\x00request' %}"});
    let err = named_renderer(trusted)
        .render_text(&request(body))
        .unwrap_err();
    assert!(
        matches!(&err, RenderError::Template(m) if m.contains("not found")),
        "{err:?}"
    );
}

#[test]
fn errors_name_the_offending_field() {
    let r = named_renderer(RendererOptions::default());
    let image = json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]}]});
    let err = r.render_text(&request(image)).unwrap_err();
    assert!(
        matches!(&err, RenderError::InvalidRequest { param: Some(p), .. } if p == "messages.0.content.0.type"),
        "{err:?}"
    );
    assert!(err.is_client_error());
    let both =
        json!({"messages": [{"role": "user", "content": "hi"}], "continue_final_message": true});
    assert!(matches!(
        r.render_text(&request(both)),
        Err(RenderError::InvalidRequest { .. })
    ));
    let empty_tools = json!({"messages": [{"role": "user", "content": "hi"}], "tools": []});
    let err = r.render_text(&request(empty_tools)).unwrap_err();
    assert!(
        matches!(&err, RenderError::InvalidRequest { param: Some(p), .. } if p == "tools"),
        "{err:?}"
    );
}

#[test]
fn a_model_without_a_template_is_an_error() {
    let r = ChatRenderer::new(ModelFiles::default(), RendererOptions::default()).unwrap();
    let err = r
        .render_text(&request(
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        ))
        .unwrap_err();
    assert!(matches!(err, RenderError::NoTemplate));
}

#[test]
fn parallel_encoding_is_an_option_with_the_same_ids() {
    let Some(dir) = common::ModelDir::new("qwen3") else {
        return;
    };
    let renderer = |parallel_encoding| {
        let options = RendererOptions {
            parallel_encoding,
            ..Default::default()
        };
        ChatRenderer::new(ModelFiles::from_dir(&dir.0).unwrap(), options).unwrap()
    };
    let text: String = (0..20_000)
        .map(|i| format!("word{i} münze 数字 {}\n", i * 7919))
        .collect();
    let request = request(json!({"messages": [{"role": "user", "content": text}]}));
    let split = renderer(ParallelEncoding {
        min_bytes: 4096,
        max_threads: 4,
    })
    .render(&request)
    .unwrap();
    let sequential = renderer(ParallelEncoding::sequential())
        .render(&request)
        .unwrap();
    assert!(split.token_ids.len() > 100_000);
    assert_eq!(split.token_ids, sequential.token_ids);
}
