#!/usr/bin/env python3
"""Sends a fixed battery of requests to a running server and prints its answers with
ids and timestamps normalized, one block per request, so that two builds (or two
servers) can be diffed byte for byte:

    python3 examples/scripts/serve_answers.py http://127.0.0.1:8000 > new.txt
    diff old.txt new.txt

Run the servers with the embedded mock engine at full speed
(`--mock-tokens-per-second 0`) and the same flags. Standard library only.
"""
import functools
import json
import re
import sys
import urllib.error
import urllib.request

BASE = sys.argv[1].rstrip("/") if len(sys.argv) > 1 and __name__ == "__main__" else "http://127.0.0.1:8000"
MSG = [{"role": "user", "content": "Hello there!"}]
# A prompt several KV-cache blocks long.
LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 8)
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
SO = {"include_usage": True, "continuous_usage_stats": True}

CASES = [
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "stream": True}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "stream": True, "stream_options": SO,
                              "logprobs": True, "top_logprobs": 2, "return_token_ids": True}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "logprobs": True, "top_logprobs": 3,
                              "return_token_ids": True, "return_tokens_as_token_ids": True}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "stop": ["mock"], "stream": True}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "stop": ["mock"],
                              "include_stop_str_in_output": True}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "max_tokens": 3, "stream": True,
                              "stream_options": {"include_usage": True}}),
    ("/v1/chat/completions", {"model": "qwen3", "echo": True, "add_generation_prompt": False,
                              "messages": MSG + [{"role": "assistant", "content": "Sure"}], "stream": True}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "tools": TOOLS}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "tools": TOOLS, "tool_choice": "required"}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "n": 2}),
    ("/v1/chat/completions", {"model": "qwen3", "messages": MSG, "temperature": -1}),
    ("/v1/chat/completions", {"model": "other", "messages": MSG}),
    ("/v1/chat/completions", "not json"),
    ("/v1/completions", {"model": "qwen3", "prompt": "Once upon a time"}),
    ("/v1/completions", {"model": "qwen3", "prompt": "Once upon a time", "stream": True,
                         "stream_options": SO, "logprobs": 2, "echo": True, "return_token_ids": True}),
    ("/v1/completions", {"model": "qwen3", "prompt": [1, 2, 3], "logprobs": 1, "echo": True}),
    ("/v1/completions", {"model": "qwen3", "prompt": "x", "stop": ["engine"], "stream": True}),
    ("/v1/completions", {"model": "qwen3", "prompt": ["a", "b"]}),
    ("/inference/v1/generate", {"token_ids": [9707, 0], "sampling_params": {"max_tokens": 5}}),
    ("/inference/v1/generate", {"token_ids": [9707], "sampling_params": {"max_tokens": 4, "logprobs": 2},
                                "stream": True, "return_token_ids": True, "stream_options": SO}),
    ("/inference/v1/generate", {"token_ids": [9707], "sampling_params": {"max_tokens": 6, "logprobs": 1},
                                "output_mode": "text"}),
    ("/inference/v1/generate", {"token_ids": [9707], "sampling_params": {"max_tokens": 6, "stop": ["am"]},
                                "output_mode": "text", "stream": True,
                                "stream_options": {"include_usage": True}}),
    ("/inference/v1/generate", {"token_ids": [], "sampling_params": {}}),
    ("/tokenize", {"model": "qwen3", "prompt": "Hello world", "return_token_strs": True}),
    ("/tokenize", {"model": "qwen3", "messages": MSG}),
    ("/detokenize", {"model": "qwen3", "tokens": [9707, 1879]}),
    ("/v1/chat/completions/render", {"model": "qwen3", "messages": MSG}),
    ("/v1/completions/render", {"model": "qwen3", "prompt": "Hi"}),
]

