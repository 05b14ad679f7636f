"""`serve` beside vLLM's Rust frontend (`vllm-rs serve`), both in front of the same mock
engine, under the same load from the `bench` example: throughput, latency, and the
frontend process's CPU time per output token.

Each frontend gets its own mock engine process (the `mock-engine` example, unlimited
token rate), so the CPU measured is the frontend's alone: `serve` dials nothing, the mock
dials its handshake port (`--data-parallel-rpc-port`); `vllm-rs serve MODEL --python
WRAPPER` launches the mock as its "Python headless engine" through a wrapper script.

    cargo build --release -p vllm-examples --example serve --example bench --example mock-engine
    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python examples/scripts/bench_serve.py \
        [--target-dir target] [--requests 2000] [--concurrency 64] [--output-len 128]

Prints a table and writes it as JSON with `--output-json`.

With `--pin`, each frontend runs alone on CPU 0 while the mock engine and the load
generator share the other CPUs (`taskset`): every frontend gets the same one core, so
throughput measures what a frontend serves per core instead of how the scheduler split a
busy machine between five processes.
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
import urllib.request

REF = os.path.expanduser(os.environ.get("VLLM_REFERENCE", "~/.cache/vllm-reference"))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = "The mock engine says hello, without a GPU, again and again."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (not its children), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(base: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"frontend exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/v1/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("frontend not ready")


def wait_listening(port: int, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port}")


FRONTEND_CPUS = "0"


def load_cpus() -> str:
    """The CPUs left to the engine and the load generator when pinning (all but CPU 0)."""
    others = sorted(os.sched_getaffinity(0) - {0})
    if not others:
        raise SystemExit("--pin needs at least two CPUs")
    return ",".join(map(str, others))


def pinned(args, cpus: str, cmd: list[str]) -> list[str]:
    return ["taskset", "-c", cpus, *cmd] if args.pin else cmd


def run_bench(args, bench: str, base: str, extra: list[str], out: str) -> dict:
    cmd = [*pinned(args, args.load_cpus, [bench]), "--url", base, "--endpoint", "chat", "--quiet", "--concurrency", str(args.concurrency),
           "--input-len", str(args.input_len), "--output-len", str(args.output_len), "--output-json", out, *extra]
    if args.request_rate:
        cmd += ["--request-rate", str(args.request_rate)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def measure(name: str, args, bench: str, base: str, frontend_pid: int, workdir: str) -> dict:
    run_bench(args, bench, base, ["--num-requests", str(args.warmup)], os.path.join(workdir, "warmup.json"))
    before = cpu_seconds(frontend_pid)
    result = run_bench(args, bench, base, ["--num-requests", str(args.requests)], os.path.join(workdir, f"{name}.json"))
    cpu = cpu_seconds(frontend_pid) - before
    tokens = max(result["total_output_tokens"], 1)
    result["frontend"] = name
    result["frontend_cpu_s"] = cpu
    result["frontend_cpu_us_per_token"] = cpu / tokens * 1e6
    return result


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def bench_serve(args, exe, workdir, binary=None, label="serve") -> dict:
    port, rpc = free_port(), free_port()
    log = open(os.path.join(workdir, f"{label}.log"), "w")
    serve = subprocess.Popen(
        pinned(args, FRONTEND_CPUS, [binary or exe("serve")]) + [args.model, "--port", str(port), "--served-model-name", "qwen3",
         "--data-parallel-rpc-port", str(rpc), "--max-logprobs", "20"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    engine = None
    try:
        wait_listening(rpc)
        engine = subprocess.Popen(
            pinned(args, args.load_cpus, [exe("mock-engine")]) + [args.model, "--headless", "--data-parallel-rpc-port", str(rpc),
             "--max-num-seqs", "4096", "--mock-text", TEXT],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, serve)
        return measure(label, args, exe("bench"), base, serve.pid, workdir)
    finally:
        stop(serve)
        if engine is not None:
            stop(engine)


def bench_vllm_rs(args, exe, workdir) -> dict:
    wrapper = os.path.join(workdir, "python")
    with open(wrapper, "w") as f:
        f.write(
            "#!/bin/sh\n"
            'if [ "$1" = "-m" ]; then shift 2; fi\n'
            'if [ "$1" = "serve" ]; then shift; fi\n'
            f'exec {shlex.join(pinned(args, args.load_cpus, [exe("mock-engine")]))} "$@" '
            f'--max-num-seqs 4096 --mock-text {shlex.quote(TEXT)}\n')
    os.chmod(wrapper, 0o755)
    port = free_port()
    log = open(os.path.join(workdir, "vllm-rs.log"), "w")
    server = subprocess.Popen(
        pinned(args, FRONTEND_CPUS, [args.vllm_rs]) + ["serve", args.model, "--python", wrapper, "--port", str(port),
         "--served-model-name", "qwen3"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, server)
        return measure("vllm-rs", args, exe("bench"), base, server.pid, workdir)
    finally:
        stop(server)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")))
    p.add_argument("--vllm-rs", default=os.path.join(REF, "vllm_src/vllm/vllm-rs"))
    p.add_argument("--model", default=os.path.join(REF, "models/qwen3"))
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--input-len", type=int, default=128)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--output-json")
    p.add_argument("--request-rate", type=float,
                   help="open loop: Poisson arrivals at this rate (concurrency becomes the cap)")
    p.add_argument("--baseline-serve",
                   help="another build's serve binary, measured in the same run (before/after)")
    p.add_argument("--pin", action="store_true",
                   help="frontend alone on CPU 0; mock engine and load generator on the others")
    args = p.parse_args()
    args.load_cpus = load_cpus() if args.pin else ""

    def exe(name: str) -> str:
        return os.path.join(args.target_dir, "release", "examples", name)

    workdir = tempfile.mkdtemp(prefix="bench-serve-")
    results = [bench_serve(args, exe, workdir)]
    if args.baseline_serve:
        results.append(bench_serve(args, exe, workdir, args.baseline_serve, "baseline"))
    results.append(bench_vllm_rs(args, exe, workdir))
    pin = f", frontend pinned to CPU {FRONTEND_CPUS}, engine + load on {args.load_cpus}" if args.pin else ""
    rate = f", {args.request_rate:g} req/s offered" if args.request_rate else ""
    print(f"chat, streamed, {args.requests} requests{rate}, concurrency {args.concurrency}, "
          f"{args.input_len} words in, {args.output_len} tokens out (mock engine{pin}, logs in {workdir})")
    header = f"{'frontend':<10} {'req/s':>8} {'out tok/s':>10} {'TTFT p50':>9} {'TTFT p99':>9} " \
             f"{'ITL p50':>8} {'ITL p99':>8} {'E2E p50':>8} {'E2E p99':>8} {'CPU µs/tok':>11}"
    print(header)
    for r in results:
        print(f"{r['frontend']:<10} {r['request_throughput']:>8.1f} {r['output_throughput']:>10.0f} "
              f"{r['ttft']['p50_ms']:>8.1f}m {r['ttft']['p99_ms']:>8.1f}m {r['itl']['p50_ms']:>7.2f}m "
              f"{r['itl']['p99_ms']:>7.2f}m {r['e2e_latency']['p50_ms']:>7.1f}m "
              f"{r['e2e_latency']['p99_ms']:>7.1f}m {r['frontend_cpu_us_per_token']:>11.2f}")
    ours, theirs = results[0], results[-1]
    if args.baseline_serve:
        base = results[1]
        print(f"serve / baseline: throughput x{ours['output_throughput'] / base['output_throughput']:.2f}, "
              f"CPU per token x{ours['frontend_cpu_us_per_token'] / base['frontend_cpu_us_per_token']:.2f}")
    print(f"serve / vllm-rs: throughput x{ours['output_throughput'] / theirs['output_throughput']:.2f}, "
          f"CPU per token x{ours['frontend_cpu_us_per_token'] / theirs['frontend_cpu_us_per_token']:.2f}")
    if args.output_json:
        with open(args.output_json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
