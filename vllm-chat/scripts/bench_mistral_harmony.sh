#!/usr/bin/env bash
# Side-by-side renders/s of the native renderers: vllm-chat's Mistral and Harmony
# renderers (criterion, benches/mistral_harmony.rs) vs vLLM 0.33.0's own Python paths
# (scripts/bench_mistral_harmony_python.py), same requests, one run.
# Both sides are timed with thread CPU time (BENCH_CPU_TIME=1; set BENCH_CPU_TIME= for
# wall time), so the ratios hold on a shared machine.
# Usage (repository root): REF=$HOME/.cache/vllm-reference bash vllm-chat/scripts/bench_mistral_harmony.sh
set -euo pipefail
export BENCH_CPU_TIME=${BENCH_CPU_TIME-1}
REF=${REF:-$HOME/.cache/vllm-reference}
TARGET=${CARGO_TARGET_DIR:-target}
cargo bench -p vllm-chat --bench mistral_harmony -- --warm-up-time 1 --measurement-time 3 >/dev/null
PY=$(HF_HUB_OFFLINE=1 "$REF/venv/bin/python" vllm-chat/scripts/bench_mistral_harmony_python.py 2>/dev/null | tail -1)
python3 - "$TARGET" "$PY" <<'PYEOF'
import json, os, sys
target, py = sys.argv[1], json.loads(sys.argv[2])
print("| scenario | vllm-chat renders/s | vLLM (Python) renders/s | ratio |")
print("|---|---:|---:|---:|")
rows = [(k, v) for k, v in py.items()] + [(k.replace("/", "-cold/", 1), v) for k, v in py.items()]
for key, theirs in rows:
    est = os.path.join(target, "criterion", key.replace("/", "_"), "new", "estimates.json")
    if not os.path.exists(est):
        est = os.path.join(target, "criterion", *key.split("/"), "new", "estimates.json")
    ns = json.load(open(est))["mean"]["point_estimate"]
    ours = 1e9 / ns
    print(f"| {key} | {ours:,.0f} | {theirs:,.0f} | {ours / theirs:.0f}x |")
PYEOF