# Parallel sampling, batched prompts and prompt logprobs, compared with vLLM's own
# frontend by compare_vllm_frontend.py: (name, path, body, engine output modes in which
# the case is deterministic on both sides). With the mock's random output only seeded
# requests are: vLLM's child i samples with seed + i.
BOTH, TEXT = ("text", "random"), ("text",)
SO_N = {"include_usage": True, "continuous_usage_stats": True}
N_CASES = [
    ("chat n=2 weight versions", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 2, "max_tokens": 4, "return_weight_versions": True}, TEXT),
    ("chat weight versions stream", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "max_tokens": 4, "stream": True,
      "return_weight_versions": True}, TEXT),
    ("chat n=2", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 2, "max_tokens": 6}, TEXT),
    ("chat n=2 stream usage logprobs token ids", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 2, "max_tokens": 5, "stream": True, "stream_options": SO_N,
      "logprobs": True, "top_logprobs": 2, "return_token_ids": True}, TEXT),
    ("chat n=8 seed", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 8, "seed": 5, "max_tokens": 5, "logprobs": True,
      "top_logprobs": 1}, BOTH),
    ("chat n=8 seed stream", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 8, "seed": 5, "max_tokens": 5, "stream": True,
      "stream_options": {"include_usage": True}}, BOTH),
    ("chat n=1 seed", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "seed": 9, "max_tokens": 5}, BOTH),
    ("chat n=2 stop string", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 2, "max_tokens": 30, "stop": ["mock"]}, TEXT),
    ("chat n=2 greedy", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 2, "temperature": 0}, TEXT),
    ("chat n=2 seed prompt_logprobs", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 2, "seed": 4, "max_tokens": 3, "prompt_logprobs": 2}, BOTH),
    ("completions batch n=2", "/v1/completions",
     {"model": "qwen3", "prompt": ["Once upon", "a time"], "n": 2, "max_tokens": 5}, TEXT),
    ("completions batch n=2 stream usage", "/v1/completions",
     {"model": "qwen3", "prompt": ["Once upon", "a time"], "n": 2, "max_tokens": 4, "stream": True,
      "stream_options": SO_N, "return_token_ids": True}, TEXT),
    ("completions token batch n=3 seed echo logprobs", "/v1/completions",
     {"model": "qwen3", "prompt": [[9707, 11, 1879], [40, 1079]], "n": 3, "seed": 7, "max_tokens": 4,
      "echo": True, "logprobs": 2}, BOTH),
    ("completions n=8 seed stream echo", "/v1/completions",
     {"model": "qwen3", "prompt": "Once upon a time", "n": 8, "seed": 11, "max_tokens": 4, "stream": True,
      "echo": True, "stream_options": {"include_usage": True}}, BOTH),
    # Streamed echo with logprobs and n > 1 is left out: vLLM 0.33 fails it with a 500
    # (`KeyError`) whenever two choices' outputs reach the consumer merged, as the
    # merged `RequestOutput` carries one choice's prompt logprobs.
    ("completions seed stream echo logprobs", "/v1/completions",
     {"model": "qwen3", "prompt": "Once upon a time", "seed": 11, "max_tokens": 4, "stream": True,
      "echo": True, "logprobs": 1, "stream_options": {"include_usage": True}}, BOTH),
    # With the random mock, "personnel" is in sample 1's text only: that sample alone
    # stops (its engine request aborted), the others run to max_tokens.
    ("completions n=4 seed stop string in one sample", "/v1/completions",
     {"model": "qwen3", "prompt": "Once upon a time", "n": 4, "seed": 40, "max_tokens": 12,
      "stop": ["personnel"], "return_token_ids": True}, BOTH),
    ("completions n=4 seed stop string in one sample stream", "/v1/completions",
     {"model": "qwen3", "prompt": "Once upon a time", "n": 4, "seed": 40, "max_tokens": 12,
      "stop": ["personnel"], "stream": True, "stream_options": {"include_usage": True}}, BOTH),
    ("completions echo max_tokens=0 logprobs", "/v1/completions",
     {"model": "qwen3", "prompt": "Once upon a time", "echo": True, "max_tokens": 0, "logprobs": 1,
      "return_token_ids": True}, TEXT),
    ("completions echo max_tokens=0 stream", "/v1/completions",
     {"model": "qwen3", "prompt": ["Once", "upon"], "echo": True, "max_tokens": 0, "stream": True}, TEXT),
    ("completions prompt_logprobs n=2", "/v1/completions",
     {"model": "qwen3", "prompt": "Once upon a time", "n": 2, "seed": 1, "max_tokens": 3,
      "prompt_logprobs": 3}, BOTH),
    ("generate n=2 seed logprobs", "/inference/v1/generate",
     {"token_ids": [9707, 11, 1879], "sampling_params": {"n": 2, "seed": 3, "max_tokens": 5, "logprobs": 1},
      "return_token_ids": True}, BOTH),
    ("generate n=8 seed stream usage", "/inference/v1/generate",
     {"token_ids": [9707], "sampling_params": {"n": 8, "seed": 3, "max_tokens": 4}, "stream": True,
      "stream_options": SO_N}, BOTH),
    ("generate n=2 text stream", "/inference/v1/generate",
     {"token_ids": [9707], "sampling_params": {"n": 2, "max_tokens": 6, "stop": ["am"]},
      "output_mode": "text", "stream": True}, TEXT),
    ("generate prompt_logprobs", "/inference/v1/generate",
     {"token_ids": [9707, 11, 1879, 0], "sampling_params": {"max_tokens": 2, "prompt_logprobs": 1}}, TEXT),
    ("completions best_of (not a vLLM 0.33 field)", "/v1/completions",
     {"model": "qwen3", "prompt": "Once", "best_of": 3, "max_tokens": 3}, TEXT),
    ("chat n=0", "/v1/chat/completions", {"model": "qwen3", "messages": MSG, "n": 0}, TEXT),
    ("chat n=3 parsers", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 3, "tools": TOOLS}, ("parsers",)),
    ("chat n=3 parsers stream", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 3, "tools": TOOLS, "stream": True,
      "stream_options": {"include_usage": True}}, ("parsers",)),
    ("chat n=2 parsers no tools stream", "/v1/chat/completions",
     {"model": "qwen3", "messages": MSG, "n": 2, "max_tokens": 12, "stream": True}, ("parsers",)),
    ("generate n above max_num_seqs", "/inference/v1/generate",
     {"token_ids": [9707], "sampling_params": {"n": 300}}, TEXT),
] + [
    # Structured outputs vLLM's frontend refuses before the engine sees them (and two it
    # accepts). Needs lm-format-enforcer in the reference venv (scripts/interop.sh).
    (f"structured outputs {name} ({path.rsplit('/', 1)[1]})", path, {"model": "qwen3", **prompt, "max_tokens": 3, **spec}, TEXT)
    for name, spec in [
        ("choice []", {"structured_outputs": {"choice": []}}),
        ("choice", {"structured_outputs": {"choice": ["yes", "no"]}}),
        ("grammar blank", {"structured_outputs": {"grammar": " "}}),
        ("json not JSON", {"structured_outputs": {"json": "not a schema"}}),
        ("json object", {"structured_outputs": {"json": {"type": "object"}}}),
        ("json nested 70 deep", {"structured_outputs": {"json": functools.reduce(
            lambda inner, _: {"a": inner}, range(70), {})}}),
        ("json_object false", {"structured_outputs": {"json_object": False}}),
        ("regex NUL", {"structured_outputs": {"regex": "a\u0000"}}),
        ("structural_tag {}", {"structured_outputs": {"structural_tag": "{}"}}),
        ("structural_tag not JSON", {"structured_outputs": {"structural_tag": "nope"}}),
        ("response_format structural_tag unknown format",
         {"response_format": {"type": "structural_tag", "format": {"type": "nope"}}}),
    ]
    for path, prompt in [("/v1/chat/completions", {"messages": MSG}),
                         ("/v1/completions", {"prompt": "Once"})]
] + [
    # `--enable-prompt-tokens-details`: each request runs twice, the second time with
    # its prompt's blocks in the engine's prefix cache.
    (f"prompt tokens details {name} {attempt}", path, body, ("details",))
    for name, path, body in [
        ("chat", "/v1/chat/completions",
         {"model": "qwen3", "messages": [{"role": "user", "content": LONG}], "max_tokens": 3}),
        ("chat stream", "/v1/chat/completions",
         {"model": "qwen3", "messages": [{"role": "user", "content": LONG + " again"}],
          "max_tokens": 3, "stream": True, "stream_options": {"include_usage": True}}),
        # The prompt of "chat", already cached: which child's count each frontend
        # reports must not depend on when its children reached the engine.
        ("chat n=2", "/v1/chat/completions",
         {"model": "qwen3", "messages": [{"role": "user", "content": LONG}],
          "max_tokens": 3, "n": 2}),
        ("completions", "/v1/completions", {"model": "qwen3", "prompt": LONG, "max_tokens": 3}),
        ("completions stream", "/v1/completions",
         {"model": "qwen3", "prompt": LONG + " more", "max_tokens": 3, "stream": True,
          "stream_options": {"include_usage": True}}),
        ("completions batch", "/v1/completions",
         {"model": "qwen3", "prompt": [LONG + " one", LONG + " two"], "max_tokens": 3}),
        ("generate", "/inference/v1/generate",
         {"token_ids": list(range(1000, 1050)), "sampling_params": {"max_tokens": 3}}),
        ("generate stream", "/inference/v1/generate",
         {"token_ids": list(range(2000, 2050)), "sampling_params": {"max_tokens": 3},
          "stream": True, "stream_options": {"include_usage": True}}),
    ]
    for attempt in (1, 2)
] + [
    # `--stream-interval 2` (the `interval` run compares the chunks one by one, from an
    # engine slow enough that no two outputs reach a frontend together): the first
    # chunk at once, then every second token, the last at the finish; a request's
    # `stream_interval` raises the server's.
    (f"stream interval {name}", path, body, ("interval",))
    for name, path, body in [
        ("chat", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 8, "stream": True}),
        ("chat request 1 (clamped up)", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 5, "stream": True, "stream_interval": 1}),
        ("chat n=2", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 6, "n": 2, "stream": True}),
        ("chat stop string", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 20, "stop": ["mock"], "stream": True}),
        ("chat request 3 logprobs usage", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 8, "stream": True, "stream_interval": 3,
          "logprobs": True, "top_logprobs": 1, "stream_options": SO}),
        ("chat not streamed", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 7, "stream_interval": 4}),
        ("chat stream_interval 0", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "stream": True, "stream_interval": 0}),
        ("completions request 4 token ids", "/v1/completions",
         {"model": "qwen3", "prompt": "Once upon a time", "max_tokens": 9, "stream": True,
          "stream_interval": 4, "return_token_ids": True, "logprobs": 1}),
        ("completions stream_interval -1", "/v1/completions",
         {"model": "qwen3", "prompt": "Once", "stream": True, "stream_interval": -1}),
        ("generate request 3", "/inference/v1/generate",
         {"token_ids": [9707], "sampling_params": {"max_tokens": 7, "stream_interval": 3},
          "stream": True}),
        ("generate stream_interval 0", "/inference/v1/generate",
         {"token_ids": [9707], "sampling_params": {"max_tokens": 7, "stream_interval": 0},
          "stream": True}),
    ]
]

