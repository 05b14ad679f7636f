"""The control plane of `serve` side by side with `vllm-rs serve` 0.33.0.

Both servers run in front of their own `mock-engine` (the same flags), with
`VLLM_SERVER_DEV_MODE=1`; the same sequence of HTTP calls (pause / resume with a request
in flight, sleep / wake-up, cache resets, collective_rpc, the weight-transfer sequence,
the weight checker, aborts, world size, version, load, and their error cases) goes to
each, and the answers must be equal: status, content type and body, after masking what
legitimately differs (call ids, our crate version, response ids and timestamps).

    HF_HUB_OFFLINE=1 python3 examples/scripts/control_conformance.py \\
        --serve target/release/examples/serve --mock-engine target/release/examples/mock-engine \\
        [--vllm-rs $REF/vllm_src/vllm/vllm-rs] [--model $REF/models/qwen3]

Prints PASS/FAIL per call (with both answers on a difference); exits non-zero on any.
`--known-differences` lists calls where vllm-rs deviates from vLLM's Python server and
we follow Python; they are reported, not failed.
"""

import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

REF = os.path.expanduser(os.environ.get("REF", "~/.cache/vllm-reference"))
MOCK_FLAGS = ["--mock-tokens-per-second", "50"]
ENGINE_CORE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                  "vllm-client", "scripts", "interop_engine_core.py")

# Calls where vllm-rs 0.33.0 departs from vLLM's Python server and `serve` follows
# Python: `weight_checker` checksum/compare read each engine's result as one map, but
# vLLM's EngineCore.compute_weight_checksums returns a list of maps (one per worker).
KNOWN_DIFFERENCES = {
    "POST /weight_checker checksum": "vllm-rs expects a map per engine; vLLM sends a list per engine",
    "POST /weight_checker compare": "vllm-rs expects a map per engine; vLLM sends a list per engine",
    "GET /ping": "vLLM's Python server answers it (its SageMaker route, = /health); vllm-rs 0.33 has none",
    "POST /ping": "vLLM's Python server answers it (its SageMaker route, = /health); vllm-rs 0.33 has none",
    "GET /server_info": "each server reports its own settings (vllm-rs: its Rust config struct)",
    "GET /server_info?config_format=json": "each server reports its own settings (vllm-rs: its Rust config struct)",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None, content_type="application/json", timeout=60):
    data = None
    headers = {}
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        if content_type:
            headers["content-type"] = content_type
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.headers.get("content-type"), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type"), e.read().decode()


def normalize(text: str) -> str:
    text = re.sub(r"call_id=\d+", "call_id=N", text)
    text = re.sub(r',"rust_frontend_version":"[^"]*"', "", text)
    text = re.sub(r'"(id|request_id)":"[^"]*"', r'"\1":"ID"', text)
    text = re.sub(r'"created":\d+', '"created":0', text)
    return text


def stream_finish_reason(base: str, model: str, results: dict, key: str) -> None:
    """A streamed completion; stores the last finish_reason it reports."""
    body = {"model": model, "prompt": "Hello", "max_tokens": 400, "stream": True,
            "ignore_eos": True}
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    finish = None
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            for line in resp:
                line = line.decode().strip()
                if line.startswith("data: {"):
                    for choice in json.loads(line[6:]).get("choices", []):
                        finish = choice.get("finish_reason") or finish
    except Exception as e:  # noqa: BLE001 - recorded as the result
        finish = f"error: {e!r}"
    results[key] = finish


