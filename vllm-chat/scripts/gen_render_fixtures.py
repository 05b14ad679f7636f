#!/usr/bin/env python3
"""Generate the render-mode fixtures: what vLLM 0.33.0's `/v1/chat/completions/render`
and `/v1/completions/render` return for a few requests against testdata's qwen3.

The steps of `ServingRender.render_chat_request` / `render_completion_request`
(vllm/entrypoints/scale_out/render/serving.py) are replayed with vLLM's own
classes and functions (`ChatCompletionRequest`, `get_max_tokens`,
`to_sampling_params`, `GenerateRequest`, `ParseContext`, `count_history_tool_calls`)
and serialized with `model_dump()` as `create_json_response` does; the prompt is
rendered as in gen_parity_fixtures.py. No reasoning or tool parser is configured.

Usage: HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-chat/scripts/gen_render_fixtures.py $REF
Writes vllm-chat/tests/fixtures/render_mode.json.
"""
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

CHAT = [
    {"model": MODEL, "request_id": "r1", "messages": [{"role": "user", "content": "Hello"}]},
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
]
COMPLETION = [
    {"model": MODEL, "request_id": "c1", "prompt": "The capital of France is"},
    {"model": MODEL, "request_id": "c2", "prompt": ["One", "Two three"], "max_tokens": 5, "temperature": 0.0, "echo": True, "logprobs": 2},
    {"model": MODEL, "request_id": "c3", "prompt": [9707, 11, 1879], "max_tokens": 300, "stream": True, "seed": 3, "min_p": 0.05},
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
    """Responses and chunks built the way vLLM's serving code builds them, dumped the
    way it dumps them (model_dump for bodies, exclude_unset for stream chunks)."""
    from vllm.entrypoints.generate.base.protocol import DeltaMessage, FunctionCall, ToolCall
    from vllm.entrypoints.openai.chat_completion.protocol import (
        ChatCompletionResponse, ChatCompletionResponseChoice, ChatCompletionResponseStreamChoice,
        ChatCompletionStreamResponse, ChatMessage)
    from vllm.entrypoints.serve.engine.protocol import UsageInfo

    first = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk", created=7, model="m",
        choices=[ChatCompletionResponseStreamChoice(index=0, delta=DeltaMessage(role="assistant", content=""), logprobs=None, finish_reason=None)],
        prompt_token_ids=None, prompt_text=None)
    delta = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk", created=7, model="m",
        choices=[ChatCompletionResponseStreamChoice(index=0, delta=DeltaMessage(content="Hi"), logprobs=None, finish_reason=None)],
        kv_transfer_params=None)
    usage = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk", created=7, model="m", choices=[],
        usage=UsageInfo(prompt_tokens=3, completion_tokens=2, total_tokens=5), system_fingerprint=None, metrics=None)
    body = ChatCompletionResponse(id="chatcmpl-1", created=7, model="m", usage=UsageInfo(prompt_tokens=3, completion_tokens=2, total_tokens=5),
        choices=[ChatCompletionResponseChoice(index=0, message=ChatMessage(role="assistant", content=None, reasoning="r",
            tool_calls=[ToolCall(id="call_1", function=FunctionCall(name="f", arguments="{}"))]), logprobs=None, finish_reason="tool_calls", stop_reason=None)])
    dump = lambda c: json.loads(c.model_dump_json(exclude_unset=True, exclude_none=not c.choices))
    return {"chunk_first": dump(first), "chunk_delta": dump(delta), "chunk_usage": dump(usage), "chat_response": json.loads(json.dumps(body.model_dump()))}


def main():
    model_dir = os.path.join(REF, "models", MODEL)
    tok = AutoTokenizer.from_pretrained(model_dir)
    max_model_len = json.load(open(os.path.join(model_dir, "config.json")))["max_position_embeddings"]
    defaults = diff_sampling_params(model_dir)
    out = {"model": MODEL, "max_model_len": max_model_len, "default_sampling_params": defaults, "chat": [], "completion": []}
    for body in CHAT:
        req = ChatCompletionRequest(**body)
        rendered = render(tok, None, body, True)
        if "error" in rendered:
            raise SystemExit(f"{body['request_id']}: {rendered['error']}")
        ids = rendered["ids"]
        max_tokens = get_max_tokens(max_model_len, req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens,
                                    len(ids), defaults, None, truncate_prompt_tokens=req.truncate_prompt_tokens)
        params = req.to_sampling_params(max_tokens, defaults)
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
        out["chat"].append({"request": body, "response": json.loads(json.dumps(g.model_dump()))})
    for body in COMPLETION:
        req = CompletionRequest(**body)
        prompts = req.prompt if isinstance(req.prompt, list) and req.prompt and not isinstance(req.prompt[0], int) else [req.prompt]
        responses = []
        for i, prompt in enumerate(prompts):
            ids = tok.encode(prompt, add_special_tokens=req.add_special_tokens) if isinstance(prompt, str) else list(prompt)
            max_tokens = get_max_tokens(max_model_len, req.max_tokens, len(ids), defaults, None, truncate_prompt_tokens=req.truncate_prompt_tokens)
            params = req.to_sampling_params(max_tokens, defaults)
            kv, ec = _hoist_transfer_params(params)
            rid = f"cmpl-{req.request_id}" if len(prompts) == 1 else f"cmpl-{req.request_id}-{i}"
            g = GenerateRequest(request_id=rid, token_ids=ids, features=None, sampling_params=params, kv_transfer_params=kv,
                                ec_transfer_params=ec, model=req.model, stream=bool(req.stream),
                                stream_options=(req.stream_options if req.stream else None), return_token_ids=req.return_token_ids,
                                cache_salt=req.cache_salt, priority=req.priority, token_offsets=None)
            responses.append(json.loads(json.dumps(g.model_dump())))
        out["completion"].append({"request": body, "response": responses})
    out["shapes"] = response_shapes()
    with open(os.path.join(FIXTURES, "render_mode.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
