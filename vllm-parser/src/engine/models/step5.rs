//! Step-5 tool calls (vLLM's `tool_parsers/step5_tool_parser.py`, tool name
//! `step5`): the Qwen3 grammar without thinking, keeping the content's
//! whitespace beside calls (neither stripped nor dropped when blank). vLLM's
//! `step5` reasoning parser is DeepSeek R1's (`reasoning::think`).

use crate::engine::adapters::EngineToolParser;
use crate::engine::models::qwen3::{self, QWEN3, Wrappers};
use crate::parser::{ParserOptions, ToolParser};

/// Step-5's spellings: Qwen3's.
const STEP5: Wrappers = Wrappers {
    name: "step5",
    ..QWEN3
};

/// The `step5` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    let mut config = qwen3::config(STEP5, false);
    config.drop_whitespace_only_content_before_tools = false;
    config.strip_content_whitespace_with_tools = false;
    EngineToolParser::boxed(config, &options.tools)
}
