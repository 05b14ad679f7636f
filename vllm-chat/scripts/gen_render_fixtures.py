#!/usr/bin/env python3
"""Generate the render-mode fixtures: what vLLM 0.33.0's `/v1/chat/completions/render`
and `/v1/completions/render` return for a few requests against testdata's qwen3.

The steps of `ServingRender.render_chat_request` / `render_completion_request`
(vllm/entrypoints/scale_out/render/serving.py) are replayed with vLLM's own
classes and functions (`ChatCompletionRequest`, `get_max_tokens`,
`to_sampling_params`, `GenerateRequest`, `ParseContext`, `count_history_tool_calls`)
and serialized with `model_dump()` as `create_json_response` does; the prompt is
rendered as in gen_parity_fixtures.py and tokenized with the request's
`TokenizeParams` (`build_tok_params`, `get_encode_kwargs`, `_token_len_check`). A
request that vLLM refuses (its validators, the length limits, `SamplingParams`'
range checks, structured outputs) records the body of vLLM's exception handler
(`create_error_response(exc).model_dump()`). Cases may carry `_max_model_len` to
render with a smaller context. No reasoning or tool parser is configured.

Usage: HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-chat/scripts/gen_render_fixtures.py $REF
Writes vllm-chat/tests/fixtures/render_mode.json.
"""
import copy
import json
import os
import sys
import types

# The reference venv has no web stack; vLLM's api_utils imports orjson at module level
# (used only to write HTTP bodies, which this script does with json + model_dump()).
if "orjson" not in sys.modules:
    try:
        import orjson  # noqa: F401
    except ImportError:
        sys.modules["orjson"] = types.SimpleNamespace(OPT_NON_STR_KEYS=1, OPT_SERIALIZE_NUMPY=2, dumps=None)

from gen_parity_fixtures import MODEL_CONFIG, REF, FIXTURES, render  # noqa: F401

from transformers import AutoTokenizer, GenerationConfig
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.completion.protocol import CompletionRequest
from vllm.entrypoints.scale_out.render.serving import _hoist_transfer_params
from vllm.entrypoints.scale_out.token_in_token_out.protocol import GenerateRequest, ParseContext
from vllm.entrypoints.serve.utils.api_utils import get_max_tokens
from vllm.parser.utils import count_history_tool_calls

MODEL = "qwen3"
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
HI = [{"role": "user", "content": "Hello"}]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
STRUCTURAL_TAG = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<function="],
                  "tags": [{"begin": "<function=get_weather>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</function>"}]}}
LEGACY_TAG = {"type": "structural_tag", "structures": [{"begin": "<tool>", "schema": SCHEMA, "end": "</tool>"}], "triggers": ["<tool>"]}

