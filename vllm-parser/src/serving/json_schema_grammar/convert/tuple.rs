//! An array with `prefixItems`, as xgrammar 0.2.8 writes it: the first
//! `minItems` prefix items in place, then a chain of rules, one per prefix
//! position after them (`…_suffix_k`: nothing, or the item and the rest),
//! the last one followed by the further items (`items`) up to `maxItems`.

use serde_json::Value;

use super::super::Unsupported;
use super::super::grammar::{Body, Item, WS};
use super::{Converter, separator};

impl Converter<'_> {
    /// The body of an array of `prefix` items (at least one), then `items`
    /// if any, `min` to `max` of them in all.
    pub(in super::super) fn tuple(
        &mut self,
        prefix: &Value,
        items: Option<&Value>,
        min: u64,
        max: Option<u64>,
        name: &str,
    ) -> Result<Body, Unsupported> {
        let refused = |why: &str| Err(Unsupported::Keyword(format!("prefixItems {why}")));
        let Some(prefix) = prefix.as_array() else {
            return refused("not an array");
        };
        // xgrammar refuses `true` / `false` there, and counts it cannot meet.
        let n = prefix.len() as u64;
        if !prefix.iter().all(Value::is_object)
            || max.is_some_and(|max| max < n)
            || (items.is_none() && n < min)
        {
            return refused("of this form");
        }
        if n == 0 || n > 1024 || min > i32::MAX as u64 {
            return refused("of this size");
        }
        let mut rules = Vec::with_capacity(prefix.len());
        for (i, item) in prefix.iter().enumerate() {
            rules.push(self.rule_for(item, format!("{name}_item_{i}"))?);
        }
        let additional = items
            .map(|items| self.rule_for(items, format!("{name}_additional")))
            .transpose()?;
        let mandatory = min.min(n) as usize;
        let mut content = Vec::new();
        for (i, rule) in rules[..mandatory].iter().enumerate() {
            if i > 0 {
                content.extend(separator());
            }
            content.push(rule.clone());
        }
        let mut suffix = match additional {
            Some(additional) => {
                let mut more = separator();
                more.push(additional);
                let at_least = min.saturating_sub(n) as i64;
                let at_most = max.map_or(-1, |max| (max - n).min(i32::MAX as u64) as i64);
                self.repeat(more, at_least, at_most, format!("{name}_additional_items"))?
            }
            None => Vec::new(),
        };
        for k in (mandatory.max(1)..rules.len()).rev() {
            let mut with = separator();
            with.push(rules[k].clone());
            with.append(&mut suffix);
            let body = Body::Choice(vec![Vec::new(), with]);
            suffix = vec![Item::Ref(
                self.fresh_rule(format!("{name}_suffix_{k}"), body)?,
            )];
        }
        if mandatory == 0 {
            let mut with = vec![rules[0].clone()];
            with.append(&mut suffix);
            let body = Body::Choice(vec![Vec::new(), with]);
            suffix = vec![Item::Ref(
                self.fresh_rule(format!("{name}_suffix_0"), body)?,
            )];
        }
        content.append(&mut suffix);
        let mut sequence = vec![Item::Lit("[".into()), Item::Raw(WS)];
        sequence.append(&mut content);
        sequence.extend([Item::Raw(WS), Item::Lit("]".into())]);
        Ok(Body::Choice(vec![sequence]))
    }
}
