//! vLLM's `SamplingParams`: resolved from a request (`to_sampling_params` and
//! `__post_init__`), range-checked (`_verify_args`) with vLLM's messages, and
//! (de)serialized as vLLM's msgspec encoding.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::structured::StructuredOutputsParams;
use crate::openai::StopParam;
use crate::{RenderError, python};

/// vLLM's `VLLM_MAX_N_SEQUENCES` default: the largest `n`.
pub const MAX_N_SEQUENCES: u32 = 16384;
/// Below this temperature vLLM samples greedily (`_SAMPLING_EPS`).
const SAMPLING_EPS: f64 = 1e-5;
/// vLLM raises smaller positive temperatures to this (`_MAX_TEMP`).
const MIN_POSITIVE_TEMPERATURE: f64 = 1e-2;

/// vLLM's `SamplingParams` as resolved for one request.
///
/// It serializes like vLLM's (`msgspec.to_builtins` with `omit_defaults`): fields are
/// written in struct order and a field is left out when it holds its default. msgspec
/// tests "holds its default" by object identity, so what CPython shares decides it:
/// `None`, booleans and small integers are always the default object when equal; a
/// float is the default object only when `sampling_params.py` itself set it (unset
/// fields, and `top_p`/`min_p` reset for greedy sampling). The penalties,
/// temperature, `top_p` and `min_p` that vLLM's request classes always pass are
/// therefore always written.
///
/// It deserializes from that encoding (what `/v1/chat/completions/render` returns
/// and `/inference/v1/generate` takes): a missing field takes vLLM's default, and
/// a serialized value reads back to the same value. Fields this type does not model
/// (`watermarking`, `thinking_token_budget`, …) are ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    /// Number of choices.
    pub n: u32,
    /// Presence penalty.
    pub presence_penalty: f64,
    /// Frequency penalty.
    pub frequency_penalty: f64,
    /// Repetition penalty.
    pub repetition_penalty: f64,
    /// Temperature.
    pub temperature: f64,
    /// Nucleus sampling (`None`: vLLM's default object, 1.0; reset for greedy sampling).
    pub top_p: Option<f64>,
    /// Top-k (0: off; -1 is accepted as off).
    pub top_k: i64,
    /// Min-p (`None`: vLLM's default object, 0.0; reset for greedy sampling).
    pub min_p: Option<f64>,
    /// Seed.
    pub seed: Option<i64>,
    /// Stop strings.
    pub stop: Vec<String>,
    /// Stop token ids.
    pub stop_token_ids: Vec<u32>,
    /// Ignore EOS.
    pub ignore_eos: bool,
    /// Maximum output tokens.
    pub max_tokens: i64,
    /// Minimum output tokens.
    pub min_tokens: i64,
    /// Logprobs per output token.
    pub logprobs: Option<i64>,
    /// Logprobs per prompt token.
    pub prompt_logprobs: Option<i64>,
    /// Drop special tokens from the output text.
    pub skip_special_tokens: bool,
    /// Spaces between special tokens when decoding.
    pub spaces_between_special_tokens: bool,
    /// Keep the stop string in the output.
    pub include_stop_str_in_output: bool,
    /// 0 cumulative, 1 delta (streaming), 2 final only.
    pub output_kind: u8,
    /// Tokens batched into each streamed output (raises the server's
    /// `--stream-interval`).
    pub stream_interval: Option<i64>,
    /// Characters held back to catch stop strings (`max(len(stop)) - 1`).
    pub output_text_buffer_length: usize,
    /// Structured-output constraints.
    pub structured_outputs: Option<StructuredOutputsParams>,
    /// Logit bias.
    pub logit_bias: Option<Map<String, Value>>,
    /// Allowed output token ids.
    pub allowed_token_ids: Option<Vec<u32>>,
    /// Extra arguments (`vllm_xargs`).
    pub extra_args: Option<Map<String, Value>>,
    /// Banned words.
    pub bad_words: Vec<String>,
    /// Skip reading the prefix cache (needed for prompt logprobs).
    pub skip_reading_prefix_cache: bool,
}

