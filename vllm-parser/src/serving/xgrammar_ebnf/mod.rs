//! Whether xgrammar 0.2.8's `Grammar.from_ebnf(text)` succeeds or raises,
//! the question vLLM 0.33.0 asks of a request's `structured_outputs.grammar`
//! (`validate_xgrammar_grammar`, through `beam`'s `_xgrammar_supports`) and,
//! behind `Grammar.from_regex`, of the EBNF its regex converter writes
//! ([`super::xgrammar_regex`]).
//!
//! `from_ebnf` lexes the whole text (`cpp/grammar_parser.cc`'s `EBNFLexer`),
//! registers every rule name, parses every rule — rule references are
//! resolved against the names registered so far, which include the helper
//! rules the parser itself adds for `*`, `+`, `?` and `{m,n}` (`root_1`, …) —
//! then normalizes (`GrammarNormalizer`), which refuses a lookahead assertion
//! that is an alternation, empty, or a `TagDispatch` / `Regex` / `Substring`
//! macro. Everything is reproduced here: `lexer` for the tokens, `parser`
//! for the rules and the normalizer's refusals, `macros` for the checks of
//! the macros 0.2.8 has (`TagDispatch`, `TokenTagDispatch`, `Token`,
//! `ExcludeToken`, `Regex` — whose pattern is not read at this stage —,
//! `Substring`). xgrammar reads the text as a C string: it ends at a NUL.
//! Escapes are read with xgrammar's 32-bit wrapping arithmetic, which the
//! installed library shows (`"\UFFFFFFF5"` is its "invalid escape" code).
//!
//! Rules confirmed against the installed xgrammar 0.2.8 (the stored C++
//! sources are of other versions), and differentially tested by
//! `tests/xgrammar_ebnf.rs` on `scripts/gen_xgrammar_ebnf.py`'s corpus.
//! Undecided (`None`): texts longer than [`MAX_GRAMMAR_BYTES`], and texts
//! whose parentheses nest deeper than [`MAX_NESTING`] (xgrammar refuses past
//! 1000 nested groups, and overflows its stack on deep macro arguments; this
//! module does not follow either).

mod lexer;
mod macros;
mod parser;

pub(super) use lexer::{Extra, parse_next_escaped};

/// The longest text (in UTF-8 bytes, up to a NUL) this module decides on.
pub const MAX_GRAMMAR_BYTES: usize = 256 * 1024;
/// The deepest parenthesis nesting this module decides on.
pub const MAX_NESTING: usize = 256;

/// Why reading stopped.
pub(super) enum Stop {
    /// xgrammar raises.
    Refused,
    /// This crate cannot tell.
    Undecided,
}

/// A reading step.
pub(super) type Step<T> = Result<T, Stop>;

/// Whether `xgrammar.Grammar.from_ebnf(text)` (0.2.8, root rule `root`)
/// succeeds: `Some(true)` it does, `Some(false)` it raises, `None` undecided
/// (see the module docs).
pub fn from_ebnf_compiles(text: &str) -> Option<bool> {
    // xgrammar reads a C string.
    let text = text.split('\0').next().unwrap_or_default();
    if text.len() > MAX_GRAMMAR_BYTES {
        return None;
    }
    let result = lexer::tokenize(text).and_then(|tokens| parser::parse(&tokens));
    match result {
        Ok(()) => Some(true),
        Err(Stop::Refused) => Some(false),
        Err(Stop::Undecided) => None,
    }
}

