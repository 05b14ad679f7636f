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

/// Recently seen tool lists and their template values.
#[derive(Debug, Default)]
pub(crate) struct ToolCache {
    lists: Mutex<Vec<(Vec<Tool>, Value)>>,
}

impl ToolCache {
    /// `tools` as templates see them (vLLM's `model_dump()` of each tool).
    pub(crate) fn value(&self, tools: &[Tool]) -> Value {
        if let Ok(lists) = self.lists.lock()
            && let Some((_, value)) = lists.iter().find(|(t, _)| identical::tools(t, tools))
        {
            return value.clone();
        }
        let value = Value::from(
            tools
                .iter()
                .map(|t| from_json(&t.template_value()))
                .collect::<Vec<_>>(),
        );
        if let Ok(mut lists) = self.lists.lock() {
            if lists.len() >= CACHED_TOOL_LISTS {
                lists.remove(0);
            }
            lists.push((tools.to_vec(), value.clone()));
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
}
