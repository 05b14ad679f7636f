//! vLLM 0.33.0's serving-layer rules around parsers, per request.
//!
//! A server builds one [`ServingParsers`] at start-up from its flags
//! (`--reasoning-parser`, `--tool-call-parser`, `--enable-auto-tool-choice`)
//! and, for every chat request:
//!
//! 1. [`ServingParsers::adjust_request`]: vLLM's request checks (a
//!    `tool_choice` the server cannot honour is a 400 with vLLM's message) and
//!    every parser's `adjust_request` (`skip_special_tokens`, structured
//!    outputs for a forced tool choice: a JSON schema, or the exact
//!    structural-tag string vLLM sends, see below). vLLM adjusts after
//!    rendering, with the prompt's token ids set; only `beam` reads them, so
//!    a server calls [`ServingParsers::adjust_request_for_prompt`] with the
//!    decoded prompt when [`ServingParsers::reads_prompt`], and may adjust
//!    before rendering otherwise;
//! 2. after rendering, one [`ChoiceParser`] per choice from
//!    [`ServingParsers::choice_parser`] with the prompt's token ids (and, when
//!    [`ServingParsers::reads_prompt`], its decoded text): the parser starts
//!    in the state vLLM starts it in (`set_prompt_token_ids` /
//!    `is_reasoning_end`, read from the prompt's marker tokens, or from the
//!    decoded prompt by the `hf` / `beam` parsers, as vLLM reads it), except
//!    that a legacy reasoning parser before tool-call parsing starts as vLLM's
//!    whole text does, which never shows it the prompt
//!    ([`ReasoningParser::follows_whole_text`](crate::ReasoningParser::follows_whole_text));
//! 3. every engine step, [`ChoiceParser::push`]; at the end
//!    [`ChoiceParser::message`] and [`ChoiceParser::finish_reason`].
//!
//! After rendering, [`ServingParsers::resolve_reasoning_ended`] also gives the
//! engine request's `reasoning_ended` as vLLM resolves it (the reasoning
//! parser's `is_reasoning_end` on the prompt's token ids, or on its decoded
//! text for the `hf` / `beam` parsers, [`ServingParsers::is_reasoning_end`]).
//!
//! # Structural tags
//!
//! With `VLLM_ENFORCE_STRICT_TOOL_CALLING` (on by default) vLLM holds calls of
//! the 24 tool parsers with a `structural_tag_model` to an xgrammar structural
//! tag: for `required` and named choices, and for `auto` with
//! `parallel_tool_calls: false`, strict tools or (GLM-4.5/4.7) always; the
//! server's `--tool-strict-level` ([`ServingParsers::with_tool_strict_level`],
//! [`ToolStrictLevel`]) replaces the tool parser's default level as the floor.
//! [`StructuredOutputs::StructuralTag`]'s `json` is the string vLLM 0.33.0
//! puts in `structured_outputs.structural_tag`, byte for byte
//! (`tests/structural_tags.rs` against `scripts/gen_structural_tags.py`), for
//! every one of them: `hermes` / `qwen3_json`, `longcat`, `llama3_json` /
//! `llama4_json`, `qwen3_coder` / `qwen3_xml` / `step3p5` / `step5`, `mimo`,
//! the DeepSeek family (`deepseek_v3`, `deepseek_v31`, `deepseek_v32`,
//! `deepseek_v4`, `deepseek_v41`), `kimi_k2`, `kimi_k3`, `glm45` / `glm47` /
//! `ling3`, `minimax_m2`, `plamo3`, `hy_v4` and `openai` (Harmony, whose
//! parser also moves a `response_format` into a structural tag without tools).
//! Not built (`json: None`, the request goes unconstrained): a
//! `response_format` other than `json_schema` / `json_object` (or
//! `structured_outputs` given directly) combined with `auto`; HY V4 with
//! suffixed structural tokens unless [`ServingParsers::with_token_suffix`]
//! names the suffix.
//!
//! vLLM's Cohere Command parser class (`cohere_command3` / `cohere_command4`)
//! builds its own tag from the model's architecture
//! ([`ServingParsers::with_model_architecture`]): a JSON `response_format`
//! gives the exact string, and so do tools whose schemas are inside the
//! subset [`json_schema_grammar`] converts exactly as xgrammar 0.2.8 prints
//! them ([`cohere_tools_grammar`]); other tools leave the tag unbuilt (`json:
//! None`).
//!
//! vLLM's `beam` parser derives its tag from the checkpoint's response
//! template (`vllm/parser/beam.py`, `vllm/parser/response_template_grammar.py`)
//! on nearly every request: reasoning (from the message start), calls in the
//! template's format with strict JSON arguments, the answer (in a JSON
//! `response_format`); [`RequestAdjustments::grammar_from_parser`] when the
//! prompt ends at the message start; a `required` / named choice it cannot
//! derive is refused as vLLM refuses it. The tag is vLLM's byte for byte
//! (`tests/beam_grammars.rs` against `scripts/gen_beam_grammars.py`) for
//! `json` and `xml-inline` arguments. Where vLLM asks xgrammar whether a JSON
//! schema compiles, [`json_schema_grammar::compiles`] answers with xgrammar's
//! own checks, a string `pattern` as xgrammar's JSON-schema converter reads
//! it ([`xgrammar_fsm_regex`]); a schema it cannot decide (a `pattern` that
//! module leaves undecided, counts beyond 32 bits), `regex` constraints and
//! `xml-inline` string values with a `pattern` that [`xgrammar_regex`] or
//! [`python_re`] leave undecided, Lark `grammar` constraints and EBNF ones
//! [`xgrammar_ebnf`] leaves undecided leave the tag unbuilt (`json: None`).
//!
//! The rules follow `vllm/parser/abstract_parser.py` (`DelegatingParser`),
//! `vllm/parser/parser_manager.py`, `vllm/renderers/online_renderer.py` and
//! `vllm/entrypoints/openai/chat_completion/{message_assembly,stream_processor}.py`.
//!
//! ```
//! use vllm_parser::serving::{ServingParsers, ServingRequest, ToolChoice};
//! use vllm_parser::{Event, Tool};
//!
//! // Start-up: Qwen3 with hermes tool calls; the tokenizer's ids for markers.
//! let vocab = |token: &str| match token {
//!     "<|im_start|>" => Some(1), "<|im_end|>" => Some(2),
//!     "<think>" => Some(3), "</think>" => Some(4), _ => None,
//! };
//! let parsers = ServingParsers::new(Some("qwen3"), Some("hermes"), true, None, vocab)?;
//!
//! let tools = [Tool { name: "f".into(), description: None, parameters: serde_json::json!({}) }];
//! let kwargs = serde_json::Map::new();
//! let request = ServingRequest {
//!     tools: Some(&tools),
//!     ..ServingRequest::new(&kwargs)
//! };
//! // Before rendering: hermes keeps special tokens when tools may be called.
//! let adjusted = parsers.adjust_request(&request)?;
//! assert_eq!(adjusted.skip_special_tokens, Some(false));
//!
//! // After rendering: the prompt `<|im_start|>user…<|im_end|><|im_start|>assistant…`.
//! let prompt = [1, 100, 2, 1, 101];
//! let mut choice = parsers.choice_parser(&request, &prompt, None, true)?;
//! let mut events = Vec::new();
//! for delta in ["<think>hm</think>", "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"] {
//!     events.extend(choice.push(delta, &[], false));
//! }
//! events.extend(choice.push("", &[], true));
//! let message = choice.message(&events);
//! assert_eq!(message.reasoning.as_deref(), Some("hm"));
//! assert_eq!(message.tool_calls[0].name, "f");
//! assert_eq!(choice.finish_reason("stop"), "tool_calls");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod beam;
mod choice;
mod cohere;
mod cohere_tools;
mod ids;
pub mod json_schema_grammar;
mod markers;
mod mistral_grammar;
pub mod python_re;
mod reasoning_end;
mod required;
mod strict;
mod structural_tag;
mod tables;
pub mod xgrammar_ebnf;
pub mod xgrammar_fsm_regex;
pub mod xgrammar_regex;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::ParserError;
use crate::parser::{MistralFormat, MistralReasoning, MistralTokenizerInfo, ParserOptions};
use crate::registry;
use crate::response_template::ResponseTemplate;
use crate::tools::Tool;

