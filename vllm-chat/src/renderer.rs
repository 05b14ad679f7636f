//! [`ChatRenderer`]: a request in, the prompt text and token ids out, as vLLM renders them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::model::{ChatTemplates, ModelFiles};
use crate::openai::{ChatCompletionRequest, ToolChoice, ToolChoiceMode};
use indexmap::IndexMap;
use minijinja::Value as TemplateValue;

use crate::kwargs::Kwargs;
use crate::native::{self, RendererKind, TokenizerMode};
use crate::template::{
    Clock, ContentFormat, FastPathStats, Limits, MessageCache, RenderContext, TemplateSet,
    ToolCache, content_format, from_json,
};
use crate::tokenizer::{SegmentEncoder, Tokenizer};
use crate::{RenderError, preprocess};

/// A rendered prompt: the text the template produced and its token ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPrompt {
    /// The prompt text. Empty for a renderer without a text form (Inkling, which vLLM
    /// renders straight to token ids; [`ChatRenderer::render_text`] gives their
    /// decoding).
    pub text: String,
    /// The prompt's token ids (the text tokenized without adding special tokens,
    /// unless the request set `add_special_tokens`).
    pub token_ids: Vec<u32>,
}

/// transformers' marker appended to the final message for `continue_final_message`.
const CONTINUE_TAG: &str = "CONTINUE_FINAL_MESSAGE_TAG ";
/// Template key of the server-level `--chat-template`.
const SERVER_TEMPLATE: &str = "\u{0}server";
/// Template key of a template sent with the request.
const REQUEST_TEMPLATE: &str = "\u{0}request";
/// Template key of a model's single template.
const MODEL_TEMPLATE: &str = "\u{0}model";
/// Parameters of transformers' `apply_chat_template` that it consumes and never
/// passes to the template.
const CONSUMED_KWARGS: [&str; 12] = [
    "tokenize",
    "return_dict",
    "chat_template",
    "conversation",
    "sanitize_control_tokens",
    "padding",
    "truncation",
    "max_length",
    "return_tensors",
    "return_assistant_tokens_mask",
    "tokenizer_kwargs",
    "continue_final_message",
];

#[derive(Debug)]
struct TemplateInfo {
    source: String,
    format: ContentFormat,
}

/// Renders OpenAI chat requests through a model's chat template, byte for byte as
/// vLLM 0.33.0 (with transformers' `apply_chat_template`) does.
///
/// Build one per model and share it (`&self` methods, `Send + Sync`); templates are
/// compiled once, at construction.
///
/// ```no_run
/// use vllm_chat::{ChatRenderer, openai::ChatCompletionRequest};
///
/// let renderer = ChatRenderer::from_dir("/models/Qwen3-8B")?;
/// let request: ChatCompletionRequest = serde_json::from_str(
///     r#"{"messages": [{"role": "user", "content": "Hello"}]}"#,
/// )?;
/// let prompt = renderer.render(&request)?;
/// println!("{} tokens: {}", prompt.token_ids.len(), prompt.text);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ChatRenderer {
    templates: TemplateSet,
    info: HashMap<String, TemplateInfo>,
    /// Names of the model's named templates (empty for a single template).
    named: Vec<String>,
    has_model_template: bool,
    has_server_template: bool,
    /// The special tokens (`bos_token`, …) as template variables.
    special_tokens: Arc<[(TemplateValue, TemplateValue)]>,
    tools: ToolCache,
    messages: MessageCache,
    tokenizer: Option<Tokenizer>,
    segments: Option<SegmentEncoder>,
    options: RendererOptions,
    files: ModelFiles,
    /// The renderer chat requests go through (the resolved tokenizer mode).
    kind: RendererKind,
    /// Inkling's special-token ids (Inkling renderers only).
    inkling: Option<native::inkling::Specials>,
    /// The Mistral renderer (mistral-common's request encoding), for `mistral` mode.
    mistral: Option<native::mistral::MistralRenderer>,
    /// The Harmony renderer, for `model_type: gpt_oss`.
    harmony: Option<native::harmony::HarmonyRenderer>,
}

