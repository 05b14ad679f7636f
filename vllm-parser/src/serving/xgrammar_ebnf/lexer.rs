//! xgrammar's `EBNFLexer` (`cpp/grammar_parser.cc`) and its escape reader
//! (`ParseNextEscaped`, `cpp/support/encoding.h`, shared with the regex
//! converter): the whole text becomes tokens before anything is parsed, so
//! a lexer error refuses the grammar wherever it is. Character classes are
//! checked here whole (their ranges, their `\d`-style escapes, which the
//! parser refuses), as the parser reads them without context.

use super::{Step, Stop};

/// A token of xgrammar's lexer.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    LParen,
    /// `(=`, a lookahead assertion's opening.
    Lookahead,
    RParen,
    LBrace,
    RBrace,
    Pipe,
    Comma,
    Star,
    Plus,
    Question,
    Equal,
    /// `::=`.
    Assign,
    /// A string literal's value (xgrammar's UTF-8 bytes of its codepoints).
    Str(Vec<u8>),
    /// A character class, already checked.
    Class,
    Ident(String),
    /// An identifier just before `::=`.
    RuleName(String),
    Bool,
    Int(i64),
    Eof,
}

/// A token and the line it starts on.
#[derive(Debug, Clone)]
pub(super) struct Token {
    pub tok: Tok,
    pub line: u32,
}

/// `kMaxIntegerInGrammar`.
const MAX_INTEGER: i64 = 1_000_000_000_000_000;

/// The codepoint values xgrammar uses as error codes (`kInvalidUTF8`,
/// `kInvalidEscape`): an escape that lands on one is refused.
const ERROR_CODES: [i32; 2] = [-10, -11];

/// The escapes `ParseNextEscaped` is given besides C's (its
/// `additional_escape_map`).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Extra {
    None,
    /// `^ $ . * + ? \ ( ) [ ] { } | /`: the regex converter's outside classes.
    Regex,
    /// Those and `-`: inside a character class.
    RegexAndDash,
}

/// `ParseNextEscaped` on text whose `at(i)` is the `i`-th unit after the
/// backslash's position (`at(0)` is the backslash; a unit is a byte or a
/// codepoint, read by its low byte as the C++ does): the codepoint, as the
/// C++'s wrapping 32-bit arithmetic leaves it, whether that arithmetic never
/// wrapped, and the length; `None` for an invalid escape.
pub(crate) fn parse_next_escaped(
    at: impl Fn(usize) -> u32,
    extra: Extra,
) -> Option<(i32, bool, usize)> {
    let low = at(1) & 0xFF;
    if low > 128 {
        return None;
    }
    let key = char::from(low as u8);
    if (extra != Extra::None && "^$.*+?\\()[]{}|/".contains(key))
        || (extra == Extra::RegexAndDash && key == '-')
    {
        return Some((low as i32, true, 2));
    }
    let c_escape = match key {
        // 0.2.8 reads `\/` as `/` too.
        '\'' | '"' | '?' | '\\' | '/' => Some(low),
        'a' => Some(0x07),
        'b' => Some(0x08),
        'f' => Some(0x0C),
        'n' => Some(0x0A),
        'r' => Some(0x0D),
        't' => Some(0x09),
        'v' => Some(0x0B),
        '0' => Some(0),
        'e' => Some(0x1B),
        _ => None,
    };
    if let Some(cp) = c_escape {
        return Some((cp as i32, true, 2));
    }
    let hex = |i: usize| char::from((at(i) & 0xFF) as u8).to_digit(16);
    let fixed = match key {
        'x' => None,
        'u' => Some(4),
        'U' => Some(8),
        _ => return None,
    };
    let mut value: i32 = 0;
    let mut exact = true;
    let mut len = 0;
    while fixed.is_none_or(|n| len < n) {
        let Some(digit) = hex(2 + len) else {
            if fixed.is_some() || len == 0 {
                return None;
            }
            break;
        };
        exact &= value <= (i32::MAX - 15) / 16;
        value = value.wrapping_mul(16).wrapping_add(digit as i32);
        len += 1;
    }
    Some((value, exact, len + 2))
}

/// `CharToUTF8` of a codepoint, whatever its value, as the C++ writes it.
fn push_utf8(out: &mut Vec<u8>, cp: i32) {
    // The C++ truncates each unit to a byte.
    let unit = |value: i32| (value & 0xFF) as u8;
    if cp <= 0x7F {
        out.push(unit(cp));
    } else if cp <= 0x7FF {
        out.extend([unit(0xC0 | ((cp >> 6) & 0x1F)), unit(0x80 | (cp & 0x3F))]);
    } else if cp <= 0xFFFF {
        out.extend([
            unit(0xE0 | ((cp >> 12) & 0x0F)),
            unit(0x80 | ((cp >> 6) & 0x3F)),
            unit(0x80 | (cp & 0x3F)),
        ]);
    } else {
        out.extend([
            unit(0xF0 | ((cp >> 18) & 0x07)),
            unit(0x80 | ((cp >> 12) & 0x3F)),
            unit(0x80 | ((cp >> 6) & 0x3F)),
            unit(0x80 | (cp & 0x3F)),
        ]);
    }
}