pub use choice::ChoiceParser;
pub use cohere_tools::{ToolGrammarError, cohere_tools_grammar};
pub use ids::{mistral_tool_call_id, random_hex, tool_call_id};
pub(crate) use strict::py_str_repr;
pub use strict::{ToolStrictLevel, UnknownToolStrictLevel};

/// The request's `tool_choice`, as the client gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// `"none"`: the output is content.
    None,
    /// `"auto"`: the tool parser finds calls.
    Auto,
    /// `"required"`: at least one call.
    Required,
    /// `{"type": "function", "function": {"name": …}}`: a call of this function.
    Named(String),
}

impl ToolChoice {
    /// Read the OpenAI JSON value (`"none"`, `"auto"`, `"required"` or a named
    /// function object); `None` for anything else.
    pub fn from_openai(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => match s.as_str() {
                "none" => Some(Self::None),
                "auto" => Some(Self::Auto),
                "required" => Some(Self::Required),
                _ => None,
            },
            Value::Object(o) => Some(Self::Named(
                o.get("function")?.get("name")?.as_str()?.to_owned(),
            )),
            _ => None,
        }
    }
}

/// What vLLM's serving layer knows about a chat request when it picks and
/// adjusts parsers.
#[derive(Debug, Clone)]
pub struct ServingRequest<'a> {
    /// `request.tools` (function tools), `None` when absent.
    pub tools: Option<&'a [Tool]>,
    /// `request.tool_choice`, `None` when absent: vLLM then uses `auto` when
    /// the request has tools and `none` otherwise.
    pub tool_choice: Option<ToolChoice>,
    /// `request.parallel_tool_calls` (`Some(false)` keeps only the first call).
    pub parallel_tool_calls: Option<bool>,
    /// `request.include_reasoning` (`false` hides reasoning, logprobs and
    /// token ids when the server has a parser).
    pub include_reasoning: bool,
    /// The server's default `chat_template_kwargs` merged with the request's.
    pub chat_template_kwargs: &'a Map<String, Value>,
    /// `request.skip_special_tokens` as the request gave it.
    pub skip_special_tokens: Option<bool>,
    /// Whether the request sets `response_format` or `structured_outputs`
    /// (vLLM keeps a tool-choice-`auto` structural tag format-only then). A
    /// `response_format` of type `text` alone sets nothing (vLLM's
    /// `extract_structured_outputs` returns `None` for it).
    pub response_format_set: bool,
    /// Per tool of `tools`, whether it sets `function.strict: true` (a strict
    /// tool's arguments are held to its `parameters` in the structural tag;
    /// missing entries mean `false`).
    pub tools_strict: &'a [bool],
    /// `request.response_format` as the client gave it (`None` when absent):
    /// a `tool_choice: auto` structural tag is `or`ed with its `json_schema` /
    /// `json_object` output format, as vLLM does.
    pub response_format: Option<&'a Value>,
    /// `request.structured_outputs` as the client gave it (`None` when
    /// absent): the Mistral grammar reads its `json` / `json_object`.
    pub structured_outputs: Option<&'a Value>,
}

impl<'a> ServingRequest<'a> {
    /// A request as vLLM reads one that sets nothing: no tools or
    /// `tool_choice`, reasoning shown, no `skip_special_tokens`, no
    /// `response_format` or structured outputs; `chat_template_kwargs` are the
    /// server's defaults merged with the request's. Set the request's own
    /// fields with struct-update syntax:
    /// `ServingRequest { tools: Some(&tools), ..ServingRequest::new(&kwargs) }`.
    pub fn new(chat_template_kwargs: &'a Map<String, Value>) -> Self {
        Self {
            tools: None,
            tool_choice: None,
            parallel_tool_calls: None,
            include_reasoning: true,
            chat_template_kwargs,
            skip_special_tokens: None,
            response_format_set: false,
            tools_strict: &[],
            response_format: None,
            structured_outputs: None,
        }
    }

    /// The `tool_choice` vLLM validates and parses with: the given one, else
    /// `auto` with tools and `none` without.
    pub fn effective_tool_choice(&self) -> ToolChoice {
        match &self.tool_choice {
            Some(choice) => choice.clone(),
            None if self.has_tools() => ToolChoice::Auto,
            None => ToolChoice::None,
        }
    }

    /// Whether any tool sets `function.strict: true` (a structural tag then
    /// constrains `auto` calls too).
    pub fn has_strict_tools(&self) -> bool {
        self.tools_strict.contains(&true)
    }

    /// Whether the request has tools (vLLM's `if request.tools`).
    pub fn has_tools(&self) -> bool {
        self.tools.is_some_and(|t| !t.is_empty())
    }

    fn forces_call(&self) -> bool {
        matches!(
            self.effective_tool_choice(),
            ToolChoice::Required | ToolChoice::Named(_)
        )
    }
}

/// The structured-outputs constraint vLLM puts on a request.
#[derive(Debug, Clone, PartialEq)]
pub enum StructuredOutputs {
    /// `structured_outputs.json`: the JSON schema a forced tool choice holds
    /// the output to (`get_json_schema_from_tools`).
    Json(Value),
    /// `structured_outputs.structural_tag`: xgrammar's structural tag vLLM
    /// builds for this `structural_tag_model` (the tool parser's call format),
    /// the request's tools, `tool_choice`, `parallel_tool_calls`, strictness
    /// and (for `auto`) `response_format`.
    StructuralTag {
        /// The tool parser's `structural_tag_model` (e.g. `"hermes"`).
        model: &'static str,
        /// Each call stops after the first (`parallel_tool_calls: false`).
        single_call: bool,
        /// The exact string vLLM sends as `structured_outputs.structural_tag`
        /// (`json.dumps(tag.model_dump())`); `None` where this crate does not
        /// build the model's tag (see the module doc) or cannot express the
        /// request's `response_format` in it: a server then sends the request
        /// unconstrained, as before.
        json: Option<String>,
    },
    /// `structured_outputs.grammar`: the Lark grammar vLLM's Mistral parser
    /// builds with mistral-common's `GrammarFactory` (see
    /// [`ServingParsers::with_mistral_tokenizer`]).
    Grammar(String),
}

