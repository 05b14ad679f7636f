//! Integers and numbers, as xgrammar 0.2.8 writes them: without bounds a
//! rule of their own (`…_digits` for a number's); with bounds the range's
//! regex made rules ([`range`], [`regex_rules`]) grafted under fresh names;
//! an integer's `multipleOf` a remainder automaton (no bounds) or the list
//! of its multiples (two bounds close enough), else ignored.

use serde_json::{Map, Value};

use super::super::Unsupported;
use super::super::grammar::{Body, Item};
use super::super::range::{self, End};
use super::super::regex::regex_rules;
use super::Converter;

/// The bounds of an integer or number schema.
const BOUNDS: [&str; 4] = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];

impl Converter<'_> {
    /// A number: with bounds or without (xgrammar checks `multipleOf`,
    /// then ignores it).
    pub(super) fn number_schema(
        &mut self,
        map: &Map<String, Value>,
        name: &str,
    ) -> Result<Body, Unsupported> {
        multiple_of(map)?;
        if BOUNDS.iter().any(|k| map.contains_key(*k)) {
            self.bounded_number(map)
        } else {
            self.number(name)
        }
    }

    fn number(&mut self, name: &str) -> Result<Body, Unsupported> {
        let digits = format!("{name}_digits");
        let index = self.grammar.add(digits.clone())?;
        self.grammar.rules[index].body = Body::Choice(vec![vec![Item::Raw("[0-9]")]]);
        let optional = |sequence: Vec<Item>| Item::Nested(vec![vec![], sequence]);
        Ok(Body::Choice(vec![vec![
            optional(vec![Item::Lit("-".into())]),
            Item::Nested(vec![
                vec![Item::Lit("0".into())],
                vec![Item::Raw("[1-9]"), Item::Raw("[0-9]*")],
            ]),
            optional(vec![
                Item::Lit(".".into()),
                Item::Repeat(digits.clone(), 1, -1),
            ]),
            optional(vec![
                Item::Raw("[eE]"),
                optional(vec![Item::Raw("[+\\-]")]),
                Item::Repeat(digits, 1, -1),
            ]),
        ]]))
    }

    /// An integer, within its bounds if it has any: the bounds' regex
    /// ([`range::integer_range_regex`]) made rules ([`regex_rules`]).
    pub(super) fn bounded_integer(
        &mut self,
        map: &Map<String, Value>,
        name: &str,
    ) -> Result<Body, Unsupported> {
        let multiple = multiple_of(map)?;
        let inclusive =
            |bound: Option<i64>, exclusive: Option<i64>, step: i64, pick: fn(i64, i64) -> i64| {
                let exclusive = exclusive
                    .map(|e| {
                        e.checked_add(step).ok_or_else(|| {
                            Unsupported::Keyword("an integer bound at the limit".into())
                        })
                    })
                    .transpose()?;
                Ok::<_, Unsupported>(match (bound, exclusive) {
                    (Some(a), Some(b)) => Some(pick(a, b)),
                    (a, b) => a.or(b),
                })
            };
        let start = inclusive(
            integer_bound(map, "minimum")?,
            integer_bound(map, "exclusiveMinimum")?,
            1,
            i64::max,
        )?;
        let end = inclusive(
            integer_bound(map, "maximum")?,
            integer_bound(map, "exclusiveMaximum")?,
            -1,
            i64::min,
        )?;
        // xgrammar keeps a whole `multipleOf` up to 1024, ignoring others.
        let multiple = multiple
            .filter(|m| m.fract() == 0.0 && *m <= MAX_MULTIPLE_OF as f64)
            .map(|m| m as i64);
        let (start, end) = match (start, end, multiple) {
            (None, None, Some(m)) => return self.multiple_of_integer(m, name),
            (None, None, None) => return Ok(integer()),
            (Some(start), Some(end), _) if start > end => {
                return Err(Unsupported::Keyword("an empty integer range".into()));
            }
            // Between two bounds at most `MAX_LISTED` apart, xgrammar lists
            // the multiples; otherwise (or beside one bound) it ignores
            // `multipleOf`.
            (Some(start), Some(end), Some(m))
                if i128::from(end) - i128::from(start) < MAX_LISTED as i128 =>
            {
                let listed: Vec<Vec<Item>> = (start..=end)
                    .filter(|v| v % m == 0)
                    .map(|v| vec![Item::Lit(v.to_string())])
                    .collect();
                if listed.is_empty() {
                    return Err(Unsupported::Keyword(
                        "an integer range without a multiple".into(),
                    ));
                }
                return Ok(Body::Choice(listed));
            }
            (start, end, _) => (start, end),
        };
        let rules = regex_rules(&range::integer_range_regex(start, end))?;
        let root = self.grammar.graft(rules)?;
        Ok(Body::Choice(vec![vec![Item::Ref(root)]]))
    }

    /// The integers that are multiples of `m` (a whole number): the states
    /// of the remainder of the digits read so far, as xgrammar writes them.
    fn multiple_of_integer(&mut self, m: i64, name: &str) -> Result<Body, Unsupported> {
        let m = m.unsigned_abs();
        let state = |k: u64| format!("{name}_multiple_of_{m}_mod_{k}");
        let digit = |d: u64| Item::Lit(d.to_string());
        for k in 0..m {
            let index = self.grammar.add(state(k))?;
            let mut alternatives = if k == 0 { vec![vec![]] } else { vec![] };
            alternatives
                .extend((0..10).map(|d| vec![digit(d), Item::Ref(state((10 * k + d) % m))]));
            self.grammar.rules[index].body = Body::Choice(alternatives);
        }
        Ok(Body::Choice(vec![
            vec![Item::Lit("0".into())],
            vec![
                Item::Nested(vec![vec![], vec![Item::Lit("-".into())]]),
                Item::Nested(
                    (1..10)
                        .map(|d| vec![digit(d), Item::Ref(state(d % m))])
                        .collect(),
                ),
            ],
        ]))
    }

    /// A number within bounds: the bounds' regex
    /// ([`range::number_range_regex`]) made rules ([`regex_rules`]).
    fn bounded_number(&mut self, map: &Map<String, Value>) -> Result<Body, Unsupported> {
        // The stricter bound wins; at a tie, the exclusive one.
        let end = |inclusive: &str, exclusive: &str, stricter: fn(f64, f64) -> bool| {
            let bound = |key: &str, exclusive: bool| {
                map.get(key)
                    .map(|v| match v.as_f64() {
                        Some(value) if value.is_finite() => Ok(End { value, exclusive }),
                        _ => Err(Unsupported::Keyword(format!("{key} {v}"))),
                    })
                    .transpose()
            };
            Ok::<_, Unsupported>(match (bound(inclusive, false)?, bound(exclusive, true)?) {
                (Some(i), Some(e)) if stricter(i.value, e.value) => Some(i),
                (Some(_), Some(e)) => Some(e),
                (i, e) => i.or(e),
            })
        };
        let start = end("minimum", "exclusiveMinimum", |i, e| i > e)?;
        let end = end("maximum", "exclusiveMaximum", |i, e| i < e)?;
        if start.is_none() && end.is_none() {
            return Err(Unsupported::Keyword("number bounds".into()));
        }
        let regex = range::number_range_regex(start, end)
            .ok_or_else(|| Unsupported::Keyword("an empty number range".into()))?;
        let rules = regex_rules(&regex)?;
        let root = self.grammar.graft(rules)?;
        Ok(Body::Choice(vec![vec![Item::Ref(root)]]))
    }
}

