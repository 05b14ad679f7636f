//! The grammar the converter builds, and its text as xgrammar 0.2.8's
//! printer writes it.
//!
//! A rule's body is a choice of sequences. A choice nested inside a sequence
//! ([`Item::Nested`]) or a regex there ([`Item::Regex`]) is moved to a rule of
//! its own when the grammar is printed ([`Grammar::lift`]): the new rule is
//! named after the rule holding it (`root_1`, `root_2`, … innermost first;
//! the first `_N` no rule has, as xgrammar's `GetNewRuleName`) and appended
//! after every rule, in the order the holding rules come. Rules of a grammar
//! of their own (a range regex's, a format's) are added under fresh names
//! the same way ([`Grammar::graft`]).

use std::collections::HashSet;

use super::Unsupported;
use super::escape::ebnf_literal;

/// `[ \n\r\t]*`: the whitespace between JSON tokens.
pub(super) const WS: &str = "[ \\n\\r\\t]*";

/// One element of a sequence.
#[derive(Debug, Clone)]
pub(super) enum Item {
    /// A string literal (its text, escaped when printed).
    Lit(String),
    /// Text printed as is (a character class, possibly starred).
    Raw(&'static str),
    /// Text printed as is, made at run time.
    Text(String),
    /// A reference to a rule.
    Ref(String),
    /// `rule{min, max}` (`max` -1: unbounded).
    Repeat(String, u64, i64),
    /// A choice inside a sequence: it gets a rule of its own.
    Nested(Vec<Vec<Item>>),
    /// `Regex("…", json_string=true)`: it gets a rule of its own.
    Regex(String),
}

/// A rule's body.
#[derive(Debug, Clone)]
pub(super) enum Body {
    /// A choice of sequences (an empty sequence is `""`).
    Choice(Vec<Vec<Item>>),
    /// `Regex("…", json_string=true)`.
    Regex(String),
    /// A body printed as is (rules copied from xgrammar's output).
    Text(String),
}

/// A named rule.
#[derive(Debug, Clone)]
pub(super) struct Rule {
    pub(super) name: String,
    pub(super) body: Body,
}

/// xgrammar's rules after its `basic_*` ones, in the order they were made.
#[derive(Debug, Default)]
pub(super) struct Grammar {
    pub(super) rules: Vec<Rule>,
    /// The rules (by index) followed by the lookahead xgrammar gives a
    /// JSON string's end (`basic_string_sub`'s).
    pub(super) lookahead: HashSet<usize>,
    names: HashSet<String>,
}

/// The rules every converted grammar starts with, as printed.
const BASIC_RULES: &str = r#"basic_escape ::= (([\"\\/bfnrt]) | ("u" [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9]))
basic_string_sub ::= (("\"") | ([^\0-\x1f\"\\\r\n] basic_string_sub) | ("\\" basic_escape basic_string_sub)) (=([ \n\r\t]* [,}\]:]))
basic_any ::= ((basic_number) | (basic_string) | (basic_boolean) | (basic_null) | (basic_array) | (basic_object))
basic_integer ::= (("0") | (basic_integer_1 [1-9] [0-9]*))
basic_number ::= ((basic_number_1 basic_number_2 basic_number_3 basic_number_5))
basic_string ::= (("\"" basic_string_sub))
basic_boolean ::= (("true") | ("false"))
basic_null ::= (("null"))
basic_array ::= (("[" [ \n\r\t]* basic_any basic_array_items{0, -1} [ \n\r\t]* "]") | ("[" [ \n\r\t]* "]"))
basic_object ::= (("{" [ \n\r\t]* basic_string [ \n\r\t]* ":" [ \n\r\t]* basic_any basic_object_properties{0, -1} [ \n\r\t]* "}") | ("{" [ \n\r\t]* "}"))
basic_number_digits ::= (([0-9]))
basic_array_items ::= (([ \n\r\t]* "," [ \n\r\t]* basic_any))
basic_object_properties ::= (([ \n\r\t]* "," [ \n\r\t]* basic_string [ \n\r\t]* ":" [ \n\r\t]* basic_any))
"#;

/// The rules lifted out of the `basic_*` ones, as printed.
const BASIC_LIFTED: &str = r#"basic_integer_1 ::= ("" | ("-"))
basic_number_1 ::= ("" | ("-"))
basic_number_2 ::= (("0") | ([1-9] [0-9]*))
basic_number_3 ::= ("" | ("." basic_number_digits{1, -1}))
basic_number_4 ::= ("" | ([+\-]))
basic_number_5 ::= ("" | ([eE] basic_number_4 basic_number_digits{1, -1}))
"#;

/// The names of the fixed rules.
const BASIC_NAMES: &[&str] = &[
    "basic_escape",
    "basic_string_sub",
    "basic_any",
    "basic_integer",
    "basic_number",
    "basic_string",
    "basic_boolean",
    "basic_null",
    "basic_array",
    "basic_object",
    "basic_number_digits",
    "basic_array_items",
    "basic_object_properties",
    "basic_integer_1",
    "basic_number_1",
    "basic_number_2",
    "basic_number_3",
    "basic_number_4",
    "basic_number_5",
];

/// The most rules a converted schema may make (lifted ones included).
const MAX_RULES: usize = 20_000;

impl Grammar {
    /// An empty grammar (the fixed rules' names taken).
    pub(super) fn new() -> Self {
        Self {
            rules: Vec::new(),
            lookahead: HashSet::new(),
            names: BASIC_NAMES.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    /// Make a rule named `name` (its body set later); its index.
    pub(super) fn add(&mut self, name: String) -> Result<usize, Unsupported> {
        if self.rules.len() >= MAX_RULES {
            return Err(Unsupported::TooLarge);
        }
        if !self.names.insert(name.clone()) {
            return Err(Unsupported::RuleNameClash(name));
        }
        self.rules.push(Rule {
            name,
            body: Body::Choice(Vec::new()),
        });
        Ok(self.rules.len() - 1)
    }

    /// Make a rule named `hint`, or `hint_N` if that is taken (xgrammar's
    /// `AddRuleWithHint`); its index and name.
    pub(super) fn add_fresh(&mut self, hint: &str) -> Result<(usize, String), Unsupported> {
        let name = self.fresh_name(hint);
        Ok((self.add(name.clone())?, name))
    }

    /// Move every nested choice and regex to a rule of its own.
    pub(super) fn lift(&mut self) -> Result<Vec<Rule>, Unsupported> {
        let mut lifted = Vec::new();
        for index in 0..self.rules.len() {
            let name = self.rules[index].name.clone();
            let Body::Choice(alternatives) = &mut self.rules[index].body else {
                continue;
            };
            let mut alternatives = std::mem::take(alternatives);
            for sequence in &mut alternatives {
                self.lift_sequence(&name, sequence, &mut lifted)?;
            }
            self.rules[index].body = Body::Choice(alternatives);
        }
        Ok(lifted)
    }

    fn lift_sequence(
        &mut self,
        name: &str,
        sequence: &mut [Item],
        lifted: &mut Vec<Rule>,
    ) -> Result<(), Unsupported> {
        for item in sequence.iter_mut() {
            let body = match item {
                Item::Nested(alternatives) => {
                    let mut alternatives = std::mem::take(alternatives);
                    for inner in &mut alternatives {
                        self.lift_sequence(name, inner, lifted)?;
                    }
                    Body::Choice(alternatives)
                }
                Item::Regex(pattern) => Body::Regex(std::mem::take(pattern)),
                _ => continue,
            };
            if lifted.len() + self.rules.len() >= MAX_RULES {
                return Err(Unsupported::TooLarge);
            }
            let new_name = self.fresh_name(name);
            self.names.insert(new_name.clone());
            *item = Item::Ref(new_name.clone());
            lifted.push(Rule {
                name: new_name,
                body,
            });
        }
        Ok(())
    }

    /// xgrammar's `GetNewRuleName`: `hint` if free, else `hint_N` for the
    /// first `N` from 1 that is.
    fn fresh_name(&self, hint: &str) -> String {
        if !self.names.contains(hint) {
            return hint.to_owned();
        }
        (1u64..)
            .map(|n| format!("{hint}_{n}"))
            .find(|name| !self.names.contains(name))
            .unwrap_or_default()
    }

    /// Add the rules of a grammar of their own (the first one its root, none
    /// holding a nested choice), each renamed to a fresh name in turn as
    /// xgrammar's sub-grammar adder does; the root's new name.
    pub(super) fn graft(&mut self, rules: Vec<Rule>) -> Result<String, Unsupported> {
        if self.rules.len() + rules.len() > MAX_RULES {
            return Err(Unsupported::TooLarge);
        }
        let mut renamed = std::collections::HashMap::new();
        for rule in &rules {
            let name = self.fresh_name(&rule.name);
            self.names.insert(name.clone());
            renamed.insert(rule.name.clone(), name);
        }
        let rename = |name: &mut String| {
            if let Some(new) = renamed.get(name.as_str()) {
                name.clone_from(new);
            }
        };
        let root = renamed[&rules[0].name].clone();
        for mut rule in rules {
            rename(&mut rule.name);
            match &mut rule.body {
                Body::Choice(alternatives) => {
                    for item in alternatives.iter_mut().flatten() {
                        match item {
                            Item::Ref(name) | Item::Repeat(name, ..) => rename(name),
                            _ => {}
                        }
                    }
                }
                Body::Text(text) => *text = rename_in_text(text, &renamed),
                Body::Regex(_) => {}
            }
            self.rules.push(rule);
        }
        Ok(root)
    }

    /// The grammar's text (`str(Grammar)`), lifting nested choices first.
    pub(super) fn print(mut self) -> Result<String, Unsupported> {
        let lifted = self.lift()?;
        let mut out = String::from(BASIC_RULES);
        for (index, rule) in self.rules.iter().enumerate() {
            print_rule(&mut out, rule);
            if self.lookahead.contains(&index) {
                out.pop();
                out.push_str(" (=([ \\n\\r\\t]* [,}\\]:]))\n");
            }
        }
        out.push_str(BASIC_LIFTED);
        for rule in &lifted {
            print_rule(&mut out, rule);
        }
        Ok(out)
    }
}

/// `text` (an EBNF body) with the rule names in `renamed` renamed; string
/// literals and character classes left as they are.
fn rename_in_text(text: &str, renamed: &std::collections::HashMap<String, String>) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        match bytes[at] {
            quote @ (b'"' | b'[') => {
                let close = if quote == b'"' { b'"' } else { b']' };
                at += 1;
                while at < bytes.len() && bytes[at] != close {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at = (at + 1).min(bytes.len());
                out.push_str(&text[start..at]);
            }
            b if b.is_ascii_alphabetic() || b == b'_' => {
                while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                    at += 1;
                }
                let name = &text[start..at];
                out.push_str(renamed.get(name).map_or(name, String::as_str));
            }
            _ => {
                let width = text[at..].chars().next().map_or(1, char::len_utf8);
                at += width;
                out.push_str(&text[start..at]);
            }
        }
    }
    out
}

fn print_rule(out: &mut String, rule: &Rule) {
    out.push_str(&rule.name);
    out.push_str(" ::= ");
    match &rule.body {
        Body::Text(text) => out.push_str(text),
        Body::Regex(pattern) => {
            out.push_str("Regex(\"");
            out.push_str(&ebnf_literal(pattern));
            out.push_str("\", json_string=true)");
        }
        Body::Choice(alternatives) => {
            out.push('(');
            for (i, sequence) in alternatives.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                if sequence.is_empty() {
                    out.push_str("\"\"");
                    continue;
                }
                out.push('(');
                for (j, item) in sequence.iter().enumerate() {
                    if j > 0 {
                        out.push(' ');
                    }
                    print_item(out, item);
                }
                out.push(')');
            }
            out.push(')');
        }
    }
    out.push('\n');
}

fn print_item(out: &mut String, item: &Item) {
    match item {
        Item::Lit(text) => {
            out.push('"');
            out.push_str(&ebnf_literal(text));
            out.push('"');
        }
        Item::Raw(text) => out.push_str(text),
        Item::Text(text) => out.push_str(text),
        Item::Ref(name) => out.push_str(name),
        Item::Repeat(name, min, max) => {
            out.push_str(name);
            out.push_str(&format!("{{{min}, {max}}}"));
        }
        // Lifted before printing.
        Item::Nested(_) | Item::Regex(_) => {}
    }
}
