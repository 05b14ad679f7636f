//! Which schema xgrammar 0.2.8 converts where a sub-schema stands.
//!
//! xgrammar's `SchemaParser` reads the whole document before it writes a
//! rule (a `$ref`'s target later, when the reference is first converted),
//! and keeps what it read under a key ([`cache_key`]): the schema without
//! annotation keywords, at any depth and even where they are property names,
//! its keys sorted. A schema whose key was read before is not read again: it
//! is the first one's, rules and all. So two schemas that differ only in a
//! property named `title`, or in the order of their properties, both get
//! the rules of whichever was read first. [`Reading`] reads a document in
//! xgrammar's order and gives, for any schema, the one read first under its
//! key.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::{MAX_DEPTH, Unsupported};

/// Keys xgrammar's key for a schema leaves out (wherever they are).
pub(super) const ANNOTATIONS: &[&str] = &[
    "title",
    "default",
    "description",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
];

/// The most bytes of [`cache_key`]s one conversion computes (a bound on the
/// work a schema can ask for, e.g. type lists nested in type lists).
pub(super) const MAX_KEY_BYTES: usize = 64 << 20;

/// The key xgrammar finds a schema again by: the schema without annotations
/// (at any depth), its keys sorted, written compactly.
fn cache_key(schema: &Value) -> Result<String, Unsupported> {
    fn write(out: &mut String, value: &Value, depth: usize) -> Result<(), Unsupported> {
        if depth > MAX_DEPTH {
            return Err(Unsupported::TooDeep);
        }
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map
                    .iter()
                    .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
                    .collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    write(out, item, depth + 1)?;
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(out, item, depth + 1)?;
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
        Ok(())
    }
    let mut out = String::new();
    write(&mut out, schema, 0)?;
    Ok(out)
}

/// The schemas read so far, the first one under each key.
#[derive(Debug, Default)]
pub(super) struct Reading {
    first: HashMap<String, Rc<Value>>,
    /// Bytes of keys computed so far.
    key_bytes: usize,
}

impl Reading {
    /// `schema`'s key, counted against [`MAX_KEY_BYTES`].
    pub(super) fn key(&mut self, schema: &Value) -> Result<String, Unsupported> {
        let key = cache_key(schema)?;
        self.key_bytes += key.len();
        if self.key_bytes > MAX_KEY_BYTES {
            return Err(Unsupported::TooLarge);
        }
        Ok(key)
    }

    /// The schema xgrammar converts for one with key `key`: the first one
    /// read under it, if any was.
    pub(super) fn first(&self, key: &str) -> Option<Rc<Value>> {
        self.first.get(key).cloned()
    }

    /// The key budget spent so far (a conversion nested in another one
    /// starts from it).
    pub(super) fn spent(&self) -> usize {
        self.key_bytes
    }

    /// Continue from another reading's spent budget.
    pub(super) fn spend(&mut self, bytes: usize) {
        self.key_bytes = self.key_bytes.max(bytes);
    }

    /// Read `schema` as xgrammar's parser does: a schema whose key was read
    /// before is skipped (its parts too); otherwise its parts are read, then
    /// it is kept under its key.
    pub(super) fn read(&mut self, schema: &Value, depth: usize) -> Result<(), Unsupported> {
        self.read_as(schema, None, depth)
    }

    /// [`Self::read`], a schema without `type` taken as of type `default`
    /// if given (xgrammar reads `propertyNames` as a string's schema): it is
    /// kept with that type.
    fn read_as(
        &mut self,
        schema: &Value,
        default: Option<&str>,
        depth: usize,
    ) -> Result<(), Unsupported> {
        if depth > MAX_DEPTH {
            return Err(Unsupported::TooDeep);
        }
        let key = self.key(schema)?;
        if self.first.contains_key(&key) {
            return Ok(());
        }
        let schema = match default {
            Some(kind) => typed_as(schema, kind),
            None => schema.clone(),
        };
        if let Value::Object(map) = &schema {
            if let Some(Value::Array(kinds)) = map.get("type").filter(|_| !dispatched(map)) {
                // A list of types is read as one copy of the schema per type
                // (none: one copy without `type`).
                if kinds.is_empty() {
                    let mut untyped = map.clone();
                    untyped.remove("type");
                    self.read(&Value::Object(untyped), depth + 1)?;
                }
                for kind in kinds {
                    let mut single = map.clone();
                    single.insert("type".into(), kind.clone());
                    self.read(&Value::Object(single), depth + 1)?;
                }
            } else {
                for (part, default) in parts(map) {
                    self.read_as(part, default, depth + 1)?;
                }
            }
        }
        // A part with this very key (annotation-named properties nested in
        // one another): xgrammar keeps this schema under the key, but its
        // part stays the one it read (not reproduced).
        if self.first.contains_key(&key) {
            return Err(Unsupported::Keyword(
                "a schema xgrammar takes for one of its own parts".into(),
            ));
        }
        self.first.insert(key, Rc::new(schema));
        Ok(())
    }
}

