//! Marker strings whose token ids the prompt's start state is read from.

/// Every special marker a registered parser reads in a prompt (think tags, turn
/// boundaries, channel and tool markers). vLLM decides the start state from
/// the prompt's token ids; [`super::ServingParsers`] resolves these strings to
/// ids once and gives a parser only the marker tokens of the prompt, in order.
pub(crate) const PROMPT_MARKERS: &[&str] = &[
    "</arg_key>",
    "</arg_value>",
    "</atem:invoke>",
    "</atem:parameter>",
    "</dots_function_call>",
    "</function>",
    "</function_calls>",
    "</ifm|arg_key>",
    "</ifm|arg_type>",
    "</ifm|arg_value>",
    "</ifm|think>",
    "</ifm|think_fast>",
    "</ifm|think_faster>",
    "</ifm|tool_call>",
    "</ifm|tool_calls>",
    "</invoke>",
    "</k>",
    "</longcat_tool_call>",
    "</minimax:tool_call>",
    "</mm:think>",
    "</param>",
    "</parameter>",
    "</response>",
    "</s>",
    "</seed:think>",
    "</seed:tool_call>",
    "</steptml:parameter>",
    "</t>",
    "</think>",
    "</tool_call>",
    "</tool_calls>",
    "</v>",
    "</｜DSML｜function_calls>",
    "</｜DSML｜invoke>",
    "</｜DSML｜parameter>",
    "</｜DSML｜tool_calls>",
    "<arg_key>",
    "<arg_value>",
    "<assistant>",
    "<atem:function_calls>",
    "<channel|>",
    "<co>",
    "<dots_function_call>",
    "<eos>",
    "<escape>",
    "<function_call>",
    "<function_calls>",
    "<ifm|arg_key>",
    "<ifm|arg_type>",
    "<ifm|arg_value>",
    "<ifm|think>",
    "<ifm|think_fast>",
    "<ifm|think_faster>",
    "<ifm|tool_call>",
    "<ifm|tool_calls>",
    "<k>",
    "<longcat_tool_call>",
    "<minimax:tool_call>",
    "<mm:think>",
    "<reserved_12>",
    "<reserved_13>",
    "<reserved_14>",
    "<reserved_15>",
    "<response>",
    "<seed:bos>",
    "<seed:eos>",
    "<seed:think>",
    "<seed:tool_call>",
    "<start_function_call>",
    "<t>",
    "<think>",
    "<tool_call>",
    "<tool_call_begin>",
    "<tool_calls>",
    "<tool_call|>",
    "<tool_sep>",
    "<v>",
    "<|CHATBOT_TOKEN|>",
    "<|END_ACTION|>",
    "<|END_RESPONSE|>",
    "<|END_TEXT|>",
    "<|END_THINKING|>",
    "<|START_ACTION|>",
    "<|START_RESPONSE|>",
    "<|START_TEXT|>",
    "<|START_THINKING|>",
    "<|action_end|>",
    "<|assistant|>",
    "<|call|>",
    "<|channel>",
    "<|channel|>",
    "<|close|>",
    "<|constrain|>",
    "<|content_invoke_tool_json|>",
    "<|content_invoke_tool_text|>",
    "<|content_model_end_sampling|>",
    "<|content_text|>",
    "<|content_thinking|>",
    "<|content_tool_error|>",
    "<|end_message|>",
    "<|end|>",
    "<|eom|>",
    "<|eot|>",
    "<|function_call|>",
    "<|im_end|>",
    "<|im_start|>",
    "<|message_model|>",
    "<|message_sep|>",
    "<|message|>",
    "<|observation|>",
    "<|open|>",
    "<|plamo:begin_think:plamo|>",
    "<|plamo:begin_tool_name:plamo|>",
    "<|plamo:begin_tool_request:plamo|>",
    "<|plamo:begin_tool_requests:plamo|>",
    "<|plamo:end_think:plamo|>",
    "<|plamo:end_tool_arguments:plamo|>",
    "<|plamo:end_tool_name:plamo|>",
    "<|plamo:end_tool_request:plamo|>",
    "<|plamo:end_tool_requests:plamo|>",
    "<|plamo:tag|>",
    "<|python_end|>",
    "<|python_start|>",
    "<|python_tag|>",
    "<|reserved_12|>",
    "<|reserved_13|>",
    "<|reserved_14|>",
    "<|reserved_15|>",
    "<|reserved_200013|>",
    "<|return|>",
    "<|sep|>",
    "<|start|>",
    "<|system|>",
    "<|tool_call>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_end|>",
    "<|tool_call_start|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call|>",
    "<|tools_prefix|>",
    "<|tools_suffix|>",
    "<|user|>",
    "<｜DSML｜function_calls>",
    "<｜DSML｜tool>",
    "<｜DSML｜tool_calls>",
    "<｜DSML｜toolcalls>",
    "<｜tool_call_begin｜>",
    "<｜tool_call_end｜>",
    "<｜tool_calls_begin｜>",
    "<｜tool_calls_end｜>",
    "<｜tool_sep｜>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
    "[/THINK]",
    "[ARGS]",
    "[THINK]",
    "[TOOL_CALLS]",
];

