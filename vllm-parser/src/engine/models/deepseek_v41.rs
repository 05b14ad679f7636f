//! DeepSeek V4.1 (vLLM's `parser/deepseek_v41.py`, name `deepseek_v41` for
//! both parsers): DeepSeek V4's grammar with spaced DSML markers.
//!
//! ```text
//! <think>…</think>
//! <｜DSML｜ calls>
//! <｜DSML｜ invoke name="get_weather">
//! <｜DSML｜ parameter name="city" string="true">杭州</｜DSML｜ parameter>
//! </｜DSML｜ invoke>
//! </｜DSML｜ calls>
//! ```
//!
//! Only the spellings differ: one call wrapper (V4's variants are not
//! V4.1's), values, wrapper unwrapping and thinking switches are V4's.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::EngineConfig;
use crate::engine::models::deepseek_v4::{self, convert_params, thinking};
use crate::engine::models::{ParamTag, skip_space, spaced};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

/// V4.1's spelling of each V4 terminal it renames.
const SPELLINGS: [(&str, &str); 6] = [
    ("TOOL_START", "<｜DSML｜ calls>"),
    ("TOOL_END", "</｜DSML｜ calls>"),
    ("INVOKE_PREFIX", "<｜DSML｜ invoke name=\""),
    ("INVOKE_END", "</｜DSML｜ invoke>"),
    ("PARAM_START", "<｜DSML｜ parameter"),
    ("PARAM_CLOSE", "</｜DSML｜ parameter>"),
];

/// The DeepSeek V4.1 grammar; `thinking` starts the output in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut config = deepseek_v4::config(thinking);
    config.name = "deepseek_v41";
    let mut terminals = Vec::new();
    for (name, spelling) in config.terminals {
        let renamed = SPELLINGS.iter().find(|(n, _)| *n == name);
        let spelling = renamed.map_or(spelling, |(_, s)| *s);
        if !terminals.contains(&(name, spelling)) {
            terminals.push((name, spelling));
        }
    }
    config.terminals = terminals;
    config.converter = Some(convert);
    config
}

/// The `deepseek_v41` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(thinking(options)), options)
}

/// The `deepseek_v41` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    EngineReasoningParser::boxed(config(thinking(options)), true, &options.prompt)
}

/// `<｜DSML｜ parameter\s+name="NAME"(?:\s+string="S")?\s*>` …
/// `</｜DSML｜ parameter>`: V4's tag with V4.1's spellings.
const PARAM: ParamTag = ParamTag {
    open: |text| {
        let at = spaced(text, &["<｜DSML｜ parameter"], false)?;
        let after = skip_space(text, at);
        (after > at && text[after..].starts_with("name=")).then_some(after + "name=".len())
    },
    name: deepseek_v4::PARAM.name,
    close: |text| {
        text.starts_with("</｜DSML｜ parameter>")
            .then_some("</｜DSML｜ parameter>".len())
    },
};

/// vLLM's `_dsml_arg_converter` with V4.1's parameter patterns.
fn convert(raw: &str) -> Option<String> {
    convert_params(raw, &PARAM)
}
