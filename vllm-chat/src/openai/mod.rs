//! OpenAI-compatible request and response types, with vLLM 0.33.0's extra fields.

mod logprobs;
mod request;
mod response;
mod tools;
mod validate;

pub use logprobs::{
    ChatLogprobEntry, ChatLogprobs, ChatTopLogprob, CompletionLogprobs, TopLogprobMap,
};
pub use request::{
    ChatCompletionRequest, ChatMessage, CompletionPrompt, CompletionRequest, ContentPart,
    MessageContent, PromptInput, StopParam, StreamOptions,
};
pub use response::{
    ChatChoice, ChatChunkChoice, ChatCompletionChunk, ChatCompletionResponse, CompletionChoice,
    CompletionChunk, CompletionChunkChoice, CompletionResponse, DeltaFunctionCall, DeltaMessage,
    DeltaToolCall, Emit, ErrorInfo, ErrorResponse, FunctionCall, ResponseMessage, ToolCall, Usage,
};
pub use tools::{
    FunctionDefinition, NamedFunction, NamedToolChoice, Tool, ToolChoice, ToolChoiceMode,
};
