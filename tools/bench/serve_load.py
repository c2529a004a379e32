#!/usr/bin/env python3
"""`mhdb serve` under load on loopback, beside the library in process on the same queries.

Builds an index of --docs synthetic documents (60 words each from a 20,000-word vocabulary,
deterministic) with `mhdb add`, and --queries query texts (half of them edited copies of stored
documents, half new). Then, each phase bounded by its count and by --max-seconds:

- in process: `cargo bench --bench query_latency` (benches/query_latency.rs) answers the
  queries with 1, 8 and 64 threads, each query timed alone;
- `GET /health` (the transport floor: one HTTP round trip, no database call) and `POST /query`
  (text) at 1 client, in ten alternating rounds (medians of the rounds), so that both see the
  same moments of a shared machine; with --baseline OTHER_MHDB, a second server run by that
  binary takes its turn in every round too (old against new, on the same moments);
- `POST /query` at 8 and 64 clients, each a thread with its own keep-alive connection,
  sending one query at a time;
- `POST /query_batch` at 1 and 8 clients, batches of 100 queries.

Prints a Markdown table: QPS, p50 and p99 latency, errors and 503s (counted, not retried),
and the server's overhead at p50 against the library, two ways: from the client (the `/query`
round trip less the `/health` one and the library's in-process time), and from the server's
own `Server-Timing` header (each answer's time in the server less its time in the library,
which the noise of a Python client on the same cores does not reach). The client is Python (one interpreter
lock): at 8 and 64 clients it competes with the server for the same cores, so those QPS are
a floor.

Usage: python3 -m tools.bench.serve_load [--docs 200000] [--queries 2000] [--max-seconds 60]
       [--dir /tmp/serve_load] [--mhdb target/release/mhdb] [--baseline OLD_MHDB]
       [--only-paired] [--in-process-p50 US]
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
    lat, errors, overload, served = [], [0], [0], []
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
            timing = server_timing(r.getheader("Server-Timing"))
            if timing:
                with lock:
                    served.append(timing)
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
        # The server's own time per answer (µs), and that time less the library's.
        "server_us": median_or_none([t.get("total") for t in served]),
        "lib_us": median_or_none([t.get("lib") for t in served]),
        "serving_us": median_or_none(
            [t["total"] - t["lib"] for t in served if "lib" in t and "total" in t]
        ),
    }


def server_timing(header) -> dict:
    """`lib;dur=0.012, total;dur=0.020` as {"lib": 12.0, "total": 20.0} in µs ({} if absent)."""
    out = {}
    for part in (header or "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if dur:
            out[name] = float(dur) * 1e3
    return out


def median_or_none(xs: list):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def paired(addrs: list, bodies: list, max_s: float, rounds: int = 10) -> list:
    """`/health` and `/query` at 1 client in alternating rounds, on each server of `addrs` in
    turn, so that all see the same moments of a shared machine: the difference of `/query` and
    `/health` is a server's work for a query. One (health, query) pair per server."""
    runs = [([], []) for _ in addrs]
    size = max(1, len(bodies) // rounds)
    slot = max_s / rounds / 2 / len(addrs)
    for r in range(rounds):
        share = bodies[r * size : (r + 1) * size]
        for addr, (health, query) in zip(addrs, runs):
            health.append(load(addr, "GET", "/health", [None] * len(share), 1, slot))
            query.append(load(addr, "POST", "/query", share, 1, slot))
    return [(merge(h), merge(q)) for h, q in runs]


def merge(parts: list) -> dict:
    """One figure from rounds: summed counts, median of the rounds' QPS and percentiles."""
    out = {k: sum(p[k] for p in parts) for k in ("requests", "errors", "503")}
    for k in ("qps", "p50_us", "p99_us", "server_us", "lib_us", "serving_us"):
        out[k] = median_or_none([p[k] for p in parts])
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
    ap.add_argument("--baseline", help="another mhdb binary, served beside in the paired rounds")
    ap.add_argument("--only-paired", action="store_true", help="only the 1-client rounds")
    ap.add_argument(
        "--in-process-p50",
        type=float,
        help="the library's p50 at 1 thread in µs, instead of running cargo bench",
    )
    args = ap.parse_args()
    db, qfile, qs = build(args)
    if args.in_process_p50 is not None:
        lib = {1: {"qps": 1e6 / args.in_process_p50, "p50_us": args.in_process_p50, "p99_us": 0}}
    else:
        lib = in_process(db, qfile)
    servers = [start_server(args.mhdb, db)]
    if args.baseline:
        servers.append(start_server(args.baseline, db))
    try:
        bodies = [json.dumps({"text": q}) for q in qs]
        pairs = paired([addr for _, addr in servers], bodies, args.max_seconds)
        health, one = pairs[0]
        rows = [("/health", 1, health, None), ("/query", 1, one, lib.get(1))]
        if not args.only_paired:
            rows += loaded(servers[0][1], bodies, lib, args.max_seconds)
    finally:
        for server, _ in servers:
            server.terminate()
            server.wait()
    print(f"{args.docs} documents, {len(qs)} queries (text), loopback\n")
    table(rows)
    overhead(args.mhdb, pairs[0], lib[1])
    if args.baseline:
        overhead(args.baseline, pairs[1], lib[1])


def loaded(addr: str, bodies: list, lib: dict, max_s: float) -> list:
    """The rows at 8 and 64 clients, and of `/query_batch`."""
    rows = []
    for c in (8, 64):
        rows.append(("/query", c, load(addr, "POST", "/query", bodies, c, max_s), lib.get(c)))
    batches = ["\n".join(bodies[i : i + 100]) for i in range(0, len(bodies), 100)]
    for c in (1, 8):
        r = load(addr, "POST", "/query_batch", batches, c, max_s)
        r["qps"] *= 100  # queries, not requests
        rows.append(("/query_batch (100 per request)", c, r, None))
    return rows


def table(rows: list) -> None:
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


def overhead(binary: str, pair: tuple, lib_row: dict) -> None:
    """The server's cost per `/query` at 1 client, p50: from the client and from the server."""
    health, one = pair
    over = one["p50_us"] - lib_row["p50_us"]
    floor = health["p50_us"]
    print(
        f"\n{binary}: /query at 1 client, p50 {one['p50_us']:.0f} µs: {over:.0f} µs over the "
        f"library; the /health round trip (client and transport) is {floor:.0f} µs of it, "
        f"leaving {over - floor:.0f} µs in the server"
    )
    if one["serving_us"] is not None:
        print(
            f"{binary}: Server-Timing, p50 per /query: {one['server_us']:.1f} µs in the server, "
            f"{one['lib_us']:.1f} µs in the library, "
            f"and {one['serving_us']:.1f} µs serving it, the difference taken per answer "
            f"(/health: {health['server_us']:.1f} µs in the server)"
        )


if __name__ == "__main__":
    main()
