//! An object with `properties` and `minProperties` / `maxProperties`, as
//! xgrammar 0.2.8 writes it (`GetPartialRuleForProperties` with counts).
//!
//! Properties come in their order, each optional unless required, as
//! without counts; but the rest after property `i` is one rule per number
//! `m` of entries written so far (`…_part_i_m`), for the numbers that can
//! still reach the bounds, and other keys (`additionalProperties`) fill up
//! to them at the end (`…_properties{lower, upper}`). The numbers kept per
//! property are xgrammar's own (`matched_min` / `matched_max`), reproduced
//! as it computes them, its corner cases included.

use super::super::Unsupported;
use super::super::grammar::{Body, Item, WS};
use super::{Converter, OtherKeys, separator};

/// The bounds on an object's entries.
pub(in super::super) struct Counts {
    /// `minProperties`.
    pub(in super::super) min: u64,
    /// `maxProperties`, if any.
    pub(in super::super) max: Option<u64>,
    /// How many names `required` lists (properties or not).
    pub(in super::super) required: usize,
}

/// A rule body of `items`: a lone choice is the body itself.
fn body_of(items: Vec<Item>) -> Body {
    match <[Item; 1]>::try_from(items) {
        Ok([Item::Nested(alternatives)]) => Body::Choice(alternatives),
        Ok([item]) => Body::Choice(vec![vec![item]]),
        Err(items) => Body::Choice(vec![items]),
    }
}

/// Counts whose rules this crate does not write.
fn too_odd() -> Unsupported {
    Unsupported::Keyword("minProperties / maxProperties of this form beside properties".into())
}

impl Converter<'_> {
    /// The body of an object of `entries` (each property's `"key": value`),
    /// named `names`, `is_required` as they are, `other` keys, within
    /// `counts`.
    pub(in super::super) fn counted_object(
        &mut self,
        name: &str,
        entries: &[Vec<Item>],
        names: &[&str],
        is_required: &[bool],
        mut other: OtherKeys<'_>,
        counts: Counts,
    ) -> Result<Body, Unsupported> {
        let n = entries.len();
        // The other keys' entry is made when xgrammar first asks for it.
        let allow_other = !matches!(other, OtherKeys::Forbidden);
        let to_i64 = |v: u64| i64::try_from(v).map_err(|_| too_odd());
        let (min, max) = (to_i64(counts.min)?, counts.max.map(to_i64).transpose()?);
        if n == 0 || n > 256 || max.is_some_and(|max| max > 1 << 20) {
            return Err(too_odd());
        }
        let max = max.unwrap_or(-1);
        let last = n - 1;
        let mut matched_min = vec![1i64; n];
        let mut found_required = is_required[0];
        for i in 1..n {
            matched_min[i] = matched_min[i - 1] + i64::from(is_required[i]);
            if !found_required {
                matched_min[i] = 1;
            }
            found_required |= is_required[i];
        }
        let mut matched_max: Vec<i64> = (1..=n as i64).collect();
        matched_min[last] = if allow_other {
            matched_min[last].max(1)
        } else {
            matched_min[last].max(min)
        };
        if max != -1 {
            matched_max[last] = matched_max[last].min(max);
        }
        for i in (0..last).rev() {
            matched_min[i] = matched_min[i].max(matched_min[i + 1] - 1);
            if max != -1 {
                let after = matched_max[i + 1] - i64::from(is_required[i + 1]);
                matched_max[i] = matched_max[i].min(after);
            }
        }
        // tails[i][m - matched_min[i]]: the rest after property i, m written.
        let mut tails: Vec<Vec<Vec<Item>>> = vec![Vec::new(); n];
        for matched in matched_min[last]..=matched_max[last] {
            if allow_other {
                let mut more = separator();
                more.extend(self.other_entry(&mut other, names, name)?);
                let body = self.more_entries(more, min, max, matched, name)?;
                let rule =
                    self.fresh_rule(format!("{name}_part_{last}_{matched}"), body_of(body))?;
                tails[last].push(vec![Item::Ref(rule)]);
            } else {
                tails[last].push(Vec::new());
            }
        }
        let tail = |tails: &[Vec<Vec<Item>>], i: usize, matched: i64| {
            usize::try_from(matched - matched_min[i])
                .ok()
                .and_then(|at| tails[i].get(at))
                .cloned()
                .ok_or_else(too_odd)
        };
        for i in (0..last).rev() {
            for matched in matched_min[i]..=matched_max[i] {
                let body = if matched == matched_max[i + 1] {
                    Body::Choice(vec![tail(&tails, i + 1, matched)?])
                } else {
                    let mut with = separator();
                    with.extend(entries[i + 1].iter().cloned());
                    with.extend(tail(&tails, i + 1, matched + 1)?);
                    if is_required[i + 1] || matched == matched_min[i + 1] - 1 {
                        Body::Choice(vec![with])
                    } else {
                        Body::Choice(vec![tail(&tails, i + 1, matched)?, with])
                    }
                };
                let rule = self.fresh_rule(format!("{name}_part_{i}_{matched}"), body)?;
                tails[i].push(vec![Item::Ref(rule)]);
            }
        }
        let mut choices = Vec::new();
        for i in 0..n {
            if matched_max[i] < matched_min[i] {
                continue;
            }
            if matched_min[i] > 1 {
                break;
            }
            let mut choice = entries[i].clone();
            choice.extend(tail(&tails, i, 1)?);
            choices.push(choice);
            if is_required[i] {
                break;
            }
        }
        if allow_other && counts.required == 0 {
            let mut choice = self.other_entry(&mut other, names, name)?;
            let mut more = separator();
            more.extend(choice.clone());
            choice.extend(self.more_entries(more, min, max, 1, name)?);
            choices.push(choice);
        }
        let mut sequence = vec![Item::Lit("{".into()), Item::Raw(WS)];
        match choices.len() {
            // No way to reach `minProperties` (xgrammar writes it so).
            0 => {}
            1 => sequence.append(&mut choices[0]),
            _ => sequence.push(Item::Nested(choices)),
        }
        sequence.extend([Item::Raw(WS), Item::Lit("}".into())]);
        let mut alternatives = vec![sequence];
        if counts.required == 0 && min == 0 {
            alternatives.push(vec![
                Item::Lit("{".into()),
                Item::Raw(WS),
                Item::Lit("}".into()),
            ]);
        }
        Ok(Body::Choice(alternatives))
    }

    /// xgrammar's `GetPropertyWithNumberConstraints`: `more` repeated up to
    /// the bounds, `already` entries written.
    fn more_entries(
        &mut self,
        more: Vec<Item>,
        min: i64,
        max: i64,
        already: i64,
        name: &str,
    ) -> Result<Vec<Item>, Unsupported> {
        if max != -1 && max == already {
            return Ok(Vec::new());
        }
        let lower = (min - already).max(0);
        let upper = if max == -1 {
            -1
        } else {
            (max - already).max(-1)
        };
        self.repeat(more, lower, upper, format!("{name}_properties"))
    }
}