# Prefill/decode disaggregation (the `pd` run: engines with an emulated NixlConnector):
# a prefill request (`do_remote_decode`) reaches the engine's connector through
# `extra_args`, and its final output's `kv_transfer_params` (where the decode instance
# reads the KV blocks) comes back in the answer and on the finishing chunk.
PREFILL = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
           "remote_block_ids": None, "remote_host": None, "remote_port": None}
DECODE = {"do_remote_decode": False, "do_remote_prefill": True, "remote_engine_id": "p0",
          "remote_block_ids": [[0, 1]], "remote_host": "localhost", "remote_port": 5600}
# In front of vLLM's real EngineCoreProc whose every answer is a reasoning section, then
# a tool call, in special tokens (the `engine` run; qwen3 and hermes parsers); prompts
# quote the markers. (Its scripted executor computes no logprobs.)
QUOTES = [{"role": "user", "content": "What does </think> mean? And <tool_call>?"}]
N_CASES += [
    (f"real engine {name}", path, body, ("engine",))
    for name, path, body in [
        ("chat tools", "/v1/chat/completions", {"model": "qwen3", "messages": MSG, "tools": TOOLS}),
        ("chat tools stream", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "tools": TOOLS, "stream": True}),
        ("chat no tools", "/v1/chat/completions", {"model": "qwen3", "messages": MSG}),
        ("chat tool_choice none stream", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "tools": TOOLS, "tool_choice": "none", "stream": True}),
        ("chat special tokens kept", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "tools": TOOLS, "skip_special_tokens": False}),
        ("chat special tokens kept stream", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "skip_special_tokens": False, "stream": True}),
        ("chat markers quoted in the prompt", "/v1/chat/completions",
         {"model": "qwen3", "messages": QUOTES, "tools": TOOLS}),
        ("chat markers quoted in an earlier answer stream", "/v1/chat/completions",
         {"model": "qwen3", "tools": TOOLS, "stream": True, "messages": QUOTES + [
             {"role": "assistant", "content": "<think>x</think>It closes reasoning."},
             {"role": "user", "content": "Thanks"}]}),
        ("chat thinking off", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "tools": TOOLS,
          "chat_template_kwargs": {"enable_thinking": False}}),
        ("chat cut in the reasoning stream", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 6, "stream": True}),
        ("chat token ids", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "tools": TOOLS, "return_token_ids": True}),
        ("completions special tokens", "/v1/completions",
         {"model": "qwen3", "prompt": "Once", "max_tokens": 60, "skip_special_tokens": False}),
        ("completions stream", "/v1/completions",
         {"model": "qwen3", "prompt": "Once", "max_tokens": 60, "stream": True}),
    ]
]
N_CASES += [
    (f"kv transfer {name}", path, body, ("pd",))
    for name, path, body in [
        ("chat prefill", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 1, "kv_transfer_params": PREFILL}),
        ("chat prefill stream usage", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 2, "kv_transfer_params": PREFILL,
          "stream": True, "stream_options": SO}),
        ("chat decode", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 3, "kv_transfer_params": DECODE}),
        ("chat without", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 2, "stream": True}),
        ("chat prefill n=2", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 1, "n": 2, "kv_transfer_params": PREFILL}),
        ("completions prefill", "/v1/completions",
         {"model": "qwen3", "prompt": LONG, "max_tokens": 1, "kv_transfer_params": PREFILL}),
        ("completions prefill stream", "/v1/completions",
         {"model": "qwen3", "prompt": LONG, "max_tokens": 1, "kv_transfer_params": PREFILL,
          "stream": True}),
        ("completions prefill batch", "/v1/completions",
         {"model": "qwen3", "prompt": ["Once upon", LONG], "max_tokens": 1,
          "kv_transfer_params": PREFILL}),
        ("completions prefill with vllm_xargs", "/v1/completions",
         {"model": "qwen3", "prompt": "Once", "max_tokens": 1, "kv_transfer_params": PREFILL,
          "vllm_xargs": {"k": 1}}),
        ("generate prefill", "/inference/v1/generate",
         {"token_ids": list(range(3000, 3040)), "sampling_params": {"max_tokens": 1},
          "kv_transfer_params": PREFILL}),
        ("generate prefill stream", "/inference/v1/generate",
         {"token_ids": list(range(3000, 3040)), "sampling_params": {"max_tokens": 1},
          "kv_transfer_params": PREFILL, "stream": True}),
    ]
]
# A decode request the decode frontend refuses: with `--kv-transfer-config` it sends the
# engine vLLM's rejection notice (a pre-aborted request), whose connector frees the
# prefill's blocks; checks vLLM makes before its handler (request validation) and
# refused prefill requests send none. `compare_vllm_frontend.py` also compares what
# each engine's connector freed.
N_CASES += [
    (f"kv transfer rejected {name}", path, body, ("pd",))
    for name, path, body in [
        ("chat decode, too long", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 100000000,
          "kv_transfer_params": DECODE, "request_id": "pd-too-long"}),
        ("chat decode stream, too long", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 100000000, "stream": True,
          "kv_transfer_params": DECODE, "request_id": "pd-too-long-stream"}),
        ("completions decode, token out of vocabulary", "/v1/completions",
         {"model": "qwen3", "prompt": [9707, 10000000], "max_tokens": 2,
          "kv_transfer_params": DECODE, "request_id": "pd-oov"}),
        ("chat decode, request validation (no notice)", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "top_logprobs": 2, "kv_transfer_params": DECODE,
          "request_id": "pd-invalid"}),
        ("completions decode batch, too long", "/v1/completions",
         {"model": "qwen3", "prompt": ["Once", "Twice"], "max_tokens": 100000000,
          "kv_transfer_params": DECODE, "request_id": "pd-batch"}),
        ("chat prefill, too long (no notice)", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 100000000,
          "kv_transfer_params": PREFILL, "request_id": "pd-prefill"}),
        ("chat decode, do_remote_prefill false (no notice)", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 100000000, "request_id": "pd-false",
          "kv_transfer_params": {**DECODE, "do_remote_prefill": False}}),
        ("chat decode without a request id, too long", "/v1/chat/completions",
         {"model": "qwen3", "messages": MSG, "max_tokens": 100000000,
          "kv_transfer_params": DECODE}),
    ]
]