# A case is a request body, plus "_max_model_len" to render with a smaller context.
CHAT = [
    {"model": MODEL, "request_id": "r1", "messages": HI},
    {"model": MODEL, "request_id": "r2", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}],
     "temperature": 0.7, "top_p": 0.9, "top_k": 40, "max_tokens": 64, "stop": ["\n\n"], "seed": 7, "presence_penalty": 0.5,
     "frequency_penalty": 0.25, "repetition_penalty": 1.1, "logprobs": True, "top_logprobs": 3, "n": 2, "min_tokens": 2,
     "stream": True, "stream_options": {"include_usage": True}, "tools": [WEATHER], "chat_template_kwargs": {"enable_thinking": False},
     "include_stop_str_in_output": True, "skip_special_tokens": False, "stop_token_ids": [151643], "bad_words": ["foo"],
     "cache_salt": "salt-1", "return_token_ids": True},
    {"model": MODEL, "request_id": "r3", "max_completion_tokens": 100, "include_reasoning": False, "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
     "tools": [WEATHER], "parallel_tool_calls": False, "reasoning_effort": "low", "stop": "END",
     "messages": [{"role": "user", "content": "Weather?"},
                  {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "20C"}],
     "kv_transfer_params": {"do_remote_prefill": True}},
    # response_format and structured_outputs
    {"model": MODEL, "request_id": "so1", "messages": HI, "response_format": {"type": "json_object"}},
    {"model": MODEL, "request_id": "so2", "messages": HI, "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA, "strict": True}}},
    {"model": MODEL, "request_id": "so3", "messages": HI, "response_format": {"type": "text"}},
    {"model": MODEL, "request_id": "so4", "messages": HI, "response_format": STRUCTURAL_TAG},
    {"model": MODEL, "request_id": "so5", "messages": HI, "response_format": LEGACY_TAG},
    {"model": MODEL, "request_id": "so6", "messages": HI, "structured_outputs": {"regex": "[a-z]+", "disable_any_whitespace": True}},
    {"model": MODEL, "request_id": "so7", "messages": HI, "structured_outputs": {"choice": ["yes", "no"]}},
    {"model": MODEL, "request_id": "so8", "messages": HI, "structured_outputs": {"json": SCHEMA, "whitespace_pattern": " "},
     "response_format": {"type": "json_object"}},
    {"model": MODEL, "request_id": "so9", "messages": HI, "structured_outputs": {"grammar": "root ::= \"a\""}},
    {"model": MODEL, "request_id": "so10", "messages": HI, "response_format": {"type": "json_schema", "json_schema": {"name": "a"}}},
    # sampling corner cases that render
    {"model": MODEL, "request_id": "s1", "messages": HI, "temperature": 0.005, "seed": -1, "top_k": -1, "min_p": 1, "top_p": 1e-9},
    {"model": MODEL, "request_id": "s2", "messages": HI, "temperature": 0, "top_p": 0.5, "top_k": 5, "min_p": 0.5, "n": 1, "presence_penalty": -2, "frequency_penalty": 2},
    {"model": MODEL, "request_id": "s3", "messages": HI, "max_tokens": 40000, "vllm_xargs": {"a": 1}, "stop": ["ab", "abcdé"]},
    {"model": MODEL, "request_id": "s4", "messages": HI, "max_tokens": 1000, "_max_model_len": 20},
    # rejected: vLLM's range checks and request validators
    {"model": MODEL, "request_id": "e1", "messages": HI, "temperature": 3},
    {"model": MODEL, "request_id": "e2", "messages": HI, "temperature": -0.5},
    {"model": MODEL, "request_id": "e3", "messages": HI, "top_p": 0},
    {"model": MODEL, "request_id": "e4", "messages": HI, "top_p": 1.5},
    {"model": MODEL, "request_id": "e5", "messages": HI, "top_k": -2},
    {"model": MODEL, "request_id": "e6", "messages": HI, "min_p": 1.5},
    {"model": MODEL, "request_id": "e7", "messages": HI, "presence_penalty": 2.5},
    {"model": MODEL, "request_id": "e8", "messages": HI, "frequency_penalty": -3},
    {"model": MODEL, "request_id": "e9", "messages": HI, "repetition_penalty": 0},
    {"model": MODEL, "request_id": "e10", "messages": HI, "n": 0},
    {"model": MODEL, "request_id": "e11", "messages": HI, "n": 3, "temperature": 0},
    {"model": MODEL, "request_id": "e12", "messages": HI, "n": 20000},
    {"model": MODEL, "request_id": "e13", "messages": HI, "max_tokens": 0},
    {"model": MODEL, "request_id": "e14", "messages": HI, "max_tokens": -5},
    {"model": MODEL, "request_id": "e15", "messages": HI, "min_tokens": -1},
    {"model": MODEL, "request_id": "e16", "messages": HI, "min_tokens": 20, "max_tokens": 10},
    {"model": MODEL, "request_id": "e17", "messages": HI, "max_completion_tokens": 50000},
    {"model": MODEL, "request_id": "e18", "messages": HI, "truncate_prompt_tokens": 50000},
    {"model": MODEL, "request_id": "e19", "messages": HI, "stop": ["a", ""]},
    {"model": MODEL, "request_id": "e20", "messages": HI, "bad_words": [""]},
    {"model": MODEL, "request_id": "e21", "messages": HI, "logprobs": True, "top_logprobs": -2},
    {"model": MODEL, "request_id": "e22", "messages": HI, "top_logprobs": 2},
    {"model": MODEL, "request_id": "e23", "messages": HI, "prompt_logprobs": -3},
    {"model": MODEL, "request_id": "e24", "messages": HI, "prompt_logprobs": 1, "stream": True},
    {"model": MODEL, "request_id": "e25", "messages": HI, "stream_options": {"include_usage": True}},
    {"model": MODEL, "request_id": "e26", "messages": HI, "response_format": {"type": "json_schema"}},
    {"model": MODEL, "request_id": "e27", "messages": HI, "structured_outputs": {"json": SCHEMA, "regex": "a"}},
    {"model": MODEL, "request_id": "e28", "messages": HI, "structured_outputs": {"regex": "a"}, "tools": [WEATHER],
     "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    {"model": MODEL, "request_id": "e29", "messages": HI, "_max_model_len": 5},
    {"model": MODEL, "request_id": "e30", "messages": HI, "max_tokens": 30, "_max_model_len": 20},
    # Prompts long enough that their length alone shows they cannot fit: refused
    # before tokenization, with the same answer.
    {"model": MODEL, "request_id": "e33", "messages": [{"role": "user", "content": "word " * 2000}], "_max_model_len": 5},
    {"model": MODEL, "request_id": "e34", "messages": [{"role": "user", "content": "\u1100\u1161\u11a8" * 3000}], "_max_model_len": 5},
    {"model": MODEL, "request_id": "e35", "messages": HI, "stream": True, "stream_interval": 0},
    {"model": MODEL, "request_id": "r40", "messages": HI, "stream": True, "stream_interval": 3},
    # continue_final_message beside add_generation_prompt: the validator refuses only
    # a request that sets both; with the default, the template step answers.
    {"model": MODEL, "request_id": "e36", "messages": HI, "continue_final_message": True},
    {"model": MODEL, "request_id": "e37", "messages": HI, "continue_final_message": True,
     "add_generation_prompt": True},
    {"model": MODEL, "request_id": "r41", "messages": HI + [{"role": "assistant", "content": "Hel"}],
     "continue_final_message": True, "add_generation_prompt": False},
    {"model": MODEL, "request_id": "e31", "messages": HI, "structured_outputs": {"regex": "a", "grammar": "b"}},
    {"model": MODEL, "request_id": "e32", "messages": HI, "structured_outputs": {"disable_any_whitespace": True}},
]
COMPLETION = [
    {"model": MODEL, "request_id": "c1", "prompt": "The capital of France is"},
    {"model": MODEL, "request_id": "c2", "prompt": ["One", "Two three"], "max_tokens": 5, "temperature": 0.0, "echo": True, "logprobs": 2},
    {"model": MODEL, "request_id": "c3", "prompt": [9707, 11, 1879], "max_tokens": 300, "stream": True, "seed": 3, "min_p": 0.05},
    {"model": MODEL, "request_id": "c4", "prompt": "x", "max_tokens": None, "response_format": {"type": "json_object"}},
    {"model": MODEL, "request_id": "c7", "prompt": "x", "stream_interval": 2},
    {"model": MODEL, "request_id": "c5", "prompt": "x", "structured_outputs": {"choice": ["a", "b"]}, "return_tokens_as_token_ids": True, "logprobs": 1},
    {"model": MODEL, "request_id": "c6", "prompt": "x", "response_format": LEGACY_TAG},
    {"model": MODEL, "request_id": "ce1", "prompt": "x", "top_p": 2},
    {"model": MODEL, "request_id": "ce2", "prompt": "x", "max_tokens": 50000},
    {"model": MODEL, "request_id": "ce3", "prompt": "x", "logprobs": -4},
    {"model": MODEL, "request_id": "ce4", "prompt": "x", "structured_outputs": {"json": SCHEMA, "choice": ["a"]}},
    {"model": MODEL, "request_id": "ce5", "prompt": "x", "n": 2, "temperature": 0},
    {"model": MODEL, "request_id": "ce6", "prompt": "x", "stream_options": {"include_usage": True}},
    {"model": MODEL, "request_id": "ce7", "prompt": "x", "max_tokens": 0},
    {"model": MODEL, "request_id": "ce8", "prompt": "", "max_tokens": 3},
    {"model": MODEL, "request_id": "ce9", "prompt": "one two three four five six seven eight", "max_tokens": 3, "_max_model_len": 4},
    {"model": MODEL, "request_id": "ce10", "prompt": [1, 2, 3, 4, 5, 6, 7], "max_tokens": 3, "_max_model_len": 4},
    {"model": MODEL, "request_id": "ce11", "prompt": [1, 2, 3, 4, 5], "max_tokens": 3, "_max_model_len": 4},
    {"model": MODEL, "request_id": "ce12", "prompt": "x", "bad_words": ["a", "", "a"]},
    {"model": MODEL, "request_id": "ce13", "prompt": "x", "cache_salt": "a/b"},
]


def diff_sampling_params(model_dir):
    """vLLM's ModelConfig.get_diff_sampling_param with generation_config="auto"."""
    try:
        config = GenerationConfig.from_pretrained(model_dir).to_diff_dict()
    except OSError:
        config = {}
    names = ["repetition_penalty", "presence_penalty", "frequency_penalty", "temperature", "top_k", "top_p", "min_p", "max_new_tokens", "skip_special_tokens"]
    if not any(p in config for p in names):
        return {}
    diff = {p: config.get(p) for p in names if config.get(p) is not None}
    if "max_new_tokens" in diff:
        diff["max_tokens"] = diff.pop("max_new_tokens")
    return diff


def response_shapes():
    """Responses and chunks built the way vLLM's serving code builds them
    (chat_completion/serving.py, completion/serving.py), dumped the way it dumps
    them (model_dump for bodies, exclude_unset for stream chunks)."""
    from vllm.entrypoints.generate.base.protocol import DeltaMessage, FunctionCall, ToolCall
    from vllm.entrypoints.openai.chat_completion.protocol import (
        ChatCompletionResponse, ChatCompletionResponseChoice, ChatCompletionResponseStreamChoice,
        ChatCompletionStreamResponse, ChatMessage)
    from vllm.entrypoints.openai.completion.protocol import (
        CompletionResponse, CompletionResponseChoice, CompletionResponseStreamChoice, CompletionStreamResponse)
    from vllm.entrypoints.serve.engine.protocol import UsageInfo

    usage_info = lambda: UsageInfo(prompt_tokens=3, completion_tokens=2, total_tokens=5)
    first = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk", created=7, model="m",
        choices=[ChatCompletionResponseStreamChoice(index=0, delta=DeltaMessage(role="assistant", content=""), logprobs=None, finish_reason=None)],
        prompt_token_ids=None, prompt_text=None)
    echo = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk", created=7, model="m",
        choices=[ChatCompletionResponseStreamChoice(index=0, delta=DeltaMessage(content="Hello"), logprobs=None, finish_reason=None)])
    # a content chunk (output.finish_reason is None), return_token_ids off
    delta = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk", created=7, model="m",
        choices=[ChatCompletionResponseStreamChoice(index=0, delta=DeltaMessage(content="Hi"), logprobs=None, finish_reason=None, token_ids=None)],
        kv_transfer_params=None)
    # the finishing chunk, return_token_ids on
    last = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk", created=7, model="m",
        choices=[ChatCompletionResponseStreamChoice(index=0, delta=DeltaMessage(content="!"), logprobs=None, finish_reason="stop",
                                                    stop_reason=None, token_ids=[0], weight_versions=None)],
        kv_transfer_params=None)
    usage = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk", created=7, model="m", choices=[],
        usage=usage_info(), system_fingerprint=None, metrics=None)
    body = ChatCompletionResponse(id="chatcmpl-1", created=7, model="m", usage=usage_info(),
        choices=[ChatCompletionResponseChoice(index=0, message=ChatMessage(role="assistant", content=None, reasoning="r",
            tool_calls=[ToolCall(id="call_1", function=FunctionCall(name="f", arguments="{}"))]), logprobs=None, finish_reason="tool_calls", stop_reason=None)])
    cmpl_delta = CompletionStreamResponse(id="cmpl-1", object="text_completion", created=7, model="m",
        choices=[CompletionResponseStreamChoice(index=0, text="Hi", logprobs=None, finish_reason=None, stop_reason=None,
                                                prompt_token_ids=[1, 2], token_ids=[3], weight_versions=None)],
        kv_transfer_params=None)
    cmpl_usage = CompletionStreamResponse(id="cmpl-1", created=7, model="m", choices=[], usage=usage_info(),
                                          system_fingerprint=None, metrics=None)
    cmpl_body = CompletionResponse(id="cmpl-1", created=7, model="m", usage=usage_info(), kv_transfer_params=None,
        choices=[CompletionResponseChoice(index=0, text="Hi!", logprobs=None, finish_reason="length", stop_reason=None,
                                          prompt_logprobs=None, prompt_token_ids=None, token_ids=None,
                                          routed_experts=None, weight_versions=None)])
    chunk = lambda c: json.loads(c.model_dump_json(exclude_unset=True))
    usage_chunk = lambda c: json.loads(c.model_dump_json(exclude_unset=False, exclude_none=True))
    whole = lambda c: json.loads(json.dumps(c.model_dump()))
    return {"chunk_first": chunk(first), "chunk_echo": chunk(echo), "chunk_delta": chunk(delta), "chunk_last": chunk(last),
            "chunk_usage": usage_chunk(usage), "chat_response": whole(body),
            "completion_chunk": chunk(cmpl_delta), "completion_chunk_usage": usage_chunk(cmpl_usage),
            "completion_response": whole(cmpl_body)}


