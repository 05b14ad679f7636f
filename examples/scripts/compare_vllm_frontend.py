#!/usr/bin/env python3
"""`serve` against vLLM 0.33.0's real OpenAI frontend, each in front of a mock engine.

vLLM's side is its own API server app (`build_async_engine_client`, `build_app`,
`init_app_state`: AsyncLLM, the input and output processors, `ParentRequest`, the
OpenAI serving classes) configured for one remote headless engine
(`--data-parallel-size-local 0`), driven in-process through ASGI (the reference venv has
no uvicorn). Our side is the `serve` example. Each dials its own `mock-engine` started
with the same flags, so both frontends see the same engine behaviour: with
`--mock-output text` every request gets the same tokens; with `--mock-output random` a
seeded request's tokens depend only on its seed (vLLM's child `i` samples with
`seed + i`), so seeded cases compare sample by sample; in the `parsers` run both
frontends parse a reasoning section and a tool call (qwen3 / hermes), one parser per
choice. In the `engine` run both frontends sit in front of vLLM's own EngineCoreProc
(`vllm-client/scripts/interop_engine_core.py`, scripted executor) whose answer holds
special tokens.

The reference venv has neither uvicorn nor orjson: see `stub_missing_modules`.

Every case of `serve_answers.N_CASES` is sent to both; the answers are normalized as
`serve_answers.py` normalizes them (ids, timestamps; streamed chunks grouped by choice
index, since choices interleave as their outputs arrive) and compared byte for byte.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        examples/scripts/compare_vllm_frontend.py --serve TARGET/debug/examples/serve \
        --mock-engine TARGET/debug/examples/mock-engine --model $REF/models/qwen3

Prints PASS/FAIL per case (a diff for each failure); exits non-zero on any failure.
"""

import argparse
import asyncio
import contextlib
import difflib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import types
import urllib.error
import urllib.request

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # the engine is the mock
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import serve_answers  # noqa: E402


# Server-side packages vLLM's API server imports at module level that the reference
# venv does not install; none of them is used when the app is driven through ASGI.
SERVER_ONLY = ("uvicorn", "watchfiles")


