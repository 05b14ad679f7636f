#!/usr/bin/env bash
# The codec and fan-out of this checkout against another revision's, in one interleaved
# run (the figures of docs/performance.md, "Codec on rmp"):
#
#   bash vllm-client/scripts/bench_codec_vs.sh [REV]      (default REV: main)
#
# REV's tree is exported (git archive) to a scratch directory; this checkout's
# benches/codec.rs (which uses only the stable public API) is built against both
# vllm-client versions, and so is examples/examples/fanout.rs, as a scratch crate that
# depends on nothing but vllm-client (no need to build the whole examples crate).
# Then, alternating old/new:
#   - codec: ROUNDS criterion runs per side with CODEC_BENCH_CPU_TIME=1 (thread CPU
#     time); per case the fastest sample (per-iteration time) and the median of the
#     run medians;
#   - instructions per operation under callgrind, if valgrind is installed
#     (deterministic: CODEC_BENCH_RUN=case:N minus case:0, divided by N);
#   - fan-out: FANOUT_ROUNDS runs of `--streams 2000 --tokens 500`, multi-thread and
#     --current-thread, CPU µs per token.
# Environment: CARGO_TARGET_DIR (shared by both builds; default ./target), ROUNDS (8),
# FANOUT_ROUNDS (10), IR_N (200).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REV="${1:-main}"
ROUNDS="${ROUNDS:-8}"
FANOUT_ROUNDS="${FANOUT_ROUNDS:-10}"
IR_N="${IR_N:-200}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"

# --- build: old = REV, new = this checkout ---------------------------------------------
mkdir -p "$WORK/old-tree" "$WORK/old" "$WORK/new"
git archive "$REV" | tar -x -C "$WORK/old-tree"
cp vllm-client/benches/codec.rs "$WORK/old-tree/vllm-client/benches/codec.rs"
python3 - "$WORK/old-tree/vllm-client/Cargo.toml" <<'PY'
import sys, re
p = sys.argv[1]
s = open(p).read()
if not re.search(r'^libc = ', s, re.M):
    s = s.replace('[dev-dependencies]\n', '[dev-dependencies]\nlibc = "0.2"\n', 1)
open(p, 'w').write(s)
PY
bench_exe() { # dir → path of the codec bench binary it builds
    (cd "$1" && cargo bench --no-run -p vllm-client --bench codec --message-format=json 2>/dev/null) |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "codec" and m.get("executable"):
        print(m["executable"])'
}
cp "$(bench_exe "$WORK/old-tree")" "$WORK/old/codec"
cp "$(bench_exe "$ROOT")" "$WORK/new/codec"
for side in old new; do
    crate="$WORK/fanout-$side"
    client="$ROOT/vllm-client"
    [ "$side" = old ] && client="$WORK/old-tree/vllm-client"
    mkdir -p "$crate/src"
    cp examples/examples/fanout.rs "$crate/src/main.rs"
    cp Cargo.lock "$crate/Cargo.lock"
    cat > "$crate/Cargo.toml" <<EOF
[package]
name = "fanout-$side"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
vllm-client = { path = "$client", features = ["mock"] }
anyhow = "1"
clap = { version = "4", features = ["derive", "env"] }
futures = "0.3"
serde_json = "1"
tokio = { version = "1", features = ["full"] }
EOF
    (cd "$crate" && cargo build -q --release)
    cp "$CARGO_TARGET_DIR/release/fanout-$side" "$WORK/$side/fanout"
done

# --- codec, thread CPU time ---------------------------------------------------------------
for round in $(seq "$ROUNDS"); do
    for side in old new; do
        (cd "$WORK/$side" && rm -rf target &&
            env -u CARGO_TARGET_DIR CODEC_BENCH_CPU_TIME=1 ./codec --bench --noplot \
                --warm-up-time 1 --measurement-time 2 >/dev/null 2>&1 &&
            python3 - "$side" >> "$WORK/codec.txt" <<'PY'
import json, sys, pathlib
side = sys.argv[1]
for d in sorted(pathlib.Path("target/criterion").iterdir()):
    s = json.load(open(d / "new" / "sample.json"))
    fastest = min(t / i for t, i in zip(s["times"], s["iters"]))
    med = json.load(open(d / "new" / "estimates.json"))["median"]["point_estimate"]
    print(side, d.name, med / 1e3, fastest / 1e3)
PY
        )
    done
done
python3 - "$WORK/codec.txt" "$REV" <<'PY'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
d = collections.defaultdict(lambda: collections.defaultdict(list))
for side, name, med, fastest in rows:
    d[name][side].append((float(med), float(fastest)))
print(f"| case | {sys.argv[2]} fastest (µs) | new fastest (µs) | ratio | {sys.argv[2]} median (µs) | new median (µs) | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, sides in d.items():
    o, n = sides["old"], sides["new"]
    of, nf = min(x[1] for x in o), min(x[1] for x in n)
    om, nm = statistics.median(x[0] for x in o), statistics.median(x[0] for x in n)
    print(f"| {name} | {of:.2f} | {nf:.2f} | {nf/of:.2f} | {om:.2f} | {nm:.2f} | {nm/om:.2f} |")
PY

# --- codec, instructions per operation ----------------------------------------------------
if command -v valgrind >/dev/null; then
    echo
    echo "| case | $REV instructions / op | new instructions / op | ratio |"
    echo "|---|---:|---:|---:|"
    for c in request_1000_tokens/encode request_1000_tokens/decode \
        outputs_256_requests/encode outputs_256_requests/decode \
        kv_events_64_blocks/encode kv_events_64_blocks/decode; do
        ir() {
            CODEC_BENCH_RUN="$c:$2" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
                "$WORK/$1/codec" 2>&1 | awk '/Collected/ {print $4}'
        }
        o=$(( ($(ir old "$IR_N") - $(ir old 0)) / IR_N ))
        n=$(( ($(ir new "$IR_N") - $(ir new 0)) / IR_N ))
        python3 -c "print(f'| $c | $o | $n | {$n/$o:.2f} |')"
    done
fi

# --- fan-out ------------------------------------------------------------------------------
echo
for round in $(seq "$FANOUT_ROUNDS"); do
    for mode in multi current; do
        for side in old new; do
            flag=""
            [ "$mode" = current ] && flag="--current-thread"
            "$WORK/$side/fanout" --streams 2000 --tokens 500 $flag 2>&1 |
                awk -F'|' -v s="$side" -v m="$mode" '/^\| vllm-client/ {gsub(/ /,"",$5); gsub(/ /,"",$8); print s, m, $5, $8}' \
                >> "$WORK/fanout.txt"
        done
    done
done
python3 - "$WORK/fanout.txt" "$REV" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for side, mode, tpo, us in (l.split() for l in open(sys.argv[1])):
    d[(mode, side)].append((float(us), float(tpo)))
print(f"| fan-out, 2,000 streams × 500 tokens | {sys.argv[2]} µs / token (min / median / max) | new µs / token (min / median / max) |")
print("|---|---:|---:|")
for mode in ("multi", "current"):
    cells = []
    for side in ("old", "new"):
        us = [x[0] for x in d[(mode, side)]]
        tpo = [x[1] for x in d[(mode, side)]]
        cells.append(f"{min(us):.3f} / {statistics.median(us):.3f} / {max(us):.3f} ({min(tpo):.0f}–{max(tpo):.0f} tok/out)")
    name = "multi-thread runtime" if mode == "multi" else "`--current-thread`"
    print(f"| {name} | {cells[0]} | {cells[1]} |")
PY
