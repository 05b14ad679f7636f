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
            "is_sleeping" => {
                Value::Bool(!self.sleeping_tags.is_empty() || self.pause != Pause::Unpaused)
            }
            "is_scheduler_paused" => Value::Bool(self.pause != Pause::Unpaused),
            "sleep" => {
                let level = match arg(0) {
                    None => 1,
                    Some(_) => int_arg(0)?,
                };
                let answer = self.pause(&str_arg(1, "abort")?).await?;
                // Level 1+: the executor frees the weights and the KV cache.
                if level >= 1 && !self.sleeping_tags.contains("weights") {
                    self.sleeping_tags.extend(["weights", "kv_cache"]);
                }
                return Ok(answer);
            }
            "wake_up" => Value::Bool(self.wake_up(arg(0))?),
            "release_kv_cache_memory" => {
                if self.pause == Pause::Unpaused || !self.running.is_empty() {
                    return Err("release_kv_cache_memory() requires a completed pause first".into());
                }
                if !self.sleeping_tags.is_empty() {
                    return Err(
                        "release_kv_cache_memory() requires all executor memory to be resident"
                            .into(),
                    );
                }
                self.sleeping_tags.insert("kv_cache");
                Value::Nil
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
            "reset_prefix_cache" => {
                Value::Bool(self.reset_prefix_cache(arg(0).is_some_and(Value::is_truthy)))
            }
            "reset_mm_cache" | "reset_encoder_cache" | "execute_dummy_batch" | "profile" => {
                Value::Nil
            }
            "add_lora" => {
                let request = arg(0).ok_or("missing lora_request")?;
                let lora: LoRARequest = crate::wire::from_slice(&crate::wire::to_vec(request))
                    .map_err(|e| format!("invalid LoRARequest: {e}"))?;
                Value::Bool(self.adapters.add(lora.lora_int_id, lora.load_inplace)?)
            }
            "remove_lora" => Value::Bool(self.adapters.remove(int_arg(0)?)?),
            "pin_lora" => Value::Bool(self.adapters.pin(int_arg(0)?)?),
            "list_loras" => Value::from(self.adapters.list()?),
            // One result per worker (the mock has one).
            "collective_rpc" => {
                let worker_method = str_arg(0, "")?;
                let kwargs = arg(3);
                Value::Array(vec![self.worker.call(&worker_method, arg(2), kwargs)?])
            }
            "compute_weight_checksums" => Value::Array(vec![self.worker.checksums()]),
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

    /// `EngineCore.wake_up(tags)` over vLLM's `Executor.wake_up`: restores the tagged
    /// memory (all with `None`; `"scheduling"` only resumes), and resumes scheduling once
    /// nothing sleeps any more. Returns whether the engine is fully awake.
    fn wake_up(&mut self, tags: Option<&Value>) -> Result<bool, String> {
        let tags: Option<Vec<String>> = match tags {
            None => None,
            Some(v) => Some(
                v.as_array()
                    .and_then(|a| a.iter().map(|t| t.as_str().map(str::to_owned)).collect())
                    .ok_or("tags must be a list of strings")?,
            ),
        };
        let tags = tags.map(|t| {
            t.into_iter()
                .filter(|t| t != "scheduling")
                .collect::<Vec<_>>()
        });
        match &tags {
            None => self.sleeping_tags.clear(),
            // The executor ignores a wake-up naming memory that does not sleep.
            Some(tags) if tags.iter().all(|t| self.sleeping_tags.contains(t.as_str())) => {
                self.sleeping_tags
                    .retain(|held| !tags.iter().any(|t| t == held));
            }
            Some(_) => {}
        }
        let fully_awake = self.sleeping_tags.is_empty();
        if fully_awake {
            self.resume();
        }
        Ok(fully_awake)
    }

    /// `resume_scheduler`: schedule again and accept new requests.
    fn resume(&mut self) {
        self.pause = Pause::Unpaused;
        self.reject_new_requests = false;
    }
}
