//! The two parser traits and the options parsers are built from.

use serde_json::{Map, Value};

use std::sync::Arc;

use crate::event::Event;
use crate::response_template::ResponseTemplate;
use crate::tools::Tool;

/// Splits model output into reasoning and content.
///
/// One value per request (parsers hold per-request state; nothing is shared).
/// Feed every text delta in order with [`push`](Self::push), then call
/// [`finish`](Self::finish) once. Only [`Event::Reasoning`] and [`Event::Content`]
/// are emitted. The whole-text result is the same calls with one delta, so
/// streaming and whole-text parsing cannot disagree. Must never panic, whatever
/// the text, and must not lose text: what is not reasoning comes out as content
/// (except markers the format consumes).
pub trait ReasoningParser: Send {
    /// Parse one delta. `token_ids` are the delta's token ids when the caller has
    /// them (empty otherwise); text-based parsers ignore them.
    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>);

    /// End of output: release anything held back.
    fn finish(&mut self, out: &mut Vec<Event>);

    /// Whether this parser steps aside when a tool parser runs after it: vLLM
    /// parses the format as one grammar with its tool parser (gpt-oss Harmony),
    /// so [`MessageParser`](crate::MessageParser) drops this parser and gives the
    /// tool parser the raw output (text and token ids), reasoning included.
    fn yields_to_tool_parser(&self) -> bool {
        false
    }

    /// Whether vLLM implements this parser with its declarative parser engine
    /// (`engine_based_streaming`). An engine-based tool parser after a legacy
    /// reasoning parser returns the content it was given untouched when it
    /// finds no call (`DelegatingParser._extract_tool_calls`).
    fn is_engine_based(&self) -> bool {
        false
    }

    /// Called once, before any text, when a tool parser finds calls after this
    /// one: the choice then follows vLLM's whole-text answer where its two
    /// modes disagree on the start state. vLLM's streaming starts after
    /// reasoning when the prompt ended it and hands the rest to the legacy
    /// tool parser's streaming extraction, whose answers the crate's tool
    /// parsers do not reproduce (they give whole-text results at every
    /// chunking); its whole-text `parse` never shows a legacy parser the
    /// prompt (`DelegatingParser.set_prompt_token_ids` reaches only
    /// engine-based ones). A legacy parser whose start state reads the
    /// prompt starts as if the prompt had not ended reasoning; the default
    /// does nothing.
    fn follows_whole_text(&mut self) {}

    /// Rewrites the message's content after the tool parser ran (vLLM's
    /// MiniCPM-V recovers escaped newlines there): called with each content
    /// text in order, then once with `last` and no text, it returns the text
    /// to show (possibly holding some back). `None`, the default, leaves the
    /// content as it is.
    fn rewrite_content(&mut self, _text: &str, _last: bool) -> Option<String> {
        None
    }

    /// vLLM's `is_reasoning_end(prompt_token_ids)` for the prompt this parser
    /// was built with ([`ParserOptions::prompt`]) under its options (e.g.
    /// thinking turned off): `Some(true)` when generation starts after
    /// reasoning. It is what vLLM sends as the engine request's
    /// `reasoning_ended` (structured outputs then constrain from the first
    /// token). It is not always the parser's start state: vLLM's parser
    /// engines start in content only when the prompt closed reasoning inside
    /// the current turn, while their `is_reasoning_end` also answers `true`
    /// for a format that does not wait for reasoning. `None` where vLLM's
    /// parser has no answer (its `granite` parser leaves the method abstract,
    /// so the engine request carries `None`).
    fn prompt_ends_reasoning(&self) -> Option<bool>;
}

/// Finds tool calls in content.
///
/// Same contract as [`ReasoningParser`]; emits [`Event::Content`] and the
/// `ToolCall*` events. What cannot be parsed as a call comes out as content, the way
/// vLLM's whole-text parser returns it.
pub trait ToolParser: Send {
    /// Parse one delta of content (after reasoning was split off).
    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>);

    /// End of output: release anything held back, settle unfinished calls.
    fn finish(&mut self, out: &mut Vec<Event>);

    /// Called once, before any text, when a reasoning parser runs before this
    /// one. vLLM treats reasoning markup as text in an engine-based tool parser
    /// that runs alone, and parses it when composed.
    fn follows_reasoning_parser(&mut self) {}

    /// Called once, before any text, after
    /// [`follows_reasoning_parser`](Self::follows_reasoning_parser), when that
    /// reasoning parser is not engine-based (see
    /// [`ReasoningParser::is_engine_based`]).
    fn follows_legacy_reasoning_parser(&mut self) {}
}

