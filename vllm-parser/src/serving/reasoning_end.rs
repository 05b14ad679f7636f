//! The engine request's `reasoning_ended`, as vLLM 0.33.0 resolves it.
//!
//! vLLM sends every chat request to the engine with `reasoning_ended =
//! request.resolve_reasoning_ended(parser, prompt_token_ids)`
//! (`vllm/entrypoints/openai/chat_completion/protocol.py`), from the chat
//! endpoint (`OpenAIServingChat._engine_reasoning_kwargs`) and the render
//! endpoint (`ServingRender.render_chat_request`) alike: `true` when the
//! request hides reasoning (`include_reasoning: false`) or the parsers'
//! grammar covers it (`_grammar_from_parser`, set by `adjust_request`);
//! otherwise, with a reasoning parser, that parser's
//! `is_reasoning_end(prompt_token_ids)`, built for the request (its
//! `chat_template_kwargs`, e.g. thinking off); without one `None`, which leaves
//! the prompt to the engine. The engine starts a structured-outputs constraint
//! at the first generated token when reasoning has ended.
//!
//! Each reasoning parser answers with
//! [`ReasoningParser::prompt_ends_reasoning`](crate::ReasoningParser::prompt_ends_reasoning)
//! from the prompt's marker tokens, the view it reads its start state from;
//! the response-template parsers (`hf`, `beam`) from the prompt decoded as
//! vLLM decodes it (`ResponseTemplateReasoningParser.is_reasoning_end`), which
//! the server passes, or, without it, from the marker tokens too (an
//! approximation that misses a start anchor spelled in ordinary tokens); the
//! Muse parsers from the decoded prompt as well (whether a continued
//! assistant turn already opened a tool channel).

use serde_json::{Map, Value};

use super::{RequestAdjustments, ServingParsers, ServingRequest, TEMPLATE_PARSERS};
use crate::parser::{ParserOptions, py_truthy};
use crate::registry;
use crate::response_template::markers_end_reasoning;

impl ServingParsers {
    /// The server's reasoning parser's `is_reasoning_end(prompt_token_ids)`
    /// for a request with `chat_template_kwargs` (the server's defaults
    /// merged with the request's): `Some(true)` when the rendered prompt
    /// already ended reasoning (e.g. a template that closed an empty think
    /// block because thinking is off), `Some(false)` when generation starts
    /// in reasoning. `None` without a reasoning parser, and for vLLM's
    /// `granite` parser, which does not implement the method (vLLM then sends
    /// `None` too).
    ///
    /// `prompt_text` is the prompt decoded as vLLM decodes it for the `hf` /
    /// `beam` and Muse parsers, which answer from it: pass it when
    /// [`reads_prompt`](Self::reads_prompt) (other parsers read the token
    /// ids). Without it `hf` / `beam` read the prompt's marker tokens, and
    /// Muse answers `false` (a prompt's current turn holds no tool call).
    pub fn is_reasoning_end(
        &self,
        prompt_token_ids: &[u32],
        prompt_text: Option<&str>,
        chat_template_kwargs: &Map<String, Value>,
    ) -> Option<bool> {
        let name = self.reasoning?;
        let template_parser = TEMPLATE_PARSERS.contains(&name);
        let prompt = self.prompt_view(prompt_token_ids, prompt_text, &self.spelled_markers);
        if let Some(template) = &self.response_template
            && template_parser
            && prompt_text.is_none()
        {
            let thinking_disabled = chat_template_kwargs
                .get("enable_thinking")
                .is_some_and(|v| !py_truthy(v));
            return Some(markers_end_reasoning(template, &prompt, thinking_disabled));
        }
        let options = ParserOptions {
            chat_template_kwargs: chat_template_kwargs.clone(),
            prompt,
            response_template: self.response_template.clone(),
            mistral: self.mistral,
            ..ParserOptions::default()
        };
        registry::reasoning_parser_beside(name, self.active_tool_name, &options)
            .ok()?
            .prompt_ends_reasoning()
    }

