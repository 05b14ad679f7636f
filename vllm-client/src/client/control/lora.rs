//! LoRA adapters: load, unload, list and pin them on the engines.

use super::{expect, expect_bool};
use crate::client::{ClientError, EngineCoreClient};
use crate::protocol::LoRARequest;

impl EngineCoreClient {
    /// Loads a LoRA adapter on every engine (`add_lora`); returns whether it was newly
    /// added (`false` when it was loaded already). The client remembers which engines
    /// hold it and routes requests for it there (see [`EngineCoreClient::generate`]).
    pub async fn add_lora(&self, lora: &LoRARequest) -> Result<bool, ClientError> {
        let v = self.call_utility("add_lora", vec![lora.to_value()]).await?;
        let added = expect_bool("add_lora", &v)?;
        self.inner
            .shared
            .lock()
            .fleet
            .adapter_loaded_everywhere(lora.lora_int_id);
        Ok(added)
    }

    /// Unloads a LoRA adapter from every engine (`remove_lora`); returns whether it was
    /// loaded.
    pub async fn remove_lora(&self, lora_id: i64) -> Result<bool, ClientError> {
        let v = self
            .call_utility("remove_lora", vec![lora_id.into()])
            .await?;
        self.inner.shared.lock().fleet.adapter_removed(lora_id);
        expect_bool("remove_lora", &v)
    }

    /// The ids of the LoRA adapters loaded on the first engine, ascending (`list_loras`).
    pub async fn list_loras(&self) -> Result<Vec<i64>, ClientError> {
        let v = self.call_utility("list_loras", vec![]).await?;
        let mut ids = expect("list_loras", &v, "a list of ints", |v| {
            v.as_array()?
                .iter()
                .map(|id| id.as_i64())
                .collect::<Option<Vec<_>>>()
        })?;
        ids.sort_unstable();
        Ok(ids)
    }

    /// Pins a loaded LoRA adapter so that it is never evicted (`pin_lora`); vLLM fails
    /// the call for an adapter that is not loaded.
    pub async fn pin_lora(&self, lora_id: i64) -> Result<bool, ClientError> {
        let v = self.call_utility("pin_lora", vec![lora_id.into()]).await?;
        expect_bool("pin_lora", &v)
    }
}
