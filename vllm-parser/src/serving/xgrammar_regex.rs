//! Whether xgrammar 0.2.8's `Grammar.from_regex(pattern)` succeeds or raises
//! `RuntimeError`, the question vLLM 0.33.0 asks before it uses a regex:
//! `_regex_compiles` for an `xml-inline` string parameter's `pattern`
//! (`vllm/parser/response_template_grammar.py`) and
//! `validate_xgrammar_grammar` for a request's `structured_outputs.regex`
//! (`vllm/v1/structured_output/backend_xgrammar.py`, through `beam`'s
//! `_xgrammar_supports`).
//!
//! xgrammar compiles a regex in two steps, both reproduced here: its regex
//! converter (`cpp/regex_converter.cc`) rewrites the pattern into EBNF text,
//! one codepoint at a time, refusing lookaround, back references, `\p{…}`,
//! `\b`, flag groups, `(?P<…>` and named groups whose names are not ASCII
//! letters, repetition counts other than `{n}` / `{n,}` / `{n,m}`, two
//! quantifiers in a row (`a**`, `a++`, `a{2}??`; one lazy `?` is dropped),
//! empty or unclosed classes and unbalanced parentheses; then its EBNF parser
//! (`cpp/grammar_parser.cc`, [`super::xgrammar_ebnf`]) reads that text and
//! refuses what the converter let through: a quantifier with nothing to
//! repeat (`*a`, `(+a)`, `a|?`), `{m,n}` with `m > n`, a class range whose
//! ends are out of order once the converter's text is read back (`[z-a]`,
//! `[\w-+]`, and `[\x01f-\x05]`, whose `\x01f` the parser reads as one
//! escape), a raw line break in a class.
//! Everything else compiles, with xgrammar's own meaning (`\Z` matches `Z`,
//! `^` / `$` anywhere are ignored, `[[:alpha:]]` is a class and a `]`): this
//! module answers only whether it compiles.
//!
//! Rules confirmed against the installed xgrammar 0.2.8 (the stored C++
//! sources are of other versions), and differentially tested by
//! `tests/xgrammar_regexes.rs` on `scripts/gen_xgrammar_regexes.py`'s corpus.
//! Where xgrammar's behaviour depends on what this module does not follow —
//! a NUL (xgrammar reads the pattern as a C string), `isdigit` / `isalpha`
//! of a non-ASCII codepoint (undefined in C), escapes of codepoints past
//! U+10FFFF, repetition counts of ten digits or more (wrapped to 32 bits),
//! patterns longer than [`MAX_PATTERN_BYTES`] or nested deeper than
//! [`MAX_NESTING`] — the answer is `None`: undecided.

/// The longest pattern (in UTF-8 bytes) this module decides on.
pub const MAX_PATTERN_BYTES: usize = 8192;
/// The deepest parenthesis nesting this module decides on (xgrammar's own
/// EBNF parser refuses past 1000).
pub const MAX_NESTING: usize = 200;

use super::xgrammar_ebnf::{self, Extra, Step, Stop};

/// Whether `xgrammar.Grammar.from_regex(pattern)` (0.2.8) succeeds:
/// `Some(true)` it compiles, `Some(false)` it raises `RuntimeError`, `None`
/// undecided (see the module docs).
pub fn from_regex_compiles(pattern: &str) -> Option<bool> {
    if pattern.len() > MAX_PATTERN_BYTES || pattern.contains('\0') {
        return None;
    }
    let mut converter = Converter {
        cps: pattern.chars().map(u32::from).chain([0]).collect(),
        cur: 0,
        end: pattern.chars().count(),
        out: String::new(),
        depth: 0,
    };
    let ebnf = match converter.convert() {
        Ok(()) => converter.out,
        Err(Stop::Refused) => return Some(false),
        Err(Stop::Undecided) => return None,
    };
    xgrammar_ebnf::from_ebnf_compiles(&format!("root ::= {ebnf}"))
}

/// `EscapeString(codepoint)` of xgrammar's `support/encoding.h`.
fn escape_string(cp: u32) -> String {
    match cp {
        0x27 => "\\'".into(),
        0x22 => "\\\"".into(),
        0x3F => "\\?".into(),
        0x5C => "\\\\".into(),
        0x07 => "\\a".into(),
        0x08 => "\\b".into(),
        0x0C => "\\f".into(),
        0x0A => "\\n".into(),
        0x0D => "\\r".into(),
        0x09 => "\\t".into(),
        0x0B => "\\v".into(),
        0x00 => "\\0".into(),
        0x1B => "\\e".into(),
        0x20..=0x7E => char::from_u32(cp).map(String::from).unwrap_or_default(),
        0x01..=0x1F | 0x7F..=0xFF => format!("\\x{cp:02x}"),
        0x100..=0xFFFF => format!("\\u{cp:04x}"),
        _ => format!("\\U{cp:08x}"),
    }
}

