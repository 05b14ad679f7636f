//! A regex turned into rules as xgrammar 0.2.8's `Grammar.from_regex` does
//! it, for the regexes [`super::range`] writes: literal characters, `[a-b]`,
//! `\d`, `\.`, groups, `|`, and the quantifiers `*` (of a class), `?` and
//! `{n}` / `{n,}` / `{n,m}`.
//!
//! The rules are named as in a grammar of their own (`root`, `root_1`, …):
//! a quantified element gets a rule when it is read (`root_1{2, 2}`, or
//! `root_1 ::= ("" | …)` for `?`), then a choice left inside a sequence gets
//! one (named after the rule holding it). The converter adds them to the
//! schema's grammar under fresh names ([`super::grammar::Grammar::graft`]).

use super::Unsupported;
use super::grammar::{Body, Item, Rule};

/// The rules of `regex` (anchored `^…$`), the first one its root.
pub(super) fn regex_rules(regex: &str) -> Result<Vec<Rule>, Unsupported> {
    let inner = regex
        .strip_prefix('^')
        .and_then(|r| r.strip_suffix('$'))
        .ok_or_else(|| unsupported(regex))?;
    let mut parser = Parser {
        text: inner.as_bytes(),
        at: 0,
        rules: vec![Rule {
            name: "root".into(),
            body: Body::Choice(Vec::new()),
        }],
    };
    let alternatives = parser.alternatives()?;
    if parser.at != parser.text.len() {
        return Err(unsupported(regex));
    }
    parser.rules[0].body = Body::Choice(alternatives);
    let mut rules = parser.rules;
    // Choices left inside sequences get rules of their own, after every rule.
    let mut lifted = Vec::new();
    for index in 0..rules.len() {
        let holder = rules[index].name.clone();
        let Body::Choice(alternatives) = &mut rules[index].body else {
            continue;
        };
        let mut alternatives = std::mem::take(alternatives);
        for sequence in &mut alternatives {
            lift(&holder, sequence, &rules, &mut lifted);
        }
        rules[index].body = Body::Choice(alternatives);
    }
    rules.extend(lifted);
    Ok(rules)
}

fn unsupported(regex: &str) -> Unsupported {
    Unsupported::Keyword(format!("regex {regex:?}"))
}

/// `hint`, or `hint_N` for the first `N` from 1 not taken.
fn fresh_name(hint: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(hint) {
        return hint.to_owned();
    }
    (1u64..)
        .map(|n| format!("{hint}_{n}"))
        .find(|name| !taken(name))
        .unwrap_or_default()
}

fn lift(holder: &str, sequence: &mut [Item], rules: &[Rule], lifted: &mut Vec<Rule>) {
    for item in sequence.iter_mut() {
        let Item::Nested(alternatives) = item else {
            continue;
        };
        let mut alternatives = std::mem::take(alternatives);
        for inner in &mut alternatives {
            lift(holder, inner, rules, lifted);
        }
        let name = fresh_name(holder, |n| {
            rules.iter().chain(lifted.iter()).any(|r| r.name == n)
        });
        *item = Item::Ref(name.clone());
        lifted.push(Rule {
            name,
            body: Body::Choice(alternatives),
        });
    }
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
    rules: Vec<Rule>,
}

/// One element read, before its quantifier.
enum Atom {
    Item(Item),
    Group(Vec<Vec<Item>>),
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn error(&self) -> Unsupported {
        unsupported(&String::from_utf8_lossy(self.text))
    }

    /// `a|b|…` up to a `)` or the end; a branch that is only a group of
    /// several branches is replaced by them.
    fn alternatives(&mut self) -> Result<Vec<Vec<Item>>, Unsupported> {
        let mut alternatives = Vec::new();
        loop {
            let sequence = self.sequence()?;
            match <[Item; 1]>::try_from(sequence) {
                Ok([Item::Nested(inner)]) => alternatives.extend(inner),
                Ok([item]) => alternatives.push(vec![item]),
                Err(sequence) => alternatives.push(sequence),
            }
            if self.peek() == Some(b'|') {
                self.at += 1;
            } else {
                return Ok(alternatives);
            }
        }
    }

