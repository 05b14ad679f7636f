//! Whether xgrammar 0.2.8's `Grammar.from_json_schema(schema)` (strict mode,
//! as vLLM's `_json_compiles` calls it) succeeds, for schemas far beyond the
//! subset [`super::from_json_schema`] converts: the `beam` parser only asks
//! whether a schema compiles, and puts the schema itself in its tag.
//!
//! xgrammar first parses the whole schema into its own tree
//! (`SchemaParser`), refusing malformed or unsatisfiable keywords, then
//! writes rules from the tree, resolving each `$ref` it reaches and compiling
//! each `pattern`. This module repeats both walks without writing rules: the
//! parser's checks in its order of dispatch (`$ref`, `const`, `enum`,
//! `anyOf`, `oneOf`, `allOf`, `type`, object keywords, array keywords), the
//! `$ref`s the rules reach (not those inside an `allOf` of several schemas,
//! which xgrammar writes as any value), and the patterns. Written from
//! xgrammar's error messages and checked against xgrammar 0.2.8
//! (`scripts/gen_schema_compiles.py`, `tests/schema_compiles.rs`): this
//! crate's own code, as no Rust crate reproduces xgrammar's checks.
//!
//! A `pattern` (a string's, a `patternProperties` key, a `propertyNames`
//! pattern) is judged as xgrammar's converter reads it
//! ([`crate::serving::xgrammar_fsm_regex`]: its finite-state regex engine,
//! else `from_regex`'s converter).
//!
//! What it cannot tell is [`Unsupported`], never a guess: a `pattern` that
//! [`crate::serving::xgrammar_fsm_regex`] leaves undecided (very long or
//! deeply nested, a NUL, a repetition near xgrammar's unrolling limit),
//! counts beyond `i32` that xgrammar casts, a negative
//! `minLength`, `$ref`s under an object whose `properties` is empty, and
//! schemas nested deeper than
//! [`MAX_DEPTH`](super::MAX_DEPTH).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{MAX_DEPTH, Unsupported, formats::FORMATS};
use crate::serving::xgrammar_fsm_regex::json_pattern_compiles;

/// Why a walk stopped.
enum Stop {
    /// xgrammar raises.
    Refused,
    /// Outside what this module decides.
    Undecided(Unsupported),
}

type Check = Result<(), Stop>;

fn undecided(reason: &str) -> Stop {
    Stop::Undecided(Unsupported::Keyword(reason.to_owned()))
}

/// Whether xgrammar 0.2.8's `Grammar.from_json_schema(json.dumps(schema))`
/// succeeds: `Ok(true)` when it compiles, `Ok(false)` when it raises (a
/// malformed or unsatisfiable schema: an unknown `type`, `minimum` above
/// `maximum`, a `$ref` to nothing, …), or why this crate cannot tell. A
/// gateway may use it to refuse a schema vLLM's xgrammar backend would
/// refuse.
///
/// ```
/// use serde_json::json;
/// use vllm_parser::serving::json_schema_grammar::compiles;
///
/// assert_eq!(compiles(&json!({"type": "integer", "minimum": 5, "maximum": 1})), Ok(false));
/// let map = json!({"type": "object", "patternProperties": {"^a": {"type": "integer"}}});
/// assert_eq!(compiles(&map), Ok(true));
/// ```
pub fn compiles(schema: &Value) -> Result<bool, Unsupported> {
    let mut walk = Walk {
        root: schema,
        resolved: HashSet::new(),
        undecided: None,
    };
    match walk.parse(schema, None, Reach::Written, 0) {
        Err(Stop::Refused) => Ok(false),
        Err(Stop::Undecided(reason)) => Err(reason),
        Ok(()) => walk.undecided.map_or(Ok(true), Err),
    }
}

/// Whether xgrammar writes rules for a part of the schema (and so resolves
/// the `$ref`s in it), or only parses it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    Written,
    ParsedOnly,
    /// Not known: a `$ref` there is undecided.
    Unknown,
}