def battery(base: str, model: str):
    """The calls, in order; yields (name, answer)."""
    def c(name, method, path, body=None, content_type="application/json"):
        status, ctype, text = call(base, method, path, body, content_type)
        return name, {"status": status, "content_type": ctype, "body": normalize(text)}

    yield c("GET /version", "GET", "/version")
    yield c("GET /load", "GET", "/load")
    yield c("GET /kv_event_sources", "GET", "/kv_event_sources")
    yield c("GET /is_paused", "GET", "/is_paused")
    yield c("GET /is_sleeping", "GET", "/is_sleeping")
    yield c("GET /weight_info", "GET", "/weight_info")
    yield c("GET /get_world_size", "GET", "/get_world_size")
    yield c("GET /get_world_size include_dp=false", "GET", "/get_world_size?include_dp=false")

    # pause modes, and their query errors
    for query in ["", "?mode=keep", "?mode=wait&clear_cache=false", "?mode=bogus",
                  "?clear_cache=maybe", "?foo=1"]:
        yield c(f"POST /pause{query}", "POST", f"/pause{query}")
        yield c(f"GET /is_paused after /pause{query}", "GET", "/is_paused")
        yield c(f"POST /resume after /pause{query}", "POST", "/resume")

    # a request in flight, then pause?mode=abort: the stream ends
    results = {}
    t = threading.Thread(target=stream_finish_reason, args=(base, model, results, "abort"))
    t.start()
    time.sleep(1.0)
    yield c("POST /pause (request in flight)", "POST", "/pause")
    t.join(60)
    yield "stream finish_reason after /pause?mode=abort", {"finish_reason": results.get("abort")}
    yield c("POST /resume (after abort)", "POST", "/resume")

    # new requests while paused: refused with abort / wait, queued with keep
    completion = {"model": model, "prompt": "Hello", "max_tokens": 3}
    for mode in ["abort", "wait"]:
        yield c(f"POST /pause?mode={mode} (then a request)", "POST", f"/pause?mode={mode}")
        yield c(f"POST /v1/completions while paused ({mode})", "POST", "/v1/completions", completion)
        yield c(f"POST /resume (after the {mode} request)", "POST", "/resume")

    # a request in flight, then /abort_requests with no ids: aborts everything
    results = {}
    t = threading.Thread(target=stream_finish_reason, args=(base, model, results, "aborted"))
    t.start()
    time.sleep(1.0)
    yield c("POST /abort_requests {}", "POST", "/abort_requests", {})
    t.join(60)
    yield "stream finish_reason after /abort_requests", {"finish_reason": results.get("aborted")}
    yield c("POST /abort_requests ids", "POST", "/abort_requests", {"request_ids": ["x"]})
    yield c("POST /abort_requests no body", "POST", "/abort_requests", None)
    yield c("POST /abort_requests bad json", "POST", "/abort_requests", "x")
    yield c("POST /abort_requests ids not a list", "POST", "/abort_requests", {"request_ids": "x"})

    # sleep and wake-up
    for query in ["", "?level=0", "?level=2&mode=keep", "?level=7", "?level=abc", "?level=-1",
                  "?mode=x"]:
        yield c(f"POST /sleep{query}", "POST", f"/sleep{query}")
        yield c(f"GET /is_sleeping after /sleep{query}", "GET", "/is_sleeping")
        yield c(f"POST /wake_up?tags=weights after /sleep{query}", "POST", "/wake_up?tags=weights")
        yield c(f"POST /wake_up?tags=kv_cache after /sleep{query}", "POST", "/wake_up?tags=kv_cache")
        yield c(f"POST /wake_up after /sleep{query}", "POST", "/wake_up")
        yield c(f"GET /is_sleeping after waking from /sleep{query}", "GET", "/is_sleeping")
    yield c("POST /wake_up?tags=weights&tags=kv_cache", "POST", "/wake_up?tags=weights&tags=kv_cache")
    yield c("POST /wake_up?tags=", "POST", "/wake_up?tags=")
    yield c("POST /release_kv_cache_memory (not paused)", "POST", "/release_kv_cache_memory")
    yield c("POST /pause (before release)", "POST", "/pause")
    yield c("POST /release_kv_cache_memory (paused)", "POST", "/release_kv_cache_memory")
    yield c("GET /is_sleeping (released)", "GET", "/is_sleeping")
    yield c("POST /wake_up (after release)", "POST", "/wake_up")
    yield c("POST /resume (after release)", "POST", "/resume")

    # caches
    for query in ["", "?reset_running_requests=true", "?reset_external=true",
                  "?reset_running_requests=x"]:
        yield c(f"POST /reset_prefix_cache{query}", "POST", f"/reset_prefix_cache{query}")
    yield c("POST /reset_mm_cache", "POST", "/reset_mm_cache")
    yield c("POST /reset_encoder_cache", "POST", "/reset_encoder_cache")

    # collective_rpc
    yield c("POST /collective_rpc", "POST", "/collective_rpc", {"method": "echo", "args": [1, 2]})
    yield c("POST /collective_rpc kwargs timeout", "POST", "/collective_rpc",
            {"method": "echo", "args": ["a"], "kwargs": {"x": 2}, "timeout": 3.5})
    yield c("POST /collective_rpc no method", "POST", "/collective_rpc", {"args": [1]})
    yield c("POST /collective_rpc method not a string", "POST", "/collective_rpc", {"method": 5})
    yield c("POST /collective_rpc args not a list", "POST", "/collective_rpc",
            {"method": "m", "args": "x"})
    yield c("POST /collective_rpc a list", "POST", "/collective_rpc", [1])
    yield c("POST /collective_rpc bad json", "POST", "/collective_rpc", "nope")
    yield c("POST /collective_rpc no content type", "POST", "/collective_rpc",
            {"method": "echo"}, content_type=None)

    # the weight-transfer sequence and the version
    yield c("POST /start_weight_update (not initialized)", "POST", "/start_weight_update")
    yield c("POST /start_draft_weight_update (not initialized)", "POST", "/start_draft_weight_update")
    yield c("POST /init_weight_transfer_engine no body", "POST", "/init_weight_transfer_engine", None)
    yield c("POST /init_weight_transfer_engine {}", "POST", "/init_weight_transfer_engine", {})
    yield c("POST /init_weight_transfer_engine not an object", "POST",
            "/init_weight_transfer_engine", {"init_info": 5})
    yield c("POST /init_weight_transfer_engine", "POST", "/init_weight_transfer_engine",
            {"init_info": {"master_address": "127.0.0.1", "world_size": 2}})
    yield c("POST /update_weights (not started)", "POST", "/update_weights",
            {"update_info": {"names": ["w"]}})
    yield c("POST /start_weight_update", "POST", "/start_weight_update")
    yield c("POST /start_weight_update (again)", "POST", "/start_weight_update")
    yield c("POST /update_weights", "POST", "/update_weights", {"update_info": {"names": ["w"]}})
    yield c("POST /update_weights list", "POST", "/update_weights", {"update_info": [{"names": ["w"]}]})
    yield c("POST /finish_weight_update", "POST", "/finish_weight_update",
            {"weight_version": "step-1"})
    yield c("GET /weight_info (step-1)", "GET", "/weight_info")
    yield c("POST /finish_weight_update (not started)", "POST", "/finish_weight_update")
    yield c("POST /update_weight_version", "POST", "/update_weight_version", {"new_version": "v9"})
    yield c("POST /update_weight_version wrong field", "POST", "/update_weight_version",
            {"weight_version": "v7"})
    yield c("GET /weight_info (v9)", "GET", "/weight_info")
    yield c("POST /shutdown_weight_transfer_engine", "POST", "/shutdown_weight_transfer_engine")
    yield c("POST /weight_checker checksum", "POST", "/weight_checker", {"action": "checksum"})
    yield c("POST /weight_checker compare", "POST", "/weight_checker",
            {"action": "compare", "baseline": {"mock.weight": "0000000000000002"}})
    yield c("POST /weight_checker compare without baseline", "POST", "/weight_checker",
            {"action": "compare"})
    yield c("POST /weight_checker unknown action", "POST", "/weight_checker", {"action": "compute"})
    yield c("POST /weight_checker reset", "POST", "/weight_checker", {"action": "reset"})
    yield c("GET /health", "GET", "/health")
    yield c("GET /ping", "GET", "/ping")
    yield c("POST /ping", "POST", "/ping")
    yield c("GET /server_info", "GET", "/server_info")
    yield c("GET /server_info?config_format=json", "GET", "/server_info?config_format=json")
    yield c("GET /server_info?config_format=bogus", "GET", "/server_info?config_format=bogus")
    yield c("POST /server_info", "POST", "/server_info")


