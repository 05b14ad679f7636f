#!/usr/bin/env bash
# Codec throughput, ours vs vLLM's msgspec MsgpackEncoder/Decoder, in one run:
#   bash vllm-client/scripts/bench_codec.sh
# Needs the reference environment (../shared/peers/setup.sh). Prints a markdown table and
# checks that both sides encode byte-identical payloads.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REF="${REF:-$HOME/.cache/vllm-reference}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
cd "$ROOT"
HF_HUB_OFFLINE=1 "$REF/venv/bin/python" vllm-client/scripts/bench_codec.py > "$TMP/python.json" 2>/dev/null
CODEC_BENCH_DUMP="$TMP" cargo bench -q -p vllm-client --bench codec -- --noplot >/dev/null 2>&1
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
python3 - "$TMP" "$TARGET/criterion" <<'PY'
import json, sys, pathlib
tmp, crit = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
py = json.load(open(tmp / "python.json"))
print("| payload | op | vLLM msgspec (µs) | vllm-client (µs) | speed-up |")
print("|---|---|---:|---:|---:|")
for case, r in py.items():
    ours_bytes = (tmp / f"{case}.bin").read_bytes()
    assert ours_bytes.hex() == r["hex"], f"{case}: payloads differ"
    for op in ("encode", "decode"):
        est = json.load(open(crit / f"{case}_{op}" / "new" / "estimates.json"))
        ours = est["mean"]["point_estimate"]
        theirs = r[f"{op}_ns"]
        print(f"| {case} ({len(ours_bytes)} B) | {op} | {theirs/1e3:.2f} | {ours/1e3:.2f} | {theirs/ours:.1f}x |")
print("\npayloads byte-identical: yes")
PY
