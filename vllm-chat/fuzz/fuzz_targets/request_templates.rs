//! Request chat templates (`--trust-request-chat-template`) rendered with limits and
//! checked operators, as the renderer renders them: every
//! input must give `Ok` or `Err`, never a panic, an abort or an allocation beyond the
//! fuzzer's RSS limit.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use vllm_chat::template::render_str;
use vllm_chat::{Limits, RendererOptions};

fn options() -> &'static RendererOptions {
    static OPTIONS: OnceLock<RendererOptions> = OnceLock::new();
    OPTIONS.get_or_init(|| RendererOptions {
        limits: Limits {
            fuel: 1_000_000,
            max_output_bytes: 4 << 20,
            max_value_bytes: 1 << 20,
            max_made_bytes: 16 << 20,
            ..Limits::default()
        },
        // As the renderer compiles a template sent with a request: the interpreter with
        // its operators checked, no fast path.
        interpreter_only: true,
        ..RendererOptions::default()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let context = serde_json::json!({
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
            ]},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "add_generation_prompt": true,
        "bos_token": "<s>",
    });
    let _ = render_str(source, &context, options());
});
