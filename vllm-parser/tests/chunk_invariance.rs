//! Streaming equals whole text for every registered parser (alone and paired)
//! on random marker-heavy outputs, at random chunkings. Needs no reference: it
//! checks our own invariant on inputs no corpus lists, and that no input panics.
//!
//! Every round runs every parser alone, every tool parser after two reasoning
//! parsers and every reasoning parser before one tool parser; the partners
//! rotate with the round, so that each parser keeps its full share of rounds
//! while the cost grows with the number of parsers, not with its square.

mod common;

use vllm_parser::registry::{REASONING_PARSERS, TOOL_PARSERS};
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::{ParsedMessage, ParserOptions};

/// Pieces that model outputs and parser markers are made of.
const FRAGMENTS: &[&str] = &[
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<",
    ">",
    "</",
    "<think",
    "tool_call",
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    " ",
    "\n",
    "\\",
    "\"name\"",
    "\"arguments\"",
    "\"f\"",
    "{\"name\": \"f\", \"arguments\": {}}",
    "1e5",
    "-0",
    "null",
    "NaN",
    "é",
    "東京",
    "🌧",
    "<｜tool▁calls▁begin｜>",
    "[TOOL_CALLS]",
    "<|im_end|>",
    "text",
    // gpt-oss Harmony (src/harmony/).
    "<|start|>assistant",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<|constrain|>json",
    "analysis",
    "final",
    "commentary",
    " to=functions.f",
    // Muse channels (src/muse/).
    " to=self<|message|>",
    "to=user",
    "to=f<|message|>",
    "<|eom|>",
    "<|eot|>",
    "<atem:function_calls>",
    "<atem:invoke name=\"f\">",
    "<atem:parameter name=\"a\">",
    "</atem:parameter>",
    "</atem:invoke>",
    // LFM2 (src/tool/lfm2.rs).
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "[f(a='x 'y' z')]",
    "from=07",
    // Apertus (src/tool/apertus.rs).
    "<|tools_prefix|>",
    "<|tools_suffix|>",
    "[{\"f\": {\"a\": ",
    // JSON-call and pythonic formats (src/tool/json_calls.rs, src/tool/pythonic/).
    "<|python_tag|>",
    "<|python_start|>",
    "<|python_end|>",
    "<function_calls>",
    "</function_calls>",
    "f(",
    "a=",
    ")",
    "'x'",
    "; ",
    // Legacy-class formats of issue 6 (hermes tags, ernie45, granite-20b-fc,
    // functiongemma, hunyuan_a13b, step3, dots, gigachat3).
    "<longcat_tool_call>",
    "</longcat_tool_call>",
    "<response>",
    "</response>",
    "<function_call>",
    "<start_function_call>",
    "call:f{",
    "}<end_function_call>",
    "a:<escape>",
    "<escape>",
    "<tool_calls>",
    "</tool_calls>",
    "<think>\n",
    "\n</think>\n<answer>\n",
    "\n</answer>",
    "<｜tool_calls_begin｜>",
    "<｜tool_calls_end｜>",
    "<｜tool_call_begin｜>function<｜tool_sep｜>",
    "<｜tool_call_end｜>",
    "<steptml:invoke name=\"f\">",
    "<steptml:parameter name=\"a\">",
    "</steptml:parameter>",
    "<|function_call|>",
    "function call<|role_sep|>\n",
    "<|message_sep|>",
    "</s>",
    "<dots_function_call>",
    "</dots_function_call>",
    "<invoke name=\"f\">",
    "<parameter name=\"a\">",
    "</invoke>",
    "</parameter>",
    // Tag-pair argument formats (src/tool/arg_tags/: poolside_v1, hy_v3/v4, k2_horizon).
    "<tool_calls>",
    "</tool_calls>",
    "<tool_sep>",
    "</arg_key>",
    "<arg_value>",
    "<arg_key>k</arg_key><arg_value>(1, 'a')</arg_value>",
    "<ifm|tool_calls>",
    "</ifm|tool_calls>",
    "<ifm|tool_call>f",
    "</ifm|tool_call>",
    "<ifm|arg_key>k</ifm|arg_key>",
    "<ifm|arg_type>int</ifm|arg_type>",
    "<ifm|arg_value>",
    "</ifm|arg_value>",
    // MiniCPM5 XML blocks (src/tool/minicpm5/).
    "<function name=\"f\">",
    "<param name=\"a\">",
    "</param>",
    "<![CDATA[",
    "]]>",
    "&lt;",
    // Engine-based formats (src/engine/models/).
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    "<function=f>",
    "<parameter=a>",
    "<arg_key>",
    "</arg_value>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "functions.f:0",
    "<minimax:tool_call>",
    "<invoke name=\"",
    "\">",
    "<｜DSML｜invoke name=\"",
    "<｜DSML｜parameter",
    "<|tool_call|>",
    // Issue 6 engine formats (PLaMo 3, MiniMax M3, DeepSeek V4.1, MiniCPM-V).
    "<|plamo:begin_tool_requests:plamo|>",
    "<|plamo:begin_tool_name:plamo|>",
    "<|plamo:end_tool_name:plamo|>",
    "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>",
    "<|plamo:end_think:plamo|>",
    "<|plamo:",
    "]<]minimax[>[",
    "<invoke name=\"f\">",
    "<｜DSML｜ calls>",
    "<｜DSML｜ invoke name=\"",
    "\\n",
    "`",
    "$",
    // MiniMax M3 reasoning, Kimi K3, Inkling (issue 6).
    "<mm:think>",
    "</mm:think>",
    "<|open|>",
    "<|close|>",
    "<|sep|>",
    "think",
    "response",
    "tools",
    "message",
    "call tool=\"f\"",
    "argument key=\"a\" type=\"number\"",
    "argument key=\"a\"",
    "<|message_model|>",
    "<|content_text|>",
    "<|content_thinking|>",
    "<|content_invoke_tool_json|>",
    "<|content_invoke_tool_text|>",
    "<|end_message|>",
    "<|content_model_end_sampling|>",
    "{\"name\":\"f\",\"args\":{\"a\":1}}",
    // Response templates (hf, beam).
    "<|im_end|>",
    " \n",
    // Cohere Command (cohere_command3 / cohere_command4).
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_RESPONSE|>",
    "<|START_ACTION|>",
    "[{\"tool_call_id\": \"0\", \"tool_name\": \"f\", \"parameters\": {\"a\": ",
    "<co>",
    "</co: 0:[1]>",
];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn parse(reasoning: Option<&str>, tool: Option<&str>, deltas: &[&str]) -> ParsedMessage {
    let deltas: Vec<(&str, &[u32])> = deltas.iter().map(|text| (*text, &[][..])).collect();
    common::parse(reasoning, tool, &options(), &deltas)
}