impl Default for SamplingParams {
    /// vLLM's defaults (what an empty encoding reads back to).
    fn default() -> Self {
        SamplingParams {
            n: 1,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            repetition_penalty: 1.0,
            temperature: 1.0,
            top_p: None,
            top_k: 0,
            min_p: None,
            seed: None,
            stop: Vec::new(),
            stop_token_ids: Vec::new(),
            ignore_eos: false,
            max_tokens: 16,
            min_tokens: 0,
            logprobs: None,
            prompt_logprobs: None,
            skip_special_tokens: true,
            spaces_between_special_tokens: true,
            include_stop_str_in_output: false,
            output_kind: 0,
            stream_interval: None,
            output_text_buffer_length: 0,
            structured_outputs: None,
            logit_bias: None,
            allowed_token_ids: None,
            extra_args: None,
            bad_words: Vec::new(),
            skip_reading_prefix_cache: false,
        }
    }
}

impl Serialize for SamplingParams {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        if self.n != 1 {
            m.serialize_entry("n", &self.n)?;
        }
        m.serialize_entry("presence_penalty", &self.presence_penalty)?;
        m.serialize_entry("frequency_penalty", &self.frequency_penalty)?;
        m.serialize_entry("repetition_penalty", &self.repetition_penalty)?;
        m.serialize_entry("temperature", &self.temperature)?;
        if let Some(top_p) = self.top_p {
            m.serialize_entry("top_p", &top_p)?;
        }
        if self.top_k != 0 {
            m.serialize_entry("top_k", &self.top_k)?;
        }
        if let Some(min_p) = self.min_p {
            m.serialize_entry("min_p", &min_p)?;
        }
        if let Some(seed) = self.seed {
            m.serialize_entry("seed", &seed)?;
        }
        m.serialize_entry("stop", &self.stop)?;
        m.serialize_entry("stop_token_ids", &self.stop_token_ids)?;
        if self.ignore_eos {
            m.serialize_entry("ignore_eos", &true)?;
        }
        if self.max_tokens != 16 {
            m.serialize_entry("max_tokens", &self.max_tokens)?;
        }
        if self.min_tokens != 0 {
            m.serialize_entry("min_tokens", &self.min_tokens)?;
        }
        if let Some(l) = self.logprobs {
            m.serialize_entry("logprobs", &l)?;
        }
        if let Some(l) = self.prompt_logprobs {
            m.serialize_entry("prompt_logprobs", &l)?;
        }
        if !self.skip_special_tokens {
            m.serialize_entry("skip_special_tokens", &false)?;
        }
        if !self.spaces_between_special_tokens {
            m.serialize_entry("spaces_between_special_tokens", &false)?;
        }
        if self.include_stop_str_in_output {
            m.serialize_entry("include_stop_str_in_output", &true)?;
        }
        if self.output_kind != 0 {
            m.serialize_entry("output_kind", &self.output_kind)?;
        }
        if let Some(interval) = self.stream_interval {
            m.serialize_entry("stream_interval", &interval)?;
        }
        m.serialize_entry("skip_clone", &true)?;
        if self.output_text_buffer_length != 0 {
            m.serialize_entry("output_text_buffer_length", &self.output_text_buffer_length)?;
        }
        if let Some(s) = &self.structured_outputs {
            m.serialize_entry("structured_outputs", s)?;
        }
        if let Some(b) = &self.logit_bias {
            m.serialize_entry("logit_bias", b)?;
        }
        if let Some(a) = &self.allowed_token_ids {
            m.serialize_entry("allowed_token_ids", a)?;
        }
        if let Some(e) = &self.extra_args {
            m.serialize_entry("extra_args", e)?;
        }
        m.serialize_entry("bad_words", &self.bad_words)?;
        m.serialize_entry("skip_reading_prefix_cache", &self.skip_reading_prefix_cache)?;
        m.end()
    }
}