/// What the parsers' `adjust_request` changed, to apply before sampling
/// parameters are built. `None` fields are unchanged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestAdjustments {
    /// The new `skip_special_tokens` (always `Some(false)` when set).
    pub skip_special_tokens: Option<bool>,
    /// The new `spaces_between_special_tokens` (response-template and Kimi K3
    /// parsers set it to `false`).
    pub spaces_between_special_tokens: Option<bool>,
    /// The new structured-outputs constraint; when set, vLLM clears the
    /// request's `response_format`.
    pub structured_outputs: Option<StructuredOutputs>,
    /// The constraint covers the reply from its first token, reasoning
    /// included (vLLM's `_grammar_from_parser`, set by the Mistral grammar):
    /// the engine request's `reasoning_ended` is then `true`.
    pub grammar_from_parser: bool,
}

/// A request vLLM refuses: its status, the exact message (where vLLM's is
/// reproducible), and the parameter it names if any.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ServingError {
    /// The HTTP status vLLM answers with.
    pub kind: ServingErrorKind,
    /// vLLM's message.
    pub message: String,
    /// The request parameter at fault (`"tool_choice"`), if vLLM names one.
    pub param: Option<String>,
}

/// The status of a [`ServingError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServingErrorKind {
    /// 400 Bad Request (`BadRequestError`).
    BadRequest,
    /// 500 Internal Server Error (`InternalServerError`): vLLM's serving code
    /// raises an error it does not map to a client error, e.g. xgrammar's
    /// `RuntimeError` on a tool schema it cannot compile. The message is
    /// this crate's (vLLM's carries a timestamp and a source path).
    Internal,
}

impl ServingError {
    fn new(message: impl Into<String>, param: Option<&str>) -> Self {
        Self {
            kind: ServingErrorKind::BadRequest,
            message: message.into(),
            param: param.map(str::to_owned),
        }
    }

    fn internal(message: impl Into<String>) -> Self {
        Self {
            kind: ServingErrorKind::Internal,
            message: message.into(),
            param: None,
        }
    }
}

/// A server's parsers, built once at start-up (cheap to clone, shareable).
#[derive(Clone)]
pub struct ServingParsers {
    reasoning: Option<&'static str>,
    /// The tool parser vLLM runs: only with `--enable-auto-tool-choice`.
    active_tool_name: Option<&'static str>,
    /// `--tool-call-parser` as given (validated, possibly unused).
    tool: Option<&'static str>,
    enable_auto_tool_choice: bool,
    response_template: Option<Arc<ResponseTemplate>>,
    /// Marker token id → marker text, for the prompt's start state.
    markers: Arc<HashMap<u32, &'static str>>,
    /// Markers the reasoning parser's `is_reasoning_end` matches as ordinary
    /// token sequences (Olmo3's `</think>`, Kimi K3's think channel).
    spelled_markers: Arc<[markers::SpelledIds]>,
    /// HY V4's structural-token suffix (`detect_token_suffix`): `""` when the
    /// tokenizer has the unsuffixed `<tool_calls>`, else unknown until
    /// [`ServingParsers::with_token_suffix`].
    token_suffix: Option<String>,
    /// `--tool-strict-level`; `None`: each tool parser's default level.
    tool_strict_level: Option<ToolStrictLevel>,
    /// `model_config.architecture` (Cohere's structural tags need it).
    model_architecture: Option<String>,
    /// The Mistral format the tokenizer selects (`mistral` parsers).
    mistral: MistralFormat,
    /// With vLLM's Mistral parser class (`mistral` as either parser): its
    /// control tokens.
    mistral_tokens: Option<mistral_grammar::GrammarTokens>,
    /// The mistral-common tokenizer [`ServingParsers::with_mistral_tokenizer`]
    /// set (vLLM then skips its tool-choice checks for want of a tool parser,
    /// and one that supports grammars gets the Mistral grammar).
    mistral_tokenizer: Option<MistralTokenizerInfo>,
}

impl std::fmt::Debug for ServingParsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingParsers")
            .field("reasoning", &self.reasoning)
            .field("tool", &self.tool)
            .field("enable_auto_tool_choice", &self.enable_auto_tool_choice)
            .field("tool_strict_level", &self.tool_strict_level)
            .finish_non_exhaustive()
    }
}

const TEMPLATE_PARSERS: &[&str] = &["hf", "beam"];

/// The reasoning parsers besides `hf` / `beam` that vLLM gives the prompt
/// decoded: Muse's `is_reasoning_end` decodes it (`tokenizer.decode`).
const DECODING_REASONING: &[&str] = &["muse", "musespark1x", "muse_glimmer"];

impl ServingParsers {
    /// vLLM's start-up: resolve the names, apply its checks (auto tool choice
    /// needs a tool parser; `hf`/`beam` need a response template and combine
    /// only with themselves; the tokenizer has every token a parser needs),
    /// and resolve the prompt markers' token ids once with `token_id` (the
    /// tokenizer's vocabulary lookup).
    ///
    /// Without `enable_auto_tool_choice` vLLM selects no tool parser at all
    /// (`ParserManager.get_tool_parser`): `tool` is then checked but unused.
    ///
    /// The vocabulary also decides the Mistral format the `mistral` parsers
    /// read ([`MistralFormat::detect`] for a tokenizers-format vocabulary); a
    /// mistral-common tokenizer adds what it knows with
    /// [`ServingParsers::with_mistral_tokenizer`].
    pub fn new(
        reasoning: Option<&str>,
        tool: Option<&str>,
        enable_auto_tool_choice: bool,
        response_template: Option<Arc<ResponseTemplate>>,
        token_id: impl Fn(&str) -> Option<u32>,
    ) -> Result<Self, ParserError> {
        if enable_auto_tool_choice && tool.is_none() {
            return Err(ParserError::AutoToolChoiceWithoutParser);
        }
        let reasoning = reasoning
            .map(registry::reasoning_entry)
            .transpose()?
            .map(|e| e.name);
        let configured_tool = tool.map(registry::tool_entry).transpose()?.map(|e| e.name);
        let active_tool = configured_tool.filter(|_| enable_auto_tool_choice);
        // vLLM composes a response-template parser only with itself.
        let template_of =
            |name: Option<&'static str>| name.filter(|n| TEMPLATE_PARSERS.contains(n));
        let parts: Vec<&'static str> = reasoning.into_iter().chain(active_tool).collect();
        if parts.iter().any(|n| TEMPLATE_PARSERS.contains(n)) {
            let kinds: std::collections::BTreeSet<Option<&str>> =
                parts.iter().map(|n| template_of(Some(n))).collect();
            if kinds.len() > 1 {
                return Err(ParserError::CannotCombine {
                    reasoning: reasoning.unwrap_or("").to_owned(),
                    tool: configured_tool.unwrap_or("").to_owned(),
                });
            }
            if response_template.is_none() {
                return Err(ParserError::MissingResponseTemplate(parts[0].to_owned()));
            }
        }
        registry::check_tokens(reasoning, active_tool, |t| token_id(t).is_some())?;
        // A tokenizers-format vocabulary's Mistral format (`MistralParser`).
        let mistral = MistralFormat::detect(|t| token_id(t).is_some(), None);
        let markers = markers::PROMPT_MARKERS
            .iter()
            .filter_map(|m| token_id(m).map(|id| (id, *m)))
            .collect();
        let spelled_markers = markers::SpelledIds::resolve(reasoning, &token_id).into();
        let token_suffix = token_id("<tool_calls>").map(|_| String::new());
        let mistral_tokens =
            (reasoning == Some("mistral") || active_tool == Some("mistral")).then(|| {
                mistral_grammar::GrammarTokens {
                    tool_calls: token_id("[TOOL_CALLS]"),
                    args: token_id("[ARGS]"),
                    think: token_id("[THINK]").zip(token_id("[/THINK]")),
                }
            });
        Ok(Self {
            reasoning,
            active_tool_name: active_tool,
            tool: configured_tool,
            enable_auto_tool_choice,
            response_template,
            markers: Arc::new(markers),
            spelled_markers,
            token_suffix,
            tool_strict_level: None,
            model_architecture: None,
            mistral,
            mistral_tokens,
            mistral_tokenizer: None,
        })
    }