class Inert:
    """Whatever a stub module's name stands for: constructible, callable, and every
    attribute of it is again inert (a metrics instrumentator that measures nothing)."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self


def stub_attribute(name: str):
    """Any public name of a stub module is an inert class."""
    if name.startswith("__"):
        raise AttributeError(name)
    return Inert


def stub_missing_modules() -> None:
    """Stands in for what the reference venv lacks: the `SERVER_ONLY` packages (empty
    modules) and orjson, which vLLM's `create_json_response` uses to write whole
    answers. The orjson stand-in writes what orjson writes for these answers (compact,
    UTF-8, int keys as strings); float exponents are the one known difference (`1e-05`
    for orjson's `1e-5`)."""
    for name in SERVER_ONLY:
        try:
            __import__(name)
        except ImportError:
            stub = types.ModuleType(name)
            stub.__getattr__ = stub_attribute
            sys.modules[name] = stub
    try:
        import orjson  # noqa: F401
    except ImportError:
        stub = types.ModuleType("orjson")
        stub.OPT_NON_STR_KEYS, stub.OPT_SERIALIZE_NUMPY = 1, 2
        stub.JSONDecodeError = json.JSONDecodeError
        stub.loads = json.loads

        def dumps(obj, default=None, option=None):
            return json.dumps(obj, default=default, separators=(",", ":"),
                              ensure_ascii=False).encode()

        stub.dumps = dumps
        sys.modules["orjson"] = stub


# The engines' and vLLM's frontend's `max_num_seqs` (vLLM's frontend checks `n` against
# its own configuration; `serve` against what the engines report).
MAX_NUM_SEQS = 128


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The runs: the mock engine's output, and the flags both frontends get. `parsers`
# answers a reasoning section then a tool call, through the qwen3 reasoning parser and
# the hermes tool parser: one parser per choice.
PARSED_TEXT = ('<think>The user wants the weather.</think>\n\n<tool_call>\n'
               '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
KV_TRANSFER_CONFIG = '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'
MODES = {
    "text": (["--mock-output", "text"], []),
    "random": (["--mock-output", "random"], []),
    "parsers": (["--mock-output", "text", "--mock-text", PARSED_TEXT],
                ["--reasoning-parser", "qwen3", "--tool-call-parser", "hermes",
                 "--enable-auto-tool-choice"]),
    # Prompt-cache counts in usage: the engines keep a prefix cache (the mock keeps one
    # when it publishes KV events, here to a per-engine ipc socket nobody reads), so a
    # prompt sent again reports cached tokens.
    "details": (["--mock-output", "text", "--kv-events-config",
                 '{"enable_kv_cache_events": true, "publisher": "zmq", '
                 '"endpoint": "ipc:///tmp/compare-vllm-frontend-kv-{port}"}'],
                ["--enable-prompt-tokens-details"]),
    # `--stream-interval`: chunks compared one by one (see `RAW_CHUNKS`).
    "interval": (["--mock-output", "text"], ["--stream-interval", "2"]),
    # Prefill/decode disaggregation: engines with an emulated KV connector answer a
    # prefill request with the parameters of its decode; the frontends are told about
    # the connector (`--kv-transfer-config`), so a refused decode request sends the
    # engine vLLM's rejection notice (see `KV_LOGS`).
    "pd": (["--mock-output", "text", "--kv-transfer-config", KV_TRANSFER_CONFIG],
           ["--kv-transfer-config", KV_TRANSFER_CONFIG]),
}
# Modes whose engines' logs are read after every case: what each engine's (emulated) KV
# connector freed — the remote prefills of requests that finished unscheduled, such as
# a frontend's rejection notice — is compared too (request id and parameters).
KV_LOGS = {"pd"}
FREED = re.compile(r"KV connector: request finished before its remote prefill was pulled; "
                   r"freeing the remote blocks request_id=(\S+) kv_transfer_params=(.*)$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RANDOM_ID = re.compile(r"^[0-9a-f]{16}(?:[0-9a-f]{16})?$")
# Modes whose streamed answers are compared chunk by chunk rather than merged per
# choice: their engines emit slowly enough (`--mock-tokens-per-second`) that every
# engine output reaches a frontend alone, so the chunking is the frontend's choice.
RAW_CHUNKS = {"interval": "5"}
# Modes whose engines are vLLM 0.33.0's own EngineCoreProc (real scheduler, detokenizer
# inputs, stop handling; a scripted executor samples the token ids of the given text,
# special tokens as their ids, then the EOS): the model output holds special tokens, as
# a served model's does, and prompts quote the markers. (Markers quoted inside the
# output are left out: vLLM's whole and streamed answers disagree there, and the crate
# follows one of them; see vllm-parser's corpora.)
ENGINE_TEXT = ('<think>\nThe user asks about the weather in Paris.\n</think>\n\n'
               'Sure! <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
               '</tool_call>')
REAL_ENGINE = {"engine": ENGINE_TEXT}
MODES["engine"] = (None, ["--reasoning-parser", "qwen3", "--tool-call-parser", "hermes",
                          "--enable-auto-tool-choice"])
ENGINE_CORE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                  "vllm-client", "scripts", "interop_engine_core.py")


def real_engine(args, port: int, mode: str) -> subprocess.Popen:
    """vLLM's EngineCoreProc with a scripted executor answering every request with
    `REAL_ENGINE[mode]`'s token ids and the EOS."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    ids = tokenizer.encode(REAL_ENGINE[mode], add_special_tokens=False).ids
    eos = json.load(open(os.path.join(args.model, "generation_config.json")))["eos_token_id"]
    ids.append(eos[0] if isinstance(eos, list) else eos)
    return subprocess.Popen(
        [sys.executable, ENGINE_CORE_SCRIPT, "--handshake-address", f"tcp://127.0.0.1:{port}",
         "--model", args.model, "--max-model-len", str(args.max_model_len), "--step-delay-ms", "0",
         "--output-token-ids", ",".join(map(str, ids))],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def engine_log(port: int) -> str:
    """Where a `KV_LOGS` mode's engine dialing `port` writes its log (its stdout)."""
    return os.path.join(tempfile.gettempdir(), f"compare-vllm-frontend-engine-{port}.log")


def freed(port: int, seen: int) -> tuple[list[str], int]:
    """The remote prefills the engine dialing `port` freed after its first `seen` log
    lines (request id and parameters), and the number of lines now."""
    with open(engine_log(port), errors="replace") as f:
        lines = f.read().splitlines()
    # A request without an id is named by a random one (vLLM: 16 hex digits, serve 32).
    found = [RANDOM_ID.sub("ID", match.group(1)) + " " + match.group(2) for line in lines[seen:]
             if (match := FREED.search(ANSI.sub("", line)))]
    return found, len(lines)


def mock_engine(args, port: int, mode: str) -> subprocess.Popen:
    if mode in REAL_ENGINE:
        return real_engine(args, port, mode)
    log = open(engine_log(port), "w") if mode in KV_LOGS else subprocess.DEVNULL
    return subprocess.Popen(
        [args.mock_engine, args.model, "--headless", "--data-parallel-address", "127.0.0.1",
         "--data-parallel-rpc-port", str(port), "--data-parallel-size", "1",
         "--max-model-len", str(args.max_model_len),
         *(flag.replace("{port}", str(port)) for flag in MODES[mode][0]), "--mock-seed", "3",
         "--mock-tokens-per-second", RAW_CHUNKS.get(mode, "0"),
         "--max-num-seqs", str(MAX_NUM_SEQS)],
        stdout=log, stderr=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"},
    )


async def asgi_post(app, path: str, body) -> tuple[int, str, str]:
    """POSTs `body` to the ASGI `app`; returns status, content type and body text."""
    data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(b"content-type", b"application/json"),
                                     (b"content-length", str(len(data)).encode())],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "state": {},
    }
    sent = False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    status, ctype, chunks = 0, "", []

    async def send(message):
        nonlocal status, ctype
        if message["type"] == "http.response.start":
            status = message["status"]
            for k, v in message.get("headers", []):
                if k.lower() == b"content-type":
                    ctype = v.decode()
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, ctype, b"".join(chunks).decode()


