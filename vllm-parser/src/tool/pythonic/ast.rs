//! A bounded parser for the Python expressions tool calls are written in, giving
//! the few node kinds vLLM's `ast`-based parsers look at.
//!
//! Valid Python outside that subset (lambdas, comprehensions, statements other
//! than expressions) is refused; so is nesting deeper than Python's own parser
//! allows. A refused output is text, as in vLLM when `ast.parse` fails.

use super::lexer::{Constant, StrToken, Token};
use crate::json::PyJson;

/// Bracket nesting; the tokenizer already refuses more than Python's 200.
const MAX_DEPTH: usize = 200;
/// Python's AST conversion hits its recursion limit past about this many
/// nested unary operators (`-` × 2992 raises `RecursionError`).
const MAX_UNARY: usize = 2991;

/// Python's keywords (`keyword.kwlist`).
pub(crate) const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// The node kinds vLLM's pythonic parsers distinguish.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `ast.Constant`.
    Constant(Constant),
    /// `ast.JoinedStr`: its value when every part is constant.
    FString(Option<String>),
    /// `ast.Name`.
    Name(String),
    /// `ast.Attribute`: `value.attr`.
    Attribute(Box<Expr>, String),
    /// `ast.Call`: the callee and the keyword arguments (`None` for `**x`).
    Call(Box<Expr>, Vec<(Option<String>, Expr)>),
    /// `ast.List`, `ast.Tuple` and `ast.Set` (vLLM treats them alike).
    Sequence(SequenceKind, Vec<Expr>),
    /// `ast.Dict`: keys (`None` for `**x`) and values.
    Dict(Vec<(Option<Expr>, Expr)>),
    /// `-x` / `+x` (a chain of them folded into one): whether negated, and the
    /// operand.
    Sign(bool, Box<Expr>),
    /// Any other valid expression (operators, subscripts, starred, …).
    Other,
}

/// Which sequence display an [`Expr::Sequence`] was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceKind {
    /// `[…]`.
    List,
    /// `(…)` or bare commas.
    Tuple,
    /// `{…}` without colons.
    Set,
}

