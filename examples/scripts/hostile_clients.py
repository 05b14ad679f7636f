#!/usr/bin/env python3
"""`serve` under hostile clients: each attack of issue 19, loopback only, bounded in count
and time, with the server in a separate process under an address-space cap.

For every scenario the suite checks the server's answers, that the process is still
alive, that a well-behaved client (a small chat every 100 ms, running throughout) keeps
being served within a latency bound, and, where the attack targets memory, that the
server's RSS grows by less than the documented budget (docs/limits.md). A regression
that makes the server allocate without bound hits the address-space cap and kills it,
which fails the suite instead of the machine.

    python3 examples/scripts/hostile_clients.py --serve target/debug/examples/serve [--quick]

`--quick` (what `.ci/run` runs) uses smaller counts; the bounds hold for both. Exits
non-zero on any failure.
"""

import argparse
import http.client
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

MAX_MODEL_LEN = 4096
MAX_CONNECTIONS = 256
KEEP_ALIVE_S = 2
# The address-space cap: generous for a debug build's reservations (thread stacks,
# allocator arenas), far below what an unbounded allocation reaches.
ADDRESS_SPACE_GB = 8
# A small chat's latency while an attack runs (debug build, two shared cores).
PROBE_P50_BOUND_S = 1.0
# ... and its slowest request: an attack that holds a worker thread (a render inline
# on the async runtime) shows here as a stall of the attack's length.
PROBE_MAX_BOUND_S = 2.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The serve binary with its embedded mock engine, under RLIMIT_AS."""

    def __init__(self, binary: str):
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        cap = ADDRESS_SPACE_GB << 30

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--served-model-name", "qwen3",
             "--max-model-len", str(MAX_MODEL_LEN), "--trust-request-chat-template",
             "--max-connections", str(MAX_CONNECTIONS),
             "--http-timeout-keep-alive", str(KEEP_ALIVE_S),
             "--mock-tokens-per-second", "50", "--disable-log-stats"],
            stdout=subprocess.DEVNULL, stderr=self.log, preexec_fn=limit,
        )
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if request(self.port, "GET", "/health")[0] == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        raise RuntimeError("serve did not start: " + self.errors())

    def errors(self) -> str:
        """The end of what the server wrote to stderr."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def request(port: int, method: str, path: str, body=None, headers=None, timeout=60):
    """One request on a new connection: (status, body text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        hdrs = {"Content-Type": "application/json"} if data is not None else {}
        hdrs.update(headers or {})
        conn.request(method, path, data, hdrs)
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()


def chat(content, **extra) -> dict:
    return {"model": "qwen3", "messages": [{"role": "user", "content": content}],
            "max_tokens": 4, **extra}


class Prober:
    """A well-behaved client: a small chat every 100 ms; latencies per scenario."""

    def __init__(self, port: int):
        self.port = port
        self.samples: list = []
        self.failures = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopped.is_set():
            start = time.perf_counter()
            try:
                status, _ = request(self.port, "POST", "/v1/chat/completions", chat("Hi"))
                if status != 200:
                    self.failures += 1
            except OSError:
                self.failures += 1
            self.samples.append(time.perf_counter() - start)
            self.stopped.wait(0.1)

    def take(self) -> tuple:
        samples, self.samples = self.samples, []
        failures, self.failures = self.failures, 0
        return samples, failures

    def stop(self):
        self.stopped.set()
        self.thread.join()


def parallel(jobs):
    """Runs the callables at once; returns their results in order."""
    results = [None] * len(jobs)

    def run(i, job):
        try:
            results[i] = job()
        except Exception as e:  # noqa: BLE001 - reported as the job's result
            results[i] = e

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def words(n_bytes: int, seed: int) -> str:
    rng = random.Random(seed)
    vocab = ["river", "stone", "quiet", "lantern", "orbit", "maple", "copper", "vivid"]
    out, size = [], 0
    while size < n_bytes:
        w = rng.choice(vocab) + str(rng.randrange(10 ** 6))
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


# The scenarios: each returns a list of problems (empty when it held).


def fuel_templates(server, quick):
    """Request templates that burn their whole fuel budget, beside normal traffic."""
    burn = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    body = chat("x", chat_template=burn)
    results = parallel([lambda: request(server.port, "POST", "/v1/chat/completions", body)] * 2)
    return [f"fuel-exhausting template answered {r}" for r in results
            if isinstance(r, Exception) or r[0] != 400]


def long_prompts(server, quick):
    """Four clients posting 1.9 MB prompts (refused for length after rendering)."""
    jobs = [lambda i=i: request(server.port, "POST", "/v1/chat/completions",
                                chat(words(1_900_000, i))) for i in range(4)]
    return [f"1.9 MB prompt answered {r if isinstance(r, Exception) else r[0]}"
            for r in parallel(jobs) if isinstance(r, Exception) or r[0] != 400]


def idle_connections(server, quick):
    """More idle connections than the cap; a normal client is still served."""
    count = 400 if quick else 1500
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 256)), hard))
    socks = []
    try:
        for _ in range(count):
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        # Past the cap, connections are closed at once; the others once idle for the
        # keep-alive time. Then the server has room for new clients again.
        time.sleep(KEEP_ALIVE_S + 1.5)
        still_open = 0
        for s in socks:
            s.setblocking(False)
            try:
                still_open += s.recv(1) != b""
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
        status, _ = request(server.port, "POST", "/v1/chat/completions", chat("Hi"), timeout=10)
    finally:
        for s in socks:
            s.close()
    problems = [] if status == 200 else [f"a client after {count} idle connections got {status}"]
    if still_open:
        problems.append(f"{still_open} of {count} idle connections still open after "
                        f"{KEEP_ALIVE_S + 1.5} s")
    return problems


def slowloris(server, quick):
    """A header sent a byte per second is cut off after the keep-alive timeout."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=KEEP_ALIVE_S + 10)
    start = time.time()
    try:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        while time.time() - start < KEEP_ALIVE_S + 8:
            try:
                s.sendall(b"X")
                s.settimeout(1)
                if s.recv(1024) == b"":
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        closed_after = time.time() - start
    finally:
        s.close()
    if closed_after > KEEP_ALIVE_S + 5:
        return [f"slowloris connection still open after {closed_after:.1f} s"]
    return []


