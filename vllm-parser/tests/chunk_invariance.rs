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
    common::parse(reasoning, tool, &ParserOptions::default(), &deltas)
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
