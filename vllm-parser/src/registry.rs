//! vLLM's parser names, mapped to constructors.
//!
//! Names are the `--reasoning-parser` / `--tool-call-parser` values of vLLM 0.33.0
//! (`vllm/reasoning/__init__.py`, `vllm/tool_parsers/__init__.py`); aliases are
//! separate entries pointing at the same constructor, as in vLLM. A parser that
//! vLLM refuses to build when the tokenizer lacks some token lists those tokens in
//! `required_tokens`, so a server can check its tokenizer at start-up like vLLM.

use crate::cohere_command::CohereCommandParser;
use crate::engine::models::{
    deepseek_v4, deepseek_v32, gemma4, glm47, granite, kimi_k2, minimax_m2, mistral, nemotron_v3,
    qwen3, seed_oss,
};
use crate::engine::models::{
    deepseek_v41, granite_thinking, mimo, minicpmv, minimax_m3, plamo3, step3p5,
};
use crate::error::ParserError;
use crate::harmony::HarmonyParser;
use crate::muse::{self, MuseReasoningParser, MuseToolParser};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::reasoning;
use crate::reasoning::append_think::AppendThinkParser;
use crate::reasoning::granite::GraniteParser;
use crate::reasoning::think::{self, ThinkParser};
use crate::response_template::TemplateParser;
use crate::tool::apertus::ApertusParser;
use crate::tool::arg_tags::hunyuan::{self, Hunyuan};
use crate::tool::arg_tags::k2_horizon::K2Horizon;
use crate::tool::arg_tags::poolside::Poolside;
use crate::tool::deepseek;
use crate::tool::dots::DotsParser;
use crate::tool::ernie45::Ernie45Parser;
use crate::tool::functiongemma::FunctionGemmaParser;
use crate::tool::gigachat3;
use crate::tool::granite_20b_fc;
use crate::tool::hermes::HermesParser;
use crate::tool::hunyuan_a13b;
use crate::tool::json_calls;
use crate::tool::lfm2::Lfm2Parser;
use crate::tool::minicpm5::MiniCpm5;
use crate::tool::pythonic;
use crate::tool::settle::SettleParser;
use crate::tool::step3::Step3Parser;

/// A registered reasoning parser.
#[derive(Clone, Copy)]
pub struct ReasoningEntry {
    /// vLLM's name for it.
    pub name: &'static str,
    /// Tokens the tokenizer must have (vLLM fails at start-up without them).
    pub required_tokens: &'static [&'static str],
    /// Builds one per request.
    pub build: fn(&ParserOptions) -> Box<dyn ReasoningParser>,
}

/// A registered tool parser.
#[derive(Clone, Copy)]
pub struct ToolEntry {
    /// vLLM's name for it.
    pub name: &'static str,
    /// Tokens the tokenizer must have (vLLM fails at start-up without them).
    pub required_tokens: &'static [&'static str],
    /// Builds one per request.
    pub build: fn(&ParserOptions) -> Box<dyn ToolParser>,
}

const THINK_TAGS: &[&str] = &["<think>", "</think>"];