def huge_headers(server, quick):
    """A 1 MiB header: refused, the connection closed, nothing kept."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
        except OSError:
            return []  # closed while we were still sending: refused
        answer = s.recv(4096)
    except OSError:
        return []
    finally:
        s.close()
    status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/1.1") else b""
    return [] if status in (b"", b"431", b"400") else [f"1 MiB header answered {answer[:40]!r}"]


def pipelining(server, quick):
    """Twenty requests in one write get twenty answers, in order."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 20)
        data, deadline = b"", time.time() + 10
        while data.count(b"HTTP/1.1 200") < 20 and time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    got = data.count(b"HTTP/1.1 200")
    return [] if got == 20 else [f"20 pipelined requests got {got} answers"]


def malformed_bodies(server, quick):
    """Malformed and oversized bodies: 4xx answers, never a crash or a 5xx."""
    rng = random.Random(7)
    # Malformed for every endpoint.
    bodies = [
        bytes(rng.randrange(256) for _ in range(4096)),
        b'{"model": "qwen3", "messages": [{"role": "user", "content": "hi"',
        b"[" * 100_000,
        json.dumps(chat("x" * 10)).encode().replace(b'"messages"', b'"messages": 5, "m"'),
        json.dumps({"model": "qwen3", "messages": [{"role": "user", "content": {"a": 1}}]}).encode(),
        json.dumps({"model": "qwen3", "prompt": [[-1, 2**40]]}).encode(),
        b'{"model": "qwen3", "messages": [' + b'{"role":"user","content":"a"},' * 50_000 + b'{}]}',
    ]
    # Bad sampling values (fields /tokenize does not have, so only for generation).
    sampling = [
        json.dumps(chat("hi", max_tokens=-5)).encode(),
        json.dumps(chat("hi", temperature="hot")).encode(),
        json.dumps(chat("hi", n=10**12)).encode(),
        json.dumps(chat("hi", logprobs=True, top_logprobs=10**9)).encode(),
    ]
    problems = []
    for path in ("/v1/chat/completions", "/v1/completions", "/inference/v1/generate", "/tokenize"):
        for body in bodies + (sampling if path != "/tokenize" else []):
            status, text = request(server.port, "POST", path, body)
            if not 400 <= status < 500:
                problems.append(f"{path} {body[:40]!r}… answered {status}: {text[:200]}")
    return problems


