//! DeepSeek V3.2 (vLLM's `parser/deepseek_v32.py`, tool name `deepseek_v32`):
//! DeepSeek V4's DSML calls inside `<｜DSML｜function_calls>`, no reasoning.

use crate::engine::adapters::EngineToolParser;
use crate::engine::config::{EngineConfig, State};
use crate::engine::models::deepseek_v4::{DSML_TERMINALS, dsml, dsml_transitions};
use crate::parser::{ParserOptions, ToolParser};

/// The DeepSeek V3.2 grammar.
pub fn config() -> EngineConfig {
    let mut terminals = vec![
        ("TOOL_START", "<｜DSML｜function_calls>"),
        ("TOOL_END", "</｜DSML｜function_calls>"),
    ];
    terminals.extend(DSML_TERMINALS);
    dsml(EngineConfig::new(
        "deepseek_v32",
        State::Content,
        terminals,
        dsml_transitions(),
    ))
}

/// The `deepseek_v32` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(), options)
}
