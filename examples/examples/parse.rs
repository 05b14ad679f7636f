//! Parse a model output the way a vLLM server with `--tool-call-parser` /
//! `--reasoning-parser` would answer it, and print the assistant message.
//!
//! ```text
//! cargo run --release -p vllm-examples --example parse -- \
//!     --tool-call-parser hermes --reasoning-parser qwen3 \
//!     [--model /models/Qwen3-8B] [--prompt-token-ids prompt.json] \
//!     [--tools tools.json] [--tool-choice required] [--tool-strict-level function] \
//!     [--chunk 4] < output.txt
//! ```
//!
//! Runs vLLM's serving rules ([`vllm_parser::serving`]): the request
//! adjustments and the engine request's `reasoning_ended` (printed to stderr),
//! the parser's start state from the rendered prompt's token ids
//! (`--prompt-token-ids`, a JSON list or a file holding one; needs `--model` to
//! know the marker tokens' ids, and to decode the prompt for the `hf` / `beam`
//! and Muse parsers, which read its text),
//! `tool_choice`, and the finish reason. Prints `{"content", "reasoning", "tool_calls": [{"type",
//! "function": {"name", "arguments"}}], "finish_reason"}` as vLLM's non-streaming
//! response holds it. With `--chunk N` the output is fed N characters at a time
//! and every delta is printed first, one JSON line each in the shape of vLLM's
//! streamed `delta`, then the merged message. `--model` checks that the model's
//! tokenizer has the tokens the parsers need (as vLLM does at start-up), gives
//! `hf`/`beam` the checkpoint's `response_template`, and lets `auto` pick parsers
//! by the model's name. `none` selects no parser, as `serve` takes it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Parser;
use serde_json::{Map, Value, json};
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::serving::{ServingParsers, ServingRequest, ToolChoice, ToolStrictLevel};
use vllm_parser::{Event, MistralTokenizerInfo, Tool, registry};

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "Parse a model output (stdin) into content, reasoning and tool calls")]
struct Args {
    /// Tool-call parser (vLLM's name, `auto` with --model, or `none`).
    #[arg(long)]
    tool_call_parser: Option<String>,
    /// Reasoning parser (vLLM's name, `auto` with --model, or `none`).
    #[arg(long)]
    reasoning_parser: Option<String>,
    /// vLLM's `--tool-strict-level` (auto, function, parameter): the server's floor
    /// for tool-call structural tags (printed with the request adjustments).
    #[arg(long, value_parser = ToolStrictLevel::from_name)]
    tool_strict_level: Option<ToolStrictLevel>,
    /// Model directory: its tokenizer must have the parsers' required tokens.
    #[arg(long)]
    model: Option<PathBuf>,
    /// vLLM's `--tokenizer-mode` for --model (auto, hf, mistral, deepseek_v32,
    /// deepseek_v4, deepseek_v41, kimi_k3, inkling, cohere): where its vocabulary is read.
    #[arg(long, default_value = "auto")]
    tokenizer_mode: vllm_chat::TokenizerMode,
    /// Feed the output N characters at a time and print each delta.
    #[arg(long)]
    chunk: Option<usize>,
    /// JSON file with the request's `tools` (an array of OpenAI tool objects, or
    /// an object with a `tools` array).
    #[arg(long)]
    tools: Option<PathBuf>,
    /// The request's `tool_choice`: `none`, `auto`, `required`, a function
    /// name, or the OpenAI JSON object.
    #[arg(long)]
    tool_choice: Option<String>,
    /// The request's `parallel_tool_calls`.
    #[arg(long)]
    parallel_tool_calls: Option<bool>,
    /// The request's `include_reasoning`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    include_reasoning: bool,
    /// The request's `chat_template_kwargs`, as a JSON object.
    #[arg(long)]
    chat_template_kwargs: Option<String>,
    /// The rendered prompt's token ids: a JSON list, or a file holding one.
    #[arg(long)]
    prompt_token_ids: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (reasoning, tool) = parser_names(&args)?;
    let vocabulary = match &args.model {
        Some(model)
            if args.tokenizer_mode.resolve(model)?.mode == vllm_chat::TokenizerMode::Mistral =>
        {
            Some(Vocabulary::mistral(model)?)
        }
        Some(model) => Some(Vocabulary::read(model)?),
        None => None,
    };
    let response_template = match (&args.model, &vocabulary) {
        (Some(model), Some(_)) => match read_json(model, "tokenizer_config.json")? {
            Some(config) => ResponseTemplate::from_tokenizer_config(&config)?,
            None => None,
        },
        _ => None,
    };
    // Without --model every token a parser asks for exists, under an id no
    // prompt holds.
    let invented = RefCell::new(HashMap::<String, u32>::new());
    let token_id = |token: &str| match &vocabulary {
        Some(v) => v.id(token),
        None => {
            let mut invented = invented.borrow_mut();
            let next = u32::MAX - invented.len() as u32;
            Some(*invented.entry(token.to_owned()).or_insert(next))
        }
    };
    let parsers = ServingParsers::new(
        reasoning.as_deref(),
        tool.as_deref(),
        tool.is_some(),
        response_template,
        token_id,
    )?;
    let parsers = match vocabulary.as_ref().and_then(|v| v.mistral) {
        Some(info) => parsers.with_mistral_tokenizer(info),
        None => parsers,
    };
    let mut parsers = match args.tool_strict_level {
        Some(level) => parsers.with_tool_strict_level(level),
        None => parsers,
    };
    // vLLM's `model_config.architecture` (Cohere's structural tags use it).
    if let Some(model) = &args.model
        && let Some(config) = read_json(model, "config.json")?
        && let Some(architecture) = config["architectures"][0].as_str()
    {
        parsers = parsers.with_model_architecture(architecture);
    }
    let tools = read_tools(args.tools.as_deref())?;
    let kwargs: Map<String, Value> = match &args.chat_template_kwargs {
        Some(text) => serde_json::from_str(text).context("--chat-template-kwargs")?,
        None => Map::new(),
    };
    let request = ServingRequest {
        tools: args.tools.is_some().then_some(tools.as_slice()),
        tool_choice: args.tool_choice.as_deref().map(tool_choice).transpose()?,
        parallel_tool_calls: args.parallel_tool_calls,
        include_reasoning: args.include_reasoning,
        ..ServingRequest::new(&kwargs)
    };
    let prompt = match &args.prompt_token_ids {
        Some(arg) => prompt_token_ids(arg)?,
        None => Vec::new(),
    };
    // The `hf` / `beam` and Muse parsers read the prompt as vLLM decodes it
    // (`beam` also derives its grammar from it).
    let prompt_text = match &args.model {
        Some(dir) if parsers.reads_prompt() => {
            let options = vllm_chat::RendererOptions::default();
            let model =
                vllm_chat::pipeline::Model::load_with_mode(dir, args.tokenizer_mode, options)?;
            Some(model.tokenizer.decode(&prompt, false)?)
        }
        _ => None,
    };
    let adjustments =
        parsers.adjust_request_for_prompt(&request, prompt_text.as_deref().unwrap_or_default())?;
    eprintln!("request adjustments: {adjustments:?}");
    let reasoning_ended =
        parsers.resolve_reasoning_ended(&request, &adjustments, &prompt, prompt_text.as_deref());
    eprintln!("engine request reasoning_ended: {reasoning_ended:?}");

