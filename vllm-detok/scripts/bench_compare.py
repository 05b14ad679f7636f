"""Run the Rust benchmark and vLLM's Python detokenizer on the same streams; print ratios.

    CARGO_TARGET_DIR=/work/targets/detok HF_HUB_OFFLINE=1 \
        $HOME/.cache/vllm-reference/venv/bin/python vllm-detok/scripts/bench_compare.py

Runs `cargo bench -p vllm-detok --bench decode` (criterion; results under
`$CARGO_TARGET_DIR/criterion`), then `bench_python.py`'s measurements in this process, and
prints µs per token for ours, `tokenizers::DecodeStream` and vLLM, with the ratios. Both
sides report their best: criterion's fastest sample, vLLM's best of 5 runs.
Pass `--no-cargo` to reuse the last criterion results, and `--cpu-time` to time both sides
with the thread's CPU time (`DETOK_BENCH_CPU_TIME` for the bench, `time.thread_time()` for
Python) instead of wall time, which on a loaded machine leaves out the waits for a core.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the crate
sys.path.insert(0, HERE)


def criterion_us(target, name, function):
    """µs per token of the fastest criterion sample: on a loaded machine the best sample is
    the most stable figure, and it matches the Python side's best of 5 runs."""
    path = os.path.join(target, "criterion", f"detok_{name}", function, "new", "sample.json")
    with open(path) as f:
        sample = json.load(f)
    ns_per_iter = min(t / n for t, n in zip(sample["times"], sample["iters"]))
    return ns_per_iter / 1000.0 / 4000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-cargo", action="store_true")
    ap.add_argument("--cpu-time", action="store_true")
    args = ap.parse_args()
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "..", "..", "target"))
    if not args.no_cargo:
        env = dict(os.environ)
        if args.cpu_time:
            env["DETOK_BENCH_CPU_TIME"] = "1"
        else:
            env.pop("DETOK_BENCH_CPU_TIME", None)
        subprocess.run(["cargo", "bench", "-p", "vllm-detok", "--bench", "decode"], check=True, env=env)

    import bench_python
    from vllm.tokenizers import get_tokenizer
    import gzip
    import time

    clock = time.thread_time if args.cpu_time else time.perf_counter

    models_dir = os.path.expanduser("~/.cache/vllm-reference/models")
    rows = []
    for name in ["qwen3", "llama3"]:
        with gzip.open(os.path.join(HERE, "..", "tests", "fixtures", f"{name}.json.gz")) as f:
            stream = json.load(f)["bench"]
        tok = get_tokenizer(os.path.join(models_dir, name))
        ds = criterion_us(target, name, "decode_stream")
        for label, function, stops, lp in [
            ("plain", "ours", [], False),
            ("8 stop strings", "ours_8_stops", bench_python.STOPS, False),
            ("top-5 logprobs", "ours_top5_logprobs", [], True),
        ]:
            ours = criterion_us(target, name, function)
            py = min(bench_python.run(tok, stream, stops, lp, clock) for _ in range(5))
            rows.append((name, label, ours, ds, py))

    print()
    print("| tokenizer | case | ours µs/token | DecodeStream µs/token | vLLM Python µs/token | vs DecodeStream | vs Python |")
    print("|---|---|---|---|---|---|---|")
    for name, label, ours, ds, py in rows:
        print(f"| {name} | {label} | {ours:.4f} | {ds:.4f} | {py:.2f} | {ds / ours:.0f}x | {py / ours:.0f}x |")


if __name__ == "__main__":
    main()
