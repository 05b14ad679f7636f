//! `SamplingParams` and the parameter objects it carries.

use crate::wire::{Map, Value};

wire_int_enum! {
    /// How the engine reports outputs (`vllm.sampling_params.RequestOutputKind`).
    pub enum RequestOutputKind {
        /// Every output carries the whole text so far.
        Cumulative = 0,
        /// Every output carries only what is new.
        Delta = 1,
        /// Only the final output is reported.
        FinalOnly = 2,
    }
}

wire_map! {
    /// Constraints for structured outputs (a Python dataclass: every field on the wire).
    pub struct StructuredOutputsParams (all) {
        /// A JSON schema, as a string or a map.
        pub json: Value = Value::Nil,
        /// A regular expression.
        pub regex: Option<String> = None,
        /// One of these strings.
        pub choice: Option<Vec<String>> = None,
        /// A grammar (EBNF / Lark).
        pub grammar: Option<String> = None,
        /// Any JSON object.
        pub json_object: Option<bool> = None,
        /// Forbid whitespace between JSON tokens.
        pub disable_any_whitespace: bool = false,
        /// Forbid properties the schema does not name.
        pub disable_additional_properties: bool = false,
        /// Pattern for allowed whitespace.
        pub whitespace_pattern: Option<String> = None,
        /// A structural tag specification.
        pub structural_tag: Option<String> = None,
        /// Backend chosen by vLLM's input processor.
        pub backend: Option<String> = None => "_backend",
        /// Whether the backend was chosen automatically.
        pub backend_was_auto: bool = false => "_backend_was_auto",
    }
}

wire_map! {
    /// N-gram repetition detection (a Python dataclass: every field on the wire).
    pub struct RepetitionDetectionParams (all) {
        /// Largest pattern size to detect; 0 disables detection.
        pub max_pattern_size: i64 = 0,
        /// Smallest pattern size to detect.
        pub min_pattern_size: i64 = 0,
        /// Repeats needed to trigger.
        pub min_count: i64 = 0,
    }
}

wire_map! {
    /// Sampling parameters of a request (`vllm.sampling_params.SamplingParams`), as they
    /// travel to the engine: a map without the keys equal to their defaults, with the
    /// private fields vLLM's input processor fills in (`_eos_token_id`,
    /// `_all_stop_token_ids`, `_bad_words_token_ids`) and with `stop`, `stop_token_ids`
    /// and `bad_words` always present as lists.
    ///
    /// Floats stay `f64` end to end, so `0.7` arrives as `0.7`.
    pub struct SamplingParams (omit_defaults) {
        /// Number of outputs per prompt.
        pub n: i64 = 1,
        /// Presence penalty.
        pub presence_penalty: f64 = 0.0,
        /// Frequency penalty.
        pub frequency_penalty: f64 = 0.0,
        /// Repetition penalty.
        pub repetition_penalty: f64 = 1.0,
        /// Sampling temperature.
        pub temperature: f64 = 1.0,
        /// Watermarking switch.
        pub watermarking: Option<bool> = None,
        /// Nucleus sampling mass.
        pub top_p: f64 = 1.0,
        /// Top-k (0 = off).
        pub top_k: i64 = 0,
        /// Min-p.
        pub min_p: f64 = 0.0,
        /// Random seed.
        pub seed: Option<i64> = None,
        /// Stop strings (the engine ignores them; the frontend matches them).
        pub stop: Vec<String> = Vec::new() ; always,
        /// Stop token ids.
        pub stop_token_ids: Vec<i64> = Vec::new() ; always,
        /// Keep generating after EOS.
        pub ignore_eos: bool = false,
        /// Maximum output tokens (`None`: up to the model length).
        pub max_tokens: Option<i64> = Some(16),
        /// Minimum output tokens before EOS / stop tokens count.
        pub min_tokens: i64 = 0,
        /// Top log probabilities per output token.
        pub logprobs: Option<i64> = None,
        /// Top log probabilities per prompt token.
        pub prompt_logprobs: Option<i64> = None,
        /// Token ids to score per prompt row.
        pub prompt_logprob_token_ids: Option<Value> = None,
        /// First prompt row to score.
        pub prompt_logprob_start: Option<i64> = None,
        /// Specific token ids to return log probabilities for.
        pub logprob_token_ids: Option<Vec<i64>> = None,
        /// Flat logprob layout.
        pub flat_logprobs: bool = false,
        /// Whether the output is detokenized.
        pub detokenize: bool = true,
        /// Skip special tokens when detokenizing.
        pub skip_special_tokens: bool = true,
        /// Put spaces between special tokens when detokenizing.
        pub spaces_between_special_tokens: bool = true,
        /// Keep a matched stop string in the output.
        pub include_stop_str_in_output: bool = false,
        /// How outputs are reported.
        pub output_kind: RequestOutputKind = RequestOutputKind::Cumulative,
        /// Tokens batched into each streamed output.
        pub stream_interval: Option<i64> = None,
        /// Internal cloning hint.
        pub skip_clone: bool = false,
        /// Characters held back for stop strings (set by vLLM from `stop`).
        pub output_text_buffer_length: i64 = 0,
        /// The tokenizer's EOS token.
        pub eos_token_id: Option<i64> = None => "_eos_token_id",
        /// EOS plus `stop_token_ids` (a Python set; order kept as given).
        pub all_stop_token_ids: Vec<i64> = Vec::new() => "_all_stop_token_ids",
        /// Internal watermarking flag.
        pub watermarking_skipped: bool = false => "_watermarking_skipped",
        /// Structured output constraints.
        pub structured_outputs: Option<StructuredOutputsParams> = None,
        /// Logit bias by token id.
        pub logit_bias: Option<Map<i64, f64>> = None,
        /// Only these token ids may be sampled.
        pub allowed_token_ids: Option<Vec<i64>> = None,
        /// Free-form arguments for custom samplers.
        pub extra_args: Option<Value> = None,
        /// Words that may not be generated.
        pub bad_words: Vec<String> = Vec::new() ; always,
        /// `bad_words` tokenized by the frontend.
        pub bad_words_token_ids: Option<Vec<Vec<i64>>> = None => "_bad_words_token_ids",
        /// Do not read the prefix cache.
        pub skip_reading_prefix_cache: Option<bool> = None,
        /// Token budget for thinking.
        pub thinking_token_budget: Option<i64> = None,
        /// Repetition detection.
        pub repetition_detection: Option<RepetitionDetectionParams> = None,
        /// Skip this many prompt tokens of routed-experts data.
        pub routed_experts_prompt_start: i64 = 0,
        /// Forced decode sequence (debugging / RL).
        pub trace_decode_token_ids: Option<Vec<i64>> = None,
    }
}

