//! Step-3.5 / Step-3.7 (vLLM's `parser/step3p5.py`, name `step3p5` for both
//! parsers): the Qwen3 grammar and `<think>` reasoning, except that the
//! template always prefills `<think>\n` (thinking cannot be turned off, so
//! `enable_thinking` is ignored) and the model closes reasoning with
//! `\n</think>\n`, so reasoning loses its trailing whitespace.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::EngineConfig;
use crate::engine::models::qwen3::{self, QWEN3, Wrappers};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

/// Step-3.5's spellings: Qwen3's.
const STEP3P5: Wrappers = Wrappers {
    name: "step3p5",
    ..QWEN3
};

/// The Step-3.5 grammar: Qwen3's, always thinking.
pub fn config() -> EngineConfig {
    let mut config = qwen3::config(STEP3P5, true);
    config.strip_trailing_reasoning_whitespace = true;
    config
}

/// The `step3p5` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(), options)
}

/// The `step3p5` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    EngineReasoningParser::boxed(config(), true, &options.prompt)
}
