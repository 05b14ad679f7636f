//! JSON schema to rules, the way xgrammar 0.2.8's converter names and orders
//! them.
//!
//! A sub-schema that is only a `type` (annotations aside) is the matching
//! `basic_*` rule; any other one gets a rule named after where it sits
//! (`…_prop_N` for a property, `…_part_N` for the rest of an object after
//! property `N`, `…_additional` / `…_items` for array items, `…_case_N` for
//! `anyOf` / `oneOf`, `…_type_N` for a list of types, `defs_NAME` /
//! `definitions_NAME` for a `$ref`, `…_addl` / `…_addl_key` /
//! `…_additional_properties` for other keys of an object), made before the
//! rules of its own parts. A bounded integer or number is a rule holding the
//! rules of its range regex, renamed to fresh names (`root_1`, `root_1_1`, …)
//! as xgrammar adds a grammar of their own.
//!
//! Which schema a rule is made for is xgrammar's reading's
//! ([`super::reading`]: the first schema read under a key stands for every
//! later one); how a schema is read is [`Converter::body`]'s dispatch. The
//! types' rules are in the submodules: `numbers`, `strings`, `tuple`
//! (`prefixItems`), `counted` (`minProperties` / `maxProperties` beside
//! `properties`), `keyed` (`patternProperties` / `propertyNames`).

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

mod counted;
mod keyed;
mod numbers;
mod strings;
mod tuple;

use serde_json::{Map, Value};

use super::escape::{ebnf_literal, json_value};
use super::grammar::{Body, Grammar, Item, WS};
use super::reading::{Reading, untyped_kind};
use super::{MAX_DEPTH, Unsupported};
use counted::Counts;

/// The JSON types.
const TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "null", "array", "object",
];

/// The longest property name beside `additionalProperties` converted (each
/// byte is a nested rule of the other-keys trie).
const MAX_TRIE_NAME: usize = 256;

/// Builds the rules of one schema document.
pub(super) struct Converter<'a> {
    document: &'a Map<String, Value>,
    grammar: Grammar,
    /// `$ref` → its rule's name.
    refs: HashMap<String, String>,
    /// Key → rule: the `basic_*` ones, then each `$ref`'s rule (the latest
    /// for a key wins), found again for any schema with that key.
    cache: HashMap<String, String>,
    depth: usize,
    /// The schemas xgrammar has read, the first under each key.
    reading: Reading,
    /// Only checking schemas xgrammar reads without writing rules for them
    /// ([`Converter::check`]): their `$ref`s are not followed.
    checking: bool,
}