/// Default options plus a response template (Qwen 3's, from transformers'
/// fallbacks) for the `hf` / `beam` parsers; other parsers ignore it.
fn options() -> ParserOptions {
    let template = serde_json::json!({
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "thinking": {"open": "<think>", "close": "</think>"},
            "tool_calls": {"open_pattern": "\\s*<tool_call>", "close": "</tool_call>",
                           "repeats": true, "content": "json",
                           "transform": {"type": "function", "function": "{content}"}},
            "content": {"close_pattern": "\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>)"}
        }
    });
    ParserOptions {
        response_template: Some(std::sync::Arc::new(
            ResponseTemplate::from_json(&template).expect("a valid template"),
        )),
        ..ParserOptions::default()
    }
}

/// The `(reasoning, tool)` pairs of one round (see the module doc): `None`
/// alone, each parser alone, each tool parser after the reasoning parsers
/// `round` and `round + 1` places on, each reasoning parser before the tool
/// parser `round` places on.
fn pairs<'a>(
    reasoning: &[&'a str],
    tools: &[&'a str],
    round: usize,
) -> Vec<(Option<&'a str>, Option<&'a str>)> {
    let mut pairs = vec![(None, None)];
    for (i, &t) in tools.iter().enumerate() {
        pairs.push((None, Some(t)));
        for shift in [round, round + 1] {
            pairs.push((Some(reasoning[(i + shift) % reasoning.len()]), Some(t)));
        }
    }
    for (i, &r) in reasoning.iter().enumerate() {
        pairs.push((Some(r), None));
        pairs.push((Some(r), Some(tools[(i + round) % tools.len()])));
    }
    pairs
}

#[test]
fn random_outputs_parse_the_same_at_every_chunking() {
    let reasoning: Vec<&str> = REASONING_PARSERS.iter().map(|e| e.name).collect();
    let tools: Vec<&str> = TOOL_PARSERS.iter().map(|e| e.name).collect();
    let mut rng = Rng(0x5eed_1234_abcd_0042);
    for round in 0..300 {
        let output: String = (0..rng.below(40))
            .map(|_| FRAGMENTS[rng.below(FRAGMENTS.len())])
            .collect();
        let chars: Vec<(usize, char)> = output.char_indices().collect();
        let mut cuts: Vec<usize> = (0..rng.below(8))
            .map(|_| {
                chars
                    .get(rng.below(chars.len() + 1))
                    .map_or(output.len(), |c| c.0)
            })
            .collect();
        cuts.push(0);
        cuts.push(output.len());
        cuts.sort_unstable();
        let random: Vec<&str> = cuts.windows(2).map(|w| &output[w[0]..w[1]]).collect();
        let singles: Vec<String> = output.chars().map(String::from).collect();
        let singles: Vec<&str> = singles.iter().map(String::as_str).collect();
        for (r, t) in pairs(&reasoning, &tools, round) {
            let whole = parse(r, t, &[&output]);
            for deltas in [&random, &singles] {
                assert_eq!(
                    parse(r, t, deltas),
                    whole,
                    "round {round}, reasoning {r:?}, tool {t:?}, output {output:?}, deltas {deltas:?}"
                );
            }
        }
    }
}
