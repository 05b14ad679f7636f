"""Run the Rust benchmark and vLLM's Python detokenizer on the same streams; print ratios.

    CARGO_TARGET_DIR=/work/targets/detok HF_HUB_OFFLINE=1 \
        $HOME/.cache/vllm-reference/venv/bin/python vllm-detok/scripts/bench_compare.py

Runs `cargo bench -p vllm-detok --bench decode` (criterion; results under
`$CARGO_TARGET_DIR/criterion`), then `bench_python.py`'s measurements in this process, and
prints µs per token for ours, `tokenizers::DecodeStream` and vLLM, with the ratios.
Pass `--no-cargo` to reuse the last criterion results.
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
    path = os.path.join(target, "criterion", f"detok_{name}", function, "new", "estimates.json")
    with open(path) as f:
        ns_per_iter = json.load(f)["mean"]["point_estimate"]
    return ns_per_iter / 1000.0 / 4000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-cargo", action="store_true")
    args = ap.parse_args()
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "..", "..", "target"))
    if not args.no_cargo:
        subprocess.run(["cargo", "bench", "-p", "vllm-detok", "--bench", "decode"], check=True)

    import bench_python
    from vllm.tokenizers import get_tokenizer
    import gzip

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
            py = min(bench_python.run(tok, stream, stops, lp) for _ in range(5))
            rows.append((name, label, ours, ds, py))

    print()
    print("| tokenizer | case | ours µs/token | DecodeStream µs/token | vLLM Python µs/token | vs DecodeStream | vs Python |")
    print("|---|---|---|---|---|---|---|")
    for name, label, ours, ds, py in rows:
        print(f"| {name} | {label} | {ours:.4f} | {ds:.4f} | {py:.2f} | {ds / ours:.0f}x | {py / ours:.0f}x |")


if __name__ == "__main__":
    main()