/// `IsNameChar`.
fn is_name_char(c: u8, first: bool) -> bool {
    c == b'_' || c == b'-' || c == b'.' || c.is_ascii_alphabetic() || (!first && c.is_ascii_digit())
}

struct Lexer<'a> {
    src: &'a str,
    text: &'a [u8],
    at: usize,
    line: u32,
}

/// The text's tokens, ending with [`Tok::Eof`], rule names marked
/// (`ConvertIdentifierToRuleName`).
pub(super) fn tokenize(src: &str) -> Step<Vec<Token>> {
    let mut lexer = Lexer {
        src,
        text: src.as_bytes(),
        at: 0,
        line: 1,
    };
    let mut tokens = Vec::new();
    loop {
        lexer.skip_space();
        let line = lexer.line;
        let tok = lexer.next()?;
        let end = tok == Tok::Eof;
        tokens.push(Token { tok, line });
        if end {
            break;
        }
    }
    for i in 0..tokens.len() {
        if tokens[i].tok != Tok::Assign {
            continue;
        }
        // The rule name: an identifier, first on its line.
        let name = match i.checked_sub(1).map(|j| &tokens[j].tok) {
            Some(Tok::Ident(name)) => name.clone(),
            _ => return Err(Stop::Refused),
        };
        if i >= 2 && tokens[i - 2].line == tokens[i - 1].line {
            return Err(Stop::Refused);
        }
        tokens[i - 1].tok = Tok::RuleName(name);
    }
    Ok(tokens)
}

