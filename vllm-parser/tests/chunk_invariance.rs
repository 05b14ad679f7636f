//! Streaming equals whole text for every registered parser (and every reasoning +
//! tool pair) on random marker-heavy outputs, at random chunkings. Needs no
//! reference: it checks our own invariant on inputs no corpus lists, and that no
//! input panics.

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

#[test]
fn random_outputs_parse_the_same_at_every_chunking() {
    let reasoning: Vec<Option<&str>> = std::iter::once(None)
        .chain(REASONING_PARSERS.iter().map(|e| Some(e.name)))
        .collect();
    let tools: Vec<Option<&str>> = std::iter::once(None)
        .chain(TOOL_PARSERS.iter().map(|e| Some(e.name)))
        .collect();
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
        for &r in &reasoning {
            for &t in &tools {
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
}
