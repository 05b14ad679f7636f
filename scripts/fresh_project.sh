#!/usr/bin/env bash
# A user's first hour, as CI: builds a new cargo project outside the workspace from
# docs/getting-started.md exactly (its `Cargo.toml` and `src/main.rs` blocks, marked
# `<!-- fresh-project: FILE -->`), with the crates by path, runs it against the vendored
# Qwen3 directory and checks what it prints.
#
#   bash scripts/fresh_project.sh      (from anywhere; .ci/run calls it)
#
# The project gets the workspace's Cargo.lock (the same dependency versions a checkout
# tests with) and shares its target directory, so CI compiles only the new binary.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOC="$ROOT/docs/getting-started.md"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# The project sits beside a checkout named `vllm-frontend-crates`, as the page assumes.
ln -s "$ROOT" "$WORK/vllm-frontend-crates"
PROJECT="$WORK/my-frontend"
mkdir -p "$PROJECT/src"

# The fenced block that follows the marker line for FILE.
block() {
    awk -v marker="<!-- fresh-project: $1 -->" '
        $0 == marker { armed = 1; next }
        armed && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }
    ' "$DOC"
}
for file in Cargo.toml src/main.rs; do
    block "$file" > "$PROJECT/$file"
    if [ ! -s "$PROJECT/$file" ]; then
        echo "fresh project: no '$file' block in $DOC" >&2
        exit 1
    fi
done
cp "$ROOT/Cargo.lock" "$PROJECT/Cargo.lock"

cd "$PROJECT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
OUT="$(cargo run --quiet -- ../vllm-frontend-crates/testdata/models/qwen3)"
echo "$OUT"
if [ "$(echo "$OUT" | tail -n 1)" != "Paris." ] || ! grep -q '^\[reasoning\] ' <<<"$OUT"; then
    echo "fresh project: expected reasoning lines, then 'Paris.'" >&2
    exit 1
fi
echo "fresh project: PASS"