impl<'a> Converter<'a> {
    /// A converter for `document` (the root schema, where `$ref`s resolve).
    pub(super) fn new(document: &'a Map<String, Value>) -> Self {
        Self {
            document,
            grammar: Grammar::new(),
            refs: HashMap::new(),
            cache: [
                ("{}", "basic_any"),
                ("{\"type\":\"string\"}", "basic_string"),
                ("{\"type\":\"integer\"}", "basic_integer"),
                ("{\"type\":\"number\"}", "basic_number"),
                ("{\"type\":\"boolean\"}", "basic_boolean"),
                ("{\"type\":\"null\"}", "basic_null"),
                ("{\"type\":\"array\"}", "basic_array"),
                ("{\"type\":\"object\"}", "basic_object"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            depth: 0,
            reading: Reading::default(),
            checking: false,
        }
    }

    /// The grammar of the whole document, as xgrammar prints it.
    pub(super) fn convert(mut self) -> Result<String, Unsupported> {
        // `$defs` / `definitions` at the top, where `$ref`s point, are keys
        // like others (in the document's key, and in its copies per type).
        let whole = Value::Object(self.document.clone());
        self.reading.read(&whole, 0)?;
        let root = self.grammar.add("root".to_owned())?;
        let key = self.reading.key(&whole)?;
        let body = match self.cache.get(&key) {
            Some(rule) => Body::Choice(vec![vec![Item::Ref(rule.clone())]]),
            None => self.body(&whole, "root")?,
        };
        self.grammar.rules[root].body = body;
        self.grammar.print()
    }

    /// `schema`'s key, and the schema xgrammar converts in its place (the
    /// first one read under that key).
    fn stand_in(&mut self, schema: &Value) -> Result<(String, Rc<Value>), Unsupported> {
        let key = self.reading.key(schema)?;
        let first = self
            .reading
            .first(&key)
            .unwrap_or_else(|| Rc::new(schema.clone()));
        Ok((key, first))
    }

    /// A reference to the rule for `schema`: a `basic_*` one, or a new rule
    /// named `name`.
    fn rule_for(&mut self, schema: &Value, name: String) -> Result<Item, Unsupported> {
        let (key, schema) = self.stand_in(schema)?;
        if let Some(rule) = self.cache.get(&key) {
            return Ok(Item::Ref(rule.clone()));
        }
        let index = self.grammar.add(name.clone())?;
        let body = self.body(&schema, &name)?;
        self.grammar.rules[index].body = body;
        Ok(Item::Ref(name))
    }

    /// The body of rule `name` for `schema`.
    fn body(&mut self, schema: &Value, name: &str) -> Result<Body, Unsupported> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Unsupported::TooDeep);
        }
        let body = self.body_inner(schema, name);
        self.depth -= 1;
        body
    }

    /// xgrammar's reading of a schema: `$ref`, `const`, `enum`, `anyOf`,
    /// `oneOf`, `allOf` in turn, the first present deciding alone; else the
    /// `type` (without one: an object, an array or any value, as the
    /// keywords say), each type reading its own keywords and ignoring others.
    fn body_inner(&mut self, schema: &Value, name: &str) -> Result<Body, Unsupported> {
        let map = match schema {
            Value::Bool(true) => return Ok(any()),
            Value::Object(map) => map,
            _ => {
                return Err(Unsupported::Keyword(
                    "a schema that is not an object".into(),
                ));
            }
        };
        if let Some(target) = map.get("$ref") {
            return self.reference(target);
        }
        if let Some(value) = map.get("const") {
            return Ok(Body::Choice(vec![vec![Item::Lit(json_value(value)?)]]));
        }
        if let Some(values) = map.get("enum") {
            let values = values
                .as_array()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| Unsupported::Keyword("an empty or non-array enum".into()))?;
            let alternatives = values
                .iter()
                .map(|v| Ok(vec![Item::Lit(json_value(v)?)]))
                .collect::<Result<_, Unsupported>>()?;
            return Ok(Body::Choice(alternatives));
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(options) = map.get(keyword) {
                let options = options
                    .as_array()
                    .ok_or_else(|| Unsupported::Keyword(format!("a non-array {keyword}")))?;
                let mut alternatives = Vec::new();
                for (i, option) in options.iter().enumerate() {
                    alternatives.push(vec![self.rule_for(option, format!("{name}_case_{i}"))?]);
                }
                // None: the empty string, as xgrammar writes an empty choice.
                if alternatives.is_empty() {
                    alternatives.push(Vec::new());
                }
                return Ok(Body::Choice(alternatives));
            }
        }
        if let Some(options) = map.get("allOf") {
            return self.all_of(options, name);
        }
        let kind = match map.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(Value::Array(kinds)) => return self.type_list(map, kinds, name),
            Some(_) => return Err(Unsupported::Keyword("a non-string type".into())),
            None => match untyped_kind(map) {
                Some(kind) => kind,
                None => return Ok(any()),
            },
        };
        match kind {
            "string" => self.string_schema(map, name),
            "integer" => self.bounded_integer(map, name),
            "number" => self.number_schema(map, name),
            "boolean" => Ok(Body::Choice(vec![
                vec![Item::Lit("true".into())],
                vec![Item::Lit("false".into())],
            ])),
            "null" => Ok(Body::Choice(vec![vec![Item::Lit("null".into())]])),
            "array" => self.array(map, name),
            "object" => self.object(map, name),
            other => Err(Unsupported::Keyword(format!("type {other:?}"))),
        }
    }

    /// `"type": [...]`: one alternative per type, the schema with that type
    /// (none: the schema without `type`, one alternative).
    fn type_list(
        &mut self,
        map: &Map<String, Value>,
        kinds: &[Value],
        name: &str,
    ) -> Result<Body, Unsupported> {
        if kinds.is_empty() {
            let mut untyped = map.clone();
            untyped.remove("type");
            let rule = self.rule_for(&Value::Object(untyped), format!("{name}_type_0"))?;
            return Ok(Body::Choice(vec![vec![rule]]));
        }
        let mut alternatives = Vec::new();
        for (i, kind) in kinds.iter().enumerate() {
            if !kind.as_str().is_some_and(|k| TYPES.contains(&k)) {
                return Err(Unsupported::Keyword("an unknown type".into()));
            }
            let mut single = map.clone();
            single.insert("type".into(), kind.clone());
            alternatives.push(vec![
                self.rule_for(&Value::Object(single), format!("{name}_type_{i}"))?,
            ]);
        }
        Ok(Body::Choice(alternatives))
    }

    /// A `$ref`: `#` (the root), `#/PATH` (a schema of the document, by its
    /// keys), or (xgrammar warns) any other text: any value.
    fn reference(&mut self, target: &Value) -> Result<Body, Unsupported> {
        let target = target
            .as_str()
            .ok_or_else(|| Unsupported::Keyword("a non-string $ref".into()))?;
        if self.checking {
            return Ok(any());
        }
        // The document itself is the root rule.
        if target == "#" {
            return Ok(Body::Choice(vec![vec![Item::Ref("root".into())]]));
        }
        if let Some(rule) = self.refs.get(target) {
            return Ok(Body::Choice(vec![vec![Item::Ref(rule.clone())]]));
        }
        let Some(path) = target.strip_prefix("#/") else {
            // xgrammar warns and takes any value, in a rule `ref`.
            let rule = self.fresh_rule("ref".into(), any())?;
            self.refs.insert(target.to_owned(), rule.clone());
            return Ok(Body::Choice(vec![vec![Item::Ref(rule)]]));
        };
        // The path's parts, empty ones skipped, each an object's key as it is
        // (xgrammar unescapes nothing).
        let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
        let mut schema = None;
        for part in &parts {
            let at = schema.map_or(Some(self.document), Value::as_object);
            schema = at.and_then(|map| map.get(*part));
            if schema.is_none() {
                break;
            }
        }
        let schema =
            schema.ok_or_else(|| Unsupported::Keyword(format!("unresolved $ref {target:?}")))?;
        // xgrammar's name: the parts' letters, `_`, `-` and `.` (no digits).
        let hint: String = parts
            .iter()
            .map(|part| {
                part.chars()
                    .filter(|c| c.is_ascii_alphabetic() || "_-.".contains(*c))
            })
            .map(String::from_iter)
            .collect::<Vec<_>>()
            .join("_");
        if hint.is_empty() || hint.len() > 1024 {
            return Err(Unsupported::Keyword(format!("$ref {target:?}")));
        }
        let (index, rule) = self.grammar.add_fresh(&hint)?;
        self.refs.insert(target.to_owned(), rule.clone());
        // xgrammar reads the target when it first converts the reference.
        self.reading.read(schema, self.depth)?;
        let (key, schema) = self.stand_in(schema)?;
        let body = self.body(&schema, &rule)?;
        self.grammar.rules[index].body = body;
        self.cache.insert(key, rule.clone());
        Ok(Body::Choice(vec![vec![Item::Ref(rule)]]))
    }

    fn array(&mut self, map: &Map<String, Value>, name: &str) -> Result<Body, Unsupported> {
        // `minContains` raises the count (`contains` itself is ignored).
        let min = count(map, "minItems")?.max(count(map, "minContains")?);
        let min = min.unwrap_or(0);
        let max = count(map, "maxItems")?;
        if max.is_some_and(|max| max < min) {
            return Err(Unsupported::Keyword("minItems above maxItems".into()));
        }
        // Without `items` (strict mode) or with `items: false`, no more items
        // than the prefix.
        let items = map
            .get("items")
            .or_else(|| map.get("unevaluatedItems"))
            .filter(|items| **items != false);
        // An empty prefix is none.
        let empty = |prefix: &&Value| prefix.as_array().is_some_and(Vec::is_empty);
        if let Some(prefix) = map.get("prefixItems").filter(|p| !empty(p)) {
            return self.tuple(prefix, items, min, max, name);
        }
        let Some(items) = items else {
            if min > 0 {
                return Err(Unsupported::Keyword("minItems without items".into()));
            }
            return Ok(Body::Choice(vec![empty_in(("[", "]"))]));
        };
        // xgrammar makes the items' rule even for no items.
        let item = self.rule_for(items, format!("{name}_additional"))?;
        if max == Some(0) {
            return Ok(Body::Choice(vec![empty_in(("[", "]"))]));
        }
        let first = vec![Item::Raw(WS), item.clone()];
        let mut more = separator();
        more.push(item);
        self.repeated_in(("[", "]"), first, more, min, max, format!("{name}_items"))
    }

    fn object(&mut self, map: &Map<String, Value>, name: &str) -> Result<Body, Unsupported> {
        let properties: Vec<(&String, &Value)> = match map.get("properties") {
            None => Vec::new(),
            Some(Value::Object(properties)) => properties.iter().collect(),
            Some(_) => return Err(Unsupported::Keyword("non-object properties".into())),
        };
        let min = count(map, "minProperties")?.unwrap_or(0);
        let max = count(map, "maxProperties")?;
        if max.is_some_and(|max| max < min) {
            return Err(Unsupported::Keyword(
                "minProperties above maxProperties".into(),
            ));
        }
        // An empty `patternProperties` is none.
        let keyed = map
            .get("patternProperties")
            .is_some_and(|patterns| patterns.as_object().is_none_or(|p| !p.is_empty()))
            || map.contains_key("propertyNames");
        let required: HashSet<&str> = match map.get("required") {
            None => HashSet::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().ok_or(()))
                .collect::<Result<_, ()>>()
                .map_err(|()| Unsupported::Keyword("a non-string required name".into()))?,
            Some(_) => return Err(Unsupported::Keyword("a non-array required".into())),
        };
        if max.is_some_and(|max| max < required.len() as u64) {
            // xgrammar refuses it.
            return Err(Unsupported::Keyword(
                "maxProperties below the required names".into(),
            ));
        }
        if keyed && properties.is_empty() {
            // xgrammar ignores `required` then.
            return self.keyed_object(map, name, min, max);
        }
        let additional = other_values(map);
        if let (Some((values, suffix)), true) = (additional, properties.is_empty()) {
            return self.map_object(values, suffix, name, min, max);
        }
        // Beside properties, patterns' and names' entries are the other keys.
        let mut other = match (self.keyed_entry(map, name)?, additional) {
            (Some(entry), _) => OtherKeys::Entry(entry),
            (None, Some((values, suffix))) => OtherKeys::Schema(values, suffix),
            (None, None) => OtherKeys::Forbidden,
        };
        if properties.is_empty() && min > 0 {
            return Err(Unsupported::Keyword(
                "minProperties without properties or other keys".into(),
            ));
        }
        let n = properties.len();
        if n == 0 {
            return Ok(Body::Choice(vec![empty_in(("{", "}"))]));
        }
        if max == Some(0) {
            // xgrammar makes no rule for the properties then.
            for (_, schema) in &properties {
                self.check(schema)?;
            }
            if let OtherKeys::Schema(additional, _) = other {
                self.check(additional)?;
            }
            return Ok(Body::Choice(vec![empty_in(("{", "}"))]));
        }
        let mut values = Vec::with_capacity(n);
        let mut keys = Vec::with_capacity(n);
        for (i, (key, schema)) in properties.iter().enumerate() {
            if matches!(schema, Value::Bool(false)) {
                return Err(Unsupported::Keyword("a false property schema".into()));
            }
            keys.push(json_value(&Value::String((*key).clone()))?);
            values.push(self.rule_for(schema, format!("{name}_prop_{i}"))?);
        }
        let names: Vec<&str> = properties.iter().map(|(k, _)| k.as_str()).collect();
        let is_required: Vec<bool> = names.iter().map(|key| required.contains(key)).collect();
        if !keyed && matches!(other, OtherKeys::Forbidden) && min > n as u64 {
            // xgrammar refuses it.
            return Err(Unsupported::Keyword(
                "minProperties beyond the properties".into(),
            ));
        }
        if min > 0 || max.is_some() {
            let entries: Vec<Vec<Item>> = keys
                .into_iter()
                .zip(values)
                .map(|(key, value)| pair(Item::Lit(key), value))
                .collect();
            let counts = Counts {
                min,
                max,
                required: required.len(),
            };
            return self.counted_object(name, &entries, &names, &is_required, other, counts);
        }
        let other = match other {
            OtherKeys::Forbidden => None,
            _ => {
                let entry = self.other_entry(&mut other, &names, name)?;
                let mut more = separator();
                more.extend(entry.iter().cloned());
                let more = self.fresh_rule(
                    format!("{name}_additional_properties"),
                    Body::Choice(vec![more]),
                )?;
                Some((entry, more))
            }
        };
        let part = |i: usize| format!("{name}_part_{i}");
        // With other keys, the rest after the last property is a rule too.
        let parts = if other.is_some() { n } else { n - 1 };
        // The property and its value (and the rest after it, if any).
        let entry = |i: usize| {
            let mut sequence = vec![
                Item::Lit(keys[i].clone()),
                Item::Raw(WS),
                Item::Lit(":".into()),
                Item::Raw(WS),
                values[i].clone(),
            ];
            if i < parts {
                sequence.push(Item::Ref(part(i)));
            }
            sequence
        };
        if let Some((_, more)) = &other {
            let index = self.grammar.add(part(n - 1))?;
            self.grammar.rules[index].body =
                Body::Choice(vec![vec![Item::Repeat(more.clone(), 0, -1)]]);
        }
        for i in (0..n - 1).rev() {
            let index = self.grammar.add(part(i))?;
            let mut sequence = separator();
            sequence.extend(entry(i + 1));
            let alternatives = if is_required[i + 1] {
                vec![sequence]
            } else if i + 1 < parts {
                vec![vec![Item::Ref(part(i + 1))], sequence]
            } else {
                vec![vec![], sequence]
            };
            self.grammar.rules[index].body = Body::Choice(alternatives);
        }
        let first_required = is_required.iter().position(|r| *r);
        let last_start = first_required.unwrap_or(n - 1);
        let mut starts: Vec<Vec<Item>> = (0..=last_start).map(entry).collect();
        // Another key may come first when no name at all is required.
        if let (Some((entry, _)), true) = (&other, required.is_empty()) {
            let mut start = entry.clone();
            start.push(Item::Ref(part(n - 1)));
            starts.push(start);
        }
        let mut sequence = vec![Item::Lit("{".into()), Item::Raw(WS)];
        if starts.len() == 1 {
            sequence.append(&mut starts[0]);
        } else {
            sequence.push(Item::Nested(starts));
        }
        sequence.extend([Item::Raw(WS), Item::Lit("}".into())]);
        let mut alternatives = vec![sequence];
        // Required names that are not properties still rule the empty object out.
        if required.is_empty() {
            alternatives.push(empty_in(("{", "}")));
        }
        Ok(Body::Choice(alternatives))
    }
}

