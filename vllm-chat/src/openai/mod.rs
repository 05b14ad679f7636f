//! OpenAI-compatible request and response types, with vLLM 0.33.0's extra fields.

mod request;
mod tools;
mod validate;

pub use request::{
    ChatCompletionRequest, ChatMessage, CompletionPrompt, CompletionRequest, ContentPart, MessageContent,
    PromptInput, StopParam, StreamOptions,
};
pub use tools::{FunctionDefinition, NamedFunction, NamedToolChoice, Tool, ToolChoice, ToolChoiceMode};