    /// Tell the parsers that the tokenizer is a mistral-common one (vLLM's
    /// `MistralTokenizer`, `--tokenizer-mode mistral`). vLLM's `MistralParser`
    /// then reads pre-v11 calls by the tokenizer's version rather than by
    /// `[ARGS]`, and `<think>` text reasoning when the tokenizer supports
    /// grammars and has no `[THINK]` (see [`MistralFormat::detect`]); with a
    /// grammar-capable tokenizer (tekken, version 11 or later) it constrains
    /// every request it adjusts with mistral-common's Lark grammar for the
    /// whole reply ([`StructuredOutputs::Grammar`], covering reasoning, so
    /// [`RequestAdjustments::grammar_from_parser`]) instead of the rules of a
    /// `tokenizers` vocabulary (requests with a `regex` / `choice` / `grammar`
    /// / `structural_tag` constraint or a `structural_tag` `response_format`
    /// keep those). A request's `tool_choice` is not refused for want of a
    /// tool parser, as vLLM does not refuse it with such a tokenizer.
    /// [`ServingParsers::new`] alone describes a tokenizers-format vocabulary.
    pub fn with_mistral_tokenizer(mut self, tokenizer: MistralTokenizerInfo) -> Self {
        let has_think = self.mistral.reasoning == MistralReasoning::SpecialToken;
        self.mistral = MistralFormat::detect(|t| has_think && t == "[THINK]", Some(tokenizer));
        self.mistral_tokenizer = Some(tokenizer);
        self
    }

    /// The tokenizer's version when vLLM's Mistral parser class runs on a
    /// mistral-common tokenizer that supports grammars.
    fn mistral_grammar_version(&self) -> Option<u32> {
        let tokenizer = self.mistral_tokenizer.filter(|t| t.supports_grammar)?;
        self.mistral_tokens.map(|_| tokenizer.version)
    }

    /// The Mistral format the `mistral` parsers read for this tokenizer.
    pub fn mistral_format(&self) -> MistralFormat {
        self.mistral
    }

    /// A server without parsers (vLLM's `parser_cls is None`): requests are not
    /// adjusted and every delta is content.
    pub fn none() -> Self {
        Self {
            reasoning: None,
            active_tool_name: None,
            tool: None,
            enable_auto_tool_choice: false,
            response_template: None,
            markers: Arc::default(),
            spelled_markers: Arc::new([]),
            token_suffix: None,
            tool_strict_level: None,
            model_architecture: None,
            mistral: MistralFormat::default(),
            mistral_tokens: None,
            mistral_tokenizer: None,
        }
    }

    /// Set the model's architecture, vLLM's `model_config.architecture` (the
    /// first of `config.json`'s `architectures`, e.g. `Cohere2ForCausalLM`).
    /// vLLM's Cohere Command parser class (`cohere_command3` /
    /// `cohere_command4`) reads it to put a structural tag on requests with a
    /// JSON `response_format` or tools, and refuses them on an architecture it
    /// has no tag style for; without it (as before this was set) requests are
    /// left alone, as vLLM leaves them without a model config. A gpt-oss model
    /// (`GptOssForCausalLM`, rendered with Harmony) has no `tool_choice` refused
    /// for want of a tool parser, as vLLM's `use_harmony` skips that check.
    pub fn with_model_architecture(mut self, architecture: &str) -> Self {
        self.model_architecture = Some(architecture.to_owned());
        self
    }

    /// Set the server's `--tool-strict-level` (vLLM's `tool_strict_level`,
    /// parsed with [`ToolStrictLevel::from_name`]): it replaces every tool
    /// parser's `default_tool_strict_level` as the floor for structural tags.
    /// `auto` follows the request's `tool_choice` and each tool's `strict`;
    /// `function` constrains the call envelope of every request with tools
    /// (`tool_choice: auto` included); `parameter` also pins argument schemas
    /// as if every tool were `strict: true`. Without it (vLLM's default) the
    /// tool parser's own level applies.
    pub fn with_tool_strict_level(mut self, level: ToolStrictLevel) -> Self {
        self.tool_strict_level = Some(level);
        self
    }

    /// The server's `--tool-strict-level`, `None` when unset.
    pub fn tool_strict_level(&self) -> Option<ToolStrictLevel> {
        self.tool_strict_level
    }

    /// Set HY V4's per-checkpoint structural-token suffix (vLLM's
    /// `detect_token_suffix`: the `:…` of the vocabulary's `<tool_calls:…>`,
    /// `""` when unsuffixed). [`ServingParsers::new`] finds only the
    /// unsuffixed tokens; without a suffix HY V4's structural tag is not
    /// built (`json: None`).
    pub fn with_token_suffix(mut self, suffix: &str) -> Self {
        self.token_suffix = Some(suffix.to_owned());
        self
    }

