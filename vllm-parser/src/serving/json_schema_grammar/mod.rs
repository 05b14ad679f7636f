//! JSON schema to the EBNF text of xgrammar 0.2.8's
//! `str(xgr.Grammar.from_json_schema(schema))` (default options: any
//! whitespace, strict mode), for a subset of JSON Schema.
//!
//! This is this crate's own implementation, written from the grammars
//! xgrammar 0.2.8 prints and checked against them
//! (`scripts/gen_cohere_tool_grammars.py`, `tests/cohere_tool_grammars.rs`);
//! vLLM 0.33.0 embeds that text in the Cohere Command tools structural tag.
//! Anything outside the subset is an [`Unsupported`] error, never a guess.
//!
//! Schemas are read as xgrammar's `SchemaParser` reads them: `$ref`,
//! `const`, `enum`, `anyOf`, `oneOf`, `allOf` in turn, the first present
//! deciding alone (the other keywords ignored); else `type` (without one:
//! an object if `properties` / `additionalProperties` is there, an array if
//! `items` is, else any value), each type reading its own keywords and
//! ignoring all others (`maxLength` on an integer, `minimum` without a
//! type…). A schema whose key (module `reading`) was read before is the
//! first one's: two schemas that differ only in a property named `title`
//! or in the order of their properties get the rules of whichever xgrammar
//! read first.
//!
//! The subset: `true`; `{}`; `type` a JSON type or a list of them;
//! strings with `minLength` / `maxLength`, or with a `pattern` xgrammar keeps
//! as a regex (printable ASCII in a common regex syntax: module `pattern`; the
//! lengths are then ignored, as xgrammar does) or that is plain characters
//! some beyond ASCII (a rule of literals), or with a `format` (beside a
//! `pattern` too: a known format wins; the 14
//! xgrammar knows are their regexes' rules, copied from xgrammar: module
//! `formats`; others are ignored); integers with
//! or without `minimum` / `maximum` / `exclusiveMinimum` /
//! `exclusiveMaximum` (whole numbers within ±2^63; xgrammar's range regex
//! made rules: modules `range`,
//! `regex`), and with a `multipleOf` (a whole one up to 1024: without bounds
//! a remainder automaton, between two bounds at most 10 000 integers apart
//! the list of the multiples, otherwise ignored, as is any other
//! `multipleOf`); numbers without bounds or with any finite bounds
//! (xgrammar's float range regex on its grid of six decimals: bounds
//! rounded inwards, magnitudes past `i64` written out in full);
//! booleans; `null`; arrays with `items` (else `unevaluatedItems`),
//! `prefixItems` (module `convert::tuple`), `minItems` (raised by
//! `minContains`), `maxItems`; objects with
//! `properties`, `required` and any `additionalProperties` (else
//! `unevaluatedProperties`: the values of other keys; other keys: a
//! string that is none of the properties' names, xgrammar's trie of their
//! bytes) or `patternProperties` / `propertyNames` (their entries are the
//! other keys then: module `convert::keyed`), and any `minProperties` /
//! `maxProperties` (xgrammar's rules per number of entries written: module
//! `convert::counted`), or without `properties` (a map, with any
//! `minProperties` / `maxProperties`: the entries after the first repeated
//! as xgrammar repeats them), or with `patternProperties` (patterns as for
//! strings; `additionalProperties` and `propertyNames` then ignored) or
//! `propertyNames` (a schema for the keys, `additionalProperties` for the
//! values), `required` ignored, with any `minProperties` /
//! `maxProperties`; `enum` / `const` of any JSON
//! values (numbers other than `i64`s written as picojson writes doubles);
//! `anyOf` / `oneOf` (xgrammar writes both as a choice, an empty one as
//! `""`); `allOf` (one schema: its body; several or none: any value, as
//! xgrammar does, each of them still converted to check it); `$ref` to
//! `#/PATH` of the document (`#/$defs/NAME`, `#/definitions/NAME`, or any
//! path of its keys, unescaped as xgrammar leaves them; the rule named after
//! the path's letters, `_`, `-` and `.`, as xgrammar names it), recursion
//! included, to `#` (the root rule), or to anything else (xgrammar warns:
//! any value, a rule `ref`).
//!
//! Outside it, among others: integer bounds that are not whole numbers
//! (xgrammar refuses them) or at ±2^63 and beyond, empty ranges (xgrammar
//! refuses them), `pattern`s xgrammar turns into rules other than plain
//! characters, a `$ref` path of digits alone, and a schema with a part of
//! the same key (xgrammar keeps the schema under the key, the part in
//! place).

mod compiles;
mod convert;
mod escape;
mod formats;
mod grammar;
mod pattern;
mod range;
mod reading;
mod regex;

use serde_json::Value;

pub use compiles::compiles;

