//! Tool-call parsers, one module per family of output formats.

pub mod apertus;
pub mod arg_tags;
pub mod deepseek;
pub mod dots;
pub mod ernie45;
pub mod functiongemma;
pub mod gigachat3;
pub mod granite_20b_fc;
pub mod hermes;
pub mod hunyuan_a13b;
pub mod json_calls;
pub mod kimi_k3;
pub mod lfm2;
pub mod minicpm5;
pub mod mistral_pre_v11;
pub mod pythonic;
pub mod settle;
pub mod step3;
pub mod stripped;

use crate::event::Event;

/// A complete tool call, ready to be emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The function name.
    pub name: String,
    /// The arguments JSON text, exactly as vLLM returns it.
    pub arguments: String,
}

/// Emit `calls` as begin / arguments / end events, numbering them from `first_index`.
pub fn emit_calls(calls: Vec<Call>, first_index: usize, out: &mut Vec<Event>) {
    for (offset, call) in calls.into_iter().enumerate() {
        let index = first_index + offset;
        out.push(Event::ToolCallBegin {
            index,
            id: None,
            name: call.name,
        });
        out.push(Event::ToolCallArguments {
            index,
            delta: call.arguments,
        });
        out.push(Event::ToolCallEnd { index });
    }
}
