#!/usr/bin/env python3
"""Generate the native-renderer fixtures: what vLLM 0.33.0's own renderer classes
(`vllm/renderers/{deepseek_v32,deepseek_v4,kimi_k3,inkling,cohere}.py`, with the
tokenizers of `vllm/tokenizers/deepseek_v32.py`, `deepseek_v4.py`, `deepseek_v41.py`)
produce for the same cases, as text (where the renderer has a text form) and token ids,
or the error message vLLM raises. Cohere has its own cases (COHERE_CASES): it reads
`chat_template_kwargs` rather than the request's fields.

Each case is a chat request body. It goes through the steps of
`OnlineRenderer.render_chat` / `preprocess_chat` (vllm/renderers/online_renderer.py):
`ChatCompletionRequest(**body)`, `tool_dicts = [t.model_dump() for t in tools]`,
`build_chat_params(None, "auto").with_defaults({"tools": tool_dicts, "tokenize": False})`,
then the renderer's own `render_messages` and, for a text prompt, the tokenizer's
`encode(text, add_special_tokens=request.add_special_tokens)` (`_tokenize_prompt`).
Renderers are built without a `VllmConfig` (only the attributes `render_messages`
reads are set); everything that shapes the prompt is vLLM's code.

Usage: HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-chat/scripts/gen_native_fixtures.py $REF
(the Cohere renderer needs `cohere-melody==0.15.3`, which setup.sh does not install: the
script installs that pin into the venv when it is missing, with vllm-parser's
`gen_fixtures.ensure_cohere_melody`, and stops on another version).
Writes vllm-chat/tests/fixtures/native.json.gz and the tokenizer overlays of
testdata/models/{deepseek_v4,kimi_k3_synth,inkling_synth,inkling_full,cohere_command_synth}/
(`tokenizer.overlay.json.gz`: the reference model directories' tokenizers, stored as
a diff against the vendored deepseek_v3 / qwen3 ones). A re-run writes the same bytes.
"""
import gzip
import json
import os
import shutil
import sys
import tempfile

from gen_parity_fixtures import FIXTURES, MODEL_CONFIG, REF  # noqa: F401

# vllm-parser's generators (on the path gen_parity_fixtures set) pin cohere-melody (vLLM's
# Cohere renderer imports it) and build the synthetic tokenizers (`*_synth`) in a fresh
# reference environment.
from gen_fixtures import ensure_cohere_melody, model_dir as reference_model_dir  # noqa: E402

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.renderers.cohere import CohereRenderer, _try_import_melody
from vllm.renderers.deepseek_v32 import DeepseekV32Renderer
from vllm.renderers.deepseek_v4 import DeepseekV4Renderer, DeepseekV41Renderer
from vllm.renderers.inkling import InklingRenderer, _HfBackedTmlTokenizer
from vllm.renderers.inkling_encoding import SPECIAL_TOKEN_SPELLINGS
from vllm.renderers.kimi_k3 import KimiK3Renderer
from vllm.renderers.params import merge_kwargs
from vllm.tokenizers.deepseek_v32 import DeepseekV32Tokenizer
from vllm.tokenizers.deepseek_v4 import DeepseekV4Tokenizer
from vllm.tokenizers.deepseek_v41 import DeepseekV41Tokenizer
from vllm.tokenizers.hf import CachedHfTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "..", "..", "testdata", "models")

# mode -> (renderer class, tokenizer class, reference model dir, vendored base dir)
MODES = {
    "deepseek_v32": (DeepseekV32Renderer, DeepseekV32Tokenizer, "deepseek_v3", None),
    "deepseek_v4": (DeepseekV4Renderer, DeepseekV4Tokenizer, "deepseek_v4", "deepseek_v3"),
    "deepseek_v41": (DeepseekV41Renderer, DeepseekV41Tokenizer, "deepseek_v4", "deepseek_v3"),
    "kimi_k3": (KimiK3Renderer, CachedHfTokenizer, "kimi_k3_synth", "qwen3"),
    # inkling_synth lacks most of Inkling's special tokens (vLLM refuses it, recorded
    # under "construct_errors"); inkling_full is it with every one of
    # SPECIAL_TOKEN_SPELLINGS added as a special token (made by inkling_full()).
    "inkling": (InklingRenderer, CachedHfTokenizer, "inkling_full", "qwen3"),
    # Never auto-detected (`--tokenizer-mode cohere`); its own cases (COHERE_CASES).
    "cohere": (CohereRenderer, CachedHfTokenizer, "cohere_command_synth", "qwen3"),
}

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                          "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