impl Lexer<'_> {
    fn peek(&self, delta: usize) -> u8 {
        self.text.get(self.at + delta).copied().unwrap_or(0)
    }

    fn consume(&mut self, count: usize) {
        for _ in 0..count {
            let c = self.peek(0);
            if c == b'\n' || (c == b'\r' && self.peek(1) != b'\n') {
                self.line += 1;
            }
            self.at += 1;
        }
    }

    /// `ConsumeSpace`: blanks, line breaks and `#` comments.
    fn skip_space(&mut self) {
        while b" \t#\n\r".contains(&self.peek(0)) && self.peek(0) != 0 {
            let c = self.peek(0);
            self.consume(1);
            if c == b'#' {
                while !b"\0\n\r".contains(&self.peek(0)) {
                    self.consume(1);
                }
                if self.peek(0) == 0 {
                    return;
                }
                let c = self.peek(0);
                self.consume(1);
                if c == b'\r' && self.peek(0) == b'\n' {
                    self.consume(1);
                }
            }
        }
    }

    fn next(&mut self) -> Step<Tok> {
        let c = self.peek(0);
        let single = match c {
            0 => return Ok(Tok::Eof),
            b'(' if self.peek(1) == b'=' => {
                self.consume(2);
                return Ok(Tok::Lookahead);
            }
            b'(' => Tok::LParen,
            b')' => Tok::RParen,
            b'{' => Tok::LBrace,
            b'}' => Tok::RBrace,
            b'|' => Tok::Pipe,
            b',' => Tok::Comma,
            b'*' => Tok::Star,
            b'+' => Tok::Plus,
            b'?' => Tok::Question,
            b'=' => Tok::Equal,
            b':' if self.peek(1) == b':' && self.peek(2) == b'=' => {
                self.consume(3);
                return Ok(Tok::Assign);
            }
            b'"' => return self.string(),
            b'[' => return self.class().map(|()| Tok::Class),
            _ if is_name_char(c, true) => return self.identifier(),
            // A sign is lexed as `+` or as a name above: integers are unsigned.
            _ if c.is_ascii_digit() => return self.integer(),
            _ => return Err(Stop::Refused),
        };
        self.consume(1);
        Ok(single)
    }

    /// The escaped or UTF-8 codepoint at the cursor, consumed.
    fn codepoint(&mut self, extra: Extra) -> Step<i32> {
        let (cp, len) = if self.peek(0) == b'\\' {
            let (cp, _, len) =
                parse_next_escaped(|i| u32::from(self.peek(i)), extra).ok_or(Stop::Refused)?;
            (cp, len)
        } else {
            // The cursor is on a character boundary: it only ever moves past
            // whole characters and ASCII escapes.
            let c = self.src.get(self.at..).and_then(|rest| rest.chars().next());
            let c = c.ok_or(Stop::Refused)?;
            (u32::from(c) as i32, c.len_utf8())
        };
        if ERROR_CODES.contains(&cp) {
            return Err(Stop::Refused);
        }
        self.consume(len);
        Ok(cp)
    }

    fn string(&mut self) -> Step<Tok> {
        self.consume(1);
        let mut value = Vec::new();
        while !b"\0\"\n\r".contains(&self.peek(0)) {
            let cp = self.codepoint(Extra::None)?;
            push_utf8(&mut value, cp);
        }
        if self.peek(0) != b'"' {
            return Err(Stop::Refused);
        }
        self.consume(1);
        Ok(Tok::Str(value))
    }

    /// A character class (`ParseCharClassToken`, then `ParseCharClass`).
    fn class(&mut self) -> Step<()> {
        self.consume(1);
        if self.peek(0) == b'^' {
            self.consume(1);
        }
        // `None`: a dash.
        let mut items: Vec<Option<i32>> = Vec::new();
        while !b"\0]".contains(&self.peek(0)) {
            match self.peek(0) {
                b'\r' | b'\n' => return Err(Stop::Refused),
                b'-' => {
                    items.push(None);
                    self.consume(1);
                }
                // "Character class escape is not supported yet in EBNF".
                b'\\' if b"dDsSwW".contains(&self.peek(1)) => return Err(Stop::Refused),
                _ => items.push(Some(self.codepoint(Extra::RegexAndDash)?)),
            }
        }
        if self.peek(0) == 0 {
            return Err(Stop::Refused);
        }
        self.consume(1);
        let value = |item: Option<i32>| item.unwrap_or(i32::from(b'-'));
        let mut i = 0;
        while i < items.len() {
            let low = value(items[i]);
            i += 1;
            if i + 1 < items.len() && items[i].is_none() {
                if low > value(items[i + 1]) {
                    return Err(Stop::Refused);
                }
                i += 2;
            }
        }
        Ok(())
    }

    fn integer(&mut self) -> Step<Tok> {
        let mut value: i64 = 0;
        while self.peek(0).is_ascii_digit() {
            value = value * 10 + i64::from(self.peek(0) - b'0');
            self.consume(1);
            if value > MAX_INTEGER {
                return Err(Stop::Refused);
            }
        }
        Ok(Tok::Int(value))
    }

    /// `ParseIdentifierOrBooleanToken`: a name, `true` / `false`, or a rule
    /// name with its attribute block (`name[max_tokens=…, capture…] ::=`).
    fn identifier(&mut self) -> Step<Tok> {
        let start = self.at;
        while is_name_char(self.peek(0), self.at == start) {
            self.consume(1);
        }
        let name = String::from_utf8_lossy(&self.text[start..self.at]).into_owned();
        if name == "true" || name == "false" {
            return Ok(Tok::Bool);
        }
        if self.peek(0) == b'['
            && let Some(len) = self.attributes()?
        {
            self.consume(len);
        }
        Ok(Tok::Ident(name))
    }

    /// The length of the attribute block at the cursor's `[` when one is
    /// there, followed by `::=`; otherwise the `[` opens a character class.
    fn attributes(&self) -> Step<Option<usize>> {
        let peek = |d: usize| self.peek(d);
        let skip = |d: &mut usize| {
            while matches!(peek(*d), b' ' | b'\t') {
                *d += 1;
            }
        };
        let keyword = |d: &mut usize, word: &[u8]| {
            let found = word.iter().enumerate().all(|(i, &c)| peek(*d + i) == c);
            if found {
                *d += word.len();
            }
            found
        };
        let mut d = 1;
        let (mut max_tokens, mut capture, mut capture_empty) = (false, false, false);
        loop {
            skip(&mut d);
            if !max_tokens && keyword(&mut d, b"max_tokens") {
                max_tokens = true;
                skip(&mut d);
                if peek(d) != b'=' {
                    return Ok(None);
                }
                d += 1;
                skip(&mut d);
                let digits = (0..10).take_while(|i| peek(d + i).is_ascii_digit()).count();
                d += digits;
                if digits == 0 || peek(d).is_ascii_digit() {
                    return Ok(None);
                }
            } else if !capture && keyword(&mut d, b"capture") {
                capture = true;
                skip(&mut d);
                // Without a value, the capture is named after the rule.
                if peek(d) == b'=' {
                    d += 1;
                    skip(&mut d);
                    if peek(d) != b'"' {
                        return Ok(None);
                    }
                    d += 1;
                    let start = d;
                    while peek(d) != b'"' {
                        if b"\0\n\r\\".contains(&peek(d)) {
                            return Ok(None);
                        }
                        d += 1;
                    }
                    capture_empty = d == start;
                    d += 1;
                }
            } else {
                return Ok(None);
            }
            skip(&mut d);
            if peek(d) != b',' {
                break;
            }
            d += 1;
        }
        skip(&mut d);
        if peek(d) != b']' {
            return Ok(None);
        }
        d += 1;
        let mut after = d;
        skip(&mut after);
        if [peek(after), peek(after + 1), peek(after + 2)] != *b"::=" {
            return Ok(None);
        }
        // "The capture name must not be empty".
        if capture_empty {
            return Err(Stop::Refused);
        }
        Ok(Some(d))
    }
}