/// Every reasoning parser, by vLLM name.
pub const REASONING_PARSERS: &[ReasoningEntry] = &[
    ReasoningEntry {
        name: "deepseek_r1",
        required_tokens: THINK_TAGS,
        build: |o| ThinkParser::boxed(think::DEEPSEEK_R1, o),
    },
    ReasoningEntry {
        name: "qwen3",
        required_tokens: &[],
        build: |o| ThinkParser::boxed(think::QWEN3, o),
    },
    ReasoningEntry {
        name: "deepseek_v3",
        required_tokens: THINK_TAGS,
        build: |o| ThinkParser::boxed(think::DEEPSEEK_V3, o),
    },
    ReasoningEntry {
        name: "step3",
        required_tokens: &["</think>"],
        build: |o| ThinkParser::boxed(think::STEP3, o),
    },
    ReasoningEntry {
        name: "minimax_m2_append_think",
        required_tokens: &[],
        build: AppendThinkParser::boxed,
    },
    // vLLM registers step5 to DeepSeekR1ReasoningParser.
    ReasoningEntry {
        name: "step5",
        required_tokens: THINK_TAGS,
        build: |o| ThinkParser::boxed(think::DEEPSEEK_R1, o),
    },
    ReasoningEntry {
        name: "granite",
        required_tokens: &[],
        build: GraniteParser::boxed,
    },
    // vLLM's DeepSeekV3ReasoningWithThinkingParser.
    ReasoningEntry {
        name: "holo2",
        required_tokens: THINK_TAGS,
        build: |o| ThinkParser::boxed(think::HOLO2, o),
    },
    ReasoningEntry {
        name: "poolside_v1",
        required_tokens: &["<assistant>"],
        build: |o| ThinkParser::boxed(think::POOLSIDE_V1, o),
    },
    ReasoningEntry {
        name: "hy_v3",
        required_tokens: THINK_TAGS,
        build: |o| ThinkParser::boxed(think::HY_V3, o),
    },
    ReasoningEntry {
        name: "hy_v4",
        required_tokens: THINK_TAGS,
        build: |o| ThinkParser::boxed(think::HY_V4, o),
    },
    ReasoningEntry {
        name: "ernie45",
        required_tokens: THINK_TAGS,
        build: reasoning::ernie45::Ernie45Parser::boxed,
    },
    ReasoningEntry {
        name: "hunyuan_a13b",
        required_tokens: &[],
        build: reasoning::hunyuan_a13b::HunyuanA13bParser::boxed,
    },
    ReasoningEntry {
        name: "k2_horizon",
        required_tokens: &["<ifm|think>", "</ifm|think>"],
        build: |o| ThinkParser::boxed(think::k2_horizon(o), o),
    },
    // vLLM looks up the byte-level BPE pieces of `</think>` at start-up.
    ReasoningEntry {
        name: "olmo3",
        required_tokens: &["Ġ</", "</", "think", ">"],
        build: |o| ThinkParser::boxed(think::OLMO3, o),
    },
    // gpt-oss Harmony (src/harmony/); with `openai` it passes the text through.
    ReasoningEntry {
        name: "openai_gptoss",
        required_tokens: &[],
        build: HarmonyParser::reasoning_parser,
    },
    // Muse channels (src/muse/); `musespark1x` is vLLM's alias of `muse`.
    ReasoningEntry {
        name: "muse",
        required_tokens: &[],
        build: |o| MuseReasoningParser::boxed(muse::Profile::Spark, o),
    },
    ReasoningEntry {
        name: "musespark1x",
        required_tokens: &[],
        build: |o| MuseReasoningParser::boxed(muse::Profile::Spark, o),
    },
    ReasoningEntry {
        name: "muse_glimmer",
        required_tokens: &[],
        build: |o| MuseReasoningParser::boxed(muse::Profile::Glimmer, o),
    },
    // Engine-based (src/engine/models/).
    ReasoningEntry {
        name: "glm45",
        required_tokens: &[],
        build: glm47::reasoning_parser,
    },
    ReasoningEntry {
        name: "glm47",
        required_tokens: &[],
        build: glm47::reasoning_parser,
    },
    ReasoningEntry {
        name: "seed_oss",
        required_tokens: &[],
        build: seed_oss::reasoning_parser,
    },
    ReasoningEntry {
        name: "kimi_k2",
        required_tokens: &[],
        build: kimi_k2::reasoning_parser,
    },
    ReasoningEntry {
        name: "minimax_m2",
        required_tokens: &[],
        build: minimax_m2::reasoning_parser,
    },
    ReasoningEntry {
        name: "deepseek_v4",
        required_tokens: &[],
        build: deepseek_v4::reasoning_parser,
    },
    ReasoningEntry {
        name: "nemotron_v3",
        required_tokens: &[],
        build: nemotron_v3::reasoning_parser,
    },
    ReasoningEntry {
        name: "gemma4",
        required_tokens: &[],
        build: gemma4::reasoning_parser,
    },
    ReasoningEntry {
        name: "mistral",
        required_tokens: &["[TOOL_CALLS]"],
        build: mistral::reasoning_parser,
    },
    // Engine-based, issue 6 (src/engine/models/).
    ReasoningEntry {
        name: "step3p5",
        required_tokens: &[],
        build: step3p5::reasoning_parser,
    },
    ReasoningEntry {
        name: "mimo",
        required_tokens: &[],
        build: mimo::reasoning_parser,
    },
    ReasoningEntry {
        name: "deepseek_v41",
        required_tokens: &[],
        build: deepseek_v41::reasoning_parser,
    },
    // vLLM's Ling3 config is GLM-4.7's, renamed.
    ReasoningEntry {
        name: "ling3",
        required_tokens: &[],
        build: glm47::reasoning_parser,
    },
    ReasoningEntry {
        name: "granite_thinking_parser",
        required_tokens: &[],
        build: granite_thinking::reasoning_parser,
    },
    ReasoningEntry {
        name: "plamo3",
        required_tokens: &[],
        build: plamo3::reasoning_parser,
    },
    ReasoningEntry {
        name: "minicpmv",
        required_tokens: &[],
        build: minicpmv::reasoning_parser,
    },
    // Legacy, text markers (src/reasoning/minimax_m3.rs); pairs with the
    // engine-based `minimax_m3` tool parser.
    ReasoningEntry {
        name: "minimax_m3",
        required_tokens: &["<mm:think>", "</mm:think>"],
        build: reasoning::minimax_m3::MiniMaxM3ReasoningParser::boxed,
    },
    // Legacy XTML, composed with the `kimi_k3` tool parser (src/tool/kimi_k3/).
    ReasoningEntry {
        name: "kimi_k3",
        required_tokens: &[],
        build: reasoning::kimi_k3::KimiK3ReasoningParser::boxed,
    },
    // Engine-based with a message-header state (src/engine/models/inkling.rs).
    ReasoningEntry {
        name: "inkling",
        required_tokens: &[],
        build: crate::engine::models::inkling::reasoning_parser,
    },
    // The checkpoint's `response_template` (ParserOptions::response_template);
    // `beam` parses the same way (its grammar constrains generation only).
    ReasoningEntry {
        name: "hf",
        required_tokens: &[],
        build: TemplateParser::reasoning,
    },
    ReasoningEntry {
        name: "beam",
        required_tokens: &[],
        build: TemplateParser::reasoning,
    },
    // The `cohere_melody` filter vLLM runs for both halves (src/cohere_command/).
    ReasoningEntry {
        name: "cohere_command3",
        required_tokens: &[],
        build: CohereCommandParser::command3_reasoning,
    },
    ReasoningEntry {
        name: "cohere_command4",
        required_tokens: &[],
        build: CohereCommandParser::command4_reasoning,
    },
];