/// The msgspec encoding with vLLM's defaults, for [`SamplingParams`]'s `Deserialize`.
#[derive(Deserialize)]
#[serde(default)]
struct Encoded {
    n: u32,
    presence_penalty: f64,
    frequency_penalty: f64,
    repetition_penalty: f64,
    temperature: f64,
    top_p: Option<f64>,
    top_k: i64,
    min_p: Option<f64>,
    seed: Option<i64>,
    stop: Option<StopParam>,
    stop_token_ids: Option<Vec<u32>>,
    ignore_eos: bool,
    max_tokens: i64,
    min_tokens: i64,
    logprobs: Option<i64>,
    prompt_logprobs: Option<i64>,
    skip_special_tokens: bool,
    spaces_between_special_tokens: bool,
    include_stop_str_in_output: bool,
    output_kind: u8,
    stream_interval: Option<i64>,
    output_text_buffer_length: usize,
    structured_outputs: Option<StructuredOutputsParams>,
    logit_bias: Option<Map<String, Value>>,
    allowed_token_ids: Option<Vec<u32>>,
    extra_args: Option<Map<String, Value>>,
    bad_words: Option<Vec<String>>,
    skip_reading_prefix_cache: Option<bool>,
}

impl Default for Encoded {
    fn default() -> Self {
        Encoded {
            n: 1,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            repetition_penalty: 1.0,
            temperature: 1.0,
            top_p: None,
            top_k: 0,
            min_p: None,
            seed: None,
            stop: None,
            stop_token_ids: None,
            ignore_eos: false,
            max_tokens: 16,
            min_tokens: 0,
            logprobs: None,
            prompt_logprobs: None,
            skip_special_tokens: true,
            spaces_between_special_tokens: true,
            include_stop_str_in_output: false,
            output_kind: 0,
            stream_interval: None,
            output_text_buffer_length: 0,
            structured_outputs: None,
            logit_bias: None,
            allowed_token_ids: None,
            extra_args: None,
            bad_words: None,
            skip_reading_prefix_cache: None,
        }
    }
}

impl<'de> Deserialize<'de> for SamplingParams {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let e = Encoded::deserialize(deserializer)?;
        Ok(SamplingParams {
            n: e.n,
            presence_penalty: e.presence_penalty,
            frequency_penalty: e.frequency_penalty,
            repetition_penalty: e.repetition_penalty,
            temperature: e.temperature,
            top_p: e.top_p,
            top_k: e.top_k,
            min_p: e.min_p,
            seed: e.seed,
            stop: e.stop.as_ref().map(StopParam::to_vec).unwrap_or_default(),
            stop_token_ids: e.stop_token_ids.unwrap_or_default(),
            ignore_eos: e.ignore_eos,
            max_tokens: e.max_tokens,
            min_tokens: e.min_tokens,
            logprobs: e.logprobs,
            prompt_logprobs: e.prompt_logprobs,
            skip_special_tokens: e.skip_special_tokens,
            spaces_between_special_tokens: e.spaces_between_special_tokens,
            include_stop_str_in_output: e.include_stop_str_in_output,
            output_kind: e.output_kind,
            stream_interval: e.stream_interval,
            output_text_buffer_length: e.output_text_buffer_length,
            structured_outputs: e.structured_outputs,
            logit_bias: e.logit_bias,
            allowed_token_ids: e.allowed_token_ids,
            extra_args: e.extra_args,
            bad_words: e.bad_words.unwrap_or_default(),
            skip_reading_prefix_cache: e
                .skip_reading_prefix_cache
                .unwrap_or(e.prompt_logprobs.is_some()),
        })
    }
}

