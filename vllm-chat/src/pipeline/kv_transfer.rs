//! Prefill/decode disaggregation: the rejection notice. vLLM 0.33.0's serving layer
//! wraps its chat, completion and responses handlers in
//! `_with_kv_transfer_rejection_cleanup` (`vllm/entrypoints/generate/base/serving.py`):
//! when the server runs a KV connector (`--kv-transfer-config`) and a request's
//! `kv_transfer_params` is a non-empty object with a truthy `do_remote_prefill` (a
//! decode instance's request, whose prompt KV a prefill instance holds pinned for it),
//! a handler that raises or answers an error makes the frontend call
//! `AsyncLLM.notify_kv_transfer_request_rejected`: a pre-aborted engine request
//! ([`EngineCoreClient::notify_kv_transfer_request_rejected`]) so that the connector
//! frees those blocks instead of leaving them pinned until they expire.
//!
//! What counts, as in vLLM:
//! - the handler's failures: model and adapter checks, rendering, prompt length and
//!   vocabulary checks, sampling checks, a refused engine request — and, for a
//!   non-streaming request, a failure while it runs (vLLM's handler awaits the whole
//!   answer); a streaming request's failures after its stream started do not count;
//! - not the checks vLLM's request model (pydantic) makes before the handler runs:
//!   the body's shape and field constraints (`Bad Request` errors) and the request's
//!   validators (`ChatCompletionRequest::validate`, `CompletionRequest::validate`);
//! - the notice carries the request's `request_id` field (vLLM's default is a new
//!   random id, which then also names the answer) and the `X-data-parallel-rank`
//!   routing; a notice that cannot be sent is logged, never the client's error.
//!
//! One known difference: vLLM checks a streamed completion's prompt token ids against
//! the vocabulary inside the stream (a 200 stream with an error event, so no notice);
//! this pipeline refuses such a request before its stream (a 400, and the notice).
//! `examples/scripts/compare_vllm_frontend.py --modes pd` compares the rest, notice for
//! notice, against vLLM's frontend.

use serde_json::{Map, Value};
use vllm_client::EngineCoreClient;

use super::error::ApiError;
use super::{Pipeline, Routing, ids};
use crate::native::py::truthy;

/// The error kind of vLLM's request-validation handler (pydantic, before any handler).
const REQUEST_VALIDATION_KIND: &str = "Bad Request";

/// A rejection notice to send if the request fails in its handler.
#[derive(Debug, Clone)]
pub(crate) struct KvRejection {
    request_id: String,
    kv_transfer_params: Map<String, Value>,
    data_parallel_rank: Option<i64>,
}

impl Pipeline {
    /// The notice a request needs if it fails (vLLM's conditions: a KV connector, and
    /// `kv_transfer_params` with a truthy `do_remote_prefill`). `request_id` is the
    /// request's own field; when it is unset a random id is put there, so that the
    /// notice and the answer share it as in vLLM.
    pub(crate) fn kv_rejection(
        &self,
        kv_transfer_params: Option<&Map<String, Value>>,
        request_id: &mut Option<String>,
        routing: Routing,
    ) -> Option<KvRejection> {
        if !self.config.kv_connector {
            return None;
        }
        let params = kv_transfer_params?;
        if !truthy(params.get("do_remote_prefill")) {
            return None;
        }
        let request_id = request_id.get_or_insert_with(ids::random_hex).clone();
        Some(KvRejection {
            request_id,
            kv_transfer_params: params.clone(),
            data_parallel_rank: routing.data_parallel_rank,
        })
    }
}

impl KvRejection {
    /// Sends the notice for a request that failed with `error` in its handler (not for
    /// request-validation errors, which vLLM raises before the handler).
    pub(crate) async fn notify(self, client: &EngineCoreClient, error: &ApiError) {
        if error.kind == REQUEST_VALIDATION_KIND {
            return;
        }
        let params = super::sampling::json_to_wire(&Value::Object(self.kv_transfer_params));
        if let Err(e) = client
            .notify_kv_transfer_request_rejected(
                self.request_id.as_str(),
                params,
                self.data_parallel_rank,
            )
            .await
        {
            tracing::warn!(
                request_id = %self.request_id,
                "Failed to notify KV connector about rejected request: {e}"
            );
        }
    }

    /// A handler's outcome with vLLM's rule around it: the notice if it failed; if it
    /// was accepted and is not streamed, the notice kept (by `keep`) for a failure while
    /// it runs (vLLM's handler awaits the whole answer).
    pub(crate) async fn around_handler<T>(
        rejection: Option<Self>,
        streaming: bool,
        client: &EngineCoreClient,
        result: Result<T, ApiError>,
        keep: impl FnOnce(&mut T, Option<Self>),
    ) -> Result<T, ApiError> {
        let mut accepted = Self::after(rejection.clone(), client, result).await?;
        if !streaming {
            keep(&mut accepted, rejection);
        }
        Ok(accepted)
    }

    /// `result`, after sending the notice if it is an error.
    pub(crate) async fn after<T>(
        rejection: Option<Self>,
        client: &EngineCoreClient,
        result: Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        // By value: an accepted request (not `Sync`) is not borrowed across the await.
        match result {
            Ok(value) => Ok(value),
            Err(error) => {
                if let Some(rejection) = rejection {
                    rejection.notify(client, &error).await;
                }
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pipeline's futures stay `Send` (servers run them on multi-threaded runtimes;
    /// an accepted request is not `Sync`, so none may be borrowed across an await).
    #[allow(dead_code)]
    fn requests_are_send(
        pipeline: Pipeline,
        chat: crate::openai::ChatCompletionRequest,
        completion: crate::openai::CompletionRequest,
    ) {
        fn send<T: Send>(_: T) {}
        send(pipeline.chat(chat, Routing::default()));
        send(pipeline.completion(completion, Routing::default()));
    }

    #[test]
    fn truthiness_is_python_s() {
        for falsy in [
            serde_json::json!(null),
            serde_json::json!(false),
            serde_json::json!(0),
            serde_json::json!(0.0),
            serde_json::json!(""),
            serde_json::json!([]),
            serde_json::json!({}),
        ] {
            assert!(!truthy(Some(&falsy)), "{falsy}");
        }
        for truthy_value in [
            serde_json::json!(true),
            serde_json::json!(1),
            serde_json::json!(-0.5),
            serde_json::json!("no"),
            serde_json::json!([0]),
            serde_json::json!({"a": 0}),
        ] {
            assert!(truthy(Some(&truthy_value)), "{truthy_value}");
        }
    }
}