    /// The reasoning parser's registered name.
    pub fn reasoning(&self) -> Option<&'static str> {
        self.reasoning
    }

    /// The tool parser's registered name (`--tool-call-parser`), even when
    /// unused for want of `--enable-auto-tool-choice`.
    pub fn tool(&self) -> Option<&'static str> {
        self.tool
    }

    /// The tool parser vLLM runs (only with `--enable-auto-tool-choice`).
    pub fn active_tool(&self) -> Option<&'static str> {
        self.active_tool_name
    }

    /// Whether vLLM would run its `HarmonyParser` (gpt-oss): taken as the
    /// `openai_gptoss` reasoning parser or the `openai` tool parser, since
    /// vLLM picks it by the model type this crate does not see.
    fn is_harmony(&self) -> bool {
        self.reasoning == Some("openai_gptoss") || self.active_tool_name == Some("openai")
    }

    /// Whether the server's parsers read the rendered prompt as text: the
    /// response-template parsers (`hf`, `beam`), which vLLM gives the prompt
    /// decoded (`_decode`) for their start state and `is_reasoning_end`, and
    /// `beam`'s grammar
    /// ([`adjust_request_for_prompt`](Self::adjust_request_for_prompt)); and
    /// the Muse reasoning parsers, whose `is_reasoning_end` decodes it. A
    /// server decodes the rendered prompt only then (special tokens kept, no
    /// clean-up: Muse's plain `decode` cleans up only for a tokenizer with
    /// `clean_up_tokenization_spaces`), and passes it to
    /// [`choice_parser`](Self::choice_parser),
    /// [`is_reasoning_end`](Self::is_reasoning_end) and
    /// [`resolve_reasoning_ended`](Self::resolve_reasoning_ended).
    pub fn reads_prompt(&self) -> bool {
        (self.response_template.is_some() && self.template_parser())
            || self
                .reasoning
                .is_some_and(|n| DECODING_REASONING.contains(&n))
    }

    /// The prompt a parser built for this server reads: the decoded text for
    /// the parsers that read it ([`reads_prompt`](Self::reads_prompt)) when
    /// the server passes it, otherwise the marker view
    /// ([`prompt_markers`](Self::prompt_markers)).
    fn prompt_view(
        &self,
        prompt_token_ids: &[u32],
        prompt_text: Option<&str>,
        spelled: &[markers::SpelledIds],
    ) -> String {
        match prompt_text {
            Some(text) if self.reads_prompt() => text.to_owned(),
            _ => self.prompt_markers(prompt_token_ids, spelled),
        }
    }

    /// Whether a response-template parser (`hf` or `beam`) runs.
    fn template_parser(&self) -> bool {
        [self.reasoning, self.active_tool_name]
            .iter()
            .any(|n| n.is_some_and(|n| TEMPLATE_PARSERS.contains(&n)))
    }

    /// Whether the server parses output at all (vLLM's `parser_cls is not None`).
    pub fn is_active(&self) -> bool {
        self.reasoning.is_some() || self.active_tool_name.is_some()
    }

    /// vLLM's request checks and every parser's `adjust_request`, with no
    /// prompt: [`adjust_request_for_prompt`](Self::adjust_request_for_prompt)
    /// with an empty one. Only `beam` reads the prompt; every other parser's
    /// adjustments are the same either way, so they may be applied before
    /// rendering. Errors are 400s with vLLM's exact message.
    pub fn adjust_request(
        &self,
        request: &ServingRequest,
    ) -> Result<RequestAdjustments, ServingError> {
        self.adjust_request_for_prompt(request, "")
    }

    /// vLLM's request checks and every parser's `adjust_request` after
    /// `set_prompt_token_ids`, with `prompt` the rendered prompt as vLLM
    /// decodes its token ids (`skip_special_tokens=False`, no clean-up, no
    /// spaces between special tokens; for most tokenizers the rendered
    /// prompt text itself). `beam` derives its structural tag from where the
    /// prompt leaves the assistant message (at its start, inside open
    /// reasoning or an open answer). Errors are 400s with vLLM's exact
    /// message.
    pub fn adjust_request_for_prompt(
        &self,
        request: &ServingRequest,
        prompt: &str,
    ) -> Result<RequestAdjustments, ServingError> {
        let choice = request.effective_tool_choice();
        // online_renderer: tool_choice without a tool parser (not checked with a
        // mistral-common tokenizer, nor for a gpt-oss model, which renders Harmony).
        let harmony_model = self.model_architecture.as_deref() == Some("GptOssForCausalLM");
        if self.active_tool_name.is_none()
            && choice != ToolChoice::None
            && self.mistral_tokenizer.is_none()
            && !harmony_model
        {
            return Err(match &choice {
                ToolChoice::Auto if !self.enable_auto_tool_choice => ServingError::new(
                    "\"auto\" tool choice requires --enable-auto-tool-choice and \
                     --tool-call-parser to be set",
                    None,
                ),
                ToolChoice::Named(name) => ServingError::new(
                    format!(
                        "tool_choice=function \"{name}\" requires --tool-call-parser to be set"
                    ),
                    None,
                ),
                _ => ServingError::new(
                    "tool_choice=\"required\" requires --tool-call-parser to be set",
                    None,
                ),
            });
        }
        let mut out = RequestAdjustments::default();
        if !self.is_active() {
            return Ok(out);
        }
        // `should_adjust_request`: a reasoning parser, a tool choice, or the
        // Mistral tool parser on a grammar-capable tokenizer.
        let template = self.template_parser();
        let mistral_grammar =
            self.active_tool_name == Some("mistral") && self.mistral_grammar_version().is_some();
        if self.reasoning.is_none() && choice == ToolChoice::None && !template && !mistral_grammar {
            return Ok(out);
        }
        // MistralParser.adjust_request with a grammar-capable mistral-common
        // tokenizer: the grammar replaces every other rule.
        if let (Some(tokens), Some(version)) = (self.mistral_tokens, self.mistral_grammar_version())
            && !mistral_grammar::keeps_legacy_rules(request)
        {
            let grammar = mistral_grammar::grammar(tokens, version, request).map_err(|token| {
                ServingError::new(format!("Unknown special token: {token}"), None)
            })?;
            out.structured_outputs = Some(StructuredOutputs::Grammar(grammar));
            out.grammar_from_parser = true;
            return Ok(out);
        }
        let no_skip = |out: &mut RequestAdjustments| out.skip_special_tokens = Some(false);
        // HarmonyParser._adjust_output_format: the output format moves into a
        // structural tag (final channel after optional analysis), tools or not.
        if self.is_harmony()
            && let Some(format) = harmony_output(request)
        {
            out.structured_outputs = Some(StructuredOutputs::StructuralTag {
                model: "harmony",
                single_call: false,
                json: format.map(structural_tag::dump_tag),
            });
        }
        // Kimi K3's parser-level class keeps special tokens and their spacing.
        if self.reasoning == Some("kimi_k3") || self.active_tool_name == Some("kimi_k3") {
            no_skip(&mut out);
            out.spaces_between_special_tokens = Some(false);
        }
        if template {
            no_skip(&mut out);
            out.spaces_between_special_tokens = Some(false);
        }
        if let Some(name) = self.reasoning {
            if tables::REASONING_SKIP_ALWAYS.contains(&name) {
                no_skip(&mut out);
            }
            if matches!(name, "hf" | "beam" | "kimi_k3") {
                out.spaces_between_special_tokens = Some(false);
            }
        }
        // BeamParser: its own `_constrain_request`, no other rule.
        if let Some(template) = self
            .response_template
            .as_ref()
            .filter(|_| self.reasoning == Some("beam") || self.active_tool_name == Some("beam"))
        {
            let parsers = beam::BeamParsers {
                template,
                reasoning: self.reasoning == Some("beam"),
                tool: self.active_tool_name == Some("beam"),
                strict_level: self.tool_strict_level,
            };
            match beam::constrain(&parsers, request, prompt)? {
                beam::BeamTag::None => {}
                beam::BeamTag::Tag {
                    json,
                    message_start,
                } => {
                    out.structured_outputs = Some(StructuredOutputs::StructuralTag {
                        model: "beam",
                        single_call: false,
                        json: Some(json),
                    });
                    out.grammar_from_parser = message_start;
                }
                beam::BeamTag::Unbuilt => {
                    out.structured_outputs = Some(StructuredOutputs::StructuralTag {
                        model: "beam",
                        single_call: false,
                        json: None,
                    });
                }
            }
            return Ok(out);
        }
        // CohereCommandParser._apply_structural_tags, before its
        // DelegatingParser.adjust_request.
        let mut structural = false;
        let cohere_class = [self.reasoning, self.tool]
            .iter()
            .any(|n| n.is_some_and(|n| n.starts_with("cohere_command")));
        if cohere_class {
            match cohere::apply(self.model_architecture.as_deref(), request) {
                cohere::CohereTag::Unchanged => {}
                cohere::CohereTag::Refused(message) => {
                    return Err(ServingError::new(message, None));
                }
                cohere::CohereTag::Failed(message) => {
                    return Err(ServingError::internal(message));
                }
                cohere::CohereTag::Tag(json) => {
                    structural = true;
                    out.structured_outputs = Some(StructuredOutputs::StructuralTag {
                        model: "cohere_command",
                        single_call: false,
                        json,
                    });
                }
            }
        }
        // MistralParser's legacy branch (a tokenizers-format vocabulary, or a
        // mistral-common tokenizer without grammar support), whichever of its
        // parsers runs: calls keep their marker, and a forced choice is held to
        // Mistral's JSON array of calls.
        if self.mistral_tokens.is_some() {
            if request.has_tools() && choice != ToolChoice::None {
                no_skip(&mut out);
            }
            if let Some(schema) = mistral_forced_schema(request) {
                out.structured_outputs = Some(StructuredOutputs::Json(schema));
            }
        }
        let Some(tool) = self.active_tool_name else {
            return Ok(out);
        };
        let traits = tables::tool_traits(tool).ok_or_else(|| {
            ServingError::new(format!("tool parser {tool:?} has no serving rules"), None)
        })?;
        if matches!(tool, "hf" | "beam" | "cohere_command3" | "cohere_command4") {
            no_skip(&mut out);
            if matches!(tool, "hf" | "beam") {
                out.spaces_between_special_tokens = Some(false);
            }
        }
        if tool == "hf"
            && request.has_tools()
            && choice != ToolChoice::None
            && let Some((guarantee, param)) = unsupported_template_guarantee(request)
        {
            return Err(ServingError::new(
                format!(
                    "response_template parsing cannot guarantee {guarantee} without a \
                     format-compatible structural grammar (parameter={param})"
                ),
                Some(param),
            ));
        }
        if tool == "k2_horizon" {
            check_k2_horizon_format(request.chat_template_kwargs)?;
        }
        // DelegatingParser._apply_structural_tag.
        if let Some(model) = traits.structural_tag_model
            && request.has_tools()
            && choice != ToolChoice::None
        {
            let is_auto = choice == ToolChoice::Auto;
            let single_call = request.parallel_tool_calls == Some(false);
            let mut level = self
                .tool_strict_level
                .unwrap_or(traits.default_strict_level);
            if single_call && !(is_auto && request.response_format_set) {
                level = level.max(ToolStrictLevel::Function);
            }
            // Auto is unconstrained at level 0 without strict tools, and for
            // HY V4 (its get_structural_tag forces choices only) unless a
            // response format turns the tag into `required` or the format.
            let unconstrained_auto = is_auto
                && ((level == ToolStrictLevel::Auto && !request.has_strict_tools())
                    || (model == "hy_v4" && !request.response_format_set));
            let applies = !unconstrained_auto;
            if applies {
                structural = true;
                let json = structural_tag_json(
                    model,
                    self.token_suffix.as_deref(),
                    request,
                    &choice,
                    level,
                    single_call,
                );
                out.structured_outputs = Some(StructuredOutputs::StructuralTag {
                    model,
                    single_call,
                    json,
                });
            }
        }
        // The tool parser's own adjust_request.
        let forced = request.has_tools() && request.forces_call();
        let json_path = match tool {
            // These skip the base JSON schema for forced choices.
            "gemma4" | "poolside_v1" | "muse" | "muse_glimmer" | "musespark1x" => !forced,
            "kimi_k2" | "kimi_k3" | "mistral" | "k2_horizon" | "minimax_m3" => false,
            _ => true,
        };
        if json_path
            && request.has_tools()
            && !structural
            && traits.supports_required_and_named
            && let Some(schema) = forced_tool_schema(request)
        {
            out.structured_outputs = Some(StructuredOutputs::Json(schema));
        }
        if tool == "kimi_k3" && matches!(choice, ToolChoice::Named(_)) && !structural {
            return Err(ServingError::new(
                "Named tool choice for Kimi K3 requires strict tool calling \
                 (VLLM_ENFORCE_STRICT_TOOL_CALLING) so the XTML structural tag can force \
                 the call. Otherwise use `tool_choice` set to \"auto\", \"required\", or \"none\".",
                Some("tool_choice"),
            ));
        }
        let tools_not_none = request.has_tools() && choice != ToolChoice::None;
        match traits.skip {
            tables::SkipRule::Keep => {}
            tables::SkipRule::Always => no_skip(&mut out),
            tables::SkipRule::ToolsNotNone if tools_not_none => no_skip(&mut out),
            tables::SkipRule::Forced if forced => {
                no_skip(&mut out);
                out.spaces_between_special_tokens = Some(false);
            }
            _ => {}
        }
        // gemma4 / poolside: forced choices keep special tokens.
        if matches!(tool, "gemma4" | "poolside_v1") && forced {
            no_skip(&mut out);
        }
        if out.skip_special_tokens.is_some() && request.skip_special_tokens == Some(false) {
            // Unchanged in effect; still reported as vLLM sets it.
        }
        Ok(out)
    }

    /// One choice's parser for `request`, started in vLLM's state for the
    /// rendered prompt `prompt_token_ids`. `prompt_text` is that prompt
    /// decoded as vLLM decodes it for the `hf` / `beam` parsers
    /// (`skip_special_tokens=False`, no clean-up, no spaces between special
    /// tokens), which start from it: pass it when
    /// [`reads_prompt`](Self::reads_prompt) (other parsers ignore it; without
    /// it those two read the prompt's marker tokens, which miss a start
    /// anchor or delimiter spelled in ordinary tokens). `streaming` selects
    /// vLLM's streaming rules where they differ from whole-text ones
    /// (`tool_choice: required` streams calls as they appear).
    pub fn choice_parser(
        &self,
        request: &ServingRequest,
        prompt_token_ids: &[u32],
        prompt_text: Option<&str>,
        streaming: bool,
    ) -> Result<ChoiceParser, ServingError> {
        let options = ParserOptions {
            tools: request.tools.map(<[Tool]>::to_vec).unwrap_or_default(),
            chat_template_kwargs: request.chat_template_kwargs.clone(),
            prompt: self.prompt_view(prompt_token_ids, prompt_text, &[]),
            response_template: self.response_template.clone(),
            tool_choice: request.tool_choice.clone(),
            mistral: self.mistral,
        };
        ChoiceParser::new(self, request, options, streaming)
    }

    /// The prompt as its marker tokens in order (every other token becomes
    /// U+0001): vLLM reads the start state from token ids, so a marker's text
    /// inside ordinary tokens never counts, and the marker tokens (think tags,
    /// turn boundaries) are all the parsers look at. Except `spelled`: markers
    /// matched as ordinary token sequences (only in `is_reasoning_end`).
    fn prompt_markers(&self, prompt_token_ids: &[u32], spelled: &[markers::SpelledIds]) -> String {
        let mut text = String::new();
        let mut rest = prompt_token_ids;
        while let Some((id, after)) = rest.split_first() {
            if let Some(m) = spelled.iter().find(|m| m.starts(rest)) {
                text.push_str(m.marker);
                rest = &rest[1 + m.rest.len()..];
                continue;
            }
            match self.markers.get(id) {
                Some(marker) => text.push_str(marker),
                None => text.push('\u{1}'),
            }
            rest = after;
        }
        text
    }
}

