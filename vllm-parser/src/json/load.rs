//! `json.loads`.

use std::collections::HashMap;

use super::PyJson;

/// Python's `json.loads` refused the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at byte {position}: {reason}")]
pub struct JsonError {
    /// Byte offset of the problem.
    pub position: usize,
    /// What was wrong.
    pub reason: &'static str,
}

/// Nesting limit; Python raises `RecursionError` somewhat below 1000 levels.
const MAX_DEPTH: usize = 500;
/// Python refuses to convert integers longer than this (`sys.int_info`).
const MAX_INT_DIGITS: usize = 4300;

/// Python's `json.loads(text)`: one value, surrounded only by JSON whitespace.
pub fn loads(text: &str) -> Result<PyJson, JsonError> {
    loads_whole(text, true)
}

/// Python's `json.loads(text, strict=False)`: like [`loads`], but control
/// characters (U+0000–U+001F) may appear unescaped inside strings.
pub fn loads_lenient(text: &str) -> Result<PyJson, JsonError> {
    loads_whole(text, false)
}

fn loads_whole(text: &str, strict: bool) -> Result<PyJson, JsonError> {
    let mut parser = Parser {
        text: text.as_bytes(),
        src: text,
        pos: 0,
        depth: 0,
        strict,
    };
    parser.skip_ws();
    let value = parser.value()?;
    parser.skip_ws();
    if parser.pos != text.len() {
        return Err(parser.error("Extra data"));
    }
    Ok(value)
}

/// Python's `json.JSONDecoder().raw_decode(text)` after skipping leading JSON
/// whitespace: the first value and the byte offset just after it.
pub fn loads_prefix(text: &str) -> Result<(PyJson, usize), JsonError> {
    let mut parser = Parser {
        text: text.as_bytes(),
        src: text,
        pos: 0,
        depth: 0,
        strict: true,
    };
    parser.skip_ws();
    let value = parser.value()?;
    Ok((value, parser.pos))
}

struct Parser<'a> {
    text: &'a [u8],
    src: &'a str,
    pos: usize,
    depth: usize,
    /// `strict=False` lets control characters stand unescaped in strings.
    strict: bool,
}

