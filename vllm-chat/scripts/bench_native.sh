#!/usr/bin/env bash
# Rendering cost per --tokenizer-mode: vllm-chat (benches/native.rs) beside vLLM
# 0.33.0's Python renderers (scripts/bench_native.py), the same cases
# (tests/fixtures/native.json.gz), one run. Prints a markdown table.
# Usage (repository root): REF=$HOME/.cache/vllm-reference bash vllm-chat/scripts/bench_native.sh
set -euo pipefail
REF=${REF:-$HOME/.cache/vllm-reference}
RUST=$(cargo bench -q -p vllm-chat --bench native 2>/dev/null | tail -1)
PY=$(cd vllm-chat/scripts && HF_HUB_OFFLINE=1 "$REF/venv/bin/python" bench_native.py "$REF" 2>/dev/null | tail -1)
python3 - "$RUST" "$PY" <<'PYEOF'
import json, sys
ours, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("| mode | vllm-chat µs/request | vLLM (Python) µs/request | ratio |")
print("|---|---:|---:|---:|")
for mode, py in theirs.items():
    rs = ours[mode]
    print(f"| {mode} | {rs:,.1f} | {py:,.1f} | {py / rs:.1f}x |")
PYEOF