/// The entries beside an object's `properties` of keys that are none of
/// them.
pub(super) enum OtherKeys<'v> {
    /// None allowed.
    Forbidden,
    /// Any other key, values of this schema (see [`other_values`]), its
    /// rule's name ending in this suffix; the rules made when first needed.
    Schema(&'v Value, &'static str),
    /// This entry (made, or from `patternProperties` / `propertyNames`).
    Entry(Vec<Item>),
}

impl Converter<'_> {
    /// The entry of other keys (`key: value`), making its rules if they are
    /// not yet: their values' (`…_addl` / `…_uneval`) and their keys'
    /// (`…_addl_key`: a string that is none of `names`).
    fn other_entry(
        &mut self,
        other: &mut OtherKeys<'_>,
        names: &[&str],
        name: &str,
    ) -> Result<Vec<Item>, Unsupported> {
        let additional = match other {
            OtherKeys::Forbidden => {
                return Err(Unsupported::Keyword("no other keys allowed".into()));
            }
            OtherKeys::Entry(entry) => return Ok(entry.clone()),
            OtherKeys::Schema(additional, suffix) => (*additional, *suffix),
        };
        let value = self.rule_for(additional.0, format!("{name}_{}", additional.1))?;
        let key = format!("{name}_addl_key");
        let index = self.grammar.add(key.clone())?;
        self.grammar.rules[index].body = Body::Choice(vec![vec![
            Item::Lit("\"".into()),
            Item::Nested(other_key(names)?),
        ]]);
        self.grammar.lookahead.insert(index);
        let entry = pair(Item::Ref(key), value);
        *other = OtherKeys::Entry(entry.clone());
        Ok(entry)
    }
}

