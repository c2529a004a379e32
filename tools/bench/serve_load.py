#!/usr/bin/env python3
"""`mhdb serve` under load on loopback, beside the library in process on the same queries.

Builds an index of --docs synthetic documents (60 words each from a 20,000-word vocabulary,
deterministic) with `mhdb add`, and --queries query texts (half of them edited copies of stored
documents, half new). Then, each phase bounded by its count and by --max-seconds:

- in process: `cargo bench --bench query_latency` (benches/query_latency.rs) answers the
  queries with 1, 8 and 64 threads, each query timed alone;
- `GET /health` (the transport floor: one HTTP round trip, no database call) and `POST /query`
  (text) at 1 client, in ten alternating rounds (medians of the rounds), so that both see the
  same moments of a shared machine;
- `POST /query` at 8 and 64 clients, each a thread with its own keep-alive connection,
  sending one query at a time;
- `POST /query_batch` at 1 and 8 clients, batches of 100 queries.

Prints a Markdown table: QPS, p50 and p99 latency, errors and 503s (counted, not retried),
and the server's overhead at p50 against the library. The client is Python (one interpreter
lock): at 8 and 64 clients it competes with the server for the same cores, so those QPS are
a floor.

Usage: python3 -m tools.bench.serve_load [--docs 200000] [--queries 2000] [--max-seconds 60]
       [--dir /tmp/serve_load] [--mhdb target/release/mhdb]
"""

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import threading
import time


def corpus(n: int, seed: int = 7) -> list:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20000)]
    return [" ".join(rng.choice(vocab) for _ in range(60)) for _ in range(n)]


def queries(docs: list, n: int, seed: int = 11) -> list:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = rng.choice(docs).split() if i % 2 == 0 else [f"q{i}x{j}" for j in range(60)]
        words[rng.randrange(len(words))] = f"edit{i}"
        out.append(" ".join(words))
    return out


def build(args) -> tuple:
    os.makedirs(args.dir, exist_ok=True)
    db = os.path.join(args.dir, f"idx-{args.docs}")
    docs = corpus(args.docs)
    if not os.path.exists(db):
        data = os.path.join(args.dir, "corpus.jsonl")
        with open(data, "w") as f:
            for i, t in enumerate(docs):
                f.write(json.dumps({"id": f"doc-{i}", "text": t}) + "\n")
        subprocess.run([args.mhdb, "create", db, "--threshold", "0.8"], check=True)
        subprocess.run([args.mhdb, "add", db, data, "--commit-every", "100000"], check=True)
        subprocess.run([args.mhdb, "compact", db], check=True)
    qfile = os.path.join(args.dir, "queries.jsonl")
    qs = queries(docs, args.queries)
    with open(qfile, "w") as f:
        for q in qs:
            f.write(json.dumps({"text": q}) + "\n")
    return db, qfile, qs


def in_process(db: str, qfile: str) -> dict:
    out = subprocess.run(
        ["cargo", "bench", "--bench", "query_latency", "--", "--db", db, "--queries", qfile],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["clients"]: r for r in rows}


def load(addr: str, method: str, path: str, bodies: list, clients: int, max_s: float) -> dict:
    """Each client sends its share of `bodies` one at a time on its own connection."""
    host, port = addr.rsplit(":", 1)
    lat, errors, overload = [], [0], [0]
    lock = threading.Lock()
    deadline = time.monotonic() + max_s

    def client(share):
        conn = http.client.HTTPConnection(host, int(port))
        mine = []
        for body in share:
            if time.monotonic() > deadline:
                break
            t0 = time.perf_counter()
            conn.request(method, path, body=body)
            r = conn.getresponse()
            r.read()
            mine.append((time.perf_counter() - t0) * 1e6)
            if r.status == 503:
                with lock:
                    overload[0] += 1
            elif r.status != 200:
                with lock:
                    errors[0] += 1
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client, args=(bodies[c::clients],)) for c in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    lat.sort()
    return {
        "requests": len(lat),
        "qps": len(lat) / wall,
        "p50_us": statistics.median(lat),
        "p99_us": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "errors": errors[0],
        "503": overload[0],
    }


def paired(addr: str, bodies: list, max_s: float, rounds: int = 10) -> tuple:
    """`/health` and `/query` at 1 client in alternating rounds, so that both see the same
    moments of a shared machine: their difference is the server's work for a query."""
    health, query = [], []
    size = max(1, len(bodies) // rounds)
    for r in range(rounds):
        share = bodies[r * size : (r + 1) * size]
        health.append(load(addr, "GET", "/health", [None] * len(share), 1, max_s / rounds / 2))
        query.append(load(addr, "POST", "/query", share, 1, max_s / rounds / 2))
    return merge(health), merge(query)


def merge(parts: list) -> dict:
    """One figure from rounds: summed counts, median of the rounds' QPS and percentiles."""
    out = {k: sum(p[k] for p in parts) for k in ("requests", "errors", "503")}
    for k in ("qps", "p50_us", "p99_us"):
        out[k] = statistics.median(p[k] for p in parts)
    return out


def start_server(mhdb: str, db: str) -> tuple:
    p = subprocess.Popen(
        [mhdb, "serve", db, "--listen", "127.0.0.1:0", "--max-concurrent", "256"],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = p.stdout.readline().strip()
    return p, line.removeprefix("listening on ")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--dir", default="/tmp/serve_load")
    ap.add_argument("--mhdb", default="target/release/mhdb")
    args = ap.parse_args()
    db, qfile, qs = build(args)
    lib = in_process(db, qfile)
    server, addr = start_server(args.mhdb, db)
    try:
        bodies = [json.dumps({"text": q}) for q in qs]
        health, one = paired(addr, bodies, args.max_seconds)
        rows = [("/health", 1, health, None), ("/query", 1, one, lib.get(1))]
        for c in (8, 64):
            rows.append(
                ("/query", c, load(addr, "POST", "/query", bodies, c, args.max_seconds), lib.get(c))
            )
        batches = ["\n".join(bodies[i : i + 100]) for i in range(0, len(bodies), 100)]
        for c in (1, 8):
            r = load(addr, "POST", "/query_batch", batches, c, args.max_seconds)
            r["qps"] *= 100  # queries, not requests
            rows.append(("/query_batch (100 per request)", c, r, None))
    finally:
        server.terminate()
        server.wait()
    print(f"{args.docs} documents, {len(qs)} queries (text), loopback\n")
    print(
        "| endpoint | clients | requests | QPS | p50 µs | p99 µs | errors | 503s | library QPS | library p50 µs | library p99 µs |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, c, r, lib_row in rows:
        lq = "– | – | –"
        if lib_row:
            lq = f"{lib_row['qps']:.0f} | {lib_row['p50_us']:.0f} | {lib_row['p99_us']:.0f}"
        print(
            f"| {name} | {c} | {r['requests']} | {r['qps']:.0f} | {r['p50_us']:.0f} | {r['p99_us']:.0f} | {r['errors']} | {r['503']} | {lq} |"
        )
    one, floor = rows[1], rows[0][2]["p50_us"]
    over = one[2]["p50_us"] - one[3]["p50_us"]
    print(
        f"\n/query at 1 client, p50: {over:.0f} µs over the library; the /health round trip "
        f"(client and transport) is {floor:.0f} µs of it, leaving {over - floor:.0f} µs in the server"
    )


if __name__ == "__main__":
    main()