struct Walk<'a> {
    root: &'a Value,
    /// The `$ref`s resolved so far (xgrammar's `ref_cache_`).
    resolved: HashSet<String>,
    /// The first undecided part; the walk goes on, as a refusal elsewhere
    /// still decides.
    undecided: Option<Unsupported>,
}

/// picojson's reading of a number: `Some(Ok(i))` for an `int64`, `Some(Err(f))`
/// for a double, `None` for no number.
fn number(value: &Value) -> Option<Result<i64, f64>> {
    match value {
        Value::Number(n) => Some(n.as_i64().ok_or_else(|| n.as_f64().unwrap_or(f64::NAN))),
        _ => None,
    }
}

/// An `int64` count, or a refusal.
fn int64(value: &Value) -> Result<i64, Stop> {
    value.as_i64().ok_or(Stop::Refused)
}

/// A count xgrammar casts to `int`: undecided beyond its range.
fn int32(value: &Value) -> Result<i64, Stop> {
    let count = int64(value)?;
    if i32::try_from(count).is_err() {
        return Err(undecided("a count beyond 32 bits"));
    }
    Ok(count)
}

fn refuse_unless(condition: bool) -> Check {
    if condition {
        Ok(())
    } else {
        Err(Stop::Refused)
    }
}

impl Walk<'_> {
    /// Record an undecided part and go on.
    fn note(&mut self, check: Check) -> Check {
        match check {
            Err(Stop::Undecided(reason)) => {
                self.undecided.get_or_insert(reason);
                Ok(())
            }
            other => other,
        }
    }

    /// `SchemaParser::Parse` with `default_type` (`propertyNames` reads as
    /// strings).
    fn parse(
        &mut self,
        schema: &Value,
        default_type: Option<&str>,
        reach: Reach,
        depth: usize,
    ) -> Check {
        if depth > MAX_DEPTH {
            return Err(Stop::Undecided(Unsupported::TooDeep));
        }
        let object = match schema {
            Value::Bool(accepts) => return refuse_unless(*accepts),
            Value::Object(object) => object,
            _ => return Err(Stop::Refused),
        };
        let depth = depth + 1;
        if let Some(uri) = object.get("$ref") {
            let Value::String(uri) = uri else {
                return Err(Stop::Refused);
            };
            return match reach {
                Reach::Written => self.resolve(uri, depth),
                Reach::ParsedOnly => Ok(()),
                Reach::Unknown => {
                    let check = Err(undecided("a $ref xgrammar may not reach"));
                    self.note(check)
                }
            };
        }
        if object.contains_key("const") {
            return Ok(());
        }
        if let Some(values) = object.get("enum") {
            return refuse_unless(values.as_array().is_some_and(|v| !v.is_empty()));
        }
        for union in ["anyOf", "oneOf"] {
            if let Some(options) = object.get(union) {
                let options = options.as_array().ok_or(Stop::Refused)?;
                return options
                    .iter()
                    .try_for_each(|option| self.parse(option, None, reach, depth));
            }
        }
        if let Some(schemas) = object.get("allOf") {
            let schemas = schemas.as_array().ok_or(Stop::Refused)?;
            // Several schemas are written as any value: their `$ref`s are never resolved.
            let reach = if schemas.len() > 1 {
                Reach::ParsedOnly
            } else {
                reach
            };
            return schemas
                .iter()
                .try_for_each(|schema| self.parse(schema, None, reach, depth));
        }
        match object.get("type") {
            Some(Value::Array(types)) => {
                if types.is_empty() {
                    // xgrammar parses the schema again without `type`.
                    return self.untyped(object, reach, depth);
                }
                let mut seen = HashSet::new();
                for t in types {
                    let Value::String(t) = t else {
                        return Err(Stop::Refused);
                    };
                    // A repeated type reads the same: walked once.
                    if seen.insert(t) {
                        self.typed(object, t, reach, depth)?;
                    }
                }
                Ok(())
            }
            Some(Value::String(t)) => self.typed(object, t, reach, depth),
            Some(_) => Err(Stop::Refused),
            None => match default_type {
                Some(t) => self.typed(object, t, reach, depth),
                None => self.untyped(object, reach, depth),
            },
        }
    }

    /// A schema without `type`: an object or an array by its keywords,
    /// otherwise any value.
    fn untyped(&mut self, object: &Map<String, Value>, reach: Reach, depth: usize) -> Check {
        let has = |keys: [&str; 3]| keys.iter().any(|k| object.contains_key(*k));
        if has([
            "properties",
            "additionalProperties",
            "unevaluatedProperties",
        ]) {
            self.object(object, reach, depth)
        } else if has(["items", "prefixItems", "unevaluatedItems"]) {
            self.array(object, reach, depth)
        } else {
            Ok(())
        }
    }

    fn typed(&mut self, object: &Map<String, Value>, t: &str, reach: Reach, depth: usize) -> Check {
        match t {
            "integer" => integer(object),
            "number" => number_bounds(object),
            "string" => {
                let check = string(object, reach);
                self.note(check)
            }
            "boolean" | "null" => Ok(()),
            "array" => self.array(object, reach, depth),
            "object" => self.object(object, reach, depth),
            _ => Err(Stop::Refused),
        }
    }

    /// `ResolveRef`: a pointer into the document, its segments split at `/`
    /// (empty ones skipped, no `~` unescaping); a `$ref` outside the document
    /// is any value.
    fn resolve(&mut self, uri: &str, depth: usize) -> Check {
        if !self.resolved.insert(uri.to_owned()) {
            return Ok(());
        }
        let root = self.root;
        let target = if uri == "#" {
            root
        } else if let Some(path) = uri.strip_prefix("#/") {
            let mut current = root;
            for part in path.split('/').filter(|p| !p.is_empty()) {
                current = current
                    .as_object()
                    .and_then(|o| o.get(part))
                    .ok_or(Stop::Refused)?;
            }
            current
        } else {
            return Ok(());
        };
        self.parse(target, None, Reach::Written, depth)
    }

    /// `ParseArray`, in strict mode: without `items` no item beyond the
    /// `prefixItems` is allowed.
    fn array(&mut self, object: &Map<String, Value>, reach: Reach, depth: usize) -> Check {
        let mut prefix = 0;
        if let Some(items) = object.get("prefixItems") {
            for item in items.as_array().ok_or(Stop::Refused)? {
                if !item.is_object() {
                    return Err(Stop::Refused);
                }
                self.parse(item, None, reach, depth)?;
                prefix += 1;
            }
        }
        let more = match object
            .get("items")
            .or_else(|| object.get("unevaluatedItems"))
        {
            Some(Value::Bool(false)) => false,
            Some(items @ (Value::Bool(true) | Value::Object(_))) => {
                self.parse(items, None, reach, depth)?;
                true
            }
            Some(_) => return Err(Stop::Refused),
            None => false,
        };
        let mut min = match object.get("minItems") {
            Some(count) => int64(count)?.max(0),
            None => 0,
        };
        if let Some(count) = object.get("minContains") {
            min = min.max(int64(count)?);
        }
        let max = match object.get("maxItems") {
            Some(count) => {
                let count = int64(count)?;
                refuse_unless(count >= 0)?;
                Some(count).filter(|&c| c <= i64::from(i32::MAX))
            }
            None => None,
        };
        refuse_unless(min <= i64::from(i32::MAX))?;
        if let Some(max) = max {
            refuse_unless(min <= max && max >= prefix)?;
        }
        refuse_unless(more || prefix >= min)
    }

    /// `ParseObject`, in strict mode: without `additionalProperties` /
    /// `unevaluatedProperties` no property beyond `properties` is allowed.
    fn object(&mut self, object: &Map<String, Value>, reach: Reach, depth: usize) -> Check {
        let max = match object.get("maxProperties") {
            Some(count) => Some(int32(count)?),
            None => None,
        };
        let properties = match object.get("properties") {
            Some(map) => Some(map.as_object().ok_or(Stop::Refused)?),
            None => None,
        };
        let patterns = match object.get("patternProperties") {
            Some(map) => Some(map.as_object().ok_or(Stop::Refused)?),
            None => None,
        };
        let reaches = ObjectReach::of(
            max,
            properties.map(Map::is_empty),
            patterns.is_some_and(|p| !p.is_empty()),
        )
        .within(reach);
        for value in properties.into_iter().flat_map(Map::values) {
            self.parse(value, None, reaches.properties, depth)?;
        }
        let mut required = HashSet::new();
        if let Some(names) = object.get("required") {
            for name in names.as_array().ok_or(Stop::Refused)? {
                required.insert(name.as_str().ok_or(Stop::Refused)?);
            }
        }
        for (pattern, value) in patterns.into_iter().flatten() {
            self.parse(value, None, reaches.patterns, depth)?;
            if reaches.patterns != Reach::ParsedOnly {
                let check = regex(pattern);
                self.note(check)?;
            }
        }
        if let Some(names) = object.get("propertyNames") {
            let typed = names.as_object().ok_or(Stop::Refused)?.get("type");
            refuse_unless(typed.and_then(Value::as_str).is_none_or(|t| t == "string"))?;
            self.parse(names, Some("string"), reaches.names, depth)?;
        }
        let more = match object.get("additionalProperties") {
            Some(Value::Bool(allowed)) => *allowed,
            Some(schema) => {
                self.parse(schema, None, reaches.others, depth)?;
                true
            }
            None => match object.get("unevaluatedProperties") {
                Some(Value::Bool(allowed)) => *allowed,
                Some(schema) => {
                    self.parse(schema, None, reaches.others, depth)?;
                    true
                }
                None => false,
            },
        };
        let min = match object.get("minProperties") {
            Some(count) => int32(count)?,
            None => 0,
        };
        refuse_unless(min >= 0 && max.is_none_or(|m| m >= 0))?;
        if let Some(max) = max {
            refuse_unless(min <= max && required.len() as i64 <= max)?;
        }
        let keyed = patterns.is_some_and(|p| !p.is_empty()) || object.contains_key("propertyNames");
        let named = properties.map_or(0, Map::len) as i64;
        refuse_unless(keyed || more || min <= named)
    }
}

