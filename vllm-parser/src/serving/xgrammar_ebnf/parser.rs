//! xgrammar's `EBNFParser` (`cpp/grammar_parser.cc`) over [`super::lexer`]'s
//! tokens, and the refusals of its `GrammarNormalizer`
//! (`cpp/grammar_functor.cc`), which only look at a lookahead assertion's
//! outer shape once single-element groups are unwrapped.
//!
//! The parser recurses once per parenthesis; [`parse`] first bounds the
//! nesting by [`super::MAX_NESTING`], so the recursion is bounded.

use std::collections::{HashMap, HashSet};

use super::lexer::{Tok, Token};
use super::macros;
use super::{MAX_NESTING, Step, Stop};

/// What the normalizer sees of an expression once single-element sequences
/// and choices are unwrapped (`SingleElementExprEliminator`).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Shape {
    Choices,
    Sequence,
    Empty,
    TagDispatch,
    Regex,
    Substring,
    /// A string, class, rule reference, repetition, or token macro.
    Other,
}

/// What a quantifier sees of the element it follows.
#[derive(Clone, Copy, PartialEq)]
enum Element {
    /// A character class: `*` keeps it (`kCharacterClassStar`).
    Class,
    /// A reference to a rule: `{m,n}` repeats that rule.
    RuleRef,
    Other,
}

/// Whether the tokens parse and normalize as `Grammar.from_ebnf` with root
/// rule `root`.
pub(super) fn parse(tokens: &[Token]) -> Step<()> {
    let mut depth: usize = 0;
    for token in tokens {
        match token.tok {
            Tok::LParen | Tok::Lookahead => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Stop::Undecided);
                }
            }
            Tok::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        names: HashSet::new(),
        next_suffix: HashMap::new(),
        rule: String::new(),
    };
    // `InitRuleNames`: every rule name, once, and the root among them.
    for token in tokens {
        if let Tok::RuleName(name) = &token.tok
            && !parser.names.insert(name.clone())
        {
            return Err(Stop::Refused);
        }
    }
    if !parser.names.contains("root") {
        return Err(Stop::Refused);
    }
    while parser.peek() != &Tok::Eof {
        parser.rule()?;
    }
    Ok(())
}

pub(super) struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    /// The rules defined so far: every named rule, and the helper rules
    /// quantifiers have added.
    names: HashSet<String>,
    /// `GetNewRuleName`'s next suffix to try, by rule.
    next_suffix: HashMap<String, usize>,
    /// The rule being parsed.
    rule: String,
}

