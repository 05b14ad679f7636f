#!/usr/bin/env bash
# Interop of the mock engine with the real thing. One command, from the repository root:
#
#     bash vllm-client/scripts/interop_mock.sh
#
# 1. builds the `mock-engine` example (release; PROFILE=dev for a debug build);
# 2. interop_vllm_frontend.py: vLLM 0.33.0's own frontend code (wait_for_engine_startup,
#    MsgpackEncoder / MsgpackDecoder) drives the mock as a headless engine;
# 3. interop_vllm_asyncllm.py: vLLM's whole Python frontend (AsyncLLM: input and output
#    processors, detokenizer, engine client) against the mock: text, streaming, stop
#    strings, logprobs, n > 1, abort, utility calls, engine death -> EngineDeadError;
# 4. interop_vllm_rs.py: the mock behind `vllm-rs serve MODEL --python WRAPPER`,
#    answering OpenAI chat completions over HTTP, with one engine and with two
#    (`--data-parallel-size 2`).
#
# Needs the reference environment (REF, default $HOME/.cache/vllm-reference, built by
# ../shared/peers/setup.sh). Prints a PASS/FAIL summary; exits non-zero on any failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
REF="${REF:-$HOME/.cache/vllm-reference}"
PY="$REF/venv/bin/python"
PROFILE="${PROFILE:-release}"
export HF_HUB_OFFLINE=1

if [ ! -x "$PY" ] || [ ! -x "$REF/vllm_src/vllm/vllm-rs" ]; then
    echo "FAIL: reference environment missing at $REF (build it with ../shared/peers/setup.sh)" >&2
    exit 1
fi

echo "== building mock-engine ($PROFILE)"
if [ "$PROFILE" = release ]; then flag=--release; dir=release; else flag=; dir=debug; fi
(cd "$root" && cargo build -p vllm-examples --example mock-engine $flag) || {
    echo "FAIL: cargo build of the mock-engine example" >&2
    exit 1
}
target="${CARGO_TARGET_DIR:-$(cd "$root" && cargo metadata --format-version 1 --no-deps \
    | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}"
export MOCK_ENGINE="$target/$dir/examples/mock-engine"

declare -A results
status=0
runs=("interop_vllm_frontend" "interop_vllm_asyncllm" "interop_vllm_rs --data-parallel-size 1" "interop_vllm_rs --data-parallel-size 2")
for run in "${runs[@]}"; do
    read -r -a words <<< "$run"
    echo "== $run"
    if "$PY" "$here/${words[0]}.py" --model "$REF/models/qwen3" "${words[@]:1}"; then
        results[$run]=PASS
    else
        results[$run]=FAIL
        status=1
    fi
done

echo "== summary"
for run in "${runs[@]}"; do
    echo "${results[$run]}: $run"
done
exit $status
