//! The state machine (vLLM's `StreamingParserEngine`): lexer tokens through the
//! transition table into [`Signal`]s.

use crate::engine::array::{ArrayBody, ArrayEnd};
use crate::engine::config::{Emit, EngineConfig, State};
use crate::engine::lexer::{Lexer, Token};

/// What the engine reports, in output order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// Content text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
    /// Reasoning is over.
    ReasoningEnd,
    /// A call starts.
    CallStart,
    /// Text of the current call's name.
    Name(String),
    /// Raw argument text of the current call.
    Args(String),
    /// The current call ends (may repeat for a call already ended).
    CallEnd,
}

/// Which half of the grammar a caller bypasses (vLLM's `skip_tool_parsing` /
/// `skip_reasoning_parsing`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Bypass {
    /// Tool markup is text: the reasoning parser's view of the output.
    pub tools: bool,
    /// Reasoning-only markers are text: a tool parser with no reasoning parser.
    pub reasoning: bool,
}

/// One request's engine.
#[derive(Debug, Clone)]
pub struct Engine {
    config: EngineConfig,
    /// Terminal name for each spelling the lexer searches.
    names: Vec<&'static str>,
    lexer: Lexer,
    state: State,
    bypass: Bypass,
    /// Terminals with a transition into, out of or within the tool states.
    tool_terminals: Vec<&'static str>,
    /// Terminals that leave the tool states.
    tool_exit_terminals: Vec<&'static str>,
    /// Reasoning-only markers (what [`Bypass::reasoning`] turns into text).
    reasoning_markup: Vec<&'static str>,
    in_skipped_tool_span: bool,
    calls_started: usize,
    array: ArrayBody,
    /// Text read in [`State::MessageHeader`], until the header ends.
    header: String,
}

impl Engine {
    /// An engine for `config`, starting in `initial_state`.
    pub fn new(config: EngineConfig, initial_state: State, bypass: Bypass) -> Self {
        let names = config.terminals.iter().map(|(name, _)| *name).collect();
        let lexer = Lexer::new(config.terminals.iter().map(|(_, lit)| *lit).collect());
        let tool_terminals = config
            .transitions
            .iter()
            .filter(|t| t.to.is_tool() || t.from.is_tool())
            .map(|t| t.terminal)
            .collect();
        let tool_exit_terminals = config
            .transitions
            .iter()
            .filter(|t| t.from.is_tool() && !t.to.is_tool())
            .map(|t| t.terminal)
            .collect();
        let reasoning_markup = reasoning_markup(&config);
        Self {
            config,
            names,
            lexer,
            state: initial_state,
            bypass,
            tool_terminals,
            tool_exit_terminals,
            reasoning_markup,
            in_skipped_tool_span: false,
            calls_started: 0,
            array: ArrayBody::default(),
            header: String::new(),
        }
    }

    /// Change what the engine bypasses (before any text).
    pub fn set_bypass(&mut self, bypass: Bypass) {
        self.bypass = bypass;
    }

    /// Feed one delta.
    pub fn push(&mut self, text: &str, out: &mut Vec<Signal>) {
        self.lexer.push(text);
        while let Some(token) = self.lexer.next_token() {
            self.token(token, out);
        }
    }

    /// End of output: flush held text and close what is open.
    pub fn finish(&mut self, out: &mut Vec<Signal>) {
        for token in self.lexer.finish() {
            self.token(token, out);
        }
        match self.state {
            State::ToolPreamble | State::ToolName | State::ToolArgs | State::ToolBetween => {
                let open = !self.config.array_body || self.array.in_element();
                if open && self.calls_started > 0 {
                    out.push(Signal::CallEnd);
                }
            }
            State::Reasoning => out.push(Signal::ReasoningEnd),
            // A header the output ended in is content.
            State::MessageHeader => {
                let header = std::mem::take(&mut self.header);
                self.signal(Emit::Text, header, out);
            }
            State::Content => {}
        }
        self.state = State::Content;
    }

    fn token(&mut self, token: Token, out: &mut Vec<Signal>) {
        match token {
            Token::Text(text) => self.text(&text, out),
            Token::Terminal(index) => self.terminal(index, out),
        }
    }