def http_post(base: str, path: str, body) -> tuple[int, str, str]:
    data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers.get("content-type"), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type"), e.read().decode()


# Differences outside this comparison's subject, found by it and left to their own fix
# (see the report of issue 14): vLLM 0.33's ids are 16 hex digits (`random_uuid`),
# `serve`'s 32; vLLM writes a `system_fingerprint` (`vllm-0.33.0-…`), `serve` null or
# nothing; with a reasoning parser vLLM counts `completion_tokens_details.reasoning_tokens`
# (the parsers' `count_reasoning_tokens`), which `serve` does not. They are taken out
# before comparing.
KNOWN_DIFFERENCES = [
    (re.compile(r'(chatcmpl-tool|chatcmpl|cmpl)-[0-9a-f]{16}(?![0-9a-f])'), r"\1-ID"),
    (re.compile(r'"generate-tokens-[0-9a-f]{16}([0-9a-f]{16})?"'), '"generate-tokens-ID"'),
    (re.compile(r',"system_fingerprint":(null|"vllm-[^"]*")'), ""),
    (re.compile(r'"system_fingerprint":(null|"vllm-[^"]*"),'), ""),
    (re.compile(r'"completion_tokens_details":\{"reasoning_tokens":\d+\}'),
     '"completion_tokens_details":null'),
    (re.compile(r',"completion_tokens_details":null\}\}\n'), "}}\n"),
]


# The string fields that chunks deliver piece by piece.
PIECEWISE = {"text", "content", "reasoning", "arguments"}


def fold_calls(calls: list) -> list:
    """Tool-call deltas as one entry per call `index` (name, then the arguments piece
    by piece): how a call's parts split over entries and chunks depends on how many
    tokens each engine output carried (vLLM may put a call's name and its arguments in
    two entries of one chunk)."""
    folded: list = []
    for call in calls:
        same = next((c for c in folded if c.get("index") == call.get("index")), None)
        if same is None:
            folded.append(dict(call))
        else:
            merge(same, call)
    return folded