/// An integer bound (`minimum`, …): an `i64`, or a whole double strictly
/// within ±2^63 (xgrammar casts it; at ±2^63 and beyond it refuses).
fn integer_bound(map: &Map<String, Value>, key: &str) -> Result<Option<i64>, Unsupported> {
    let Some(value) = map.get(key) else {
        return Ok(None);
    };
    if let Some(v) = value.as_i64() {
        return Ok(Some(v));
    }
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    match value.as_f64() {
        Some(v) if value.is_f64() && v.fract() == 0.0 && v.abs() < LIMIT => Ok(Some(v as i64)),
        _ => Err(Unsupported::Keyword(format!("{key} {value}"))),
    }
}

/// The largest whole `multipleOf` xgrammar keeps for an integer (one rule
/// per remainder without bounds); it ignores larger ones.
const MAX_MULTIPLE_OF: u64 = 1024;

/// The most integers between two bounds among which xgrammar lists the
/// multiples of a `multipleOf`.
const MAX_LISTED: u64 = 10_000;

/// `multipleOf`, if any: a number above zero (xgrammar refuses others).
fn multiple_of(map: &Map<String, Value>) -> Result<Option<f64>, Unsupported> {
    match map.get("multipleOf") {
        None => Ok(None),
        Some(value) => match value.as_f64() {
            Some(m) if m > 0.0 && m.is_finite() => Ok(Some(m)),
            _ => Err(Unsupported::Keyword(format!("multipleOf {value}"))),
        },
    }
}

/// An integer, as a rule of its own.
fn integer() -> Body {
    Body::Choice(vec![
        vec![Item::Lit("0".into())],
        vec![
            Item::Nested(vec![vec![], vec![Item::Lit("-".into())]]),
            Item::Raw("[1-9]"),
            Item::Raw("[0-9]*"),
        ],
    ])
}