    /// vLLM's `_on_terminal`.
    fn terminal(&mut self, index: usize, out: &mut Vec<Signal>) {
        let name = self.names[index];
        let value = self.config.terminals[index].1;
        let Some(&transition) = self.config.transition(self.state, name) else {
            if self.bypass.tools && self.tool_exit_terminals.contains(&name) {
                self.in_skipped_tool_span = false;
            }
            return self.text(value, out);
        };
        if self.bypass.reasoning && self.reasoning_markup.contains(&name) {
            return self.text(value, out);
        }
        if self.bypass.tools && self.tool_terminals.contains(&name) {
            let is_opener = transition.to.is_tool();
            let is_exit = self.tool_exit_terminals.contains(&name);
            if !(is_exit && !is_opener && !self.in_skipped_tool_span) {
                if is_opener {
                    self.in_skipped_tool_span = true;
                } else if is_exit {
                    self.in_skipped_tool_span = false;
                }
                let leaving_header = self.state == State::MessageHeader;
                if leaving_header {
                    self.header.clear();
                }
                if transition.emits.contains(&Emit::ReasoningEnd) {
                    self.state = State::Content;
                    out.push(Signal::ReasoningEnd);
                    out.push(Signal::Text(value.to_owned()));
                } else if leaving_header {
                    self.state = State::Content;
                    out.push(Signal::Text(value.to_owned()));
                } else if let Some(emit) = self.config.content_event(self.state) {
                    self.signal(emit, value.to_owned(), out);
                }
                return;
            }
        }
        // Leaving a header: a content event carries the header, not the terminal.
        let header = (self.state == State::MessageHeader).then(|| std::mem::take(&mut self.header));
        self.state = transition.to;
        if self.state == State::ToolArgs {
            self.array = ArrayBody::default();
        }
        for &emit in transition.emits {
            let text = match (&header, emit) {
                (Some(header), Emit::Text) => header.clone(),
                _ => value.to_owned(),
            };
            self.signal(emit, text, out);
        }
    }

    /// vLLM's `_emit_for_state`.
    fn text(&mut self, text: &str, out: &mut Vec<Signal>) {
        if text.is_empty() {
            return;
        }
        if self.state == State::MessageHeader {
            self.header.push_str(text);
        } else if self.state == State::ToolArgs && self.config.array_body {
            let before = out.len();
            let end = self.array.feed(text, out);
            self.calls_started += out[before..]
                .iter()
                .filter(|s| **s == Signal::CallStart)
                .count();
            if let ArrayEnd::Closed(at) = end {
                self.state = State::Content;
                self.text(&text[at..], out);
            }
        } else if self.state == State::ToolArgs {
            out.push(Signal::Args(text.to_owned()));
        } else if let Some(emit) = self.config.content_event(self.state) {
            self.signal(emit, text.to_owned(), out);
        }
    }

    fn signal(&mut self, emit: Emit, text: String, out: &mut Vec<Signal>) {
        out.push(match emit {
            Emit::Text if text.is_empty() => return,
            Emit::Text => Signal::Text(text),
            Emit::ReasoningText => Signal::Reasoning(text),
            Emit::ReasoningStart => return,
            Emit::ReasoningEnd => Signal::ReasoningEnd,
            Emit::ToolCallStart => {
                self.calls_started += 1;
                Signal::CallStart
            }
            Emit::NameText => Signal::Name(text),
            Emit::Argument => Signal::Args(text),
            Emit::ToolCallEnd => Signal::CallEnd,
        });
    }
}

/// vLLM's `_compute_reasoning_markup_terminals`: the terminals whose every
/// transition stays within content/reasoning and only starts or ends
/// reasoning; empty when one such marker also does something else.
fn reasoning_markup(config: &EngineConfig) -> Vec<&'static str> {
    let plain = |s: State| matches!(s, State::Content | State::Reasoning);
    let mut markers: Vec<&'static str> = config
        .transitions
        .iter()
        .filter(|t| (t.from == State::Reasoning || t.to == State::Reasoning) && !t.to.is_tool())
        .map(|t| t.terminal)
        .collect();
    markers.dedup();
    let pure = config
        .transitions
        .iter()
        .filter(|t| markers.contains(&t.terminal))
        .all(|t| {
            plain(t.from)
                && plain(t.to)
                && t.emits
                    .iter()
                    .all(|e| matches!(e, Emit::ReasoningStart | Emit::ReasoningEnd))
        });
    if pure { markers } else { Vec::new() }
}
