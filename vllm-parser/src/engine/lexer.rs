//! Terminals in streamed text (vLLM's `IncrementalLexer`), on top of
//! [`MarkerScanner`].
//!
//! Every terminal is searched in every state, as vLLM does: a terminal that has
//! no transition in the current state is still one token (its text then counts
//! as plain text), which decides how overlapping spellings split.

use crate::text::{MarkerScanner, Piece};

/// One lexed token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// Text containing no terminal.
    Text(String),
    /// The terminal spelled by `literals[index]`.
    Terminal(usize),
}

/// Incremental lexer over a fixed list of terminal spellings.
#[derive(Debug, Clone)]
pub struct Lexer {
    scanner: MarkerScanner,
    literals: Vec<&'static str>,
    /// Bytes that start some spelling: text without them is plain text.
    first_bytes: [bool; 256],
}

impl Lexer {
    /// A lexer for these spellings.
    pub fn new(literals: Vec<&'static str>) -> Self {
        let mut first_bytes = [false; 256];
        for literal in &literals {
            if let Some(&b) = literal.as_bytes().first() {
                first_bytes[b as usize] = true;
            }
        }
        Self {
            scanner: MarkerScanner::new(),
            literals,
            first_bytes,
        }
    }

    /// Append streamed text.
    pub fn push(&mut self, text: &str) {
        self.scanner.push(text);
    }

    /// The next token, or `None` until more text arrives.
    ///
    /// Like vLLM, a pending text that is a proper prefix of some spelling waits
    /// even when it already spells a shorter terminal (`<invoke name=` may still
    /// become `<invoke name="`).
    pub fn next_token(&mut self) -> Option<Token> {
        let pending = self.scanner.pending();
        if self
            .literals
            .iter()
            .any(|lit| lit.len() > pending.len() && lit.starts_with(pending))
        {
            return None;
        }
        // Fast path (as vLLM's lexer has): no byte that starts a spelling.
        let plain = !pending.bytes().any(|b| self.first_bytes[b as usize]);
        let markers: &[&str] = if plain { &[] } else { &self.literals };
        Some(match self.scanner.next(markers)? {
            Piece::Text(text) => Token::Text(text.to_owned()),
            Piece::Marker(index) => Token::Terminal(index),
        })
    }

    /// End of output: the held-back rest, lexed without waiting.
    pub fn finish(&mut self) -> Vec<Token> {
        let rest = self.scanner.finish();
        let mut tokens = Vec::new();
        if rest.is_empty() {
            return tokens;
        }
        let mut scanner = MarkerScanner::new();
        scanner.push(&rest);
        while let Some(piece) = scanner.next(&self.literals) {
            tokens.push(match piece {
                Piece::Text(text) => Token::Text(text.to_owned()),
                Piece::Marker(index) => Token::Terminal(index),
            });
        }
        let tail = scanner.finish();
        if !tail.is_empty() {
            tokens.push(Token::Text(tail));
        }
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spelling_that_may_grow_waits_until_it_cannot() {
        let mut lexer = Lexer::new(vec!["<invoke name=", "<invoke name=\""]);
        lexer.push("<invoke name=");
        assert_eq!(lexer.next_token(), None);
        lexer.push("\"f");
        assert_eq!(lexer.next_token(), Some(Token::Terminal(1)));
        assert_eq!(lexer.next_token(), Some(Token::Text("f".into())));
        assert_eq!(lexer.next_token(), None);
        lexer.push("<invoke name=");
        assert_eq!(lexer.finish(), [Token::Terminal(0)]);
    }
}