    /// vLLM's `ChatCompletionRequest.resolve_reasoning_ended`, the engine
    /// request's `reasoning_ended` for `request` after
    /// [`adjust_request`](Self::adjust_request) gave `adjustments` and the
    /// render gave `prompt_token_ids`: `Some(true)` when the request hides
    /// reasoning or [`RequestAdjustments::grammar_from_parser`], else
    /// [`is_reasoning_end`](Self::is_reasoning_end) with the request's
    /// `chat_template_kwargs` (and `prompt_text`, the decoded prompt, when
    /// [`reads_prompt`](Self::reads_prompt)). A request that
    /// `adjust_request` left alone (no parser asked to adjust it) passes
    /// `RequestAdjustments::default()`: vLLM resolves `reasoning_ended` for
    /// every request.
    pub fn resolve_reasoning_ended(
        &self,
        request: &ServingRequest,
        adjustments: &RequestAdjustments,
        prompt_token_ids: &[u32],
        prompt_text: Option<&str>,
    ) -> Option<bool> {
        if !request.include_reasoning || adjustments.grammar_from_parser {
            return Some(true);
        }
        self.is_reasoning_end(prompt_token_ids, prompt_text, request.chat_template_kwargs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(token: &str) -> Option<u32> {
        [
            "<|im_start|>",
            "<|im_end|>",
            "<think>",
            "</think>",
            "<tool_call>",
        ]
        .iter()
        .position(|t| *t == token)
        .map(|i| i as u32 + 1)
    }

    #[test]
    fn qwen3_prompts_answer_as_vllms_engine() {
        let parsers = ServingParsers::new(Some("qwen3"), None, false, None, vocab).unwrap();
        let on = Map::new();
        let mut off = Map::new();
        off.insert("enable_thinking".into(), Value::Bool(false));
        // `<|im_start|>assistant\n`: the scan reaches a turn boundary.
        let open = [1, 100, 2, 1, 101];
        assert_eq!(parsers.is_reasoning_end(&open, None, &on), Some(false));
        assert_eq!(parsers.is_reasoning_end(&open, None, &off), Some(true));
        // `…<think>\n\n</think>\n\n`: the template closed reasoning.
        let closed = [1, 101, 3, 102, 4, 102];
        assert_eq!(parsers.is_reasoning_end(&closed, None, &on), Some(true));
        // A `</think>` before the current turn does not count.
        let earlier = [3, 4, 2, 1, 101];
        assert_eq!(parsers.is_reasoning_end(&earlier, None, &on), Some(false));
        // An open `<think>` keeps reasoning going; with thinking off Qwen3's
        // grammar has no think start in content, so the scan stops there.
        assert_eq!(
            parsers.is_reasoning_end(&[1, 101, 3], None, &on),
            Some(false)
        );
        assert_eq!(
            parsers.is_reasoning_end(&[1, 101, 3], None, &off),
            Some(true)
        );
    }

    /// Olmo3's `</think>` is three ordinary tokens; vLLM matches them
    /// anywhere in the prompt, a user's quoted text included.
    #[test]
    fn olmo3_matches_its_end_marker_as_ordinary_tokens() {
        let pieces = |t: &str| ["Ġ</", "</", "think", ">"].iter().position(|p| *p == t);
        let parsers = ServingParsers::new(Some("olmo3"), None, false, None, |t| {
            pieces(t).map(|i| i as u32 + 10)
        })
        .unwrap();
        let kwargs = Map::new();
        // `</`, `think`, `>` and ` </`, `think`, `>`, between other tokens.
        assert_eq!(
            parsers.is_reasoning_end(&[1, 11, 12, 13, 2], None, &kwargs),
            Some(true)
        );
        assert_eq!(
            parsers.is_reasoning_end(&[1, 10, 12, 13], None, &kwargs),
            Some(true)
        );
        // The pieces out of order or cut short are not the marker.
        assert_eq!(
            parsers.is_reasoning_end(&[12, 11, 13, 2], None, &kwargs),
            Some(false)
        );
        assert_eq!(
            parsers.is_reasoning_end(&[1, 11, 12], None, &kwargs),
            Some(false)
        );
        // The tool parser's start state does not see it: only
        // `is_reasoning_end` matches ordinary tokens.
        assert!(
            !parsers
                .prompt_markers(&[11, 12, 13], &[])
                .contains("</think>")
        );
    }

    /// A response template whose start anchor is ordinary text (no marker
    /// token): vLLM reads the decoded prompt (`_reasoning_has_ended`), its
    /// regions after the last anchor, then a NUL probe. The answers are
    /// vLLM 0.33.0's for the same template and prompts.
    #[test]
    fn response_template_reads_the_decoded_prompt() {
        let template = crate::response_template::ResponseTemplate::from_json(&serde_json::json!({
            "start_anchor": "<|turn>model\n",
            "fields": {
                "thinking": {"open": "<think>", "close": "</think>"},
                "tool_calls": {"open_pattern": "\\s*<tool_call>", "close": "</tool_call>",
                               "repeats": true, "content": "json",
                               "transform": {"function": "{content}"}},
                "content": {"close": "<turn|>"}
            }
        }))
        .unwrap();
        let parsers =
            ServingParsers::new(Some("hf"), None, false, Some(template.into()), |_| None).unwrap();
        assert!(parsers.reads_prompt());
        let on = Map::new();
        let mut off = Map::new();
        off.insert("enable_thinking".into(), Value::Bool(false));
        let ended = |text: &str, kwargs| parsers.is_reasoning_end(&[], Some(text), kwargs);
        for (prompt, thinking_on, thinking_off) in [
            // At the message start: reasoning ends only with thinking off.
            ("<|turn>user\nhi<turn|>\n<|turn>model\n", false, true),
            ("<|turn>model\n<think>\n", false, false),
            ("<|turn>model\n<think>x</think>", true, true),
            ("<|turn>model\nHello", true, true),
            // No anchor: the whole prompt is content.
            (
                "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
                true,
                true,
            ),
            // Held at the end: the NUL probe opens the tool region...
            ("<|turn>model\n<tool_call>", true, true),
            // ... or releases a partial delimiter as text.
            ("<|turn>model\n<thi", false, true),
            ("<|turn>model\n<think>a</thi", false, false),
            // Only the last anchor counts.
            ("<|turn>model\n<think>x</think><|turn>model\n", false, true),
        ] {
            assert_eq!(ended(prompt, &on), Some(thinking_on), "{prompt:?}");
            assert_eq!(ended(prompt, &off), Some(thinking_off), "{prompt:?} off");
        }
    }

    /// Kimi K3's think channel markers are `<|open|>` / `<|close|>`, the
    /// ordinary token `think`, `<|sep|>`: another channel (`response`) closed
    /// last does not end reasoning; the think channel closed last does.
    #[test]
    fn kimi_k3_reads_the_channel_name() {
        let vocab = |t: &str| {
            ["<|open|>", "<|close|>", "<|sep|>", "think", "response"]
                .iter()
                .position(|p| *p == t)
                .map(|i| i as u32 + 20)
        };
        let parsers = ServingParsers::new(Some("kimi_k3"), None, false, None, vocab).unwrap();
        let kwargs = Map::new();
        let (open, close, sep, think, response) = (20, 21, 22, 23, 24);
        let think_closed = [open, think, sep, 1, close, think, sep];
        assert_eq!(
            parsers.is_reasoning_end(&think_closed, None, &kwargs),
            Some(true)
        );
        // A response channel after the open think channel: still thinking.
        let response_closed = [
            open, think, sep, open, response, sep, 2, close, response, sep,
        ];
        assert_eq!(
            parsers.is_reasoning_end(&response_closed, None, &kwargs),
            Some(false)
        );
        // No think channel at all: not ended.
        assert_eq!(
            parsers.is_reasoning_end(&[open, response, sep, close, response, sep], None, &kwargs),
            Some(false)
        );
    }

    #[test]
    fn resolve_follows_vllms_order() {
        let kwargs = Map::new();
        let request = ServingRequest::new(&kwargs);
        let none = RequestAdjustments::default();
        let grammar = RequestAdjustments {
            grammar_from_parser: true,
            ..RequestAdjustments::default()
        };
        let prompt = [1, 101];
        // No parser: `None`, unless reasoning is hidden.
        let plain = ServingParsers::none();
        assert_eq!(
            plain.resolve_reasoning_ended(&request, &none, &prompt, None),
            None
        );
        let hidden = ServingRequest {
            include_reasoning: false,
            ..request.clone()
        };
        assert_eq!(
            plain.resolve_reasoning_ended(&hidden, &none, &prompt, None),
            Some(true)
        );
        // A reasoning parser answers for the prompt; a grammar overrides it.
        let qwen3 = ServingParsers::new(Some("qwen3"), None, false, None, vocab).unwrap();
        assert_eq!(
            qwen3.resolve_reasoning_ended(&request, &none, &prompt, None),
            Some(false)
        );
        assert_eq!(
            qwen3.resolve_reasoning_ended(&request, &grammar, &prompt, None),
            Some(true)
        );
        // vLLM's `granite` parser has no answer.
        let granite = ServingParsers::new(Some("granite"), None, false, None, vocab).unwrap();
        assert_eq!(
            granite.resolve_reasoning_ended(&request, &none, &prompt, None),
            None
        );
    }
}