    let mut output = String::new();
    std::io::stdin()
        .read_to_string(&mut output)
        .context("reading the model output from stdin")?;

    let mut parser = parsers.choice_parser(
        &request,
        &prompt,
        prompt_text.as_deref(),
        args.chunk.is_some(),
    )?;
    let events = match args.chunk {
        None => parser.push(&output, &[], true),
        Some(size) => {
            let mut all = Vec::new();
            let chars: Vec<char> = output.chars().collect();
            let pieces: Vec<String> = chars
                .chunks(size.max(1))
                .map(|p| p.iter().collect())
                .collect();
            for (i, text) in pieces.iter().enumerate() {
                let events = parser.push(text, &[], i + 1 == pieces.len());
                print_delta(&events);
                all.extend(events);
            }
            if pieces.is_empty() {
                all.extend(parser.push("", &[], true));
            }
            all
        }
    };
    let message = parser.message(&events);
    let mut out = serde_json::to_value(&message)?;
    out["finish_reason"] = json!(parser.finish_reason("stop"));
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// `--tool-choice`: a mode, the OpenAI object, or a function name.
fn tool_choice(arg: &str) -> anyhow::Result<ToolChoice> {
    if let Ok(value) = serde_json::from_str::<Value>(arg)
        && let Some(choice) = ToolChoice::from_openai(&value)
    {
        return Ok(choice);
    }
    Ok(match arg {
        "none" => ToolChoice::None,
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        name if !name.trim().is_empty() && !name.starts_with('{') => {
            ToolChoice::Named(name.to_owned())
        }
        _ => {
            bail!("--tool-choice: expected none, auto, required, a function name or a JSON object")
        }
    })
}

/// `--prompt-token-ids`: a JSON list, or a file holding one.
fn prompt_token_ids(arg: &str) -> anyhow::Result<Vec<u32>> {
    let text = if arg.trim_start().starts_with('[') {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).with_context(|| format!("--prompt-token-ids {arg}"))?
    };
    serde_json::from_str(&text).context("--prompt-token-ids: expected a JSON list of token ids")
}

