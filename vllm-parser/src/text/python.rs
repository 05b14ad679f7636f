//! Python `str` semantics the reference parsers rely on.

/// Python's `str.isspace()` for one character: Unicode `White_Space` plus the
/// separators U+001C..U+001F, which Python counts as whitespace and Rust does not.
pub fn py_is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `s.strip() == ""`.
pub fn py_is_blank(s: &str) -> bool {
    s.chars().all(py_is_space)
}

/// Python's `s.strip()`.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_is_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_whitespace_includes_information_separators() {
        assert!(py_is_blank(" \t\n\u{1f}\u{3000}"));
        assert!(!py_is_blank(" x "));
        assert_eq!(py_strip("\u{1c} a b\u{a0}"), "a b");
    }
}