OPS_FLAGS = ["--api-key", "sekret", "--enable-request-id-headers",
             "--allowed-origins", '["http://a.example"]']


def raw(base, method, path, headers):
    """Status, selected response headers and body of a request with `headers`."""
    req = urllib.request.Request(base + path, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, hdrs, body = resp.status, resp.headers, resp.read().decode()
    except urllib.error.HTTPError as e:
        status, hdrs, body = e.code, e.headers, e.read().decode()
    kept = {k.lower(): v for k, v in hdrs.items()
            if k.lower().startswith("access-control-") or k.lower() in ("vary", "content-type")}
    rid = hdrs.get("x-request-id")
    kept["x-request-id"] = rid if rid in (None, "abc") else "GENERATED" if re.fullmatch(r"[0-9a-f]{32}", rid) else rid
    return {"status": status, "headers": dict(sorted(kept.items())), "body": normalize(body)}


def ops_battery(base: str, model: str):
    """--api-key, --enable-request-id-headers, CORS."""
    key = {"Authorization": "Bearer sekret"}
    yield "GET /v1/models without a key", raw(base, "GET", "/v1/models", {})
    yield "GET /v1/models wrong key", raw(base, "GET", "/v1/models", {"Authorization": "Bearer nope"})
    # (the model list itself is vLLM's Python server's, compared elsewhere: status only)
    accepted = raw(base, "GET", "/v1/models", {"Authorization": "bearer sekret"})
    accepted["body"] = "(not compared)"
    yield "GET /v1/models lowercase scheme", accepted
    yield "GET /v1/models no scheme", raw(base, "GET", "/v1/models", {"Authorization": "sekret"})
    yield "GET /version (open)", raw(base, "GET", "/version", {})
    yield "GET /health (open)", raw(base, "GET", "/health", {})
    yield "GET /load with X-Request-Id", raw(base, "GET", "/load", {"X-Request-Id": "abc"})
    yield "POST /inference/v1/generate without a key", raw(base, "POST", "/inference/v1/generate", {})
    yield "OPTIONS preflight, allowed origin", raw(base, "OPTIONS", "/v1/models", {
        "Origin": "http://a.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    yield "OPTIONS preflight, other origin", raw(base, "OPTIONS", "/v1/models", {
        "Origin": "http://b.example", "Access-Control-Request-Method": "POST"})
    yield "GET /version with Origin", raw(base, "GET", "/version", {"Origin": "http://a.example"})
    yield "GET /version with another Origin", raw(base, "GET", "/version", {"Origin": "http://b.example"})
    del key


LORA_DIR = tempfile.mkdtemp(prefix="conformance-loras-")
for _name in ("pre", "js", "a", "b"):
    os.makedirs(os.path.join(LORA_DIR, _name), exist_ok=True)
    with open(os.path.join(LORA_DIR, _name, "adapter_config.json"), "w") as _f:
        _f.write('{"r": 8, "lora_alpha": 16, "target_modules": ["q_proj"], "peft_type": "LORA"}')
LORA_FLAGS = ["--lora-modules", f"pre={LORA_DIR}/pre",
              json.dumps({"name": "js", "path": f"{LORA_DIR}/js", "base_model_name": "basey"})]
LORA_MOCK_FLAGS = ["--enable-lora", "--max-loras", "4"]
LORA_ENV = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1", "VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES": LORA_DIR}


def lora_battery(base: str, model: str):
    """--lora-modules, /v1/load_lora_adapter, /v1/unload_lora_adapter, adapter requests."""
    def c(name, method, path, body=None, content_type="application/json"):
        status, ctype, text = call(base, method, path, body, content_type)
        return name, {"status": status, "content_type": ctype, "body": normalize(text)}

    def models(name):
        status, _, text = call(base, "GET", "/v1/models")
        cards = [(m["id"], m["root"], m["parent"]) for m in json.loads(text)["data"]]
        return name, {"status": status, "cards": cards}

    yield models("GET /v1/models with --lora-modules")
    load = "/v1/load_lora_adapter"
    yield c("load a", "POST", load, {"lora_name": "a", "lora_path": f"{LORA_DIR}/a"})
    yield c("load a again", "POST", load, {"lora_name": "a", "lora_path": f"{LORA_DIR}/a"})
    yield c("load a static name", "POST", load, {"lora_name": "pre", "lora_path": f"{LORA_DIR}/b"})
    yield c("load the base model's name", "POST", load, {"lora_name": model, "lora_path": f"{LORA_DIR}/b"})
    yield c("load an empty name", "POST", load, {"lora_name": "", "lora_path": f"{LORA_DIR}/b"})
    yield c("load a missing local path", "POST", load, {"lora_name": "b", "lora_path": f"{LORA_DIR}/nope"})
    yield c("load outside the prefixes", "POST", load, {"lora_name": "b", "lora_path": "/etc"})
    yield c("load escaping the prefixes", "POST", load, {"lora_name": "b", "lora_path": f"{LORA_DIR}/b/../.."})
    yield c("load a relative path", "POST", load, {"lora_name": "b", "lora_path": "./rel"})
    yield c("load a hub id", "POST", load, {"lora_name": "hub", "lora_path": "org/hub-adapter"})
    yield c("load a in place", "POST", load, {"lora_name": "a", "lora_path": f"{LORA_DIR}/b", "load_inplace": True})
    yield c("load without lora_path", "POST", load, {"lora_name": "b"})
    yield models("GET /v1/models after loading")
    # (the completion's own format is compared by the serve batteries: the model it
    # names, the text and the finish reason here)
    status, _, text = call(base, "POST", "/v1/completions",
                           {"model": "a", "prompt": "Hello", "max_tokens": 2})
    answer = json.loads(text) if status == 200 else text
    yield "completion on adapter a", {
        "status": status,
        "answer": (answer["model"], answer["choices"][0]["text"], answer["choices"][0]["finish_reason"])
        if status == 200 else answer}
    yield c("completion on an unknown model", "POST", "/v1/completions",
            {"model": "nope", "prompt": "Hello", "max_tokens": 2})
    unload = "/v1/unload_lora_adapter"
    yield c("unload a", "POST", unload, {"lora_name": "a"})
    yield c("unload a again", "POST", unload, {"lora_name": "a"})
    yield c("unload an empty name", "POST", unload, {"lora_name": ""})
    yield c("unload without content type", "POST", unload, {"lora_name": "hub"}, content_type=None)
    yield models("GET /v1/models after unloading")


def metric_lines(text: str) -> list[str]:
    """An exposition, comparable across servers: HELP/TYPE lines in order, then the
    sample lines sorted, without the values of timing histograms (HTTP ones included) and
    the count of readiness polls."""
    head, samples = [], []
    for line in text.splitlines():
        if line.startswith("#"):
            head.append(line)
        elif line.startswith("http_") and not line.startswith("http_requests_total"):
            continue  # HTTP timings
        elif 'handler="/v1/models"' in line:
            continue  # the readiness polls, as many as a start-up takes
        elif line:
            name = line.split("{", 1)[0].split(" ", 1)[0]
            if name.endswith(("_seconds_bucket", "_seconds_sum")):
                continue  # timings differ between any two runs
            samples.append(line)
    return head + sorted(samples)


def metrics_battery(base: str, model: str):
    """/metrics of a fresh server after two completions (5 tokens each) and one chat."""
    for i in range(2):
        call(base, "POST", "/v1/completions", {"model": model, "prompt": f"Hello {i}",
                                               "max_tokens": 5, "ignore_eos": True})
    call(base, "POST", "/v1/chat/completions", {"model": model, "max_tokens": 3,
                                                "messages": [{"role": "user", "content": "Hi"}]})
    time.sleep(0.5)  # the scheduler statistics of the last step
    status, ctype, text = call(base, "GET", "/metrics")
    lines = metric_lines(normalize(text))
    yield "GET /metrics content type", {"status": status, "content_type": ctype}
    yield "GET /metrics families (HELP/TYPE)", {"lines": [l for l in lines if l.startswith("#")]}
    for line in (l for l in lines if not l.startswith("#")):
        yield f"metric {line.rsplit(' ', 1)[0]}", {"sample": line}


def wait_ready(base, proc, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        try:
            req = urllib.request.Request(base + "/v1/models",
                                         headers={"Authorization": "Bearer sekret"})
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return json.loads(resp.read())["data"][0]["id"]
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.5)
    return None


def real_engine_command(args, address: str, rpc_port, dp_size="1") -> list:
    """vLLM 0.33.0's own EngineCoreProc (scripted executor, no weights) dialing the
    frontend's handshake socket, as `vllm serve --headless` would."""
    return [os.path.join(REF, "venv/bin/python"), ENGINE_CORE_SCRIPT,
            "--handshake-address", f"tcp://{address}:{rpc_port}", "--dp-size", str(dp_size),
            "--model", args.model, "--step-delay-ms", "20",
            "--max-model-len", str(args.engine_max_model_len)]


def start_vllm_rs(args, workdir, env, flags, mock_extra=()):
    wrapper = os.path.join(workdir, "python")
    with open(wrapper, "w") as f:
        if args.real_engine:
            # vllm-rs starts `python -m vllm.entrypoints.cli.main serve MODEL --headless
            # --data-parallel-address H --data-parallel-rpc-port P --data-parallel-size N …`.
            f.write(
                f"#!{os.path.join(REF, 'venv/bin/python')}\n"
                "import argparse, os, sys\n"
                "p = argparse.ArgumentParser()\n"
                "p.add_argument('--data-parallel-address')\n"
                "p.add_argument('--data-parallel-rpc-port')\n"
                "p.add_argument('--data-parallel-size', default='1')\n"
                "a, _ = p.parse_known_args()\n"
                f"command = {real_engine_command(args, '{A}', '{P}', '{N}')!r}\n"
                "command = [c.replace('{A}', a.data_parallel_address).replace('{P}', a.data_parallel_rpc_port)"
                ".replace('{N}', a.data_parallel_size) for c in command]\n"
                "os.execv(command[0], command)\n"
            )
        else:
            f.write(
                "#!/bin/sh\n"
                'if [ "$1" = "-m" ]; then shift 2; fi\n'
                'if [ "$1" = "serve" ]; then shift; fi\n'
                f'exec {shlex.quote(os.path.abspath(args.mock_engine))} "$@" '
                + " ".join(shlex.quote(f) for f in MOCK_FLAGS) + "\n"
            )
    os.chmod(wrapper, 0o755)
    port = free_port()
    log = open(os.path.join(workdir, "vllm-rs.log"), "w")
    proc = subprocess.Popen(
        [args.vllm_rs, "serve", args.model, "--python", wrapper, "--port", str(port)]
        + flags + list(mock_extra),
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    return f"http://127.0.0.1:{port}", [proc]


def start_serve(args, workdir, env, flags, mock_extra=()):
    port, rpc = free_port(), free_port()
    log = open(os.path.join(workdir, "serve.log"), "w")
    server = subprocess.Popen(
        [args.serve, args.model, "--port", str(port), "--data-parallel-rpc-port", str(rpc)] + flags,
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    if args.real_engine:
        command = real_engine_command(args, "127.0.0.1", rpc)
    else:
        command = ([args.mock_engine, args.model, "--headless", "--data-parallel-rpc-port", str(rpc)]
                   + MOCK_FLAGS + list(mock_extra))
    engine = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True, env=env)
    return f"http://127.0.0.1:{port}", [server, engine]


def stop(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def run(name, starter, args, workdir, env, flags, calls, mock_extra=()):
    base, procs = starter(args, workdir, env, flags, mock_extra)
    try:
        model = wait_ready(base, procs[0])
        if not model:
            print(f"FAIL: {name} did not start (logs in {workdir})")
            return None
        return list(calls(base, model))
    finally:
        stop(procs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--serve", required=True)
    p.add_argument("--mock-engine", required=True)
    p.add_argument("--vllm-rs", default=os.path.join(REF, "vllm_src/vllm/vllm-rs"))
    p.add_argument("--model", default=os.path.join(REF, "models/qwen3"))
    p.add_argument("--write-metric-families", metavar="PATH",
                   help="write vllm-rs's /metrics of an idle server to PATH (the metric "
                        "families serve declares) and exit")
    p.add_argument("--real-engine", action="store_true",
                   help="in front of vLLM's own EngineCoreProc (scripted executor, "
                        "vllm-client/scripts/interop_engine_core.py) instead of the mock: the "
                        "base battery only (no LoRA, metrics or operations phases)")
    p.add_argument("--engine-max-model-len", type=int, default=4096,
                   help="--max-model-len of the real engine")
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="control-conformance-")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_SERVER_DEV_MODE": "1"}
    if args.write_metric_families:
        # Idle, then after one completion: the idle exposition says which series exist
        # from the start, the second the buckets of the per-request histograms.
        def expositions(base, model):
            yield "idle", call(base, "GET", "/metrics")[2]
            call(base, "POST", "/v1/completions", {"model": model, "prompt": "Hello", "max_tokens": 2})
            time.sleep(0.5)
            yield "after a request", call(base, "GET", "/metrics")[2]
        captured = run("vllm-rs", start_vllm_rs, args, workdir, env, [], expositions)
        if captured is None:
            return 1
        with open(args.write_metric_families, "w") as f:
            f.write("# vllm-rs 0.33.0 /metrics in front of one mock engine, idle and then after one\n"
                    "# request; written by examples/scripts/control_conformance.py "
                    "--write-metric-families\n")
            for name, text in captured:
                # The HTTP instrumentation's samples come from this script's own calls.
                kept = [line for line in text.replace(args.model, "MODEL").split("\n")
                        if not line.startswith("http_")]
                f.write(f"# ==== {name}\n" + "\n".join(kept).rstrip("\n") + "\n")
        print(f"wrote {args.write_metric_families}")
        return 0
    theirs, ours = [], []
    phases = [([], battery, (), {}), (OPS_FLAGS, ops_battery, (), {}),
              ([], metrics_battery, (), {}), (LORA_FLAGS, lora_battery, LORA_MOCK_FLAGS, LORA_ENV)]
    if args.real_engine:
        phases = phases[:1]
    for flags, calls, mock_extra, extra_env in phases:
        phase_env = {**env, **extra_env}
        a = run("vllm-rs", start_vllm_rs, args, workdir, phase_env, flags, calls, mock_extra)
        b = run("serve", start_serve, args, workdir, phase_env, flags, calls, mock_extra)
        if a is None or b is None:
            return 1
        theirs += a
        ours += b
    return report("control conformance", theirs, ours, KNOWN_DIFFERENCES, workdir,
                  lambda a: f" ({a})" if "body" not in a else "")


def report(title: str, theirs: list, ours: list, known_differences: dict, workdir: str,
           shown=lambda answer: "") -> int:
    """Prints each call's verdict (`shown` adds a passing answer's summary) and the
    tally; the exit status: 1 when an answer differs outside `known_differences`."""
    failures = known = 0
    theirs_by_name, ours_by_name = dict(theirs), dict(ours)
    names = list(dict.fromkeys([n for n, _ in theirs] + [n for n, _ in ours]))
    for name in names:
        a, b = theirs_by_name.get(name), ours_by_name.get(name)
        if a == b:
            print(f"PASS: {name}{shown(a)}")
        elif name in known_differences:
            known += 1
            print(f"KNOWN: {name} ({known_differences[name]})\n    vllm-rs: {a}\n    serve:   {b}")
        else:
            failures += 1
            print(f"FAIL: {name}\n    vllm-rs: {a}\n    serve:   {b}")
    print(f"{title}: {len(names) - failures - known}/{len(names)} equal, "
          f"{known} known differences ({'FAIL' if failures else 'PASS'}; logs in {workdir})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