/// Settings of a [`ChatRenderer`] (vLLM's server flags that affect rendering).
#[derive(Debug, Clone, Default)]
pub struct RendererOptions {
    /// `--chat-template`: a template source or the name of one of the model's named templates.
    pub chat_template: Option<String>,
    /// `--default-chat-template-kwargs`: template variables applied to every request.
    pub default_chat_template_kwargs: Map<String, Value>,
    /// `--trust-request-chat-template`: accept `chat_template` in requests.
    pub trust_request_chat_template: bool,
    /// Where `strftime_now` reads the time.
    pub clock: Clock,
    /// Limits for templates: fuel, recursion, output and per-operation sizes, cache budgets.
    pub limits: Limits,
    /// `--exclude-tools-when-tool-choice-none`: render without tools when `tool_choice` is `none`.
    pub exclude_tools_when_tool_choice_none: bool,
    /// `--served-model-name`: requests naming another model are refused (render mode).
    pub served_model_name: Option<String>,
    /// `--max-model-len`: overrides the context length read from `config.json`.
    pub max_model_len: Option<u64>,
    /// Render every template with minijinja's interpreter, never with the compiled
    /// fast path (which gives the same output and errors; this switch exists to
    /// compare the two and to measure).
    pub interpreter_only: bool,
    /// When a long prompt segment is encoded on several threads (byte-level BPE
    /// tokenizers with the Qwen2/Llama 3 split); the same ids either way.
    pub parallel_encoding: crate::tokenizer::ParallelEncoding,
}