impl Parser<'_> {
    pub(super) fn peek(&self) -> &Tok {
        self.peek_at(0)
    }

    pub(super) fn peek_at(&self, delta: usize) -> &Tok {
        self.tokens
            .get(self.at + delta)
            .map_or(&Tok::Eof, |token| &token.tok)
    }

    pub(super) fn advance(&mut self) {
        self.at += 1;
    }

    /// Consumes a token of `tok`'s kind, or refuses.
    pub(super) fn expect(&mut self, tok: &Tok) -> Step<()> {
        if self.peek() != tok {
            return Err(Stop::Refused);
        }
        self.advance();
        Ok(())
    }

    /// Whether `name` is a rule defined so far (`GetRuleId`).
    pub(super) fn defined(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// A helper rule for a quantifier, named after the current rule.
    fn add_rule(&mut self) {
        let next = self.next_suffix.entry(self.rule.clone()).or_insert(1);
        while self.names.contains(&format!("{}_{next}", self.rule)) {
            *next += 1;
        }
        self.names.insert(format!("{}_{next}", self.rule));
    }

    fn rule(&mut self) -> Step<()> {
        let Tok::RuleName(name) = self.peek() else {
            return Err(Stop::Refused);
        };
        self.rule = name.clone();
        self.advance();
        self.expect(&Tok::Assign)?;
        self.choices()?;
        if self.peek() == &Tok::Lookahead {
            self.advance();
            let shape = self.choices()?;
            self.expect(&Tok::RParen)?;
            if matches!(
                shape,
                Shape::Choices
                    | Shape::Empty
                    | Shape::TagDispatch
                    | Shape::Regex
                    | Shape::Substring
            ) {
                return Err(Stop::Refused);
            }
        }
        Ok(())
    }

    fn choices(&mut self) -> Step<Shape> {
        let first = self.sequence()?;
        let mut count = 1;
        while self.peek() == &Tok::Pipe {
            self.advance();
            self.sequence()?;
            count += 1;
        }
        Ok(if count == 1 { first } else { Shape::Choices })
    }

    fn sequence(&mut self) -> Step<Shape> {
        let mut shapes = Vec::new();
        loop {
            shapes.push(self.quantified()?);
            if matches!(
                self.peek(),
                Tok::Pipe | Tok::RParen | Tok::Lookahead | Tok::RuleName(_) | Tok::Eof
            ) {
                break;
            }
        }
        Ok(if shapes.len() == 1 {
            shapes[0]
        } else {
            Shape::Sequence
        })
    }

    /// `ParseElementWithQuantifier`.
    fn quantified(&mut self) -> Step<Shape> {
        let (shape, element) = self.element()?;
        match self.peek() {
            Tok::Star => {
                self.advance();
                if element != Element::Class {
                    self.add_rule();
                }
            }
            Tok::Plus | Tok::Question => {
                self.advance();
                self.add_rule();
            }
            Tok::LBrace => {
                self.repetition_range()?;
                if element != Element::RuleRef {
                    self.add_rule();
                }
            }
            _ => return Ok(shape),
        }
        Ok(Shape::Other)
    }

    fn element(&mut self) -> Step<(Shape, Element)> {
        let token = self.peek().clone();
        match token {
            Tok::LParen => {
                self.advance();
                if self.peek() == &Tok::RParen {
                    self.advance();
                    return Ok((Shape::Empty, Element::Other));
                }
                let shape = self.choices()?;
                self.expect(&Tok::RParen)?;
                Ok((shape, Element::Other))
            }
            Tok::Class => {
                self.advance();
                Ok((Shape::Other, Element::Class))
            }
            Tok::Str(value) => {
                self.advance();
                let shape = if value.is_empty() {
                    Shape::Empty
                } else {
                    Shape::Other
                };
                Ok((shape, Element::Other))
            }
            Tok::Ident(name) => {
                if let Some(shape) = macros::parse(self, &name)? {
                    return Ok((shape, Element::Other));
                }
                if !self.defined(&name) {
                    return Err(Stop::Refused);
                }
                self.advance();
                Ok((Shape::Other, Element::RuleRef))
            }
            _ => Err(Stop::Refused),
        }
    }

    fn integer(&mut self) -> Step<i64> {
        let Tok::Int(value) = *self.peek() else {
            return Err(Stop::Refused);
        };
        self.advance();
        Ok(value)
    }

    /// `{n}`, `{n,}`, `{n,-1}` or `{n,m}` with `n <= m`.
    fn repetition_range(&mut self) -> Step<()> {
        self.expect(&Tok::LBrace)?;
        let lower = self.integer()?;
        match self.peek() {
            Tok::RBrace => self.advance(),
            Tok::Comma => {
                self.advance();
                match self.peek() {
                    Tok::RBrace => self.advance(),
                    // The printer's `{n, -1}`: `-1` lexes as a name.
                    Tok::Ident(name) if name == "-1" => {
                        self.advance();
                        self.expect(&Tok::RBrace)?;
                    }
                    _ => {
                        if self.integer()? < lower {
                            return Err(Stop::Refused);
                        }
                        self.expect(&Tok::RBrace)?;
                    }
                }
            }
            _ => return Err(Stop::Refused),
        }
        Ok(())
    }
}
