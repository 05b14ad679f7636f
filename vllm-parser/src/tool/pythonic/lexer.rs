//! Python 3.11's tokenizer, for the part of the language tool calls are written in.
//!
//! What it does not know (e.g. `\N{…}` escapes, tabs-vs-spaces rules) it refuses,
//! so the output is treated as text, never mis-read as a call.

use crate::json::PyJson;

/// A literal constant, as `ast.Constant` holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Constant {
    /// A JSON-representable value: `None`, `bool`, `int`, `float`, `str`.
    Json(PyJson),
    /// `bytes`, complex numbers and `...`: valid Python without a JSON form.
    Opaque,
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    /// An identifier or keyword.
    Name(String),
    /// A number.
    Number(Constant),
    /// One string literal (adjacent ones are joined by the parser).
    Str(StrToken),
    /// An operator or delimiter.
    Op(&'static str),
    /// The end of a logical line.
    Newline,
}

/// One string literal.
#[derive(Debug, Clone, PartialEq)]
pub struct StrToken {
    /// The value, with escapes applied (`None` for an f-string with placeholders).
    pub value: Option<String>,
    /// `b'…'`.
    pub bytes: bool,
    /// `f'…'` (an `ast.JoinedStr`).
    pub fstring: bool,
}

/// Python's tokenizer refuses deeper bracket nesting (`MAXLEVEL`).
const MAX_NESTING: usize = 200;

/// Python refuses integer literals with more digits than this.
const MAX_INT_DIGITS: usize = 4300;

const OPERATORS: &[&str] = &[
    "**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", "<<", ">>", "<=", ">=", "==", "!=",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "+", "-", "*", "/", "%", "@", "&", "|",
    "^", "~", "<", ">", "(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "=",
];

/// The tokens of `source`, or `None` where Python's tokenizer raises.
pub fn tokenize(source: &str) -> Option<Vec<Token>> {
    if source.contains('\0') {
        return None;
    }
    let mut lexer = Lexer {
        src: source,
        pos: 0,
        depth: 0,
        tokens: Vec::new(),
    };
    lexer.run()?;
    Some(lexer.tokens)
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
    tokens: Vec<Token>,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(offset)
    }

    fn run(&mut self) -> Option<()> {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\x0c' => self.pos += 1,
                '#' => self.skip_comment(),
                '\\' => {
                    self.pos += 1;
                    if !self.newline() {
                        return None;
                    }
                }
                '\n' | '\r' => {
                    self.newline();
                    if self.depth == 0 {
                        if !matches!(self.tokens.last(), None | Some(Token::Newline)) {
                            self.tokens.push(Token::Newline);
                        }
                        self.indentation()?;
                    }
                }
                '0'..='9' => self.number()?,
                '.' if self.peek_at(1).is_some_and(|d| d.is_ascii_digit()) => self.number()?,
                c if c == '_' || c.is_alphabetic() => self.name_or_string()?,
                '\'' | '"' => self.string("")?,
                _ => self.operator()?,
            }
        }
        (self.depth == 0).then_some(())
    }

    fn skip_comment(&mut self) {
        let rest = &self.src[self.pos..];
        self.pos += rest.find(['\n', '\r']).unwrap_or(rest.len());
    }

    /// Consume one line break (`\n`, `\r\n` or `\r`); whether there was one.
    fn newline(&mut self) -> bool {
        let rest = &self.src[self.pos..];
        let len = if rest.starts_with("\r\n") {
            2
        } else if rest.starts_with(['\n', '\r']) {
            1
        } else {
            0
        };
        self.pos += len;
        len > 0
    }

    /// At the start of a line outside brackets: blank and comment lines are
    /// skipped; any other indented line is an `IndentationError`.
    fn indentation(&mut self) -> Option<()> {
        let rest = &self.src[self.pos..];
        let indent = rest.len() - rest.trim_start_matches([' ', '\t', '\x0c']).len();
        match rest[indent..].chars().next() {
            None | Some('#' | '\n' | '\r') => Some(()),
            Some(_) => (indent == 0).then_some(()),
        }
    }

    fn operator(&mut self) -> Option<()> {
        let rest = &self.src[self.pos..];
        let op = OPERATORS.iter().find(|op| rest.starts_with(**op))?;
        match *op {
            "(" | "[" | "{" => {
                // Python's tokenizer: "too many nested parentheses".
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return None;
                }
            }
            ")" | "]" | "}" => self.depth = self.depth.checked_sub(1)?,
            _ => {}
        }
        self.pos += op.len();
        self.tokens.push(Token::Op(op));
        Some(())
    }

    fn name_or_string(&mut self) -> Option<()> {
        let rest = &self.src[self.pos..];
        let len = rest
            .find(|c: char| !(c == '_' || c.is_alphanumeric()))
            .unwrap_or(rest.len());
        let name = &rest[..len];
        if rest[len..].starts_with(['\'', '"']) {
            let prefix = name.to_ascii_lowercase();
            if ["r", "u", "b", "br", "rb", "f", "fr", "rf"].contains(&prefix.as_str()) {
                self.pos += len;
                return self.string(&prefix);
            }
        }
        self.pos += len;
        self.tokens.push(Token::Name(name.to_owned()));
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        let rest = &self.src[self.pos..];
        let bytes = rest.as_bytes();
        let radix = match (bytes.first(), bytes.get(1).map(u8::to_ascii_lowercase)) {
            (Some(b'0'), Some(b'x')) => 16,
            (Some(b'0'), Some(b'o')) => 8,
            (Some(b'0'), Some(b'b')) => 2,
            _ => 10,
        };
        let (constant, len) = if radix == 10 {
            decimal(rest)?
        } else {
            let digits_len = rest[2..]
                .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
                .map_or(rest.len(), |i| i + 2);
            let digits = underscored_digits(&rest[2..digits_len], radix)?;
            (
                Constant::Json(PyJson::Int(to_decimal(&digits, radix)?)),
                digits_len,
            )
        };
        if rest[len..].starts_with(|c: char| c == '_' || c.is_alphanumeric()) {
            return None;
        }
        self.pos += len;
        self.tokens.push(Token::Number(constant));
        Some(())
    }

    fn string(&mut self, prefix: &str) -> Option<()> {
        let raw = prefix.contains('r');
        let bytes = prefix.contains('b');
        let fstring = prefix.contains('f');
        let rest = &self.src[self.pos..];
        let quote = rest.chars().next()?;
        let triple: String = std::iter::repeat_n(quote, 3).collect();
        let delim = if rest.starts_with(&triple) {
            triple.as_str()
        } else {
            &rest[..1]
        };
        let body_start = delim.len();
        // Find the closing delimiter: a backslash always takes the next character.
        let mut chars = rest[body_start..].char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            if c == '\\' {
                chars.next();
            } else if delim.len() == 1 && (c == '\n' || c == '\r') {
                return None;
            } else if rest[body_start + i..].starts_with(delim) {
                end = Some(body_start + i);
                break;
            }
        }
        let end = end?;
        let body = &rest[body_start..end];
        self.pos += end + delim.len();
        if bytes && !body.is_ascii() {
            return None;
        }
        let value = if fstring {
            fstring_constant(body, raw)?
        } else {
            Some(unescape(body, raw, bytes)?)
        };
        self.tokens.push(Token::Str(StrToken {
            value,
            bytes,
            fstring,
        }));
        Some(())
    }
}

