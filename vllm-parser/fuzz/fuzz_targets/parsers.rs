//! Every registered reasoning + tool parser pair on arbitrary text: no panic, and
//! the streamed result equals the whole-text result at the split the input picks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vllm_parser::registry::{REASONING_PARSERS, TOOL_PARSERS};
use vllm_parser::{MessageBuilder, MessageParser, ParsedMessage, ParserOptions};

fn parse(reasoning: Option<&str>, tool: Option<&str>, deltas: &[&str]) -> ParsedMessage {
    let options = ParserOptions::default();
    let mut parser = MessageParser::new(
        reasoning.map(|n| vllm_parser::registry::reasoning_parser(n, &options).unwrap()),
        tool.map(|n| vllm_parser::registry::tool_parser(n, &options).unwrap()),
    );
    let mut events = Vec::new();
    for delta in deltas {
        parser.push(delta, &[], &mut events);
    }
    parser.finish(&mut events);
    let mut message = MessageBuilder::new();
    message.extend(&events);
    message.finish()
}

fuzz_target!(|data: &[u8]| {
    // One byte per parser pick, so every registered name is reachable.
    let [reasoning_pick, tool_pick, step, rest @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let reasoning = REASONING_PARSERS
        .get(*reasoning_pick as usize % (REASONING_PARSERS.len() + 1))
        .map(|e| e.name);
    let tool = TOOL_PARSERS
        .get(*tool_pick as usize % (TOOL_PARSERS.len() + 1))
        .map(|e| e.name);
    let step = 1 + *step as usize % 9;
    let (mut deltas, mut from) = (Vec::new(), 0);
    for (n, (at, _)) in text.char_indices().enumerate() {
        if n > 0 && n % step == 0 {
            deltas.push(&text[from..at]);
            from = at;
        }
    }
    deltas.push(&text[from..]);
    assert_eq!(
        parse(reasoning, tool, &deltas),
        parse(reasoning, tool, &[text])
    );
});