/// Every tool parser, by vLLM name.
pub const TOOL_PARSERS: &[ToolEntry] = &[
    // gpt-oss Harmony (src/harmony/): parses reasoning too after `openai_gptoss`.
    ToolEntry {
        name: "openai",
        required_tokens: &[],
        build: HarmonyParser::tool_parser,
    },
    // Muse channels (src/muse/); `musespark1x` is vLLM's alias of `muse`.
    ToolEntry {
        name: "muse",
        required_tokens: &[],
        build: |o| MuseToolParser::boxed(muse::Profile::Spark, o),
    },
    ToolEntry {
        name: "musespark1x",
        required_tokens: &[],
        build: |o| MuseToolParser::boxed(muse::Profile::Spark, o),
    },
    ToolEntry {
        name: "muse_glimmer",
        required_tokens: &[],
        build: |o| MuseToolParser::boxed(muse::Profile::Glimmer, o),
    },
    // Pythonic calls between special tokens, with vLLM's source rewrites.
    ToolEntry {
        name: "lfm2",
        required_tokens: &["<|tool_call_start|>", "<|tool_call_end|>"],
        build: Lfm2Parser::boxed,
    },
    // A JSON array of `{name: arguments}`, truncated JSON completed.
    ToolEntry {
        name: "apertus",
        required_tokens: &[],
        build: ApertusParser::boxed,
    },
    ToolEntry {
        name: "hermes",
        required_tokens: &[],
        build: HermesParser::boxed,
    },
    // vLLM 0.33 aliases qwen3_json to Hermes2ProToolParser.
    ToolEntry {
        name: "qwen3_json",
        required_tokens: &[],
        build: HermesParser::boxed,
    },
    ToolEntry {
        name: "longcat",
        required_tokens: &[],
        build: HermesParser::longcat,
    },
    ToolEntry {
        name: "ernie45",
        required_tokens: &[],
        build: Ernie45Parser::boxed,
    },
    ToolEntry {
        name: "functiongemma",
        required_tokens: &[],
        build: FunctionGemmaParser::boxed,
    },
    ToolEntry {
        name: "step3",
        required_tokens: &[],
        build: Step3Parser::boxed,
    },
    ToolEntry {
        name: "dots",
        required_tokens: &[],
        build: DotsParser::boxed,
    },
    ToolEntry {
        name: "gigachat3",
        required_tokens: &[],
        build: |_| SettleParser::boxed(gigachat3::GigaChat3),
    },
    // Tag-pair arguments (src/tool/arg_tags/).
    ToolEntry {
        name: "poolside_v1",
        required_tokens: &[],
        build: Poolside::boxed,
    },
    ToolEntry {
        name: "hy_v3",
        required_tokens: hunyuan::REQUIRED_TOKENS,
        build: Hunyuan::v3,
    },
    ToolEntry {
        name: "hy_v4",
        required_tokens: hunyuan::REQUIRED_TOKENS,
        build: Hunyuan::v4,
    },
    ToolEntry {
        name: "k2_horizon",
        required_tokens: &[],
        build: K2Horizon::boxed,
    },
    ToolEntry {
        name: "minicpm5",
        required_tokens: &[],
        build: MiniCpm5::boxed,
    },
    ToolEntry {
        name: "llama3_json",
        required_tokens: &["<|python_tag|>"],
        build: |_| SettleParser::boxed(json_calls::LLAMA),
    },
    // vLLM registers llama4_json to the same Llama3JsonToolParser.
    ToolEntry {
        name: "llama4_json",
        required_tokens: &["<|python_tag|>"],
        build: |_| SettleParser::boxed(json_calls::LLAMA),
    },
    ToolEntry {
        name: "pythonic",
        required_tokens: &[],
        build: |_| SettleParser::boxed(pythonic::PLAIN),
    },
    ToolEntry {
        name: "llama4_pythonic",
        required_tokens: &[],
        build: |_| SettleParser::boxed(pythonic::LLAMA4),
    },
    ToolEntry {
        name: "olmo3",
        required_tokens: &[],
        build: |_| SettleParser::boxed(pythonic::OLMO3),
    },
    ToolEntry {
        name: "deepseek_v3",
        required_tokens: deepseek::REQUIRED_TOKENS,
        build: |_| SettleParser::boxed(deepseek::V3),
    },
    ToolEntry {
        name: "deepseek_v31",
        required_tokens: deepseek::REQUIRED_TOKENS,
        build: |_| SettleParser::boxed(deepseek::V31),
    },
    ToolEntry {
        name: "phi4_mini_json",
        required_tokens: &[],
        build: |_| SettleParser::boxed(json_calls::PHI4_MINI),
    },
    ToolEntry {
        name: "xlam",
        required_tokens: &[],
        build: |_| SettleParser::boxed(json_calls::XLAM),
    },
    ToolEntry {
        name: "internlm",
        required_tokens: &[],
        build: |_| SettleParser::boxed(json_calls::INTERNLM),
    },
    ToolEntry {
        name: "jamba",
        required_tokens: json_calls::JAMBA_TOKENS,
        build: |_| SettleParser::boxed(json_calls::JAMBA),
    },
    ToolEntry {
        name: "granite4",
        required_tokens: &[],
        build: |_| SettleParser::boxed(json_calls::GRANITE4),
    },
    ToolEntry {
        name: "granite-20b-fc",
        required_tokens: &[],
        build: |_| SettleParser::boxed(granite_20b_fc::Granite20bFc),
    },
    ToolEntry {
        name: "hunyuan_a13b",
        required_tokens: &[],
        build: |_| SettleParser::boxed(hunyuan_a13b::HunyuanA13b),
    },
    // Engine-based (src/engine/models/).
    ToolEntry {
        name: "qwen3_xml",
        required_tokens: &[],
        build: qwen3::tool_parser,
    },
    ToolEntry {
        name: "qwen3_coder",
        required_tokens: &[],
        build: qwen3::tool_parser,
    },
    // vLLM's Step5ToolParser: the Qwen3 grammar, content whitespace kept.
    ToolEntry {
        name: "step5",
        required_tokens: &[],
        build: qwen3::step5_tool_parser,
    },
    ToolEntry {
        name: "glm45",
        required_tokens: &[],
        build: glm47::tool_parser,
    },
    ToolEntry {
        name: "glm47",
        required_tokens: &[],
        build: glm47::tool_parser,
    },
    ToolEntry {
        name: "seed_oss",
        required_tokens: &[],
        build: seed_oss::tool_parser,
    },
    ToolEntry {
        name: "kimi_k2",
        required_tokens: &[],
        build: kimi_k2::tool_parser,
    },
    ToolEntry {
        name: "minimax_m2",
        required_tokens: &[],
        build: minimax_m2::tool_parser,
    },
    ToolEntry {
        name: "deepseek_v32",
        required_tokens: &[],
        build: deepseek_v32::tool_parser,
    },
    ToolEntry {
        name: "deepseek_v4",
        required_tokens: &[],
        build: deepseek_v4::tool_parser,
    },
    ToolEntry {
        name: "granite",
        required_tokens: &[],
        build: granite::tool_parser,
    },
    ToolEntry {
        name: "gemma4",
        required_tokens: &[],
        build: gemma4::tool_parser,
    },
    ToolEntry {
        name: "mistral",
        required_tokens: &["[TOOL_CALLS]"],
        build: mistral::tool_parser,
    },
    // Engine-based, issue 6 (src/engine/models/).
    ToolEntry {
        name: "step3p5",
        required_tokens: &[],
        build: step3p5::tool_parser,
    },
    ToolEntry {
        name: "mimo",
        required_tokens: &[],
        build: mimo::tool_parser,
    },
    ToolEntry {
        name: "deepseek_v41",
        required_tokens: &[],
        build: deepseek_v41::tool_parser,
    },
    // vLLM's Ling3 config is GLM-4.7's, renamed.
    ToolEntry {
        name: "ling3",
        required_tokens: &[],
        build: glm47::tool_parser,
    },
    ToolEntry {
        name: "plamo3",
        required_tokens: &[],
        build: plamo3::tool_parser,
    },
    ToolEntry {
        name: "minimax_m3",
        required_tokens: &[],
        build: minimax_m3::tool_parser,
    },
    // Legacy XTML (src/tool/kimi_k3/), vLLM's `KimiK3Parser` composition.
    ToolEntry {
        name: "kimi_k3",
        required_tokens: &[],
        build: crate::tool::kimi_k3::KimiK3ToolParser::boxed,
    },
    ToolEntry {
        name: "inkling",
        required_tokens: &[],
        build: crate::engine::models::inkling::tool_parser,
    },
    ToolEntry {
        name: "hf",
        required_tokens: &[],
        build: TemplateParser::tool,
    },
    ToolEntry {
        name: "beam",
        required_tokens: &[],
        build: TemplateParser::tool,
    },
    ToolEntry {
        name: "cohere_command3",
        required_tokens: &[],
        build: CohereCommandParser::command3_tool,
    },
    ToolEntry {
        name: "cohere_command4",
        required_tokens: &[],
        build: CohereCommandParser::command4_tool,
    },
];

