//! Which `pattern`s xgrammar 0.2.8 keeps as they are, as a
//! `Regex("…", json_string=true)` rule: printable ASCII its finite-state
//! builder reads. This is a conservative reading of that builder's syntax
//! (checked against xgrammar's output); anything else — non-ASCII, quotes,
//! backslash escapes other than the common classes, lookaround, back
//! references, Unicode properties — is outside the subset, as xgrammar
//! turns some of it into rules of its own. Of those, this crate writes one
//! kind: a pattern of plain characters, some beyond ASCII, with or without
//! its anchors, which xgrammar turns into a rule of the characters, one
//! literal each, anchors dropped (checked against xgrammar 0.2.8).

use super::grammar::{Body, Item, Rule};

/// Whether xgrammar keeps `pattern` as a regex (see the module docs).
pub(super) fn kept_as_regex(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    if bytes.is_empty() || bytes.len() > 1000 {
        return false;
    }
    let mut checker = Checker {
        bytes,
        at: 0,
        depth: 0,
    };
    checker.alternatives() && checker.at == bytes.len()
}

/// The rules xgrammar turns `pattern` into, when it is plain characters
/// (ASCII ones as [`plain`] allows), at least one of them beyond ASCII,
/// between optional `^` and `$`: one rule, a literal per character.
pub(super) fn literal_rules(pattern: &str) -> Option<Vec<Rule>> {
    let inner = pattern.strip_prefix('^').unwrap_or(pattern);
    let inner = inner.strip_suffix('$').unwrap_or(inner);
    let plain_or_wide = |c: char| !c.is_ascii() || plain(c as u8);
    if inner.is_ascii() || inner.len() > 1000 || !inner.chars().all(plain_or_wide) {
        return None;
    }
    let literals = inner.chars().map(|c| Item::Lit(c.to_string())).collect();
    Some(vec![Rule {
        name: "root".into(),
        body: Body::Choice(vec![literals]),
    }])
}

struct Checker<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

/// Literal characters outside classes.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" _-,:;@/#%&=~!'<>`".contains(&b)
}

/// Escapes read the same way inside and outside classes.
fn escape(b: u8) -> bool {
    b"dDwWsS.-/()[]{}+*?|^$".contains(&b)
}

impl Checker<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn alternatives(&mut self) -> bool {
        loop {
            if !self.sequence() {
                return false;
            }
            if self.peek() == Some(b'|') {
                self.at += 1;
            } else {
                return true;
            }
        }
    }

    fn sequence(&mut self) -> bool {
        let start = self.at;
        while let Some(b) = self.peek() {
            match b {
                b'|' | b')' => return true,
                // Anchors at a branch's ends.
                b'^' if self.at == start => self.at += 1,
                b'$' if matches!(self.bytes.get(self.at + 1), None | Some(b'|' | b')')) => {
                    self.at += 1;
                }
                _ => {
                    if !self.atom() || !self.quantifier() {
                        return false;
                    }
                }
            }
        }
        true
    }

    fn atom(&mut self) -> bool {
        let Some(b) = self.peek() else { return false };
        self.at += 1;
        match b {
            b'(' => {
                self.depth += 1;
                if self.depth > 32 {
                    return false;
                }
                if self.bytes[self.at..].starts_with(b"?:") {
                    self.at += 2;
                }
                let ok = self.alternatives() && self.peek() == Some(b')');
                self.at += 1;
                self.depth -= 1;
                ok
            }
            b'[' => self.class(),
            b'\\' => {
                let ok = self.peek().is_some_and(escape);
                self.at += 1;
                ok
            }
            b'.' => true,
            b => plain(b),
        }
    }

    fn class(&mut self) -> bool {
        if self.peek() == Some(b'^') {
            self.at += 1;
        }
        let mut first = true;
        loop {
            let Some(b) = self.peek() else { return false };
            self.at += 1;
            match b {
                b']' if !first => return true,
                b'\\' => {
                    if !self.peek().is_some_and(escape) {
                        return false;
                    }
                    self.at += 1;
                }
                b if plain(b) || b" .+*?|$(){}".contains(&b) => {}
                _ => return false,
            }
            first = false;
        }
    }

    fn quantifier(&mut self) -> bool {
        match self.peek() {
            Some(b'*' | b'+' | b'?') => self.at += 1,
            Some(b'{') => {
                let Some(close) = self.bytes[self.at..].iter().position(|&b| b == b'}') else {
                    return false;
                };
                let inside = &self.bytes[self.at + 1..self.at + close];
                let numbers: Vec<&[u8]> = inside.split(|&b| b == b',').collect();
                let number =
                    |n: &[u8]| !n.is_empty() && n.len() <= 4 && n.iter().all(u8::is_ascii_digit);
                let value = |n: &[u8]| std::str::from_utf8(n).ok()?.parse::<u32>().ok();
                let ok = match numbers.as_slice() {
                    [n] => number(n),
                    [n, []] => number(n),
                    [n, m] => number(n) && number(m) && value(n) <= value(m),
                    _ => false,
                };
                if !ok {
                    return false;
                }
                self.at += close + 1;
            }
            _ => return true,
        }
        // No lazy or possessive forms.
        !matches!(self.peek(), Some(b'?' | b'+' | b'*' | b'{'))
    }
}