/// vLLM's `grammar_is_likely_lark` (`vllm/v1/structured_output/utils.py`):
/// no line, cut at its first `#` or `//`, holds `::=` (and the text is not
/// empty). Such a grammar goes to `Grammar.from_lark`, not `from_ebnf`.
pub fn grammar_is_likely_lark(grammar: &str) -> bool {
    !grammar.is_empty()
        && !grammar.split('\n').any(|line| {
            let cut = [line.find('#'), line.find("//")]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(line.len());
            line[..cut].contains("::=")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks_of_xgrammar_0_2_8() {
        for text in [
            "root ::= \"a\"",
            "root ::= \"a\"* root_1",
            "root ::= \"a\"\0 junk",
            "root ::= TagDispatch((\"a\", x))\nx ::= \"b\"",
            "root ::= Regex(\"(\")",
            "root[max_tokens=3, capture] ::= \"a\"",
            "root ::= \"a\" (= \"\" \"\")",
            "root ::= \"a\"{1,-1}",
            "root ::= [\\UFFFFFFFF-a]",
            "root ::= \"\\U00110000\"",
            "root ::= []",
            "root ::= x\nx ::= root",
        ] {
            assert_eq!(from_ebnf_compiles(text), Some(true), "{text:?}");
        }
        for text in [
            "",
            "x ::= \"a\"",
            "root ::= x",
            "root ::= root_1 \"a\"*",
            "root ::= [a]* root_1",
            "root ::= x{2} root_1\nx ::= \"a\"",
            "root ::= \"a\"\nroot ::= \"b\"",
            "root ::= \"a\" x ::= \"b\"",
            "root ::= \"a\" (= \"b\" | \"c\")",
            "root ::= \"a\" (= ())",
            "root ::= \"a\" (= Regex(\"a\"))",
            "root ::= \"\\UFFFFFFF5\"",
            "root ::= [\\d]",
            "root ::= [a--]",
            "root ::= \"a\"{2,1}",
            "root ::= \"a\"{10000000000000000}",
            "root ::= TagDispatch((\"ab\", root), excludes=(\"a\",))",
            "root ::= TokenTagDispatch((4294967297, root), excludes=(1,))",
            "root ::= é",
            "root[capture=\"\"] ::= \"a\"",
        ] {
            assert_eq!(from_ebnf_compiles(text), Some(false), "{text:?}");
        }
        let deep = format!("root ::= {}\"a\"{}", "(".repeat(300), ")".repeat(300));
        assert_eq!(from_ebnf_compiles(&deep), None);
        // The deepest recursion decided, on a test thread's stack.
        let deepest = format!("root ::= {}\"a\"{}", "(".repeat(256), ")".repeat(256));
        assert_eq!(from_ebnf_compiles(&deepest), Some(true));
        let tuples = format!("root ::= Token({}1{})", "(".repeat(255), ")".repeat(255));
        assert_eq!(from_ebnf_compiles(&tuples), Some(false));
    }

    #[test]
    fn lark_heuristic_is_vllms() {
        assert!(grammar_is_likely_lark("start: \"a\""));
        assert!(grammar_is_likely_lark("# root ::= x\nstart: \"a\""));
        assert!(grammar_is_likely_lark("start: \"a\" // x ::= y"));
        assert!(!grammar_is_likely_lark(""));
        assert!(!grammar_is_likely_lark("root ::= \"http://\""));
        assert!(!grammar_is_likely_lark("\n  root ::= \"a\"  \n"));
    }

    /// Hostile texts: an answer, never a panic.
    #[test]
    fn any_text_is_answered_without_panic() {
        for pattern in crate::serving::hostile_patterns() {
            let _ = from_ebnf_compiles(&pattern);
            let _ = from_ebnf_compiles(&format!("root ::= {pattern}"));
            let _ = from_ebnf_compiles(&format!("root ::= \"a\" (= {pattern}"));
            let _ = from_ebnf_compiles(&format!("root ::= TagDispatch({pattern}"));
            let _ = from_ebnf_compiles(&format!("root[{pattern}] ::= Token({pattern}"));
        }
        let wide = format!("root ::= {}", "\"a\"* ".repeat(20_000));
        assert_eq!(from_ebnf_compiles(&wide), Some(true));
        let long = format!(
            "root ::= \"{}\" [{}]",
            "é".repeat(60_000),
            "\\x41".repeat(10_000)
        );
        assert_eq!(from_ebnf_compiles(&long), Some(true));
        let tuples = format!("root ::= Token({}1{})", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(from_ebnf_compiles(&tuples), None);
    }
}