/// A marker a reasoning parser's `is_reasoning_end` matches as a sequence of
/// ordinary tokens rather than as one marker token.
pub(crate) struct SpelledMarker {
    /// The reasoning parser that matches it.
    pub parser: &'static str,
    /// The marker's text, as [`PROMPT_MARKERS`] entries appear in the prompt view.
    pub marker: &'static str,
    /// The first token: any one of these vocabulary entries.
    pub first: &'static [&'static str],
    /// The tokens after the first, in order.
    pub rest: &'static [&'static str],
}

/// vLLM's `Olmo3ReasoningParser.is_reasoning_end` finds `</think>` anywhere in
/// the prompt as the pre-tokenizer splits it: `</` (or `Ġ</`, with a leading
/// space), `think`, `>`; so a `</think>` a user typed counts too.
/// `KimiK3ReasoningParser.is_reasoning_end` compares the newest think channel
/// open and close, each three tokens (`<|open|>`, `think`, `<|sep|>`): the
/// channel's name is an ordinary token, which tells a think channel from the
/// others.
pub(crate) const SPELLED_MARKERS: &[SpelledMarker] = &[
    SpelledMarker {
        parser: "olmo3",
        marker: "</think>",
        first: &["Ġ</", "</"],
        rest: &["think", ">"],
    },
    SpelledMarker {
        parser: "kimi_k3",
        marker: "<|open|>think<|sep|>",
        first: &["<|open|>"],
        rest: &["think", "<|sep|>"],
    },
    SpelledMarker {
        parser: "kimi_k3",
        marker: "<|close|>think<|sep|>",
        first: &["<|close|>"],
        rest: &["think", "<|sep|>"],
    },
];

/// A [`SpelledMarker`] resolved to the tokenizer's ids.
#[derive(Debug, Clone)]
pub(crate) struct SpelledIds {
    pub marker: &'static str,
    pub first: Vec<u32>,
    pub rest: Vec<u32>,
}

impl SpelledIds {
    /// The spelled markers of reasoning parser `reasoning`, where the
    /// vocabulary has every token (vLLM's parser fails to build otherwise).
    pub fn resolve(
        reasoning: Option<&str>,
        token_id: impl Fn(&str) -> Option<u32>,
    ) -> Vec<SpelledIds> {
        SPELLED_MARKERS
            .iter()
            .filter(|m| Some(m.parser) == reasoning)
            .filter_map(|m| {
                Some(SpelledIds {
                    marker: m.marker,
                    first: m.first.iter().map(|t| token_id(t)).collect::<Option<_>>()?,
                    rest: m.rest.iter().map(|t| token_id(t)).collect::<Option<_>>()?,
                })
            })
            .collect()
    }

    /// Whether `ids` starts with this marker's tokens.
    pub fn starts(&self, ids: &[u32]) -> bool {
        ids.first().is_some_and(|id| self.first.contains(id))
            && ids.get(1..=self.rest.len()) == Some(&self.rest[..])
    }
}
