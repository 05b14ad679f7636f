#!/usr/bin/env python3
"""The RL rollout shape: `serve` beside vLLM 0.33.0's Python frontend, same mock engine.

Tokens-in `/inference/v1/generate`, `n` samples per request, top-k logprobs, a fixed
number of output tokens (`ignore_eos`), a closed loop of concurrent clients. Each
frontend dials its own `mock-engine` (random tokens, unpaced), started with the same
flags, so both get the same engine behaviour; the measured figure is the frontend's CPU
time per output token, with requests per second beside it.

vLLM's side is its API server app (AsyncLLM, the input and output processors,
`ParentRequest`, the serving classes; `compare_vllm_frontend.vllm_app`) driven in process
through ASGI, so its figure includes the driver's small share (a `json.dumps` of each
small request) and no HTTP parsing or socket writes. `serve` is a separate process driven
over HTTP by client threads here; its figure is the process's CPU time
(`/proc/PID/stat`, every thread), HTTP included. Responses are checked for status and
one is parsed per frontend (outside the measured window) to verify the sample and token
counts, so no response parsing weighs on vLLM's measured process.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \\
        examples/scripts/bench_rollout.py --serve TARGET/release/examples/serve \\
        --mock-engine TARGET/release/examples/mock-engine --model $REF/models/qwen3
"""

import argparse
import asyncio
import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare_vllm_frontend as cvf  # noqa: E402

PATH = "/inference/v1/generate"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of every thread of process `pid`."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def bodies(args, count: int, seed: int) -> list:
    """`count` rollout requests: random prompts of `--prompt-len` token ids."""
    rng = random.Random(seed)
    return [{
        "token_ids": [rng.randrange(1000, 20000) for _ in range(args.prompt_len)],
        "sampling_params": {"n": args.n, "max_tokens": args.max_tokens,
                            "logprobs": args.logprobs, "ignore_eos": True,
                            "temperature": 1.0, "seed": rng.randrange(1 << 30)},
    } for _ in range(count)]


def check(args, text: str) -> None:
    """One whole answer: `n` choices of `max_tokens` tokens with `logprobs` alternatives."""
    answer = json.loads(text)
    choices = answer["choices"]
    assert len(choices) == args.n, f"{len(choices)} choices"
    for choice in choices:
        assert len(choice["token_ids"]) == args.max_tokens, len(choice["token_ids"])
        top = choice["logprobs"]["content"][0]["top_logprobs"]
        assert len(top) >= args.logprobs, f"{len(top)} alternatives"


def engine(args, port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [args.mock_engine, args.model, "--headless", "--data-parallel-address", "127.0.0.1",
         "--data-parallel-rpc-port", str(port), "--data-parallel-size", "1",
         "--max-model-len", str(args.max_model_len), "--mock-output", "random",
         "--mock-tokens-per-second", "0", "--max-num-seqs", str(args.max_num_seqs)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


async def run_vllm(args) -> dict:
    port = cvf.free_port()
    proc = engine(args, port)
    try:
        async with cvf.vllm_app(args.model, port, args.max_model_len, args.max_num_seqs,
                                []) as app:
            status, _, text = await cvf.asgi_post(app, PATH, bodies(args, 1, 99)[0])
            assert status == 200, text[:500]
            check(args, text)

            async def load(requests: list) -> None:
                queue = list(reversed(requests))

                async def client():
                    while queue:
                        status, _, text = await cvf.asgi_post(app, PATH, queue.pop())
                        assert status == 200, text[:500]

                await asyncio.gather(*(client() for _ in range(args.concurrency)))

            await load(bodies(args, args.warmup, 1))
            requests = bodies(args, args.requests, 2)
            cpu, wall = time.process_time(), time.perf_counter()
            await load(requests)
            return measured(args, time.process_time() - cpu, time.perf_counter() - wall)
    finally:
        proc.kill()
        proc.wait()


def run_serve(args) -> dict:
    rpc, http_port = cvf.free_port(), cvf.free_port()
    proc = engine(args, rpc)
    serve = subprocess.Popen(
        [args.serve, args.model, "--served-model-name", "qwen3", "--port", str(http_port),
         "--max-model-len", str(args.max_model_len), "--data-parallel-rpc-port", str(rpc),
         "--disable-log-stats"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        cvf.wait_for_health(f"http://127.0.0.1:{http_port}")
        status, _, text = cvf.http_post(f"http://127.0.0.1:{http_port}", PATH,
                                        bodies(args, 1, 99)[0])
        assert status == 200, text[:500]
        check(args, text)

        def load(requests: list) -> None:
            lock = threading.Lock()
            queue = [json.dumps(body) for body in reversed(requests)]

            def client():
                conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=600)
                while True:
                    with lock:
                        if not queue:
                            break
                        data = queue.pop()
                    conn.request("POST", PATH, data, {"Content-Type": "application/json"})
                    response = conn.getresponse()
                    text = response.read()
                    assert response.status == 200, text[:500]
                conn.close()

            threads = [threading.Thread(target=client) for _ in range(args.concurrency)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        load(bodies(args, args.warmup, 1))
        requests = bodies(args, args.requests, 2)
        cpu, wall = process_cpu_seconds(serve.pid), time.perf_counter()
        load(requests)
        return measured(args, process_cpu_seconds(serve.pid) - cpu, time.perf_counter() - wall)
    finally:
        for p in (serve, proc):
            p.kill()
            p.wait()


def measured(args, cpu: float, wall: float) -> dict:
    tokens = args.requests * args.n * args.max_tokens
    return {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "req_per_s": round(args.requests / wall, 2),
            "output_tokens": tokens, "cpu_us_per_token": round(cpu / tokens * 1e6, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", required=True, help="the serve example binary")
    parser.add_argument("--mock-engine", required=True, help="the mock-engine example binary")
    parser.add_argument("--model", required=True, help="model directory (qwen3)")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--logprobs", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=16)
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--max-num-seqs", type=int, default=1024)
    parser.add_argument("--skip-vllm", action="store_true", help="measure serve only")
    args = parser.parse_args()
    cvf.stub_missing_modules()
    results = {"serve": run_serve(args)}
    print(f"serve: {json.dumps(results['serve'])}", flush=True)
    if not args.skip_vllm:
        results["vllm"] = asyncio.run(run_vllm(args))
        print(f"vllm:  {json.dumps(results['vllm'])}", flush=True)
        ratio = results["vllm"]["cpu_us_per_token"] / results["serve"]["cpu_us_per_token"]
        print(f"vLLM's frontend CPU per output token / serve's: {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
