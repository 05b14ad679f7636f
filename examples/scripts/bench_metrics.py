"""`/metrics` under load (issue 13): what a scrape costs with thousands of open streams,
and whether a scraper at 1 Hz stalls streaming.

N streamed chats (default 2,000) from the mock engine, measured by the `bench` example
(inter-token latency p99), run twice per frontend: without and with a scraper that GETs
`/metrics` once a second and times each answer (client side, wall clock). Frontends:
`serve` and `vllm-rs serve`, each with its own mock engine process, one after the other.
Target: a scrape ≤ 1 ms, ITL p99 with the scraper within noise of without.

    cargo build --release -p vllm-examples --example serve --example bench --example mock-engine
    HF_HUB_OFFLINE=1 python3 examples/scripts/bench_metrics.py [--streams 2000] [--duration 20]
"""

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_serve as bs  # noqa: E402
import bench_stall as st  # noqa: E402


def scraper(base: str, stop: threading.Event, times: list) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(base + "/metrics", timeout=10) as resp:
                resp.read()
            times.append((time.perf_counter() - start) * 1000)
        except OSError:
            pass
        stop.wait(1.0)


def run(args, exe, workdir, name, start, scrape: bool):
    base, procs = start()
    try:
        st.warm_up(exe, base, workdir)
        times: list = []
        stop = threading.Event()
        thread = threading.Thread(target=scraper, args=(base, stop, times))
        if scrape:
            thread.start()
        result = st.streams(exe, base, os.path.join(workdir, f"{name}.json"), args)
        stop.set()
        if scrape:
            thread.join()
        return {"name": name, "itl": result["itl"], "scrapes": times}
    finally:
        for p in procs:
            bs.stop(p)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(bs.ROOT, "target")))
    p.add_argument("--vllm-rs", default=os.path.join(bs.REF, "vllm_src/vllm/vllm-rs"))
    p.add_argument("--model", default=os.path.join(bs.REF, "models/qwen3"))
    p.add_argument("--duration", type=float, default=20)
    p.add_argument("--streams", type=int, default=2000)
    p.add_argument("--rate", type=float, default=20, help="mock engine tokens per second per request")
    p.add_argument("--output-len", type=int, default=2000)
    args = p.parse_args()

    def exe(name):
        return os.path.join(args.target_dir, "release", "examples", name)

    workdir = tempfile.mkdtemp(prefix="bench-metrics-")
    results = []
    for frontend, start in [("serve", lambda: st.start_serve(args, exe, workdir, "serve")),
                            ("vllm-rs", lambda: st.start_vllm_rs(args, exe, workdir))]:
        for scrape in (False, True):
            name = f"{frontend}{' + scraper' if scrape else ''}"
            results.append(run(args, exe, workdir, name, start, scrape))
    print(f"{args.streams} streams at {args.rate:g} tok/s, {args.duration:g} s (logs in {workdir})")
    print(f"{'run':<20} {'ITL p50':>8} {'ITL p99':>8} {'scrapes':>8} {'scrape p50':>11} {'scrape max':>11}")
    for r in results:
        s = r["scrapes"]
        p50 = f"{statistics.median(s):.2f}m" if s else "-"
        mx = f"{max(s):.2f}m" if s else "-"
        print(f"{r['name']:<20} {r['itl']['p50_ms']:>7.2f}m {r['itl']['p99_ms']:>7.2f}m {len(s):>8} {p50:>11} {mx:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
