//! The engine behind the crate's two traits (vLLM's `ParserEngineToolAdapter`
//! and `ParserEngineReasoningAdapter`).
//!
//! The tool parser starts in content (it sees what the reasoning parser left)
//! and, when no reasoning parser runs before it, treats reasoning-only markers
//! as text. The reasoning parser reads tool markup as text (a call opener that
//! implicitly ends reasoning still does so).

use crate::engine::assemble::{ReasoningAssembler, ToolAssembler};
use crate::engine::config::{Emit, EngineConfig, State};
use crate::engine::driver::{Bypass, Engine, Signal};
use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::serving::ToolChoice;

/// A tool parser running an engine config.
#[derive(Debug)]
pub struct EngineToolParser {
    engine: Engine,
    assembler: ToolAssembler,
    signals: Vec<Signal>,
}

impl EngineToolParser {
    /// A parser for `config` and the request's tools and `tool_choice`.
    ///
    /// `tool_choice: none` on a request with tools suppresses calls in the
    /// engine itself (vLLM's `ParserEngine._check_skip_tool_parsing`): call
    /// markup is consumed and every other piece of text is content as is.
    pub fn new(config: EngineConfig, options: &ParserOptions) -> Self {
        let mut assembler = ToolAssembler::new(&config, &options.tools);
        if options.tool_choice == Some(ToolChoice::None) && !options.tools.is_empty() {
            assembler.suppress_calls();
        }
        let bypass = Bypass {
            tools: false,
            reasoning: true,
        };
        Self {
            engine: Engine::new(config, State::Content, bypass),
            assembler,
            signals: Vec::new(),
        }
    }

    /// Boxed, for the registry.
    pub fn boxed(config: EngineConfig, options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::new(config, options))
    }
}

impl ToolParser for EngineToolParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.assembler.raw_text(text);
        self.engine.push(text, &mut self.signals);
        self.assembler.signals(&mut self.signals, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.engine.finish(&mut self.signals);
        self.assembler.signals(&mut self.signals, out);
        self.assembler.finish(out);
    }

    fn follows_reasoning_parser(&mut self) {
        self.engine.set_bypass(Bypass {
            tools: false,
            reasoning: false,
        });
    }

    fn follows_legacy_reasoning_parser(&mut self) {
        self.assembler.keep_raw_content();
    }
}

/// A reasoning parser running an engine config.
#[derive(Debug)]
pub struct EngineReasoningParser {
    /// `None` when thinking is off: everything is content (vLLM's
    /// `extract_reasoning` override returns the output untouched).
    engine: Option<Engine>,
    assembler: ReasoningAssembler,
    signals: Vec<Signal>,
    /// vLLM's `is_reasoning_end` for the prompt the parser was built with.
    prompt_ends_reasoning: bool,
}

impl EngineReasoningParser {
    /// A parser for `config`; `thinking` false passes all text through as
    /// content; a `prompt` that already closed reasoning starts in content,
    /// and a format with a [`prompt_state`](EngineConfig::prompt_state) starts
    /// where the prompt left off.
    pub fn new(config: EngineConfig, thinking: bool, prompt: &str) -> Self {
        let assembler = ReasoningAssembler::new(&config);
        let prompt_ends_reasoning = is_reasoning_end(&config, prompt);
        let initial = if prompt_closes_reasoning(&config, prompt) {
            State::Content
        } else {
            config
                .prompt_state
                .and_then(|read| read(prompt))
                .unwrap_or(config.initial_state)
        };
        let bypass = Bypass {
            tools: true,
            reasoning: false,
        };
        Self {
            engine: thinking.then(|| Engine::new(config, initial, bypass)),
            assembler,
            signals: Vec::new(),
            prompt_ends_reasoning,
        }
    }

    /// Replaces the engine's `is_reasoning_end` answer where vLLM's parser
    /// class overrides it (Inkling).
    pub(crate) fn with_prompt_ends_reasoning(mut self, ended: bool) -> Self {
        self.prompt_ends_reasoning = ended;
        self
    }

    /// Boxed, for the registry.
    pub fn boxed(config: EngineConfig, thinking: bool, prompt: &str) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(config, thinking, prompt))
    }
}