/// The structural tag's JSON for a request `_apply_structural_tag` constrains
/// (`resolve_tool_strictness`, the model's tag, `limit_to_single_tool_call`,
/// the `or` with an `auto` request's output format).
fn structural_tag_json(
    model: &'static str,
    token_suffix: Option<&str>,
    request: &ServingRequest,
    choice: &ToolChoice,
    level: ToolStrictLevel,
    single_call: bool,
) -> Option<String> {
    let tools = request.tools?;
    let strict: Vec<bool> = (0..tools.len())
        .map(|i| {
            level >= ToolStrictLevel::Parameter
                || request.tools_strict.get(i).copied().unwrap_or(false)
        })
        .collect();
    let (tag_choice, forced_name) = match choice {
        ToolChoice::Auto => (structural_tag::Choice::Auto, None),
        ToolChoice::Required => (structural_tag::Choice::Required, None),
        ToolChoice::Named(name) => (structural_tag::Choice::Forced, Some(name.as_str())),
        ToolChoice::None => return None,
    };
    let output = if *choice == ToolChoice::Auto && request.response_format_set {
        if model == "harmony" {
            // The output format as Harmony's adjust_request already wrapped it.
            Some(harmony_output(request)??)
        } else {
            Some(structural_tag::response_format_output(
                request.response_format?,
            )?)
        }
    } else {
        None
    };
    structural_tag::build(
        model,
        token_suffix,
        tools,
        &strict,
        tag_choice,
        forced_name,
        single_call,
        output,
    )
}

