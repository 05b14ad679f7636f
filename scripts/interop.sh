#!/usr/bin/env bash
# Interop with the real vLLM 0.33.0: the one command that runs every interop check.
#
#   bash scripts/interop.sh            (from the repository root; .ci/run calls it too)
#
# 1. Ensures the reference environment ($REF, default $HOME/.cache/vllm-reference):
#    if $REF/venv/bin/python is missing it runs ../shared/peers/setup.sh (a few minutes).
# 2. vllm-client against vLLM's real EngineCoreProc (real scheduler, KV cache manager,
#    ZMQ threads; scripted executor): handshake, streaming, aborts, utility calls,
#    data parallelism, engine death  (vllm-client/tests/interop_vllm.rs); KV-cache
#    events from the engine and from vLLM's publisher: same batches as vLLM's own
#    subscriber, replay over holes, restarts, per-rank ports, block hashes
#    (vllm-client/tests/interop_kv_events.rs).
#    Before that, the drift check: our declared field orders against vLLM's Python
#    source (vllm-client/tests/drift.rs).
# 3. If present, vllm-client/scripts/interop_mock.sh: the mock engine against vLLM's
#    real frontend and behind vllm-rs.
# 4. serve's control plane (pause, sleep, weights, caches, RPC, …) side by side with
#    vllm-rs, both in front of the mock engine (examples/scripts/control_conformance.py),
#    then both in front of vLLM's real EngineCoreProc (--real-engine).
# 5. serve's gRPC services (--grpc-port: vllm.Inference, vllm.Control, health) side by
#    side with vllm-rs's, both in front of the mock engine, then both in front of vLLM's
#    real EngineCoreProc (--real-engine) (examples/scripts/grpc_conformance.py; a Python
#    with grpcio: $GRPC_PYTHON, default $REF/venv-grpc, created with pip on first use).
# 6. `serve` against vLLM's own OpenAI frontend (examples/scripts/compare_vllm_frontend.py).
# Prints a PASS/FAIL summary; exits non-zero if anything failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="$(dirname "$ROOT")/shared"
REF="${REF:-$HOME/.cache/vllm-reference}"
export HF_HUB_OFFLINE=1
cd "$ROOT"

declare -a NAMES=() RESULTS=()
record() { NAMES+=("$1"); RESULTS+=("$2"); }

echo "== reference environment: $REF"
if [ ! -x "$REF/venv/bin/python" ]; then
    if [ ! -f "$SHARED/peers/setup.sh" ]; then
        echo "missing $REF/venv/bin/python and $SHARED/peers/setup.sh to build it" >&2
        exit 1
    fi
    echo "building it with $SHARED/peers/setup.sh"
    if ! REF="$REF" bash "$SHARED/peers/setup.sh"; then
        echo "reference environment setup failed" >&2
        exit 1
    fi
fi
"$REF/venv/bin/python" -c 'import vllm; print("vLLM", vllm.__version__)' 2>/dev/null | tail -1
# vLLM 0.33.0 requires lm-format-enforcer (its structured-output validation imports it
# for every request with a constraint); setup.sh's list lacks it.
if ! "$REF/venv/bin/python" -c 'import lmformatenforcer' 2>/dev/null; then
    "$REF/venv/bin/pip" install -q --no-deps lm-format-enforcer==0.11.3 interegular==0.3.3 \
        || echo "could not install lm-format-enforcer: structured-output cases will fail" >&2
fi

echo "== protocol drift: our field orders against vLLM's Python source"
if VLLM_SOURCE_DIR="$REF/vllm_src/vllm" cargo test -p vllm-client --test drift; then
    record "protocol field orders vs vLLM source (tests/drift.rs)" PASS
else
    record "protocol field orders vs vLLM source (tests/drift.rs)" FAIL
fi

echo "== vllm-client against vLLM's real EngineCoreProc"
if VLLM_REFERENCE_PYTHON="$REF/venv/bin/python" VLLM_REFERENCE_MODELS="$REF/models" \
    cargo test -p vllm-client --test interop_vllm -- --ignored --test-threads=1; then
    record "vllm-client vs vLLM EngineCoreProc (tests/interop_vllm.rs)" PASS
else
    record "vllm-client vs vLLM EngineCoreProc (tests/interop_vllm.rs)" FAIL
fi

echo "== KV-cache events: vLLM's engine and publisher, our subscriber and block hashes"
if VLLM_REFERENCE_PYTHON="$REF/venv/bin/python" VLLM_REFERENCE_MODELS="$REF/models" \
    cargo test -p vllm-client --all-features --test interop_kv_events -- --ignored --test-threads=1; then
    record "KV events vs vLLM's publisher and engine (tests/interop_kv_events.rs)" PASS