/// `schema` as xgrammar reads it where a type is assumed (`propertyNames`:
/// a string's): with that `type` if it has none and no keyword decides it
/// before `type` does.
pub(super) fn typed_as(schema: &Value, kind: &str) -> Value {
    match schema {
        Value::Object(map) if !map.contains_key("type") && !dispatched(map) => {
            let mut typed = map.clone();
            typed.insert("type".into(), kind.into());
            Value::Object(typed)
        }
        _ => schema.clone(),
    }
}

/// Whether a keyword xgrammar looks at before `type` decides the schema.
fn dispatched(map: &Map<String, Value>) -> bool {
    ["$ref", "const", "enum", "anyOf", "oneOf", "allOf"]
        .iter()
        .any(|k| map.contains_key(*k))
}

/// The kind of value a schema without `type` is read as: an object if it
/// has the keywords of one, an array if it has those of one, else any value.
pub(super) fn untyped_kind(map: &Map<String, Value>) -> Option<&'static str> {
    if [
        "properties",
        "additionalProperties",
        "unevaluatedProperties",
    ]
    .iter()
    .any(|k| map.contains_key(*k))
    {
        Some("object")
    } else if ["items", "prefixItems", "unevaluatedItems"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        Some("array")
    } else {
        None
    }
}

/// The sub-schemas xgrammar's parser reads, in its order, each with the
/// type it is read as without one of its own (a `$ref`'s target is read
/// when converted, not here).
fn parts(map: &Map<String, Value>) -> Vec<(&Value, Option<&'static str>)> {
    fn untyped(parts: Vec<&Value>) -> Vec<(&Value, Option<&'static str>)> {
        parts.into_iter().map(|part| (part, None)).collect()
    }
    let array = |key: &str| match map.get(key) {
        Some(Value::Array(items)) => items.iter().collect(),
        _ => Vec::new(),
    };
    let values = |key: &str| match map.get(key) {
        Some(Value::Object(items)) => items.values().collect(),
        _ => Vec::new(),
    };
    // A schema, unless it is a boolean (`false` / `true` allow or forbid).
    let schema = |key: &str| map.get(key).filter(|v| !v.is_boolean());
    if map.contains_key("$ref") || map.contains_key("const") || map.contains_key("enum") {
        return Vec::new();
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if map.contains_key(keyword) {
            return untyped(array(keyword));
        }
    }
    let kind = match map.get("type") {
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => None,
        None => untyped_kind(map),
    };
    match kind {
        Some("array") => {
            let mut parts = array("prefixItems");
            match map.get("items") {
                Some(Value::Bool(false)) => {}
                Some(items) => parts.push(items),
                None => parts.extend(map.get("unevaluatedItems").filter(|v| *v != false)),
            }
            untyped(parts)
        }
        Some("object") => {
            let mut parts = untyped(values("properties"));
            parts.extend(untyped(values("patternProperties")));
            parts.extend(
                map.get("propertyNames")
                    .map(|names| (names, Some("string"))),
            );
            let rest = match schema("additionalProperties") {
                Some(additional) => Some(additional),
                None if !map.contains_key("additionalProperties") => {
                    schema("unevaluatedProperties")
                }
                None => None,
            };
            parts.extend(rest.map(|part| (part, None)));
            parts
        }
        _ => Vec::new(),
    }
}