/// Temperatures below this are greedy sampling (vLLM's `_SAMPLING_EPS`).
const SAMPLING_EPS: f64 = 1e-5;

impl SamplingParams {
    /// Applies what vLLM's `SamplingParams.__post_init__` derives from the public fields,
    /// so that a request built here reaches the engine as one built by vLLM would:
    /// the stop-string hold-back length, greedy normalisation, `stop_token_ids` merged
    /// into `_all_stop_token_ids`, and `skip_reading_prefix_cache`.
    pub fn apply_post_init(&mut self) {
        if !self.stop.is_empty() && !self.include_stop_str_in_output {
            self.output_text_buffer_length = self
                .stop
                .iter()
                .map(|s| s.chars().count() as i64)
                .max()
                .unwrap_or(0)
                - 1;
        }
        if self.temperature < SAMPLING_EPS {
            self.top_p = 1.0;
            self.top_k = 0;
            self.min_p = 0.0;
        }
        for id in &self.stop_token_ids {
            if !self.all_stop_token_ids.contains(id) {
                self.all_stop_token_ids.push(*id);
            }
        }
        if self.skip_reading_prefix_cache.is_none() {
            self.skip_reading_prefix_cache =
                Some(self.prompt_logprobs.is_some() || self.prompt_logprob_token_ids.is_some());
        }
    }

    /// Sets the tokenizer's EOS token as vLLM's input processor does
    /// (`update_from_generation_config`): `_eos_token_id` unless `ignore_eos`, and the
    /// token added to `_all_stop_token_ids` so that `min_tokens` can hold it back.
    ///
    /// `_all_stop_token_ids` is a Python set: the engine ignores its order, and this
    /// type keeps the order it is given (Python's own iteration order is hash-based).
    pub fn set_eos_token_id(&mut self, eos: i64) {
        if !self.ignore_eos {
            self.eos_token_id = Some(eos);
        }
        if !self.all_stop_token_ids.contains(&eos) {
            self.all_stop_token_ids.push(eos);
        }
    }
}
