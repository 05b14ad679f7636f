#!/usr/bin/env bash
# Long-prompt latency, side by side in one run (docs/performance.md, "Long prompts"):
# render (`/v1/chat/completions/render`) and `/tokenize` at 1k / 32k / 300k Qwen3
# tokens — our `render` example and library call vs `vllm-rs render` vs HF
# (`tokenizers` Python binding for tokenize, transformers' apply_chat_template for
# render) — as medians and ratios. Each request carries a fresh first line so that
# no cache answers it. Token ids are compared across all three before timing.
# Besides wall-clock round trips (which include the Python client and loopback, the
# same for both servers), it reports each server's CPU time per call (all its
# threads, from /proc/PID/task/*/schedstat) beside HF's thread CPU time: on a shared
# machine the CPU ratios are the stable figures.
#
#   REF=$HOME/.cache/vllm-reference vllm-chat/scripts/bench_long_prompt.sh
#
# Env: REF (reference env, default ~/.cache/vllm-reference), CARGO_TARGET_DIR,
# REPS_SCALE (multiplies the repetition counts, default 1), SKIP_LIB=1 (no cargo bench).
set -euo pipefail

REF=${REF:-$HOME/.cache/vllm-reference}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=$REF/venv-light/bin/python
VLLM_RS=$REF/vllm_src/vllm/vllm-rs
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
export HF_HUB_OFFLINE=1
[ -x "$PY" ] || { echo "missing $PY (run the reference setup)" >&2; exit 1; }
[ -x "$VLLM_RS" ] || { echo "missing $VLLM_RS" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# A plain model directory (vllm-rs reads tokenizer.json, not .gz).
mkdir -p "$WORK/qwen3" "$WORK/prompts"
for f in "$ROOT"/testdata/models/qwen3/*; do
    case $f in
        *.gz) gunzip -c "$f" > "$WORK/qwen3/$(basename "${f%.gz}")" ;;
        *) cp "$f" "$WORK/qwen3/" ;;
    esac
done

"$PY" - "$WORK/qwen3" "$WORK/prompts" <<'EOF'
# Prompts of ~1k, 32k and 300k Qwen3 tokens: prose with code, numbers and newlines.
import random, sys
from tokenizers import Tokenizer
model, out = sys.argv[1], sys.argv[2]
tok = Tokenizer.from_file(f"{model}/tokenizer.json")
rng = random.Random(18)
words = ("the of and to in is that for it as was with be by on not he this are or his from at which "
         "but have an they you were her she there been one all we their has would when if so no will "
         "model token prompt latency context window attention cache request server response stream "
         "Rust Python tokenizer encoding parallel thread núcleo café naïve 東京 数据 Привет").split()
parts = []
size = 0
while size < 1_600_000:
    r = rng.random()
    if r < 0.03:
        parts.append("\n\n")
    elif r < 0.05:
        parts.append(f"\n```python\ndef f{rng.randrange(999)}(x):\n    return x * {rng.randrange(10**6)}\n```\n")
    elif r < 0.08:
        parts.append(f" {rng.randrange(10**rng.randrange(1, 8))}")
    elif r < 0.10:
        parts.append(rng.choice([",", ".", ";", ":", "!", "?", " -", " (see above)"]))
    else:
        parts.append(" " + rng.choice(words))
    size += len(parts[-1])
text = "".join(parts)
ratio = len(tok.encode(text[:200_000], add_special_tokens=False).ids) / 200_000
for name, want in (("1k", 1_000), ("32k", 32_000), ("300k", 300_000)):
    end = int(want / ratio)
    while True:
        got = len(tok.encode(text[:end], add_special_tokens=False).ids)
        if abs(got - want) <= want * 0.01:
            break
        end = int(end * want / got)
    with open(f"{out}/{name}.txt", "w") as f:
        f.write(text[:end])
    print(f"prompt {name}: {got} tokens, {end} chars", file=sys.stderr)
EOF

(cd "$ROOT" && nice -n 10 cargo build --release --example render -p vllm-examples -q)
LIB_OUT=$WORK/lib.txt
: > "$LIB_OUT"
if [ "${SKIP_LIB:-0}" != 1 ]; then
    (cd "$ROOT" && VLLM_CHAT_LONG_PROMPTS=$WORK/prompts cargo bench -p vllm-chat --bench render -- \
        --warm-up-time 1 --measurement-time 5 long/ 2>/dev/null | tee "$LIB_OUT" | grep -E "^long/|time:" >&2) || true
fi

"$TARGET/release/examples/render" "$WORK/qwen3" --port 18101 --served-model-name qwen3 --max-model-len 1000000 >"$WORK/ours.log" 2>&1 &
PIDS+=($!)
"$VLLM_RS" render "$WORK/qwen3" --port 18102 --served-model-name qwen3 --max-model-len 1000000 >"$WORK/vllm-rs.log" 2>&1 &
PIDS+=($!)

"$PY" - "$WORK" "$LIB_OUT" "${REPS_SCALE:-1}" "${PIDS[0]}" "${PIDS[1]}" <<'EOF'
import glob, http.client, json, os, re, statistics, sys, time
work, lib_out, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
pids = {"ours": sys.argv[4], "vllm-rs": sys.argv[5]}
from tokenizers import Tokenizer
from transformers import AutoTokenizer
model = f"{work}/qwen3"
tok = Tokenizer.from_file(f"{model}/tokenizer.json")
hf = AutoTokenizer.from_pretrained(model)
servers = {"ours": 18101, "vllm-rs": 18102}

def wait(port):
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health"); r = c.getresponse(); r.read()
            if r.status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"server on {port} did not start")
for p in servers.values():
    wait(p)
conns = {k: http.client.HTTPConnection("127.0.0.1", p, timeout=120) for k, p in servers.items()}

def server_cpu(name):
    """CPU seconds all threads of a server have run (scheduler statistics, in ns)."""
    total = 0
    for f in glob.glob(f"/proc/{pids[name]}/task/*/schedstat"):
        try:
            total += int(open(f).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended between the listing and the read
    return total * 1e-9

cpu = {}
def post(name, path, body, key=None):
    data = json.dumps(body).encode()
    c0 = server_cpu(name)
    t = time.perf_counter()
    conns[name].request("POST", path, data, {"Content-Type": "application/json"})
    r = conns[name].getresponse(); out = r.read()
    dt = time.perf_counter() - t
    if key:
        cpu.setdefault(key, []).append(server_cpu(name) - c0)
    if r.status != 200:
        sys.exit(f"{name} {path}: {r.status} {out[:300]!r}")
    return dt, json.loads(out)

def ids_of(v):
    if isinstance(v, dict):
        for k in ("token_ids", "tokens", "prompt_token_ids"):
            if isinstance(v.get(k), list) and (not v[k] or isinstance(v[k][0], int)):
                return v[k]
        for x in v.values():
            r = ids_of(x)
            if r is not None:
                return r
    if isinstance(v, list):
        for x in v:
            r = ids_of(x)
            if r is not None:
                return r
    return None

lib = {}
cur = None
for line in open(lib_out):
    m = re.match(r"^(long/\S+)", line)
    if m:
        cur = m.group(1)
    m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
    if m and cur:
        lib[cur] = float(m.group(1)) * {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1}[m.group(2)]
        cur = None

reps = {"1k": 200, "32k": 30, "300k": 10}
rows = []
for size in ("1k", "32k", "300k"):
    text = open(f"{work}/prompts/{size}.txt").read()
    n = max(3, int(reps[size] * scale))
    msgs = lambda i: [{"role": "user", "content": f"request {i}\n{text}"}]
    render = lambda i: ("/v1/chat/completions/render", {"model": "qwen3", "messages": msgs(i)})
    complete = lambda i: ("/v1/completions/render", {"model": "qwen3", "prompt": f"request {i}\n{text}"})
    tokenize = lambda i: ("/tokenize", {"model": "qwen3", "prompt": f"request {i}\n{text}"})
    # `vllm-rs render` has no /tokenize: its tokenize-only call is /v1/completions/render.
    calls = {"ours render": render, "vllm-rs render": render,
             "ours tokenize": tokenize, "ours completions": complete, "vllm-rs completions": complete}
    # Same ids everywhere first.
    want = {"render": hf.apply_chat_template(msgs(0), tokenize=True, add_generation_prompt=True, return_dict=False),
            "tokenize": tok.encode(f"request 0\n{text}").ids}
    want["completions"] = want["tokenize"]
    for key, call in calls.items():
        got = ids_of(post(key.split()[0], *call(0))[1])
        assert got == want[key.split()[1]], f"{key}: ids differ at {size} ({len(got or [])} vs {len(want[key.split()[1]])})"
    times = {k: [] for k in [*calls, "hf render", "hf tokenize"]}
    cpu.clear()
    for i in range(1, n + 1):
        for key, call in calls.items():  # interleaved, so drift hits all alike
            times[key].append(post(key.split()[0], *call(i), key=key)[0])
        c = time.thread_time(); t = time.perf_counter()
        hf.apply_chat_template(msgs(i), tokenize=True, add_generation_prompt=True, return_dict=False)
        times["hf render"].append(time.perf_counter() - t)
        cpu.setdefault("hf render", []).append(time.thread_time() - c)
        c = time.thread_time(); t = time.perf_counter(); tok.encode(f"request {i}\n{text}")
        times["hf tokenize"].append(time.perf_counter() - t)
        cpu.setdefault("hf tokenize", []).append(time.thread_time() - c)
    med = {k: statistics.median(v) for k, v in times.items()}
    # CPU: means (a median of per-call deltas would drop the work a server does
    # between calls, such as freeing the previous answer).
    cpu_mean = {k: statistics.fmean(v) for k, v in cpu.items()}
    rows.append((size, len(want["render"]), med, cpu_mean))

def ms(s):
    return f"{s * 1e3:.2f}" if s is not None else "–"
# (row, our call, vllm-rs's call, HF's call)
ROWS = (("chat render", "ours render", "vllm-rs render", "hf render"),
        ("tokenize (ours /tokenize, vllm-rs /v1/completions/render)", "ours tokenize", "vllm-rs completions", "hf tokenize"),
        ("/v1/completions/render", "ours completions", "vllm-rs completions", "hf tokenize"))
print(f"\nload average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; medians (ms)\n")
print("| tokens | what | ours HTTP | ours library | vllm-rs HTTP | HF | vllm-rs / ours | HF / ours |")
print("|---|---|---|---|---|---|---|---|")
for size, count, m, _ in rows:
    for what, ours, theirs, hf_key in ROWS:
        o, v, h = m[ours], m[theirs], m[hf_key]
        lib_key = "render" if what == "chat render" else "tokenize"
        print(f"| {size} ({count}) | {what} | {ms(o)} | {ms(lib.get(f'long/{lib_key}/{size}'))} | {ms(v)} | {ms(h)} | {v / o:.2f}x | {h / o:.2f}x |")
print("\nCPU time per call (ms; servers: all threads, HF: the calling thread)\n")
print("| tokens | what | ours server | vllm-rs server | HF | vllm-rs / ours | HF / ours |")
print("|---|---|---|---|---|---|---|")
for size, count, _, c in rows:
    for what, ours, theirs, hf_key in ROWS:
        o, v, h = c[ours], c[theirs], c[hf_key]
        print(f"| {size} ({count}) | {what} | {ms(o)} | {ms(v)} | {ms(h)} | {v / o:.2f}x | {h / o:.2f}x |")
one = {s: lib.get(f"long/tokenize-1thread/{s}") for s in ("1k", "32k", "300k")}
if any(one.values()):
    print("\nlibrary tokenize on one thread (ms): " + ", ".join(f"{s} {ms(v)}" for s, v in one.items()))
EOF