impl SamplingParams {
    /// vLLM's `_verify_args` and `_verify_greedy_sampling`: the range checks, with
    /// vLLM's messages (and its `parameter=` where vLLM names one).
    pub fn verify(&self) -> Result<(), RenderError> {
        let err = RenderError::validation;
        let float = python::float;
        if self.n < 1 {
            return Err(err(
                format!("n must be at least 1, got {}.", self.n),
                None,
                None,
            ));
        }
        if self.n > MAX_N_SEQUENCES {
            return Err(err(
                format!(
                    "n must be at most {MAX_N_SEQUENCES}, got {}. To increase this limit, set the VLLM_MAX_N_SEQUENCES environment variable.",
                    self.n
                ),
                None,
                None,
            ));
        }
        for (name, value) in [
            ("presence_penalty", self.presence_penalty),
            ("frequency_penalty", self.frequency_penalty),
        ] {
            if !(-2.0..=2.0).contains(&value) {
                return Err(err(
                    format!("{name} must be in [-2, 2], got {}.", float(value)),
                    None,
                    None,
                ));
            }
        }
        let repetition = self.repetition_penalty;
        if !repetition.is_finite() {
            return Err(err(
                format!(
                    "repetition_penalty must be a finite number, got {}.",
                    float(repetition)
                ),
                None,
                None,
            ));
        }
        if repetition <= 0.0 {
            return Err(err(
                format!(
                    "repetition_penalty must be greater than zero, got {}.",
                    float(repetition)
                ),
                None,
                None,
            ));
        }
        let t = self.temperature;
        let temperature_error = if !t.is_finite() {
            Some(format!(
                "temperature must be a finite number, got {}.",
                float(t)
            ))
        } else if t < 0.0 {
            Some(format!(
                "temperature must be non-negative, got {}.",
                float(t)
            ))
        } else if t > 2.0 {
            Some(format!("temperature must be in [0, 2], got {}.", float(t)))
        } else {
            None
        };
        if let Some(message) = temperature_error {
            return Err(err(message, Some("temperature"), Some(float(t))));
        }
        let top_p = self.top_p.unwrap_or(1.0);
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(err(
                format!("top_p must be in (0, 1], got {}.", float(top_p)),
                Some("top_p"),
                Some(float(top_p)),
            ));
        }
        if self.top_k < -1 {
            return Err(err(
                format!(
                    "top_k must be 0 (disable), or at least 1, got {}.",
                    self.top_k
                ),
                None,
                None,
            ));
        }
        let min_p = self.min_p.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&min_p) {
            return Err(err(
                format!("min_p must be in [0, 1], got {}.", float(min_p)),
                None,
                None,
            ));
        }
        if self.max_tokens < 1 {
            return Err(err(
                format!("max_tokens must be at least 1, got {}.", self.max_tokens),
                Some("max_tokens"),
                Some(self.max_tokens.to_string()),
            ));
        }
        if self.min_tokens < 0 {
            return Err(err(
                format!(
                    "min_tokens must be greater than or equal to 0, got {}.",
                    self.min_tokens
                ),
                None,
                None,
            ));
        }
        if self.min_tokens > self.max_tokens {
            return Err(err(
                format!(
                    "min_tokens must be less than or equal to max_tokens={}, got {}.",
                    self.max_tokens, self.min_tokens
                ),
                None,
                None,
            ));
        }
        if let Some(interval) = self.stream_interval.filter(|&i| i < 1) {
            return Err(err(
                format!("stream_interval must be at least 1, got {interval}."),
                Some("stream_interval"),
                Some(interval.to_string()),
            ));
        }
        for (name, value) in [
            ("logprobs", self.logprobs),
            ("prompt_logprobs", self.prompt_logprobs),
        ] {
            if let Some(v) = value
                && v < 0
                && v != -1
            {
                return Err(err(
                    format!("{name} must be non-negative or -1, got {v}."),
                    Some(name),
                    Some(v.to_string()),
                ));
            }
        }
        if self.stop.iter().any(String::is_empty) {
            return Err(err(
                "stop cannot contain an empty string.".into(),
                None,
                None,
            ));
        }
        if self.bad_words.iter().any(String::is_empty) {
            let words = Value::from(self.bad_words.clone());
            return Err(err(
                format!(
                    "bad_words cannot contain an empty string. Got bad_words={}",
                    python::repr(&words)
                ),
                None,
                None,
            ));
        }
        if let Some(constraints) = &self.structured_outputs {
            constraints.verify()?;
        }
        if self.temperature < SAMPLING_EPS && self.n > 1 {
            return Err(err(
                format!("n must be 1 when using greedy sampling, got {}.", self.n),
                None,
                None,
            ));
        }
        Ok(())
    }
}

/// Sampling defaults of the model (`generation_config.json`), as vLLM's
/// `get_diff_sampling_param` reads them with `--generation-config auto`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplingDefaults(pub Map<String, Value>);