/// The parser names to build, with `auto` resolved from the model's name.
fn parser_names(args: &Args) -> anyhow::Result<(Option<String>, Option<String>)> {
    let wants_auto = |name: &Option<String>| name.as_deref() == Some("auto");
    let auto = if wants_auto(&args.tool_call_parser) || wants_auto(&args.reasoning_parser) {
        let model = args
            .model
            .as_deref()
            .context("`auto` needs --model to pick parsers by the model's name")?;
        let name = model.file_name().unwrap_or(model.as_os_str());
        Some(registry::auto_parsers(&name.to_string_lossy())?)
    } else {
        None
    };
    let tool = match args.tool_call_parser.as_deref() {
        Some("none") => None,
        Some("auto") => auto.map(|(tool, _)| tool.to_owned()),
        other => other.map(str::to_owned),
    };
    let reasoning = match args.reasoning_parser.as_deref() {
        Some("none") => None,
        Some("auto") => auto.and_then(|(_, reasoning)| reasoning).map(str::to_owned),
        other => other.map(str::to_owned),
    };
    Ok((reasoning, tool))
}

fn read_tools(path: Option<&Path>) -> anyhow::Result<Vec<Tool>> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let value: Value = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
    let list = match &value {
        Value::Array(list) => list,
        Value::Object(object) => match object.get("tools") {
            Some(Value::Array(list)) => list,
            _ => bail!("{}: expected a `tools` array", path.display()),
        },
        _ => bail!("{}: expected an array of tools", path.display()),
    };
    Ok(list.iter().filter_map(Tool::from_openai).collect())
}

/// One delta's events as vLLM streams them: `{"content"?, "reasoning"?,
/// "tool_calls"?: [{"index", "id"?, "type"?, "function": {"name"?, "arguments"?}}]}`.
fn print_delta(events: &[Event]) {
    let (mut content, mut reasoning) = (String::new(), String::new());
    let mut calls: Vec<Value> = Vec::new();
    for event in events {
        match event {
            Event::Content(text) => content.push_str(text),
            Event::Reasoning(text) => reasoning.push_str(text),
            Event::ToolCallBegin { index, id, name } => {
                let mut call = json!({"index": index, "type": "function",
                                      "function": {"name": name, "arguments": ""}});
                if let Some(id) = id {
                    call["id"] = json!(id);
                }
                calls.push(call);
            }
            Event::ToolCallArguments { index, delta } => match calls.last_mut() {
                Some(call) if call["index"] == json!(index) => {
                    let arguments = call["function"]["arguments"].as_str().unwrap_or("");
                    call["function"]["arguments"] = json!(format!("{arguments}{delta}"));
                }
                _ => calls.push(json!({"index": index, "function": {"arguments": delta}})),
            },
            Event::ToolCallEnd { .. } => {}
        }
    }
    let mut delta = Map::new();
    if !content.is_empty() {
        delta.insert("content".into(), json!(content));
    }
    if !reasoning.is_empty() {
        delta.insert("reasoning".into(), json!(reasoning));
    }
    if !calls.is_empty() {
        delta.insert("tool_calls".into(), json!(calls));
    }
    if !delta.is_empty() {
        println!("{}", Value::Object(delta));
    }
}

