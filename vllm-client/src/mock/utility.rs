//! Utility calls: the engine methods a frontend calls remotely (`EngineCore.sleep`,
//! `add_lora`, `pause_scheduler`, …), answered as vLLM's `EngineCoreProc` answers them:
//! an `EngineCoreOutputs` holding a `UtilityOutput` with the result, or with the failure
//! message `"Call to {method} method failed: {error}"`.

use crate::protocol::{EngineCoreOutputs, LoRARequest, UtilityCall, UtilityOutput, UtilityResult};
use crate::wire::Value;

use super::MockError;
use super::engine::{Engine, Pause};

/// The outcome of a successful method call.
enum Answer {
    /// The result, answered at once.
    Now(Value),
    /// Answered with `None` once no request runs.
    WhenIdle,
}

impl Engine {
    /// Runs a utility call and answers it (or schedules the answer).
    pub(crate) async fn utility(&mut self, call: UtilityCall) -> Result<(), MockError> {
        let client = self.client(call.client_index);
        match self.invoke(&call.method, &call.args).await {
            Ok(Answer::Now(value)) => self.send_utility(client, call.call_id, Ok(value)).await,
            Ok(Answer::WhenIdle) => {
                self.idle_waiters.push((client, call.call_id));
                Ok(())
            }
            Err(error) => {
                tracing::warn!(method = call.method, %error, "utility call failed");
                let message = format!("Call to {} method failed: {error}", call.method);
                self.send_utility(client, call.call_id, Err(message)).await
            }
        }
    }

    /// Sends the answer to utility call `call_id`.
    pub(crate) async fn send_utility(
        &mut self,
        client: usize,
        call_id: u64,
        result: Result<Value, String>,
    ) -> Result<(), MockError> {
        let (result, failure_message) = match result {
            Ok(value) => (Some(UtilityResult(value)), None),
            Err(message) => (None, Some(message)),
        };
        let output = EngineCoreOutputs {
            utility_output: Some(UtilityOutput {
                call_id,
                failure_message,
                result,
            }),
            ..EngineCoreOutputs::default()
        };
        self.send(client, output).await
    }

    /// The methods, with vLLM's names, defaults and return values.
    async fn invoke(&mut self, method: &str, args: &[Value]) -> Result<Answer, String> {
        let arg = |i: usize| args.get(i).filter(|v| !v.is_nil());
        let str_arg = |i: usize, default: &'static str| -> Result<String, String> {
            match arg(i) {
                None => Ok(default.to_owned()),
                Some(v) => v
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("argument {i} must be a string")),
            }
        };
        let int_arg = |i: usize| -> Result<i64, String> {
            arg(i)
                .and_then(Value::as_i64)
                .ok_or_else(|| format!("argument {i} must be an integer"))
        };
        let value = match method {
            "is_sleeping" => Value::Bool(self.sleep_level > 0 || self.pause != Pause::Unpaused),
            "is_scheduler_paused" => Value::Bool(self.pause != Pause::Unpaused),
            "sleep" => {
                let level = match arg(0) {
                    None => 1,
                    Some(_) => int_arg(0)?,
                };
                let answer = self.pause(&str_arg(1, "abort")?).await?;
                self.sleep_level = level;
                return Ok(answer);
            }
            "wake_up" => {
                self.sleep_level = 0;
                self.resume();
                Value::Bool(true)
            }
            "pause_scheduler" => return self.pause(&str_arg(0, "abort")?).await,
            "pause_generation" => {
                let mode = str_arg(0, "abort")?;
                let answer = self.pause(&mode).await?;
                self.reject_new_requests = mode != "keep";
                return Ok(answer);
            }
            "resume_scheduler" => {
                self.resume();
                Value::Nil
            }
            "reset_prefix_cache" => Value::Bool(true),
            "reset_mm_cache" | "reset_encoder_cache" | "execute_dummy_batch" => Value::Nil,
            "add_lora" => {
                let request = arg(0).ok_or("missing lora_request")?;
                let lora: LoRARequest = crate::wire::from_slice(&crate::wire::to_vec(request))
                    .map_err(|e| format!("invalid LoRARequest: {e}"))?;
                self.loras.insert(lora.lora_int_id);
                Value::Bool(true)
            }
            "remove_lora" => Value::Bool(self.loras.remove(&int_arg(0)?)),
            "pin_lora" => Value::Bool(self.loras.contains(&int_arg(0)?)),
            "list_loras" => Value::Array(self.loras.iter().map(|id| Value::from(*id)).collect()),
            // One result per worker (the mock has one): the call's own arguments.
            "collective_rpc" => {
                Value::Array(vec![arg(2).cloned().unwrap_or(Value::Array(Vec::new()))])
            }
            "get_supported_tasks" => Value::Array(vec![Value::from("generate")]),
            "set_weight_version" => {
                self.weight_version = str_arg(0, "")?;
                Value::Nil
            }
            "get_weight_version" => Value::from(self.weight_version.clone()),
            _ => {
                return Err(format!(
                    "'EngineCoreProc' object has no attribute '{method}'"
                ));
            }
        };
        Ok(Answer::Now(value))
    }

    /// `EngineCoreProc.pause_scheduler`: `abort` aborts everything (with abort outputs),
    /// `wait` lets running requests finish and answers then, `keep` freezes them.
    async fn pause(&mut self, mode: &str) -> Result<Answer, String> {
        let pause = match mode {
            "abort" | "wait" => Pause::PausedNew,
            "keep" => Pause::PausedAll,
            _ => return Err(format!("Invalid pause mode: {mode}")),
        };
        if mode == "abort" {
            self.abort_all().await.map_err(|e| e.to_string())?;
        }
        self.pause = pause;
        if mode == "wait" && !self.running.is_empty() {
            return Ok(Answer::WhenIdle);
        }
        Ok(Answer::Now(Value::Nil))
    }

    /// `resume_scheduler`: schedule again and accept new requests.
    fn resume(&mut self) {
        self.pause = Pause::Unpaused;
        self.reject_new_requests = false;
    }
}