impl Parser<'_> {
    fn error(&self, reason: &'static str) -> JsonError {
        JsonError {
            position: self.pos,
            reason,
        }
    }

    fn skip_ws(&mut self) {
        while matches!(self.text.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, literal: &str) -> bool {
        if self.text[self.pos..].starts_with(literal.as_bytes()) {
            self.pos += literal.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<PyJson, JsonError> {
        match self.text.get(self.pos) {
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(b'"') => Ok(PyJson::Str(self.string()?)),
            Some(b'n') if self.eat("null") => Ok(PyJson::Null),
            Some(b't') if self.eat("true") => Ok(PyJson::Bool(true)),
            Some(b'f') if self.eat("false") => Ok(PyJson::Bool(false)),
            Some(b'N') if self.eat("NaN") => Ok(PyJson::Float(f64::NAN)),
            Some(b'I') if self.eat("Infinity") => Ok(PyJson::Float(f64::INFINITY)),
            Some(b'-') if self.eat("-Infinity") => Ok(PyJson::Float(f64::NEG_INFINITY)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("Expecting value")),
        }
    }

    fn nested(
        &mut self,
        parse: fn(&mut Self) -> Result<PyJson, JsonError>,
    ) -> Result<PyJson, JsonError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error("maximum recursion depth exceeded"));
        }
        self.depth += 1;
        let value = parse(self);
        self.depth -= 1;
        value
    }

    fn object(&mut self) -> Result<PyJson, JsonError> {
        self.pos += 1;
        let mut items: Vec<(String, PyJson)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        self.skip_ws();
        if self.eat("}") {
            return Ok(PyJson::Dict(items));
        }
        loop {
            if self.text.get(self.pos) != Some(&b'"') {
                return Err(self.error("Expecting property name enclosed in double quotes"));
            }
            let key = self.string()?;
            self.skip_ws();
            if !self.eat(":") {
                return Err(self.error("Expecting ':' delimiter"));
            }
            self.skip_ws();
            let value = self.value()?;
            match index.get(&key) {
                Some(&at) => items[at].1 = value,
                None => {
                    index.insert(key.clone(), items.len());
                    items.push((key, value));
                }
            }
            self.skip_ws();
            if self.eat("}") {
                return Ok(PyJson::Dict(items));
            }
            if !self.eat(",") {
                return Err(self.error("Expecting ',' delimiter"));
            }
            self.skip_ws();
        }
    }

    fn array(&mut self) -> Result<PyJson, JsonError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat("]") {
            return Ok(PyJson::List(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            if self.eat("]") {
                return Ok(PyJson::List(items));
            }
            if !self.eat(",") {
                return Err(self.error("Expecting ',' delimiter"));
            }
            self.skip_ws();
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.text.get(self.pos), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<PyJson, JsonError> {
        let start = self.pos;
        let negative = self.eat("-");
        let int_start = self.pos;
        match self.text.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => {
                return Err(JsonError {
                    position: start,
                    reason: "Expecting value",
                });
            }
        }
        let int_end = self.pos;
        let mut is_float = false;
        if self.text.get(self.pos) == Some(&b'.')
            && self.text.get(self.pos + 1).is_some_and(u8::is_ascii_digit)
        {
            self.pos += 1;
            self.digits();
            is_float = true;
        }
        if matches!(self.text.get(self.pos), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.text.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                self.pos = save; // Python's scanner stops before a bare `e`
            } else {
                is_float = true;
            }
        }
        let literal = &self.src[start..self.pos];
        if is_float {
            let value: f64 = literal.parse().map_err(|_| self.error("invalid float"))?;
            return Ok(PyJson::Float(value));
        }
        let digits = &self.src[int_start..int_end];
        if digits.len() > MAX_INT_DIGITS {
            return Err(self.error("Exceeds the limit (4300 digits) for integer string conversion"));
        }
        Ok(PyJson::Int(if negative && digits != "0" {
            format!("-{digits}")
        } else {
            digits.to_owned()
        }))
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(&b) = self.text.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(&self.src[run_start..self.pos]);
            match self.text.get(self.pos) {
                None => return Err(self.error("Unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escaped = match self.text.get(self.pos) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            out.push(self.unicode_escape()?);
                            continue;
                        }
                        _ => return Err(self.error("Invalid \\escape")),
                    };
                    self.pos += 1;
                    out.push(escaped);
                }
                Some(&b) if !self.strict => {
                    self.pos += 1;
                    out.push(char::from(b));
                }
                Some(_) => return Err(self.error("Invalid control character")),
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let hex = self.src.get(self.pos..self.pos + 4)?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += 4;
        u32::from_str_radix(hex, 16).ok()
    }

    /// After `\u`: one code point, combining a surrogate pair. A lone surrogate,
    /// which Python keeps but UTF-8 cannot hold, becomes U+FFFD.
    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        let first = self
            .hex4()
            .ok_or_else(|| self.error("Invalid \\uXXXX escape"))?;
        if (0xd800..0xdc00).contains(&first) && self.text[self.pos..].starts_with(b"\\u") {
            let save = self.pos;
            self.pos += 2;
            match self.hex4() {
                Some(second) if (0xdc00..0xe000).contains(&second) => {
                    let code = 0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00);
                    return Ok(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                _ => self.pos = save,
            }
        }
        Ok(char::from_u32(first).unwrap_or('\u{fffd}'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_accepts_and_refuses_what_json_loads_does() {
        assert!(loads(" {\"a\": [1, 2.5, NaN, -Infinity]} \n").is_ok());
        assert!(loads("{\"a\": 1} x").is_err());
        assert!(loads("\"tab\there\"").is_err());
        assert!(loads("").is_err());
        assert!(loads("01").is_err());
        assert_eq!(loads("-0"), Ok(PyJson::Int("0".into())));
        assert_eq!(
            loads("{\"k\": 1, \"j\": 2, \"k\": 3}"),
            Ok(PyJson::Dict(vec![
                ("k".into(), PyJson::Int("3".into())),
                ("j".into(), PyJson::Int("2".into()))
            ]))
        );
        assert!(loads(&"[".repeat(100_000)).is_err());
    }
}