else
    record "KV events vs vLLM's publisher and engine (tests/interop_kv_events.rs)" FAIL
fi

MOCK="vllm-client/scripts/interop_mock.sh"
if [ -f "$MOCK" ]; then
    echo "== mock engine against vLLM's frontend and vllm-rs ($MOCK)"
    if REF="$REF" bash "$MOCK"; then
        record "mock engine vs vLLM frontend / vllm-rs ($MOCK)" PASS
    else
        record "mock engine vs vLLM frontend / vllm-rs ($MOCK)" FAIL
    fi
fi

# serve and the mock engine, built once for the comparisons below.
if [ "${PROFILE:-release}" = release ]; then flag=--release; dir=release; else flag=; dir=debug; fi
target="${CARGO_TARGET_DIR:-$ROOT/target}"
if cargo build -p vllm-examples --example serve --example mock-engine $flag; then built=1; else built=0; fi
SERVE="$target/$dir/examples/serve"
MOCK_ENGINE_BIN="$target/$dir/examples/mock-engine"

echo "== serve's control plane side by side with vllm-rs (examples/scripts/control_conformance.py)"
if [ "$built" = 1 ] && REF="$REF" python3 examples/scripts/control_conformance.py \
        --serve "$SERVE" --mock-engine "$MOCK_ENGINE_BIN"; then
    record "serve control plane vs vllm-rs (examples/scripts/control_conformance.py)" PASS
else
    record "serve control plane vs vllm-rs (examples/scripts/control_conformance.py)" FAIL
fi

echo "== the same, both in front of vLLM's real EngineCoreProc (scripted executor)"
if [ "$built" = 1 ] && REF="$REF" python3 examples/scripts/control_conformance.py \
        --serve "$SERVE" --mock-engine "$MOCK_ENGINE_BIN" --real-engine; then
    record "serve control plane vs vllm-rs, real EngineCoreProc (control_conformance.py --real-engine)" PASS
else
    record "serve control plane vs vllm-rs, real EngineCoreProc (control_conformance.py --real-engine)" FAIL
fi

echo "== serve's gRPC services side by side with vllm-rs (examples/scripts/grpc_conformance.py)"
GRPC_PYTHON="${GRPC_PYTHON:-$REF/venv-grpc/bin/python}"
if [ ! -x "$GRPC_PYTHON" ]; then
    python3 -m venv "$REF/venv-grpc" && "$REF/venv-grpc/bin/pip" install -q \
        grpcio grpcio-tools grpcio-health-checking grpcio-reflection
    GRPC_PYTHON="$REF/venv-grpc/bin/python"
fi
if [ "$built" = 1 ] && REF="$REF" "$GRPC_PYTHON" examples/scripts/grpc_conformance.py \
        --serve "$SERVE" --mock-engine "$MOCK_ENGINE_BIN"; then
    record "serve gRPC services vs vllm-rs (examples/scripts/grpc_conformance.py)" PASS
else
    record "serve gRPC services vs vllm-rs (examples/scripts/grpc_conformance.py)" FAIL
fi

echo "== the same, both in front of vLLM's real EngineCoreProc (scripted executor)"
if [ "$built" = 1 ] && REF="$REF" "$GRPC_PYTHON" examples/scripts/grpc_conformance.py \
        --serve "$SERVE" --mock-engine "$MOCK_ENGINE_BIN" --real-engine; then
    record "serve gRPC services vs vllm-rs, real EngineCoreProc (grpc_conformance.py --real-engine)" PASS
else
    record "serve gRPC services vs vllm-rs, real EngineCoreProc (grpc_conformance.py --real-engine)" FAIL
fi

echo "== serve against vLLM's own OpenAI frontend, each in front of a mock engine"
# n > 1, batched prompts, echo, prompt logprobs, parsers per choice: answers compared
# byte for byte (examples/scripts/compare_vllm_frontend.py).
if [ "$built" = 1 ] && "$REF/venv/bin/python" examples/scripts/compare_vllm_frontend.py \
        --serve "$SERVE" --mock-engine "$MOCK_ENGINE_BIN" --model "$REF/models/qwen3"; then
    record "serve vs vLLM's OpenAI frontend (examples/scripts/compare_vllm_frontend.py)" PASS
else
    record "serve vs vLLM's OpenAI frontend (examples/scripts/compare_vllm_frontend.py)" FAIL
fi

echo
echo "== interop summary"
status=0
for i in "${!NAMES[@]}"; do
    printf '%-4s  %s\n' "${RESULTS[$i]}" "${NAMES[$i]}"
    [ "${RESULTS[$i]}" = PASS ] || status=1
done
exit $status