def merge(into: dict, event: dict) -> None:
    """Folds a later chunk of the same choice into `into`: the piecewise strings and
    lists are appended, objects merged (a chunk's one choice into the other's), other
    values replaced by a later non-null one."""
    for key, value in event.items():
        old = into.get(key)
        if key == "choices" and old and value:
            merge(old[0], value[0])
        elif key == "tool_calls" and isinstance(old, list) and isinstance(value, list):
            into[key] = fold_calls(old + value)
        elif key in PIECEWISE and isinstance(old, str) and isinstance(value, str):
            into[key] = old + value
        elif isinstance(old, list) and isinstance(value, list):
            into[key] = old + value
        elif isinstance(old, dict) and isinstance(value, dict):
            merge(old, value)
        elif value is not None or key not in into:
            into[key] = value


def reorder(value, template):
    """`value` with its keys in `template`'s order (the choice's last chunk: the one
    with every field), then the keys `template` lacks in their own order."""
    if isinstance(value, dict) and isinstance(template, dict):
        if "role" in value or "tool_calls" in value:
            # A merged delta: which chunk brought which part depends on timing.
            return dict(sorted(value.items()))
        ordered = {k: reorder(value[k], template[k]) for k in template if k in value}
        ordered.update((k, v) for k, v in value.items() if k not in ordered)
        return ordered
    if (isinstance(value, list) and isinstance(template, list) and value and template
            and isinstance(value[0], dict) and "index" in value[0]):
        return [reorder(value[0], template[0]), *value[1:]]
    return value


def merge_stream(text: str) -> str:
    """A stream with each choice's chunks folded into one (`merge`). How many chunks
    carry a choice's tokens depends on timing (a consumer that lags gets outputs merged,
    in vLLM and in `serve`), so streams compare by what each choice adds up to, in
    the order of the choices' first chunks, with the fields in the order of the
    choice's last chunk; chunks without a choice (usage, errors) and `[DONE]` compare
    as they are."""
    if not text.startswith("data: "):
        return text
    merged, last, order, rest = {}, {}, [], []
    for event in text.split("\n\n"):
        if not event:
            continue
        try:
            chunk = json.loads(event[len("data: "):])
        except ValueError:
            rest.append(event)
            continue
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if not choices:
            rest.append(event)
            continue
        index = choices[0].get("index")
        last[index] = json.loads(event[len("data: "):])
        delta = choices[0].get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("tool_calls"), list):
            delta["tool_calls"] = fold_calls(delta["tool_calls"])
        if index not in merged:
            merged[index] = chunk
            order.append(index)
        else:
            merge(merged[index], chunk)
    return "".join(
        f"data: {json.dumps(reorder(merged[i], last[i]), separators=(',', ':'), ensure_ascii=False)}\n\n"
        for i in order) + "".join(e + "\n\n" for e in rest)


def answer(status: int, ctype: str, text: str, merge: bool = True) -> str:
    media = (ctype or "").split(";")[0].strip()
    for pattern, repl in KNOWN_DIFFERENCES:
        text = pattern.sub(repl, text)
    text = serve_answers.normalize_answer(text)
    return f"{status} {media}\n{merge_stream(text) if merge else text}\n"


@contextlib.asynccontextmanager
async def vllm_app(model: str, engine_port: int, max_model_len: int, max_num_seqs: int,
                   flags: list):
    """vLLM 0.33.0's API server app (generation routes) for the one remote headless engine
    that dials `engine_port`: AsyncLLM and the OpenAI serving classes, driven through
    ASGI (`asgi_post`)."""
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.entrypoints.launchers.api_server.app_state import init_app_state
    from vllm.entrypoints.launchers.api_server.entry import build_async_engine_client
    from fastapi import FastAPI

    from vllm.entrypoints.generate.api_router import register_generate_api_routers
    from vllm.entrypoints.scale_out.factories import register_scale_out_api_routers
    from vllm.entrypoints.serve.exception_handling.register import init_exception_handler
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    vargs = parser.parse_args([
        "--model", model, "--served-model-name", "qwen3",
        "--max-model-len", str(max_model_len),
        "--data-parallel-size", "1", "--data-parallel-size-local", "0",
        "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(engine_port),
        "--enable-scale-out", "--max-num-seqs", str(max_num_seqs), *flags,
    ])
    async with build_async_engine_client(vargs) as engine_client:
        tasks = await engine_client.get_supported_tasks()
        # `build_app` with the generation routes only (its other routers need packages
        # the reference venv lacks): chat, completions, the tokens-in endpoint, and
        # vLLM's exception handlers (its error bodies).
        app = FastAPI()
        app.state.args = vargs
        # vLLM's engine-error handler asks the (uvicorn) server to exit if the engine
        # died; in process there is no server to stop.
        app.state.server = Inert()
        register_generate_api_routers(app)
        register_scale_out_api_routers(app, tasks)
        init_exception_handler(app)
        await init_app_state(engine_client, app.state, vargs, tasks)
        yield app