/// The token strings a model's tokenizer knows and their ids: its vocabulary
/// and added tokens, read from `tokenizer.json` (or `tokenizer.json.gz`) and
/// `tokenizer_config.json`.
struct Vocabulary {
    tokens: HashMap<String, u32>,
    /// A mistral-common tokenizer's version and grammar support.
    mistral: Option<MistralTokenizerInfo>,
}

impl Vocabulary {
    /// A mistral-common vocabulary (`tekken.json`, `tokenizer.model.v*`): its
    /// control tokens, which are what the parsers look up, and its version and
    /// grammar support, which pick the `mistral` parsers' format as `serve` does.
    fn mistral(dir: &Path) -> anyhow::Result<Self> {
        let renderer = vllm_chat::mistral::MistralRenderer::from_dir(dir, Default::default())?;
        let tokens = renderer
            .control_tokens()
            .into_iter()
            .filter_map(|(name, id)| Some((name.to_owned(), id?)))
            .collect();
        Ok(Vocabulary {
            tokens,
            mistral: Some(vllm_chat::pipeline::mistral_tokenizer_info(&renderer)),
        })
    }

    fn read(dir: &Path) -> anyhow::Result<Self> {
        let mut tokens = HashMap::new();
        if let Some(tokenizer) = read_json(dir, "tokenizer.json")? {
            match &tokenizer["model"]["vocab"] {
                // BPE and WordPiece: {"token": id}.
                Value::Object(vocab) => tokens.extend(
                    vocab
                        .iter()
                        .filter_map(|(k, v)| Some((k.clone(), u32::try_from(v.as_u64()?).ok()?))),
                ),
                // Unigram: [["piece", score], …], ids by position.
                Value::Array(pieces) => {
                    tokens.extend(pieces.iter().enumerate().filter_map(|(id, piece)| {
                        Some((piece[0].as_str()?.to_owned(), u32::try_from(id).ok()?))
                    }))
                }
                _ => {}
            }
            for added in tokenizer["added_tokens"].as_array().into_iter().flatten() {
                if let (Some(content), Some(id)) = (added["content"].as_str(), added["id"].as_u64())
                {
                    tokens.insert(content.to_owned(), u32::try_from(id)?);
                }
            }
        }
        if let Some(config) = read_json(dir, "tokenizer_config.json")?
            && let Some(decoder) = config["added_tokens_decoder"].as_object()
        {
            for (id, token) in decoder {
                if let (Some(content), Ok(id)) = (token["content"].as_str(), id.parse::<u32>()) {
                    tokens.entry(content.to_owned()).or_insert(id);
                }
            }
        }
        if tokens.is_empty() {
            bail!(
                "{}: no tokenizer.json or tokenizer_config.json",
                dir.display()
            );
        }
        Ok(Self {
            tokens,
            mistral: None,
        })
    }

    fn id(&self, token: &str) -> Option<u32> {
        self.tokens.get(token).copied()
    }
}

/// `dir/name` (or `dir/name.gz`) as JSON, `None` when neither exists.
fn read_json(dir: &Path, name: &str) -> anyhow::Result<Option<Value>> {
    let path = dir.join(name);
    let text = if path.exists() {
        std::fs::read_to_string(&path).with_context(|| path.display().to_string())?
    } else {
        let gz = dir.join(format!("{name}.gz"));
        if !gz.exists() {
            return Ok(None);
        }
        let file = std::fs::File::open(&gz).with_context(|| gz.display().to_string())?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .with_context(|| gz.display().to_string())?;
        text
    };
    let value = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
    Ok(Some(value))
}
