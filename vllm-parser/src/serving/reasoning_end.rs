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
//! from the prompt's marker tokens, the view it reads its start state from.

use serde_json::{Map, Value};

use super::{RequestAdjustments, ServingParsers, ServingRequest};
use crate::parser::ParserOptions;
use crate::registry;

impl ServingParsers {
    /// The server's reasoning parser's `is_reasoning_end(prompt_token_ids)`
    /// for a request with `chat_template_kwargs` (the server's defaults
    /// merged with the request's): `Some(true)` when the rendered prompt
    /// already ended reasoning (e.g. a template that closed an empty think
    /// block because thinking is off), `Some(false)` when generation starts
    /// in reasoning. `None` without a reasoning parser, and for vLLM's
    /// `granite` parser, which does not implement the method (vLLM then sends
    /// `None` too).
    pub fn is_reasoning_end(
        &self,
        prompt_token_ids: &[u32],
        chat_template_kwargs: &Map<String, Value>,
    ) -> Option<bool> {
        let name = self.reasoning?;
        let options = ParserOptions {
            chat_template_kwargs: chat_template_kwargs.clone(),
            prompt: self.prompt_markers(prompt_token_ids, &self.spelled_markers),
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
    /// `chat_template_kwargs`. A request that `adjust_request` left alone
    /// (no parser asked to adjust it) passes `RequestAdjustments::default()`:
    /// vLLM resolves `reasoning_ended` for every request.
    pub fn resolve_reasoning_ended(
        &self,
        request: &ServingRequest,
        adjustments: &RequestAdjustments,
        prompt_token_ids: &[u32],
    ) -> Option<bool> {
        if !request.include_reasoning || adjustments.grammar_from_parser {
            return Some(true);
        }
        self.is_reasoning_end(prompt_token_ids, request.chat_template_kwargs)
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
        assert_eq!(parsers.is_reasoning_end(&open, &on), Some(false));
        assert_eq!(parsers.is_reasoning_end(&open, &off), Some(true));
        // `…<think>\n\n</think>\n\n`: the template closed reasoning.
        let closed = [1, 101, 3, 102, 4, 102];
        assert_eq!(parsers.is_reasoning_end(&closed, &on), Some(true));
        // A `</think>` before the current turn does not count.
        let earlier = [3, 4, 2, 1, 101];
        assert_eq!(parsers.is_reasoning_end(&earlier, &on), Some(false));
        // An open `<think>` keeps reasoning going; with thinking off Qwen3's
        // grammar has no think start in content, so the scan stops there.
        assert_eq!(parsers.is_reasoning_end(&[1, 101, 3], &on), Some(false));
        assert_eq!(parsers.is_reasoning_end(&[1, 101, 3], &off), Some(true));
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
            parsers.is_reasoning_end(&[1, 11, 12, 13, 2], &kwargs),
            Some(true)
        );
        assert_eq!(
            parsers.is_reasoning_end(&[1, 10, 12, 13], &kwargs),
            Some(true)
        );
        // The pieces out of order or cut short are not the marker.
        assert_eq!(
            parsers.is_reasoning_end(&[12, 11, 13, 2], &kwargs),
            Some(false)
        );
        assert_eq!(parsers.is_reasoning_end(&[1, 11, 12], &kwargs), Some(false));
        // The tool parser's start state does not see it: only
        // `is_reasoning_end` matches ordinary tokens.
        assert!(
            !parsers
                .prompt_markers(&[11, 12, 13], &[])
                .contains("</think>")
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
            plain.resolve_reasoning_ended(&request, &none, &prompt),
            None
        );
        let hidden = ServingRequest {
            include_reasoning: false,
            ..request.clone()
        };
        assert_eq!(
            plain.resolve_reasoning_ended(&hidden, &none, &prompt),
            Some(true)
        );
        // A reasoning parser answers for the prompt; a grammar overrides it.
        let qwen3 = ServingParsers::new(Some("qwen3"), None, false, None, vocab).unwrap();
        assert_eq!(
            qwen3.resolve_reasoning_ended(&request, &none, &prompt),
            Some(false)
        );
        assert_eq!(
            qwen3.resolve_reasoning_ended(&request, &grammar, &prompt),
            Some(true)
        );
        // vLLM's `granite` parser has no answer.
        let granite = ServingParsers::new(Some("granite"), None, false, None, vocab).unwrap();
        assert_eq!(
            granite.resolve_reasoning_ended(&request, &none, &prompt),
            None
        );
    }
}