def stop_strings(server, quick):
    """Streams with distinct 1 MiB stop strings: memory ~ the stop strings, not automata."""
    count = 8 if quick else 30
    before = server.rss_mb()
    jobs = [lambda i=i: request(server.port, "POST", "/v1/chat/completions",
                                chat("Hi", stop=[words(1 << 20, 100 + i)], max_tokens=20,
                                     stream=True)) for i in range(count)]
    results = parallel(jobs)
    grown = server.rss_mb() - before
    budget = 40 + 3 * count  # the bodies themselves, and the allocator's slack
    problems = [f"stream with a 1 MiB stop string answered {r}" for r in results
                if isinstance(r, Exception) or r[0] != 200]
    if grown > budget:
        problems.append(f"RSS grew {grown:.0f} MB for {count} 1 MiB stop strings (budget {budget})")
    return problems


def message_cache(server, quick):
    """Distinct 0.9 MB system messages (cacheable size, refused for length): the message
    cache stays within its 64 MiB budget."""
    count = 40 if quick else 150
    before = server.rss_mb()
    for i in range(count):
        body = {"model": "qwen3", "max_tokens": 4, "messages": [
            {"role": "system", "content": words(900_000, 1000 + i)},
            {"role": "user", "content": "Hi"}]}
        status, text = request(server.port, "POST", "/v1/chat/completions", body)
        if status != 400:
            return [f"0.9 MB system message answered {status}: {text[:200]}"]
    grown = server.rss_mb() - before
    budget = 64 * 2 + 60  # the cache's bytes counted twice, plus allocator slack
    return [] if grown <= budget else [
        f"RSS grew {grown:.0f} MB after {count} distinct 0.9 MB messages (budget {budget})"]


def template_memory(server, quick):
    """Request templates whose single operations would allocate gigabytes."""
    templates = [
        "{{ '%1000000000s'|format('a') }}",
        "{{ '{:>1000000000}'.format('a') }}",
        "{{ messages|tojson(indent=1000000000) }}",
        "{{ 'a\nb'|indent(1000000000) }}",
        "{{ 'ab'|center(1000000000) }}",
        "{% for i in range(100000000) %}{{ 'x' * 1000 }}{% endfor %}",
        "{{ range(100000000)|join('-' * 1000) }}",
        # minijinja's own operators (checked in request templates since issue 19).
        "{% set ns = namespace(x=[1]) %}{% for i in range(40) %}"
        "{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|length }}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
        "{% set n = 100000000 %}{{ (['ab'] * n) ~ '' }}",
        "{{ (['ab'] * 100000000) ~ '' }}",
        "{% set ns = namespace(l=[], s='x' * 10000000) %}{% for i in range(1000) %}"
        "{% set ns.l = ns.l + [ns.s ~ i] %}{% endfor %}{{ ns.l|length }}",
    ]
    problems = []
    for template in templates:
        status, text = request(server.port, "POST", "/v1/chat/completions",
                               chat("Hi", chat_template=template))
        if status != 400:
            problems.append(f"template {template!r} answered {status}: {text[:200]}")
        if not server.alive():
            return problems + [f"the server died on template {template!r}"]
    return problems


