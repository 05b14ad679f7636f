//! Parse a model output the way vLLM's `--tool-call-parser` / `--reasoning-parser`
//! would, and print the assistant message.
//!
//! ```text
//! cargo run --release -p vllm-examples --example parse -- \
//!     --tool-call-parser hermes --reasoning-parser qwen3 \
//!     [--model /models/Qwen3-8B] [--chunk 4] [--tools tools.json] < output.txt
//! ```
//!
//! Prints `{"content", "reasoning", "tool_calls": [{"type", "function": {"name",
//! "arguments"}}]}` as vLLM's non-streaming response holds it. With `--chunk N` the
//! output is fed N characters at a time and every delta is printed first, one JSON
//! line each in the shape of vLLM's streamed `delta`, then the merged message.
//! `--model` checks that the model's tokenizer has the tokens the parsers need (as
//! vLLM does at start-up) and lets `auto` pick parsers by the model's name.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Parser;
use serde_json::{Map, Value, json};
use vllm_parser::{Event, MessageBuilder, MessageParser, ParserOptions, Tool, registry};

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "Parse a model output (stdin) into content, reasoning and tool calls")]
struct Args {
    /// Tool-call parser (vLLM's name, or `auto` with --model).
    #[arg(long)]
    tool_call_parser: Option<String>,
    /// Reasoning parser (vLLM's name, or `auto` with --model).
    #[arg(long)]
    reasoning_parser: Option<String>,
    /// Model directory: its tokenizer must have the parsers' required tokens.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Feed the output N characters at a time and print each delta.
    #[arg(long)]
    chunk: Option<usize>,
    /// JSON file with the request's `tools` (an array of OpenAI tool objects, or
    /// an object with a `tools` array).
    #[arg(long)]
    tools: Option<PathBuf>,
    /// The request's `chat_template_kwargs`, as a JSON object.
    #[arg(long)]
    chat_template_kwargs: Option<String>,
    /// The end of the rendered prompt (some parsers read whether it closed reasoning).
    #[arg(long, default_value = "")]
    prompt: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (reasoning, tool) = parser_names(&args)?;
    if let Some(model) = &args.model {
        let vocabulary = Vocabulary::read(model)?;
        registry::check_tokens(reasoning.as_deref(), tool.as_deref(), |token| {
            vocabulary.has(token)
        })?;
    }
    let options = ParserOptions {
        tools: read_tools(args.tools.as_deref())?,
        chat_template_kwargs: match &args.chat_template_kwargs {
            Some(text) => serde_json::from_str(text).context("--chat-template-kwargs")?,
            None => Map::new(),
        },
        prompt: args.prompt.clone(),
        ..ParserOptions::default()
    };
    let mut parser = MessageParser::from_names(reasoning.as_deref(), tool.as_deref(), &options)?;

    let mut output = String::new();
    std::io::stdin()
        .read_to_string(&mut output)
        .context("reading the model output from stdin")?;

    let message = match args.chunk {
        None => parser.parse(&output, &[]),
        Some(size) => {
            let mut builder = MessageBuilder::new();
            let mut events = Vec::new();
            let chars: Vec<char> = output.chars().collect();
            for piece in chars.chunks(size.max(1)) {
                let text: String = piece.iter().collect();
                parser.push(&text, &[], &mut events);
                print_delta(&events);
                builder.extend(&events);
                events.clear();
            }
            parser.finish(&mut events);
            print_delta(&events);
            builder.extend(&events);
            builder.finish()
        }
    };
    println!("{}", serde_json::to_string_pretty(&message)?);
    Ok(())
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
        Some("auto") => auto.map(|(tool, _)| tool.to_owned()),
        other => other.map(str::to_owned),
    };
    let reasoning = match args.reasoning_parser.as_deref() {
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

/// The token strings a model's tokenizer knows: its vocabulary and added tokens,
/// read from `tokenizer.json` (or `tokenizer.json.gz`) and `tokenizer_config.json`.
struct Vocabulary {
    tokens: std::collections::HashSet<String>,
}

impl Vocabulary {
    fn read(dir: &Path) -> anyhow::Result<Self> {
        let mut tokens = std::collections::HashSet::new();
        if let Some(tokenizer) = read_json(dir, "tokenizer.json")? {
            for added in tokenizer["added_tokens"].as_array().into_iter().flatten() {
                if let Some(content) = added["content"].as_str() {
                    tokens.insert(content.to_owned());
                }
            }
            match &tokenizer["model"]["vocab"] {
                // BPE and WordPiece: {"token": id}.
                Value::Object(vocab) => tokens.extend(vocab.keys().cloned()),
                // Unigram: [["piece", score], …].
                Value::Array(pieces) => tokens.extend(
                    pieces
                        .iter()
                        .filter_map(|piece| piece[0].as_str().map(str::to_owned)),
                ),
                _ => {}
            }
        }
        if let Some(config) = read_json(dir, "tokenizer_config.json")?
            && let Some(decoder) = config["added_tokens_decoder"].as_object()
        {
            tokens.extend(
                decoder
                    .values()
                    .filter_map(|token| token["content"].as_str().map(str::to_owned)),
            );
        }
        if tokens.is_empty() {
            bail!(
                "{}: no tokenizer.json or tokenizer_config.json",
                dir.display()
            );
        }
        Ok(Self { tokens })
    }

    fn has(&self, token: &str) -> bool {
        self.tokens.contains(token)
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