/// The value of a module's first statement when it is an expression statement
/// and the whole module parses; `None` where `ast.parse` raises or the module is
/// outside the subset.
pub fn first_expression(tokens: &[Token]) -> Option<Expr> {
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let first = parser.expression_list()?;
    loop {
        match parser.peek() {
            None => break,
            Some(Token::Newline) => parser.pos += 1,
            Some(Token::Op(";")) => {
                parser.pos += 1;
                if matches!(parser.peek(), Some(Token::Op(";"))) {
                    return None;
                }
            }
            Some(_) => return None,
        }
        if parser.peek().is_some() && !matches!(parser.peek(), Some(Token::Newline)) {
            parser.expression_list()?;
        }
    }
    Some(first)
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn at_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Token::Op(o)) if *o == op)
    }

    fn at_name(&self, name: &str) -> bool {
        matches!(self.peek(), Some(Token::Name(n)) if n == name)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        let found = self.at_op(op);
        self.pos += usize::from(found);
        found
    }

    fn expect_op(&mut self, op: &str) -> Option<()> {
        self.eat_op(op).then_some(())
    }

    /// Whether the next token can start an expression.
    fn at_expression_start(&self) -> bool {
        match self.peek() {
            Some(Token::Name(n)) => {
                !KEYWORDS.contains(&n.as_str())
                    || matches!(n.as_str(), "None" | "True" | "False" | "not" | "await")
            }
            Some(Token::Number(_) | Token::Str(_)) => true,
            Some(Token::Op(op)) => {
                matches!(*op, "(" | "[" | "{" | "-" | "+" | "~" | "..." | "*")
            }
            _ => false,
        }
    }

    /// `a, b, …`: a tuple when there is a comma.
    fn expression_list(&mut self) -> Option<Expr> {
        let first = self.starred_or_expression()?;
        if !self.at_op(",") {
            return Some(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if !self.at_expression_start() {
                break;
            }
            items.push(self.starred_or_expression()?);
        }
        Some(Expr::Sequence(SequenceKind::Tuple, items))
    }

    fn starred_or_expression(&mut self) -> Option<Expr> {
        if self.eat_op("*") {
            self.binary()?;
            return Some(Expr::Other);
        }
        self.expression()
    }

    /// A full expression (conditional expressions included).
    fn expression(&mut self) -> Option<Expr> {
        let value = self.binary()?;
        if self.at_name("if") {
            self.pos += 1;
            self.binary()?;
            self.at_name("else").then_some(())?;
            self.pos += 1;
            self.expression()?;
            return Some(Expr::Other);
        }
        Some(value)
    }

    /// A disjunction: `not`-prefixed comparisons joined by `and` / `or`.
    /// Precedence does not matter beyond validity: an operator makes the node
    /// something vLLM rejects.
    fn binary(&mut self) -> Option<Expr> {
        let mut joined = false;
        loop {
            while self.at_name("not") {
                self.pos += 1;
                joined = true;
            }
            let operand = self.comparison()?;
            if !(self.at_name("and") || self.at_name("or")) {
                return Some(if joined { Expr::Other } else { operand });
            }
            self.pos += 1;
            joined = true;
        }
    }

    /// Unary operands joined by arithmetic, bitwise and comparison operators
    /// (`not` cannot follow these, so it is not an operand here).
    fn comparison(&mut self) -> Option<Expr> {
        let first = self.unary()?;
        let mut joined = false;
        loop {
            let is_operator = match self.peek() {
                Some(Token::Op(op)) => matches!(
                    *op,
                    "+" | "-"
                        | "*"
                        | "/"
                        | "//"
                        | "%"
                        | "@"
                        | "**"
                        | "<<"
                        | ">>"
                        | "&"
                        | "|"
                        | "^"
                        | "<"
                        | ">"
                        | "<="
                        | ">="
                        | "=="
                        | "!="
                ),
                Some(Token::Name(n)) => matches!(n.as_str(), "in" | "is"),
                _ => false,
            };
            if is_operator {
                let is_is = self.at_name("is");
                self.pos += 1;
                if is_is && self.at_name("not") {
                    self.pos += 1;
                }
            } else if self.at_name("not") {
                // `not in`
                self.pos += 1;
                self.at_name("in").then_some(())?;
                self.pos += 1;
            } else {
                break;
            }
            self.unary()?;
            joined = true;
        }
        Some(if joined { Expr::Other } else { first })
    }

    /// Prefix operators, read in a loop (long chains must not recurse), then
    /// the operand; `-`/`+` stay visible to the conversion, others do not.
    fn unary(&mut self) -> Option<Expr> {
        let mut signs = Vec::new();
        let mut other = false;
        loop {
            if self.eat_op("-") {
                signs.push(true);
            } else if self.eat_op("+") {
                signs.push(false);
            } else if self.eat_op("~") {
                other = true;
                signs.clear();
            } else {
                break;
            }
            if signs.len() > MAX_UNARY {
                return None;
            }
        }
        // `await` takes a primary (`await -5` is a syntax error); outside a
        // function it is a compile error, which `ast.parse` does not check.
        let mut value = if self.at_name("await") {
            self.pos += 1;
            self.postfix()?;
            Expr::Other
        } else {
            self.postfix()?
        };
        if other {
            // `~` somewhere in the chain: the operand of the outer signs is not
            // a number, so the whole value is something vLLM rejects.
            return Some(Expr::Other);
        }
        if !signs.is_empty() {
            // A chain of signs is one sign: vLLM needs a number under each one.
            let negate = signs.iter().filter(|&&minus| minus).count() % 2 == 1;
            value = Expr::Sign(negate, Box::new(value));
        }
        Some(value)
    }

    fn nest<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn postfix(&mut self) -> Option<Expr> {
        let mut value = self.atom()?;
        loop {
            if self.eat_op(".") {
                match self.peek() {
                    Some(Token::Name(n)) if !KEYWORDS.contains(&n.as_str()) => {
                        let attr = n.clone();
                        self.pos += 1;
                        value = Expr::Attribute(Box::new(value), attr);
                    }
                    _ => return None,
                }
            } else if self.eat_op("(") {
                let keywords = self.nest(|p| p.arguments())?;
                value = Expr::Call(Box::new(value), keywords);
            } else if self.eat_op("[") {
                self.nest(|p| p.subscript())?;
                value = Expr::Other;
            } else {
                return Some(value);
            }
        }
    }

    /// Call arguments after `(`, through `)`: the keyword arguments.
    fn arguments(&mut self) -> Option<Vec<(Option<String>, Expr)>> {
        let mut keywords: Vec<(Option<String>, Expr)> = Vec::new();
        let mut seen_keyword = false;
        let mut seen_double_star = false;
        while !self.eat_op(")") {
            if self.eat_op("**") {
                keywords.push((None, self.expression()?));
                seen_double_star = true;
            } else if self.eat_op("*") {
                if seen_double_star {
                    return None;
                }
                self.expression()?;
            } else if let (Some(Token::Name(name)), Some(Token::Op("="))) =
                (self.peek(), self.tokens.get(self.pos + 1))
            {
                // A repeated keyword is a compile error, not a parse error: `ast.parse`
                // accepts it (the last value wins when vLLM builds its dict).
                if KEYWORDS.contains(&name.as_str()) {
                    return None;
                }
                let name = name.clone();
                self.pos += 2;
                keywords.push((Some(name), self.expression()?));
                seen_keyword = true;
            } else {
                if seen_keyword || seen_double_star {
                    return None; // positional argument follows keyword argument
                }
                self.expression()?;
                if self.at_name("for") || self.at_name("async") {
                    return None; // generator argument: outside the subset
                }
            }
            if !self.eat_op(",") {
                self.expect_op(")")?;
                break;
            }
        }
        Some(keywords)
    }

    /// A subscript after `[`, through `]` (slices included).
    fn subscript(&mut self) -> Option<()> {
        loop {
            let mut parts = 0;
            loop {
                if self.at_expression_start() {
                    self.expression()?;
                    parts += 1;
                }
                if !self.eat_op(":") {
                    break;
                }
                parts += 1;
            }
            if parts == 0 {
                return None;
            }
            if !self.eat_op(",") || self.at_op("]") {
                break;
            }
        }
        self.expect_op("]")
    }

    fn atom(&mut self) -> Option<Expr> {
        let token = self.peek()?.clone();
        self.pos += 1;
        match token {
            Token::Number(c) => Some(Expr::Constant(c)),
            Token::Str(first) => self.strings(first),
            Token::Name(name) => match name.as_str() {
                "None" => Some(Expr::Constant(Constant::Json(PyJson::Null))),
                "True" => Some(Expr::Constant(Constant::Json(PyJson::Bool(true)))),
                "False" => Some(Expr::Constant(Constant::Json(PyJson::Bool(false)))),
                n if KEYWORDS.contains(&n) => None,
                _ => Some(Expr::Name(name)),
            },
            Token::Op("...") => Some(Expr::Constant(Constant::Opaque)),
            Token::Op("(") => self.nest(|p| p.parenthesized()),
            Token::Op("[") => self.nest(|p| p.list()),
            Token::Op("{") => self.nest(|p| p.braces()),
            _ => None,
        }
    }

    /// Adjacent string literals, joined.
    fn strings(&mut self, first: StrToken) -> Option<Expr> {
        let mut parts = vec![first];
        while let Some(Token::Str(next)) = self.peek() {
            parts.push(next.clone());
            self.pos += 1;
        }
        let bytes = parts[0].bytes;
        if parts.iter().any(|p| p.bytes != bytes) {
            return None; // cannot mix bytes and nonbytes literals
        }
        if bytes {
            return Some(Expr::Constant(Constant::Opaque));
        }
        let value: Option<String> = parts.iter().map(|p| p.value.as_deref()).collect();
        if parts.iter().any(|p| p.fstring) {
            return Some(Expr::FString(value));
        }
        Some(Expr::Constant(Constant::Json(PyJson::Str(value?))))
    }

    /// After `(`: a parenthesized expression or a tuple.
    fn parenthesized(&mut self) -> Option<Expr> {
        if self.eat_op(")") {
            return Some(Expr::Sequence(SequenceKind::Tuple, Vec::new()));
        }
        let value = self.expression_list()?;
        if self.at_name("for") || self.at_name("async") {
            return None;
        }
        self.expect_op(")")?;
        Some(value)
    }

    /// After `[`: a list display.
    fn list(&mut self) -> Option<Expr> {
        let items = self.items("]")?;
        Some(Expr::Sequence(SequenceKind::List, items))
    }

    /// Comma-separated (starred) expressions through `close`.
    fn items(&mut self, close: &str) -> Option<Vec<Expr>> {
        let mut items = Vec::new();
        while !self.eat_op(close) {
            items.push(self.starred_or_expression()?);
            if self.at_name("for") || self.at_name("async") {
                return None;
            }
            if !self.eat_op(",") {
                self.expect_op(close)?;
                break;
            }
        }
        Some(items)
    }

    /// After `{`: a dict or set display. The first item decides which, and is
    /// read once (re-reading would be exponential in the nesting).
    fn braces(&mut self) -> Option<Expr> {
        if self.eat_op("}") {
            return Some(Expr::Dict(Vec::new()));
        }
        let first_key = if self.eat_op("**") {
            None
        } else {
            let first = self.starred_or_expression()?;
            if !self.at_op(":") {
                let mut items = vec![first];
                if self.at_name("for") || self.at_name("async") {
                    return None;
                }
                if self.eat_op(",") {
                    items.extend(self.items("}")?);
                } else {
                    self.expect_op("}")?;
                }
                return Some(Expr::Sequence(SequenceKind::Set, items));
            }
            Some(first)
        };
        let mut entries = Vec::new();
        let mut key = Some(first_key);
        loop {
            let entry = match key.take() {
                Some(Some(key)) => {
                    self.expect_op(":")?;
                    (Some(key), self.expression()?)
                }
                Some(None) => (None, self.binary()?),
                None if self.eat_op("}") => break,
                None if self.eat_op("**") => (None, self.binary()?),
                None => {
                    let key = self.expression()?;
                    self.expect_op(":")?;
                    (Some(key), self.expression()?)
                }
            };
            entries.push(entry);
            if self.at_name("for") || self.at_name("async") {
                return None;
            }
            if !self.eat_op(",") {
                self.expect_op("}")?;
                break;
            }
        }
        Some(Expr::Dict(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::super::lexer::tokenize;
    use super::*;

    fn parse(source: &str) -> Option<Expr> {
        first_expression(&tokenize(source)?)
    }

    #[test]
    fn python_syntax_errors_are_refused() {
        for bad in [
            "[f(a=1, 2)]",
            "[f(class=1)]",
            "[f(]",
            "[f() g()]",
            "[x for x in y]",
            "[f(a=1)] Done.",
            "[f(a=1)];;",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        for good in [
            "[f(1, a=-2, *x, **y)]",
            "[a.b(c=[1, (2,)], d={1: {2}})]\nx",
            "[f()];",
        ] {
            assert!(parse(good).is_some(), "{good}");
        }
        // Python's limits: 200 nested brackets, about 2991 nested unary operators.
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(&nested(200)).is_some());
        assert!(parse(&nested(201)).is_none());
        assert!(parse(&format!("{}1", "-".repeat(2991))).is_some());
        assert!(parse(&format!("{}1", "-".repeat(2992))).is_none());
        // Each display is read once, however deep.
        let braces = |n: usize| format!("{}{}", "{".repeat(n), "}".repeat(n));
        assert!(parse(&format!("[f(a={})]", braces(150))).is_some());
        assert!(parse("[f(a={1: 2, **x, 3: {4}})]").is_some());
        assert!(parse("[f(a={*x, 1})]").is_some());
    }
}