def vocabulary(server, quick):
    """Token ids outside the vocabulary never reach the engine."""
    cases = [
        ("/v1/completions", {"model": "qwen3", "prompt": [1, 10**7], "max_tokens": 2}),
        ("/inference/v1/generate", {"token_ids": [1, 10**7], "sampling_params": {"max_tokens": 2}}),
        ("/v1/chat/completions", chat("Hi", logit_bias={"10000000": 5})),
        ("/v1/completions", {"model": "qwen3", "prompt": "Hi", "stop_token_ids": [10**7]}),
        ("/v1/completions", {"model": "qwen3", "prompt": "Hi", "allowed_token_ids": []}),
        ("/v1/chat/completions", chat("Hi", structured_outputs={"choice": []})),
    ]
    problems = []
    for path, body in cases:
        status, text = request(server.port, "POST", path, body)
        if status != 400:
            problems.append(f"{path} {json.dumps(body)[:80]} answered {status}: {text[:200]}")
    return problems


def content_type(server, quick):
    """A JSON body sent as text/plain (no CORS preflight) is refused."""
    status, _ = request(server.port, "POST", "/v1/chat/completions", chat("Hi"),
                        headers={"Content-Type": "text/plain"})
    return [] if status == 400 else [f"text/plain body answered {status}"]


def disconnect_storm(server, quick):
    """Streams opened and dropped at once: every engine request is aborted."""
    count = 50 if quick else 200
    socks = []
    body = json.dumps(chat("Hi", max_tokens=2000, stream=True)).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        s.sendall(head + body)
        socks.append(s)
    for s in socks:
        s.recv(1024)  # the stream started
    for s in socks:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()  # RST
    deadline = time.time() + 10
    load = None
    while time.time() < deadline:
        load = json.loads(request(server.port, "GET", "/load")[1])["server_load"]
        if load == 0:
            return []
        time.sleep(0.2)
    return [f"server_load still {load} 10 s after {count} clients disconnected"]


# While more idle connections than the cap are open, new clients are refused too (as
# with vllm-rs's cap): what must hold is that they are served again once the idle ones
# are closed.
idle_connections.probe_may_fail = True

SCENARIOS = [fuel_templates, long_prompts, idle_connections, slowloris, huge_headers,
             pipelining, malformed_bodies, stop_strings, message_cache, template_memory,
             vocabulary, content_type, disconnect_storm]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", required=True, help="the serve example binary")
    parser.add_argument("--quick", action="store_true", help="smaller counts (CI)")
    parser.add_argument("--only", help="comma-separated scenario names")
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not args.only or s.__name__ in args.only.split(",")]
    server = Server(args.serve)
    prober = Prober(server.port)
    failed = 0
    try:
        prober.take()
        for scenario in chosen:
            start = time.time()
            try:
                problems = scenario(server, args.quick)
            except Exception as e:  # noqa: BLE001 - a scenario that breaks is a failure
                problems = [f"{type(e).__name__}: {e}"]
            # At least three of the well-behaved client's requests per scenario (the
            # quick attacks are over before the first one comes back).
            deadline = time.time() + 10
            while len(prober.samples) < 3 and time.time() < deadline:
                time.sleep(0.05)
            samples, failures = prober.take()
            p50 = statistics.median(samples) if samples else float("inf")
            if not server.alive():
                problems.append("the server is no longer running")
            if failures and not getattr(scenario, "probe_may_fail", False):
                problems.append(f"{failures} of the well-behaved client's requests failed")
            worst = max(samples, default=float("inf"))
            if p50 > PROBE_P50_BOUND_S:
                problems.append(f"the well-behaved client's p50 was {p50 * 1000:.0f} ms")
            if worst > PROBE_MAX_BOUND_S:
                problems.append(f"the well-behaved client waited {worst * 1000:.0f} ms")
            status = "PASS" if not problems else "FAIL"
            print(f"{status}: {scenario.__name__} ({time.time() - start:.1f} s, probe p50 "
                  f"{p50 * 1000:.0f} ms, max {worst * 1000:.0f} ms over {len(samples)}, "
                  f"RSS {server.rss_mb():.0f} MB)", flush=True)
            for problem in problems:
                print(f"    {problem}")
            failed += bool(problems)
            if not server.alive():
                print(server.errors())
                break
    finally:
        prober.stop()
        server.stop()
    print(f"{failed} failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
