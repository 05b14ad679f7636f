//! Errors. Parsing itself never fails (malformed output becomes content); only
//! choosing and constructing a parser can.

/// Why a parser could not be chosen or constructed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParserError {
    /// No reasoning parser is registered under this name.
    #[error(
        "reasoning parser {name:?} is not registered; {}",
        suggest(close_matches, "REASONING_PARSERS")
    )]
    UnknownReasoningParser {
        /// The name asked for.
        name: String,
        /// Registered names close to it, closest first (may be empty).
        close_matches: Vec<&'static str>,
    },
    /// No tool parser is registered under this name.
    #[error(
        "tool parser {name:?} is not registered; {}",
        suggest(close_matches, "TOOL_PARSERS")
    )]
    UnknownToolParser {
        /// The name asked for.
        name: String,
        /// Registered names close to it, closest first (may be empty).
        close_matches: Vec<&'static str>,
    },
    /// `auto` was asked for a model this crate has no parser for.
    #[error("no parser is known for model {0:?}")]
    NoAutoParser(String),
    /// The tokenizer lacks a special token the parser needs (vLLM fails at start-up).
    #[error("parser {parser:?} needs the token {token:?}, which the tokenizer lacks")]
    MissingToken {
        /// The parser's registered name.
        parser: String,
        /// The token it needs.
        token: String,
    },
    /// `--enable-auto-tool-choice` without `--tool-call-parser` (vLLM refuses
    /// to start).
    #[error("--enable-auto-tool-choice requires --tool-call-parser")]
    AutoToolChoiceWithoutParser,
    /// A response-template parser (`hf`, `beam`) composed with a different
    /// parser: vLLM refuses to start; use the same one for both flags, or one.
    #[error("--reasoning-parser {reasoning} and --tool-call-parser {tool} cannot be combined")]
    CannotCombine {
        /// The reasoning parser.
        reasoning: String,
        /// The tool parser.
        tool: String,
    },
    /// `hf` / `beam` without the checkpoint's `response_template`: pass it,
    /// compiled with `ResponseTemplate::from_tokenizer_config`.
    #[error("parser {0:?} needs the checkpoint's response_template (tokenizer_config.json)")]
    MissingResponseTemplate(String),
}

/// The fix an unknown-name error names: the close matches, or where the list is.
fn suggest(close_matches: &[&str], table: &str) -> String {
    match close_matches {
        [] => format!("the registered names are in vllm_parser::registry::{table}"),
        [one] => format!("did you mean {one:?}?"),
        many => format!("did you mean one of {}?", many.join(", ")),
    }
}