U = {"role": "user", "content": "Hello"}
SYS = {"role": "system", "content": "You are terse."}
ASK = {"role": "user", "content": "Weather in Paris and the time?"}
CALLS = {"role": "assistant", "content": "", "tool_calls": [call("c1", "get_weather", "{\"city\": \"Paris\", \"days\": 2}"),
                                                            call("c2", "get_time", "{}")]}
RESULTS = [{"role": "tool", "tool_call_id": "c1", "content": "20C"}, {"role": "tool", "tool_call_id": "c2", "content": "12:00"}]
RESULTS_SWAPPED = list(reversed(RESULTS))

CASES = {
    "single_user": {"messages": [U]},
    "system_user": {"messages": [SYS, U]},
    "multi_turn": {"messages": [SYS, U, {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Again"}]},
    "multi_turn_no_gen": {"messages": [U, {"role": "assistant", "content": "Hi."}], "add_generation_prompt": False},
    "thinking_on": {"messages": [U], "chat_template_kwargs": {"thinking": True}},
    "enable_thinking_on": {"messages": [U], "chat_template_kwargs": {"enable_thinking": True}},
    "thinking_off": {"messages": [U], "chat_template_kwargs": {"thinking": False}},
    "enable_thinking_off": {"messages": [U], "chat_template_kwargs": {"enable_thinking": False}},
    "reasoning_effort_low": {"messages": [U], "reasoning_effort": "low"},
    "reasoning_effort_high": {"messages": [U], "reasoning_effort": "high"},
    "reasoning_effort_none": {"messages": [U], "reasoning_effort": "none"},
    "reasoning_effort_max_kwarg": {"messages": [U], "chat_template_kwargs": {"reasoning_effort": "max"}},
    "reasoning_effort_int_kwarg": {"messages": [U], "chat_template_kwargs": {"reasoning_effort": 30}},
    "reasoning_effort_bad_kwarg": {"messages": [U], "chat_template_kwargs": {"reasoning_effort": "extreme"}},
    "history_reasoning": {"messages": [U, {"role": "assistant", "content": "Hi.", "reasoning": "greet"}, {"role": "user", "content": "More"}],
                          "chat_template_kwargs": {"thinking": True}},
    "history_reasoning_chat": {"messages": [U, {"role": "assistant", "content": "Hi.", "reasoning": "greet"}, {"role": "user", "content": "More"}]},
    "drop_thinking_false": {"messages": [U, {"role": "assistant", "content": "Hi.", "reasoning": "greet"}, {"role": "user", "content": "More"}],
                            "chat_template_kwargs": {"thinking": True, "drop_thinking": False}},
    "tools": {"messages": [ASK], "tools": [WEATHER, TIME]},
    "tools_system": {"messages": [SYS, ASK], "tools": [WEATHER]},
    "tools_thinking": {"messages": [ASK], "tools": [WEATHER, TIME], "chat_template_kwargs": {"thinking": True}},
    "tool_calls_results": {"messages": [ASK, CALLS, *RESULTS], "tools": [WEATHER, TIME]},
    "tool_calls_results_thinking": {"messages": [ASK, {**CALLS, "reasoning": "need tools"}, *RESULTS], "tools": [WEATHER, TIME],
                                    "chat_template_kwargs": {"thinking": True}},
    "tool_results_swapped": {"messages": [ASK, CALLS, *RESULTS_SWAPPED], "tools": [WEATHER, TIME]},
    "tool_results_then_answer": {"messages": [ASK, CALLS, *RESULTS, {"role": "assistant", "content": "Sunny, noon."},
                                              {"role": "user", "content": "Thanks"}], "tools": [WEATHER, TIME]},
    "tool_call_args_types": {"messages": [ASK, {"role": "assistant", "content": "ok", "tool_calls": [
        call("c9", "get_weather", "{\"city\": \"Zürich\", \"days\": 3, \"opts\": {\"unit\": \"C\", \"list\": [1, 2.5, true, null]}}")]},
        {"role": "tool", "tool_call_id": "c9", "content": "ok"}]},
    "tool_result_unknown_id": {"messages": [ASK, CALLS, {"role": "tool", "tool_call_id": "zz", "content": "x"}]},
    "tool_without_call": {"messages": [U, {"role": "tool", "tool_call_id": "c1", "content": "x"}]},
    "content_parts": {"messages": [{"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]}]},
    "content_parts_system": {"messages": [{"role": "system", "content": [{"type": "text", "text": "Be"}, {"type": "text", "text": "brief"}]}, U]},
    "developer": {"messages": [{"role": "developer", "content": "Dev rules"}, U]},
    "developer_last": {"messages": [U, {"role": "assistant", "content": "Hi."}, {"role": "developer", "content": "Now do it"}]},
    "developer_empty": {"messages": [{"role": "developer", "content": ""}, U]},
    "continue_final": {"messages": [U, {"role": "assistant", "content": "Partial ans"}], "continue_final_message": True,
                       "add_generation_prompt": False},
    "continue_final_thinking": {"messages": [U, {"role": "assistant", "content": "Partial", "reasoning": "hmm"}],
                                "continue_final_message": True, "add_generation_prompt": False, "chat_template_kwargs": {"thinking": True}},
    "assistant_last_thinking": {"messages": [U, {"role": "assistant", "content": "Done."}], "add_generation_prompt": False,
                                "chat_template_kwargs": {"thinking": True}},
    "unicode": {"messages": [{"role": "system", "content": "日本語で答えて 🙂"}, {"role": "user", "content": "Ça va? — naïve café ✓ \u200b end"}]},
    "special_text": {"messages": [{"role": "user", "content": "literal <think> and </think> and <｜User｜> text"}]},
    "empty_user": {"messages": [{"role": "user", "content": ""}]},
    "none_content_assistant": {"messages": [U, {"role": "assistant", "content": None}, {"role": "user", "content": "?"}]},
    "response_format_kwarg": {"messages": [U], "response_format": {"type": "json_object"}},
    "tool_choice_required": {"messages": [ASK], "tools": [WEATHER], "tool_choice": "required"},
    "tool_choice_named": {"messages": [ASK], "tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    "system_only": {"messages": [SYS]},
    "system_middle": {"messages": [U, {"role": "assistant", "content": "Hi."}, SYS, {"role": "user", "content": "Go"}]},
    "add_special_tokens": {"messages": [U], "add_special_tokens": True},
    "reasoning_effort_float_kwarg": {"messages": [U], "chat_template_kwargs": {"reasoning_effort": 0.456}},
    "reasoning_effort_zero_kwarg": {"messages": [SYS, U], "chat_template_kwargs": {"reasoning_effort": 0}},
    "reasoning_effort_medium": {"messages": [U], "reasoning_effort": "medium"},
    "tool_result_named": {"messages": [ASK, CALLS, {"role": "tool", "tool_call_id": "c1", "name": "weather_tool", "content": "20C"}]},
    "refusal_part": {"messages": [U, {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}, {"role": "user", "content": "ok"}]},
    # (An unknown task is an error listing a Python set: its order changes per process.)
    "task_action": {"messages": [{**U, "task": "action"}]},
    "task_action_thinking": {"messages": [{**U, "task": "action"}], "chat_template_kwargs": {"thinking": True}},
    "task_query_history": {"messages": [{**U, "task": "query"}, {"role": "assistant", "content": "Hi.", "reasoning": "greet"},
                                        {"role": "user", "content": "More"}], "chat_template_kwargs": {"thinking": True}},
}


DOC_A = {"title": "Paris", "text": "Paris is the capital of France."}
DOC_B = {"id": "doc-b", "data": {"title": "Lyon", "snippet": "Lyon is in France.", "rank": 2}}
CMD3 = {"cohere_format": "cmd3"}
ASK_DOCS = {"role": "user", "content": "What do the documents say?"}
CALL3 = {"role": "assistant", "content": "I will look it up.", "tool_calls": [call("k1", "get_weather", "{\"city\": \"Oslo\"}")]}
CALL4 = {"role": "assistant", "content": None, "tool_calls": [call("k2", "get_time", "{}")]}

# The Cohere renderer reads chat_template_kwargs rather than the request's fields
# (cohere_format, documents, thinking, response_format, grounding, …): its own cases.
COHERE_BASE = {k: CASES[k] for k in (
    "single_user", "system_user", "multi_turn", "multi_turn_no_gen", "thinking_on", "reasoning_effort_low",
    "reasoning_effort_none", "history_reasoning", "tools", "tools_system", "tool_calls_results",
    "tool_calls_results_thinking", "tool_results_swapped", "tool_results_then_answer", "tool_call_args_types",
    "tool_result_unknown_id", "tool_without_call", "content_parts", "content_parts_system", "developer",
    "developer_last", "developer_empty", "continue_final", "continue_final_thinking", "unicode", "special_text",
    "empty_user", "none_content_assistant", "response_format_kwarg", "system_only", "system_middle",
    "add_special_tokens", "tool_result_named", "refusal_part")}
COHERE_CASES = {
    **COHERE_BASE,
    "documents_request": {"messages": [ASK_DOCS], "documents": [{"title": "A", "text": "alpha"}, {"title": "B", "text": "beta"}]},
    "documents_kwarg": {"messages": [SYS, ASK_DOCS, {"role": "assistant", "content": "Paris."}, {"role": "user", "content": "More?"}],
                        "chat_template_kwargs": {"documents": [DOC_A, DOC_B, "plain string doc"]}},
    "documents_and_tools": {"messages": [ASK_DOCS], "tools": [WEATHER], "chat_template_kwargs": {"documents": [DOC_A]}},
    "documents_tool_calls": {"messages": [ASK_DOCS, CALL3, {"role": "tool", "tool_call_id": "k1", "content": "cold"}],
                             "tools": [WEATHER], "chat_template_kwargs": {"documents": [DOC_B]}},
    "documents_no_user": {"messages": [SYS], "chat_template_kwargs": {"documents": [DOC_A]}},
    "documents_bad_type": {"messages": [U], "chat_template_kwargs": {"documents": [3]}},
    "tool_calls_several_rounds": {"messages": [ASK, CALLS, *RESULTS, CALL3, {"role": "tool", "tool_call_id": "k1", "content": "{\"temp\": -3}"},
                                              CALL4, {"role": "tool", "tool_call_id": "k2", "content": ""}], "tools": [WEATHER, TIME]},
    "tool_results_repeated_id": {"messages": [ASK, CALLS, RESULTS[0], {"role": "tool", "tool_call_id": "c1", "content": "21C"}, RESULTS[1]],
                                 "tools": [WEATHER, TIME]},
    "tool_call_duplicate_id": {"messages": [ASK, {"role": "assistant", "content": "", "tool_calls": [call("d", "get_time", "{}"), call("d", "get_time", "{}")]}]},
    "tool_call_empty_id": {"messages": [ASK, {"role": "assistant", "content": "", "tool_calls": [call("", "get_time", "{}")]}]},
    "tool_call_bad_args": {"messages": [ASK, {"role": "assistant", "content": "x", "tool_calls": [call("b1", "get_time", "not json")]}]},
    "available_tools_flat": {"messages": [ASK], "chat_template_kwargs": {"available_tools": [
        {"name": "lookup", "description": "Look \"things\" up\n", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]}},
    "available_tools_bad_name": {"messages": [ASK], "chat_template_kwargs": {"available_tools": [{"name": None}]}},
    "dev_instruction": {"messages": [SYS, U], "chat_template_kwargs": {"dev_instruction": "Developer says hi."}},
    "platform_instruction": {"messages": [U], "tools": [TIME], "chat_template_kwargs": {"platform_instruction": "Platform rules."}},
    "grounding_off": {"messages": [ASK], "tools": [WEATHER], "chat_template_kwargs": {"grounding": "disabled"}},
    "grounding_unknown": {"messages": [ASK], "chat_template_kwargs": {"grounding": "UNKNOWN", "documents": [DOC_A]}},
    "grounding_bad": {"messages": [U], "chat_template_kwargs": {"grounding": "sometimes"}},
    "citation_options_off": {"messages": [ASK], "tools": [WEATHER], "chat_template_kwargs": {"citation_options": {"mode": "OFF"}}},
    "citation_options_fast": {"messages": [ASK], "tools": [WEATHER], "chat_template_kwargs": {"citation_options": {"mode": "FAST"}}},
    "json_object": {"messages": [U], "chat_template_kwargs": {"response_format": {"type": "json_object"}}},
    "json_schema": {"messages": [SYS, U], "chat_template_kwargs": {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"città": {"type": "string"}}}}}}},
    "json_schema_kwarg_string": {"messages": [U], "tools": [TIME], "chat_template_kwargs": {"json_schema": "{\"type\":\"object\"}", "json_mode": False}},
    "json_mode_only": {"messages": [U], "chat_template_kwargs": {"json_mode": 1}},
    "thinking_enabled_dict": {"messages": [U], "chat_template_kwargs": {"thinking": {"type": "enabled"}}},
    "reasoning_type_bad": {"messages": [U], "chat_template_kwargs": {"reasoning_type": "sometimes"}},
    "reasoning_type_enabled_upper": {"messages": [U], "chat_template_kwargs": {"reasoning_type": "ENABLED"}},
    "skip_thinking_extra": {"messages": [U, {"role": "assistant", "content": "Hi.", "reasoning": "r"}, ASK, CALLS, *RESULTS],
                            "chat_template_kwargs": {"skip_thinking": True, "documents": [DOC_A]}},
    "initial_instruction_message_extra": {"messages": [SYS, U], "chat_template_kwargs": {"initial_instruction_message": True}},
    "assistant_plan_and_reasoning": {"messages": [ASK, {**CALLS, "content": "plan text", "reasoning": "deep thought"}, *RESULTS]},
    "cohere_format_bad": {"messages": [U], "chat_template_kwargs": {"cohere_format": "cmd5"}},
    "template_jinja_rejected": {"messages": [U], "chat_template_kwargs": {"template_jinja": "{{ x }}"}},
    "template_rejected": {"messages": [U], "chat_template_kwargs": {"template": "x"}},
    "template_id_default": {"messages": [U], "chat_template_kwargs": {"template_id": "cmd4-v1"}},
    "template_id_cmd4_v2": {"messages": [SYS, ASK, CALLS, *RESULTS], "tools": [WEATHER, TIME], "chat_template_kwargs": {"template_id": "cmd4-v2"}},
    "template_id_cmd4_v2_effort_none": {"messages": [U], "reasoning_effort": "none", "chat_template_kwargs": {"template_id": "cmd4-v2"}},
    "template_id_cmd4_v2_reasoning_off": {"messages": [U], "chat_template_kwargs": {"template_id": "cmd4-v2", "thinking": {"type": "disabled"}}},
    "template_id_cmd4_hf": {"messages": [U, {"role": "assistant", "content": "Hi.", "reasoning": "r"}, U], "chat_template_kwargs": {"template_id": "cmd4-hf"}},
    "template_id_cmd4_hf_platform": {"messages": [U], "tools": [TIME], "chat_template_kwargs": {"template_id": "cmd4-hf", "platform_instruction": "Mine."}},
    "template_id_cmd3_v2": {"messages": [SYS, U], "chat_template_kwargs": {**CMD3, "template_id": "cmd3-v2"}},
    "template_id_cmd3_v2_effort_none": {"messages": [ASK], "tools": [WEATHER], "reasoning_effort": "none",
                                        "chat_template_kwargs": {**CMD3, "template_id": "cmd3-v2"}},
    "template_id_cmd3_v3": {"messages": [ASK, CALL4, {"role": "tool", "tool_call_id": "k2", "content": "noon"}, {"role": "assistant", "content": "Noon."}],
                            "tools": [TIME], "chat_template_kwargs": {**CMD3, "template_id": "cmd3-v3"}},
    "template_id_other_format": {"messages": [U], "chat_template_kwargs": {"template_id": "cmd3-v1"}},
    "template_id_pinned": {"messages": [U], "chat_template_kwargs": {"template_id": "cmd4-v1@1"}},
    "template_id_unknown": {"messages": [U], "chat_template_kwargs": {"template_id": "cmd9"}},
    "custom_role": {"messages": [U, {"role": "narrator", "content": "Meanwhile"}]},
    "cmd3_single_user": {"messages": [U], "chat_template_kwargs": CMD3},
    "cmd3_system_multi_turn": {"messages": [SYS, U, {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Again"}], "chat_template_kwargs": CMD3},
    "cmd3_tools_results": {"messages": [ASK, CALLS, *RESULTS, {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "ok"}],
                           "tools": [WEATHER, TIME], "chat_template_kwargs": CMD3},
    "cmd3_documents": {"messages": [ASK_DOCS], "chat_template_kwargs": {**CMD3, "documents": [DOC_A, DOC_B]}},
    "cmd3_safety_strict": {"messages": [U], "chat_template_kwargs": {**CMD3, "safety_mode": "STRICT"}},
    "cmd3_safety_none": {"messages": [SYS, U], "chat_template_kwargs": {**CMD3, "safety_mode": "NONE"}},
    "cmd3_safety_bad": {"messages": [U], "chat_template_kwargs": {**CMD3, "safety_mode": "loose"}},
    "cmd3_citations_off": {"messages": [ASK], "tools": [WEATHER], "chat_template_kwargs": {**CMD3, "citation_options": {"mode": "OFF"}}},
    "cmd3_reasoning_disabled": {"messages": [ASK, {**CALLS, "reasoning": "plan"}, *RESULTS], "tools": [WEATHER, TIME],
                                "chat_template_kwargs": {**CMD3, "reasoning_type": "disabled"}},
    "cmd3_reasoning_enabled": {"messages": [ASK], "tools": [WEATHER], "chat_template_kwargs": {**CMD3, "thinking": {"type": "enabled"}}},
    "cmd3_json_schema": {"messages": [SYS, U], "chat_template_kwargs": {**CMD3, "json_schema": {"type": "object"}, "dev_instruction": "Be exact."}},
    "cmd3_skip_preamble": {"messages": [U], "chat_template_kwargs": {**CMD3, "skip_preamble": True, "dev_instruction": "Only this."}},
    "cmd3_reasoning_effort": {"messages": [U], "chat_template_kwargs": {**CMD3, "reasoning_effort": "none"}},
    # A call id whose results come back in a later run of tool messages: melody files
    # them under the earlier run's position (misattributed, or a Rust panic).
    "tool_result_id_reused_later": {"messages": [ASK, CALLS, RESULTS[0], {"role": "user", "content": "and?"}, RESULTS[0]]},
    "tool_result_id_misattributed": {"messages": [ASK, CALLS, RESULTS[0], {"role": "user", "content": "and?"}, CALL3,
                                                  {"role": "tool", "tool_call_id": "k1", "content": "cold"}, RESULTS[0]]},
    "response_format_pairs": {"messages": [U], "chat_template_kwargs": {"response_format": [["type", "json_object"]]}},
    "response_format_string": {"messages": [U], "chat_template_kwargs": {"response_format": "json"}},
    "documents_string_kwarg": {"messages": [U], "chat_template_kwargs": {"documents": "ab"}},
    "cmd3_thinking_default_val": {"messages": [ASK, CALL4, {"role": "tool", "tool_call_id": "k2", "content": "noon"},
                                               {"role": "assistant", "content": "Noon."}, U],
                                  "chat_template_kwargs": {**CMD3, "thinking_default_val": {"plan": ["look", 1.0]}}},
    "cmd3_reasoning_template_variable": {"messages": [ASK], "tools": [WEATHER], "chat_template_kwargs": {**CMD3, "reasoning": True}},
    "cmd3_unicode": {"messages": [{"role": "user", "content": "Ça va? 日本語 🙂"}], "chat_template_kwargs": CMD3},
}
CASES_OF = {"cohere": COHERE_CASES}


def write_gz(path, obj):
    """JSON, gzip-compressed with no timestamp (a re-run writes the same bytes)."""
    data = json.dumps(obj, ensure_ascii=False, indent=0).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(data)


def _strip(obj):
    """JSON-safe copy (the ids are lists of ints already)."""
    return json.loads(json.dumps(obj, ensure_ascii=False))


def model_dir(model):
    return INKLING_FULL if model == "inkling_full" else str(reference_model_dir(model))


def inkling_full():
    """inkling_synth with Inkling's missing special tokens added (first spellings)."""
    from tokenizers import AddedToken, Tokenizer

    out = os.path.join(tempfile.mkdtemp(), "inkling_full")
    shutil.copytree(model_dir("inkling_synth"), out)
    tok = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    vocab = tok.get_vocab()
    missing = [spellings[0] for spellings in SPECIAL_TOKEN_SPELLINGS.values() if not any(s in vocab for s in spellings)]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in missing])
    tok.save(os.path.join(out, "tokenizer.json"))
    return out


INKLING_FULL = inkling_full()


def build(mode):
    cls, tok_cls, model, _ = MODES[mode]
    tok = tok_cls.from_pretrained(model_dir(model))
    renderer = object.__new__(cls)
    renderer.config = None
    renderer.model_config = MODEL_CONFIG
    renderer.tokenizer = tok
    if cls is InklingRenderer:
        renderer._inkling_tokenizer = _HfBackedTmlTokenizer(tok)
    if cls is CohereRenderer:
        renderer._melody = _try_import_melody()
    return renderer, tok


def render(renderer, tok, body):
    try:
        req = ChatCompletionRequest(**{"model": "m", **body})
        tool_dicts = None if req.tools is None else [t.model_dump() for t in req.tools]
        params = req.build_chat_params(None, "auto").with_defaults(
            merge_kwargs(None, dict(tools=tool_dicts, tokenize=False))
        )
        _, prompt = renderer.render_messages(req.messages, params)
        if "prompt_token_ids" in prompt:
            return {"ids": list(prompt["prompt_token_ids"])}
        text = prompt["prompt"]
        ids = tok(text, add_special_tokens=req.add_special_tokens)["input_ids"]
        return {"text": text, "ids": list(ids)}
    except BaseException as e:  # vLLM rejects the request: its message
        # (melody's Rust panics are pyo3 PanicExceptions, not Exceptions)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return {"error": f"{type(e).__name__}: {e}"}


def overlay(model, base):
    """The reference tokenizer.json as the keys that differ from the vendored base."""
    ref = json.load(open(os.path.join(model_dir(model), "tokenizer.json"), encoding="utf-8"))
    with gzip.open(os.path.join(TESTDATA, base, "tokenizer.json.gz"), "rt", encoding="utf-8") as f:
        vendored = json.load(f)
    diff = {k: v for k, v in ref.items() if vendored.get(k) != v}
    out = os.path.join(TESTDATA, model)
    os.makedirs(out, exist_ok=True)
    write_gz(os.path.join(out, "tokenizer.overlay.json.gz"), {"base": base, "replace": diff})
    for name in ("tokenizer_config.json", "config.json", "chat_template.jinja"):
        src = os.path.join(model_dir(model), name)
        if os.path.exists(src):
            with open(src, "rb") as r, open(os.path.join(out, name), "wb") as w:
                w.write(r.read())


def main():
    ensure_cohere_melody()
    result = {"vllm": "0.33.0", "script": "vllm-chat/scripts/gen_native_fixtures.py", "modes": {}, "construct_errors": {}}
    try:
        _HfBackedTmlTokenizer(CachedHfTokenizer.from_pretrained(model_dir("inkling_synth")))
    except ValueError as e:
        result["construct_errors"]["inkling"] = {"model": "inkling_synth", "error": f"{type(e).__name__}: {e}"}
    overlay("inkling_synth", "qwen3")
    for mode, (_, _, model, base) in MODES.items():
        renderer, tok = build(mode)
        dir_name = model if base is None else model
        result["modes"][mode] = {
            "model": dir_name,
            "cases": {name: {"request": body, **render(renderer, tok, body)} for name, body in CASES_OF.get(mode, CASES).items()},
        }
        if base is not None:
            overlay(model, base)
        print(mode, sum("error" in c for c in result["modes"][mode]["cases"].values()), "errors", file=sys.stderr)
    write_gz(os.path.join(FIXTURES, "native.json.gz"), _strip(result))


if __name__ == "__main__":
    main()
