//! The mock engine's one worker: the `collective_rpc` methods RL frameworks call, with
//! the weight-transfer session rules of vLLM's GPU worker (`vllm/v1/worker/gpu_worker.py`)
//! and a weight checksum that changes with every update, so that a trainer's loop can be
//! tested end to end without a GPU.

use crate::wire::Value;

/// The worker's weight-transfer state.
#[derive(Debug, Default)]
pub(crate) struct Worker {
    /// `init_weight_transfer_engine` was called (and not shut down).
    transfer_ready: bool,
    /// Between `start_weight_update` and `finish_weight_update`.
    update_active: bool,
    /// Weight batches received, over all updates: the mock's "weights".
    batches: u64,
}

const NOT_CONFIGURED: &str =
    "Weight transfer not configured. Please set weight_transfer_config to enable weight transfer.";

impl Worker {
    /// Runs worker method `method` with positional `args` and keyword `kwargs`; the result
    /// of this worker. Unknown methods fail as on a vLLM worker.
    pub(crate) fn call(
        &mut self,
        method: &str,
        args: Option<&Value>,
        kwargs: Option<&Value>,
    ) -> Result<Value, String> {
        match method {
            "init_weight_transfer_engine" => {
                kwargs
                    .and_then(|k| k.get("init_info"))
                    .ok_or("init_weight_transfer_engine() missing 1 required positional argument: 'init_info'")?;
                self.transfer_ready = true;
            }
            "shutdown_weight_transfer_engine" => {
                if self.update_active {
                    return Err("Cannot release a trainer connection during a weight update".into());
                }
                self.transfer_ready = false;
            }
            "start_weight_update" | "start_draft_weight_update" => {
                self.check_ready()?;
                if method == "start_draft_weight_update" {
                    return Err(
                        "MockWeightTransferEngine does not support draft model weight updates."
                            .into(),
                    );
                }
                if self.update_active {
                    return Err(
                        "start_weight_update called while a weight update is already \
                                active. Call finish_weight_update first."
                            .into(),
                    );
                }
                self.update_active = true;
            }
            "update_weights" => {
                self.check_ready()?;
                kwargs.and_then(|k| k.get("update_info")).ok_or(
                    "update_weights() missing 1 required positional argument: 'update_info'",
                )?;
                if !self.update_active {
                    return Err("start_weight_update must be called before update_weights.".into());
                }
                self.batches += 1;
            }
            "finish_weight_update" => {
                self.check_ready()?;
                if !self.update_active {
                    return Err(
                        "finish_weight_update called without a matching start_weight_update."
                            .into(),
                    );
                }
                self.update_active = false;
            }
            "synchronize_device" | "sleep" | "wake_up" | "discard" => {}
            // Any other method answers with its own arguments, so that a caller can see
            // what reached the worker.
            _ => {
                return Ok(Value::Array(vec![
                    Value::from(method),
                    args.cloned().unwrap_or(Value::Array(Vec::new())),
                    kwargs.cloned().unwrap_or_default(),
                ]));
            }
        }
        Ok(Value::Nil)
    }

    fn check_ready(&self) -> Result<(), String> {
        if self.transfer_ready {
            Ok(())
        } else {
            Err(NOT_CONFIGURED.into())
        }
    }

    /// `compute_weight_checksums` of this worker: one parameter whose checksum counts the
    /// weight batches received.
    pub(crate) fn checksums(&self) -> Value {
        Value::Map(vec![(
            Value::from("mock.weight"),
            Value::from(format!("{:016x}", self.batches)),
        )])
    }
}