/// Which parts of an object schema xgrammar writes rules for (checked
/// against xgrammar 0.2.8): nothing under `maxProperties: 0`; beside
/// `properties`, the properties, `patternProperties` and the other
/// properties' schema, not `propertyNames`; without `properties`, the
/// `patternProperties` alone if there are any, otherwise `propertyNames`
/// and the other properties' schema. An empty `properties` is not known.
struct ObjectReach {
    properties: Reach,
    patterns: Reach,
    names: Reach,
    /// `additionalProperties` / `unevaluatedProperties`.
    others: Reach,
}

impl ObjectReach {
    /// `properties_empty`: `None` without `properties`.
    fn of(max: Option<i64>, properties_empty: Option<bool>, patterns: bool) -> Self {
        use Reach::{ParsedOnly, Unknown, Written};
        let (properties, patterns, names, others) = match (max, properties_empty) {
            (Some(0), _) => (ParsedOnly, ParsedOnly, ParsedOnly, ParsedOnly),
            (_, Some(false)) => (Written, Written, ParsedOnly, Written),
            (_, Some(true)) => (Written, Unknown, Unknown, Unknown),
            (_, None) if patterns => (Written, Written, ParsedOnly, ParsedOnly),
            (_, None) => (Written, Written, Written, Written),
        };
        Self {
            properties,
            patterns,
            names,
            others,
        }
    }