/// Harmony's output format for the request's `response_format`: `None` when
/// it sets none (or `text`), `Some(None)` when this crate cannot express it.
fn harmony_output(request: &ServingRequest) -> Option<Option<Value>> {
    if !request.response_format_set {
        return None;
    }
    match request.response_format {
        Some(rf) if rf.get("type").and_then(Value::as_str) == Some("text") => None,
        Some(rf) => Some(
            structural_tag::response_format_output(rf).map(structural_tag::harmony_output_format),
        ),
        None => Some(None),
    }
}

/// `_unsupported_tool_guarantee`: what the `hf` parser cannot enforce, and the
/// parameter that asked for it.
fn unsupported_template_guarantee(
    request: &ServingRequest,
) -> Option<(&'static str, &'static str)> {
    if request.has_strict_tools() {
        return Some(("strict tools", "tools"));
    }
    match request.effective_tool_choice() {
        ToolChoice::Required => return Some(("required tool choice", "tool_choice")),
        ToolChoice::Named(_) => return Some(("named tool choice", "tool_choice")),
        _ => {}
    }
    (request.parallel_tool_calls == Some(false))
        .then_some(("parallel_tool_calls=False", "parallel_tool_calls"))
}

/// `MistralParser._build_guided_schema_pre_v11`: Mistral's bare JSON array of
/// `{"name", "arguments"}` for `required` / named choices, unless the request
/// brings its own `structured_outputs` or a `structural_tag` `response_format`.
fn mistral_forced_schema(request: &ServingRequest) -> Option<Value> {
    let overridable = request.response_format.is_none_or(|f| {
        matches!(
            f.get("type").and_then(Value::as_str),
            Some("text" | "json_object" | "json_schema")
        )
    });
    if request.structured_outputs.is_some() || !overridable {
        return None;
    }
    let tools = request.tools.filter(|t| !t.is_empty())?;
    let (applicable, single): (Vec<&Tool>, bool) = match request.tool_choice.as_ref()? {
        ToolChoice::Required => (tools.iter().collect(), false),
        ToolChoice::Named(name) => (tools.iter().filter(|t| &t.name == name).collect(), true),
        _ => return None,
    };
    if applicable.is_empty() {
        return None;
    }
    let any_of: Vec<Value> = applicable
        .iter()
        .map(|t| {
            let arguments = match &t.parameters {
                Value::Null => serde_json::json!({"type": "object"}),
                Value::Object(o) if o.is_empty() => serde_json::json!({"type": "object"}),
                other => other.clone(),
            };
            serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [t.name]},
                    "arguments": arguments,
                },
                "required": ["name", "arguments"],
            })
        })
        .collect();
    let mut schema = serde_json::json!({"type": "array", "minItems": 1});
    if single {
        schema["maxItems"] = Value::from(1);
    }
    schema["items"] = serde_json::json!({"type": "object", "anyOf": any_of});
    Some(schema)
}

/// K2 Horizon's `_request_tool_format`: `tool_call_format` must be one it knows.
fn check_k2_horizon_format(kwargs: &Map<String, Value>) -> Result<(), ServingError> {
    match kwargs.get("tool_call_format") {
        None => Ok(()),
        Some(Value::String(s)) if matches!(s.as_str(), "json" | "xml" | "xml_typed") => Ok(()),
        Some(other) => Err(ServingError::new(
            format!(
                "Unsupported tool_call_format {}. Supported values: json, xml, xml_typed.",
                py_repr(other)
            ),
            None,
        )),
    }
}

/// vLLM's `get_json_schema_from_tools`: the JSON schema that holds the output
/// to a forced tool choice (a named function's parameters, or for `required`
/// an array of `{"name", "parameters"}`), `None` for `auto` and `none`.
pub fn forced_tool_schema(request: &ServingRequest) -> Option<Value> {
    let tools = request.tools?;
    let params_or_empty = |p: &Value| match p {
        Value::Object(o) if !o.is_empty() => p.clone(),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    };
    match request.tool_choice.as_ref()? {
        ToolChoice::Named(name) => tools
            .iter()
            .find(|t| &t.name == name)
            .map(|t| params_or_empty(&t.parameters)),
        ToolChoice::Required => {
            let mut defs = Map::new();
            let schemas: Vec<Value> = tools
                .iter()
                .map(|t| {
                    let mut params = params_or_empty(&t.parameters);
                    // `_get_tool_schema_defs` pops each tool's `$defs` into
                    // one top-level `$defs` (from the same dicts).
                    if let Some(Value::Object(d)) =
                        params.as_object_mut().and_then(|p| p.remove("$defs"))
                    {
                        defs.extend(d);
                    }
                    serde_json::json!({
                        "properties": {
                            "name": {"type": "string", "enum": [t.name]},
                            "parameters": params,
                        },
                        "required": ["name", "parameters"],
                    })
                })
                .collect();
            let mut schema = serde_json::json!({
                "type": "array",
                "minItems": 1,
                "items": {"type": "object", "anyOf": schemas},
            });
            if request.parallel_tool_calls == Some(false) {
                schema["maxItems"] = Value::from(1);
            }
            if !defs.is_empty() {
                schema["$defs"] = Value::Object(defs);
            }
            Some(schema)
        }
        ToolChoice::None | ToolChoice::Auto => None,
    }
}

