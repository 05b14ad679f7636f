#!/usr/bin/env bash
# Side-by-side renders/s: vllm-chat (criterion, benches/render.rs) vs transformers'
# apply_chat_template (scripts/bench_transformers.py), same scenarios, one run.
# Usage (repository root): REF=$HOME/.cache/vllm-reference bash vllm-chat/scripts/bench_compare.sh
set -euo pipefail
REF=${REF:-$HOME/.cache/vllm-reference}
TARGET=${CARGO_TARGET_DIR:-target}
cargo bench -p vllm-chat --bench render -- --warm-up-time 1 --measurement-time 3 >/dev/null
PY=$(HF_HUB_OFFLINE=1 "$REF/venv/bin/python" vllm-chat/scripts/bench_transformers.py "$REF" 2>/dev/null | tail -1)
python3 - "$TARGET" "$PY" <<'PYEOF'
import json, os, sys
target, py = sys.argv[1], json.loads(sys.argv[2])
print(f"| scenario | vllm-chat renders/s | transformers renders/s | ratio |")
print(f"|---|---:|---:|---:|")
for key, theirs in py.items():
    est = os.path.join(target, "criterion", key.replace("/", "_"), "new", "estimates.json")
    if not os.path.exists(est):
        est = os.path.join(target, "criterion", *key.split("/"), "new", "estimates.json")
    ns = json.load(open(est))["mean"]["point_estimate"]
    ours = 1e9 / ns
    print(f"| {key} | {ours:,.0f} | {theirs:,.0f} | {ours / theirs:.1f}x |")
PYEOF