/// `HexCharToInt` of a codepoint the C++ narrows to `char` (its low byte).
fn hex_digit(cp: u32) -> Option<u32> {
    char::from((cp & 0xFF) as u8).to_digit(16)
}

fn is(cp: u32, c: char) -> bool {
    cp == u32::from(c)
}

/// `isdigit` / `isalpha` of a codepoint: undefined past ASCII.
fn ascii_test(cp: u32, test: fn(&u8) -> bool) -> Step<bool> {
    u8::try_from(cp)
        .ok()
        .filter(u8::is_ascii)
        .map(|b| test(&b))
        .ok_or(Stop::Undecided)
}

/// A codepoint the C++ goes on to print and read back: past U+10FFFF its
/// 32-bit arithmetic is not followed here.
fn checked(cp: u32) -> Step<u32> {
    if cp > 0x10FFFF {
        Err(Stop::Undecided)
    } else {
        Ok(cp)
    }
}

/// `ParseNextEscaped(data, additional)` on the pattern's codepoints (`data`
/// starts at the backslash, NUL-terminated): the codepoint and length, or
/// `None` for `kInvalidEscape`. `with_dash`: the map holds `-` too.
fn parse_next_escaped(data: &[u32], with_dash: bool) -> Step<Option<(u32, usize)>> {
    let extra = if with_dash {
        Extra::RegexAndDash
    } else {
        Extra::Regex
    };
    let at = |i: usize| data.get(i).copied().unwrap_or(0);
    match xgrammar_ebnf::parse_next_escaped(at, extra) {
        None => Ok(None),
        // Wrapped 32-bit arithmetic or a codepoint past U+10FFFF: not followed.
        Some((cp, exact, len)) => match u32::try_from(cp) {
            Ok(cp) if exact => Ok(Some((checked(cp)?, len))),
            _ => Err(Stop::Undecided),
        },
    }
}

/// `RegexConverter` (0.2.8): the EBNF text of a pattern.
struct Converter {
    /// The pattern's codepoints and a terminating 0.
    cps: Vec<u32>,
    cur: usize,
    end: usize,
    out: String,
    depth: usize,
}

impl Converter {
    fn at(&self, i: usize) -> u32 {
        self.cps.get(i).copied().unwrap_or(0)
    }

    fn now(&self) -> u32 {
        self.at(self.cur)
    }

    fn add(&mut self, segment: &str) {
        if !self.out.is_empty() {
            self.out.push(' ');
        }
        self.out.push_str(segment);
    }

    fn convert(&mut self) -> Step<()> {
        let mut is_empty = true;
        while self.cur != self.end {
            let c = char::from_u32(self.now()).unwrap_or('\0');
            if c != '^' && c != '$' {
                is_empty = false;
            }
            match c {
                '^' | '$' => self.cur += 1,
                '[' => {
                    let class = self.class()?;
                    self.add(&class);
                }
                '(' => {
                    self.depth += 1;
                    if self.depth > MAX_NESTING {
                        return Err(Stop::Undecided);
                    }
                    self.cur += 1;
                    self.add("(");
                    if self.cur != self.end && is(self.now(), '?') {
                        self.cur += 1;
                        self.group_modifier()?;
                    }
                }
                ')' => {
                    if self.depth == 0 {
                        return Err(Stop::Refused);
                    }
                    if self.out.ends_with('|') {
                        self.add("\"\"");
                    }
                    self.depth -= 1;
                    self.add(")");
                    self.cur += 1;
                }
                '*' | '+' | '?' => {
                    self.out.push(c);
                    self.cur += 1;
                    self.after_quantifier()?;
                }
                '{' => {
                    let range = self.repetition_range()?;
                    self.out.push_str(&range);
                    self.after_quantifier()?;
                }
                '|' => {
                    if self.out.is_empty() || self.out.ends_with('|') || self.out.ends_with('(') {
                        self.add("\"\"");
                    }
                    self.add("|");
                    self.cur += 1;
                }
                '\\' => {
                    let escape = self.escape()?;
                    self.add(&escape);
                }
                '.' => {
                    self.add("[\\u0000-\\U0010FFFF]");
                    self.cur += 1;
                }
                _ => {
                    let literal = format!("\"{}\"", escape_string(self.now()));
                    self.add(&literal);
                    self.cur += 1;
                }
            }
        }
        if self.depth != 0 {
            return Err(Stop::Refused);
        }
        if self.out.ends_with('|') || is_empty {
            self.add("\"\"");
        }
        Ok(())
    }

