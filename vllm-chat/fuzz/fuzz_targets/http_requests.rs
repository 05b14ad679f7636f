//! The HTTP request bodies: `ChatCompletionRequest` and `CompletionRequest` parsed from
//! arbitrary bytes, then chat requests rendered (with request templates trusted, under
//! limits): `Ok` or `Err`, never a panic or an abort.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use vllm_chat::openai::{ChatCompletionRequest, CompletionRequest};
use vllm_chat::{ChatRenderer, ChatTemplates, Limits, ModelFiles, RendererOptions};

const CHATML: &str = "{% for message in messages %}<|im_start|>{{ message.role }}\n\
{% if message.content is string %}{{ message.content }}{% else %}{% for part in message.content %}\
{{ part.text }}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}\
{% if tools %}{{ tools|tojson }}{% endif %}\
{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

fn renderer() -> &'static ChatRenderer {
    static RENDERER: OnceLock<ChatRenderer> = OnceLock::new();
    RENDERER.get_or_init(|| {
        let files = ModelFiles {
            chat_templates: Some(ChatTemplates::Single(CHATML.into())),
            special_tokens: vec![("bos_token".into(), "<s>".into())],
            ..ModelFiles::default()
        };
        let options = RendererOptions {
            trust_request_chat_template: true,
            limits: Limits {
                fuel: 1_000_000,
                max_output_bytes: 4 << 20,
                max_value_bytes: 1 << 20,
                ..Limits::default()
            },
            ..RendererOptions::default()
        };
        ChatRenderer::new(files, options).expect("the ChatML template compiles")
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = serde_json::from_slice::<ChatCompletionRequest>(data) {
        let _ = renderer().render(&request);
    }
    let _ = serde_json::from_slice::<CompletionRequest>(data);
});