impl SamplingDefaults {
    /// Picks the sampling keys of a generation config (`max_new_tokens` becomes `max_tokens`).
    pub fn from_generation_config(config: Option<&Map<String, Value>>) -> Self {
        const KEYS: [&str; 9] = [
            "repetition_penalty",
            "presence_penalty",
            "frequency_penalty",
            "temperature",
            "top_k",
            "top_p",
            "min_p",
            "max_new_tokens",
            "skip_special_tokens",
        ];
        let mut out = Map::new();
        if let Some(config) = config {
            for key in KEYS {
                if let Some(v) = config.get(key).filter(|v| !v.is_null()) {
                    let key = if key == "max_new_tokens" {
                        "max_tokens"
                    } else {
                        key
                    };
                    out.insert(key.to_owned(), v.clone());
                }
            }
        }
        SamplingDefaults(out)
    }

    fn f64(&self, key: &str) -> Option<f64> {
        self.0.get(key).and_then(Value::as_f64)
    }

    pub(super) fn i64(&self, key: &str) -> Option<i64> {
        self.0.get(key).and_then(Value::as_i64)
    }
}

/// The request fields that become sampling parameters, common to chat and completion.
pub(super) struct SamplingInputs<'a> {
    pub n: Option<i64>,
    pub presence_penalty: Option<f64>,
    pub frequency_penalty: Option<f64>,
    pub repetition_penalty: Option<f64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<i64>,
    pub min_p: Option<f64>,
    pub seed: Option<i64>,
    pub stop: &'a Option<StopParam>,
    pub stop_token_ids: &'a Option<Vec<u32>>,
    pub ignore_eos: bool,
    pub max_tokens: i64,
    pub min_tokens: i64,
    pub logprobs: Option<i64>,
    pub prompt_logprobs: Option<i64>,
    pub skip_special_tokens: Option<bool>,
    pub spaces_between_special_tokens: bool,
    pub include_stop_str_in_output: bool,
    pub stream: bool,
    pub stream_interval: Option<i64>,
    pub structured_outputs: Option<StructuredOutputsParams>,
    pub logit_bias: &'a Option<Map<String, Value>>,
    pub allowed_token_ids: &'a Option<Vec<u32>>,
    pub vllm_xargs: &'a Option<Map<String, Value>>,
    pub bad_words: &'a [String],
}

/// vLLM's `to_sampling_params` + `SamplingParams.__post_init__`.
pub(super) fn resolve(
    i: SamplingInputs<'_>,
    defaults: &SamplingDefaults,
) -> Result<SamplingParams, RenderError> {
    let n = i.n.unwrap_or(1);
    if n < 1 {
        return Err(RenderError::validation(
            format!("n must be at least 1, got {n}."),
            None,
            None,
        ));
    }
    let mut temperature = i.temperature.or(defaults.f64("temperature")).unwrap_or(1.0);
    if 0.0 < temperature && temperature < MIN_POSITIVE_TEMPERATURE {
        temperature = MIN_POSITIVE_TEMPERATURE;
    }
    let stop = i.stop.as_ref().map(StopParam::to_vec).unwrap_or_default();
    let include_stop = i.include_stop_str_in_output;
    let output_text_buffer_length = match stop.iter().map(|s| s.chars().count()).max() {
        Some(longest) if !include_stop => longest.saturating_sub(1),
        _ => 0,
    };
    let mut params = SamplingParams {
        n: u32::try_from(n).unwrap_or(u32::MAX),
        presence_penalty: i
            .presence_penalty
            .or(defaults.f64("presence_penalty"))
            .unwrap_or(0.0),
        frequency_penalty: i
            .frequency_penalty
            .or(defaults.f64("frequency_penalty"))
            .unwrap_or(0.0),
        repetition_penalty: i
            .repetition_penalty
            .or(defaults.f64("repetition_penalty"))
            .unwrap_or(1.0),
        temperature,
        top_p: Some(i.top_p.or(defaults.f64("top_p")).unwrap_or(1.0)),
        top_k: i.top_k.or(defaults.i64("top_k")).unwrap_or(0),
        min_p: Some(i.min_p.or(defaults.f64("min_p")).unwrap_or(0.0)),
        seed: i.seed.filter(|s| *s != -1),
        stop,
        stop_token_ids: dedup(i.stop_token_ids.iter().flatten().copied()),
        ignore_eos: i.ignore_eos,
        max_tokens: i.max_tokens,
        min_tokens: i.min_tokens,
        logprobs: i.logprobs,
        prompt_logprobs: i.prompt_logprobs,
        skip_special_tokens: i
            .skip_special_tokens
            .or_else(|| {
                defaults
                    .0
                    .get("skip_special_tokens")
                    .and_then(Value::as_bool)
            })
            .unwrap_or(true),
        spaces_between_special_tokens: i.spaces_between_special_tokens,
        include_stop_str_in_output: include_stop,
        output_kind: if i.stream { 1 } else { 2 },
        stream_interval: i.stream_interval,
        output_text_buffer_length,
        structured_outputs: i.structured_outputs,
        logit_bias: i.logit_bias.clone(),
        allowed_token_ids: i.allowed_token_ids.clone(),
        extra_args: i.vllm_xargs.clone().filter(|m| !m.is_empty()),
        bad_words: dedup(i.bad_words.iter().cloned()),
        skip_reading_prefix_cache: i.prompt_logprobs.is_some(),
    };
    params.verify()?;
    if params.temperature < SAMPLING_EPS {
        // Greedy sampling: vLLM resets these to its default objects (left out when written).
        params.top_p = None;
        params.top_k = 0;
        params.min_p = None;
    }
    Ok(params)
}

