//! MiMo (vLLM's `parser/mimo.py`, name `mimo` for both parsers): the Qwen3
//! grammar and `<think>` reasoning, with parameter values kept verbatim (no
//! newline trimming) before the tool's schema types them.
//!
//! ```text
//! <tool_call>
//! <function=get_weather>
//! <parameter=city>Paris</parameter>
//! </function>
//! </tool_call>
//! ```

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::EngineConfig;
use crate::engine::models::qwen3::{self, PARAM, QWEN3, Wrappers};
use crate::engine::models::{dict_json, tag_params};
use crate::json::PyJson;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

/// MiMo's spellings: Qwen3's.
const MIMO: Wrappers = Wrappers {
    name: "mimo",
    ..QWEN3
};

/// The MiMo grammar; `thinking` starts the output in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut config = qwen3::config(MIMO, thinking);
    config.converter = Some(convert);
    config
}

/// Whether the request thinks (`enable_thinking`, on by default).
fn thinking(options: &ParserOptions) -> bool {
    options.template_flag("enable_thinking", true)
}

/// The `mimo` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(thinking(options)), options)
}

/// The `mimo` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let thinking = thinking(options);
    EngineReasoningParser::boxed(config(thinking), thinking, &options.prompt)
}

/// vLLM's `_mimo_arg_converter(raw, partial=False)`: every complete
/// parameter, its value as written.
fn convert(raw: &str) -> Option<String> {
    let params = tag_params(raw, &PARAM)
        .into_iter()
        .map(|p| (p.name.to_owned(), PyJson::Str(p.value.to_owned())));
    Some(dict_json(params))
}