NORMALIZE = [
    (re.compile(r'(chatcmpl|cmpl|chatcmpl-tool|modelperm)-[0-9a-f]{32}'), r"\1-ID"),
    (re.compile(r'"request_id":\s*"[0-9a-f]{32}"'), '"request_id":"ID"'),
    (re.compile(r'"created":\s*\d+'), '"created":0'),
    # The engine's request id (random suffix), as a KV connector reports it.
    (re.compile(r'"remote_request_id":\s*"[^"]*"'), '"remote_request_id":"ID"'),
]


def normalize(text):
    for pattern, repl in NORMALIZE:
        text = pattern.sub(repl, text)
    return text


def normalize_answer(text):
    """`normalize`, and for an SSE stream its events grouped by choice index (in order
    within a choice): with n > 1 or a batch of prompts, choices interleave as their
    outputs arrive, so only each choice's own order is meaningful. Events without a
    choice (usage, errors, `[DONE]`) keep their place after the choices'."""
    text = normalize(text)
    if not text.startswith("data: "):
        return text
    events = [e for e in text.split("\n\n") if e]

    def key(event):
        try:
            choices = json.loads(event[len("data: "):]).get("choices") or []
        except (ValueError, AttributeError):
            return (1, 0)
        return (0, choices[0].get("index", 0)) if choices else (1, 0)

    return "".join(e + "\n\n" for e in sorted(events, key=key))


def main():
    for path, body in CASES:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        req = urllib.request.Request(BASE + path, data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, ctype, text = resp.status, resp.headers.get("content-type"), resp.read().decode()
        except urllib.error.HTTPError as e:
            status, ctype, text = e.code, e.headers.get("content-type"), e.read().decode()
        print(f"### {path} {json.dumps(body)[:120]}")
        print(f"{status} {ctype}")
        print(normalize_answer(text))


if __name__ == "__main__":
    main()
