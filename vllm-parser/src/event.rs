//! The typed events every parser emits.

/// One piece of parsed output, in the order the model produced it.
///
/// Reasoning parsers emit [`Event::Reasoning`] and [`Event::Content`]; tool parsers
/// emit [`Event::Content`] and the `ToolCall*` events. A [`MessageBuilder`]
/// (or a server's SSE writer) consumes them.
///
/// Contract (checked by the test harness): text events are never empty; calls are
/// numbered 0, 1, 2… per response and come one at a time — `ToolCallBegin`, any
/// number of `ToolCallArguments`, `ToolCallEnd` — before the next begins.
///
/// [`MessageBuilder`]: crate::MessageBuilder
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Text of the model's reasoning (vLLM's `reasoning` field).
    Reasoning(String),
    /// Text of the assistant message (`content`).
    Content(String),
    /// A tool call starts. `index` counts calls within this response from 0.
    ToolCallBegin {
        /// Position of the call in the response's `tool_calls`.
        index: usize,
        /// The call id when the format defines one (e.g. Kimi's
        /// `functions.NAME:IDX`); `None` lets the server make a random one.
        id: Option<String>,
        /// The function name.
        name: String,
    },
    /// More of the call's `function.arguments` JSON text.
    ToolCallArguments {
        /// The call this text belongs to.
        index: usize,
        /// The text to append.
        delta: String,
    },
    /// The call's arguments are complete.
    ToolCallEnd {
        /// The call that ended.
        index: usize,
    },
}
