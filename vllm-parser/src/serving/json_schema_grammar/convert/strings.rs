//! Strings, as xgrammar 0.2.8 writes them: a known `format`'s regex rules
//! (copied from xgrammar: [`formats`]), else a `pattern` (kept as a regex,
//! or a rule of literals for plain non-ASCII characters: [`pattern`]), else
//! the lengths' repetition of a character, else `basic_string`'s body.

use serde_json::{Map, Value};

use super::super::Unsupported;
use super::super::formats;
use super::super::grammar::{Body, Item, Rule};
use super::super::pattern;
use super::{Converter, count};

impl Converter<'_> {
    /// A string: a known `format` wins over a `pattern`, which wins over an
    /// unknown `format` (ignored) and the lengths.
    pub(super) fn string_schema(
        &mut self,
        map: &Map<String, Value>,
        name: &str,
    ) -> Result<Body, Unsupported> {
        if map.contains_key("format") && !unknown_format(map) {
            self.formatted_string(map, name)
        } else if map.contains_key("pattern") {
            self.patterned_string(map)
        } else if map.contains_key("format") {
            self.formatted_string(map, name)
        } else {
            self.string(map, name)
        }
    }

    /// A string with a `pattern`: the pattern's rule (xgrammar ignores the
    /// lengths).
    fn patterned_string(&mut self, map: &Map<String, Value>) -> Result<Body, Unsupported> {
        let min = count(map, "minLength")?.unwrap_or(0);
        if count(map, "maxLength")?.is_some_and(|max| max < min) {
            return Err(Unsupported::Keyword("minLength above maxLength".into()));
        }
        let pattern = map["pattern"]
            .as_str()
            .ok_or_else(|| Unsupported::Keyword(format!("pattern {}", map["pattern"])))?;
        self.quoted_pattern(pattern)
    }

    /// A JSON string matching `pattern` (a string's, a `patternProperties`
    /// key's): the pattern's rule between quotes.
    pub(super) fn quoted_pattern(&mut self, pattern: &str) -> Result<Body, Unsupported> {
        let quote = || Item::Lit("\"".into());
        Ok(Body::Choice(vec![vec![
            quote(),
            self.pattern(pattern)?,
            quote(),
        ]]))
    }

    /// The rule of a `pattern` (a string's, a `patternProperties` key's):
    /// a regex xgrammar keeps as it is, or one it turns into rules.
    pub(super) fn pattern(&mut self, pattern: &str) -> Result<Item, Unsupported> {
        if pattern::kept_as_regex(pattern) {
            return Ok(Item::Regex(pattern.to_owned()));
        }
        match pattern::literal_rules(pattern) {
            Some(rules) => Ok(Item::Ref(self.grammar.graft(rules)?)),
            None => Err(Unsupported::Keyword(format!("pattern {pattern:?}"))),
        }
    }

    fn string(&mut self, map: &Map<String, Value>, name: &str) -> Result<Body, Unsupported> {
        let min = count(map, "minLength")?.unwrap_or(0);
        let max = count(map, "maxLength")?;
        if min == 0 && max.is_none() {
            return Ok(Body::Choice(vec![vec![
                Item::Lit("\"".into()),
                Item::Ref("basic_string_sub".into()),
            ]]));
        }
        if max.is_some_and(|max| max < min) {
            return Err(Unsupported::Keyword("minLength above maxLength".into()));
        }
        const CHARACTER: &str = "[^\\\"\\\\\\r\\n]";
        let quote = || Item::Lit("\"".into());
        // xgrammar writes `{0, 0}`, `{0, 1}` and `{1, 1}` out.
        let middle = match (min, max) {
            (_, Some(0)) => vec![],
            (0, Some(1)) => vec![Item::Nested(vec![vec![], vec![Item::Raw(CHARACTER)]])],
            (1, Some(1)) => vec![Item::Raw(CHARACTER)],
            _ => {
                let characters = format!("{name}_characters");
                let index = self.grammar.add(characters.clone())?;
                self.grammar.rules[index].body = Body::Choice(vec![vec![Item::Raw(CHARACTER)]]);
                vec![Item::Repeat(characters, min, max.map_or(-1, |m| m as i64))]
            }
        };
        let mut sequence = vec![quote()];
        sequence.extend(middle);
        sequence.push(quote());
        Ok(Body::Choice(vec![sequence]))
    }

    /// A string with a `format`: a known one is its regex's rules (the
    /// lengths ignored, as xgrammar does), another one no constraint.
    fn formatted_string(
        &mut self,
        map: &Map<String, Value>,
        name: &str,
    ) -> Result<Body, Unsupported> {
        let format = map["format"]
            .as_str()
            .ok_or_else(|| Unsupported::Keyword(format!("format {}", map["format"])))?;
        let Some((_, rules)) = formats::FORMATS.iter().find(|(known, _)| *known == format) else {
            return self.string(map, name);
        };
        let min = count(map, "minLength")?.unwrap_or(0);
        if count(map, "maxLength")?.is_some_and(|max| max < min) {
            return Err(Unsupported::Keyword("minLength above maxLength".into()));
        }
        let rules = rules
            .lines()
            .map(|line| {
                let (name, body) = line.split_once(" ::= ").unwrap_or((line, ""));
                Rule {
                    name: name.to_owned(),
                    body: Body::Text(body.to_owned()),
                }
            })
            .collect();
        let root = self.grammar.graft(rules)?;
        Ok(Body::Choice(vec![vec![
            Item::Lit("\"".into()),
            Item::Ref(root),
            Item::Lit("\"".into()),
        ]]))
    }
}

/// Whether the schema's `format` is a string xgrammar has no regex for.
fn unknown_format(map: &Map<String, Value>) -> bool {
    map.get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| formats::FORMATS.iter().all(|(known, _)| *known != format))
}