    fn sequence(&mut self) -> Result<Vec<Item>, Unsupported> {
        let mut sequence = Vec::new();
        while let Some(c) = self.peek() {
            if c == b'|' || c == b')' {
                break;
            }
            let atom = self.atom()?;
            self.quantified(atom, &mut sequence)?;
        }
        Ok(sequence)
    }

    fn atom(&mut self) -> Result<Atom, Unsupported> {
        let c = self.peek().ok_or_else(|| self.error())?;
        self.at += 1;
        Ok(match c {
            b'(' => {
                let alternatives = self.alternatives()?;
                if self.peek() != Some(b')') {
                    return Err(self.error());
                }
                self.at += 1;
                Atom::Group(alternatives)
            }
            b'[' => {
                let class = self
                    .text
                    .get(self.at..self.at + 4)
                    .ok_or_else(|| self.error())?;
                if class[1] != b'-' || class[3] != b']' || !class[0].is_ascii_digit() {
                    return Err(self.error());
                }
                self.at += 4;
                Atom::Item(Item::Text(format!(
                    "[{}-{}]",
                    class[0] as char, class[2] as char
                )))
            }
            b'\\' => {
                let escaped = self.peek().ok_or_else(|| self.error())?;
                self.at += 1;
                match escaped {
                    b'd' => Atom::Item(Item::Text("[0-9]".into())),
                    b'.' => Atom::Item(Item::Lit(".".into())),
                    _ => return Err(self.error()),
                }
            }
            c if c.is_ascii_digit() || c == b'-' || c == b'.' => {
                Atom::Item(Item::Lit((c as char).to_string()))
            }
            _ => return Err(self.error()),
        })
    }

    /// A new rule named as xgrammar's parser names it.
    fn rule(&mut self, alternatives: Vec<Vec<Item>>) -> String {
        let name = fresh_name("root", |n| self.rules.iter().any(|r| r.name == n));
        self.rules.push(Rule {
            name: name.clone(),
            body: Body::Choice(alternatives),
        });
        name
    }

    fn quantified(&mut self, atom: Atom, sequence: &mut Vec<Item>) -> Result<(), Unsupported> {
        let alternatives = |atom: Atom| match atom {
            Atom::Item(item) => vec![vec![item]],
            Atom::Group(alternatives) => alternatives,
        };
        match self.peek() {
            Some(b'*') => {
                self.at += 1;
                match atom {
                    Atom::Item(Item::Text(class)) => sequence.push(Item::Text(format!("{class}*"))),
                    _ => return Err(self.error()),
                }
            }
            Some(b'?') => {
                self.at += 1;
                let mut choice = vec![vec![]];
                choice.extend(alternatives(atom));
                let name = self.rule(choice);
                sequence.push(Item::Ref(name));
            }
            Some(b'{') => {
                let close = self.text[self.at..]
                    .iter()
                    .position(|&c| c == b'}')
                    .ok_or_else(|| self.error())?;
                let range = std::str::from_utf8(&self.text[self.at + 1..self.at + close])
                    .map_err(|_| self.error())?;
                self.at += close + 1;
                let number = |s: &str| s.parse::<u64>().map_err(|_| self.error());
                let (min, max) = match range.split_once(',') {
                    None => (number(range)?, number(range)? as i64),
                    Some((min, "")) => (number(min)?, -1),
                    Some((min, max)) => (number(min)?, number(max)? as i64),
                };
                let name = self.rule(alternatives(atom));
                sequence.push(Item::Repeat(name, min, max));
            }
            _ => match atom {
                Atom::Item(item) => sequence.push(item),
                Atom::Group(mut alternatives) if alternatives.len() == 1 => {
                    sequence.append(&mut alternatives[0]);
                }
                Atom::Group(alternatives) => sequence.push(Item::Nested(alternatives)),
            },
        }
        Ok(())
    }
}