    /// One lazy `?` is dropped; another quantifier is refused.
    fn after_quantifier(&mut self) -> Step<()> {
        if self.cur != self.end && is(self.now(), '?') {
            self.cur += 1;
        }
        if self.cur != self.end && "{*+?".chars().any(|q| is(self.now(), q)) {
            return Err(Stop::Refused);
        }
        Ok(())
    }

    fn group_modifier(&mut self) -> Step<()> {
        if self.cur == self.end {
            return Err(Stop::Refused);
        }
        let c = self.now();
        if is(c, ':') {
            self.cur += 1;
            return Ok(());
        }
        if !is(c, '<') {
            // Lookahead, flags, `P`, comments and the like.
            return Err(Stop::Refused);
        }
        let next = self.at(self.cur + 1);
        if self.cur + 1 != self.end && (is(next, '=') || is(next, '!')) {
            return Err(Stop::Refused);
        }
        self.cur += 1;
        while self.cur != self.end && ascii_test(self.now(), u8::is_ascii_alphabetic)? {
            self.cur += 1;
        }
        if self.cur == self.end || !is(self.now(), '>') {
            return Err(Stop::Refused);
        }
        self.cur += 1;
        Ok(())
    }

    /// `{n}`, `{n,}` or `{n,m}` as the converter copies it.
    fn repetition_range(&mut self) -> Step<String> {
        let mut result = String::from("{");
        self.cur += 1;
        let digits = |this: &mut Self, result: &mut String| -> Step<usize> {
            let mut count = 0;
            while ascii_test(this.now(), u8::is_ascii_digit)? {
                result.push(char::from_u32(this.now()).unwrap_or('0'));
                this.cur += 1;
                count += 1;
            }
            // xgrammar's integers wrap past 32 bits.
            if count > 9 {
                return Err(Stop::Undecided);
            }
            Ok(count)
        };
        if digits(self, &mut result)? == 0 {
            return Err(Stop::Refused);
        }
        let c = self.now();
        if !is(c, ',') && !is(c, '}') {
            return Err(Stop::Refused);
        }
        self.cur += 1;
        if is(c, '}') {
            result.push('}');
            return Ok(result);
        }
        result.push(',');
        digits(self, &mut result)?;
        if !is(self.now(), '}') {
            return Err(Stop::Refused);
        }
        result.push('}');
        self.cur += 1;
        Ok(result)
    }

    fn class(&mut self) -> Step<String> {
        let mut class = String::from("[");
        self.cur += 1;
        if is(self.now(), ']') {
            return Err(Stop::Refused);
        }
        while !is(self.now(), ']') && self.cur != self.end {
            if is(self.now(), '\\') {
                let escape = self.escape_in_class()?;
                class.push_str(&escape);
            } else {
                class.extend(char::from_u32(self.now()));
                self.cur += 1;
            }
        }
        if self.cur == self.end {
            return Err(Stop::Refused);
        }
        class.push(']');
        self.cur += 1;
        Ok(class)
    }

    fn escape_in_class(&mut self) -> Step<String> {
        if self.end.saturating_sub(self.cur) < 2 {
            return Err(Stop::Refused);
        }
        let fixed = match char::from_u32(self.at(self.cur + 1)) {
            Some('d') => Some("0-9"),
            Some('D') => Some("\\x00-\\x2F\\x3A-\\U0010FFFF"),
            Some('w') => Some("a-zA-Z0-9_"),
            Some('W') => Some("\\x00-\\x2F\\x3A-\\x40\\x5B-\\x5E\\x60\\x7B-\\U0010FFFF"),
            Some('s') => Some("\\f\\n\\r\\t\\v\\u0020\\u00a0"),
            Some('S') => Some("\\x00-\\x08\\x0E-\\x1F\\x21-\\x9F\\xA1-\\U0010FFFF"),
            _ => None,
        };
        if let Some(fixed) = fixed {
            self.cur += 2;
            return Ok(fixed.into());
        }
        let res = self.char_escape(true)?;
        Ok(if res == "]" || res == "-" {
            format!("\\{res}")
        } else {
            res
        })
    }

