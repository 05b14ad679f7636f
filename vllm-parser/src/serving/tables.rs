//! What vLLM 0.33.0's serving layer knows about each registered parser class
//! besides its text rules (checked by `tests/serving.rs` against the corpus
//! `scripts/gen_serving_corpus.py` records).

use super::ToolStrictLevel;

/// How a parser's `adjust_request` sets `skip_special_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SkipRule {
    /// Leaves it as the request gave it.
    Keep,
    /// `False` whenever `adjust_request` runs (parser-engine adapters, Muse,
    /// Kimi K3 reasoning, response templates, Cohere).
    Always,
    /// `False` when the request has tools and `tool_choice` is not `none`.
    ToolsNotNone,
    /// `False` when the request has tools and forces a call (`required` or
    /// named) — Kimi K3's tool parser.
    Forced,
}

/// A tool parser class's serving attributes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolTraits {
    /// `supports_required_and_named` after `VLLM_ENFORCE_STRICT_TOOL_CALLING`
    /// (on by default) turned it off for every class with a structural tag.
    pub supports_required_and_named: bool,
    /// `structural_tag_model`.
    pub structural_tag_model: Option<&'static str>,
    /// `default_tool_strict_level`.
    pub default_strict_level: ToolStrictLevel,
    /// `engine_based_streaming`.
    pub engine_based: bool,
    /// Its `adjust_request`'s `skip_special_tokens` rule.
    pub skip: SkipRule,
}

const fn t(
    supports: bool,
    tag: Option<&'static str>,
    level: u8,
    engine: bool,
    skip: SkipRule,
) -> ToolTraits {
    ToolTraits {
        supports_required_and_named: supports,
        structural_tag_model: tag,
        default_strict_level: match level {
            0 => ToolStrictLevel::Auto,
            1 => ToolStrictLevel::Function,
            _ => ToolStrictLevel::Parameter,
        },
        engine_based: engine,
        skip,
    }
}

use SkipRule::{Always, Forced, Keep, ToolsNotNone};

/// Every tool parser name of vLLM 0.33.0 (58).
pub(crate) const TOOLS: &[(&str, ToolTraits)] = &[
    ("apertus", t(true, None, 0, false, ToolsNotNone)),
    ("beam", t(true, None, 0, false, Keep)),
    ("cohere_command3", t(true, None, 0, false, Keep)),
    ("cohere_command4", t(true, None, 0, false, Keep)),
    ("deepseek_v3", t(false, Some("deepseek_r1"), 0, false, Keep)),
    (
        "deepseek_v31",
        t(false, Some("deepseek_v3_1"), 0, false, Keep),
    ),
    (
        "deepseek_v32",
        t(false, Some("deepseek_v3_2"), 0, true, Always),
    ),
    (
        "deepseek_v4",
        t(false, Some("deepseek_v4"), 0, true, Always),
    ),
    (
        "deepseek_v41",
        t(false, Some("deepseek_v4_1"), 0, true, Always),
    ),
    ("dots", t(false, None, 0, false, Keep)),
    ("ernie45", t(true, None, 0, false, Keep)),
    ("functiongemma", t(true, None, 0, false, ToolsNotNone)),
    ("gemma4", t(false, None, 0, true, Always)),
    ("gigachat3", t(true, None, 0, false, ToolsNotNone)),
    ("glm45", t(false, Some("glm_4_7"), 1, true, Always)),
    ("glm47", t(false, Some("glm_4_7"), 1, true, Always)),
    ("granite", t(true, None, 0, true, Always)),
    ("granite-20b-fc", t(true, None, 0, false, Keep)),
    ("granite4", t(true, None, 0, false, ToolsNotNone)),
    ("hermes", t(false, Some("hermes"), 0, false, ToolsNotNone)),
    ("hf", t(true, None, 0, false, Keep)),
    ("hunyuan_a13b", t(true, None, 0, false, Keep)),
    ("hy_v3", t(true, None, 0, false, Keep)),
    ("hy_v4", t(false, Some("hy_v4"), 0, false, Keep)),
    ("inkling", t(false, None, 0, true, Always)),
    ("internlm", t(true, None, 0, false, ToolsNotNone)),
    ("jamba", t(true, None, 0, false, ToolsNotNone)),
    ("k2_horizon", t(false, None, 0, true, Keep)),
    ("kimi_k2", t(false, Some("kimi"), 0, true, ToolsNotNone)),
    ("kimi_k3", t(false, Some("kimi_k3"), 0, false, Forced)),
    ("lfm2", t(true, None, 0, false, ToolsNotNone)),
    ("ling3", t(false, Some("glm_4_7"), 0, true, Always)),
    ("llama3_json", t(false, Some("llama"), 0, false, Keep)),
    ("llama4_json", t(false, Some("llama"), 0, false, Keep)),
    ("llama4_pythonic", t(true, None, 0, false, Keep)),
    ("longcat", t(false, Some("longcat"), 0, false, ToolsNotNone)),
    ("mimo", t(false, Some("mimo"), 0, true, Always)),
    ("minicpm5", t(true, None, 0, false, ToolsNotNone)),
    ("minimax_m2", t(false, Some("minimax"), 0, true, Always)),
    ("minimax_m3", t(false, None, 0, true, Keep)),
    ("mistral", t(false, None, 0, true, Always)),
    ("muse", t(false, None, 0, false, Always)),
    ("muse_glimmer", t(false, None, 0, false, Always)),
    ("musespark1x", t(false, None, 0, false, Always)),
    ("olmo3", t(true, None, 0, false, Keep)),
    ("openai", t(false, Some("harmony"), 0, false, Keep)),
    ("phi4_mini_json", t(true, None, 0, false, Keep)),
    ("plamo3", t(false, Some("plamo3"), 0, true, Always)),
    ("poolside_v1", t(false, None, 0, false, ToolsNotNone)),
    ("pythonic", t(true, None, 0, false, Keep)),
    (
        "qwen3_coder",
        t(false, Some("qwen_3_coder"), 0, true, Always),
    ),
    (
        "qwen3_json",
        t(false, Some("hermes"), 0, false, ToolsNotNone),
    ),
    ("qwen3_xml", t(false, Some("qwen_3_coder"), 0, true, Always)),
    ("seed_oss", t(true, None, 0, true, Always)),
    ("step3", t(true, None, 0, false, ToolsNotNone)),
    ("step3p5", t(false, Some("qwen_3_coder"), 0, true, Always)),
    ("step5", t(false, Some("qwen_3_coder"), 0, true, Always)),
    ("xlam", t(true, None, 0, false, Keep)),
];

/// Reasoning parsers whose `adjust_request` sets `skip_special_tokens=False`
/// (every parser-engine adapter, Muse, Kimi K3, the response-template and
/// Cohere parsers); the others leave it.
pub(crate) const REASONING_SKIP_ALWAYS: &[&str] = &[
    "beam",
    "cohere_command3",
    "cohere_command4",
    "deepseek_v4",
    "deepseek_v41",
    "gemma4",
    "glm45",
    "glm47",
    "granite_thinking_parser",
    "hf",
    "inkling",
    "kimi_k2",
    "kimi_k3",
    "ling3",
    "mimo",
    "minicpmv",
    "minimax_m2",
    "mistral",
    "muse",
    "muse_glimmer",
    "musespark1x",
    "nemotron_v3",
    "plamo3",
    "qwen3",
    "seed_oss",
    "step3p5",
];

/// The traits of tool parser `name` (a registered name).
pub(crate) fn tool_traits(name: &str) -> Option<ToolTraits> {
    TOOLS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
