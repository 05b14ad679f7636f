//! The variables of one render: the request's, over the model's special tokens.
//!
//! Building a map of every variable for each request (special tokens, kwargs,
//! `messages`, `tools`, …) cost more than some templates take to run. The special
//! tokens are the same for every request, so they are shared, and the request's few
//! variables sit in a short list in front of them.

use std::borrow::Cow;
use std::sync::Arc;

use minijinja::Value;
use minijinja::value::{Enumerator, Object, ObjectRepr};

/// Root context of a render: `vars` (a later entry wins) in front of `shared`.
#[derive(Debug)]
pub(crate) struct RenderContext {
    vars: Vec<(Cow<'static, str>, Value)>,
    shared: Arc<[(Value, Value)]>,
}

impl RenderContext {
    /// A context over `shared` (the model's special tokens).
    pub(crate) fn new(shared: Arc<[(Value, Value)]>, capacity: usize) -> Self {
        RenderContext {
            vars: Vec::with_capacity(capacity),
            shared,
        }
    }

    /// Sets a variable (replacing an earlier value of the same name).
    pub(crate) fn set(&mut self, key: impl Into<Cow<'static, str>>, value: Value) {
        let key = key.into();
        match self.vars.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.vars.push((key, value)),
        }
    }

    /// The variables in the order a map built by inserting `shared`, then `vars`,
    /// would list them.
    fn keys(&self) -> Vec<Value> {
        let mut keys: Vec<Value> = self.shared.iter().map(|(k, _)| k.clone()).collect();
        for (k, _) in &self.vars {
            if !keys.iter().any(|key| key.as_str() == Some(k)) {
                keys.push(Value::from(&**k));
            }
        }
        keys
    }
}

impl Object for RenderContext {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        match self.vars.iter().find(|(k, _)| k == key) {
            Some((_, v)) => Some(v.clone()),
            None => self
                .shared
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v.clone()),
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.keys())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.keys().len())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use minijinja::Value;

    use super::RenderContext;

    #[test]
    fn request_variables_override_shared_ones_in_map_order() {
        let shared: Arc<[(Value, Value)]> = vec![
            ("bos_token".into(), "<s>".into()),
            ("eos_token".into(), "</s>".into()),
        ]
        .into();
        let mut ctx = RenderContext::new(shared, 2);
        ctx.set("messages", Value::from(1));
        ctx.set("eos_token", Value::from("<end>"));
        ctx.set("messages", Value::from(2));
        let ctx = Value::from_object(ctx);
        assert_eq!(ctx.get_attr("eos_token").unwrap().as_str(), Some("<end>"));
        assert_eq!(ctx.get_attr("bos_token").unwrap().as_str(), Some("<s>"));
        assert_eq!(ctx.get_attr("messages").unwrap().as_i64(), Some(2));
        assert!(ctx.get_attr("missing").unwrap().is_undefined());
        let keys: Vec<String> = ctx.try_iter().unwrap().map(|k| k.to_string()).collect();
        assert_eq!(keys, ["bos_token", "eos_token", "messages"]);
    }
}
