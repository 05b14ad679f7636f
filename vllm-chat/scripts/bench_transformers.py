#!/usr/bin/env python3
"""Renders per second of transformers' apply_chat_template on the scenarios of
benches/scenarios.json: the conversation vLLM passes (after its preprocessing),
tokenize=False (`text`) and tokenize=True (`tokens`), as vLLM calls it.

Usage: HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-chat/scripts/bench_transformers.py $REF
Prints one JSON object: {"<scenario>/<text|tokens>": renders_per_second, ...}.
"""
import json
import os
import sys
import time
import types

from transformers import AutoTokenizer
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.renderers.chat_utils.chat_message import parse_chat_messages
from vllm.renderers.hf import resolve_chat_template_content_format

REF = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/vllm-reference")
HERE = os.path.dirname(os.path.abspath(__file__))
MC = types.SimpleNamespace(multimodal_config=None, enable_prompt_embeds=False, revision=None, code_revision=None,
                           tokenizer_revision=None, trust_remote_code=False, tokenizer=None, model=None,
                           hf_config=types.SimpleNamespace(model_type="none"))


def rate(fn, min_time=2.0):
    fn()
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < min_time:
        fn()
        n += 1
    return n / elapsed


def main():
    scenarios = json.load(open(os.path.join(HERE, "..", "benches", "scenarios.json")))
    cases = json.load(open(os.path.join(HERE, "..", "tests", "fixtures", "cases.json")))
    out = {}
    for name, sc in scenarios.items():
        if name.startswith("_"):
            continue
        tok = AutoTokenizer.from_pretrained(os.path.join(REF, "models", sc["model"]))
        req = ChatCompletionRequest(**{"model": "m", **cases[sc["case"]]})
        tools = None if req.tools is None else [t.model_dump() for t in req.tools]
        fmt = resolve_chat_template_content_format(None, tools, "auto", tok, model_config=MC)
        conversation, _, _ = parse_chat_messages(req.messages, MC, content_format=fmt)
        kwargs = dict(tools=tools, add_generation_prompt=True)
        out[f"{name}/text"] = rate(lambda: tok.apply_chat_template(conversation, tokenize=False, **kwargs))
        out[f"{name}/tokens"] = rate(lambda: tok.apply_chat_template(conversation, tokenize=True, return_dict=False, **kwargs))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
