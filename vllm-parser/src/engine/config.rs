//! The declarative description of one model's output format (vLLM's
//! `ParserEngineConfig`): terminals, a `(state, terminal) → (state, events)`
//! table, what plain text means in each state, and how a call's raw argument
//! text becomes JSON.

/// Where the engine is in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Assistant text.
    Content,
    /// Reasoning text.
    Reasoning,
    /// Inside a call wrapper, before the function name (text is dropped).
    ToolPreamble,
    /// Reading the function name.
    ToolName,
    /// Reading the arguments.
    ToolArgs,
    /// After a call, inside its wrapper (text is dropped).
    ToolBetween,
    /// Between a message's role marker and its content-kind marker
    /// (Inkling's `MESSAGE_HEADER`): text there is a header, held back; it is
    /// dropped when a block opens and becomes content where a transition
    /// emits [`Emit::Text`] or the output ends.
    MessageHeader,
}

impl State {
    /// The states inside a tool-call region.
    pub fn is_tool(self) -> bool {
        matches!(
            self,
            State::ToolPreamble | State::ToolName | State::ToolArgs | State::ToolBetween
        )
    }
}

/// What a transition (or plain text in a state) emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// Content text.
    Text,
    /// Reasoning starts (no text).
    ReasoningStart,
    /// Reasoning text.
    ReasoningText,
    /// Reasoning ends (no text).
    ReasoningEnd,
    /// A new call starts.
    ToolCallStart,
    /// Text of the call's name.
    NameText,
    /// Raw argument text.
    Argument,
    /// The call ends.
    ToolCallEnd,
}

/// One row of the transition table.
#[derive(Debug, Clone, Copy)]
pub struct Transition {
    /// The state the row applies in.
    pub from: State,
    /// The terminal's name.
    pub terminal: &'static str,
    /// The state after the terminal.
    pub to: State,
    /// What the terminal emits; text-carrying events carry the terminal's text.
    pub emits: &'static [Emit],
}

/// Shorthand for a table row.
pub const fn on(
    from: State,
    terminal: &'static str,
    to: State,
    emits: &'static [Emit],
) -> Transition {
    Transition {
        from,
        terminal,
        to,
        emits,
    }
}

/// Converts a call's raw argument text into its arguments JSON; `None` where
/// vLLM's converter raises (the engine then reads the text as JSON).
pub type Converter = fn(&str) -> Option<String>;

/// Rewrites converted arguments knowing the function name (as written) and the
/// request's tools (DeepSeek's unwrapping of `{"arguments": {…}}`).
pub type PostConvert = fn(String, &str, &[crate::tools::Tool]) -> String;

/// Converts a call's raw argument text knowing the function name (as written)
/// and the request's tools, in place of a [`Converter`] (MiniMax M3 reads the
/// schema while it parses).
pub type SchemaConverter = fn(&str, &str, &[crate::tools::Tool]) -> Option<String>;

/// Reads a call header (e.g. Kimi's `functions.get_weather:0`) into
/// `(call id, function name)`; `None` when it is not one.
pub type CallHeader = fn(&str) -> Option<(String, String)>;

/// The state a reasoning parser starts in, read from the end of the prompt
/// (vLLM's `adjust_initial_state_from_prompt`); `None` keeps the default.
pub type PromptState = fn(&str) -> Option<State>;