    /// The reaches inside a part reached as `outer`.
    fn within(self, outer: Reach) -> Self {
        let inner = |reach: Reach| match (outer, reach) {
            (Reach::Written, reach) | (_, reach @ Reach::ParsedOnly) => reach,
            (Reach::ParsedOnly, _) => Reach::ParsedOnly,
            (Reach::Unknown, _) => Reach::Unknown,
        };
        Self {
            properties: inner(self.properties),
            patterns: inner(self.patterns),
            names: inner(self.names),
            others: inner(self.others),
        }
    }
}

/// `ParseInteger`: whole bounds strictly inside `i64` (as xgrammar reads
/// doubles), a non-empty range, and a range holding a multiple of a
/// `multipleOf` xgrammar keeps.
fn integer(object: &Map<String, Value>) -> Check {
    let multiple = match object.get("multipleOf").map(number) {
        None => None,
        Some(None) => return Err(Stop::Refused),
        Some(Some(value)) => {
            let value = value.map_or_else(|f| f, |i| i as f64);
            refuse_unless(value > 0.0)?;
            // Fractional or larger than 1024: ignored (a warning).
            (value.fract() == 0.0 && value <= 1024.0).then_some(value as i64)
        }
    };
    let bound = |key: &str| -> Result<Option<i64>, Stop> {
        match object.get(key).map(number) {
            None => Ok(None),
            Some(None) => Err(Stop::Refused),
            Some(Some(Ok(i))) => Ok(Some(i)),
            Some(Some(Err(f))) => {
                // 2^63 as a double is beyond `int64`; so is -2^63 here.
                const LIMIT: f64 = 9_223_372_036_854_775_808.0;
                refuse_unless(f.fract() == 0.0 && f > -LIMIT && f < LIMIT)?;
                Ok(Some(f as i64))
            }
        }
    };
    let (minimum, maximum) = (bound("minimum")?, bound("maximum")?);
    let exclusive_minimum = bound("exclusiveMinimum")?;
    refuse_unless(exclusive_minimum != Some(i64::MAX))?;
    let exclusive_maximum = bound("exclusiveMaximum")?;
    refuse_unless(exclusive_maximum != Some(i64::MIN))?;
    let start = match (minimum, exclusive_minimum.map(|e| e + 1)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let end = match (maximum, exclusive_maximum.map(|e| e - 1)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let (low, high) = (start.unwrap_or(i64::MIN), end.unwrap_or(i64::MAX));
    refuse_unless(low <= high)?;
    if let (Some(multiple), Some(low), Some(high)) = (multiple, start, end) {
        // xgrammar ignores `multipleOf` over a range wider than 10 000.
        if i128::from(high) - i128::from(low) < 10_000 {
            refuse_unless((low..=high).any(|v| v % multiple == 0))?;
        }
    }
    Ok(())
}

/// `ParseNumber`: numeric bounds whose range is not empty, a positive
/// `multipleOf` (otherwise ignored).
fn number_bounds(object: &Map<String, Value>) -> Check {
    let value = |key: &str| -> Result<Option<f64>, Stop> {
        match object.get(key).map(number) {
            None => Ok(None),
            Some(None) => Err(Stop::Refused),
            Some(Some(n)) => Ok(Some(n.map_or_else(|f| f, |i| i as f64))),
        }
    };
    if let Some(multiple) = value("multipleOf")? {
        refuse_unless(multiple > 0.0)?;
    }
    let (minimum, maximum) = (value("minimum")?, value("maximum")?);
    let (exclusive_minimum, exclusive_maximum) =
        (value("exclusiveMinimum")?, value("exclusiveMaximum")?);
    let empty = |low: Option<f64>, high: Option<f64>, strict: bool| match (low, high) {
        (Some(low), Some(high)) => {
            if strict {
                low >= high
            } else {
                low > high
            }
        }
        _ => false,
    };
    refuse_unless(
        !empty(minimum, maximum, false)
            && !empty(minimum, exclusive_maximum, true)
            && !empty(exclusive_minimum, maximum, true)
            && !empty(exclusive_minimum, exclusive_maximum, true),
    )
}

/// `ParseString`, then the rules: a `format` xgrammar knows holds the string
/// (a `pattern` beside it is not read); otherwise a `pattern` is compiled
/// where xgrammar writes the string's rules.
fn string(object: &Map<String, Value>, reach: Reach) -> Check {
    let format = match object.get("format") {
        Some(Value::String(format)) => Some(format.as_str()),
        Some(_) => return Err(Stop::Refused),
        None => None,
    };
    let pattern = match object.get("pattern") {
        Some(Value::String(pattern)) => Some(pattern.as_str()),
        Some(_) => return Err(Stop::Refused),
        None => None,
    };
    let min = match object.get("minLength") {
        Some(count) => {
            let count = int64(count)?;
            refuse_unless(count <= i64::from(i32::MAX))?;
            count
        }
        None => 0,
    };
    if let Some(count) = object.get("maxLength") {
        let max = int64(count)?;
        // Beyond `int32`, or -1: no bound.
        if max <= i64::from(i32::MAX) && max != -1 {
            refuse_unless(min <= max)?;
        }
    }
    if min < 0 {
        return Err(undecided("a negative minLength"));
    }
    let known_format = format.is_some_and(|f| FORMATS.iter().any(|(name, _)| *name == f));
    match pattern {
        Some(pattern) if !known_format && reach != Reach::ParsedOnly => regex(pattern),
        _ => Ok(()),
    }
}

/// A `pattern` xgrammar compiles, as its JSON-schema converter reads one
/// ([`json_pattern_compiles`]).
fn regex(pattern: &str) -> Check {
    match json_pattern_compiles(pattern) {
        Some(true) => Ok(()),
        Some(false) => Err(Stop::Refused),
        None => Err(undecided("a pattern xgrammar_fsm_regex leaves undecided")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refusals_and_acceptances_follow_xgrammar() {
        for (schema, expected) in [
            (
                json!({"type": "object", "properties": {"x": {"type": "number", "minimum": 0.5}}, "patternProperties": {"^y": {"type": "string"}}}),
                true,
            ),
            (json!({"type": "foo"}), false),
            (json!({"$ref": "#/$defs/missing"}), false),
            (
                json!({"allOf": [{"$ref": "#/$defs/missing"}, {"type": "string"}]}),
                true,
            ),
            (json!({"type": "array", "minItems": 1}), false),
            (json!({"type": "array", "items": {}, "minItems": 1}), true),
            (json!({"type": "object", "minProperties": 1}), false),
            (json!({"type": "integer", "minimum": 9.3e18}), false),
            (
                json!({"type": "integer", "multipleOf": 7, "minimum": 1, "maximum": 6}),
                false,
            ),
            (
                json!({"type": "string", "format": "email", "pattern": "(?=x"}),
                true,
            ),
            (json!({"type": "object", "required": [1]}), false),
            (json!({"$ref": "#a"}), true),
            (json!(false), false),
        ] {
            assert_eq!(compiles(&schema), Ok(expected), "{schema}");
        }
        assert_eq!(
            compiles(&json!({"type": "string", "pattern": "(?=x)"})),
            Ok(true)
        );
        assert_eq!(
            compiles(&json!({"type": "string", "pattern": "[a-"})),
            Ok(false)
        );
    }

    #[test]
    fn hostile_schemas_are_bounded() {
        let mut deep = json!({"type": "string"});
        for _ in 0..1000 {
            deep = json!({"type": ["object", "object", "array"], "properties": {"a": deep}});
        }
        assert_eq!(compiles(&deep), Err(Unsupported::TooDeep));
        let cyclic = json!({"$ref": "#/$defs/a", "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#"}]}}});
        assert_eq!(compiles(&cyclic), Ok(true));
        let extreme = json!({"type": "integer", "exclusiveMinimum": -9223372036854775807_i64, "maximum": 9223372036854775807_i64, "multipleOf": 3});
        assert_eq!(compiles(&extreme), Ok(true));
    }
}
