#!/usr/bin/env bash
# Same HTTP load on the `render` example and on `vllm-rs render`: wrk, keep-alive,
# POST /v1/chat/completions/render with the Qwen3 tools request (cases.json "tools").
# Usage (repository root): REF=$HOME/.cache/vllm-reference bash vllm-chat/scripts/bench_http.sh
# Needs `wrk` (Debian package). Env: DURATION (10s), CONNECTIONS (16), THREADS (1).
set -euo pipefail
REF=${REF:-$HOME/.cache/vllm-reference}
MODEL=${MODEL:-$REF/models/qwen3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-1}
TARGET=${CARGO_TARGET_DIR:-target}
OURS_PORT=18201
PEER_PORT=18202
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

cargo build --release -q -p vllm-examples --example render
python3 - "$MODEL" > "$WORK/body.json" <<'PY'
import json, sys
case = json.load(open("vllm-chat/tests/fixtures/cases.json"))["tools"]
print(json.dumps({"model": sys.argv[1], **case}))
PY
cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$WORK/body.json"); wrk.body = f:read("*a"); f:close()
LUA

"$TARGET/release/examples/render" "$MODEL" --port $OURS_PORT >"$WORK/ours.log" 2>&1 & PIDS+=($!)
"$REF/vllm_src/vllm/vllm-rs" render "$MODEL" --port $PEER_PORT >"$WORK/peer.log" 2>&1 & PIDS+=($!)
for port in $OURS_PORT $PEER_PORT; do
  for _ in $(seq 120); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.5; done
done
# Both must answer the request with the same token ids before being timed.
for port in $OURS_PORT $PEER_PORT; do
  curl -sf "localhost:$port/v1/chat/completions/render" -H 'Content-Type: application/json' -d @"$WORK/body.json" \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["token_ids"]), "prompt tokens, ids hash", hash(tuple(d["token_ids"])))'
done
echo "| server | requests/s | latency p50 | latency p99 |"
echo "|---|---:|---:|---:|"
for pair in "render example:$OURS_PORT" "vllm-rs render:$PEER_PORT"; do
  name=${pair%%:*}; port=${pair##*:}
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$WORK/post.lua" "http://127.0.0.1:$port/v1/chat/completions/render")
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  echo "| $name | $rps | $p50 | $p99 |"
done