impl ChatRenderer {
    /// Loads a model directory with default options.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, RenderError> {
        Self::new(ModelFiles::from_dir(dir)?, RendererOptions::default())
    }

    /// Loads a model directory with a `--tokenizer-mode`: the mode is resolved as
    /// vLLM resolves it ([`TokenizerMode::resolve`]) and chat requests go through the
    /// renderer it selects.
    pub fn from_dir_with_mode(
        dir: impl AsRef<Path>,
        mode: TokenizerMode,
        options: RendererOptions,
    ) -> Result<Self, RenderError> {
        let dir = dir.as_ref();
        let resolved = mode.resolve(dir)?;
        let mistral = match resolved.renderer {
            RendererKind::Mistral => Some(native::mistral::MistralRenderer::from_dir(
                dir,
                native::mistral::MistralOptions {
                    exclude_tools_when_tool_choice_none: options
                        .exclude_tools_when_tool_choice_none,
                },
            )?),
            _ => None,
        };
        let mut renderer =
            Self::with_renderer(ModelFiles::from_dir(dir)?, options, resolved.renderer)?;
        renderer.mistral = mistral;
        Ok(renderer)
    }

    /// Builds a renderer from model files and options; compiles every template.
    pub fn new(files: ModelFiles, options: RendererOptions) -> Result<Self, RenderError> {
        Self::with_renderer(files, options, RendererKind::Template)
    }

    /// Builds a renderer of the given kind from model files and options. Renderers
    /// that build prompts in code (the DeepSeek encoders) compile no template.
    pub fn with_renderer(
        files: ModelFiles,
        options: RendererOptions,
        kind: RendererKind,
    ) -> Result<Self, RenderError> {
        let tokenizer = match &files.tokenizer_json {
            Some(bytes) => Some(
                Tokenizer::from_bytes(bytes).map_err(|e| RenderError::Tokenizer(e.to_string()))?,
            ),
            None => None,
        };
        let mut renderer = ChatRenderer {
            templates: TemplateSet::new(options.clock, options.limits, !options.interpreter_only),
            info: HashMap::new(),
            named: Vec::new(),
            has_model_template: false,
            has_server_template: false,
            // A later duplicate wins, in the first one's place (as a map insert).
            special_tokens: files
                .special_tokens
                .iter()
                .map(|(k, v)| {
                    (
                        TemplateValue::from(k.as_str()),
                        TemplateValue::from(v.as_str()),
                    )
                })
                .collect::<IndexMap<_, _>>()
                .into_iter()
                .collect(),
            tools: ToolCache::new(
                options.limits.tool_cache_bytes,
                options.limits.cache_entry_bytes,
            ),
            messages: MessageCache::new(
                options.limits.message_cache_bytes,
                options.limits.cache_entry_bytes,
            ),
            segments: tokenizer
                .as_ref()
                .map(|t| SegmentEncoder::new(t).with_parallelism(options.parallel_encoding)),
            tokenizer,
            options,
            files,
            kind,
            inkling: None,
            mistral: None,
            harmony: None,
        };
        if kind == RendererKind::Harmony {
            renderer.harmony = Some(native::harmony::HarmonyRenderer::new(
                native::harmony::HarmonyOptions {
                    clock: renderer.options.clock,
                    exclude_tools_when_tool_choice_none: renderer
                        .options
                        .exclude_tools_when_tool_choice_none,
                    ..native::harmony::HarmonyOptions::from_env()?
                },
            )?);
        }
        if kind == RendererKind::Inkling {
            let tokenizer = renderer.tokenizer.as_ref().ok_or_else(|| {
                RenderError::Tokenizer(
                    "the Inkling renderer needs the model's tokenizer.json".into(),
                )
            })?;
            renderer.inkling = Some(native::inkling::Specials::new(tokenizer)?);
        }
        if !renderer.uses_template() {
            return Ok(renderer);
        }
        match renderer.files.chat_templates.clone() {
            Some(ChatTemplates::Single(source)) => {
                renderer.compile(MODEL_TEMPLATE, &source)?;
                renderer.has_model_template = true;
            }
            Some(ChatTemplates::Named(list)) => {
                for (name, source) in list {
                    renderer.compile(&name, &source)?;
                    renderer.named.push(name);
                }
            }
            None => {}
        }
        if let Some(server) = renderer.options.chat_template.clone()
            && !renderer.named.contains(&server)
        {
            renderer.compile(SERVER_TEMPLATE, &server)?;
            renderer.has_server_template = true;
        }
        Ok(renderer)
    }

    fn compile(&mut self, key: &str, source: &str) -> Result<(), RenderError> {
        self.templates.add(key, source)?;
        let format = content_format::detect(source);
        self.info.insert(
            key.to_owned(),
            TemplateInfo {
                source: source.to_owned(),
                format,
            },
        );
        Ok(())
    }

    /// The tokenizer, when the model directory has a `tokenizer.json`.
    pub fn tokenizer(&self) -> Option<&Tokenizer> {
        self.tokenizer.as_ref()
    }

    /// The renderer chat requests go through.
    pub fn renderer_kind(&self) -> RendererKind {
        self.kind
    }

    fn uses_template(&self) -> bool {
        matches!(self.kind, RendererKind::Template | RendererKind::KimiK3)
    }

    /// The model files this renderer was built from.
    pub fn model_files(&self) -> &ModelFiles {
        &self.files
    }

    /// The options this renderer was built with.
    pub fn options(&self) -> &RendererOptions {
        &self.options
    }

    /// The content format vLLM would detect for the template a request without tools uses.
    pub fn content_format(&self) -> Option<ContentFormat> {
        self.resolve_template(None, false)
            .ok()
            .map(|key| self.info[&key].format)
    }

    /// Tokenizes text (`add_special_tokens` adds BOS/EOS as the tokenizer's post-processor says).
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>, RenderError> {
        // Mistral: `MistralTokenizer.encode` (completion prompts, `/tokenize`).
        if let Some(mistral) = &self.mistral {
            return mistral.encode(text, add_special_tokens);
        }
        let tokenizer = self
            .tokenizer
            .as_ref()
            .ok_or_else(|| RenderError::Tokenizer("the model has no tokenizer.json".into()))?;
        let ids = match &self.segments {
            Some(segments) => segments.encode_with(tokenizer, text, add_special_tokens),
            None => tokenizer
                .encode_fast(text, add_special_tokens)
                .map(|e| e.get_ids().to_vec()),
        };
        ids.map_err(|e| RenderError::Tokenizer(e.to_string()))
    }

    /// A lower bound on the tokens `text` encodes to, without encoding it (0 when the
    /// tokenizer gives no bound): lets a prompt that cannot fit the context be refused
    /// before a long tokenization.
    pub fn min_tokens(&self, text: &str) -> usize {
        self.segments
            .as_ref()
            .map_or(0, |segments| segments.min_tokens(text))
    }

    /// True when prompts are tokenized by cached segments (see the `tokenizer` module).
    pub fn caches_segments(&self) -> bool {
        self.segments
            .as_ref()
            .is_some_and(SegmentEncoder::is_enabled)
    }

    /// Renders a chat request to prompt text and token ids, through the renderer
    /// of the model's tokenizer mode.
    pub fn render(&self, request: &ChatCompletionRequest) -> Result<RenderedPrompt, RenderError> {
        if let Some(prompt) = self.render_ids(request) {
            return prompt;
        }
        if self.kind == RendererKind::Inkling {
            let token_ids = self.render_inkling(request)?;
            return Ok(RenderedPrompt {
                text: String::new(),
                token_ids,
            });
        }
        let text = self.render_text(request)?;
        // K3 tokenizes inside `apply_chat_template` (no special tokens added).
        let add_special_tokens = request.add_special_tokens && self.kind != RendererKind::KimiK3;
        let token_ids = self.encode(&text, add_special_tokens)?;
        Ok(RenderedPrompt { text, token_ids })
    }

    /// The prompt token ids of a chat request: [`ChatRenderer::render`]'s `token_ids`,
    /// without decoding them to text where the renderer builds ids directly (Mistral,
    /// Harmony: all vLLM computes for them).
    pub fn render_token_ids(
        &self,
        request: &ChatCompletionRequest,
    ) -> Result<Vec<u32>, RenderError> {
        match (self.kind, &self.mistral, &self.harmony) {
            (RendererKind::Mistral, Some(mistral), _) => mistral.render_token_ids(request),
            (RendererKind::Harmony, _, Some(harmony)) => harmony.render_token_ids(request),
            _ => self.render(request).map(|prompt| prompt.token_ids),
        }
    }

    /// The Mistral renderer, when the model is rendered in `mistral` mode.
    pub fn mistral(&self) -> Option<&native::mistral::MistralRenderer> {
        self.mistral.as_ref()
    }

    /// True when the request's `add_special_tokens` applies to the rendered text.
    pub(crate) fn adds_special_tokens(&self, request: &ChatCompletionRequest) -> bool {
        request.add_special_tokens && self.kind != RendererKind::KimiK3
    }

    /// How often this renderer's templates took the compiled fast path (templates
    /// compiled, renders finished there, renders that fell back to minijinja's
    /// interpreter). Both paths produce the same output; this is for monitoring.
    pub fn fast_path_stats(&self) -> FastPathStats {
        self.templates.fast_path_stats()
    }

    /// Renders a chat request to prompt text only (no tokenizer needed), through
    /// the renderer of the model's tokenizer mode.
    pub fn render_text(&self, request: &ChatCompletionRequest) -> Result<String, RenderError> {
        request.validate()?;
        if request.chat_template.is_some() && !self.options.trust_request_chat_template {
            return Err(RenderError::InvalidRequest {
                message: "Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template.".into(),
                param: Some("chat_template".into()),
            });
        }
        if let Some(prompt) = self.render_ids(request) {
            return prompt.map(|p| p.text);
        }
        match self.kind {
            RendererKind::DeepseekV32 | RendererKind::DeepseekV4 | RendererKind::DeepseekV41 => {
                self.render_native(request)
            }
            RendererKind::Cohere => self.render_cohere(request),
            // Inkling has no text form: the text of its token ids.
            RendererKind::Inkling => self.decode(&self.render_inkling(request)?),
            _ => self.render_template(request),
        }
    }

    /// True when the renderer produces token ids directly (Inkling), so that the
    /// text is only their decoding and must not be tokenized again.
    pub(crate) fn renders_token_ids(&self) -> bool {
        matches!(
            self.kind,
            RendererKind::Inkling | RendererKind::Mistral | RendererKind::Harmony
        )
    }

    /// The renderers that build token ids without a template (Mistral, Harmony): their
    /// prompt, or `None` for the others. A Mistral renderer needs its directory's
    /// vocabulary, which [`ChatRenderer::from_dir_with_mode`] reads.
    fn render_ids(
        &self,
        request: &ChatCompletionRequest,
    ) -> Option<Result<RenderedPrompt, RenderError>> {
        match self.kind {
            RendererKind::Mistral => Some(match &self.mistral {
                Some(mistral) => mistral.render(request),
                None => Err(RenderError::Tokenizer(
                    "the Mistral renderer reads its vocabulary from the model directory: build it with ChatRenderer::from_dir_with_mode".into(),
                )),
            }),
            RendererKind::Harmony => self.harmony.as_ref().map(|h| h.render(request)),
            _ => None,
        }
    }

    fn decode(&self, ids: &[u32]) -> Result<String, RenderError> {
        let tokenizer = self
            .tokenizer
            .as_ref()
            .ok_or_else(|| RenderError::Tokenizer("the model has no tokenizer.json".into()))?;
        tokenizer
            .decode(ids, false)
            .map_err(|e| RenderError::Tokenizer(e.to_string()))
    }

    /// Inkling: vLLM's conversation is built first (its errors come first), then the
    /// request's messages are encoded to token ids.
    fn render_inkling(&self, request: &ChatCompletionRequest) -> Result<Vec<u32>, RenderError> {
        request.validate()?;
        if request.chat_template.is_some() && !self.options.trust_request_chat_template {
            return Err(RenderError::InvalidRequest {
                message: "Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template.".into(),
                param: Some("chat_template".into()),
            });
        }
        let specials = self.inkling.as_ref().ok_or_else(|| {
            RenderError::Tokenizer("the Inkling renderer has no special tokens".into())
        })?;
        for (i, m) in request.messages.iter().enumerate() {
            preprocess::convert_message(i, m, ContentFormat::String)?;
        }
        let kwargs = self.template_kwargs(request);
        let tools = match kwargs.get("tools") {
            Some(given) => Some(given.clone()).filter(|t| !t.is_null()),
            None => self.request_tools(request),
        };
        let encode = |text: &str| self.encode(text, false);
        native::inkling::render(
            &request.messages,
            tools.as_ref(),
            &kwargs,
            specials,
            &encode,
        )
    }

    /// The DeepSeek encoders: vLLM's conversation (string content for V3.2, OpenAI
    /// parts for V4), the request's tools as `model_dump()`s, the merged kwargs.
    fn render_native(&self, request: &ChatCompletionRequest) -> Result<String, RenderError> {
        let kwargs = self.template_kwargs(request);
        let tools = match kwargs.get("tools") {
            Some(given) => Some(given.clone()).filter(|t| !t.is_null()),
            None => self.request_tools(request),
        };
        if self.kind == RendererKind::DeepseekV41 {
            // V4.1 encodes the request's messages, not vLLM's conversation (which
            // vLLM still builds first, and whose errors come first).
            for (i, m) in request.messages.iter().enumerate() {
                preprocess::convert_message(i, m, ContentFormat::OpenAi)?;
            }
            return native::deepseek_v41::render(&request.messages, tools.as_ref(), &kwargs);
        }
        let format = match self.kind {
            RendererKind::DeepseekV32 => ContentFormat::String,
            _ => ContentFormat::OpenAi,
        };
        let conversation = request
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| preprocess::convert_message(i, m, format))
            .collect::<Result<Vec<_>, _>>()?;
        match self.kind {
            RendererKind::DeepseekV32 => {
                native::deepseek_v32::render(conversation, tools.as_ref(), &kwargs)
            }
            _ => native::deepseek_v4::render(conversation, tools.as_ref(), &kwargs),
        }
    }

    /// Cohere: vLLM's conversation (`content_format="openai"`), the merged kwargs with
    /// the request's tools as their `tools` default, the request's (or the server's)
    /// chat template.
    fn render_cohere(&self, request: &ChatCompletionRequest) -> Result<String, RenderError> {
        let conversation = request
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| preprocess::convert_message(i, m, ContentFormat::OpenAi))
            .collect::<Result<Vec<_>, _>>()?;
        let mut kwargs = self.template_kwargs(request);
        if !kwargs.contains_key("tools")
            && let Some(tools) = self.request_tools(request)
        {
            kwargs.insert("tools", tools);
        }
        // vLLM's `request.chat_template or default_template` (the server's).
        let chat_template = request
            .chat_template
            .as_deref()
            .filter(|t| !t.is_empty())
            .or(self.options.chat_template.as_deref());
        native::cohere::render(&conversation, &kwargs, chat_template)
    }

    /// `[tool.model_dump() for tool in request.tools]`, unless excluded.
    fn request_tools(&self, request: &ChatCompletionRequest) -> Option<Value> {
        let excluded = self.options.exclude_tools_when_tool_choice_none
            && request.tool_choice == Some(ToolChoice::Mode(ToolChoiceMode::None));
        match &request.tools {
            Some(tools) if !excluded => Some(Value::Array(
                tools.iter().map(|t| t.template_value()).collect(),
            )),
            _ => None,
        }
    }

    /// The chat template path (`hf`, and Kimi-K3 with its conversation and kwargs).
    fn render_template(&self, request: &ChatCompletionRequest) -> Result<String, RenderError> {
        let kimi = self.kind == RendererKind::KimiK3;
        let mut kwargs = self.template_kwargs(request);
        if kimi {
            native::kimi_k3::adjust_kwargs(&mut kwargs, request)?;
        }
        let excluded = self.options.exclude_tools_when_tool_choice_none
            && request.tool_choice == Some(ToolChoice::Mode(ToolChoiceMode::None));
        let tools = match kwargs.get("tools") {
            Some(given) => Some(from_json(given)).filter(|_| !given.is_null()),
            None => match &request.tools {
                Some(tools) if !excluded => Some(self.tools.value(tools)),
                _ => None,
            },
        };
        let documents = kwargs.get("documents").unwrap_or(&Value::Null);
        let add_generation_prompt = crate::native::py::truthy(kwargs.get("add_generation_prompt"));
        let continue_final = crate::native::py::truthy(kwargs.get("continue_final_message"));
        if continue_final && add_generation_prompt {
            // transformers' check, which vLLM's HfRenderer turns into a
            // VLLMValidationError without a parameter.
            return Err(RenderError::validation(
                "continue_final_message and add_generation_prompt are not compatible. Use continue_final_message when you want the model to continue the final message, and add_generation_prompt when you want to add a header that will prompt it to start a new assistant message instead.",
                None,
                None,
            ));
        }

        // A request template is compiled for this request only, by the interpreter
        // alone (compiling it for the fast path too costs more than one render saves).
        let request_template = match &request.chat_template {
            Some(given) if !self.named.contains(given) => {
                let mut set = TemplateSet::untrusted(self.options.clock, self.options.limits);
                set.add(REQUEST_TEMPLATE, given)?;
                Some((
                    set,
                    TemplateInfo {
                        source: given.clone(),
                        format: content_format::detect(given),
                    },
                ))
            }
            _ => None,
        };
        let (set, key, info) = match &request_template {
            Some((set, info)) => (set, REQUEST_TEMPLATE.to_owned(), info),
            None => {
                let key =
                    self.resolve_template(request.chat_template.as_deref(), tools.is_some())?;
                let info = &self.info[&key];
                (&self.templates, key, info)
            }
        };
        let check_conversation = |empty: bool| {
            if empty {
                return Err(RenderError::invalid(
                    "Cannot apply chat template to an empty conversation. Provide at least one message.",
                    "messages",
                ));
            }
            if let Value::Array(docs) = &documents
                && docs.iter().any(|d| !d.is_object())
            {
                return Err(RenderError::invalid(
                    "Documents should be a list of dicts with 'title' and 'text' keys!",
                    "documents",
                ));
            }
            Ok(())
        };
        // Messages are converted one by one (and cached) unless the final one is cut
        // open or developer messages are merged into the system message.
        let (messages, final_message) = if kimi {
            let conversation = request
                .messages
                .iter()
                .enumerate()
                .map(|(i, m)| preprocess::convert_message(i, m, ContentFormat::String))
                .collect::<Result<Vec<_>, _>>()?;
            let mut conversation = native::kimi_k3::normalize_tool_messages(conversation);
            check_conversation(conversation.is_empty())?;
            let final_message = if continue_final {
                Some(mark_final_message(&mut conversation, &info.source)?)
            } else {
                None
            };
            (from_json(&Value::Array(conversation)), final_message)
        } else if continue_final
            || preprocess::converts_developer_messages(&request.messages, &info.source)
        {
            let mut conversation =
                preprocess::conversation(&request.messages, info.format, &info.source)?;
            check_conversation(conversation.is_empty())?;
            let final_message = if continue_final {
                Some(mark_final_message(&mut conversation, &info.source)?)
            } else {
                None
            };
            (from_json(&Value::Array(conversation)), final_message)
        } else {
            let messages = self.messages.values(&request.messages, info.format)?;
            check_conversation(request.messages.is_empty())?;
            (messages, None)
        };

        let mut ctx = RenderContext::new(self.special_tokens.clone(), kwargs.len() + 4);
        for (k, v) in kwargs.iter() {
            if !matches!(k, "tools" | "documents" | "add_generation_prompt")
                && !CONSUMED_KWARGS.contains(&k)
            {
                ctx.set(k.to_owned(), from_json(v));
            }
        }
        ctx.set("messages", messages);
        ctx.set("tools", tools.unwrap_or_else(|| from_json(&Value::Null)));
        ctx.set("documents", from_json(documents));
        ctx.set(
            "add_generation_prompt",
            TemplateValue::from(add_generation_prompt),
        );
        let rendered = set.render(&key, TemplateValue::from_object(ctx))?;
        match final_message {
            Some(final_message) => cut_after_final_message(rendered, &final_message),
            None => Ok(rendered),
        }
    }

    /// vLLM's kwargs merging: `--default-chat-template-kwargs` and the tools, then the
    /// request's `chat_template_kwargs`, then its own fields (`add_generation_prompt`,
    /// `continue_final_message`, `documents`, `reasoning_effort`, and `enable_thinking`
    /// derived from `reasoning_effort`), where a later value wins unless it is null or `"auto"`.
    ///
    /// The request's typed tools are not in the map (they become template values
    /// through the tool cache): `tools` is there only when `chat_template_kwargs`
    /// overrides them.
    fn template_kwargs(&self, request: &ChatCompletionRequest) -> Kwargs {
        let unset = |v: &Value| v.is_null() || v.as_str() == Some("auto");
        // (transformers' `tokenize=False` is implied: `tokenize` never reaches a template.)
        if self.options.default_chat_template_kwargs.is_empty() {
            let mut kwargs = self.request_kwargs(request);
            kwargs.retain(|_, v| !unset(v));
            return kwargs;
        }
        let mut kwargs = Kwargs::from(&self.options.default_chat_template_kwargs);
        kwargs.retain(|k, _| k != "tools");
        for (k, v) in self.request_kwargs(request) {
            if !unset(&v) {
                kwargs.insert(&k, v);
            }
        }
        kwargs
    }

    /// `ChatCompletionRequest.build_chat_params`: the request's `chat_template_kwargs`
    /// overridden by its own fields unless those are null or `"auto"`.
    fn request_kwargs(&self, request: &ChatCompletionRequest) -> Kwargs {
        let unset = |v: &Value| v.is_null() || v.as_str() == Some("auto");
        let mut kwargs = request
            .chat_template_kwargs
            .as_ref()
            .map(Kwargs::from)
            .unwrap_or_default();
        let thinking = match &request.reasoning_effort {
            Some(effort) if !kwargs.contains_key("enable_thinking") => {
                Value::Bool(effort != "none")
            }
            _ => Value::Null,
        };
        let fields = [
            (
                "add_generation_prompt",
                Value::Bool(request.add_generation_prompt()),
            ),
            (
                "continue_final_message",
                Value::Bool(request.continue_final_message),
            ),
            (
                "documents",
                request.documents.as_ref().map_or(Value::Null, |d| {
                    Value::Array(d.iter().cloned().map(Value::Object).collect())
                }),
            ),
            (
                "reasoning_effort",
                request
                    .reasoning_effort
                    .clone()
                    .map_or(Value::Null, Value::String),
            ),
            ("enable_thinking", thinking),
        ];
        for (k, v) in fields {
            if !unset(&v) {
                kwargs.insert(k, v);
            }
        }
        kwargs
    }

    /// The request's effective `chat_template_kwargs` as vLLM reports them in render
    /// mode (`effective_chat_template_kwargs`): server defaults, the request's kwargs,
    /// then its own fields, without the tools.
    pub(crate) fn request_template_kwargs(
        &self,
        request: &ChatCompletionRequest,
    ) -> Map<String, Value> {
        let unset = |v: &Value| v.is_null() || v.as_str() == Some("auto");
        if self.options.default_chat_template_kwargs.is_empty() {
            return self.request_kwargs(request).into_map();
        }
        let mut out = self.options.default_chat_template_kwargs.clone();
        for (k, v) in self.request_kwargs(request) {
            if !unset(&v) {
                out.insert(k, v);
            }
        }
        out
    }

    /// transformers' `get_chat_template`: a named template if `given` names one, else
    /// `tool_use` (with tools) or `default` among named templates, else the single one.
    fn resolve_template(
        &self,
        given: Option<&str>,
        has_tools: bool,
    ) -> Result<String, RenderError> {
        let given = given.or(self.options.chat_template.as_deref());
        if let Some(given) = given {
            if self.named.iter().any(|n| n == given) {
                return Ok(given.to_owned());
            }
            if self.has_server_template && self.options.chat_template.as_deref() == Some(given) {
                return Ok(SERVER_TEMPLATE.to_owned());
            }
        }
        if !self.named.is_empty() {
            if has_tools && self.templates.contains("tool_use") {
                return Ok("tool_use".into());
            }
            if self.templates.contains("default") {
                return Ok("default".into());
            }
            return Err(RenderError::UnknownTemplateName(format!(
                "This model has multiple chat templates with no default specified! Please either pass a chat template or the name of the template you wish to use to the `chat_template` argument. Available template names are {:?}.",
                self.named
            )));
        }
        if self.has_model_template {
            return Ok(MODEL_TEMPLATE.to_owned());
        }
        Err(RenderError::NoTemplate)
    }
}