/// The characters of a JSON string that is not one of `names` (after its
/// opening quote), as xgrammar writes it: a trie of the names, each node a
/// choice of the closing quote (unless a name ends there), any other
/// character or an escape then any string, or the next character of a name.
fn other_key(names: &[&str]) -> Result<Vec<Vec<Item>>, Unsupported> {
    // The trie nests a rule per byte: keep it shallow.
    if names.iter().any(|name| name.len() > MAX_TRIE_NAME) {
        return Err(Unsupported::TooLarge);
    }
    // xgrammar's trie is of the names' raw bytes (not their JSON text); it
    // prints a NUL byte's literal as `""` (not reproduced).
    if names.iter().any(|name| name.contains('\0')) {
        return Err(Unsupported::Keyword(
            "additionalProperties beside a property name with a NUL".into(),
        ));
    }
    /// One byte as an EBNF literal or class writes it.
    fn byte(b: u8, in_class: bool) -> String {
        match b {
            b'-' | b']' if in_class => format!("\\{}", b as char),
            0x80.. => format!("\\x{b:02x}"),
            b => ebnf_literal(&(b as char).to_string()),
        }
    }
    fn node(names: &[&[u8]]) -> Vec<Vec<Item>> {
        let mut alternatives = Vec::new();
        if !names.iter().any(|n| n.is_empty()) {
            alternatives.push(vec![Item::Lit("\"".into())]);
        }
        let mut next: Vec<u8> = names.iter().filter_map(|n| n.first().copied()).collect();
        next.sort_unstable();
        next.dedup();
        let excluded: String = next.iter().map(|&b| byte(b, true)).collect();
        alternatives.push(vec![
            Item::Text(format!("[^\\0-\\x1f\\\"\\\\\\r\\n{excluded}]")),
            Item::Ref("basic_string_sub".into()),
        ]);
        alternatives.push(vec![
            Item::Lit("\\".into()),
            Item::Ref("basic_escape".into()),
            Item::Ref("basic_string_sub".into()),
        ]);
        for c in next {
            let rest: Vec<&[u8]> = names
                .iter()
                .filter(|n| n.first() == Some(&c))
                .map(|n| &n[1..])
                .collect();
            alternatives.push(vec![
                Item::Text(format!("\"{}\"", byte(c, false))),
                Item::Nested(node(&rest)),
            ]);
        }
        alternatives
    }
    let names: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
    Ok(node(&names))
}

