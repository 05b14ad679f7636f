//! Shared by the integration tests: run a parser pair over deltas, checking that
//! the event stream is well formed before merging it.

use vllm_parser::{Event, MessageBuilder, MessageParser, ParsedMessage, ParserOptions};

/// Parse `deltas` (text, token ids) with the named parsers and merge the events.
///
/// Panics if the event stream is malformed: empty text events, tool calls not
/// numbered 0, 1, 2… in order, arguments outside a begun and unfinished call,
/// a call left unfinished at the end.
pub fn parse(
    reasoning: Option<&str>,
    tool: Option<&str>,
    options: &ParserOptions,
    deltas: &[(&str, &[u32])],
) -> ParsedMessage {
    let mut parser =
        MessageParser::from_names(reasoning, tool, options).unwrap_or_else(|e| panic!("{e}"));
    let mut events = Vec::new();
    for (text, ids) in deltas {
        parser.push(text, ids, &mut events);
    }
    parser.finish(&mut events);
    if let Err(problem) = check_events(&events) {
        panic!("malformed event stream ({problem}): {events:?}");
    }
    let mut message = MessageBuilder::new();
    message.extend(&events);
    message.finish()
}

fn check_events(events: &[Event]) -> Result<(), String> {
    let (mut begun, mut open) = (0usize, None::<usize>);
    for event in events {
        match event {
            Event::Reasoning(text) | Event::Content(text) if text.is_empty() => {
                return Err("empty text event".into());
            }
            Event::Reasoning(_) | Event::Content(_) => {}
            Event::ToolCallBegin { index, .. } => {
                if *index != begun || open.is_some() {
                    return Err(format!(
                        "call {index} begins after {begun} calls, open {open:?}"
                    ));
                }
                begun += 1;
                open = Some(*index);
            }
            Event::ToolCallArguments { index, .. } if open != Some(*index) => {
                return Err(format!("arguments for call {index} while {open:?} is open"));
            }
            Event::ToolCallArguments { .. } => {}
            Event::ToolCallEnd { index } => {
                if open != Some(*index) {
                    return Err(format!("end of call {index} while {open:?} is open"));
                }
                open = None;
            }
        }
    }
    match open {
        Some(index) => Err(format!("call {index} never ends")),
        None => Ok(()),
    }
}
