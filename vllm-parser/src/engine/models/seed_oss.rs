//! Seed-OSS (vLLM's `parser/seed_oss.py`, name `seed_oss` for both parsers):
//! the Qwen3 grammar with `seed:`-prefixed wrappers.
//!
//! ```text
//! <seed:think>…</seed:think><seed:tool_call>
//! <function=get_weather>
//! <parameter=city>
//! Paris
//! </parameter>
//! </function>
//! </seed:tool_call>
//! ```

use crate::engine::models::qwen3::{self, Wrappers};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

/// Seed-OSS's spellings.
pub const SEED_OSS: Wrappers = Wrappers {
    name: "seed_oss",
    think_start: "<seed:think>",
    think_end: "</seed:think>",
    tool_start: "<seed:tool_call>",
    tool_end: "</seed:tool_call>",
    turn_boundaries: &["<seed:bos>", "<seed:eos>"],
};

/// The `seed_oss` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    qwen3::tool_parser_for(SEED_OSS, options)
}

/// The `seed_oss` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    qwen3::reasoning_parser_for(SEED_OSS, options)
}