    fn escape(&mut self) -> Step<String> {
        if self.end.saturating_sub(self.cur) < 2 {
            return Err(Stop::Refused);
        }
        let fixed = match char::from_u32(self.at(self.cur + 1)) {
            Some('d') => "[0-9]",
            Some('D') => "[^0-9]",
            Some('w') => "[a-zA-Z0-9_]",
            Some('W') => "[^a-zA-Z0-9_]",
            Some('s') => "[\\f\\n\\r\\t\\v\\u0020\\u00a0]",
            Some('S') => "[^\\f\\n\\r\\t\\v\\u0020\\u00a0]",
            Some('1'..='9' | 'k' | 'p' | 'P' | 'b' | 'B') => return Err(Stop::Refused),
            _ => return Ok(format!("\"{}\"", self.char_escape(false)?)),
        };
        self.cur += 2;
        Ok(fixed.into())
    }

    /// `HandleCharEscape`: one escaped codepoint, as EBNF text.
    fn char_escape(&mut self, with_dash: bool) -> Step<String> {
        let rest = self.end.saturating_sub(self.cur);
        let next = self.at(self.cur + 1);
        if rest < 2
            || (is(next, 'u') && rest < 5)
            || (is(next, 'x') && rest < 4)
            || (is(next, 'c') && rest < 3)
        {
            return Err(Stop::Refused);
        }
        let data = &self.cps[self.cur..];
        if let Some((cp, len)) = parse_next_escaped(data, with_dash)? {
            self.cur += len;
            return Ok(escape_string(cp));
        }
        if is(next, 'u') && is(self.at(self.cur + 2), '{') {
            self.cur += 3;
            let mut len = 0;
            let mut value: u32 = 0;
            while len <= 6 {
                let Some(digit) = hex_digit(self.at(self.cur + len)) else {
                    break;
                };
                value = value * 16 + digit;
                len += 1;
            }
            if len == 0 || len > 6 || !is(self.at(self.cur + len), '}') {
                return Err(Stop::Refused);
            }
            self.cur += len + 1;
            return Ok(escape_string(checked(value)?));
        }
        if is(next, 'c') {
            self.cur += 2;
            if !ascii_test(self.now(), u8::is_ascii_alphabetic)? {
                return Err(Stop::Refused);
            }
            self.cur += 1;
            return Ok(escape_string(self.at(self.cur - 1) % 32));
        }
        // Not recognised: the character itself (a warning).
        self.cur += 2;
        Ok(escape_string(self.at(self.cur - 1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks_of_xgrammar_0_2_8() {
        for pattern in [
            "(?=a)b",
            "(?!a)",
            "(?<=a)b",
            "\\1",
            "\\p{L}",
            "\\b",
            "(?P<x>a)",
            "(?i)a",
            "(?#c)",
            "a++",
            "a{,3}",
            "a{2,1}",
            "[z-a]",
            "[\\w-+]",
            "*",
            "(*)",
            "a|*",
            "[]a]",
            "[",
            ")",
            "(",
            "a{1",
            "\\c1",
            "\\u{}",
            "[\\x01f-\\x05]",
            "(?<n1>a)",
        ] {
            assert_eq!(from_regex_compiles(pattern), Some(false), "{pattern:?}");
        }
        for pattern in [
            "(?:a)",
            "^a$",
            "a*?",
            "[[:alpha:]]",
            "\\u00e9",
            "\\x41",
            "\\Z",
            "\\A",
            "a|",
            "|a",
            "()",
            "",
            "[\\w-z]",
            "a{3}",
            "a{3,}",
            "a{2,5}?",
            "[\\d-z]",
            "(?<name>a)",
            "\\ca",
            "\\u{41}",
            "[^]",
            "a||b",
            "(|)",
            "é+",
            "[\\x01f-a]",
            "a^*",
        ] {
            assert_eq!(from_regex_compiles(pattern), Some(true), "{pattern:?}");
        }
        for pattern in ["a\0", "a{1234567890}", "\\u{110000}", "\\cé"] {
            assert_eq!(from_regex_compiles(pattern), None, "{pattern:?}");
        }
        let deep = format!("{}a{}", "(".repeat(500), ")".repeat(500));
        assert_eq!(from_regex_compiles(&deep), None);
    }

    /// Hostile patterns: an answer, never a panic.
    #[test]
    fn any_pattern_is_answered_without_panic() {
        for pattern in crate::serving::hostile_patterns() {
            let _ = from_regex_compiles(&pattern);
        }
    }
}
