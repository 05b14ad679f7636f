"""Our mock engine behind vLLM's Rust frontend: `vllm-rs serve MODEL --python WRAPPER`.

vllm-rs launches its engine as `PY -m vllm.entrypoints.cli.main serve MODEL --headless
--data-parallel-address H --data-parallel-rpc-port P --data-parallel-size N ...`. The
wrapper written here drops `-m vllm.entrypoints.cli.main serve` and execs the
`mock-engine` example with the remaining flags, so the mock stands where
`vllm serve --headless` would. Then OpenAI chat completions go through vllm-rs's HTTP
server (whole and streamed) and must carry the mock's text.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        scripts/interop_vllm_rs.py --mock-engine PATH/TO/mock-engine [--vllm-rs PATH] [--model DIR] \
        [--data-parallel-size N]

Prints PASS/FAIL per check; exits non-zero on any failure.
"""

import argparse
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REF = os.path.expanduser("~/.cache/vllm-reference")
TEXT = "The mock engine says hello, without a GPU."
failures: list[str] = []


def check(name: str, ok: bool, detail: object = "") -> None:
    print(f"{'PASS' if ok else 'FAIL'}: {name}" + ("" if ok else f" -- {detail}"))
    if not ok:
        failures.append(name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_ready(base: str, server: subprocess.Popen, timeout: float = 180) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if server.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{base}/v1/models", timeout=2) as resp:
                if resp.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mock-engine", default=os.environ.get("MOCK_ENGINE"))
    parser.add_argument("--vllm-rs", default=os.path.join(REF, "vllm_src/vllm/vllm-rs"))
    parser.add_argument("--model", default=os.path.join(REF, "models/qwen3"))
    parser.add_argument("--data-parallel-size", type=int, default=1)
    args = parser.parse_args()
    dp = args.data_parallel_size
    if not args.mock_engine:
        parser.error("--mock-engine (or MOCK_ENGINE) is required")

    workdir = tempfile.mkdtemp(prefix="interop-vllm-rs-")
    wrapper = os.path.join(workdir, "python")
    with open(wrapper, "w") as f:
        f.write(
            "#!/bin/sh\n"
            "# Stands in for `python -m vllm.entrypoints.cli.main serve MODEL --headless ...`.\n"
            'if [ "$1" = "-m" ]; then shift 2; fi\n'
            'if [ "$1" = "serve" ]; then shift; fi\n'
            f'exec {shlex.quote(os.path.abspath(args.mock_engine))} "$@" '
            f"--mock-text {shlex.quote(TEXT)}\n"
        )
    os.chmod(wrapper, 0o755)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = os.path.join(workdir, "vllm-rs.log")
    log = open(log_path, "w")
    server = subprocess.Popen(
        [args.vllm_rs, "serve", args.model, "--python", wrapper, "--port", str(port),
         "--data-parallel-size", str(dp)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    try:
        ready = wait_ready(base, server)
        check(f"vllm-rs serve starts with {dp} mock engine(s)", ready, f"see {log_path}")
        if ready:
            model = args.model
            status, body = post(f"{base}/v1/chat/completions", {
                "model": model, "messages": [{"role": "user", "content": "Hi!"}], "max_tokens": 100,
            })
            answer = json.loads(body) if status == 200 else body
            check("chat completion: 200", status == 200, answer)
            if status == 200:
                choice = answer["choices"][0]
                check("chat completion: the mock's text, finish stop",
                      choice["message"]["content"] == TEXT and choice["finish_reason"] == "stop", choice)
                check("chat completion: usage counts the text and EOS",
                      answer["usage"]["completion_tokens"] > 1, answer.get("usage"))

            status, body = post(f"{base}/v1/chat/completions", {
                "model": model, "messages": [{"role": "user", "content": "Hi!"}], "max_tokens": 100,
                "stream": True,
            })
            events = [line[6:] for line in body.decode().splitlines() if line.startswith("data: ")]
            content = "".join(
                (json.loads(e)["choices"] or [{}])[0].get("delta", {}).get("content") or ""
                for e in events if e != "[DONE]"
            )
            check("streamed chat completion: deltas join to the text, then [DONE]",
                  status == 200 and content == TEXT and events[-1:] == ["[DONE]"], (status, content))

            status, body = post(f"{base}/v1/chat/completions", {
                "model": model, "messages": [{"role": "user", "content": "Hi!"}], "max_tokens": 3,
                "logprobs": True, "top_logprobs": 2,
            })
            answer = json.loads(body) if status == 200 else body
            ok = status == 200 and answer["choices"][0]["finish_reason"] == "length"
            lps = answer["choices"][0]["logprobs"]["content"] if ok else []
            check("max_tokens=3 with logprobs: length, 3 tokens with 2 alternatives",
                  ok and len(lps) == 3 and all(len(t["top_logprobs"]) == 2 for t in lps), answer)
    except Exception as e:  # noqa: BLE001 - report and fail
        check("interop run", False, repr(e))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            code = server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            code = "killed"
        check("vllm-rs and the mock engine shut down on SIGTERM", code == 0, f"{code}, see {log_path}")
        log.close()

    print(f"interop_vllm_rs (data parallel size {dp}): {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
