//! LoRA adapter slots, as vLLM's `LRUCacheWorkerLoRAManager` keeps them: a cache of at
//! most `max_cpu_loras` adapters, the least recently used one evicted for a new one,
//! pinned adapters never evicted.

use super::config::MockLora;

/// The adapters an engine holds, least recently used first.
#[derive(Debug, Default)]
pub(crate) struct Adapters {
    /// `None` when LoRA is disabled (vLLM's default).
    config: Option<MockLora>,
    order: Vec<i64>,
    pinned: Vec<i64>,
}

/// vLLM's error for LoRA calls to an engine started without `--enable-lora`.
const DISABLED: &str = "LoRA is not enabled. Use --enable-lora to enable LoRA.";

impl Adapters {
    pub(crate) fn new(config: Option<MockLora>) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    fn capacity(&self) -> Result<usize, String> {
        let config = self.config.as_ref().ok_or(DISABLED)?;
        Ok(config.max_cpu_loras.unwrap_or(config.max_loras).max(1))
    }

    /// `add_lora`: loads adapter `id` (again, with `load_inplace`), evicting the least
    /// recently used unpinned adapter when the cache is full; vLLM answers `True`.
    pub(crate) fn add(&mut self, id: i64, load_inplace: bool) -> Result<bool, String> {
        let capacity = self.capacity()?;
        if self.order.contains(&id) && !load_inplace {
            self.touch(id);
            return Ok(true);
        }
        self.order.retain(|&held| held != id);
        if self.order.len() + 1 > capacity {
            let oldest = self
                .order
                .iter()
                .position(|held| !self.pinned.contains(held))
                .ok_or("All items are pinned, cannot remove oldest from the cache.")?;
            self.order.remove(oldest);
        }
        self.order.push(id);
        Ok(true)
    }

    /// A request for adapter `id` runs: the worker loads it (or marks it used).
    pub(crate) fn use_for_request(&mut self, id: i64) {
        if self.config.is_some() && self.add(id, false).is_err() {
            tracing::warn!(id, "no LoRA slot for a request's adapter");
        }
    }

    fn touch(&mut self, id: i64) {
        self.order.retain(|&held| held != id);
        self.order.push(id);
    }

    /// `remove_lora`: whether the adapter was loaded.
    pub(crate) fn remove(&mut self, id: i64) -> Result<bool, String> {
        self.capacity()?;
        self.pinned.retain(|&pinned| pinned != id);
        let before = self.order.len();
        self.order.retain(|&held| held != id);
        Ok(self.order.len() != before)
    }

    /// `pin_lora`: pins a loaded adapter; vLLM fails for one that is not loaded.
    pub(crate) fn pin(&mut self, id: i64) -> Result<bool, String> {
        self.capacity()?;
        if !self.order.contains(&id) {
            return Err(format!("Pinning failed. LoRA {id} is not registered."));
        }
        if !self.pinned.contains(&id) {
            self.pinned.push(id);
        }
        Ok(true)
    }

    /// `list_loras`: the loaded adapter ids.
    pub(crate) fn list(&self) -> Result<Vec<i64>, String> {
        self.capacity()?;
        let mut ids = self.order.clone();
        ids.sort_unstable();
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(max_loras: usize) -> Adapters {
        Adapters::new(Some(MockLora {
            max_loras,
            max_cpu_loras: None,
        }))
    }

    #[test]
    fn the_least_recently_used_unpinned_adapter_is_evicted() {
        let mut a = slots(2);
        assert_eq!(a.add(1, false), Ok(true));
        assert_eq!(a.add(2, false), Ok(true));
        a.use_for_request(1); // 2 is now the oldest
        assert_eq!(a.add(3, false), Ok(true));
        assert_eq!(a.list(), Ok(vec![1, 3]));
        assert_eq!(a.pin(1), Ok(true));
        assert_eq!(a.add(4, false), Ok(true));
        assert_eq!(a.list(), Ok(vec![1, 4]), "the pinned adapter stays");
        assert_eq!(a.pin(4), Ok(true));
        assert_eq!(
            a.add(5, false),
            Err("All items are pinned, cannot remove oldest from the cache.".into())
        );
        assert_eq!(a.remove(4), Ok(true));
        assert_eq!(a.remove(4), Ok(false));
        assert_eq!(
            a.pin(9),
            Err("Pinning failed. LoRA 9 is not registered.".into())
        );
    }

    #[test]
    fn a_disabled_engine_refuses_lora_calls() {
        let mut a = Adapters::new(None);
        assert_eq!(a.add(1, false), Err(DISABLED.into()));
        assert_eq!(a.list(), Err(DISABLED.into()));
    }
}