impl Converter<'_> {
    /// `allOf`: one schema is that schema's body in this rule (its own rules
    /// named as a first case's, `…_case_0_…`); several (or none) are
    /// any value (xgrammar 0.2.8 does not merge them, it warns).
    fn all_of(&mut self, options: &Value, name: &str) -> Result<Body, Unsupported> {
        let options = options
            .as_array()
            .ok_or_else(|| Unsupported::Keyword("a non-array allOf".into()))?;
        if let [option] = options.as_slice() {
            // In this rule, its own rules named as the first case's.
            let (_, option) = self.stand_in(option)?;
            return self.body(&option, &format!("{name}_case_0"));
        }
        for option in options {
            self.check(option)?;
        }
        Ok(any())
    }

    /// For a schema xgrammar reads but writes no rule for (it may still
    /// refuse it): that this crate converts it, on the side.
    fn check(&mut self, schema: &Value) -> Result<(), Unsupported> {
        let mut check = Converter::new(self.document);
        check.checking = true;
        check.depth = self.depth;
        check.reading.spend(self.reading.spent());
        check.reading.read(schema, self.depth)?;
        check.body(schema, "root")?;
        self.reading.spend(check.reading.spent());
        Ok(())
    }

    /// An object of any keys whose values are `additional` (no
    /// `properties`; its rule's name ending in `suffix`), `min` to `max` of
    /// them.
    fn map_object(
        &mut self,
        additional: &Value,
        suffix: &str,
        name: &str,
        min: u64,
        max: Option<u64>,
    ) -> Result<Body, Unsupported> {
        if max == Some(0) {
            self.check(additional)?;
            return Ok(Body::Choice(vec![empty_in(("{", "}"))]));
        }
        let value = self.rule_for(additional, format!("{name}_{suffix}"))?;
        let first = entry(Item::Ref("basic_string".into()), value.clone());
        let mut more = separator();
        more.extend(pair(Item::Ref("basic_string".into()), value));
        self.repeated_in(
            ("{", "}"),
            first,
            more,
            min,
            max,
            format!("{name}_properties"),
        )
    }

    /// An array or object as xgrammar writes it: `open`, `first`, then `more`
    /// up to `min` to `max` elements in all (a rule `rule` when repeated),
    /// `close`; or the empty one when `min` is 0.
    fn repeated_in(
        &mut self,
        (open, close): (&str, &str),
        first: Vec<Item>,
        more: Vec<Item>,
        min: u64,
        max: Option<u64>,
        rule: String,
    ) -> Result<Body, Unsupported> {
        let mut sequence = vec![Item::Lit(open.into())];
        sequence.extend(first);
        let more_min = min.saturating_sub(1).min(i32::MAX as u64) as i64;
        let more_max = max.map_or(-1, |m| m.min(i32::MAX as u64) as i64 - 1);
        sequence.extend(self.repeat(more, more_min, more_max, rule)?);
        sequence.extend([Item::Raw(WS), Item::Lit(close.into())]);
        let mut alternatives = vec![sequence];
        if min == 0 {
            alternatives.push(empty_in((open, close)));
        }
        Ok(Body::Choice(alternatives))
    }

    /// A new rule of `body`, named `hint` or, if taken, `hint_N`.
    fn fresh_rule(&mut self, hint: String, body: Body) -> Result<String, Unsupported> {
        let (index, name) = self.grammar.add_fresh(&hint)?;
        self.grammar.rules[index].body = body;
        Ok(name)
    }

    /// `more` `min` to `max` (`-1`: unbounded) times, as xgrammar's
    /// `Repeat` writes it: nothing for none, optional for `{0, 1}`, itself
    /// for `{1, 1}`, else a new rule of it (named `hint`, or `hint_N` if
    /// taken) repeated.
    fn repeat(
        &mut self,
        more: Vec<Item>,
        min: i64,
        max: i64,
        hint: String,
    ) -> Result<Vec<Item>, Unsupported> {
        Ok(match (min, max) {
            (0, 0) => Vec::new(),
            (0, 1) => vec![Item::Nested(vec![vec![], more])],
            (1, 1) => more,
            _ => {
                let rule = self.fresh_rule(hint, Body::Choice(vec![more]))?;
                vec![Item::Repeat(rule, min.max(0) as u64, max)]
            }
        })
    }
}