def error_body(exc):
    """The body vLLM's exception handlers answer with: a request that fails pydantic
    validation is FastAPI's `RequestValidationError` (locations under `body`), anything
    else goes through create_error_response."""
    import asyncio
    import pydantic
    from fastapi.exceptions import RequestValidationError
    from vllm.entrypoints.serve.exception_handling.error_response import create_error_response
    from vllm.entrypoints.serve.exception_handling.handlers.validation import validation_exception_handler
    if isinstance(exc, pydantic.ValidationError):
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        app = types.SimpleNamespace(state=types.SimpleNamespace(args=types.SimpleNamespace(log_error_stack=False)))
        response = asyncio.run(validation_exception_handler(
            types.SimpleNamespace(app=app, state=types.SimpleNamespace()), RequestValidationError(errors)))
        return json.loads(response.body)
    return create_error_response(exc).model_dump()


def render_chat(tok, max_model_len, defaults, body):
    """ServingRender.render_chat_request, step by step."""
    try:
        req = ChatCompletionRequest(**copy.deepcopy(body))
        tok_params = req.build_tok_params(types.SimpleNamespace(max_model_len=max_model_len))
        rendered = render(tok, None, body, False)
        if rendered.get("error", "").startswith("VLLMValidationError: "):
            # The template refused the request: HfRenderer raises VLLMValidationError
            # with the template's reason (vllm/renderers/hf.py).
            from vllm.exceptions import VLLMValidationError
            raise VLLMValidationError(rendered["error"].removeprefix("VLLMValidationError: "))
        if "error" in rendered:
            raise SystemExit(f"{body['request_id']}: {rendered['error']}")
        # tokenized as the renderer does (stopping one token past the context), then checked
        ids = tok_params._token_len_check(None, tok.encode(rendered["text"], **tok_params.get_encode_kwargs()))
        max_tokens = get_max_tokens(max_model_len, req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens,
                                    len(ids), defaults, None, truncate_prompt_tokens=req.truncate_prompt_tokens)
        params = req.to_sampling_params(max_tokens, defaults)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - what the server's handler does
        return error_body(exc)
    kv, ec = _hoist_transfer_params(params)
    ctk = req.build_chat_params(None, "auto").with_defaults({}).chat_template_kwargs
    g = GenerateRequest(
        request_id=f"chatcmpl-{req.request_id}", token_ids=ids, features=None, sampling_params=params,
        kv_transfer_params=kv, ec_transfer_params=ec, model=req.model,
        reasoning_ended=req.resolve_reasoning_ended(None, ids), reasoning_parser_kwargs=None,
        stream=bool(req.stream), stream_options=(req.stream_options if req.stream else None),
        return_token_ids=req.return_token_ids, cache_salt=req.cache_salt, priority=req.priority, token_offsets=None,
        parse_context=ParseContext(tools=req.tools, tool_choice=req.tool_choice, parallel_tool_calls=req.parallel_tool_calls,
                                   include_reasoning=req.include_reasoning, chat_template_kwargs=ctk,
                                   history_tool_call_cnt=count_history_tool_calls(req)),
    )
    return json.loads(json.dumps(g.model_dump()))


