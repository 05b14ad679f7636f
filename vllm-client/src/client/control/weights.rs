//! The weight-transfer sequence of RL training and the weight version.
//!
//! A trainer updates a running engine as vLLM's `AsyncLLM` does it: initialise the
//! transfer backend once ([`EngineCoreClient::init_weight_transfer_engine`]), then per
//! update pause generation, [`EngineCoreClient::start_weight_update`], send the weights
//! ([`EngineCoreClient::update_weights`], as often as needed),
//! [`EngineCoreClient::finish_weight_update`] with the new version, and resume. The
//! transfer calls are `collective_rpc`s to the workers; their backend-specific
//! `init_info` / `update_info` maps go through untouched.

use std::collections::BTreeMap;

use super::{expect, kwargs};
use crate::client::{ClientError, EngineCoreClient};
use crate::wire::Value;

impl EngineCoreClient {
    /// Initialises the workers' weight-transfer backend with `init_info` (NCCL group
    /// address, ranks, … as the backend defines; `init_weight_transfer_engine`).
    pub async fn init_weight_transfer_engine(&self, init_info: Value) -> Result<(), ClientError> {
        self.worker_call(
            "init_weight_transfer_engine",
            vec![("init_info".into(), init_info)],
        )
        .await
    }

    /// Releases the trainer connection without stopping inference
    /// (`shutdown_weight_transfer_engine`).
    pub async fn shutdown_weight_transfer_engine(&self) -> Result<(), ClientError> {
        self.worker_call("shutdown_weight_transfer_engine", vec![])
            .await
    }

    /// Starts a weight update (`start_weight_update`).
    pub async fn start_weight_update(&self) -> Result<(), ClientError> {
        self.worker_call("start_weight_update", vec![]).await
    }

    /// Starts a weight update of the speculative draft model
    /// (`start_draft_weight_update`).
    pub async fn start_draft_weight_update(&self) -> Result<(), ClientError> {
        self.worker_call("start_draft_weight_update", vec![]).await
    }

    /// Receives one batch of weights described by `update_info` (names, dtypes, shapes,
    /// … as the backend defines; `update_weights`).
    pub async fn update_weights(&self, update_info: Value) -> Result<(), ClientError> {
        self.worker_call("update_weights", vec![("update_info".into(), update_info)])
            .await
    }

    /// Finishes the weight update (`finish_weight_update`) and, when given, records
    /// `weight_version` as the engines' new version.
    pub async fn finish_weight_update(
        &self,
        weight_version: Option<&str>,
    ) -> Result<(), ClientError> {
        self.worker_call("finish_weight_update", vec![]).await?;
        match weight_version {
            Some(version) => self.set_weight_version(version).await,
            None => Ok(()),
        }
    }

    /// Sets the engines' weight version without a weight update (`set_weight_version`);
    /// every output carries it from then on.
    pub async fn set_weight_version(&self, weight_version: &str) -> Result<(), ClientError> {
        self.call_utility("set_weight_version", vec![weight_version.into()])
            .await
            .map(drop)
    }

    /// The engines' weight version (`get_weight_version`; `"default"` until set; the
    /// engines must agree).
    pub async fn get_weight_version(&self) -> Result<String, ClientError> {
        let v = self
            .call_utility_consensus("get_weight_version", vec![])
            .await?;
        expect("get_weight_version", &v, "a string", |v| {
            v.as_str().map(str::to_owned)
        })
    }

    /// A checksum per weight of every worker of every engine
    /// (`compute_weight_checksums`): one map of parameter name to checksum per worker,
    /// engines in order.
    pub async fn compute_weight_checksums(
        &self,
    ) -> Result<Vec<BTreeMap<String, String>>, ClientError> {
        const METHOD: &str = "compute_weight_checksums";
        let mut workers = Vec::new();
        for engine in self.call_utility_all(METHOD, vec![]).await? {
            let maps = expect(METHOD, &engine, "a list of maps", |v| {
                v.as_array()?
                    .iter()
                    .map(string_map)
                    .collect::<Option<Vec<_>>>()
            })?;
            workers.extend(maps);
        }
        Ok(workers)
    }

    /// `collective_rpc(method, kwargs=…)` whose worker results are ignored.
    async fn worker_call(
        &self,
        method: &str,
        kwargs_entries: Vec<(String, Value)>,
    ) -> Result<(), ClientError> {
        let args = vec![
            method.into(),
            Value::Nil,
            Value::Array(Vec::new()),
            kwargs(kwargs_entries),
        ];
        self.call_utility("collective_rpc", args).await.map(drop)
    }
}

/// A msgpack map of strings to strings.
fn string_map(value: &Value) -> Option<BTreeMap<String, String>> {
    match value {
        Value::Map(entries) => entries
            .iter()
            .map(|(k, v)| Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())))
            .collect(),
        _ => None,
    }
}