/// The values of keys other than an object's properties (patterns and
/// names aside), and the suffix of their rule's name, as xgrammar reads
/// them in strict mode: `additionalProperties` (`true`: any value), else
/// `unevaluatedProperties` (a schema's rule is `…_uneval`), else none.
fn other_values(map: &Map<String, Value>) -> Option<(&Value, &'static str)> {
    static ANY: Value = Value::Bool(true);
    match (
        map.get("additionalProperties"),
        map.get("unevaluatedProperties"),
    ) {
        (Some(Value::Bool(false)), _) | (None, None | Some(Value::Bool(false))) => None,
        (Some(Value::Bool(true)), _) | (None, Some(Value::Bool(true))) => Some((&ANY, "addl")),
        (Some(values), _) => Some((values, "addl")),
        (None, Some(values)) => Some((values, "uneval")),
    }
}

/// `,` between an array's items or an object's entries.
fn separator() -> Vec<Item> {
    vec![Item::Raw(WS), Item::Lit(",".into()), Item::Raw(WS)]
}

/// The empty array or object: `open`, whitespace, `close`.
fn empty_in((open, close): (&str, &str)) -> Vec<Item> {
    vec![
        Item::Lit(open.into()),
        Item::Raw(WS),
        Item::Lit(close.into()),
    ]
}

/// `key: value`: an object's entry, as xgrammar writes it.
fn pair(key: Item, value: Item) -> Vec<Item> {
    vec![
        key,
        Item::Raw(WS),
        Item::Lit(":".into()),
        Item::Raw(WS),
        value,
    ]
}

/// One `key: value` entry of an object, after its leading whitespace.
fn entry(key: Item, value: Item) -> Vec<Item> {
    let mut entry = vec![Item::Raw(WS)];
    entry.extend(pair(key, value));
    entry
}

/// A non-negative integer keyword (`minLength`, `maxItems`, …).
fn count(map: &Map<String, Value>, key: &str) -> Result<Option<u64>, Unsupported> {
    match map.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|v| *v <= i32::MAX as u64)
            .map(Some)
            .ok_or_else(|| Unsupported::Keyword(format!("{key} {value}"))),
    }
}

/// Any JSON value, as a rule of its own.
fn any() -> Body {
    Body::Choice(
        [
            "basic_number",
            "basic_string",
            "basic_boolean",
            "basic_null",
            "basic_array",
            "basic_object",
        ]
        .iter()
        .map(|rule| vec![Item::Ref((*rule).to_owned())])
        .collect(),
    )
}