/// The registered reasoning parser `name`.
pub fn reasoning_entry(name: &str) -> Result<&'static ReasoningEntry, ParserError> {
    REASONING_PARSERS
        .iter()
        .find(|entry| entry.name == name)
        .ok_or_else(|| ParserError::UnknownReasoningParser {
            name: name.to_owned(),
            close_matches: close_matches(name, REASONING_PARSERS.iter().map(|e| e.name)),
        })
}

/// The registered tool parser `name`.
pub fn tool_entry(name: &str) -> Result<&'static ToolEntry, ParserError> {
    TOOL_PARSERS
        .iter()
        .find(|entry| entry.name == name)
        .ok_or_else(|| ParserError::UnknownToolParser {
            name: name.to_owned(),
            close_matches: close_matches(name, TOOL_PARSERS.iter().map(|e| e.name)),
        })
}

/// The registered names a mistyped `name` most likely meant, closest first (at most
/// five): similar spellings (Jaro–Winkler ≥ 0.8, as clap suggests flags) and names
/// containing it or contained in it, compared without case, `-`/`_` differences.
fn close_matches(name: &str, names: impl Iterator<Item = &'static str>) -> Vec<&'static str> {
    let fold = |s: &str| s.to_lowercase().replace('-', "_");
    let wanted = fold(name);
    let mut scored: Vec<(f64, &'static str)> = names
        .filter_map(|candidate| {
            let folded = fold(candidate);
            let similarity = strsim::jaro_winkler(&wanted, &folded);
            let contains =
                wanted.len() >= 3 && (folded.contains(&wanted) || wanted.contains(folded.as_str()));
            (similarity >= 0.8 || contains).then_some((similarity, candidate))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(5).map(|(_, name)| name).collect()
}

/// A new reasoning parser `name` for one request.
pub fn reasoning_parser(
    name: &str,
    options: &ParserOptions,
) -> Result<Box<dyn ReasoningParser>, ParserError> {
    Ok((reasoning_entry(name)?.build)(options))
}

/// A new reasoning parser `name` for one request on a server that also runs
/// the tool parser `tool` (`--tool-call-parser` with
/// `--enable-auto-tool-choice`).
///
/// vLLM 0.33.0's `qwen3` reasoning parser is its Qwen3 parser engine
/// (`Qwen3ParserReasoningAdapter`), and the engine's two paths disagree on a
/// `</think>` that follows the end of reasoning: the whole-output path
/// (`parse` → `extract_reasoning`, a single pass whose (CONTENT, THINK_END)
/// transition emits nothing) drops it from content, the streaming path keeps
/// it — with or without a tool parser. The crate's parsers have one behaviour
/// for both modes, and the corpora decide which one they follow: alone, the
/// `think` corpus follows streaming (the `</think>` stays content, as
/// `think::QWEN3` keeps it); beside a tool parser, the `hermes` corpus follows
/// the whole output, since vLLM's streaming then hands the quoted markers to
/// the tool parser, which extracts a malformed call
/// (`markers_quoted_in_reasoning`). Beside a tool parser `qwen3` is therefore
/// the engine's reasoning parser ([`qwen3::reasoning_parser_for`]). Every
/// other name builds as [`reasoning_parser`] does.
pub fn reasoning_parser_beside(
    name: &str,
    tool: Option<&str>,
    options: &ParserOptions,
) -> Result<Box<dyn ReasoningParser>, ParserError> {
    let entry = reasoning_entry(name)?;
    if entry.name == "qwen3" && tool.is_some() {
        return Ok(qwen3::reasoning_parser_for(qwen3::QWEN3, options));
    }
    Ok((entry.build)(options))
}

/// A new tool parser `name` for one request.
pub fn tool_parser(
    name: &str,
    options: &ParserOptions,
) -> Result<Box<dyn ToolParser>, ParserError> {
    Ok((tool_entry(name)?.build)(options))
}

/// Check at start-up that a tokenizer has every token the chosen parsers need;
/// `has_token` answers whether the vocabulary holds a token string.
pub fn check_tokens(
    reasoning: Option<&str>,
    tool: Option<&str>,
    has_token: impl Fn(&str) -> bool,
) -> Result<(), ParserError> {
    let mut needs: Vec<(&str, &[&str])> = Vec::new();
    if let Some(name) = reasoning {
        needs.push((name, reasoning_entry(name)?.required_tokens));
    }
    if let Some(name) = tool {
        needs.push((name, tool_entry(name)?.required_tokens));
    }
    for (parser, tokens) in needs {
        if let Some(token) = tokens.iter().find(|token| !has_token(token)) {
            return Err(ParserError::MissingToken {
                parser: parser.to_owned(),
                token: (*token).to_owned(),
            });
        }
    }
    Ok(())
}

/// The parsers `auto` picks for a model: `(tool parser, reasoning parser)`.
///
/// vLLM has no `auto`; this table follows the parsers vLLM's documentation gives
/// for each model family. The first pattern contained in the lower-cased model
/// name (its last path component) wins.
pub fn auto_parsers(model: &str) -> Result<(&'static str, Option<&'static str>), ParserError> {
    const TABLE: &[(&str, &str, Option<&str>)] = &[
        ("qwq", "hermes", Some("deepseek_r1")),
        ("qwen3", "hermes", Some("qwen3")),
        ("qwen2.5", "hermes", None),
        ("deepseek-r1", "hermes", Some("deepseek_r1")),
        ("hermes", "hermes", None),
        ("gpt-oss", "openai", Some("openai_gptoss")),
    ];
    let name = model.rsplit('/').next().unwrap_or(model).to_lowercase();
    TABLE
        .iter()
        .find(|(pattern, _, _)| name.contains(pattern))
        .map(|&(_, tool, reasoning)| (tool, reasoning))
        .ok_or_else(|| ParserError::NoAutoParser(model.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_unknown_names_fail() {
        for (i, a) in REASONING_PARSERS.iter().enumerate() {
            assert!(
                REASONING_PARSERS[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
        for (i, a) in TOOL_PARSERS.iter().enumerate() {
            assert!(
                TOOL_PARSERS[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
        assert!(matches!(
            tool_parser("nope", &ParserOptions::default()),
            Err(ParserError::UnknownToolParser { .. })
        ));
    }

    #[test]
    fn unknown_names_come_with_the_close_matches() {
        let Err(error) = reasoning_parser("qwen-3", &ParserOptions::default()) else {
            panic!("qwen-3 is not a registered name");
        };
        let ParserError::UnknownReasoningParser { close_matches, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(close_matches.first(), Some(&"qwen3"), "{close_matches:?}");
        assert!(error.to_string().contains("did you mean"), "{error}");

        let Err(error) = tool_parser("Hermes", &ParserOptions::default()) else {
            panic!("names are case-sensitive, as in vLLM");
        };
        assert!(error.to_string().contains("\"hermes\""), "{error}");

        let Err(error) = tool_parser("zzzz", &ParserOptions::default()) else {
            panic!("zzzz is not a registered name");
        };
        assert_eq!(
            error.to_string(),
            "tool parser \"zzzz\" is not registered; the registered names are in \
             vllm_parser::registry::TOOL_PARSERS"
        );
    }

    #[test]
    fn tokens_are_checked_like_vllm_at_start_up() {
        // vLLM refuses deepseek_r1 with a tokenizer lacking <think> (llama3) and
        // accepts qwen3 and hermes with it.
        let llama3 = |token: &str| !token.contains("think");
        assert!(check_tokens(Some("deepseek_r1"), None, llama3).is_err());
        assert!(check_tokens(Some("qwen3"), Some("hermes"), llama3).is_ok());
    }
}
