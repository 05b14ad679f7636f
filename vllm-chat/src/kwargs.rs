//! Chat-template keyword arguments as an ordered list.
//!
//! A request brings a handful of them (its own fields, `chat_template_kwargs`,
//! server defaults), merged on every render. A short list with dict semantics — a
//! later value replaces an earlier one in place — merges them without hashing.

use serde_json::{Map, Value};

/// Ordered `name → value` pairs with Python dict update semantics.
#[derive(Debug, Default, Clone)]
pub(crate) struct Kwargs(Vec<(String, Value)>);

impl Kwargs {
    /// Sets `key` (in place if present, else at the end).
    pub(crate) fn insert(&mut self, key: &str, value: Value) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Removes `key` and returns its value (`dict.pop`).
    pub(crate) fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }

    /// True when `key` is set.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Drops the entries `keep` refuses.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str, &Value) -> bool) {
        self.0.retain(|(k, v)| keep(k, v));
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The entries in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// As a JSON object (same order).
    pub(crate) fn into_map(self) -> Map<String, Value> {
        self.0.into_iter().collect()
    }
}

impl From<&Map<String, Value>> for Kwargs {
    fn from(map: &Map<String, Value>) -> Self {
        Kwargs(map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

impl IntoIterator for Kwargs {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Kwargs;

    #[test]
    fn updates_like_a_python_dict() {
        let mut kwargs = Kwargs::from(json!({"a": 1, "b": 2}).as_object().unwrap());
        kwargs.insert("c", json!(3));
        kwargs.insert("a", json!(10));
        assert_eq!(kwargs.get("a"), Some(&json!(10)));
        assert!(kwargs.contains_key("c") && !kwargs.contains_key("d"));
        kwargs.retain(|k, _| k != "b");
        assert_eq!(kwargs.len(), 2);
        assert_eq!(
            serde_json::Value::Object(kwargs.into_map()),
            json!({"a": 10, "c": 3})
        );
    }
}