/// The items in first-seen order without repeats (`list(dict.fromkeys(...))`).
fn dedup<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The output-length limits vLLM checks before rendering (`TokenizeParams`): the
/// requested output may not exceed the context, nor the truncation size.
pub(super) fn check_requested_lengths(
    max_model_len: i64,
    max_output: Option<(i64, &str)>,
    truncate_prompt_tokens: Option<i64>,
) -> Result<(), RenderError> {
    if let Some((requested, param)) = max_output
        && requested > max_model_len
    {
        return Err(RenderError::validation(
            format!(
                "{param}={requested} cannot be greater than max_model_len={max_model_len}. Please request fewer output tokens."
            ),
            Some(param),
            Some(requested.to_string()),
        ));
    }
    if let Some(truncate) = truncate_prompt_tokens
        && truncate > max_model_len
    {
        return Err(RenderError::validation(
            format!(
                "truncate_prompt_tokens={truncate} cannot be greater than max_model_len = {max_model_len}. Please request a smaller truncation size."
            ),
            Some("truncate_prompt_tokens"),
            Some(truncate.to_string()),
        ));
    }
    Ok(())
}

/// vLLM's `_token_len_check`: a prompt longer than the context is refused. vLLM's
/// tokenizer stops one token past the limit, hence "at least" at that count.
pub(super) fn check_prompt_length(
    max_model_len: i64,
    prompt_len: usize,
    tokenizer_stops: bool,
) -> Result<(), RenderError> {
    let len = prompt_len as i64;
    if len <= max_model_len {
        return Ok(());
    }
    let count = if tokenizer_stops {
        len.min(max_model_len + 1)
    } else {
        len
    };
    let qualifier = if count == max_model_len + 1 {
        "at least "
    } else {
        ""
    };
    Err(RenderError::validation(
        format!(
            "This model's maximum context length is {max_model_len} tokens. However, your prompt contains {qualifier}{count} input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt."
        ),
        Some("input_tokens"),
        Some(count.to_string()),
    ))
}

/// vLLM's `get_max_tokens`: the request's limit (or the model default) capped by the
/// room left in the context.
pub(super) fn max_tokens(
    max_model_len: i64,
    requested: Option<i64>,
    input_len: usize,
    truncate_prompt_tokens: Option<i64>,
    defaults: &SamplingDefaults,
) -> Result<i64, RenderError> {
    let mut input_len = input_len as i64;
    if let Some(limit) = truncate_prompt_tokens {
        input_len = input_len.min(if limit == -1 { max_model_len } else { limit });
    }
    if max_model_len < input_len {
        return Err(RenderError::validation(
            format!(
                "Input length ({input_len}) exceeds model's maximum context length ({max_model_len})."
            ),
            None,
            None,
        ));
    }
    let room = max_model_len - input_len;
    Ok(match requested.or(defaults.i64("max_tokens")) {
        Some(r) => room.min(r),
        None => room,
    })
}