/// The deepest schema nesting converted (deeper is [`Unsupported::TooDeep`]).
pub(crate) const MAX_DEPTH: usize = 128;

/// vLLM's `MAX_STRUCTURED_OUTPUT_JSON_NESTING`.
pub(crate) const MAX_JSON_NESTING: usize = 64;

/// vLLM's `_exceeds_json_nesting(spec, limit)` for a schema given as an
/// object (an empty or non-object one is never checked): whether objects and
/// arrays nest more than `limit` levels below it.
pub(crate) fn exceeds_json_nesting(spec: &Value, limit: usize) -> bool {
    let Value::Object(map) = spec else {
        return false;
    };
    if map.is_empty() {
        return false;
    }
    let mut level: Vec<&Value> = vec![spec];
    for _ in 0..limit {
        level = level
            .into_iter()
            .flat_map(|node| -> Box<dyn Iterator<Item = &Value>> {
                match node {
                    Value::Object(map) => Box::new(map.values()),
                    Value::Array(items) => Box::new(items.iter()),
                    _ => Box::new(std::iter::empty()),
                }
            })
            .filter(|child| child.is_object() || child.is_array())
            .collect();
        if level.is_empty() {
            return false;
        }
    }
    true
}

/// Why a schema is outside the subset this crate converts exactly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    /// A keyword (or value) the converter does not reproduce.
    #[error("unsupported JSON schema: {0}")]
    Keyword(String),
    /// Nested deeper than this converter follows.
    #[error("JSON schema nested too deeply to convert")]
    TooDeep,
    /// More rules than this converter makes.
    #[error("JSON schema grammar too large")]
    TooLarge,
    /// Two rules would get the same name (xgrammar's renaming is not reproduced).
    #[error("grammar rule name {0:?} made twice")]
    RuleNameClash(String),
}

