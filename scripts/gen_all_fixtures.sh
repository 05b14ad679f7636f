#!/usr/bin/env bash
# Regenerates every fixture and golden file of the four crates from the reference
# environment, in one command:
#
#   bash scripts/gen_all_fixtures.sh              (REF defaults to $HOME/.cache/vllm-reference)
#   bash scripts/gen_all_fixtures.sh parser       (only the generators whose name matches)
#
# Builds the reference environment first if it is missing (../shared/peers/setup.sh) and
# installs the pinned extras the generators need (xxhash for the block hashes; the
# Cohere generators install cohere-melody themselves). Every generator is deterministic:
# on the pinned versions a run leaves `git status` clean, so after a vLLM release (bump
# the pins: `grep -rln '0\.33\.0' */scripts`) `git diff` is what changed in vLLM. One
# exception by design: vllm-chat's harmony.json.gz holds a case rendered at the current
# date (Harmony's system message), which the test replays with the recorded clock.
# Prints one line per generator and a summary; exits non-zero if one failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="$(dirname "$ROOT")/shared"
export REF="${REF:-$HOME/.cache/vllm-reference}"
export VLLM_REFERENCE="$REF" HF_HUB_OFFLINE=1
PY="$REF/venv/bin/python"
LIGHT="$REF/venv-light/bin/python"
ONLY="${1:-}"
cd "$ROOT"

if [ ! -x "$PY" ]; then
    echo "building the reference environment with $SHARED/peers/setup.sh"
    bash "$SHARED/peers/setup.sh" || exit 1
fi
# vLLM keeps xxhash optional; the block-hash goldens cover the xxhash algorithms.
"$PY" -c 'import xxhash' 2>/dev/null || "$PY" -m pip install -q xxhash==3.6.0 || exit 1

declare -a FAILED=()
LOGS="$(mktemp -d /tmp/gen-all-fixtures.XXXXXX)"

# run NAME DIR COMMAND...: one generator, from DIR, its output in $LOGS/NAME.log.
run() {
    local name="$1" dir="$2"
    shift 2
    if [ -n "$ONLY" ] && [[ "$name" != *"$ONLY"* ]]; then
        return
    fi
    local start=$SECONDS
    if (cd "$dir" && "$@") > "$LOGS/$name.log" 2>&1; then
        echo "ok    $name ($((SECONDS - start)) s)"
    else
        echo "FAIL  $name ($((SECONDS - start)) s; $LOGS/$name.log)"
        FAILED+=("$name")
    fi
}

# Generators that print their fixture write it through a shell redirection.
golden() { "$PY" vllm-client/scripts/gen_golden.py > vllm-client/tests/golden/vectors.json; }
kv_golden() { "$PY" vllm-client/scripts/gen_kv_golden.py > vllm-client/tests/golden/kv_events.json; }

run client-golden "$ROOT" golden
run client-kv-golden "$ROOT" kv_golden
run detok-fixtures "$ROOT" "$PY" vllm-detok/scripts/gen_fixtures.py
run detok-tiktoken "$ROOT" "$PY" vllm-detok/scripts/gen_tiktoken_fixture.py
run chat-jinja "$ROOT" "$LIGHT" vllm-chat/scripts/gen_jinja_fixtures.py
run chat-parity "$ROOT" "$PY" vllm-chat/scripts/gen_parity_fixtures.py "$REF"
run chat-render "$ROOT" "$PY" vllm-chat/scripts/gen_render_fixtures.py "$REF"
run chat-mistral-harmony "$ROOT" "$PY" vllm-chat/scripts/gen_mistral_harmony_fixtures.py
run chat-native "$ROOT" "$PY" vllm-chat/scripts/gen_native_fixtures.py "$REF"
for generator in fixtures serving_corpus structural_tags beam_grammars beam_messages \
    cohere_tool_grammars mistral_grammars schema_compiles template_patterns \
    xgrammar_ebnf xgrammar_regexes; do
    run "parser-${generator//_/-}" "$ROOT/vllm-parser" "$PY" "scripts/gen_$generator.py"
done

echo
if [ ${#FAILED[@]} -eq 0 ]; then
    echo "all generators ran; what changed: git status --short"
    git status --short
else
    echo "failed: ${FAILED[*]} (logs in $LOGS)"
    exit 1
fi