def render_completion(tok, max_model_len, defaults, body):
    """ServingRender.render_completion_request, step by step."""
    try:
        req = CompletionRequest(**copy.deepcopy(body))
        tok_params = req.build_tok_params(types.SimpleNamespace(max_model_len=max_model_len))
        prompts = req.prompt if isinstance(req.prompt, list) and req.prompt and not isinstance(req.prompt[0], int) else [req.prompt]
        responses = []
        for i, prompt in enumerate(prompts):
            ids = tok.encode(prompt, **tok_params.get_encode_kwargs()) if isinstance(prompt, str) else list(prompt)
            ids = tok_params._token_len_check(None, ids)
            max_tokens = get_max_tokens(max_model_len, req.max_tokens, len(ids), defaults, None, truncate_prompt_tokens=req.truncate_prompt_tokens)
            params = req.to_sampling_params(max_tokens, defaults)
            kv, ec = _hoist_transfer_params(params)
            rid = f"cmpl-{req.request_id}" if len(prompts) == 1 else f"cmpl-{req.request_id}-{i}"
            g = GenerateRequest(request_id=rid, token_ids=ids, features=None, sampling_params=params, kv_transfer_params=kv,
                                ec_transfer_params=ec, model=req.model, stream=bool(req.stream),
                                stream_options=(req.stream_options if req.stream else None), return_token_ids=req.return_token_ids,
                                cache_salt=req.cache_salt, priority=req.priority, token_offsets=None)
            responses.append(json.loads(json.dumps(g.model_dump())))
    except Exception as exc:  # noqa: BLE001 - what the server's handler does
        return error_body(exc)
    return responses


def main():
    model_dir = os.path.join(REF, "models", MODEL)
    tok = AutoTokenizer.from_pretrained(model_dir)
    max_model_len = json.load(open(os.path.join(model_dir, "config.json")))["max_position_embeddings"]
    defaults = diff_sampling_params(model_dir)
    out = {"model": MODEL, "max_model_len": max_model_len, "default_sampling_params": defaults, "chat": [], "completion": []}
    for case in CHAT:
        body = {k: v for k, v in case.items() if not k.startswith("_")}
        response = render_chat(tok, case.get("_max_model_len", max_model_len), defaults, body)
        out["chat"].append({"request": body, "max_model_len": case.get("_max_model_len"), "response": response})
    for case in COMPLETION:
        body = {k: v for k, v in case.items() if not k.startswith("_")}
        response = render_completion(tok, case.get("_max_model_len", max_model_len), defaults, body)
        out["completion"].append({"request": body, "max_model_len": case.get("_max_model_len"), "response": response})
    out["shapes"] = response_shapes()
    with open(os.path.join(FIXTURES, "render_mode.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