/// `str(xgr.Grammar.from_json_schema(json.dumps(schema)))` for a schema
/// document (an object; its top-level `$defs` / `definitions` are where its
/// `$ref`s point), or why it is outside the subset.
pub fn from_json_schema(schema: &Value) -> Result<String, Unsupported> {
    match schema {
        Value::Object(document) => convert::Converter::new(document).convert(),
        _ => Err(Unsupported::Keyword(
            "a document that is not an object".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The rules after the fixed `basic_*` ones and before their lifted ones.
    fn own_rules(grammar: &str) -> Vec<&str> {
        grammar
            .lines()
            .filter(|l| !l.starts_with("basic_"))
            .collect()
    }

    #[test]
    fn rules_are_named_and_ordered_as_xgrammar_prints_them() {
        let grammar = from_json_schema(&json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "description": "ignored"},
                "b": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
                "c": {"type": "integer", "nullable": true},
            },
            "required": ["b"],
        }))
        .unwrap();
        assert_eq!(
            own_rules(&grammar),
            [
                r#"root ::= (("{" [ \n\r\t]* root_1 [ \n\r\t]* "}"))"#,
                r#"root_prop_1 ::= (("[" [ \n\r\t]* basic_integer root_prop_1_items{0, 2} [ \n\r\t]* "]"))"#,
                r#"root_prop_1_items ::= (([ \n\r\t]* "," [ \n\r\t]* basic_integer))"#,
                r#"root_prop_2 ::= (("0") | (root_prop_2_1 [1-9] [0-9]*))"#,
                r#"root_part_1 ::= ("" | ([ \n\r\t]* "," [ \n\r\t]* "\"c\"" [ \n\r\t]* ":" [ \n\r\t]* root_prop_2))"#,
                r#"root_part_0 ::= (([ \n\r\t]* "," [ \n\r\t]* "\"b\"" [ \n\r\t]* ":" [ \n\r\t]* root_prop_1 root_part_1))"#,
                r#"root_1 ::= (("\"a\"" [ \n\r\t]* ":" [ \n\r\t]* basic_string root_part_0) | ("\"b\"" [ \n\r\t]* ":" [ \n\r\t]* root_prop_1 root_part_1))"#,
                r#"root_prop_2_1 ::= ("" | ("-"))"#,
            ]
        );
    }

    #[test]
    fn a_ref_rule_is_found_again_by_its_schema() {
        let grammar = from_json_schema(&json!({
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/S"},
                "b": {"type": "string", "title": "same once annotations go"},
            },
            "required": ["a", "b"],
            "$defs": {"S": {"type": "string"}},
        }))
        .unwrap();
        assert!(
            grammar
                .contains("root_prop_0 ::= ((defs_S))\ndefs_S ::= ((\"\\\"\" basic_string_sub))\n")
        );
        assert!(grammar.contains("\"\\\"b\\\"\" [ \\n\\r\\t]* \":\" [ \\n\\r\\t]* defs_S))"));
    }

    #[test]
    fn bounds_other_keys_and_floats_are_written_as_xgrammar_writes_them() {
        let cases = [
            (
                json!({"type": "integer", "minimum": -37, "maximum": 12}),
                vec![
                    r#"root ::= ((root_1))"#,
                    r#"root_1 ::= (("-" root_1_1) | ("0") | ([1-9]) | ("1" [0-2]))"#,
                    r#"root_1_1 ::= (([1-9]) | ("1" [0-9]) | ("2" [0-9]) | ("3" [0-7]))"#,
                ],
            ),
            (
                json!({"type": "number", "minimum": 3, "maximum": 3}),
                vec![
                    r#"root ::= ((root_1))"#,
                    r#"root_1 ::= (("3" root_2))"#,
                    r#"root_1_1 ::= (("0"))"#,
                    r#"root_2 ::= ("" | ("." root_1_1{1, 6}))"#,
                ],
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}},
                       "additionalProperties": true}),
                vec![
                    r#"root ::= (("{" [ \n\r\t]* root_1 [ \n\r\t]* "}") | ("{" [ \n\r\t]* "}"))"#,
                    r#"root_addl ::= ((basic_number) | (basic_string) | (basic_boolean) | (basic_null) | (basic_array) | (basic_object))"#,
                    r#"root_addl_key ::= (("\"" root_addl_key_2)) (=([ \n\r\t]* [,}\]:]))"#,
                    r#"root_additional_properties ::= (([ \n\r\t]* "," [ \n\r\t]* root_addl_key [ \n\r\t]* ":" [ \n\r\t]* root_addl))"#,
                    r#"root_part_0 ::= ((root_additional_properties{0, -1}))"#,
                    r#"root_1 ::= (("\"a\"" [ \n\r\t]* ":" [ \n\r\t]* basic_string root_part_0) | (root_addl_key [ \n\r\t]* ":" [ \n\r\t]* root_addl root_part_0))"#,
                    r#"root_addl_key_1 ::= (([^\0-\x1f\"\\\r\n] basic_string_sub) | ("\\" basic_escape basic_string_sub))"#,
                    r#"root_addl_key_2 ::= (("\"") | ([^\0-\x1f\"\\\r\na] basic_string_sub) | ("\\" basic_escape basic_string_sub) | ("a" root_addl_key_1))"#,
                ],
            ),
            (
                json!({"enum": [1.5, 3.0, -0.0, 1e20, 0.1]}),
                vec![
                    r#"root ::= (("1.5") | ("3") | ("-0") | ("1e+20") | ("0.10000000000000001"))"#,
                ],
            ),
            (
                json!({"type": "string", "pattern": "^\\d{3}-\\w+(a|b)?$"}),
                vec![
                    r#"root ::= (("\"" root_1 "\""))"#,
                    r#"root_1 ::= Regex("^\\d{3}-\\w+(a|b)\?$", json_string=true)"#,
                ],
            ),
        ];
        for (schema, expected) in cases {
            let grammar = from_json_schema(&schema).unwrap();
            assert_eq!(own_rules(&grammar), expected, "{schema}");
        }
    }

    #[test]
    fn a_schema_read_again_gets_the_rules_of_the_first_one_read() {
        // xgrammar's key drops a property named `description` and sorts
        // properties: `T` (read when `a` is converted) is taken for `b`
        // (read with the document), rules and all, and `b` is `T`'s rule.
        let x = json!({"type": "integer"});
        let y = json!({"type": "string"});
        for (target, copy, first) in [
            (
                json!({"x": x}),
                json!({"description": y, "x": x}),
                "description",
            ),
            (json!({"x": x, "y": y}), json!({"y": y, "x": x}), "y"),
        ] {
            let schema = json!({
                "type": "object",
                "properties": {
                    "a": {"$ref": "#/$defs/T"},
                    "b": {"type": "object", "properties": copy},
                },
                "$defs": {"T": {"type": "object", "properties": target}},
            });
            let grammar = from_json_schema(&schema).unwrap();
            let rule = |name: &str| {
                grammar
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{name} ::= ")))
                    .unwrap_or_default()
                    .to_owned()
            };
            assert!(
                rule("defs_T_1").starts_with(&format!(r#"(("\"{first}\"""#)),
                "{grammar}"
            );
            assert!(
                rule("root_1").ends_with(r#"":" [ \n\r\t]* defs_T))"#),
                "{grammar}"
            );
        }
    }

    #[test]
    fn map_entries_are_counted_as_xgrammar_counts_them() {
        let map = |min: Option<u64>, max: Option<u64>| {
            let mut schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
            if let Some(min) = min {
                schema["minProperties"] = min.into();
            }
            if let Some(max) = max {
                schema["maxProperties"] = max.into();
            }
            from_json_schema(&schema).unwrap()
        };
        let entry = r#"basic_string [ \n\r\t]* ":" [ \n\r\t]* basic_integer"#;
        let open = r#"("{" [ \n\r\t]* "}")"#;
        assert!(map(Some(0), Some(0)).contains(&format!("root ::= ({open})")));
        assert!(map(Some(1), Some(1)).contains(&format!(
            r#"root ::= (("{{" [ \n\r\t]* {entry} [ \n\r\t]* "}}"))"#
        )));
        assert!(map(None, Some(2)).contains(&format!(
            r#"root ::= (("{{" [ \n\r\t]* {entry} root_1 [ \n\r\t]* "}}") | {open})"#
        )));
        assert!(map(Some(3), None).contains(&format!(
            r#"root ::= (("{{" [ \n\r\t]* {entry} root_properties{{2, -1}} [ \n\r\t]* "}}"))"#
        )));
        assert!(map(Some(2), Some(2)).contains(&format!(
            r#"{entry} [ \n\r\t]* "," [ \n\r\t]* {entry} [ \n\r\t]* "}}"))"#
        )));
    }

    #[test]
    fn hostile_schemas_are_refused_not_expanded() {
        // A type list repeating a type doubles the rules at every level.
        let mut schema = json!({"type": "string"});
        for _ in 0..30 {
            schema = json!({"type": ["object", "object"], "properties": {"a": schema}});
        }
        assert_eq!(from_json_schema(&schema), Err(Unsupported::TooLarge));
        let long = "k".repeat(100_000);
        assert_eq!(
            from_json_schema(&json!({
                "type": "object", "properties": {long: {}}, "additionalProperties": true,
            })),
            Err(Unsupported::TooLarge)
        );
        // The widest integer range stays a few hundred rules.
        let widest =
            from_json_schema(&json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX}))
                .unwrap();
        assert!(widest.lines().count() < 300, "{}", widest.lines().count());
        let widest = from_json_schema(&json!({
            "type": "number", "minimum": -f64::MAX, "exclusiveMaximum": f64::MAX,
        }))
        .unwrap();
        assert!(widest.len() < 100_000, "{}", widest.len());
        // xgrammar lists the multiples of up to 10 000 integers, no more.
        let listed = |width: i64| {
            from_json_schema(&json!({
                "type": "integer", "minimum": i64::MAX - width, "maximum": i64::MAX,
                "multipleOf": 1024,
            }))
            .unwrap()
        };
        assert!(
            listed(9_999)
                .contains(r#"root ::= (("9223372036854766592") | ("9223372036854767616") | ("#)
        );
        assert!(listed(10_000).contains("root ::= ((root_1))"));
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "array", "items": deep});
        }
        assert_eq!(from_json_schema(&deep), Err(Unsupported::TooDeep));
        // `allOf`s of several schemas are checked, their `$ref`s not
        // followed (xgrammar does not resolve them): a chain of them stays
        // linear.
        let mut defs = serde_json::Map::new();
        for i in 0..60 {
            let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
            defs.insert(format!("D{i}"), json!({"allOf": [next, next]}));
        }
        defs.insert("D60".into(), json!({"type": "string"}));
        let chain = json!({"$ref": "#/$defs/D0", "$defs": defs});
        assert!(from_json_schema(&chain).is_ok());
        for odd in [
            json!(null),
            json!({"type": "object", "properties": {"a": 3}}),
            json!({"type": "object", "properties": {"a": false}}),
            json!({"type": "array", "items": {"type": "string"}, "maxItems": -1}),
            json!({"type": "string", "minLength": 3, "maxLength": 1}),
            json!({"$ref": "#/$defs/missing"}),
            json!({"enum": []}),
            json!({"enum": "x"}),
            json!({"type": "integer", "minimum": 3, "maximum": 2}),
            json!({"type": "integer", "minimum": 0.5}),
            json!({"type": "object", "minProperties": 1}),
            json!({"type": "object", "additionalProperties": true, "minProperties": 2, "maxProperties": 1}),
            json!({"type": "integer", "minimum": 1, "maximum": 2, "multipleOf": 3}),
            json!({"type": "number", "minimum": 0.1234561, "maximum": 0.1234569}),
            json!({"type": "number", "exclusiveMinimum": 1, "maximum": 1}),
            json!({"type": "integer", "exclusiveMaximum": i64::MIN}),
            json!({"type": "string", "pattern": "^(a)\\1$"}),
            json!({"type": "string", "pattern": "^é+$"}),
            // Its part has its key (`title` is dropped from both).
            json!({"type": "object", "properties": {"title": {"type": "object", "properties": {"title": {}}}}}),
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 3}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 2, "maximum": 1}}, "maxProperties": 0}),
            json!({"type": "object", "properties": {"a\u{0}": {}}, "additionalProperties": true}),
        ] {
            assert!(from_json_schema(&odd).is_err(), "{odd}");
        }
    }
}