def wait_for_health(base: str, timeout: float = 120) -> None:
    """Waits until `base`/health answers."""
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(base + "/health", timeout=5)
            return
        except OSError:
            if time.time() > deadline:
                raise RuntimeError(f"{base} did not start")
            time.sleep(0.5)


async def compare(args, mode: str) -> list[str]:
    """Runs the cases of `mode` against both frontends; returns the failed names."""
    vllm_port, serve_rpc, serve_http = free_port(), free_port(), free_port()
    engines = [mock_engine(args, vllm_port, mode), mock_engine(args, serve_rpc, mode)]
    serve = subprocess.Popen(
        [args.serve, args.model, "--served-model-name", "qwen3", "--port", str(serve_http),
         "--max-model-len", str(args.max_model_len), "--data-parallel-rpc-port", str(serve_rpc),
         *MODES[mode][1]],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    failed = []
    try:
        async with vllm_app(args.model, vllm_port, args.max_model_len, MAX_NUM_SEQS,
                            MODES[mode][1]) as app:
            base = f"http://127.0.0.1:{serve_http}"
            wait_for_health(base)
            if mode in RAW_CHUNKS:
                # vLLM's first request with logprobs stalls its event loop for a moment
                # (lazy imports), and a debug build's first render is slow too: either
                # would merge that request's chunks.
                warm_up = {"model": "qwen3", "messages": serve_answers.MSG, "max_tokens": 2,
                           "stream": True, "logprobs": True, "top_logprobs": 1}
                await asgi_post(app, "/v1/chat/completions", warm_up)
                http_post(base, "/v1/chat/completions", warm_up)
            seen = {vllm_port: 0, serve_rpc: 0}
            for name, path, body, modes in serve_answers.N_CASES:
                if mode not in modes:
                    continue
                merge = mode not in RAW_CHUNKS
                try:
                    theirs = answer(*await asgi_post(app, path, body), merge=merge)
                except Exception as e:  # noqa: BLE001 - vLLM's app failed the request
                    theirs = f"vLLM raised {type(e).__name__}: {e}\n"
                ours = answer(*http_post(base, path, body), merge=merge)
                if mode in KV_LOGS:
                    # The notice follows the answer; give both engines a moment.
                    await asyncio.sleep(0.5)
                    for port, side in [(vllm_port, "theirs"), (serve_rpc, "ours")]:
                        found, seen[port] = freed(port, seen[port])
                        line = "".join(f"engine freed {f}\n" for f in found)
                        if side == "theirs":
                            theirs += line
                        else:
                            ours += line
                label = f"[{mode}] {name}"
                if theirs == ours:
                    print(f"PASS: {label}")
                else:
                    failed.append(label)
                    print(f"FAIL: {label}")
                    sys.stdout.writelines(difflib.unified_diff(
                        theirs.splitlines(True), ours.splitlines(True), "vllm", "serve", n=1))
                    print()
    finally:
        for p in [serve, *engines]:
            p.kill()
            p.wait()
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", required=True, help="the serve example binary")
    parser.add_argument("--mock-engine", required=True, help="the mock-engine example binary")
    parser.add_argument("--model", required=True, help="model directory (qwen3)")
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    stub_missing_modules()
    failed = []
    for mode in args.modes.split(","):
        failed += asyncio.run(compare(args, mode))
    print(f"{len(failed)} failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
