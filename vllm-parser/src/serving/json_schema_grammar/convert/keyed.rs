//! Objects whose keys are given by `patternProperties` or `propertyNames`,
//! as xgrammar 0.2.8 writes them: without `properties`, an entry rule
//! (`…_prop`: a pattern's key and its values, or a name's key and
//! `additionalProperties`' values) repeated; beside `properties`, the same
//! entries stand for the other keys (`additionalProperties` then adds any
//! key to patterns', and `propertyNames` counts only with it).

use serde_json::{Map, Value};

use super::super::Unsupported;
use super::super::grammar::{Body, Item};
use super::super::reading::typed_as;
use super::{Converter, empty_in, entry, other_values, pair, separator};

impl Converter<'_> {
    /// An object whose keys match `patternProperties` (each pattern with its
    /// own values; `additionalProperties` and `propertyNames` are then
    /// ignored) or `propertyNames` (values: `additionalProperties`, any
    /// value without), `min` to `max` of them, as xgrammar writes it: a
    /// rule `…_prop` of one entry, repeated.
    pub(super) fn keyed_object(
        &mut self,
        map: &Map<String, Value>,
        name: &str,
        min: u64,
        max: Option<u64>,
    ) -> Result<Body, Unsupported> {
        if max == Some(0) {
            let patterns = map.get("patternProperties").and_then(Value::as_object);
            for schema in patterns.into_iter().flat_map(|p| p.values()) {
                self.check(schema)?;
            }
            self.check_names(map)?;
            self.check_additional(map)?;
            return Ok(Body::Choice(vec![empty_in(("{", "}"))]));
        }
        let mut entries = Vec::new();
        match (map.get("patternProperties"), map.get("propertyNames")) {
            (Some(Value::Object(patterns)), _) if !patterns.is_empty() => {
                self.check_names(map)?;
                self.check_additional(map)?;
                for (i, (pattern, schema)) in patterns.iter().enumerate() {
                    if matches!(schema, Value::Bool(false)) {
                        return Err(Unsupported::Keyword(format!(
                            "patternProperties {pattern:?} false"
                        )));
                    }
                    // The key's rule is made afresh, never found again.
                    let key = format!("{name}_prop_{i}_key");
                    let index = self.grammar.add(key.clone())?;
                    self.grammar.rules[index].body = self.quoted_pattern(pattern)?;
                    let value = self.rule_for(schema, format!("{name}_prop_{i}"))?;
                    entries.push(entry(Item::Ref(key), value));
                }
            }
            // Keys of a string schema (`type` given or left out: xgrammar
            // reads it as a string's, see `reading`).
            (None | Some(Value::Object(_)), Some(Value::Object(names)))
                if names.get("type").is_none_or(|kind| kind == "string") =>
            {
                let names = &map["propertyNames"];
                let key = self.rule_for(names, format!("{name}_name"))?;
                let value = match other_values(map) {
                    None => Item::Ref("basic_any".into()),
                    Some((values, suffix)) => self.rule_for(values, format!("{name}_{suffix}"))?,
                };
                entries.push(entry(key, value));
            }
            _ => {
                return Err(Unsupported::Keyword(
                    "patternProperties / propertyNames of this form".into(),
                ));
            }
        }
        let prop = format!("{name}_prop");
        let index = self.grammar.add(prop.clone())?;
        self.grammar.rules[index].body = Body::Choice(entries);
        let mut more = separator();
        more.push(Item::Ref(prop.clone()));
        self.repeated_in(
            ("{", "}"),
            vec![Item::Ref(prop)],
            more,
            min,
            max,
            format!("{name}_properties"),
        )
    }

    /// `propertyNames`, where xgrammar reads it (as a string's schema) but
    /// writes no rule for it: checked ([`Converter::check`]).
    fn check_names(&mut self, map: &Map<String, Value>) -> Result<(), Unsupported> {
        match map.get("propertyNames") {
            Some(names) => self.check(&typed_as(names, "string")),
            None => Ok(()),
        }
    }

    /// `additionalProperties` (else `unevaluatedProperties`), where
    /// xgrammar reads it but writes no rule for it: checked
    /// ([`Converter::check`]).
    fn check_additional(&mut self, map: &Map<String, Value>) -> Result<(), Unsupported> {
        match other_values(map) {
            Some((values, _)) if !values.is_boolean() => self.check(values),
            _ => Ok(()),
        }
    }

    /// Beside `properties`, the entry of the other keys that
    /// `patternProperties` makes (each pattern's key and values, then any
    /// key with `additionalProperties`' values if allowed), or that
    /// `propertyNames` makes with `additionalProperties` (the names' key,
    /// its values); `None` for neither (`propertyNames` alone is ignored).
    pub(super) fn keyed_entry(
        &mut self,
        map: &Map<String, Value>,
        name: &str,
    ) -> Result<Option<Vec<Item>>, Unsupported> {
        let additional = other_values(map);
        let unsupported = || {
            Err(Unsupported::Keyword(
                "patternProperties / propertyNames of this form beside properties".into(),
            ))
        };
        match (map.get("patternProperties"), map.get("propertyNames")) {
            (Some(Value::Object(patterns)), _) if !patterns.is_empty() => {
                self.check_names(map)?;
                let mut choices = Vec::new();
                for (i, (pattern, schema)) in patterns.iter().enumerate() {
                    if *schema == false {
                        return unsupported();
                    }
                    let (index, key) = self.grammar.add_fresh(&format!("{name}_pp_{i}_key"))?;
                    self.grammar.rules[index].body = self.quoted_pattern(pattern)?;
                    let value = self.rule_for(schema, format!("{name}_pp_{i}"))?;
                    choices.push(pair(Item::Ref(key), value));
                }
                if let Some((values, suffix)) = additional {
                    let value = self.rule_for(values, format!("{name}_{suffix}"))?;
                    choices.push(pair(Item::Ref("basic_string".into()), value));
                }
                Ok(Some(match <[Vec<Item>; 1]>::try_from(choices) {
                    Ok([choice]) => choice,
                    Err(choices) => vec![Item::Nested(choices)],
                }))
            }
            (None | Some(Value::Object(_)), None) => Ok(None),
            (None | Some(Value::Object(_)), Some(Value::Object(names)))
                if names.get("type").is_none_or(|kind| kind == "string") =>
            {
                let Some((values, suffix)) = additional else {
                    self.check_names(map)?;
                    return Ok(None);
                };
                let key = self.rule_for(&map["propertyNames"], format!("{name}_name"))?;
                let value = self.rule_for(values, format!("{name}_{suffix}"))?;
                Ok(Some(pair(key, value)))
            }
            _ => unsupported(),
        }
    }
}
