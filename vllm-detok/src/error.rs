//! The one error type of the crate.

/// Everything that can go wrong while loading a tokenizer or decoding a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The tokenizer file could not be read.
    #[error("cannot read tokenizer file {path}: {source}")]
    Io {
        /// The file that failed.
        path: std::path::PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The tokenizer definition could not be parsed or used by `tokenizers`.
    #[error("tokenizer error: {0}")]
    Tokenizer(String),
    /// A stop string was empty (vLLM rejects these too: "stop cannot contain an empty string").
    #[error("stop strings must not be empty")]
    EmptyStopString,
    /// The stop strings could not be compiled into a matcher.
    #[error("cannot build the stop-string matcher: {0}")]
    StopMatcher(String),
    /// Tokens were pushed after the request finished (by a stop string or `finish`).
    #[error("the request has already finished")]
    Finished,
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn tokenizer(err: impl std::fmt::Display) -> Self {
        Self::Tokenizer(err.to_string())
    }
}