/// A model's format: vLLM's `ParserEngineConfig` with the fields that decide
/// the whole-text result.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// vLLM's config name.
    pub name: &'static str,
    /// `(terminal name, spelling)`; a name may have several spellings.
    pub terminals: Vec<(&'static str, &'static str)>,
    /// The transition table.
    pub transitions: Vec<Transition>,
    /// What plain text emits in each state (states not listed drop it).
    pub content_events: Vec<(State, Emit)>,
    /// The state the output starts in.
    pub initial_state: State,
    /// Raw argument text → JSON (vLLM's `arg_converter`).
    pub converter: Option<Converter>,
    /// Replaces [`converter`](Self::converter) when the conversion needs the
    /// tool's schema.
    pub schema_converter: Option<SchemaConverter>,
    /// The tool region is one JSON array of `{"name", "arguments"}` objects
    /// (see [`array`](mod@crate::engine::array)).
    pub array_body: bool,
    /// Applied after [`converter`](Self::converter) when the request has tools.
    pub post_convert: Option<PostConvert>,
    /// Reasoning loses its trailing whitespace.
    pub strip_trailing_reasoning_whitespace: bool,
    /// Whitespace-only content is dropped when calls follow.
    pub drop_whitespace_only_content_before_tools: bool,
    /// Content is `.strip()`ped when the output has calls.
    pub strip_content_whitespace_with_tools: bool,
    /// Calls to functions the request does not offer are dropped.
    pub validate_tool_names: bool,
    /// Function names are `.strip()`ped before they are checked (GLM).
    pub strip_tool_names: bool,
    /// The name text is a header holding the call id and the name (Kimi).
    pub call_header: Option<CallHeader>,
    /// Arguments without (or when failing) a converter (`_extract_args_json`).
    pub args_text: ArgsText,
    /// A nameless call takes its name from `"name": "…"` in its argument text.
    pub names_in_arguments: bool,
    /// A call with an empty name is still a call (Mistral).
    pub accept_empty_names: bool,
    /// Tokens that delimit turns in the prompt: with them, a prompt whose
    /// last marker ends reasoning starts the output in content.
    pub turn_boundaries: Vec<&'static str>,
    /// Keys of a `{"name", …}` call object that hold its arguments, in the
    /// order they are tried (vLLM's `_extract_args_value`; Inkling puts
    /// `args` first).
    pub args_keys: &'static [&'static str],
    /// Text after calls is content too (Inkling's flush of the engine's
    /// deferred content): no text is dropped for following a call.
    pub keep_text_after_calls: bool,
    /// The reasoning parser's start state from the prompt, if the format
    /// reads one.
    pub prompt_state: Option<PromptState>,
    /// vLLM's `wait_for_reasoning`: whether `is_reasoning_end` answers
    /// `false` for a prompt whose backward scan finds no reasoning marker
    /// before a turn boundary; `None` (vLLM's default): when the format
    /// starts in reasoning.
    pub wait_for_reasoning: Option<bool>,
}

/// How a call's raw argument text becomes its arguments when no converter
/// applies (vLLM's `_extract_args_json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgsText {
    /// Read as JSON: `arguments` / `parameters` of a `{"name", …}` object,
    /// else the object without `name`, else the text itself.
    Json,
    /// The stripped text as written (Kimi).
    Stripped,
    /// The first JSON value, as written; the stripped text when there is none
    /// (Mistral, whose calls have no terminator).
    FirstJsonValue,
}

impl EngineConfig {
    /// A config with vLLM's defaults for everything but the grammar.
    pub fn new(
        name: &'static str,
        initial_state: State,
        terminals: Vec<(&'static str, &'static str)>,
        transitions: Vec<Transition>,
    ) -> Self {
        Self {
            name,
            terminals,
            transitions,
            content_events: vec![
                (State::Content, Emit::Text),
                (State::Reasoning, Emit::ReasoningText),
                (State::ToolName, Emit::NameText),
                (State::ToolArgs, Emit::Argument),
            ],
            initial_state,
            converter: None,
            schema_converter: None,
            post_convert: None,
            array_body: false,
            strip_trailing_reasoning_whitespace: true,
            drop_whitespace_only_content_before_tools: true,
            strip_content_whitespace_with_tools: true,
            validate_tool_names: false,
            strip_tool_names: false,
            call_header: None,
            args_text: ArgsText::Json,
            names_in_arguments: true,
            accept_empty_names: false,
            turn_boundaries: Vec::new(),
            args_keys: &["arguments", "parameters"],
            keep_text_after_calls: false,
            prompt_state: None,
            wait_for_reasoning: None,
        }
    }

    /// The row for `terminal` in `state`, if any.
    pub fn transition(&self, state: State, terminal: &str) -> Option<&Transition> {
        self.transitions
            .iter()
            .find(|t| t.from == state && t.terminal == terminal)
    }

    /// What plain text emits in `state`.
    pub fn content_event(&self, state: State) -> Option<Emit> {
        self.content_events
            .iter()
            .find(|(s, _)| *s == state)
            .map(|(_, e)| *e)
    }
}
