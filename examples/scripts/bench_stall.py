"""Stall test (issue 18): do long prompts slow the other streams down?

200 streamed chats at 50 tokens/s from the mock engine, measured by the `bench`
example (inter-token latency p99 and max), while a second `bench` posts one
~300k-token chat per second (non-streamed, one output token). Three runs in one go:
`serve` without long requests (the baseline), `serve` with them, `vllm-rs serve` with
them. Target: `serve`'s ITL p99 with long requests within 10% of the baseline.

    cargo build --release -p vllm-examples --example serve --example bench --example mock-engine
    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python examples/scripts/bench_stall.py \\
        [--target-dir target] [--duration 20] [--streams 200] [--long-words 230000]

Both frontends get `--max-model-len 1000000` so that long prompts are tokenized and
sent, not refused; each frontend runs unpinned with its own mock engine process.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_serve as bs  # noqa: E402

MAX_LEN = "1000000"


def mock_cmd(exe, rate: float) -> list[str]:
    return [exe("mock-engine"), "--max-num-seqs", "4096",
            "--mock-text", bs.TEXT, "--mock-tokens-per-second", str(rate)]


def start_serve(args, exe, workdir, name):
    port, rpc = bs.free_port(), bs.free_port()
    log = open(os.path.join(workdir, f"{name}.log"), "w")
    server = subprocess.Popen(
        [exe("serve"), args.model, "--port", str(port), "--served-model-name", "qwen3",
         "--data-parallel-rpc-port", str(rpc), "--max-model-len", MAX_LEN],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    bs.wait_listening(rpc)
    engine = subprocess.Popen(
        mock_cmd(exe, args.rate) + [args.model, "--headless", "--data-parallel-rpc-port", str(rpc),
                                    "--max-model-len", MAX_LEN],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    bs.wait_ready(base, server)
    return base, [server, engine]


def start_vllm_rs(args, exe, workdir):
    wrapper = os.path.join(workdir, "python")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n"
                'if [ "$1" = "-m" ]; then shift 2; fi\n'
                'if [ "$1" = "serve" ]; then shift; fi\n'
                f'exec {shlex.join(mock_cmd(exe, args.rate))} "$@"\n')  # vllm-rs passes --max-model-len
    os.chmod(wrapper, 0o755)
    port = bs.free_port()
    log = open(os.path.join(workdir, "vllm-rs.log"), "w")
    server = subprocess.Popen(
        [args.vllm_rs, "serve", args.model, "--python", wrapper, "--port", str(port),
         "--served-model-name", "qwen3", "--max-model-len", MAX_LEN],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"})
    base = f"http://127.0.0.1:{port}"
    bs.wait_ready(base, server)
    return base, [server]


def bench(exe, base, out, extra):
    cmd = [exe("bench"), "--url", base, "--endpoint", "chat", "--quiet", "--output-json", out, *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def warm_up(exe, base, workdir):
    """A few requests first (template, tokenizer caches, connections)."""
    bench(exe, base, os.path.join(workdir, "warm.json"),
          ["--concurrency", "16", "--num-requests", "32", "--output-len", "8"])


def streams(exe, base, out, args):
    """`args.streams` streamed chats for `args.duration` seconds, measured by `bench`."""
    return bench(exe, base, out, [
        "--concurrency", str(args.streams), "--duration", str(args.duration),
        "--input-len", "64", "--output-len", str(args.output_len)])


def run(args, exe, workdir, name, start, long_requests):
    base, procs = start()
    try:
        warm_up(exe, base, workdir)
        streams_out = os.path.join(workdir, f"{name}-streams.json")
        long_out = os.path.join(workdir, f"{name}-long.json")
        long_result = {}
        if long_requests:
            def post_long():
                long_result.update(bench(exe, base, long_out, [
                    "--no-stream", "--concurrency", "4", "--request-rate", "1",
                    "--duration", str(args.duration), "--input-len", str(args.long_words),
                    "--output-len", "1"]))
            thread = threading.Thread(target=post_long)
            thread.start()
        stream_result = streams(exe, base, streams_out, args)
        if long_requests:
            thread.join()
        return {"name": name, "streams": stream_result, "long": long_result}
    finally:
        for p in procs:
            bs.stop(p)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(bs.ROOT, "target")))
    p.add_argument("--vllm-rs", default=os.path.join(bs.REF, "vllm_src/vllm/vllm-rs"))
    p.add_argument("--model", default=os.path.join(bs.REF, "models/qwen3"))
    p.add_argument("--duration", type=float, default=20)
    p.add_argument("--streams", type=int, default=200)
    p.add_argument("--rate", type=float, default=50, help="mock engine tokens per second per request")
    p.add_argument("--output-len", type=int, default=100)
    p.add_argument("--long-words", type=int, default=230000, help="~300k Qwen3 tokens")
    p.add_argument("--output-json")
    args = p.parse_args()

    def exe(name):
        return os.path.join(args.target_dir, "release", "examples", name)

    workdir = tempfile.mkdtemp(prefix="bench-stall-")
    results = [
        run(args, exe, workdir, "serve, no long requests", lambda: start_serve(args, exe, workdir, "base"), False),
        run(args, exe, workdir, "serve + long requests", lambda: start_serve(args, exe, workdir, "long"), True),
        run(args, exe, workdir, "vllm-rs + long requests", lambda: start_vllm_rs(args, exe, workdir), True),
    ]
    print(f"{args.streams} streams at {args.rate:g} tok/s, {args.duration:g} s; long: "
          f"{args.long_words} words (~300k tokens) at 1 req/s (logs in {workdir})")
    print(f"{'run':<26} {'ITL p50':>8} {'ITL p99':>8} {'ITL max':>8} {'TTFT p99':>9} {'long ok':>8} {'long E2E p50':>13}")
    for r in results:
        itl, ttft = r["streams"]["itl"], r["streams"]["ttft"]
        long_ok = r["long"].get("completed", "-")
        long_e2e = r["long"].get("e2e_latency") or {}
        print(f"{r['name']:<26} {itl['p50_ms']:>7.2f}m {itl['p99_ms']:>7.2f}m {itl.get('max_ms', float('nan')):>7.1f}m "
              f"{ttft['p99_ms']:>8.1f}m {long_ok!s:>8} {long_e2e.get('p50_ms', float('nan')):>12.1f}m")
    base_p99 = results[0]["streams"]["itl"]["p99_ms"]
    print(f"serve ITL p99 with long requests / without: x{results[1]['streams']['itl']['p99_ms'] / base_p99:.2f}")
    if args.output_json:
        with open(args.output_json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
