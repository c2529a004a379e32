#!/usr/bin/env python3
"""mhdb from Python beside datasketch, rensa and gaoya: the same documents, the same run.

Each library runs in its own process (so that peak RSS is its own) on the same synthetic
corpus (deterministic: documents of about 1 KB, a tenth of them near-copies of another) and
the same queries (edited copies of indexed documents), with k = 128 and threshold 0.8:

- sketch + insert of texts (docs/s and MB/s of text): mhdb signs and inserts from the texts
  in Rust (insert_many); datasketch and rensa need the character 5-gram shingles computed in
  Python first (counted: a user has to), gaoya shingles in Rust;
- query by text (per call, one call per query; and mhdb's query_many, and mhdb's calls
  shared by two Python threads);
- query by precomputed signature (per call);
- peak RSS of the process (VmHWM) and reopen time (mhdb: open the index; datasketch and
  rensa: unpickle the index saved with pickle, their way to persist; gaoya: cannot persist).

Usage: python -m tools.bench.bench_python [--docs N] [--queries Q] [--only mhdb,datasketch,...] [--rounds R]
                                    [--cpu-time] [--passes P]
Needs: the mhdb package (pip install ./python); the peers from PyPI if present
(pip install datasketch rensa gaoya); missing peers are reported as skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

K = 128
THRESHOLD = 0.8


def corpus(n: int, seed: int = 13) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    vocab = [f"{rng.choice('bcdfghklmnprstvw')}{rng.choice('aeiou')}{rng.choice('lmnrst')}{i % 97}" for i in range(20000)]
    docs: list[tuple[str, str]] = []
    for i in range(n):
        if i % 10 == 9:
            words = docs[rng.randrange(len(docs))][1].split()
            for _ in range(3):
                words[rng.randrange(len(words))] = rng.choice(vocab)
        else:
            words = [vocab[int(rng.paretovariate(1.1)) % len(vocab)] for _ in range(160)]
        docs.append((f"doc-{i}", " ".join(words)))
    return docs


def queries(docs: list[tuple[str, str]], q: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(q):
        words = rng.choice(docs)[1].split()
        words[rng.randrange(len(words))] = "edited"
        out.append(" ".join(words))
    return out


def shingles(text: str) -> list[str]:
    t = " ".join(text.lower().split())
    return list({t[i : i + 5] for i in range(max(1, len(t) - 4))})


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# The clock of the per-call figures: wall time, or with --cpu-time the calling thread's CPU
# time (steady on a loaded machine; it leaves out work done on other threads, which a single
# query does only above 8,192 candidates).
CALL_CLOCK = time.thread_time if os.environ.get("BENCH_PYTHON_CLOCK") == "thread" else time.perf_counter


# Passes over the queries per per-call figure, of which the fastest counts (every library
# alike). With more than one, passes go on until they also span PASS_SPAN_S of wall time: a
# shared machine's slow spells last a second or more, which would otherwise hold all of a
# fast library's passes (a few milliseconds each) and none of a slow one's.
PASSES = int(os.environ.get("BENCH_PYTHON_PASSES", "1"))
PASS_SPAN_S = 3.0


def per_call_us(items: list[Any], call: Callable[[Any], Any]) -> tuple[float, int]:
    best, hits, passes = float("inf"), 0, 0
    began = time.perf_counter()
    while passes < max(1, PASSES) or (PASSES > 1 and time.perf_counter() - began < PASS_SPAN_S):
        start = CALL_CLOCK()
        hits = 0
        for x in items:
            hits += len(call(x))
        best = min(best, CALL_CLOCK() - start)
        passes += 1
    return best / len(items) * 1e6, hits


def threaded_queries_us(items: list[Any], call: Callable[[Any], Any], threads: int) -> float:
    """Wall time per call when `threads` Python threads share the calls (each call
    releases the GIL, so they run in parallel)."""
    import threading

    parts = [items[i::threads] for i in range(threads)]
    workers = [threading.Thread(target=lambda part=part: [call(x) for x in part]) for part in parts]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return (time.perf_counter() - start) / len(items) * 1e6


# -- one library per process --------------------------------------------------------------


def run_mhdb(docs: list[tuple[str, str]], qs: list[str], workdir: str) -> dict[str, Any]:
    import mhdb

    path = os.path.join(workdir, "idx")
    idx = mhdb.Index.create(path, THRESHOLD, num_perm=K)
    t0, c0 = time.perf_counter(), time.process_time()
    idx.insert_many(docs, commit_every=10_000)
    insert_s, insert_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    text_us, hits = per_call_us(qs, lambda t: idx.query(t))
    threads_us = threaded_queries_us(qs, lambda t: idx.query(t), threads=2)
    t0 = time.perf_counter()
    many = list(idx.query_many(texts=qs))
    many_us = (time.perf_counter() - t0) / len(qs) * 1e6
    assert sum(map(len, many)) == hits
    sigs = list(idx.hasher.sketch_many(qs))
    sig_us, _ = per_call_us(sigs, lambda s: idx.query(signature=s))
    empty = mhdb.Index.create(os.path.join(workdir, "empty"), THRESHOLD, num_perm=K)
    overhead_us, _ = per_call_us(sigs, lambda s: empty.query(signature=s))
    idx.close()
    t0 = time.perf_counter()
    idx = mhdb.Index.open(path, read_only=True)
    idx.query(signature=sigs[0])
    reopen_ms = (time.perf_counter() - t0) * 1e3
    cli_s = None
    cli = os.environ.get("MHDB_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", "mhdb"))
    if os.path.exists(cli):
        jsonl = os.path.join(workdir, "corpus.jsonl")
        with open(jsonl, "w") as f:
            for key, text in docs:
                f.write(json.dumps({"id": key, "text": text}) + "\n")
        by_cli = os.path.join(workdir, "by-cli")
        subprocess.run([cli, "create", by_cli, "--threshold", str(THRESHOLD)], check=True, capture_output=True)
        t0 = time.perf_counter()
        subprocess.run([cli, "add", by_cli, jsonl], check=True, capture_output=True)
        cli_s = time.perf_counter() - t0
    return {
        "insert_s": insert_s,
        "insert_cpu_s": insert_cpu_s,
        "cli_add_s": cli_s,
        "query_text_us": text_us,
        "query_many_us": many_us,
        "query_text_2_threads_us": threads_us,
        "query_sig_us": sig_us,
        "query_empty_index_us": overhead_us,
        "hits": hits,
        "reopen_ms": reopen_ms,
    }


def measure_pickled(
    lsh: Any, sketch: Callable[[str], Any], qs: list[str], workdir: str, insert_s: float, insert_cpu_s: float
) -> dict[str, Any]:
    """Queries by text and by signature, then the reopen of an in-memory index persisted
    the way datasketch and rensa persist: pickled to a file, unpickled."""
    text_us, hits = per_call_us(qs, lambda t: lsh.query(sketch(t)))
    sigs = [sketch(t) for t in qs]
    sig_us, _ = per_call_us(sigs, lsh.query)
    path = os.path.join(workdir, "lsh.pickle")
    with open(path, "wb") as f:
        pickle.dump(lsh, f)
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        pickle.load(f).query(sigs[0])
    return {"insert_s": insert_s, "insert_cpu_s": insert_cpu_s, "query_text_us": text_us,
            "query_sig_us": sig_us, "hits": hits, "reopen_ms": (time.perf_counter() - t0) * 1e3}


def run_datasketch(docs: list[tuple[str, str]], qs: list[str], workdir: str) -> dict[str, Any]:
    from datasketch import MinHash, MinHashLSH

    def sketch(text: str) -> MinHash:
        m = MinHash(num_perm=K)
        m.update_batch([s.encode() for s in shingles(text)])
        return m

    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=K)
    t0, c0 = time.perf_counter(), time.process_time()
    with lsh.insertion_session() as session:
        for key, text in docs:
            session.insert(key, sketch(text))
    insert_s, insert_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    return measure_pickled(lsh, sketch, qs, workdir, insert_s, insert_cpu_s)


def run_rensa(docs: list[tuple[str, str]], qs: list[str], workdir: str) -> dict[str, Any]:
    from rensa import RMinHash, RMinHashLSH

    def sketch(text: str) -> RMinHash:
        m = RMinHash(num_perm=K, seed=42)
        m.update(shingles(text))
        return m

    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=K, num_bands=16)
    # Its bulk path: the digests of every document as one matrix, inserted as one call.
    t0, c0 = time.perf_counter(), time.process_time()
    matrix = RMinHash.digest_matrix_from_token_sets([shingles(t) for _, t in docs], K, 42)
    lsh.insert_matrix(matrix)
    insert_s, insert_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    result = measure_pickled(lsh, sketch, qs, workdir, insert_s, insert_cpu_s)
    # Its batched query, as mhdb's query_many: sketches made in one call, queried in one.
    t0 = time.perf_counter()
    lsh.query_all(RMinHash.from_token_sets([shingles(t) for t in qs], K, 42))
    result["query_many_us"] = (time.perf_counter() - t0) / len(qs) * 1e6
    return result


def run_gaoya(docs: list[tuple[str, str]], qs: list[str], workdir: str) -> dict[str, Any]:
    from gaoya.minhash import MinHashStringIndex

    index = MinHashStringIndex(hash_size=32, jaccard_threshold=THRESHOLD, num_bands=16, band_size=8,
                               analyzer="char", lowercase=True, ngram_range=(5, 5))
    t0, c0 = time.perf_counter(), time.process_time()
    index.par_bulk_insert_docs(list(range(len(docs))), [t for _, t in docs])
    insert_s, insert_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    text_us, hits = per_call_us(qs, index.query)
    return {"insert_s": insert_s, "insert_cpu_s": insert_cpu_s, "query_text_us": text_us,
            "query_sig_us": None, "hits": hits, "reopen_ms": None}


RUNNERS = {"mhdb": run_mhdb, "datasketch": run_datasketch, "rensa": run_rensa, "gaoya": run_gaoya}


def child(lib: str, n: int, q: int) -> None:
    docs = corpus(n)
    qs = queries(docs, q)
    with tempfile.TemporaryDirectory() as workdir:
        try:
            result = RUNNERS[lib](docs, qs, workdir)
        except ImportError as e:
            result = {"skipped": f"{e}"}
    result["peak_rss_mib"] = peak_rss_mib()
    print(json.dumps(result))


def fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}"


def median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def span(values: list[float], digits: int = 1) -> str:
    """min-max of a measurement over the rounds (one value if there was one round)."""
    lo, hi = min(values), max(values)
    return fmt(lo, digits) if fmt(lo, digits) == fmt(hi, digits) else f"{fmt(lo, digits)}-{fmt(hi, digits)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=2_000)
    ap.add_argument("--only", default="mhdb,datasketch,rensa,gaoya")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every library this many times, in turn (on a shared machine the load drifts: "
                         "the table shows the median of each measurement, the ratios their range over rounds)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time the per-call figures (query by text / by signature) in the calling thread's CPU "
                         "time instead of wall time: steadier on a loaded machine")
    ap.add_argument("--passes", type=int, default=1,
                    help="time each per-call figure over at least this many passes of the queries, spanning at "
                         "least 3 s when more than one, and keep the fastest (every library alike): steadier "
                         "on a shared machine")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cpu_time:
        os.environ["BENCH_PYTHON_CLOCK"] = "thread"
    os.environ["BENCH_PYTHON_PASSES"] = str(args.passes)
    if args.child:
        child(args.child, args.docs, args.queries)
        return
    docs = corpus(args.docs)
    mb = sum(len(t.encode()) for _, t in docs) / 1e6
    print(f"{args.docs:,} documents ({mb:.1f} MB, {mb * 1e6 / args.docs:.0f} B each), {args.queries:,} queries, "
          f"k = {K}, threshold {THRESHOLD}, {os.cpu_count()} CPUs, {args.rounds} round(s)"
          + (f"; per-call figures: the fastest of {args.passes}+ passes over 3+ s" if args.passes > 1 else "")
          + ("; per-call figures in thread CPU time (the 2-thread and query_many figures stay wall "
             "time, so their speed-ups and ratios mix clocks)" if args.cpu_time else ""))
    rounds: list[dict[str, Any]] = []
    for r in range(max(1, args.rounds)):
        print(f"round {r + 1}: load average {' '.join(open('/proc/loadavg').read().split()[:3])}", file=sys.stderr)
        results = {}
        for lib in args.only.split(","):
            out = subprocess.run([sys.executable, __file__, "--child", lib, "--docs", str(args.docs),
                                  "--queries", str(args.queries)], capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{lib}: failed\n{out.stderr}", file=sys.stderr)
                continue
            results[lib] = json.loads(out.stdout.strip().splitlines()[-1])
        rounds.append(results)

    def each(lib: str, field: str) -> list[float]:
        return [r[lib][field] for r in rounds if lib in r and r[lib].get(field) is not None]

    def med(lib: str, field: str) -> Any:
        values = each(lib, field)
        return median(values) if values else None

    print()
    print("| library | sketch + insert, docs/s | MB/s | insert CPU s (user+sys, every thread) | query by text, µs/call | query by signature, µs/call | hits | peak RSS, MiB | reopen, ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    libs = [lib for lib in args.only.split(",") if any(lib in r for r in rounds)]
    for lib in libs:
        first = next(r[lib] for r in rounds if lib in r)
        if "skipped" in first:
            print(f"| {lib} | skipped: {first['skipped']} | | | | | | | |")
            continue
        insert_s = med(lib, "insert_s")
        print(f"| {lib} | {fmt(args.docs / insert_s, 0)} | {fmt(mb / insert_s)} | {fmt(med(lib, 'insert_cpu_s'), 2)} | "
              f"{fmt(med(lib, 'query_text_us'))} | "
              f"{fmt(med(lib, 'query_sig_us'))} | {fmt(first['hits'])} | {fmt(med(lib, 'peak_rss_mib'))} | "
              f"{fmt(med(lib, 'reopen_ms'), 2)} |")
    mhdb_ok = "mhdb" in libs and "skipped" not in rounds[0].get("mhdb", {"skipped": ""})
    if mhdb_ok:
        if each("mhdb", "cli_add_s"):
            cli_s = med("mhdb", "cli_add_s")
            share = [r["mhdb"]["cli_add_s"] / r["mhdb"]["insert_s"] for r in rounds if r.get("mhdb", {}).get("cli_add_s")]
            print(f"\n`mhdb add` of the same documents (JSON Lines, same machine): {args.docs / cli_s:,.0f} docs/s, "
                  f"{mb / cli_s:.1f} MB/s (includes process start and JSON parsing); insert_many reaches "
                  f"{span([100 * x for x in share], 0)}% of its rate")
        print(f"mhdb query by text from 2 Python threads: {med('mhdb', 'query_text_2_threads_us'):.1f} µs/query "
              f"(speed-up over one thread: {span([r['mhdb']['query_text_us'] / r['mhdb']['query_text_2_threads_us'] for r in rounds if 'mhdb' in r], 2)}×)")
        print(f"mhdb query_many (batched, both cores): {med('mhdb', 'query_many_us'):.1f} µs/query; "
              f"a query by signature on an empty index (the call's fixed cost): {med('mhdb', 'query_empty_index_us'):.2f} µs")
        # Ratios within each round (the libraries ran one after another, under the same load).
        for peer in libs:
            if peer == "mhdb" or "skipped" in rounds[0].get(peer, {"skipped": ""}):
                continue
            pairs = [(r["mhdb"], r[peer]) for r in rounds if "mhdb" in r and peer in r]
            insert = [p["insert_s"] / m["insert_s"] for m, p in pairs]
            text = [p["query_text_us"] / m["query_text_us"] for m, p in pairs]
            # Batched against the peer's batched query where it has one.
            many = [p.get("query_many_us", p["query_text_us"]) / m["query_many_us"] for m, p in pairs]
            line = f"mhdb vs {peer}: sketch + insert {span(insert)}×, query by text {span(text)}× (query_many {span(many)}×)"
            if all(p.get("query_sig_us") for _, p in pairs):
                line += f", query by signature {span([p['query_sig_us'] / m['query_sig_us'] for m, p in pairs])}×"
            print(line)
    print("\n" + json.dumps(rounds))


if __name__ == "__main__":
    main()