/// A decimal int, float or imaginary literal at the start of `text`.
fn decimal(text: &str) -> Option<(Constant, usize)> {
    let bytes = text.as_bytes();
    let digits_end = |from: usize| {
        let mut i = from;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
            i += 1;
        }
        i
    };
    let int_end = digits_end(0);
    let mut end = int_end;
    let mut float = false;
    if bytes.get(end) == Some(&b'.') {
        float = true;
        end = digits_end(end + 1);
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exp = end + 1;
        if matches!(bytes.get(exp), Some(b'+' | b'-')) {
            exp += 1;
        }
        if bytes.get(exp).is_some_and(u8::is_ascii_digit) {
            float = true;
            end = digits_end(exp);
        }
    }
    let imaginary = matches!(bytes.get(end), Some(b'j' | b'J'));
    // Underscores only between digits, in every digit group.
    let literal = &text[..end];
    for group in literal.split(['.', 'e', 'E', '+', '-']) {
        if group.starts_with('_') || group.ends_with('_') || group.contains("__") {
            return None;
        }
    }
    let clean: String = literal.chars().filter(|&c| c != '_').collect();
    if imaginary {
        return Some((Constant::Opaque, end + 1));
    }
    if float {
        return Some((Constant::Json(PyJson::Float(clean.parse().ok()?)), end));
    }
    let trimmed = clean.trim_start_matches('0');
    if trimmed.len() != clean.len() && !trimmed.is_empty() {
        return None; // leading zeros in a decimal integer literal
    }
    let digits = if trimmed.is_empty() { "0" } else { trimmed };
    (digits.len() <= MAX_INT_DIGITS).then(|| (Constant::Json(PyJson::Int(digits.to_owned())), end))
}