/// What a request tells its parsers.
#[derive(Debug, Clone, Default)]
pub struct ParserOptions {
    /// The function tools the request offers (for schema-aware argument conversion).
    pub tools: Vec<Tool>,
    /// The request's `chat_template_kwargs` (e.g. `enable_thinking`).
    pub chat_template_kwargs: Map<String, Value>,
    /// The rendered prompt, or at least its end (the last assistant header and
    /// anything the template opened after it). vLLM starts streaming after
    /// reasoning when the prompt already closed it (`is_reasoning_end(prompt)`),
    /// e.g. Qwen3 with `enable_thinking=False` renders an empty think block.
    /// [`serving::ServingParsers::choice_parser`](crate::serving::ServingParsers::choice_parser)
    /// fills it from the prompt's token ids: the prompt's marker tokens in
    /// order, every other token as U+0001, as vLLM reads token ids; for the
    /// `hf` / `beam` and Muse parsers, which vLLM gives the decoded prompt,
    /// with that text when the server passes it.
    pub prompt: String,
    /// The checkpoint's `response_template` (from `tokenizer_config.json`,
    /// compiled once per model with
    /// [`ResponseTemplate::from_tokenizer_config`]), which the `hf` and `beam`
    /// parsers parse by. Other parsers ignore it.
    pub response_template: Option<Arc<ResponseTemplate>>,
    /// The request's `tool_choice` as given (`None` when absent); parsers
    /// whose vLLM counterpart reads `request.tool_choice` read it here.
    pub tool_choice: Option<crate::serving::ToolChoice>,
    /// Which Mistral output format the `mistral` parsers read; vLLM's
    /// `MistralParser` picks it from the tokenizer
    /// ([`MistralFormat::detect`]). The default is the v11+ format with
    /// `[THINK]` reasoning. Other parsers ignore it.
    pub mistral: MistralFormat,
}

/// The Mistral output format vLLM's `MistralParser` (`vllm/parser/mistral.py`,
/// parser name `mistral`) reads, which it decides from the tokenizer when it is
/// built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MistralFormat {
    /// Tool calls are the pre-v11 `[TOOL_CALLS][{"name": …, "arguments": …}]`
    /// JSON (`_is_pre_v11_tokeniser`) rather than `[TOOL_CALLS]name[ARGS]{…}`.
    pub pre_v11_calls: bool,
    /// How reasoning is marked.
    pub reasoning: MistralReasoning,
}

/// How a Mistral model marks its reasoning (`mistral_config(reasoning_encoding=…)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MistralReasoning {
    /// `[THINK]` … `[/THINK]` special tokens (v13+; the vocabulary has `[THINK]`).
    #[default]
    SpecialToken,
    /// `<think>` … `</think>` as text (a mistral-common tokenizer that supports
    /// grammars, tekken v11+, without `[THINK]`).
    Text,
    /// No reasoning: everything is content.
    None,
}

/// What a mistral-common tokenizer (vLLM's `MistralTokenizer`, `--tokenizer-mode
/// mistral`) tells vLLM's `MistralParser` beyond its vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MistralTokenizerInfo {
    /// The tokenizer's version (`tokenizer.version`: 3 for `v3`, 11 for `v11`).
    pub version: u32,
    /// `supports_grammar`: mistral-common's guidance supports it (a tekken
    /// tokenizer of version 11 or later).
    pub supports_grammar: bool,
}

impl MistralFormat {
    /// vLLM's choice: `has_token` looks a token up in the tokenizer's vocabulary;
    /// `mistral_common` describes a mistral-common tokenizer (`None` for a
    /// tokenizers-format one, whose `supports_grammar` is false).
    ///
    /// Calls are pre-v11 for a mistral-common tokenizer before v11, or a
    /// vocabulary without `[ARGS]`; reasoning uses `[THINK]` when the
    /// vocabulary has it, else `<think>` text when the tokenizer supports
    /// grammars, else there is none.
    pub fn detect(
        has_token: impl Fn(&str) -> bool,
        mistral_common: Option<MistralTokenizerInfo>,
    ) -> Self {
        let pre_v11_calls = match mistral_common {
            Some(info) => info.version < 11,
            None => !has_token("[ARGS]"),
        };
        let reasoning = if has_token("[THINK]") {
            MistralReasoning::SpecialToken
        } else if mistral_common.is_some_and(|info| info.supports_grammar) {
            MistralReasoning::Text
        } else {
            MistralReasoning::None
        };
        Self {
            pre_v11_calls,
            reasoning,
        }
    }
}

impl ParserOptions {
    /// A `chat_template_kwargs` flag, Python-truthy, or `default` when absent.
    pub fn template_flag(&self, name: &str, default: bool) -> bool {
        self.chat_template_kwargs
            .get(name)
            .map_or(default, py_truthy)
    }
}

/// Python's `bool(value)` for a JSON value.
pub fn py_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}