/// Appends transformers' continuation tag to the final message's content (the last
/// text part for part lists) and returns the original text to continue.
fn mark_final_message(conversation: &mut [Value], source: &str) -> Result<String, RenderError> {
    let no_content = || {
        RenderError::invalid(
            "continue_final_message is set but the final message has no \"content\" to continue!",
            "continue_final_message",
        )
    };
    let last = conversation.last_mut().ok_or_else(no_content)?;
    let content = last
        .get_mut("content")
        .filter(|c| !c.is_null())
        .ok_or_else(no_content)?;
    if !source.contains("content") {
        return Err(RenderError::invalid(
            "continue_final_message is set to \"content\" but this is not an accepted field in the chat_template",
            "continue_final_message",
        ));
    }
    match content {
        Value::String(s) => {
            let original = s.clone();
            s.push_str(CONTINUE_TAG);
            Ok(original)
        }
        Value::Array(parts) => {
            for part in parts.iter_mut().rev() {
                if let Some(Value::String(text)) = part.get_mut("text") {
                    let original = text.clone();
                    text.push_str(CONTINUE_TAG);
                    return Ok(original);
                }
            }
            Err(RenderError::invalid(
                "continue_final_message is set but we could not find any text to continue in the final message!",
                "continue_final_message",
            ))
        }
        _ => Err(no_content()),
    }
}

/// Cuts the rendered text right after the final message's content, as transformers does.
fn cut_after_final_message(rendered: String, final_message: &str) -> Result<String, RenderError> {
    let tag = CONTINUE_TAG.trim();
    if !rendered.contains(final_message.trim()) || !rendered.contains(tag) {
        return Err(RenderError::invalid(
            format!(
                "continue_final_message is set but the final message does not appear in the chat after applying the chat template! This can happen if the chat template deletes portions of the final message. Please verify the chat template and final message in your chat to ensure they are compatible.Final message to continue: {}\nRendered chat:\n{rendered}",
                final_message.trim()
            ),
            "continue_final_message",
        ));
    }
    let loc = rendered.rfind(tag).unwrap_or(rendered.len());
    let mut out = rendered;
    if out[loc..].starts_with(CONTINUE_TAG) {
        out.truncate(loc);
    } else {
        out.truncate(loc);
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
    }
    Ok(out)
}