/// vLLM's `set_prompt_token_ids` on text: a format that starts in reasoning
/// and knows its turn boundaries starts in content when the prompt ended
/// reasoning ([`is_reasoning_end`], e.g. a template that rendered
/// `<think></think>`).
fn prompt_closes_reasoning(config: &EngineConfig, prompt: &str) -> bool {
    config.initial_state == State::Reasoning
        && !config.turn_boundaries.is_empty()
        && is_reasoning_end(config, prompt)
}

/// The parser engine's `is_reasoning_end(prompt_token_ids)` on the prompt's
/// markers: scanning backwards, a marker that ends reasoning (the terminals
/// whose transitions out of reasoning emit its end; none when a transition
/// leaves reasoning without ending it) answers `true`, a `THINK_START` that
/// opens reasoning from the initial state `false`; at any other
/// `THINK_START`, at a turn boundary or at the prompt's start the answer is
/// `not wait_for_reasoning`.
pub(crate) fn is_reasoning_end(config: &EngineConfig, prompt: &str) -> bool {
    let wait = config
        .wait_for_reasoning
        .unwrap_or(config.initial_state == State::Reasoning);
    let start_opens = config
        .transition(config.initial_state, "THINK_START")
        .is_some_and(|t| t.to == State::Reasoning);
    let mut end_terminals = Vec::new();
    for t in config
        .transitions
        .iter()
        .filter(|t| t.from == State::Reasoning)
    {
        if t.emits.contains(&Emit::ReasoningEnd) {
            end_terminals.push(t.terminal);
        } else if t.to != State::Reasoning {
            end_terminals.clear();
            break;
        }
    }
    let last_of = |names: &[&str]| {
        config
            .terminals
            .iter()
            .filter(|(name, _)| names.contains(name))
            .filter_map(|(_, literal)| prompt.rfind(literal))
            .max()
    };
    let end = last_of(&end_terminals);
    let start = last_of(&["THINK_START"]);
    let boundary = config
        .turn_boundaries
        .iter()
        .filter_map(|b| prompt.rfind(b))
        .max();
    match [end, start, boundary].into_iter().flatten().max() {
        Some(at) if Some(at) == end => true,
        Some(at) if Some(at) == start && start_opens => false,
        _ => !wait,
    }
}

impl ReasoningParser for EngineReasoningParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn is_engine_based(&self) -> bool {
        true
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        match &mut self.engine {
            Some(engine) => {
                engine.push(text, &mut self.signals);
                self.assembler.signals(&mut self.signals, out);
            }
            None if text.is_empty() => {}
            None => out.push(Event::Content(text.to_owned())),
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        if let Some(engine) = &mut self.engine {
            engine.finish(&mut self.signals);
            self.assembler.signals(&mut self.signals, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;

    /// Content and calls from one whole push of `text`.
    fn parse(tool_choice: Option<ToolChoice>, text: &str) -> (String, usize) {
        let options = ParserOptions {
            tools: Tool::from_openai(&serde_json::json!({
                "type": "function",
                "function": {"name": "get_weather", "parameters": {"type": "object"}},
            }))
            .into_iter()
            .collect(),
            tool_choice,
            ..ParserOptions::default()
        };
        let mut parser = crate::registry::tool_parser("qwen3_coder", &options).unwrap();
        let mut out = Vec::new();
        parser.push(text, &[], &mut out);
        parser.finish(&mut out);
        let content = out
            .iter()
            .filter_map(|e| match e {
                Event::Content(c) => Some(c.as_str()),
                _ => None,
            })
            .collect();
        let calls = out
            .iter()
            .filter(|e| matches!(e, Event::ToolCallBegin { .. }))
            .count();
        (content, calls)
    }

    #[test]
    fn tool_choice_none_keeps_text_around_suppressed_calls() {
        let call = "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>";
        let text = format!("Let me check.\n\n{call}\n{call}");
        assert_eq!(
            parse(Some(ToolChoice::None), &text),
            ("Let me check.\n\n\n".to_owned(), 0)
        );
        // `auto` strips the content beside the calls it finds.
        assert_eq!(parse(None, &text), ("Let me check.".to_owned(), 2));
    }
}