/// Python's `repr` of a JSON value, as vLLM's messages print it.
fn py_repr(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

/// Regex patterns for the no-panic tests of this module's regex readers:
/// 20 000 short random strings of regex syntax, then long, deeply nested and
/// wide ones.
#[cfg(test)]
pub(crate) fn hostile_patterns() -> Vec<String> {
    let pieces = [
        "(", ")", "[", "]", "\\", "{", "}", ",", "?", "*", "+", "|", "^", "$", ".", "-", "<", ">",
        "=", "!", ":", "P", "x", "u", "U", "N", "c", "1", "9", "0", "a", "é", "\n", "#", "'", "\"",
        "İ", "Ů", " ", "(?", "(?i)", "\\u{", "\\x", "{2,3}", "[^",
    ];
    // xorshift64: a fixed, evenly spread sequence.
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut patterns = Vec::new();
    for _ in 0..20_000 {
        let len = next() % 12;
        let pattern: String = (0..len)
            .map(|_| pieces[(next() % pieces.len() as u64) as usize])
            .collect();
        patterns.push(pattern);
    }
    patterns.push("(a|[b-c]{2,3}?)*".repeat(2000));
    patterns.push(format!("{}{}", "(?:".repeat(5000), ")".repeat(5000)));
    patterns.push(format!("[{}]", "\\x01".repeat(3000)));
    patterns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any_token(_: &str) -> Option<u32> {
        Some(u32::MAX)
    }

    fn request<'a>(
        tools: Option<&'a [Tool]>,
        choice: Option<ToolChoice>,
        kwargs: &'a Map<String, Value>,
    ) -> ServingRequest<'a> {
        ServingRequest {
            tools,
            tool_choice: choice,
            ..ServingRequest::new(kwargs)
        }
    }

    #[test]
    fn start_up_refuses_what_vllm_refuses() {
        assert_eq!(
            ServingParsers::new(None, None, true, None, any_token).unwrap_err(),
            ParserError::AutoToolChoiceWithoutParser
        );
        assert!(matches!(
            ServingParsers::new(Some("hf"), Some("hermes"), true, None, any_token),
            Err(ParserError::CannotCombine { .. })
        ));
        assert!(matches!(
            ServingParsers::new(Some("hf"), None, false, None, any_token),
            Err(ParserError::MissingResponseTemplate(_))
        ));
        assert!(matches!(
            ServingParsers::new(Some("deepseek_r1"), None, false, None, |_| None),
            Err(ParserError::MissingToken { .. })
        ));
        // A tokenizer without `[ARGS]` is pre-v11 for vLLM (JSON-array calls).
        let pre_v11 = |t: &str| (t != "[ARGS]").then_some(1);
        let parsers = ServingParsers::new(None, Some("mistral"), true, None, pre_v11).unwrap();
        assert_eq!(
            parsers.mistral_format(),
            MistralFormat {
                pre_v11_calls: true,
                reasoning: MistralReasoning::SpecialToken
            }
        );
        // A mistral-common tekken v11 without [THINK]: v11 calls, <think> text.
        let tekken_v11 = |t: &str| (t != "[THINK]").then_some(1);
        let parsers = ServingParsers::new(None, Some("mistral"), true, None, tekken_v11)
            .unwrap()
            .with_mistral_tokenizer(MistralTokenizerInfo {
                version: 11,
                supports_grammar: true,
            });
        assert_eq!(
            parsers.mistral_format(),
            MistralFormat {
                pre_v11_calls: false,
                reasoning: MistralReasoning::Text
            }
        );
        // mistral-common v3 decides by version whatever its vocabulary holds.
        let parsers = ServingParsers::new(None, Some("mistral"), true, None, tekken_v11)
            .unwrap()
            .with_mistral_tokenizer(MistralTokenizerInfo {
                version: 3,
                supports_grammar: false,
            });
        assert_eq!(
            parsers.mistral_format(),
            MistralFormat {
                pre_v11_calls: true,
                reasoning: MistralReasoning::None
            }
        );
        assert!(ServingParsers::new(None, Some("mistral"), true, None, any_token).is_ok());
    }

    #[test]
    fn tool_choice_without_a_tool_parser_is_a_400_with_vllms_message() {
        let kwargs = Map::new();
        let tools = [Tool {
            name: "f".into(),
            description: None,
            parameters: Value::Null,
        }];
        // --tool-call-parser without --enable-auto-tool-choice: no tool parser.
        let parsers = ServingParsers::new(None, Some("hermes"), false, None, any_token).unwrap();
        let message = |choice| {
            parsers
                .adjust_request(&request(Some(&tools), choice, &kwargs))
                .map(|_| ())
                .unwrap_err()
                .message
        };
        assert_eq!(
            message(None),
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"
        );
        assert_eq!(
            message(Some(ToolChoice::Required)),
            "tool_choice=\"required\" requires --tool-call-parser to be set"
        );
        assert_eq!(
            message(Some(ToolChoice::Named("f".into()))),
            "tool_choice=function \"f\" requires --tool-call-parser to be set"
        );
        assert!(
            parsers
                .adjust_request(&request(Some(&tools), Some(ToolChoice::None), &kwargs))
                .is_ok()
        );
        // vLLM's `use_harmony` (a gpt-oss model) skips the check.
        let gpt_oss = parsers.clone().with_model_architecture("GptOssForCausalLM");
        assert!(
            gpt_oss
                .adjust_request(&request(Some(&tools), Some(ToolChoice::Required), &kwargs))
                .is_ok()
        );
        // Its tool-call markup stays content.
        let mut choice = parsers
            .choice_parser(
                &request(Some(&tools), Some(ToolChoice::None), &kwargs),
                &[],
                None,
                false,
            )
            .unwrap();
        assert!(!choice.is_active());
        let events = choice.push("<tool_call>{}</tool_call>", &[], true);
        assert_eq!(
            events,
            [crate::Event::Content("<tool_call>{}</tool_call>".into())]
        );
    }

    #[test]
    fn forced_schema_is_vllms() {
        let kwargs = Map::new();
        let tools = [Tool {
            name: "f".into(),
            description: None,
            parameters: serde_json::json!({"type": "object", "$defs": {"d": {"type": "string"}}}),
        }];
        let mut r = request(Some(&tools), Some(ToolChoice::Required), &kwargs);
        r.parallel_tool_calls = Some(false);
        let schema = forced_tool_schema(&r).unwrap();
        assert_eq!(schema["maxItems"], 1);
        assert_eq!(schema["$defs"]["d"]["type"], "string");
        assert!(
            schema["items"]["anyOf"][0]["properties"]["parameters"]
                .get("$defs")
                .is_none()
        );
    }
}
