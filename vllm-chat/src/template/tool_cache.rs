//! The request's tools as template values, kept across requests.
//!
//! Clients send the same tool list with every turn of a conversation, and a tool
//! list is the largest part of most prompts' context. Converting it (and
//! serializing it with `tojson`, which [`super::value::JsonMap`] remembers) once per
//! distinct list instead of once per request removes most of the cost of rendering
//! tool-heavy templates.

use std::sync::Mutex;

use minijinja::Value;

use super::identical;
use super::value::from_json;
use crate::openai::Tool;

/// Distinct tool lists kept (the oldest goes first).
const CACHED_TOOL_LISTS: usize = 16;

/// Recently seen tool lists, their template values and their estimated bytes.
#[derive(Debug)]
pub(crate) struct ToolCache {
    lists: Mutex<Vec<(Vec<Tool>, Value, usize)>>,
    /// The bytes the cache may hold ([`Limits::tool_cache_bytes`](super::Limits)).
    budget: usize,
    /// Larger lists are not cached ([`Limits::cache_entry_bytes`](super::Limits)).
    max_entry: usize,
}

impl Default for ToolCache {
    fn default() -> Self {
        let limits = super::Limits::default();
        Self::new(limits.tool_cache_bytes, limits.cache_entry_bytes)
    }
}

impl ToolCache {
    pub(crate) fn new(budget: usize, max_entry: usize) -> Self {
        ToolCache {
            lists: Mutex::default(),
            budget,
            max_entry: max_entry.min(budget),
        }
    }

    /// `tools` as templates see them (vLLM's `model_dump()` of each tool).
    pub(crate) fn value(&self, tools: &[Tool]) -> Value {
        if let Ok(lists) = self.lists.lock()
            && let Some((_, value, _)) = lists.iter().find(|(t, _, _)| identical::tools(t, tools))
        {
            return value.clone();
        }
        let mut size = 0;
        let value = Value::from(
            tools
                .iter()
                .map(|t| {
                    let json = t.template_value();
                    // The list, its value, and the `tojson` text the value remembers.
                    size += 3 * super::message_cache::json_bytes(&json);
                    from_json(&json)
                })
                .collect::<Vec<_>>(),
        );
        if size <= self.max_entry
            && let Ok(mut lists) = self.lists.lock()
        {
            while lists.len() >= CACHED_TOOL_LISTS
                || (!lists.is_empty()
                    && lists.iter().map(|l| l.2).sum::<usize>() + size > self.budget)
            {
                lists.remove(0);
            }
            lists.push((tools.to_vec(), value.clone(), size));
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::{CACHED_TOOL_LISTS, ToolCache};
    use crate::openai::Tool;

    fn tools(names: &[&str]) -> Vec<Tool> {
        names
            .iter()
            .map(|n| {
                serde_json::from_value(serde_json::json!({
                    "type": "function",
                    "function": {"name": n, "parameters": {"type": "object"}}
                }))
                .unwrap()
            })
            .collect()
    }

    fn names(value: &minijinja::Value) -> Vec<String> {
        value
            .try_iter()
            .unwrap()
            .map(|t| {
                let function = t.get_attr("function").unwrap();
                function.get_attr("name").unwrap().to_string()
            })
            .collect()
    }

    #[test]
    fn each_list_gets_its_own_value_across_evictions() {
        let cache = ToolCache::default();
        let lists: Vec<Vec<Tool>> = (0..CACHED_TOOL_LISTS + 3)
            .map(|i| tools(&[&format!("f{i}"), "shared"]))
            .collect();
        for _ in 0..2 {
            for list in &lists {
                let got = names(&cache.value(list));
                let want: Vec<String> = list.iter().map(|t| t.function.name.clone()).collect();
                assert_eq!(got, want);
            }
        }
        assert_eq!(cache.lists.lock().unwrap().len(), CACHED_TOOL_LISTS);
    }

    #[test]
    fn the_cache_is_bounded_in_bytes() {
        let cache = ToolCache::new(64 << 10, 32 << 10);
        let big = |i: usize, n: usize| tools(&[&format!("f{i}{}", "x".repeat(n))]);
        for i in 0..50 {
            cache.value(&big(i, 3_000));
            let lists = cache.lists.lock().unwrap();
            assert!(lists.iter().map(|l| l.2).sum::<usize>() <= 64 << 10);
        }
        let before = cache.lists.lock().unwrap().len();
        cache.value(&big(99, 40_000));
        assert!(cache.lists.lock().unwrap().len() <= before);
        assert!(cache.lists.lock().unwrap().iter().all(|l| l.2 <= 32 << 10));
    }
}