/// The digit values of a `0x`/`0o`/`0b` literal body (underscores between digits).
fn underscored_digits(text: &str, radix: u32) -> Option<Vec<u32>> {
    let mut digits = Vec::new();
    let mut after_digit = false;
    for c in text.chars() {
        if c == '_' {
            // `0x_1` is valid; `0x1__2` and a trailing `_` are not.
            if !after_digit && !digits.is_empty() {
                return None;
            }
            after_digit = false;
        } else {
            digits.push(c.to_digit(radix)?);
            after_digit = true;
        }
    }
    (after_digit && !digits.is_empty()).then_some(digits)
}

/// Base conversion to decimal text (the literals are short; quadratic is fine
/// for the bounded length).
fn to_decimal(digits: &[u32], radix: u32) -> Option<String> {
    if digits.len() > 4 * MAX_INT_DIGITS {
        return None;
    }
    // Little-endian base-10^9 limbs.
    let mut limbs: Vec<u64> = vec![0];
    for &d in digits {
        let mut carry = u64::from(d);
        for limb in &mut limbs {
            let v = *limb * u64::from(radix) + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        if carry > 0 {
            limbs.push(carry);
        }
    }
    let mut text = limbs.last().map(u64::to_string).unwrap_or_default();
    for limb in limbs.iter().rev().skip(1) {
        text.push_str(&format!("{limb:09}"));
    }
    (text.len() <= MAX_INT_DIGITS).then_some(text)
}

/// An f-string's value when it has no placeholders (`{{`/`}}` are literal
/// braces), `Some(None)` when it has some, `None` when it is invalid.
fn fstring_constant(body: &str, raw: bool) -> Option<Option<String>> {
    let mut literal = String::new();
    let mut rest = body;
    while let Some(i) = rest.find(['{', '}']) {
        literal.push_str(&rest[..i]);
        let brace = &rest[i..i + 1];
        if rest[i + 1..].starts_with(brace) {
            literal.push_str(brace);
            rest = &rest[i + 2..];
        } else if brace == "{" {
            return Some(None);
        } else {
            return None; // single '}' is not allowed
        }
    }
    literal.push_str(rest);
    Some(Some(unescape(&literal, raw, false)?))
}

/// Apply a string literal's backslash escapes, as Python does.
fn unescape(body: &str, raw: bool, bytes: bool) -> Option<String> {
    if raw {
        return Some(body.replace("\r\n", "\n").replace('\r', "\n"));
    }
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            chars.next_if_eq(&'\n');
            out.push('\n');
            continue;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        match e {
            '\n' => {}
            '\r' => {
                chars.next_if_eq(&'\n');
            }
            '\\' | '\'' | '"' => out.push(e),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut value = e.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(code_point(value));
            }
            'x' => out.push(code_point(hex_escape(&mut chars, 2)?)),
            'u' if !bytes => out.push(code_point(hex_escape(&mut chars, 4)?)),
            'U' if !bytes => {
                let value = hex_escape(&mut chars, 8)?;
                if value > 0x10_FFFF {
                    return None;
                }
                out.push(code_point(value));
            }
            // `\N{NAME}` needs Unicode's name table: refuse rather than guess.
            'N' if !bytes => return None,
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

fn hex_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, len: usize) -> Option<u32> {
    let mut value = 0;
    for _ in 0..len {
        value = value * 16 + chars.next()?.to_digit(16)?;
    }
    Some(value)
}

/// A code point; a lone surrogate (which UTF-8 cannot hold) becomes U+FFFD.
fn code_point(value: u32) -> char {
    char::from_u32(value).unwrap_or('\u{FFFD}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_read_like_python() {
        let tokens =
            tokenize("0x_ff 0o17 1_000 1.5e3 'a\\x41\\u00e9\\d' r'\\n' f'{{x}}' 3j").unwrap();
        let int = |s: &str| Token::Number(Constant::Json(PyJson::Int(s.into())));
        assert_eq!(tokens[0], int("255"));
        assert_eq!(tokens[1], int("15"));
        assert_eq!(tokens[2], int("1000"));
        assert_eq!(
            tokens[3],
            Token::Number(Constant::Json(PyJson::Float(1500.0)))
        );
        let text = |t: &Token| match t {
            Token::Str(s) => s.value.clone(),
            _ => None,
        };
        assert_eq!(text(&tokens[4]).as_deref(), Some("aAé\\d"));
        assert_eq!(text(&tokens[5]).as_deref(), Some("\\n"));
        assert_eq!(text(&tokens[6]).as_deref(), Some("{x}"));
        assert_eq!(tokens[7], Token::Number(Constant::Opaque));
        for bad in ["07", "1__0", "'open", "0x", "1_", "\"a\nb\"", "x\n y"] {
            assert_eq!(tokenize(bad), None, "{bad}");
        }
    }
}
