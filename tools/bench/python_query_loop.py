#!/usr/bin/env python3
"""One Python query loop, timed steadily: the best of N passes over the same queries.

Builds the index of tools/bench/bench_python.py (its corpus and queries, k = 128, threshold 0.8,
insert_many with commit_every=10,000) in a temporary directory, then runs `idx.query(text)`
(`text`), `idx.query(signature=...)` (`sig`), the same on an empty index (`empty`: the fixed
cost of a call) or `idx.hasher.sketch(text)` (`sketch`) over the 2,000 queries PASSES times and prints the fastest pass per call, in the calling thread's CPU
time. On a noisy machine the best of many passes moves far less than one pass: two builds
can then be compared by alternating two virtualenvs.

Usage: python -m tools.bench.python_query_loop [text|sig|empty|sketch] [PASSES]
"""

import os
import sys
import tempfile
import time

import mhdb

from . import bench_python as bp


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "text"
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    docs = bp.corpus(20000)
    qs = bp.queries(docs, 2000)
    with tempfile.TemporaryDirectory() as d:
        idx = mhdb.Index.create(os.path.join(d, "idx"), 0.8, num_perm=128)
        idx.insert_many(docs, commit_every=10_000)
        sigs = list(idx.hasher.sketch_many(qs))
        empty = mhdb.Index.create(os.path.join(d, "empty"), 0.8, num_perm=128)
        calls = {
            "text": lambda: [idx.query(q) for q in qs],
            "sig": lambda: [idx.query(signature=s) for s in sigs],
            "empty": lambda: [empty.query(signature=s) for s in sigs],
            "sketch": lambda: [idx.hasher.sketch(q) for q in qs],
        }
        best = float("inf")
        for _ in range(passes):
            t0 = time.thread_time()
            calls[mode]()
            best = min(best, (time.thread_time() - t0) / len(qs) * 1e6)
        idx.close()
        empty.close()
    print(f"{mode}: {best:.2f} µs per call (best of {passes} passes, thread CPU)")


if __name__ == "__main__":
    main()
